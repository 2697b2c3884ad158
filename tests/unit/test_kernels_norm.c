/* kernels/nk_norm.h: the integer row-wise Softmax and LayerNorm against
 * values worked out by hand from their definitions, and against the float
 * formulas (computed here in double) on random rows: the accuracy the
 * integer forms keep. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"

/* p's multiplier of 1 / out_scale */
static void inv_scale(nk_qsoftmax_params *p, double out_scale)
{
    int shift;
    cr_assert_eq(nk_quantize_multiplier(1.0 / out_scale, &p->mult, &shift), NK_OK);
    p->shift = shift;
}

static uint32_t rng = 2024;
static int rnd(int lo, int hi)
{
    rng = rng * 1664525u + 1013904223u;
    return lo + (int)((rng >> 8) % (uint32_t)(hi - lo + 1));
}

Test(isqrt, floor_of_the_root_exactly)
{
    for (uint64_t v = 0; v < 70000; v++) {
        uint64_t r = nk_isqrt_u64(v);
        cr_assert(r * r <= v && (r + 1) * (r + 1) > v, "isqrt(%llu) = %llu", (unsigned long long)v,
                  (unsigned long long)r);
    }
    cr_assert_eq(nk_isqrt_u64((uint64_t)1 << 62), (uint64_t)1 << 31);
    cr_assert_eq(nk_isqrt_u64(((uint64_t)1 << 62) - 1), ((uint64_t)1 << 31) - 1);
    cr_assert_eq(nk_isqrt_u64(UINT64_MAX), 4294967295u);
}

/* ---- softmax ---- */

Test(qsoftmax, table_is_the_rounded_exponential)
{
    int32_t t[256];
    cr_assert_eq(nk_qsoftmax_table(0.05f, t), NK_OK);
    cr_assert_eq(t[0], 32768);
    for (int d = 0; d < 256; d++)
        cr_assert(fabs(t[d] - 32768.0 * exp(-0.05f * (double)d)) <= 0.5 + 1e-9, "d=%d: %d", d, t[d]);
    cr_assert_eq(nk_qsoftmax_table(0.0f, t), NK_EARG);
    cr_assert_eq(nk_qsoftmax_table(NAN, t), NK_EARG);
}

Test(qsoftmax, rows_by_hand)
{
    int32_t t[256] = {0};
    t[0] = 509, t[1] = 3; /* a row {a, a-1}: sum 512, 256*509/512 = 254.5, 256*3/512 = 1.5 */
    nk_qsoftmax_params p = {.rows = 1, .len = 2, .out_zp = -128, .act_min = -128, .act_max = 127};
    inv_scale(&p, 1.0 / 256); /* a power of two: exactly 256 */
    int8_t in[4] = {7, 6}, out[4];
    cr_assert_eq(nk_qsoftmax(&p, t, in, out), NK_OK);
    cr_assert_eq(out[0], 254 - 128); /* ties to even */
    cr_assert_eq(out[1], 2 - 128);
    /* equal values share 256: 4 -> 64 each; a lone maximum is 1.0 = 256, clamped to 127 */
    t[0] = 32768, t[1] = 0;
    p.rows = 2, p.len = 2;
    int8_t in2[4] = {-5, -5, 100, 99};
    cr_assert_eq(nk_qsoftmax(&p, t, in2, out), NK_OK);
    cr_assert_eq(out[0], 0);
    cr_assert_eq(out[1], 0);
    cr_assert_eq(out[2], 127);
    cr_assert_eq(out[3], -128);
    p.len = 0;
    cr_assert_eq(nk_qsoftmax(&p, t, in2, out), NK_EARG);
    p.len = 2;
    inv_scale(&p, 1.0 / 100); /* 100 * 32768 / (32768 + 16384) = 66.67 -> 67 */
    t[1] = 16384;
    cr_assert_eq(nk_qsoftmax(&p, t, in2 + 2, out), NK_OK);
    cr_assert_eq(out[0], 67 - 128);
    cr_assert_eq(out[1], 33 - 128);
    t[3] = 40000; /* entries above 1.0 */
    cr_assert_eq(nk_qsoftmax(&p, t, in2, out), NK_EARG);
}

Test(qsoftmax, within_half_a_step_of_the_float_softmax)
{
    const float scales[] = {0.01f, 0.0625f, 0.2f};
    int32_t t[256];
    enum { L = 197 };
    int8_t in[L], out[L];
    const double out_scales[] = {1.0 / 256, 0.03 / 255, 0.0037};
    for (size_t k = 0; k < 3; k++) {
        cr_assert_eq(nk_qsoftmax_table(scales[k], t), NK_OK);
        nk_qsoftmax_params p = {1, L, 0, 0, -128, -128, 127};
        inv_scale(&p, out_scales[k]);
        double worst = 0;
        for (int rep = 0; rep < 20; rep++) {
            for (int j = 0; j < L; j++)
                in[j] = (int8_t)rnd(-128, 127);
            cr_assert_eq(nk_qsoftmax(&p, t, in, out), NK_OK);
            double sum = 0;
            for (int j = 0; j < L; j++)
                sum += exp(scales[k] * in[j]);
            for (int j = 0; j < L; j++) {
                double want = exp(scales[k] * in[j]) / sum / out_scales[k] - 128.0;
                worst = fmax(worst, fabs(out[j] - fmin(want, 127.0)));
            }
        }
        cr_log_info("softmax, input scale %g, output %g: at most %.3f steps from float", scales[k], out_scales[k],
                    worst);
        cr_assert(worst <= 0.51, "scale %g: %.3f steps from float", scales[k], worst);
    }
}

/* ---- layernorm ---- */

Test(qlayernorm, column_table_and_epsilon)
{
    float g = 1.0f, b = 0.0f;
    int32_t cols[3];
    cr_assert_eq(nk_qlayernorm_cols(&g, &b, 1, 1.0f / 64, cols), NK_OK);
    /* M = 64: the largest shift with 64 * 2^(s-12) < 2^30 is 35, mult 2^29 */
    cr_assert_eq(cols[0], 0);
    cr_assert_eq(cols[1], 1 << 29);
    cr_assert_eq(cols[2], 35);
    g = -0.5f, b = 3.0f; /* bias 3/(1/8) = 24 limits the shift: 24 * 2^s < 2^30 -> s = 25 */
    cr_assert_eq(nk_qlayernorm_cols(&g, &b, 1, 1.0f / 8, cols), NK_OK);
    cr_assert_eq(cols[2], 25);
    cr_assert_eq(cols[0], 24 << 25);
    cr_assert_eq(cols[1], -(4 << 13));
    cr_assert_eq(nk_qlayernorm_cols(&g, &b, 1, 0.0f, cols), NK_EARG);
    /* N^2 eps / s^2: 16 * 1e-5 / 1e-4 = 1.6 */
    cr_assert_eq(nk_qlayernorm_eps(1e-5f, 0.01f, 4), 2);
    cr_assert_eq(nk_qlayernorm_eps(1.0f, 1e-6f, 4096), INT32_MAX);
}

Test(qlayernorm, rows_by_hand)
{
    /* {1, -1, 1, -1}: mean 0, variance 1, so z = x; {2, 2, 2, 2}: z = 0 */
    float g[4] = {1, 1, 0.5f, 0.5f}, b[4] = {0, 0, 0.25f, 0.25f};
    int32_t cols[12];
    cr_assert_eq(nk_qlayernorm_cols(g, b, 4, 1.0f / 32, cols), NK_OK);
    nk_qlayernorm_params p = {.rows = 2, .len = 4, .eps = 0, .out_zp = 3, .act_min = -128, .act_max = 127};
    int8_t in[8] = {1, -1, 1, -1, 2, 2, 2, 2}, out[8];
    cr_assert_eq(nk_qlayernorm(&p, cols, in, out), NK_OK);
    /* y = g z + b in steps of 1/32, plus 3: 32+3, -32+3, (0.5+0.25)*32+3, (-0.5+0.25)*32+3 */
    const int8_t want[8] = {35, -29, 27, -5, 3, 3, 11, 11};
    cr_assert_arr_eq(out, want, 8);
    p.eps = 16; /* D = 16 + 16: z = 1/sqrt 2 */
    cr_assert_eq(nk_qlayernorm(&p, cols, in, out), NK_OK);
    cr_assert_eq(out[0], 3 + (int)lround(32 / sqrt(2.0)));
    p.len = 0;
    cr_assert_eq(nk_qlayernorm(&p, cols, in, out), NK_EARG);
}

Test(qlayernorm, within_half_a_step_of_the_float_layernorm)
{
    enum { L = 768 };
    static int8_t in[L], out[L];
    static float g[L], b[L];
    static int32_t cols[3 * L];
    for (int j = 0; j < L; j++)
        g[j] = 0.5f + (float)rnd(0, 1000) / 1000.0f, b[j] = (float)rnd(-500, 500) / 1000.0f;
    const float xs = 0.05f, ys = 0.03f, eps = 1e-5f;
    cr_assert_eq(nk_qlayernorm_cols(g, b, L, ys, cols), NK_OK);
    nk_qlayernorm_params p = {1, L, nk_qlayernorm_eps(eps, xs, L), -7, -128, 127};
    double worst = 0, dot = 0, na = 0, nb = 0;
    for (int rep = 0; rep < 10; rep++) {
        int spread = rep < 5 ? 127 : 3; /* wide rows and nearly constant ones (eps matters) */
        for (int j = 0; j < L; j++)
            in[j] = (int8_t)rnd(-spread, spread);
        cr_assert_eq(nk_qlayernorm(&p, cols, in, out), NK_OK);
        double m = 0, v = 0;
        for (int j = 0; j < L; j++)
            m += xs * in[j] / L;
        for (int j = 0; j < L; j++)
            v += (xs * in[j] - m) * (xs * in[j] - m) / L;
        for (int j = 0; j < L; j++) {
            double y = (xs * in[j] - m) / sqrt(v + eps) * g[j] + b[j], q = fmax(-128, fmin(127, y / ys - 7));
            worst = fmax(worst, fabs(out[j] - q));
            dot += (out[j] + 7) * ys * y, na += pow((out[j] + 7) * ys, 2), nb += y * y;
        }
    }
    cr_log_info("layernorm: at most %.3f steps from float, cosine %.6f", worst, dot / sqrt(na * nb));
    cr_assert(worst <= 0.51, "%.3f steps from float", worst);
    cr_assert(dot / sqrt(na * nb) > 0.9999);
}

/* ---- float ---- */

Test(layernorm_f32, mean_and_inverse_deviation_outputs)
{
    const float x[6] = {1, 2, 3, 6, 6, 6}, s = 2.0f, bias = 1.0f;
    float y[6], mean[2], inv[2];
    nk_layernorm_params p = {2, 3, 1, 1, 0.0f};
    cr_assert_eq(nk_layernorm_f32(&p, x, &s, &bias, y, mean, inv), NK_OK);
    cr_assert_float_eq(mean[0], 2.0f, 1e-6f);
    cr_assert_float_eq(inv[0], (float)(1 / sqrt(2.0 / 3)), 1e-5f);
    cr_assert_float_eq(y[2], (float)(2 * 1 / sqrt(2.0 / 3) + 1), 1e-5f);
    p.eps = 1e-5f; /* a constant row: 0 * scale + bias */
    cr_assert_eq(nk_layernorm_f32(&p, x, &s, &bias, y, NULL, NULL), NK_OK);
    cr_assert_float_eq(y[4], 1.0f, 1e-6f);
    p.scale_len = 2;
    cr_assert_eq(nk_layernorm_f32(&p, x, &s, &bias, y, NULL, NULL), NK_EARG);
}
