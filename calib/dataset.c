#include "calib/dataset.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/npy.h"

struct cal_dataset {
    npu_alloc alloc;
    cal_input_spec spec;
    int64_t sample_elems;
    char **files;
    int n_files;
    int64_t *file_samples;
    int64_t total;
    int next_file;
    npy_array cur;      /* the open file */
    bool have_cur;
    int64_t cur_index;  /* next sample within cur */
    float *buf;         /* one sample as float */
};

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void cal_dataset_close(cal_dataset *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->n_files; i++)
        free(d->files[i]);
    free(d->files);
    free(d->file_samples);
    if (d->have_cur)
        npy_free(d->alloc, &d->cur);
    npu_free(d->alloc, d->buf, sizeof(float) * (size_t)d->sample_elems);
    npu_free(d->alloc, d, sizeof *d);
}

/* Samples in a file of this shape, or -1 when it does not fit the spec. */
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

npu_status cal_dataset_open(const char *dir, const cal_input_spec *spec, npu_alloc alloc, cal_dataset **out,
                            npu_err *err)
{
    DIR *dh = opendir(dir);
    if (!dh)
        return npu_fail(err, NPU_EUSER, "%s: cannot open the calibration directory", dir);
    cal_dataset *d = npu_malloc(alloc, sizeof *d);
    if (!d) {
        closedir(dh);
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    }
    memset(d, 0, sizeof *d);
    d->alloc = alloc;
    d->spec = *spec;
    d->sample_elems = 1;
    for (int i = 0; i < spec->rank; i++)
        d->sample_elems *= spec->dims[i];
    int cap = 0;
    npu_status st = NPU_OK;
    for (struct dirent *e; (e = readdir(dh));) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".npy") != 0)
            continue;
        if (d->n_files == cap) {
            cap = cap ? cap * 2 : 64;
            char **nf = realloc(d->files, sizeof *nf * (size_t)cap);
            if (!nf) {
                st = npu_fail(err, NPU_EINTERNAL, "out of memory");
                break;
            }
            d->files = nf;
        }
        size_t n = strlen(dir) + len + 2;
        if (!(d->files[d->n_files] = malloc(n))) {
            st = npu_fail(err, NPU_EINTERNAL, "out of memory");
            break;
        }
        snprintf(d->files[d->n_files++], n, "%s/%s", dir, e->d_name);
    }
    closedir(dh);
    if (st == NPU_OK && d->n_files == 0)
        st = npu_fail(err, NPU_EUSER, "%s: no .npy files in the calibration directory", dir);
    if (st == NPU_OK) {
        qsort(d->files, (size_t)d->n_files, sizeof *d->files, cmp_names);
        d->file_samples = calloc((size_t)d->n_files, sizeof *d->file_samples);
        d->buf = npu_malloc(alloc, sizeof(float) * (size_t)d->sample_elems);
        if (!d->file_samples || !d->buf)
            st = npu_fail(err, NPU_EINTERNAL, "out of memory");
    }
    /* check every file up front: a bad sample fails before minutes of calibration */
    for (int i = 0; st == NPU_OK && i < d->n_files; i++) {
        npy_array a;
        if ((st = npy_read(d->files[i], alloc, &a, err)) != NPU_OK)
            break;
        int64_t k = samples_of(spec, a.rank, a.dims);
        if (a.dtype != NPY_F32 && a.dtype != NPY_U8) {
            st = npu_fail(err, NPU_EUSER, "%s: dtype %s, expected float32 or uint8 for input '%s'", d->files[i],
                          npy_dtype_descr(a.dtype), spec->name);
        } else if (k < 0) {
            char got[128], want[128];
            shape_str(a.rank, a.dims, got, sizeof got);
            shape_str(spec->rank, spec->dims, want, sizeof want);
            st = npu_fail(err, NPU_EUSER, "%s: shape %s does not fit input '%s' of shape %s (N x sample)",
                          d->files[i], got, spec->name, want);
        }
        d->file_samples[i] = k;
        d->total += k > 0 ? k : 0;
        npy_free(alloc, &a);
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

npu_status cal_dataset_next(cal_dataset *d, const float **sample, npu_err *err)
{
    *sample = NULL;
    while (!d->have_cur || d->cur_index >= d->file_samples[d->next_file - 1]) {
        if (d->have_cur) {
            npy_free(d->alloc, &d->cur);
            d->have_cur = false;
        }
        if (d->next_file >= d->n_files)
            return NPU_OK;
        npu_status st = npy_read(d->files[d->next_file], d->alloc, &d->cur, err);
        if (st != NPU_OK)
            return st;
        d->next_file++;
        d->have_cur = true;
        d->cur_index = 0;
    }
    size_t n = (size_t)d->sample_elems;
    size_t at = (size_t)d->cur_index * n;
    if (d->cur.dtype == NPY_F32) {
        memcpy(d->buf, (const float *)d->cur.data + at, n * sizeof(float));
    } else {
        const uint8_t *u = (const uint8_t *)d->cur.data + at;
        for (size_t i = 0; i < n; i++)
            d->buf[i] = (float)u[i];
    }
    d->cur_index++;
    *sample = d->buf;
    return NPU_OK;
}
