#include "calib/dataset.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib_internal.h"
#include "common/file.h"
#include "common/npy.h"

typedef enum file_kind { KIND_NPY, KIND_BIN, KIND_IMAGE } file_kind;

struct cal_dataset {
    npu_alloc alloc;
    cal_input_spec spec;
    int64_t dims[CAL_SPEC_MAX_RANK];
    cal_read_opts ro;
    int64_t sample_elems;
    cal_file_list files;
    file_kind *kinds;
    int64_t *file_samples;
    int64_t total;
    int next_file;
    /* the open file: an .npy array, or raw bytes (.bin) */
    npy_array cur;
    void *raw;
    size_t raw_size;
    bool have_cur;
    int64_t cur_index, cur_samples;
    float *buf; /* one sample as float */
};

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n > m && strcmp(s + n - m, suf) == 0;
}

static bool kind_of(const char *name, file_kind *k)
{
    if (ends_with(name, ".npy"))
        *k = KIND_NPY;
    else if (ends_with(name, ".bin"))
        *k = KIND_BIN;
    else if (ends_with(name, ".pgm") || ends_with(name, ".ppm") || ends_with(name, ".png"))
        *k = KIND_IMAGE;
    else
        return false;
    return true;
}

static void drop_cur(cal_dataset *d)
{
    if (d->have_cur) {
        if (d->kinds[d->next_file - 1] == KIND_NPY)
            npy_free(d->alloc, &d->cur);
        else
            npu_free_file(d->alloc, d->raw, d->raw_size);
    }
    d->have_cur = false;
}

void cal_dataset_close(cal_dataset *d)
{
    if (!d)
        return;
    drop_cur(d);
    cal_file_list_free(&d->files);
    free(d->kinds);
    free(d->file_samples);
    npu_free(d->alloc, d->buf, sizeof(float) * (size_t)d->sample_elems);
    npu_free(d->alloc, d, sizeof *d);
}

/* Samples in an .npy of this shape, or -1 when it does not fit the spec. */
static int64_t samples_of(const cal_input_spec *s, int rank, const int64_t *dims)
{
    int64_t batch = s->rank ? s->dims[0] : 1;
    if (rank == s->rank - 1) { /* one sample without its batch dimension */
        for (int i = 0; i < rank; i++)
            if (dims[i] != s->dims[i + 1])
                return -1;
        return batch == 1 ? 1 : -1;
    }
    if (rank != s->rank || rank == 0)
        return -1;
    for (int i = 1; i < rank; i++)
        if (dims[i] != s->dims[i])
            return -1;
    return dims[0] % batch == 0 ? dims[0] / batch : -1;
}

static void shape_str(int rank, const int64_t *dims, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < rank && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "x" : "", (long long)dims[i]);
}

static int64_t channels_of(const cal_dataset *d)
{
    if (d->spec.rank < 2)
        return 1;
    return d->ro.layout == CAL_LAYOUT_NHWC ? d->spec.dims[d->spec.rank - 1] : d->spec.dims[1];
}

/* Checks one file and returns its sample count in *k. */
static npu_status check_file(cal_dataset *d, int i, int64_t *k, npu_err *err)
{
    const char *f = d->files.paths[i];
    const cal_input_spec *spec = &d->spec;
    char want[128];
    shape_str(spec->rank, spec->dims, want, sizeof want);
    npu_status st;
    if (d->kinds[i] == KIND_NPY) {
        npy_array a;
        if ((st = npy_read(f, d->alloc, &a, err)) != NPU_OK)
            return st;
        *k = samples_of(spec, a.rank, a.dims);
        if (a.dtype != NPY_F32 && a.dtype != NPY_U8) {
            st = npu_fail(err, NPU_EUSER, "%s: dtype %s, expected float32 or uint8 for input '%s'", f,
                          npy_dtype_descr(a.dtype), spec->name);
        } else if (*k < 0) {
            char got[128];
            shape_str(a.rank, a.dims, got, sizeof got);
            st = npu_fail(err, NPU_EUSER, "%s: shape %s does not fit input '%s' of shape %s (N x sample)", f, got,
                          spec->name, want);
        }
        npy_free(d->alloc, &a);
        return st;
    }
    void *buf;
    size_t size;
    if ((st = npu_read_file(f, d->alloc, &buf, &size, err)) != NPU_OK)
        return st;
    size_t per = sizeof(float) * (size_t)d->sample_elems;
    if (d->kinds[i] == KIND_BIN) {
        *k = (int64_t)(size / per);
        if (size == 0 || size % per)
            st = npu_fail(err, NPU_EUSER, "%s: %zu bytes, expected a multiple of %zu (float32 samples of input '%s', "
                          "shape %s)", f, size, per, spec->name, want);
    } else {
        cal_image im;
        *k = 1;
        st = cal_image_parse(buf, size, f, d->alloc, &im, err);
        if (st == NPU_OK) {
            st = cal_image_to_sample(&im, f, spec, &d->ro, d->buf, err);
            npu_free(d->alloc, im.pixels, cal_image_bytes(&im));
        }
    }
    npu_free_file(d->alloc, buf, size);
    return st;
}

static npu_status check_opts(cal_dataset *d, const char *dir, npu_err *err)
{
    int64_t c = channels_of(d);
    if ((d->ro.n_mean > 1 && d->ro.n_mean != c) || (d->ro.n_std > 1 && d->ro.n_std != c))
        return npu_fail(err, NPU_EUSER, "%s: %d mean / %d std values, expected 1 or %lld (the channels of input '%s')",
                        dir, d->ro.n_mean, d->ro.n_std, (long long)c, d->spec.name);
    for (int i = 0; i < d->ro.n_std; i++)
        if (!(d->ro.std[i] != 0.0f))
            return npu_fail(err, NPU_EUSER, "%s: std value %d is 0", dir, i + 1);
    return NPU_OK;
}

npu_status cal_dataset_open(const char *dir, const cal_input_spec *spec, npu_alloc alloc, cal_dataset **out,
                            npu_err *err)
{
    return cal_dataset_open_opts(dir, spec, NULL, alloc, out, err);
}

npu_status cal_dataset_open_opts(const char *dir, const cal_input_spec *spec, const cal_read_opts *ro,
                                 npu_alloc alloc, cal_dataset **out, npu_err *err)
{
    if (spec->rank > CAL_SPEC_MAX_RANK)
        return npu_fail(err, NPU_EUSER, "input '%s': rank %d, calibration supports up to %d", spec->name, spec->rank,
                        CAL_SPEC_MAX_RANK);
    cal_dataset *d = npu_malloc(alloc, sizeof *d);
    if (!d)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    memset(d, 0, sizeof *d);
    d->alloc = alloc;
    d->spec = *spec;
    memcpy(d->dims, spec->dims, sizeof(int64_t) * (size_t)spec->rank);
    d->spec.dims = d->dims;
    d->sample_elems = 1;
    for (int i = 0; i < spec->rank; i++)
        d->sample_elems *= spec->dims[i];
    /* the manifest first: caller options override what it sets */
    cal_read_opts mo = {0};
    npu_status st = cal_manifest_load(dir, &d->files, &mo, err);
    if (st == NPU_OK && !d->files.n)
        st = cal_list_dir(dir, &d->files, err);
    if (ro)
        d->ro = *ro;
    if (!d->ro.n_mean) {
        d->ro.n_mean = mo.n_mean;
        memcpy(d->ro.mean, mo.mean, sizeof mo.mean);
    }
    if (!d->ro.n_std) {
        d->ro.n_std = mo.n_std;
        memcpy(d->ro.std, mo.std, sizeof mo.std);
    }
    if (d->ro.layout == CAL_LAYOUT_UNSET)
        d->ro.layout = mo.layout;
    if (d->ro.resize == CAL_RESIZE_UNSET)
        d->ro.resize = mo.resize;
    if (st == NPU_OK)
        st = check_opts(d, dir, err);
    if (st == NPU_OK && d->files.n == 0)
        st = npu_fail(err, NPU_EUSER, "%s: no calibration samples (.npy, .bin, .pgm, .ppm, .png) in the directory", dir);
    if (st == NPU_OK) {
        d->kinds = calloc((size_t)d->files.n, sizeof *d->kinds);
        d->file_samples = calloc((size_t)d->files.n, sizeof *d->file_samples);
        d->buf = npu_malloc(alloc, sizeof(float) * (size_t)d->sample_elems);
        if (!d->kinds || !d->file_samples || !d->buf)
            st = npu_fail(err, NPU_EINTERNAL, "out of memory");
    }
    for (int i = 0; st == NPU_OK && i < d->files.n; i++)
        if (!kind_of(d->files.paths[i], &d->kinds[i]))
            st = npu_fail(err, NPU_EUSER, "%s: not a calibration sample: expected .npy, .bin, .pgm, .ppm or .png",
                          d->files.paths[i]);
    /* check every file up front: a bad sample fails before minutes of calibration */
    for (int i = 0; st == NPU_OK && i < d->files.n; i++) {
        int64_t k = 0;
        st = check_file(d, i, &k, err);
        d->file_samples[i] = k;
        d->total += k > 0 ? k : 0;
    }
    if (st != NPU_OK) {
        cal_dataset_close(d);
        return st;
    }
    *out = d;
    return NPU_OK;
}

int64_t cal_dataset_count(const cal_dataset *d)
{
    return d->total;
}

void cal_dataset_rewind(cal_dataset *d)
{
    drop_cur(d);
    d->next_file = 0;
    d->cur_index = d->cur_samples = 0;
}

/* Opens the next file (images are converted whole: one sample). */
static npu_status open_next(cal_dataset *d, npu_err *err)
{
    int i = d->next_file;
    const char *f = d->files.paths[i];
    npu_status st;
    if (d->kinds[i] == KIND_NPY)
        st = npy_read(f, d->alloc, &d->cur, err);
    else
        st = npu_read_file(f, d->alloc, &d->raw, &d->raw_size, err);
    if (st != NPU_OK)
        return st;
    d->next_file++;
    d->have_cur = true;
    d->cur_index = 0;
    d->cur_samples = d->file_samples[i];
    /* the file may have changed since it was checked */
    bool ok = d->kinds[i] == KIND_IMAGE ||
              (d->kinds[i] == KIND_BIN ? d->raw_size == (size_t)d->cur_samples * sizeof(float) * (size_t)d->sample_elems
                                       : npy_numel(&d->cur) == d->cur_samples * d->sample_elems);
    if (!ok)
        return npu_fail(err, NPU_EUSER, "%s: changed while calibrating", f);
    return NPU_OK;
}

static void normalize(cal_dataset *d)
{
    if (!d->ro.n_mean && !d->ro.n_std)
        return;
    const int64_t *dm = d->spec.dims;
    int r = d->spec.rank;
    int64_t c = channels_of(d), inner = 1;
    bool nhwc = d->ro.layout == CAL_LAYOUT_NHWC;
    if (!nhwc)
        for (int i = 2; i < r; i++)
            inner *= dm[i];
    for (int64_t i = 0; i < d->sample_elems; i++) {
        int64_t ch = nhwc ? i % c : (i / inner) % c;
        float mean = d->ro.n_mean ? d->ro.mean[d->ro.n_mean == 1 ? 0 : ch] : 0.0f;
        float std = d->ro.n_std ? d->ro.std[d->ro.n_std == 1 ? 0 : ch] : 1.0f;
        d->buf[i] = (d->buf[i] - mean) / std;
    }
}

npu_status cal_dataset_next(cal_dataset *d, const float **sample, npu_err *err)
{
    *sample = NULL;
    while (!d->have_cur || d->cur_index >= d->cur_samples) {
        drop_cur(d);
        if (d->next_file >= d->files.n)
            return NPU_OK;
        npu_status st = open_next(d, err);
        if (st != NPU_OK)
            return st;
    }
    size_t n = (size_t)d->sample_elems;
    size_t at = (size_t)d->cur_index * n;
    file_kind k = d->kinds[d->next_file - 1];
    if (k == KIND_IMAGE) {
        cal_image im;
        const char *f = d->files.paths[d->next_file - 1];
        npu_status st = cal_image_parse(d->raw, d->raw_size, f, d->alloc, &im, err);
        if (st == NPU_OK) {
            st = cal_image_to_sample(&im, f, &d->spec, &d->ro, d->buf, err);
            npu_free(d->alloc, im.pixels, cal_image_bytes(&im));
        }
        if (st != NPU_OK)
            return st;
    } else if (k == KIND_BIN) {
        memcpy(d->buf, (const char *)d->raw + at * sizeof(float), n * sizeof(float));
        normalize(d);
    } else if (d->cur.dtype == NPY_F32) {
        memcpy(d->buf, (const float *)d->cur.data + at, n * sizeof(float));
        normalize(d);
    } else {
        const uint8_t *u = (const uint8_t *)d->cur.data + at;
        for (size_t i = 0; i < n; i++)
            d->buf[i] = (float)u[i];
        normalize(d);
    }
    d->cur_index++;
    *sample = d->buf;
    return NPU_OK;
}
