/* Test helpers for calibration sets: temporary directories and sample
 * files written inline (tests of calib/ and src/quantize/). */
#ifndef TESTS_CALIBFILES_H
#define TESTS_CALIBFILES_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/dataset.h"
#include "common/npy.h"

static inline char *tf_tmpdir(void)
{
    static char buf[8][64];
    static int k;
    char *d = buf[k++ % 8];
    snprintf(d, 64, "/tmp/test_ptq_XXXXXX");
    cr_assert_not_null(mkdtemp(d));
    return d;
}

static inline void tf_write_bytes(const char *dir, const char *name, const void *data, size_t n)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static inline void tf_write_text(const char *dir, const char *name, const char *text)
{
    tf_write_bytes(dir, name, text, strlen(text));
}

static inline void tf_write_npy(const char *dir, const char *name, npy_dtype dt, int rank, const int64_t *dims, const void *v)
{
    char p[256];
    npu_err e;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    cr_assert_eq(npy_write(p, dt, rank, dims, v, &e), NPU_OK, "%s", e.msg);
}

/* deterministic pseudo-random floats in [-1, 1) */
static inline float tf_rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 8388608.0f - 1.0f;
}

static inline npu_status tf_open_set(const char *dir, int rank, const int64_t *dims, const cal_read_opts *ro, cal_dataset **d,
                           npu_err *e)
{
    cal_input_spec spec = {"x", rank, dims, NULL, 0};
    return cal_dataset_open_opts(dir, &spec, ro, npu_alloc_default(), d, e);
}

/* expects opening dir to fail with a message containing both parts */

#endif
