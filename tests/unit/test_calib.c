#include <criterion/criterion.h>
#include <math.h>
#include <png.h>
#include <sys/stat.h>
#include <stdlib.h>

#include "calib/calib.h"
#include "driver/options.h"
#include "tests/support/calibfiles.h"

static uint64_t total(const cal_hist *h)
{
    uint64_t t = 0;
    for (int i = 0; i < CAL_BINS; i++)
        t += h->bins[i];
    return t;
}

/* deterministic pseudo-random floats in [0, 1) */
static float rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.0f;
}

Test(calib_hist, counts_are_kept_as_the_range_grows)
{
    cal_hist *h = malloc(sizeof *h);
    cal_hist_init(h);
    uint32_t s = 1;
    float x[1000];
    for (int round = 0; round < 20; round++) {
        float scale = powf(2.0f, (float)round - 5.0f);
        for (int i = 0; i < 1000; i++)
            x[i] = (rnd(&s) * 2.0f - 0.5f) * scale;
        cal_hist_add(h, x, 1000);
    }
    cr_assert_eq(h->count, 20000);
    cr_assert_eq(total(h), 20000);
    /* every bin edge stays a multiple of the width: zero is a bin edge */
    cr_assert_leq((double)h->origin * h->width, 0.0);
    cr_assert_geq((double)(h->origin + CAL_BINS) * h->width, h->max);
    cr_assert_leq((double)h->origin * h->width, h->min);
    free(h);
}

Test(calib_hist, zeros_before_values_land_in_the_zero_bin)
{
    cal_hist *h = malloc(sizeof *h);
    cal_hist_init(h);
    float z[10] = {0}, v[2] = {1.0f, -1.0f};
    cal_hist_add(h, z, 10);
    cr_assert_eq(h->count, 10);
    cal_hist_add(h, v, 2);
    cr_assert_eq(total(h), 12);
    cr_assert_eq(h->bins[-h->origin], 10 + 0, "zeros in the bin starting at 0 (1.0 lies in a higher bin)");
    free(h);
}

Test(calib_hist, merge_equals_adding_everything_to_one)
{
    cal_hist *a = malloc(sizeof *a), *b = malloc(sizeof *b), *all = malloc(sizeof *all);
    cal_hist_init(a);
    cal_hist_init(b);
    cal_hist_init(all);
    uint32_t s = 7;
    float x[500];
    for (int i = 0; i < 500; i++)
        x[i] = rnd(&s) * 3.0f;
    cal_hist_add(a, x, 500);
    cal_hist_add(all, x, 500);
    for (int i = 0; i < 500; i++)
        x[i] = -rnd(&s) * 40.0f;
    cal_hist_add(b, x, 500);
    cal_hist_add(all, x, 500);
    cal_hist_merge(a, b);
    cr_assert_eq(a->count, 1000);
    cr_assert_eq(total(a), 1000);
    cr_assert_float_eq(a->min, all->min, 0);
    cr_assert_float_eq(a->max, all->max, 0);
    free(a);
    free(b);
    free(all);
}

Test(calib_range, minmax_includes_zero_and_extremes)
{
    cal_hist *h = malloc(sizeof *h);
    cal_hist_init(h);
    float x[3] = {0.5f, 2.0f, 1.0f};
    cal_hist_add(h, x, 3);
    float lo, hi;
    cal_range_opts o = {CAL_MINMAX, 0, 8};
    cal_choose_range(h, &o, &lo, &hi);
    cr_assert_float_eq(lo, 0.0f, 0);
    cr_assert_float_eq(hi, 2.0f, 0);
    free(h);
}

/* cal_hist_add_range (minmax calibration's observer) keeps what minmax
 * reads: the same range as the full histogram, batches of every kind */
Test(calib_range, range_only_statistics_give_the_minmax_range)
{
    const float inf = INFINITY;
    const float batches[][4] = {{0.0f, 0.0f, 0.0f, 0.0f},   {0.5f, -0.25f, NAN, 3.0f}, {inf, 1.0f, -inf, 2.0f},
                                {-7.5f, 0.0f, 1e-3f, 6.0f}, {NAN, NAN, NAN, NAN},      {0.1f, 0.2f, 0.3f, 0.4f}};
    for (int first = 0; first < 6; first++) { /* every batch first: zeros, NaNs, positives only */
        cal_hist *full = malloc(sizeof *full), *range = malloc(sizeof *range);
        cal_hist_init(full);
        cal_hist_init(range);
        for (int k = 0; k < 6; k++) {
            const float *b = batches[(first + k) % 6];
            cal_hist_add(full, b, 4);
            cal_hist_add_range(range, b, 4);
            float lo1, hi1, lo2, hi2;
            cal_range_opts o = {CAL_MINMAX, 0, 8};
            cal_choose_range(full, &o, &lo1, &hi1);
            cal_choose_range(range, &o, &lo2, &hi2);
            cr_assert(lo1 == lo2 && hi1 == hi2, "first %d, after %d: [%g, %g] vs [%g, %g]", first, k + 1, lo1, hi1,
                      lo2, hi2);
            cr_assert_eq(full->count, range->count);
        }
        free(full);
        free(range);
    }
}

Test(calib_range, percentile_and_kl_and_mse_clip_outliers)
{
    cal_hist *h = malloc(sizeof *h);
    cal_hist_init(h);
    uint32_t s = 3;
    static float x[100000];
    /* a Gaussian-ish bulk in [-1, 1] plus one far outlier */
    for (int i = 0; i < 100000; i++)
        x[i] = (rnd(&s) + rnd(&s) + rnd(&s) - 1.5f) / 1.5f;
    x[0] = 20.0f;
    cal_hist_add(h, x, 100000);
    float lo, hi;
    cal_range_opts mm = {CAL_MINMAX, 0, 8};
    cal_choose_range(h, &mm, &lo, &hi);
    cr_assert_float_eq(hi, 20.0f, 0);
    /* at 8 bits one outlier costs MSE less than the rounding it would save, at 4 bits it does not */
    cal_range_opts methods[3] = {{CAL_PERCENTILE, 99.9, 8}, {CAL_KL, 0, 8}, {CAL_MSE, 0, 4}};
    for (int m = 0; m < 3; m++) {
        cal_choose_range(h, &methods[m], &lo, &hi);
        cr_assert_lt(hi, 10.0f, "method %d kept the outlier: hi=%g", m, (double)hi);
        cr_assert_gt(hi, 0.5f, "method %d clipped the bulk: hi=%g", m, (double)hi);
        cr_assert_lt(lo, -0.5f, "method %d: lo=%g", m, (double)lo);
    }
    free(h);
}

Test(calib_range, empty_and_constant_tensors_give_nonempty_ranges)
{
    cal_hist *h = malloc(sizeof *h);
    cal_hist_init(h);
    float lo, hi;
    cal_range_opts o = {CAL_KL, 0, 8};
    cal_choose_range(h, &o, &lo, &hi);
    cr_assert_lt(lo, hi);
    float z[4] = {0};
    cal_hist_add(h, z, 4);
    cal_choose_range(h, &o, &lo, &hi);
    cr_assert_lt(lo, hi);
    cr_assert_leq(lo, 0.0f);
    free(h);
}

static void expect_error(const char *dir, int rank, const int64_t *dims, const cal_read_opts *ro, const char *part1,
                         const char *part2)
{
    cal_dataset *d = NULL;
    npu_err e = {0};
    cr_assert_eq(tf_open_set(dir, rank, dims, ro, &d, &e), NPU_EUSER, "opened %s", dir);
    cr_assert(strstr(e.msg, part1), "'%s' not in '%s'", part1, e.msg);
    cr_assert(strstr(e.msg, part2), "'%s' not in '%s'", part2, e.msg);
}

/* ---- readers ---- */

Test(calib_readers, npy_bin_and_pgm_samples_in_name_order)
{
    char *d = tf_tmpdir();
    int64_t dims[4] = {1, 1, 2, 2};
    float a[4] = {1, 2, 3, 4};
    tf_write_npy(d, "a.npy", NPY_F32, 4, dims, a);
    int64_t batch[4] = {2, 1, 2, 2};
    uint8_t u[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    tf_write_npy(d, "b.npy", NPY_U8, 4, batch, u);
    float raw[8] = {-1, -2, -3, -4, 5, 6, 7, 8};
    tf_write_bytes(d, "c.bin", raw, sizeof raw);
    const char pgm[] = "P5\n# a comment\n2 2\n255\n\x00\x33\xcc\xff";
    tf_write_bytes(d, "d.pgm", pgm, sizeof pgm - 1);
    tf_write_text(d, "notes.txt", "ignored: not a sample");
    cal_dataset *ds;
    npu_err e;
    cr_assert_eq(tf_open_set(d, 4, dims, NULL, &ds, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(cal_dataset_count(ds), 1 + 2 + 2 + 1);
    float want[6][4] = {{1, 2, 3, 4}, {0, 1, 2, 3}, {4, 5, 6, 7}, {-1, -2, -3, -4}, {5, 6, 7, 8},
                        {0, 0x33 / 255.0f, 0xcc / 255.0f, 1}};
    for (int pass = 0; pass < 2; pass++) {
        for (int s = 0; s < 6; s++) {
            const float *x;
            cr_assert_eq(cal_dataset_next(ds, &x, &e), NPU_OK, "%s", e.msg);
            cr_assert_not_null(x, "sample %d", s);
            for (int i = 0; i < 4; i++)
                cr_assert_float_eq(x[i], want[s][i], 1e-6, "pass %d sample %d [%d]: %g", pass, s, i, (double)x[i]);
        }
        const float *end;
        cr_assert_eq(cal_dataset_next(ds, &end, &e), NPU_OK);
        cr_assert_null(end);
        cal_dataset_rewind(ds);
    }
    cal_dataset_close(ds);
}

Test(calib_readers, ppm_nhwc_mean_std_and_bilinear_resize)
{
    char *d = tf_tmpdir();
    /* a 2x1 RGB image: left pixel (0, 255, 51), right (255, 0, 51) */
    const char ppm[] = "P6 2 1 255\n\x00\xff\x33\xff\x00\x33";
    tf_write_bytes(d, "a.ppm", ppm, sizeof ppm - 1);
    int64_t nchw[4] = {1, 3, 1, 4};
    cal_read_opts ro = {.n_mean = 3, .mean = {0.5f, 0.5f, 0.2f}, .n_std = 1, .std = {0.5f},
                        .resize = CAL_RESIZE_BILINEAR};
    cal_dataset *ds;
    npu_err e;
    cr_assert_eq(tf_open_set(d, 4, nchw, &ro, &ds, &e), NPU_OK, "%s", e.msg);
    const float *x;
    cr_assert_eq(cal_dataset_next(ds, &x, &e), NPU_OK, "%s", e.msg);
    /* half-pixel centres: output x maps to (x + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25 (clamped) */
    float r[4] = {0, 0.25f, 0.75f, 1};
    for (int i = 0; i < 4; i++) {
        cr_assert_float_eq(x[i], (r[i] - 0.5f) / 0.5f, 1e-5, "R[%d] = %g", i, (double)x[i]);
        cr_assert_float_eq(x[4 + i], ((1 - r[i]) - 0.5f) / 0.5f, 1e-5, "G[%d]", i);
        cr_assert_float_eq(x[8 + i], (0.2f - 0.2f) / 0.5f, 1e-5, "B[%d]", i);
    }
    cal_dataset_close(ds);
    /* the same image on an NHWC input of its own size: channels interleaved */
    int64_t nhwc[4] = {1, 1, 2, 3};
    cal_read_opts ro2 = {.layout = CAL_LAYOUT_NHWC};
    cr_assert_eq(tf_open_set(d, 4, nhwc, &ro2, &ds, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(cal_dataset_next(ds, &x, &e), NPU_OK);
    float want[6] = {0, 1, 0.2f, 1, 0, 0.2f};
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(x[i], want[i], 1e-6, "[%d] = %g", i, (double)x[i]);
    cal_dataset_close(ds);
}

Test(calib_readers, png_gray_and_rgb)
{
    char *d = tf_tmpdir();
    /* written with libpng's simplified API: 2x2 gray, then 2x2 RGB */
    uint8_t gray[4] = {0, 85, 170, 255}, rgb[12] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30};
    const uint8_t *px[2] = {gray, rgb};
    for (int k = 0; k < 2; k++) {
        png_image im;
        memset(&im, 0, sizeof im);
        im.version = PNG_IMAGE_VERSION;
        im.width = im.height = 2;
        im.format = k ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
        size_t n = 0;
        cr_assert(png_image_write_to_memory(&im, NULL, &n, 0, px[k], 0, NULL));
        void *buf = malloc(n);
        cr_assert(png_image_write_to_memory(&im, buf, &n, 0, px[k], 0, NULL), "%s", im.message);
        char dir_k[80];
        snprintf(dir_k, sizeof dir_k, "%s/%d", d, k);
        cr_assert_eq(mkdir(dir_k, 0700), 0);
        tf_write_bytes(dir_k, "a.png", buf, n);
        free(buf);
        int64_t dims[4] = {1, k ? 3 : 1, 2, 2};
        cal_dataset *ds;
        npu_err e;
        cr_assert_eq(tf_open_set(dir_k, 4, dims, NULL, &ds, &e), NPU_OK, "%s", e.msg);
        const float *x;
        cr_assert_eq(cal_dataset_next(ds, &x, &e), NPU_OK, "%s", e.msg);
        for (int c = 0; c < (k ? 3 : 1); c++)
            for (int i = 0; i < 4; i++) {
                uint8_t want = k ? rgb[i * 3 + c] : gray[i]; /* HWC in the file, CHW in the sample */
                cr_assert_float_eq(x[c * 4 + i], want / 255.0f, 1e-6, "png %d c%d [%d]", k, c, i);
            }
        cal_dataset_close(ds);
    }
}

Test(calib_readers, manifest_lists_files_and_sets_preprocessing)
{
    char *d = tf_tmpdir();
    int64_t dims[4] = {1, 1, 1, 2};
    float a[2] = {1, 3}, b[2] = {5, 7};
    tf_write_npy(d, "a.npy", NPY_F32, 4, dims, a);
    tf_write_npy(d, "b.npy", NPY_F32, 4, dims, b);
    tf_write_text(d, "calib.yaml", "files: [b.npy]\nmean: 1\nstd: [2]\n");
    cal_dataset *ds;
    npu_err e;
    cr_assert_eq(tf_open_set(d, 4, dims, NULL, &ds, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(cal_dataset_count(ds), 1, "only the listed file");
    const float *x;
    cr_assert_eq(cal_dataset_next(ds, &x, &e), NPU_OK);
    cr_assert_float_eq(x[0], 2.0f, 1e-6);
    cr_assert_float_eq(x[1], 3.0f, 1e-6);
    cal_dataset_close(ds);
    /* the caller's options win over the manifest's */
    cal_read_opts ro = {.n_mean = 1, .mean = {0}};
    cr_assert_eq(tf_open_set(d, 4, dims, &ro, &ds, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(cal_dataset_next(ds, &x, &e), NPU_OK);
    cr_assert_float_eq(x[0], 2.5f, 1e-6);
    cal_dataset_close(ds);
}

/* Integer and bool files (the inputs of integer model inputs) read as their values. */
Test(calib_readers, integer_files_read_as_their_values)
{
    int64_t dims[4] = {1, 1, 2, 2};
    int32_t v[4] = {1, -2, 300, 7};
    char *d = tf_tmpdir();
    tf_write_npy(d, "ints.npy", NPY_I32, 4, dims, v);
    cal_dataset *ds;
    const float *x;
    npu_err e;
    cr_assert_eq(tf_open_set(d, 4, dims, NULL, &ds, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(cal_dataset_next(ds, &x, &e), NPU_OK);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(x[i], (float)v[i], "element %d: %g", i, x[i]);
    cal_dataset_close(ds);
}

Test(calib_readers, every_bad_sample_is_named_with_what_was_expected)
{
    int64_t dims[4] = {1, 1, 2, 2};
    float v[8] = {0};
    char *d;

    d = tf_tmpdir();
    tf_write_npy(d, "bad_shape.npy", NPY_F32, 4, (int64_t[]){1, 1, 3, 2}, v);
    expect_error(d, 4, dims, NULL, "bad_shape.npy: shape 1x1x3x2", "of shape 1x1x2x2");

    d = tf_tmpdir();
    tf_write_npy(d, "bad_type.npy", NPY_F64, 4, dims, v);
    expect_error(d, 4, dims, NULL, "bad_type.npy: dtype <f8", "expected float32, an integer or bool");

    d = tf_tmpdir();
    tf_write_bytes(d, "short.bin", v, 20);
    expect_error(d, 4, dims, NULL, "short.bin: 20 bytes", "expected a multiple of 16");

    d = tf_tmpdir();
    tf_write_text(d, "text.pgm", "P2\n2 2\n255\n0 0 0 0\n");
    expect_error(d, 4, dims, NULL, "text.pgm", "expected a binary PGM (P5), PPM (P6) or PNG");

    d = tf_tmpdir();
    tf_write_bytes(d, "broken.png", "\x89PNG\r\n\x1a\nnot really", 18);
    expect_error(d, 4, dims, NULL, "broken.png: ", "PNG");

    d = tf_tmpdir();
    tf_write_bytes(d, "cut.pgm", "P5 2 2 255\n\x01\x02", 13);
    expect_error(d, 4, dims, NULL, "cut.pgm: 2 bytes of pixels", "expected 4 for 2x2");

    d = tf_tmpdir();
    tf_write_bytes(d, "big.pgm", "P5 3 2 255\n\x01\x02\x03\x04\x05\x06", 17);
    expect_error(d, 4, dims, NULL, "big.pgm: image 3x2 (WxH), expected 2x2", "resize policy");

    d = tf_tmpdir();
    tf_write_bytes(d, "rgb.ppm", "P6 2 2 255\n000000000000", 23);
    expect_error(d, 4, dims, NULL, "rgb.ppm: 3 channels", "expected 1 for input 'x'");

    d = tf_tmpdir();
    tf_write_text(d, "calib.yaml", "files: [a.npy]\nscale: 2\n");
    tf_write_npy(d, "a.npy", NPY_F32, 4, dims, v);
    expect_error(d, 4, dims, NULL, "calib.yaml:2:1: unknown key 'scale'", "expected files, mean");

    d = tf_tmpdir();
    tf_write_text(d, "calib.yaml", "files: [missing.npy]\n");
    expect_error(d, 4, dims, NULL, "missing.npy", "");

    d = tf_tmpdir();
    tf_write_text(d, "calib.yaml", "layout: chw\n");
    expect_error(d, 4, dims, NULL, "calib.yaml:1:9:", "expected nchw or nhwc");

    d = tf_tmpdir();
    tf_write_npy(d, "a.npy", NPY_F32, 4, dims, v);
    expect_error(d, 4, dims, &(cal_read_opts){.n_mean = 2, .mean = {1, 2}}, "2 mean / 0 std values",
                 "expected 1 or 1");

    d = tf_tmpdir();
    expect_error(d, 4, dims, NULL, "no calibration samples", "(.npy, .bin, .pgm, .ppm, .png)");
    expect_error("/nonexistent/calib", 4, dims, NULL, "/nonexistent/calib: cannot open the calibration directory", "");
}

Test(calib_readers, cli_flags)
{
    drv_options o;
    npu_err e;
    char *argv[] = {"npucc", "--target", "t", "--mean", "0.1,0.2,0.3", "--std=0.5", "--layout", "nhwc",
                    "--resize", "bilinear", "--bias-correction", "--cle", "--int4-rounding", "adaptive", "m.onnx"};
    cr_assert_eq(drv_parse_args(15, argv, &o, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(o.calib_read.n_mean, 3);
    cr_assert_float_eq(o.calib_read.mean[2], 0.3f, 1e-7);
    cr_assert_eq(o.calib_read.n_std, 1);
    cr_assert_eq(o.calib_read.layout, CAL_LAYOUT_NHWC);
    cr_assert_eq(o.calib_read.resize, CAL_RESIZE_BILINEAR);
    cr_assert(o.bias_correction == 1 && o.cle && o.int4_rounding == Q_ROUND_ADAPTIVE);
    char *defaults[] = {"npucc", "--target", "t", "--no-bias-correction", "--int4-rounding=nearest", "m.onnx"};
    cr_assert_eq(drv_parse_args(6, defaults, &o, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(o.bias_correction, 0);
    cr_assert(o.int4_rounding == Q_ROUND_NEAREST && !o.cle);
    cr_assert_eq(o.calib_method, DRV_CALIB_MINMAX, "the measured default");
    char *plain[] = {"npucc", "--target", "t", "m.onnx"};
    cr_assert_eq(drv_parse_args(4, plain, &o, &e), NPU_OK, "%s", e.msg);
    cr_assert(o.int4_rounding == Q_ROUND_GPTQ && o.int8_rounding == Q_ROUND_NEAREST, "the measured defaults");
    char *all[] = {"npucc", "--target", "t", "--weight-rounding", "gptq", "--int4-rounding=adaptive", "m.onnx"};
    cr_assert_eq(drv_parse_args(7, all, &o, &e), NPU_OK, "%s", e.msg);
    cr_assert(o.int8_rounding == Q_ROUND_GPTQ && o.int4_rounding == Q_ROUND_ADAPTIVE);
    char *badr[] = {"npucc", "--target", "t", "--weight-rounding=best", "m.onnx"};
    cr_assert_eq(drv_parse_args(5, badr, &o, &e), NPU_EUSAGE);
    cr_assert(strstr(e.msg, "--weight-rounding: 'best'"), "%s", e.msg);
    char *bad[] = {"npucc", "--target", "t", "--mean", "0.1,x", "m.onnx"};
    cr_assert_eq(drv_parse_args(6, bad, &o, &e), NPU_EUSAGE);
    cr_assert(strstr(e.msg, "--mean"), "%s", e.msg);
    char *bad2[] = {"npucc", "--target", "t", "--resize", "cubic", "m.onnx"};
    cr_assert_eq(drv_parse_args(6, bad2, &o, &e), NPU_EUSAGE);
    cr_assert(strstr(e.msg, "--resize: 'cubic'"), "%s", e.msg);
}

static void *png_of(const void *px, int w, int h, png_uint_32 format, size_t *n)
{
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    im.width = (png_uint_32)w, im.height = (png_uint_32)h;
    im.format = format;
    *n = 0;
    cr_assert(png_image_write_to_memory(&im, NULL, n, 0, px, 0, NULL));
    void *buf = malloc(*n);
    cr_assert(png_image_write_to_memory(&im, buf, n, 0, px, 0, NULL), "%s", im.message);
    return buf;
}

/* RGBA composites onto black (value x alpha); 16-bit gray keeps its 16 bits
 * (v / 65535, no gamma); a truncated file names its byte. */
Test(calib_readers, png_alpha_16bit_and_truncation)
{
    uint8_t rgba[8] = {200, 100, 50, 255, 200, 100, 50, 51};
    size_t n;
    void *buf = png_of(rgba, 2, 1, PNG_FORMAT_RGBA, &n);
    cal_image im;
    npu_err e;
    cr_assert_eq(cal_image_parse(buf, n, "a.png", npu_alloc_default(), &im, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(im.channels, 3);
    for (int c = 0; c < 3; c++) {
        cr_assert_float_eq(im.pixels[c], rgba[c] / 255.0f, 1e-6);
        cr_assert_float_eq(im.pixels[3 + c], rgba[4 + c] / 255.0f * (51 / 255.0f), 1e-6);
    }
    npu_free(npu_alloc_default(), im.pixels, cal_image_bytes(&im));
    /* cut inside the image data: an error at a byte, nothing allocated */
    npu_alloc_counter ctr = {0};
    cr_assert_eq(cal_image_parse(buf, n - 20, "cut.png", npu_alloc_counting(&ctr), &im, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "cut.png: byte ") && strstr(e.msg, "PNG"), "%s", e.msg);
    cr_assert_eq(ctr.live_bytes, 0);
    free(buf);
    uint16_t g16[3] = {0, 1, 65535};
    buf = png_of(g16, 3, 1, PNG_FORMAT_LINEAR_Y, &n);
    cr_assert_eq(cal_image_parse(buf, n, "b.png", npu_alloc_default(), &im, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(im.channels, 1);
    for (int i = 0; i < 3; i++)
        cr_assert_float_eq(im.pixels[i], g16[i] / 65535.0f, 1e-9, "[%d] %g", i, (double)im.pixels[i]);
    npu_free(npu_alloc_default(), im.pixels, cal_image_bytes(&im));
    free(buf);
}

/* libpng allocates through the caller's hook (png_create_read_struct_2):
 * failing each allocation in turn gives "out of memory" and leaves nothing. */
Test(calib_readers, png_allocations_go_through_the_hook)
{
    uint8_t px[16 * 16 * 3];
    for (size_t i = 0; i < sizeof px; i++)
        px[i] = (uint8_t)(i * 7);
    size_t n;
    void *buf = png_of(px, 16, 16, PNG_FORMAT_RGB, &n);
    npu_alloc_counter all = {0};
    cal_image im;
    npu_err e;
    cr_assert_eq(cal_image_parse(buf, n, "a.png", npu_alloc_counting(&all), &im, &e), NPU_OK, "%s", e.msg);
    npu_free(npu_alloc_counting(&all), im.pixels, cal_image_bytes(&im));
    cr_assert_eq(all.live_bytes, 0);
    /* ours are the pixel rows, the row pointers and the image: libpng's are the rest */
    cr_assert_gt(all.count, 3, "only %zu allocations seen: libpng's own bypass the hook", all.count);
    for (size_t k = 1; k <= all.count; k++) {
        npu_alloc_counter c = {.fail_at = k};
        cr_assert_eq(cal_image_parse(buf, n, "a.png", npu_alloc_counting(&c), &im, &e), NPU_EINTERNAL,
                     "allocation %zu", k);
        cr_assert(strstr(e.msg, "out of memory"), "%s", e.msg);
        cr_assert_eq(c.live_bytes, 0, "allocation %zu: %zu bytes left", k, c.live_bytes);
    }
    free(buf);
}
