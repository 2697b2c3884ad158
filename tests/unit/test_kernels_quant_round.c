/* One rounding, half to even, of the exact value in the kernels that used to
 * round more than once (kernels/nk_quant.h): add/sub against the real-valued
 * formula round_half_even(((a - za) sa +- (b - zb) sb) / sy) + zy, exact
 * ties of add and of the average pools, and the add exponent limit. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "kernels/kernels.h"

static double round_even_d(double x)
{
    double f = floor(x), d = x - f;
    if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0))
        f += 1.0;
    return f;
}

static nk_qbinary_params vec_params(nk_qbin_op op, int32_t n, int32_t za, int32_t zb, int32_t zy)
{
    nk_qbinary_params p = {.op = op, .a_zp = za, .b_zp = zb, .out_zp = zy, .act_min = -128, .act_max = 127};
    p.a_shape.rank = p.b_shape.rank = p.out_shape.rank = 1;
    p.a_shape.dims[0] = p.b_shape.dims[0] = p.out_shape.dims[0] = n;
    return p;
}

/* Every pair of int8 codes, so every tie the scales allow occurs. */
static void all_pairs(int8_t *a, int8_t *b)
{
    for (int i = 0; i < 65536; i++)
        a[i] = (int8_t)((i & 255) - 128), b[i] = (int8_t)((i >> 8) - 128);
}

static void check_add(nk_qbin_op op, float sa, float sb, float sy, int32_t za, int32_t zb, int32_t zy, int *ties)
{
    static int8_t a[65536], b[65536], out[65536];
    all_pairs(a, b);
    nk_qbinary_params p = vec_params(op, 65536, za, zb, zy);
    cr_assert_eq(nk_qbinary_prepare(&p, sa, sb, sy), NK_OK);
    cr_assert_eq(nk_qbinary(&p, a, b, out), NK_OK);
    double sign = op == NK_QSUB ? -1.0 : 1.0;
    for (int i = 0; i < 65536; i++) {
        double real = (((double)a[i] - za) * sa + sign * ((double)b[i] - zb) * sb) / sy;
        double frac = real - floor(real);
        if (fabs(frac - 0.5) < 1e-6 && frac != 0.5)
            continue; /* within the multipliers' 2^-31 of a tie: either side is right */
        *ties += frac == 0.5;
        double want = fmin(fmax(round_even_d(real) + zy, -128.0), 127.0);
        cr_assert_eq((double)out[i], want, "a %d b %d scales %g %g %g: %d vs %g (real %.9f)", a[i], b[i], sa, sb,
                     sy, out[i], want, real);
    }
}

Test(qround, add_sub_match_the_real_formula)
{
    int ties = 0;
    /* dyadic ratios: exact halves happen and must go to even */
    check_add(NK_QADD, 0.5f, 0.5f, 1.0f, 3, -7, 2, &ties);
    check_add(NK_QADD, 0.25f, 0.75f, 1.0f, 0, 0, -5, &ties);
    check_add(NK_QSUB, 0.5f, 0.25f, 1.0f, -1, 4, 0, &ties);
    cr_assert_gt(ties, 10000, "ties exercised: %d", ties);
    /* arbitrary scales, very different input scales, a scale change > 1 */
    check_add(NK_QADD, 0.0213f, 0.0177f, 0.0391f, -12, 30, 7, &ties);
    check_add(NK_QSUB, 0.0041f, 0.0933f, 0.0502f, 100, -100, -3, &ties);
    check_add(NK_QADD, 3e-5f, 0.02f, 0.011f, 0, 5, 0, &ties);
    check_add(NK_QADD, 0.2f, 0.3f, 0.01f, 1, 2, 3, &ties);
}

/* Input scales 2^30 apart: the smaller multiplier is rounded onto the
 * larger exponent minus 22 and still sums exactly (within the limit). */
Test(qround, add_exponent_limit)
{
    nk_qbinary_params p = vec_params(NK_QADD, 4, 0, 0, 0);
    cr_assert_eq(nk_qbinary_prepare(&p, 1.0f, ldexpf(1.0f, -30), 1.0f), NK_OK);
    cr_assert_leq(abs(p.a_shift - p.b_shift), NK_QADD_MAX_DSHIFT);
    cr_assert(p.left_shift == 0 && p.out_mult == 0 && p.out_shift == 0);
    int8_t a[4] = {1, -1, 5, 100}, b[4] = {127, -128, 0, 1}, out[4];
    cr_assert_eq(nk_qbinary(&p, a, b, out), NK_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(out[i], a[i], "the tiny input cannot move the result");
    p.b_shift = p.a_shift - NK_QADD_MAX_DSHIFT - 1; /* beyond the limit: refused */
    cr_assert_eq(nk_qbinary(&p, a, b, out), NK_EARG);
    p.b_shift = p.a_shift - NK_QADD_MAX_DSHIFT;
    p.left_shift = 20; /* a TFLite-style add from an old model: refused */
    cr_assert_eq(nk_qbinary(&p, a, b, out), NK_EARG);
}

static nk_qpool_params pool_params(int32_t h, int32_t w, int32_t k, int32_t in_zp, int32_t out_zp)
{
    nk_qpool_params p = {.n = 1, .c = 1, .h_in = h, .w_in = w, .h_out = h / k, .w_out = w / k, .k_h = k,
                         .k_w = k, .stride_h = k, .stride_w = k, .dil_h = 1, .dil_w = 1, .in_zp = in_zp,
                         .out_zp = out_zp, .mult = 1 << 30, .shift = 1, .act_min = -128, .act_max = 127};
    return p;
}

/* 2x2 windows with sum (x - zp) = 4k + 2: the average k + 0.5 goes to even. */
Test(qround, avgpool_ties_to_even)
{
    for (int32_t zp = -3; zp <= 3; zp += 3) {
        for (int32_t k = -20; k <= 20; k++) {
            int32_t s = 4 * k + 2;
            /* four values summing to s (relative to zp): s/4 rounded down, the rest on one */
            int32_t base = (int32_t)floor(s / 4.0), rest = s - 3 * base;
            int8_t in[4] = {(int8_t)(base + zp), (int8_t)(base + zp), (int8_t)(base + zp), (int8_t)(rest + zp)};
            int8_t out = 99;
            nk_qpool_params p = pool_params(2, 2, 2, zp, zp);
            cr_assert_eq(nk_qavgpool(&p, in, &out), NK_OK);
            int32_t want = (k % 2 == 0 ? k : k + 1) + zp;
            cr_assert_eq(out, want, "zp %d sum %d: %d vs %d", zp, s, out, want);
            out = 99;
            cr_assert_eq(nk_qglobal_avgpool(&p, in, &out), NK_OK);
            cr_assert_eq(out, want, "global, zp %d sum %d", zp, s);
        }
    }
}

/* With a change of scale the pool is one rounding of S * M / count, not
 * round(round(S * M) / count): S = 3, M = 0.5, count 3 gives 0.5 -> 0 (the
 * two-step form gives round(1.5) = 2, then 2 / 3 -> 1). */
Test(qround, avgpool_rescale_rounds_once)
{
    int8_t in[3] = {1, 1, 1}, out = 99;
    nk_qpool_params p = pool_params(1, 3, 1, 0, 0);
    p.mult = 1 << 30, p.shift = 0; /* 0.5 */
    cr_assert_eq(nk_qglobal_avgpool(&p, in, &out), NK_OK);
    cr_assert_eq(out, 0);
    int8_t in2[3] = {3, 3, 3};
    cr_assert_eq(nk_qglobal_avgpool(&p, in2, &out), NK_OK);
    cr_assert_eq(out, 2, "4.5 / 3 = 1.5 -> 2");
}
