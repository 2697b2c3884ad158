#include "calib/dataset.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "calib/calib_internal.h"
#include "common/file.h"
#include "common/npy.h"
#include "kernels/nk_elem.h"

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
    cal_dataset *more; /* the next input's samples (several inputs) */
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
    cal_dataset_close(d->more);
    drop_cur(d);
    size_t nf = (size_t)(d->files.n ? d->files.n : 1);
    npu_free(d->alloc, d->kinds, sizeof *d->kinds * nf);
    npu_free(d->alloc, d->file_samples, sizeof *d->file_samples * nf);
    cal_file_list_free(&d->files);
    npu_free(d->alloc, d->buf, sizeof(float) * (size_t)(d->sample_elems ? d->sample_elems : 1));
    npu_free(d->alloc, d, sizeof *d);
}

/* The length of a file name's stem when it is STEM.<tag>.EXT, else 0. */
static size_t tagged_stem(const char *path, const char *tag)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const char *ext = strrchr(base, '.');
    size_t t = strlen(tag);
    if (!ext || (size_t)(ext - base) < t + 2)
        return 0;
    const char *at = ext - t;
    return at[-1] == '.' && strncmp(at, tag, t) == 0 ? (size_t)(at - 1 - base) : 0;
}

static void keep_tagged(cal_file_list *l, const char *tag)
{
    int k = 0;
    for (int i = 0; i < l->n; i++)
        if (tagged_stem(l->paths[i], tag))
            l->paths[k++] = l->paths[i];
        else
            cal_file_list_drop(l, l->paths[i]);
    l->n = k;
}

/* Samples in an .npy of this shape, or -1 when it does not fit the spec. */
static int64_t samples_of(const cal_input_spec *s, int rank, const int64_t *dims)
{
    int64_t batch = s->rank ? s->dims[0] : 1;
    if (s->rank == 0) /* a scalar input: one sample a file */
        return rank == 0 ? 1 : -1;
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
    if (batch == 0) /* an empty input: its one sample is empty too */
        return dims[0] == 0 ? 1 : -1;
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

/* A raw float32 file: NaN or Inf is refused, naming the element (a NaN
 * calibration set once compiled to an input scale of 3.9e-11). */
static npu_status bin_finite(const char *f, const void *buf, size_t size, npu_err *err)
{
    const unsigned char *b = buf;
    for (size_t i = 0; i < size / sizeof(float); i++) {
        float v;
        memcpy(&v, b + i * sizeof v, sizeof v);
        if (!isfinite(v))
            return npu_fail(err, NPU_EUSER, "%s: element %zu (byte %zu) is %s: calibration needs finite samples", f,
                            i, i * sizeof v, isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf");
    }
    return NPU_OK;
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
        char msg[512];
        if ((st = npy_read_ex(f, &d->ro.files, d->alloc, &a, err)) != NPU_OK)
            return st;
        *k = samples_of(spec, a.rank, a.dims);
        if (spec->codes != NPY_F32 && a.dtype != (npy_dtype)spec->codes) {
            st = npu_fail(err, NPU_EUSER, "%s: dtype %s, expected %s for the %s-typed input '%s' (its codes)", f,
                          npy_dtype_descr(a.dtype), npy_dtype_descr((npy_dtype)spec->codes),
                          spec->codes == NPY_I8 ? "int8" : "uint8", spec->name);
        } else if (a.dtype == NPY_F64) {
            st = npu_fail(err, NPU_EUSER, "%s: dtype %s, expected float32, an integer or bool for input '%s'", f,
                          npy_dtype_descr(a.dtype), spec->name);
        } else if (npy_nonfinite_message(&a, f, msg, sizeof msg)) {
            st = npu_fail(err, NPU_EUSER, "%s: calibration needs finite samples", msg);
        } else if (*k < 0) {
            char got[128];
            shape_str(a.rank, a.dims, got, sizeof got);
            st = npu_fail(err, NPU_EUSER, "%s: shape %s does not fit input '%s' of shape %s (N x sample)", f, got,
                          spec->name, want);
        }
        npy_free(d->alloc, &a);
        return st;
    }
    if (spec->codes != NPY_F32)
        return npu_fail(err, NPU_EUSER, "%s: input '%s' is %s-typed: it calibrates from .npy files of its codes", f,
                        spec->name, spec->codes == NPY_I8 ? "int8" : "uint8");
    void *buf;
    size_t size;
    if ((st = npu_read_file_ex(f, &d->ro.files, d->alloc, &buf, &size, err)) != NPU_OK)
        return st;
    size_t per = sizeof(float) * (size_t)d->sample_elems;
    if (d->kinds[i] == KIND_BIN) {
        *k = (int64_t)(size / per);
        if (size == 0 || size % per)
            st = npu_fail(err, NPU_EUSER, "%s: %zu bytes, expected a multiple of %zu (float32 samples of input '%s', "
                          "shape %s)", f, size, per, spec->name, want);
        else
            st = bin_finite(f, buf, size, err);
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
    d->files.alloc = alloc;
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
    if (st == NPU_OK && spec->file_tag)
        keep_tagged(&d->files, spec->file_tag);
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
    if (st == NPU_OK && d->files.n == 0 && spec->file_tag)
        st = npu_fail(err, NPU_EUSER, "%s: no calibration samples for input '%s': a model with several inputs "
                      "takes one file per input and sample, named STEM.INPUT.EXT (here STEM.%s.npy, .bin, .pgm, "
                      ".ppm or .png, e.g. 0001.%s.npy)", dir, spec->name, spec->file_tag, spec->file_tag);
    else if (st == NPU_OK && d->files.n == 0)
        st = npu_fail(err, NPU_EUSER, "%s: no calibration samples (.npy, .bin, .pgm, .ppm, .png) in the directory", dir);
    if (st == NPU_OK) {
        d->kinds = npu_malloc(alloc, sizeof *d->kinds * (size_t)d->files.n);
        d->file_samples = npu_malloc(alloc, sizeof *d->file_samples * (size_t)d->files.n);
        if (d->kinds)
            memset(d->kinds, 0, sizeof *d->kinds * (size_t)d->files.n);
        if (d->file_samples)
            memset(d->file_samples, 0, sizeof *d->file_samples * (size_t)d->files.n);
        d->buf = npu_malloc(alloc, sizeof(float) * (size_t)(d->sample_elems ? d->sample_elems : 1));
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
    if (d->more)
        cal_dataset_rewind(d->more);
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
        st = npy_read_ex(f, &d->ro.files, d->alloc, &d->cur, err);
    else
        st = npu_read_file_ex(f, &d->ro.files, d->alloc, &d->raw, &d->raw_size, err);
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

/* n integer, bool or float16 elements from element at of a (the model input of an
 * integer input gets them back exactly: src/quantize/ptq.c). */
static void sample_to_float(const npy_array *a, size_t at, size_t n, float *out)
{
    const uint8_t *p = (const uint8_t *)a->data + at * npy_dtype_size(a->dtype);
    for (size_t i = 0; i < n; i++)
        switch (a->dtype) {
        case NPY_I64: out[i] = (float)((const int64_t *)p)[i]; break;
        case NPY_I32: out[i] = (float)((const int32_t *)p)[i]; break;
        case NPY_I16: out[i] = (float)((const int16_t *)p)[i]; break;
        case NPY_I8: out[i] = (float)((const int8_t *)p)[i]; break;
        case NPY_F16: out[i] = nk_f16_to_f32(((const uint16_t *)p)[i]); break;
        default: out[i] = (float)p[i]; break; /* u8, bool */
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
    } else if (d->spec.codes != NPY_F32) { /* int8/uint8 codes: exact as floats, never normalized */
        sample_to_float(&d->cur, at, n, d->buf);
    } else if (d->cur.dtype == NPY_F32) {
        memcpy(d->buf, (const float *)d->cur.data + at, n * sizeof(float));
        normalize(d);
    } else {
        sample_to_float(&d->cur, at, n, d->buf);
        normalize(d);
    }
    d->cur_index++;
    *sample = d->buf;
    return NPU_OK;
}

/* ---- several inputs ---- */

void cal_input_tag(const char *name, char *buf, size_t cap)
{
    size_t i = 0;
    for (; name[i] && i + 1 < cap; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        buf[i] = ok ? c : '_';
    }
    buf[i] = '\0';
}

static const char *base_of(const char *path)
{
    return strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
}

/* Every file of the set names an input, and every input has a file of every
 * stem, each with the same number of samples. */
static npu_status check_stems(const char *dir, cal_dataset *d, const cal_input_spec *specs, int n,
                              char tags[][64], npu_err *err)
{
    cal_file_list all = {.alloc = d->alloc};
    cal_read_opts mo = {0};
    npu_status st = cal_manifest_load(dir, &all, &mo, err);
    if (st == NPU_OK && !all.n)
        st = cal_list_dir(dir, &all, err);
    for (int i = 0; st == NPU_OK && i < all.n; i++) {
        int hit = 0;
        for (int k = 0; k < n; k++)
            hit += tagged_stem(all.paths[i], tags[k]) > 0;
        if (!hit)
            st = npu_fail(err, NPU_EUSER,
                          "%s: names no input of the model (%d inputs: sample files are STEM.INPUT.EXT, e.g. "
                          "STEM.%s.npy)",
                          all.paths[i], n, tags[0]);
    }
    cal_file_list_free(&all);
    const cal_dataset *first = d;
    int k = 1;
    for (const cal_dataset *p = d->more; st == NPU_OK && p; p = p->more, k++) {
        int i = 0;
        for (; st == NPU_OK && i < first->files.n && i < p->files.n; i++) {
            const char *a = first->files.paths[i], *b = p->files.paths[i];
            size_t la = tagged_stem(a, tags[0]), lb = tagged_stem(b, tags[k]);
            if (la != lb || strncmp(base_of(a), base_of(b), la) != 0) {
                /* the stem that sorts first lacks the other input's file */
                int c = strncmp(base_of(a), base_of(b), la < lb ? la : lb);
                bool a_first = c < 0 || (c == 0 && la < lb);
                const char *f = a_first ? a : b;
                st = npu_fail(err, NPU_EUSER, "%s: sample '%.*s' has no file for input '%s'", f,
                              (int)(a_first ? la : lb), base_of(f), a_first ? specs[k].name : specs[0].name);
            }
            else if (first->file_samples[i] != p->file_samples[i])
                st = npu_fail(err, NPU_EUSER, "%s: %lld samples, but %s for input '%s' has %lld", b,
                              (long long)p->file_samples[i], a, specs[0].name, (long long)first->file_samples[i]);
        }
        if (st == NPU_OK && first->files.n != p->files.n) {
            bool more0 = first->files.n > p->files.n;
            const char *f = more0 ? first->files.paths[i] : p->files.paths[i];
            st = npu_fail(err, NPU_EUSER, "%s: no file of this sample for input '%s'", f,
                          more0 ? specs[k].name : specs[0].name);
        }
    }
    return st;
}

npu_status cal_dataset_open_inputs(const char *dir, const cal_input_spec *specs, int n, const cal_read_opts *ro,
                                   npu_alloc alloc, cal_dataset **out, npu_err *err)
{
    *out = NULL;
    if (n == 1)
        return cal_dataset_open_opts(dir, specs, ro, alloc, out, err);
    if (n < 1 || n > CAL_MAX_INPUTS)
        return npu_fail(err, NPU_EUSER, "%s: calibration takes 1 to %d inputs, the model has %d", dir, CAL_MAX_INPUTS,
                        n);
    char tags[CAL_MAX_INPUTS][64];
    cal_dataset *head = NULL, **link = &head;
    npu_status st = NPU_OK;
    for (int k = 0; st == NPU_OK && k < n; k++) {
        cal_input_tag(specs[k].name, tags[k], sizeof tags[k]);
        for (int j = 0; j < k; j++)
            if (strcmp(tags[j], tags[k]) == 0)
                st = npu_fail(err, NPU_EUSER, "inputs '%s' and '%s' have the same file tag '%s': rename one",
                              specs[j].name, specs[k].name, tags[k]);
        cal_input_spec sp = specs[k];
        sp.file_tag = tags[k];
        if (st == NPU_OK && (st = cal_dataset_open_opts(dir, &sp, ro, alloc, link, err)) == NPU_OK) {
            (*link)->spec.file_tag = NULL; /* tags[] is on this stack */
            link = &(*link)->more;
        }
    }
    if (st == NPU_OK)
        st = check_stems(dir, head, specs, n, tags, err);
    if (st != NPU_OK) {
        cal_dataset_close(head);
        return st;
    }
    *out = head;
    return NPU_OK;
}

npu_status cal_dataset_next_inputs(cal_dataset *d, const float **xs, npu_err *err)
{
    int k = 0;
    for (cal_dataset *p = d; p; p = p->more, k++) {
        npu_status st = cal_dataset_next(p, &xs[k], err);
        if (st != NPU_OK)
            return st;
        if (!xs[k] != !xs[0]) /* counts checked when opened */
            return npu_fail(err, NPU_EUSER, "input '%s': its samples ended early (files changed?)", p->spec.name);
    }
    return NPU_OK;
}
