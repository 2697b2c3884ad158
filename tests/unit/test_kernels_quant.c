/* Integer numerics and kernels (kernels/nk_quant.h): the requantization
 * rounding (once, half to even) pinned by hand-derived edge cases and a
 * double-precision reference; float quantization; int4 packing; every
 * kernel bit-exact against the golden data of tests/fixtures/gen_qkernels.py
 * (an independent numpy implementation); bad parameters rejected. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tests/data/qkernels/qk_conv.h"
#include "tests/data/qkernels/qk_elem.h"
#include "tests/data/qkernels/qk_matmul.h"
#include "tests/data/qkernels/qk_pool.h"
#include "tests/data/qkernels/qk_requant.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- requantization: hand-derived edge cases ------------------------------ */

typedef struct { int32_t acc, mult; int shift; int32_t want; const char *why; } rq_case;

/* Each want is acc * mult * 2^(shift - 31) worked by hand, rounded half to even. */
Test(qrequant, requantize_edges)
{
    static const rq_case cases[] = {
        {12345, 1 << 30, 1, 12345, "mult 2^30, shift 1 is the identity"},
        {-12345, 1 << 30, 1, -12345, "identity, negative"},
        {1, 1 << 30, 0, 0, "0.5 -> 0 (even)"},
        {3, 1 << 30, 0, 2, "1.5 -> 2"},
        {5, 1 << 30, 0, 2, "2.5 -> 2 (even)"},
        {-1, 1 << 30, 0, 0, "-0.5 -> 0"},
        {-3, 1 << 30, 0, -2, "-1.5 -> -2"},
        {-5, 1 << 30, 0, -2, "-2.5 -> -2"},
        {6, 1 << 30, -1, 2, "1.5 -> 2"},
        {10, 1 << 30, -1, 2, "2.5 -> 2"},
        {-10, 1 << 30, -1, -2, "-2.5 -> -2"},
        {-14, 1 << 30, -1, -4, "-3.5 -> -4"},
        {7, 1 << 30, -1, 2, "1.75 -> 2"},
        {-9, 1 << 30, -1, -2, "-2.25 -> -2"},
        {3, (1 << 30) + 1, 0, 2, "just above 1.5"},
        {5, (1 << 30) + 1, 0, 3, "just above 2.5: not a tie"},
        {-5, (1 << 30) + 1, 0, -3, "just below -2.5"},
        {1 << 30, 1 << 30, 2, INT32_MAX, "2^31: saturates"},
        {-(1 << 30), 1 << 30, 2, INT32_MIN, "-2^31 exactly: representable"},
        {-(1 << 30) - 1, 1 << 30, 2, INT32_MIN, "below -2^31: saturates"},
        {INT32_MAX, INT32_MAX, 30, INT32_MAX, "largest product, largest left shift"},
        {INT32_MIN, INT32_MIN, 30, INT32_MAX, "2^62 * 2^-1 saturates"},
        {INT32_MIN, INT32_MIN, 0, INT32_MAX, "2^62 / 2^31 = 2^31 saturates"},
        {INT32_MIN, INT32_MIN, -1, 1 << 30, "2^62 / 2^32"},
        {INT32_MAX, INT32_MAX, -31, 1, "(2^31-1)^2 / 2^62 = 1 - 2^-30 -> 1"},
        {INT32_MIN, INT32_MIN, -31, 1, "2^62 / 2^62 = 1 exactly"},
        {INT32_MIN, 1 << 30, -31, 0, "-2^61 / 2^62 = -0.5 -> 0"},
        {INT32_MIN, 3 << 29, -31, -1, "-0.75 -> -1"},
        {-(1 << 30), 3 << 29, -31, 0, "-0.375 -> 0"},
        {100, 0, 5, 0, "zero multiplier"},
        {1, INT32_MAX, 30, INT32_MAX / 2 + 1, "(2^31-1) / 2 = 2^30 - 0.5 -> 2^30 (even)"},
        {7, 1 << 30, 3, 28, "7 * 0.5 * 8"},
        {-7, 1 << 30, 3, -28, "negative"},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        const rq_case *c = &cases[i];
        int32_t got = nk_requantize(c->acc, c->mult, c->shift);
        cr_expect_eq(got, c->want, "%s: requantize(%d, %d, %d) = %d", c->why, c->acc, c->mult, c->shift, got);
    }
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* round_half_even(x) in double, x an exact dyadic with |x| < 2^53. */
static double round_even_d(double x)
{
    double f = floor(x), d = x - f;
    if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0))
        f += 1.0;
    return f;
}

/* Against double precision where the product is exact in a double (the
 * 53-bit mantissa holds acc * mult when their bits fit): no tolerance. */
Test(qrequant, random_vs_double)
{
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    int compared = 0, ties = 0;
    for (int i = 0; i < 300000; i++) {
        int32_t acc = (int32_t)(uint32_t)xorshift(&seed);
        acc >>= (int)(xorshift(&seed) % 31); /* all magnitudes */
        int32_t mult = (int32_t)((1u << 30) + (uint32_t)(xorshift(&seed) % (1u << 30)));
        if (i % 4 == 0)
            mult &= ~((1 << (int)(xorshift(&seed) % 31)) - 1); /* trailing zeros: exact ties happen */
        int shift = (int)(xorshift(&seed) % 62) - 31;
        int32_t got = nk_requantize(acc, mult, shift);
        double prod = (double)acc * (double)mult;
        if ((int64_t)prod != (int64_t)acc * mult) /* not exact in double */
            continue;
        double real = prod * ldexp(1.0, shift - 31);
        double want = round_even_d(real);
        want = want > INT32_MAX ? INT32_MAX : (want < INT32_MIN ? INT32_MIN : want);
        cr_assert_eq((double)got, want, "acc %d mult %d shift %d: %d vs %.1f (real %.6f)", acc, mult, shift, got,
                     want, real);
        ties += real - floor(real) == 0.5;
        compared++;
    }
    cr_assert_gt(compared, 100000);
    cr_assert_gt(ties, 100, "exact ties exercised: %d", ties);
}

/* nk_requantize_div against exact-rational reasoning: average of k values
 * with sum s at the identity multiplier, ties (s = 4k + 2 over 4) to even. */
Test(qrequant, requantize_div_ties)
{
    const int32_t one = 1 << 30; /* with shift 1: M = 1 */
    for (int32_t k = -40; k <= 40; k++) {
        int32_t s = 4 * k + 2, want = (k % 2 == 0) ? k : k + 1; /* s / 4 = k + 0.5 */
        cr_assert_eq(nk_requantize_div(s, one, 1, 4), want, "%d / 4", s);
        cr_assert_eq(nk_requantize_div(4 * k + 1, one, 1, 4), k, "%d / 4", 4 * k + 1);
        cr_assert_eq(nk_requantize_div(4 * k + 3, one, 1, 4), k + 1, "%d / 4", 4 * k + 3);
        cr_assert_eq(nk_requantize_div(s, one, 1, 1), s);
    }
    /* 1.5 / 3 = 0.5 -> 0, 4.5 / 3 = 1.5 -> 2: M = 0.5, count 3 */
    cr_assert_eq(nk_requantize_div(3, one, 0, 3), 0);
    cr_assert_eq(nk_requantize_div(9, one, 0, 3), 2);
    cr_assert_eq(nk_requantize_div(-9, one, 0, 3), -2);
    /* a remainder just above the tie breaks it upward: 7 * 0.5 / 7 = 0.5 exactly, 15 * 0.5 / 7 = 1.07 */
    cr_assert_eq(nk_requantize_div(7, one, 0, 7), 0);
    cr_assert_eq(nk_requantize_div(15, one, 0, 7), 1);
    /* (2^31 - 1) * (2^31 - 1) / 2^31 / 49 saturates nowhere and matches double */
    int32_t got = nk_requantize_div(INT32_MAX, INT32_MAX, 0, 49);
    cr_assert_eq(got, (int32_t)llround((double)INT32_MAX * (double)INT32_MAX / 2147483648.0 / 49.0));
    cr_assert_eq(nk_requantize_div(INT32_MIN, INT32_MIN, 30, 1), INT32_MAX, "saturates");
    /* random: against the double reference where it is exact enough to decide */
    uint64_t seed = 12345;
    for (int i = 0; i < 100000; i++) {
        int32_t acc = (int32_t)(uint32_t)xorshift(&seed) >> (int)(xorshift(&seed) % 31);
        int32_t mult = (int32_t)((1u << 30) + (uint32_t)(xorshift(&seed) % (1u << 30)));
        int shift = (int)(xorshift(&seed) % 40) - 31;
        int32_t div = 1 + (int32_t)(xorshift(&seed) % 1000);
        double real = (double)acc * (double)mult * ldexp(1.0, shift - 31) / div;
        double frac = real - floor(real);
        if (fabs(frac - 0.5) < 1e-6 || fabs(real) > 2e9)
            continue; /* too close to a tie for double to decide */
        int32_t g = nk_requantize_div(acc, mult, shift, div);
        cr_assert_eq((double)g, floor(real + 0.5), "acc %d mult %d shift %d div %d: %d vs %.6f", acc, mult, shift,
                     div, g, real);
    }
}

Test(qrequant, golden_table)
{
    for (size_t i = 0; i < COUNT(qk_requant_cases); i++) {
        const qk_requant_case *c = &qk_requant_cases[i];
        cr_assert_eq(nk_requantize(c->acc, c->mult, c->shift), c->expected, "case %zu: requantize(%d, %d, %d)", i,
                     c->acc, c->mult, c->shift);
    }
}

Test(qrequant, quantize_multiplier_golden)
{
    for (size_t i = 0; i < COUNT(qk_mult_cases); i++) {
        const qk_mult_case *c = &qk_mult_cases[i];
        int32_t m = -1;
        int s = -99;
        cr_assert_eq(nk_quantize_multiplier(c->real, &m, &s), NK_OK, "%a", c->real);
        cr_assert(m == c->mult && s == c->shift, "%a: got (%d, %d), want (%d, %d)", c->real, m, s, c->mult, c->shift);
        if (c->real > 1e-9) {
            double back = (double)m * ldexp(1.0, s - 31);
            cr_assert(fabs(back - c->real) <= c->real * ldexp(1.0, -31), "%a: %a", c->real, back);
        }
    }
}

Test(qrequant, quantize_multiplier_pinned)
{
    int32_t m;
    int s;
    cr_assert_eq(nk_quantize_multiplier(1.0, &m, &s), NK_OK);
    cr_assert(m == 1 << 30 && s == 1);
    cr_assert_eq(nk_quantize_multiplier(0.0, &m, &s), NK_OK);
    cr_assert(m == 0 && s == 0);
    cr_assert_eq(nk_quantize_multiplier(0.75, &m, &s), NK_OK);
    cr_assert(m == 3 << 29 && s == 0);
    /* mantissa rounding up to 2^31 renormalizes: 1 - 2^-40 -> 0.5 * 2^1 */
    cr_assert_eq(nk_quantize_multiplier(1.0 - ldexp(1.0, -40), &m, &s), NK_OK);
    cr_assert(m == 1 << 30 && s == 1, "%d %d", m, s);
    cr_assert_eq(nk_quantize_multiplier(ldexp(1.0, -40), &m, &s), NK_OK); /* tiny: flushed */
    cr_assert(m == 0 && s == 0);
    cr_assert_eq(nk_quantize_multiplier(ldexp(1.0, -32), &m, &s), NK_OK); /* smallest kept: exponent -31 */
    cr_assert(m == 1 << 30 && s == -31, "%d %d", m, s);
    cr_assert_eq(nk_quantize_multiplier(ldexp(1.0, 29), &m, &s), NK_OK); /* largest exponent */
    cr_assert(m == 1 << 30 && s == 30);
    cr_assert_eq(nk_quantize_multiplier(ldexp(1.0, 30), &m, &s), NK_EARG);
    cr_assert_eq(nk_quantize_multiplier(-0.5, &m, &s), NK_EARG);
    cr_assert_eq(nk_quantize_multiplier(NAN, &m, &s), NK_EARG);
    cr_assert_eq(nk_quantize_multiplier(INFINITY, &m, &s), NK_EARG);
    cr_assert_eq(nk_quantize_multiplier(0.5, NULL, &s), NK_EARG);
    cr_assert_eq(nk_multiplier_from_scales(0.5f, 0.25f, 0.0f, &m, &s), NK_EARG);
    cr_assert_eq(nk_multiplier_from_scales(0.5f, 0.25f, 0.125f, &m, &s), NK_OK);
    cr_assert(m == 1 << 30 && s == 1);
}

Test(qrequant, output_stage_and_helpers)
{
    cr_assert_eq(nk_requant_out(200, 1 << 30, 1, 10, -128, 127), 127);
    cr_assert_eq(nk_requant_out(-50, 1 << 30, 1, 10, -128, 127), -40);
    cr_assert_eq(nk_requant_out(-50, 1 << 30, 1, 10, -20, 127), -20);
    cr_assert_eq(nk_requant_out(INT32_MAX, 1 << 30, 1, 127, -128, 127), 127, "zero point add cannot overflow");
    cr_assert_eq(nk_sat_add_i32(INT32_MAX, 1), INT32_MAX);
    cr_assert_eq(nk_sat_add_i32(INT32_MIN, -1), INT32_MIN);
    cr_assert_eq(nk_sat_add_i32(-5, 3), -2);
}

/* ---- float quantization --------------------------------------------------- */

Test(qfloat, quantize_golden)
{
    for (size_t i = 0; i < COUNT(qk_quant_cases); i++) {
        const qk_quant_case *c = &qk_quant_cases[i];
        size_t n = c->n;
        int32_t *got = calloc(n, sizeof *got);
        uint8_t *buf = calloc(n + 1, 1);
        nk_status st;
        if (c->type == 8) {
            st = nk_quantize_f32_i8(c->x, (int8_t *)buf, n, c->scale, c->zp);
            for (size_t j = 0; j < n; j++)
                got[j] = ((int8_t *)buf)[j];
        } else if (c->type == 0) {
            st = nk_quantize_f32_u8(c->x, buf, n, c->scale, c->zp);
            for (size_t j = 0; j < n; j++)
                got[j] = buf[j];
        } else {
            st = nk_quantize_f32_i4(c->x, buf, n, c->scale, c->zp);
            for (size_t j = 0; j < n; j++)
                got[j] = nk_int4_get(buf, j);
            if (n & 1)
                cr_assert_eq(buf[n / 2] >> 4, 0, "%s: odd count leaves the last high nibble 0", c->name);
        }
        cr_assert_eq(st, NK_OK, "%s", c->name);
        for (size_t j = 0; j < n; j++)
            cr_assert_eq(got[j], c->expected[j], "%s[%zu]: x=%a scale=%a zp=%d: %d vs %d", c->name, j, c->x[j],
                         c->scale, c->zp, got[j], c->expected[j]);
        free(got);
        free(buf);
    }
}

typedef struct { float x, scale; int32_t zp, want; } qv_case;

Test(qfloat, round_half_even_pinned)
{
    static const qv_case cases[] = {
        {0.5f, 1.0f, 0, 0},    {1.5f, 1.0f, 0, 2},     {2.5f, 1.0f, 0, 2},   {-0.5f, 1.0f, 0, 0},
        {-1.5f, 1.0f, 0, -2},  {-2.5f, 1.0f, 0, -2},   {2.5f, 1.0f, 3, 5},   {0.75f, 0.5f, 0, 2},
        {1000.0f, 1.0f, 0, 127}, {-1000.0f, 1.0f, 0, -128}, {126.5f, 1.0f, 0, 126}, {127.5f, 1.0f, 0, 127},
        {-128.5f, 1.0f, 0, -128}, {NAN, 1.0f, 7, 7},   {INFINITY, 1.0f, -3, 127}, {-INFINITY, 0.1f, 5, -128},
        {1e-30f, 1e-38f, 0, 127}, {-0.0f, 1.0f, -4, -4},
    };
    for (size_t i = 0; i < COUNT(cases); i++)
        cr_expect_eq(nk_quantize_value(cases[i].x, cases[i].scale, cases[i].zp, -128, 127), cases[i].want,
                     "quantize(%a, %a, %d)", cases[i].x, cases[i].scale, cases[i].zp);
}

/* The array quantizers against libm: rintf (ties to even in the default
 * mode) of the float quotient, saturated, over random values and exact ties. */
Test(qfloat, arrays_match_rint_reference)
{
    enum { N = 4001 };
    static float x[N];
    static int8_t q8[N];
    static uint8_t qu[N], q4[(N + 1) / 2];
    uint32_t seed = 12345;
    const float scale = 0.0625f; /* a power of two: x / scale is exact, so k + 0.5 ties are real */
    for (int i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        float r = (float)(seed >> 8) / (float)(1u << 24); /* [0, 1) */
        x[i] = i % 3 == 0 ? ((float)((int)(seed % 600) - 300) + 0.5f) * scale : (r - 0.5f) * 40.0f;
    }
    x[7] = NAN;
    cr_assert_eq(nk_quantize_f32_i8(x, q8, N, scale, -5), NK_OK);
    cr_assert_eq(nk_quantize_f32_u8(x, qu, N, scale, 130), NK_OK);
    cr_assert_eq(nk_quantize_f32_i4(x, q4, N, scale, 2), NK_OK);
    for (int i = 0; i < N; i++) {
        float v = x[i] / scale;
        double r = v != v ? 0 : rint((double)v);
        int32_t w8 = (int32_t)fmax(-128, fmin(127, r - 5)), wu = (int32_t)fmax(0, fmin(255, r + 130));
        int32_t w4 = (int32_t)fmax(-8, fmin(7, r + 2));
        if (v != v) {
            w8 = -5;
            wu = 130;
            w4 = 2;
        }
        cr_assert_eq(q8[i], w8, "[%d] %a: int8 %d, want %d", i, x[i], q8[i], w8);
        cr_assert_eq(qu[i], wu, "[%d] %a: uint8 %d, want %d", i, x[i], qu[i], wu);
        cr_assert_eq(nk_int4_get(q4, (size_t)i), w4, "[%d] %a: int4 %d, want %d", i, x[i], nk_int4_get(q4, (size_t)i), w4);
        cr_assert_eq(nk_quantize_value(x[i], scale, -5, -128, 127), w8, "[%d] scalar", i);
    }
}

Test(qfloat, dequantize_and_round_trip)
{
    int8_t q[256];
    float x[256];
    int8_t back[256];
    for (int i = 0; i < 256; i++)
        q[i] = (int8_t)(i - 128);
    cr_assert_eq(nk_dequantize_i8_f32(q, x, 256, 0.037f, -11), NK_OK);
    for (int i = 0; i < 256; i++)
        cr_assert_eq(x[i], (float)(q[i] + 11) * 0.037f);
    cr_assert_eq(nk_quantize_f32_i8(x, back, 256, 0.037f, -11), NK_OK);
    cr_assert_eq(memcmp(q, back, 256), 0);

    uint8_t u[256];
    for (int i = 0; i < 256; i++)
        u[i] = (uint8_t)i;
    cr_assert_eq(nk_dequantize_u8_f32(u, x, 256, 0.5f, 128), NK_OK);
    cr_assert_eq(x[0], -64.0f);
    cr_assert_eq(x[255], 63.5f);

    uint8_t packed[3] = {0x8F, 0x07, 0x0A}; /* -1, -8, 7, 0, -6 */
    cr_assert_eq(nk_dequantize_i4_f32(packed, x, 5, 0.25f, 1), NK_OK);
    float want[5] = {-0.5f, -2.25f, 1.5f, -0.25f, -1.75f};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(x[i], want[i], "[%d] %f", i, x[i]);

    cr_assert_eq(nk_quantize_f32_i8(x, back, 4, 0.0f, 0), NK_EARG);
    cr_assert_eq(nk_quantize_f32_i8(x, back, 4, NAN, 0), NK_EARG);
    cr_assert_eq(nk_quantize_f32_i8(x, back, 4, 1.0f, 128), NK_EARG);
    cr_assert_eq(nk_quantize_f32_u8(x, u, 4, 1.0f, -1), NK_EARG);
    cr_assert_eq(nk_quantize_f32_i4(x, u, 4, 1.0f, 8), NK_EARG);
    cr_assert_eq(nk_dequantize_i8_f32(NULL, x, 4, 1.0f, 0), NK_EARG);
    cr_assert_eq(nk_dequantize_i8_f32(NULL, NULL, 0, 1.0f, 0), NK_OK);
}

Test(qfloat, activation_range)
{
    int32_t lo, hi;
    nk_act none = {NK_ACT_NONE, 0, 0, 0}, relu = {NK_ACT_RELU, 0, 0, 0}, relu6 = {NK_ACT_CLIP, 0.0f, 6.0f, 0};
    cr_assert_eq(nk_quant_act_range(none, 0.05f, -10, -128, 127, &lo, &hi), NK_OK);
    cr_assert(lo == -128 && hi == 127);
    cr_assert_eq(nk_quant_act_range(relu, 0.05f, -10, -128, 127, &lo, &hi), NK_OK);
    cr_assert(lo == -10 && hi == 127);
    cr_assert_eq(nk_quant_act_range(relu6, 0.0625f, -10, -128, 127, &lo, &hi), NK_OK);
    cr_assert(lo == -10 && hi == 86, "%d %d", lo, hi); /* 6 / 0.0625 = 96 */
    cr_assert_eq(nk_quant_act_range(relu6, 0.01f, -10, -128, 127, &lo, &hi), NK_OK);
    cr_assert(lo == -10 && hi == 127, "saturates: %d", hi);
    nk_act leaky = {NK_ACT_LEAKY_RELU, 0, 0, 0.1f}, bad = {NK_ACT_CLIP, 2.0f, 1.0f, 0};
    cr_assert_eq(nk_quant_act_range(leaky, 0.05f, 0, -128, 127, &lo, &hi), NK_EUNSUPPORTED);
    cr_assert_eq(nk_quant_act_range(bad, 0.05f, 0, -128, 127, &lo, &hi), NK_EARG);
    cr_assert_eq(nk_quant_act_range(relu, 0.05f, 200, -128, 127, &lo, &hi), NK_EARG);
}

/* ---- int4 packing --------------------------------------------------------- */

Test(qint4, pack_order_and_sign)
{
    int8_t v[16], back[17];
    for (int i = 0; i < 16; i++)
        v[i] = (int8_t)(i - 8);
    uint8_t p[9];
    memset(p, 0xEE, sizeof p);
    cr_assert_eq(nk_int4_pack(v, p, 16), NK_OK);
    cr_assert_eq(p[0], 0x98, "-8 low, -7 high"); /* 0x8 | 0x9 << 4 */
    cr_assert_eq(p[4], 0x10, "0 low, 1 high");
    cr_assert_eq(p[7], 0x76, "6 low, 7 high");
    cr_assert_eq(p[8], 0xEE, "no write past 8 bytes");
    for (int i = 0; i < 16; i++)
        cr_assert_eq(nk_int4_get(p, (size_t)i), v[i]);
    nk_int4_unpack(p, back, 16);
    cr_assert_eq(memcmp(back, v, 16), 0);

    int8_t odd[3] = {1, -1, -3};
    uint8_t q[2] = {0xFF, 0xFF};
    cr_assert_eq(nk_int4_pack(odd, q, 3), NK_OK);
    cr_assert_eq(q[0], 0xF1);
    cr_assert_eq(q[1], 0x0D, "odd count: high nibble 0");
    memset(back, 99, sizeof back);
    nk_int4_unpack(q, back, 3);
    cr_assert(back[0] == 1 && back[1] == -1 && back[2] == -3 && back[3] == 99);
    cr_assert_eq(nk_int4_bytes(3), 2);
    cr_assert_eq(nk_int4_bytes(4), 2);

    int8_t bad[2] = {8, 0};
    cr_assert_eq(nk_int4_pack(bad, q, 2), NK_EARG);
    bad[0] = -9;
    cr_assert_eq(nk_int4_pack(bad, q, 2), NK_EARG);
    cr_assert_eq(nk_int4_pack(NULL, q, 2), NK_EARG);
}

/* ---- kernels against the golden data -------------------------------------- */

static void *scratch_for(size_t n)
{
    void *p = malloc(n ? n : 1);
    memset(p, 0xA5, n ? n : 1); /* kernels must not rely on zeroed scratch */
    return p;
}

/* Output with a canary byte past the end. */
static int8_t *out_for(size_t n)
{
    int8_t *p = malloc(n + 1);
    memset(p, 0x5A, n + 1);
    return p;
}

static void expect_same(const char *name, const int8_t *got, const int8_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s: element %zu: %d vs %d", name, i, got[i], want[i]);
    cr_assert_eq(got[n], 0x5A, "%s: wrote past the end", name);
}

/* The multiplier of the case matches the one derived from its scales. */
static void check_mult(const char *name, float num, float w, float den, int32_t mult, int32_t shift)
{
    int32_t m;
    int s;
    cr_assert_eq(nk_multiplier_from_scales(num, w, den, &m, &s), NK_OK, "%s", name);
    cr_assert(m == mult && s == shift, "%s: multiplier (%d, %d), want (%d, %d)", name, m, s, mult, shift);
}

static nk_act case_act(int code, float lo, float hi)
{
    nk_act a = {code == 1 ? NK_ACT_RELU : (code == 2 ? NK_ACT_CLIP : NK_ACT_NONE), lo, hi, 0.0f};
    return a;
}

Test(qconv, golden)
{
    for (size_t i = 0; i < COUNT(qk_conv_cases); i++) {
        const qk_conv_case *c = &qk_conv_cases[i];
        for (int32_t k = 0; k < c->n_wscales; k++)
            check_mult(c->name, c->in_scale, c->w_scales[k], c->out_scale, c->mult[k], c->shift[k]);
        int32_t lo, hi;
        cr_assert_eq(nk_quant_act_range(case_act(c->act, c->act_lo, c->act_hi), c->out_scale, c->p.out_zp, -128,
                                        127, &lo, &hi), NK_OK);
        cr_assert(lo == c->p.act_min && hi == c->p.act_max, "%s: act range %d %d", c->name, lo, hi);
        size_t ss = nk_qconv2d_scratch_size(&c->p);
        void *scratch = scratch_for(ss);
        int8_t *out = out_for(c->out_count);
        cr_assert_eq(nk_qconv2d(&c->p, c->in, c->w, c->bias, out, scratch), NK_OK, "%s", c->name);
        expect_same(c->name, out, c->expected, c->out_count);
        free(scratch);
        free(out);
    }
}

Test(qfc, golden)
{
    for (size_t i = 0; i < COUNT(qk_fc_cases); i++) {
        const qk_fc_case *c = &qk_fc_cases[i];
        for (int32_t k = 0; k < c->n_wscales; k++)
            check_mult(c->name, c->in_scale, c->w_scales[k], c->out_scale, c->mult[k], c->shift[k]);
        void *scratch = scratch_for(nk_qfc_scratch_size(&c->p));
        int8_t *out = out_for(c->out_count);
        cr_assert_eq(nk_qfc(&c->p, c->in, c->w, c->bias, out, scratch), NK_OK, "%s", c->name);
        expect_same(c->name, out, c->expected, c->out_count);
        free(scratch);
        free(out);
    }
}

Test(qbmm, golden)
{
    for (size_t i = 0; i < COUNT(qk_bmm_cases); i++) {
        const qk_bmm_case *c = &qk_bmm_cases[i];
        check_mult(c->name, c->a_scale, c->b_scale, c->out_scale, c->p.mult, c->p.shift);
        void *scratch = scratch_for(nk_qbmm_scratch_size(&c->p));
        int8_t *out = out_for(c->out_count);
        cr_assert_eq(nk_qbmm(&c->p, c->a, c->b, out, scratch), NK_OK, "%s", c->name);
        expect_same(c->name, out, c->expected, c->out_count);
        free(scratch);
        free(out);
    }
}

Test(qpool, golden)
{
    for (size_t i = 0; i < COUNT(qk_pool_cases); i++) {
        const qk_pool_case *c = &qk_pool_cases[i];
        check_mult(c->name, c->in_scale, 1.0f, c->out_scale, c->p.mult, c->p.shift);
        int8_t *out = out_for(c->out_count);
        nk_status st;
        if (c->kind == 0)
            st = nk_qmaxpool(&c->p, c->in, out);
        else if (c->kind == 1)
            st = nk_qavgpool(&c->p, c->in, out);
        else
            st = nk_qglobal_avgpool(&c->p, c->in, out);
        cr_assert_eq(st, NK_OK, "%s", c->name);
        expect_same(c->name, out, c->expected, c->out_count);
        free(out);
    }
}

/* Max pooling against a window-by-window reference on random layers:
 * padding, dilation, strides, ceil-mode sizes, rows wider than the row
 * path's buffer, and more than 1024 outputs (the requantized-maximum
 * table), so every route of nk_qmaxpool is compared. */
static int8_t maxpool_ref_one(const nk_qpool_params *p, const int8_t *plane, int32_t oy, int32_t ox)
{
    int32_t m = -129;
    for (int32_t ky = 0; ky < p->k_h; ky++)
        for (int32_t kx = 0; kx < p->k_w; kx++) {
            int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h, ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
            if (iy >= 0 && iy < p->h_in && ix >= 0 && ix < p->w_in && plane[iy * p->w_in + ix] > m)
                m = plane[iy * p->w_in + ix];
        }
    if (m == -129)
        return (int8_t)nk_clamp_i32(p->out_zp, p->act_min, p->act_max);
    return (int8_t)nk_clamp_i32(nk_requant_out(m - p->in_zp, p->mult, p->shift, p->out_zp, -128, 127), p->act_min,
                                p->act_max);
}

Test(qpool, maxpool_random_vs_window_reference)
{
    srand(7);
    for (int t = 0; t < 300; t++) {
        nk_qpool_params p = {.n = 1 + rand() % 2, .c = 1 + rand() % 3, .k_h = 1 + rand() % 3, .k_w = 1 + rand() % 3,
                             .stride_h = 1 + rand() % 3, .stride_w = 1 + rand() % 3, .dil_h = 1 + rand() % 2,
                             .dil_w = 1 + rand() % 2, .in_zp = rand() % 21 - 10, .out_zp = rand() % 21 - 10,
                             .mult = (1 << 30) + rand() % (1 << 29), .shift = rand() % 3 - 1, .act_min = -128,
                             .act_max = 127};
        p.h_in = 1 + rand() % 12;
        p.w_in = t % 10 == 0 ? 1025 + rand() % 40 : 1 + rand() % 40;
        if (rand() % 2)
            p.act_min = p.out_zp;
        p.pad_top = rand() % p.k_h, p.pad_bottom = rand() % p.k_h;
        p.pad_left = rand() % p.k_w, p.pad_right = rand() % p.k_w;
        int32_t span_h = p.dil_h * (p.k_h - 1) + 1, span_w = p.dil_w * (p.k_w - 1) + 1;
        if (p.h_in + p.pad_top + p.pad_bottom < span_h || p.w_in + p.pad_left + p.pad_right < span_w)
            continue;
        p.h_out = (p.h_in + p.pad_top + p.pad_bottom - span_h) / p.stride_h + 1;
        p.w_out = (p.w_in + p.pad_left + p.pad_right - span_w) / p.stride_w + 1;
        size_t plane = (size_t)p.h_in * p.w_in, oplane = (size_t)p.h_out * p.w_out, nc = (size_t)(p.n * p.c);
        int8_t *in = malloc(plane * nc), *out = malloc(oplane * nc);
        cr_assert(in && out);
        for (size_t i = 0; i < plane * nc; i++)
            in[i] = (int8_t)(rand() % 256 - 128);
        cr_assert_eq(nk_qmaxpool(&p, in, out), NK_OK, "case %d", t);
        for (size_t k = 0; k < nc; k++)
            for (int32_t oy = 0; oy < p.h_out; oy++)
                for (int32_t ox = 0; ox < p.w_out; ox++)
                    cr_assert_eq(out[k * oplane + (size_t)oy * p.w_out + ox],
                                 maxpool_ref_one(&p, in + k * plane, oy, ox), "case %d at %zu,%d,%d", t, k, oy, ox);
        free(in);
        free(out);
    }
}

Test(qbinary, golden)
{
    for (size_t i = 0; i < COUNT(qk_bin_cases); i++) {
        const qk_bin_case *c = &qk_bin_cases[i];
        nk_qbinary_params p = c->p;
        p.a_mult = p.b_mult = p.out_mult = -1;
        cr_assert_eq(nk_qbinary_prepare(&p, c->a_scale, c->b_scale, c->out_scale), NK_OK, "%s", c->name);
        if (p.op == NK_QMUL) /* input multipliers unused */
            p.a_mult = p.b_mult = 0, p.a_shift = p.b_shift = 0;
        if (p.op == NK_QMIN || p.op == NK_QMAX)
            p.out_mult = 0, p.out_shift = 0;
        cr_assert(p.left_shift == c->p.left_shift && p.a_mult == c->p.a_mult && p.a_shift == c->p.a_shift &&
                      p.b_mult == c->p.b_mult && p.b_shift == c->p.b_shift && p.out_mult == c->p.out_mult &&
                      p.out_shift == c->p.out_shift,
                  "%s: prepared multipliers differ", c->name);
        int8_t *out = out_for(c->out_count);
        cr_assert_eq(nk_qbinary(&c->p, c->a, c->b, out), NK_OK, "%s", c->name);
        expect_same(c->name, out, c->expected, c->out_count);
        /* a and b swapped (with their parameters) gives the same for the symmetric ops */
        if (p.op != NK_QSUB) {
            nk_qbinary_params q = c->p;
            q.a_shape = c->p.b_shape, q.b_shape = c->p.a_shape;
            q.a_zp = c->p.b_zp, q.b_zp = c->p.a_zp;
            q.a_mult = c->p.b_mult, q.b_mult = c->p.a_mult, q.a_shift = c->p.b_shift, q.b_shift = c->p.a_shift;
            memset(out, 0x5A, c->out_count + 1);
            cr_assert_eq(nk_qbinary(&q, c->b, c->a, out), NK_OK, "%s swapped", c->name);
            expect_same(c->name, out, c->expected, c->out_count);
        }
        free(out);
    }
}

Test(qrequant_kernel, golden)
{
    for (size_t i = 0; i < COUNT(qk_rq_cases); i++) {
        const qk_rq_case *c = &qk_rq_cases[i];
        check_mult(c->name, c->in_scale, 1.0f, c->out_scale, c->p.mult, c->p.shift);
        int8_t *out = out_for(c->count);
        cr_assert_eq(nk_qrequant(&c->p, c->in, out, c->count), NK_OK, "%s", c->name);
        expect_same(c->name, out, c->expected, c->count);
        free(out);
    }
}

/* ---- LUT ------------------------------------------------------------------- */

static float affine(float x, const void *ctx)
{
    (void)ctx;
    return 2.0f * x + 1.0f;
}

Test(qlut, apply_and_build)
{
    int8_t lut[256], in[300], out[300];
    for (int i = 0; i < 256; i++)
        lut[i] = (int8_t)(i * 37 + 11);
    for (int i = 0; i < 300; i++)
        in[i] = (int8_t)(i * 7 - 128);
    nk_lut_apply_i8(lut, in, out, 300);
    for (int i = 0; i < 300; i++)
        cr_assert_eq(out[i], lut[in[i] + 128]);

    /* in_scale 0.5, zp 0: real q/2 -> 2 * q/2 + 1 = q + 1; out scale 1, zp -3: q - 2, saturated */
    cr_assert_eq(nk_lut_build_i8(lut, affine, NULL, 0.5f, 0, 1.0f, -3), NK_OK);
    for (int q = -128; q < 128; q++) {
        int want = q - 2 < -128 ? -128 : q - 2;
        cr_assert_eq(lut[q + 128], want, "q=%d", q);
    }
    /* sigmoid: within 1 of a double-precision quantization (float evaluation may differ at ties) */
    float si = 0.05f, so = 1.0f / 256.0f;
    cr_assert_eq(nk_lut_build_i8(lut, nk_lut_sigmoid, NULL, si, 5, so, -128), NK_OK);
    for (int q = -128; q < 128; q++) {
        double y = 1.0 / (1.0 + exp(-(double)si * (q - 5)));
        double r = nearbyint(y / so) - 128;
        r = r < -128 ? -128 : (r > 127 ? 127 : r);
        cr_assert(fabs(lut[q + 128] - r) <= 1.0, "q=%d: %d vs %f", q, lut[q + 128], r);
    }
    float ab[2] = {0.2f, 0.5f};
    cr_assert_eq(nk_lut_hardsigmoid(10.0f, ab), 1.0f);
    cr_assert_eq(nk_lut_hardswish(-4.0f, NULL), 0.0f);
    cr_assert_eq(nk_lut_hardswish(4.0f, NULL), 4.0f);
    cr_assert_eq(nk_lut_build_i8(lut, NULL, NULL, 0.5f, 0, 1.0f, 0), NK_EARG);
    cr_assert_eq(nk_lut_build_i8(lut, affine, NULL, 0.0f, 0, 1.0f, 0), NK_EARG);
    cr_assert_eq(nk_lut_build_i8(lut, affine, NULL, 0.5f, 0, 1.0f, 300), NK_EARG);
}

/* ---- parameter validation: one bad field at a time ------------------------ */

#include <stddef.h>

typedef struct { const char *field; size_t off; int32_t value; nk_status want; } bad_field;

static void set_field(void *p, size_t off, int32_t v)
{
    memcpy((char *)p + off, &v, sizeof v);
}

#define CONV_F(f) #f, offsetof(nk_qconv2d_params, f)

Test(qvalidate, conv)
{
    static const bad_field bad[] = {
        {CONV_F(n), 0, NK_EARG},           {CONV_F(c_in), -1, NK_EARG},      {CONV_F(h_in), 0, NK_EARG},
        {CONV_F(c_out), 0, NK_EARG},       {CONV_F(h_out), 11, NK_EARG},     {CONV_F(w_out), 9, NK_EARG},
        {CONV_F(k_h), 0, NK_EARG},         {CONV_F(stride_w), 0, NK_EARG},   {CONV_F(dil_h), 0, NK_EARG},
        {CONV_F(pad_top), -1, NK_EARG},    {CONV_F(groups), 3, NK_EARG},     {CONV_F(groups), 0, NK_EARG},
        {CONV_F(in_zp), 128, NK_EARG},     {CONV_F(out_zp), -129, NK_EARG},  {CONV_F(act_min), -129, NK_EARG},
        {CONV_F(act_max), 128, NK_EARG},   {CONV_F(w_format), 7, NK_EARG},   {CONV_F(q.n), 2, NK_EARG},
        {CONV_F(h_in), 1 << 30, NK_EARG},
    };
    const qk_conv_case *c = &qk_conv_cases[0];
    int8_t out[4096];
    void *scratch = scratch_for(1 << 20);
    for (size_t i = 0; i < COUNT(bad); i++) {
        nk_qconv2d_params p = c->p;
        set_field(&p, bad[i].off, bad[i].value);
        cr_expect_eq(nk_qconv2d(&p, c->in, c->w, c->bias, out, scratch), bad[i].want, "%s = %d", bad[i].field,
                     bad[i].value);
        cr_expect_eq(nk_qconv2d_scratch_size(&p), 0, "%s: scratch size of bad params", bad[i].field);
    }
    nk_qconv2d_params p = c->p;
    int32_t bad_shift[16], bad_mult[16];
    memcpy(bad_shift, c->shift, sizeof(int32_t) * 16);
    memcpy(bad_mult, c->mult, sizeof(int32_t) * 16);
    bad_shift[5] = 31;
    p.q.shift = bad_shift;
    cr_expect_eq(nk_qconv2d(&p, c->in, c->w, c->bias, out, scratch), NK_EARG, "shift 31");
    p.q.shift = c->shift;
    bad_mult[3] = -1;
    p.q.mult = bad_mult;
    cr_expect_eq(nk_qconv2d(&p, c->in, c->w, c->bias, out, scratch), NK_EARG, "negative multiplier");
    p.q.mult = NULL;
    cr_expect_eq(nk_qconv2d(&p, c->in, c->w, c->bias, out, scratch), NK_EARG, "no multipliers");
    p = c->p;
    cr_expect_eq(nk_qconv2d(&p, NULL, c->w, c->bias, out, scratch), NK_EARG);
    cr_expect_eq(nk_qconv2d(&p, c->in, NULL, c->bias, out, scratch), NK_EARG);
    cr_expect_eq(nk_qconv2d(&p, c->in, c->w, c->bias, NULL, scratch), NK_EARG);
    cr_expect_eq(nk_qconv2d(&p, c->in, c->w, c->bias, out, NULL), NK_EARG, "im2col needs scratch");
    cr_expect_eq(nk_qconv2d(NULL, c->in, c->w, c->bias, out, scratch), NK_EARG);
    /* too long a reduction for an int32 accumulator */
    p.c_in = p.c_out = 8192;
    p.q.n = 1;
    cr_expect_eq(nk_qconv2d(&p, c->in, c->w, c->bias, out, scratch), NK_EUNSUPPORTED);
    free(scratch);
}

#define FC_F(f) #f, offsetof(nk_qfc_params, f)
#define BMM_F(f) #f, offsetof(nk_qbmm_params, f)
#define POOL_F(f) #f, offsetof(nk_qpool_params, f)

Test(qvalidate, fc_and_bmm)
{
    static const bad_field fc_bad[] = {
        {FC_F(batch), 0, NK_EARG},     {FC_F(in_features), 0, NK_EARG}, {FC_F(out_features), -3, NK_EARG},
        {FC_F(in_zp), 300, NK_EARG},   {FC_F(act_min), -200, NK_EARG},   {FC_F(w_format), 2, NK_EARG},
        {FC_F(q.n), 3, NK_EARG},       {FC_F(in_features), 70000, NK_EUNSUPPORTED},
    };
    const qk_fc_case *c = &qk_fc_cases[0];
    int8_t out[1024];
    void *scratch = scratch_for(1 << 16);
    for (size_t i = 0; i < COUNT(fc_bad); i++) {
        nk_qfc_params p = c->p;
        set_field(&p, fc_bad[i].off, fc_bad[i].value);
        cr_expect_eq(nk_qfc(&p, c->in, c->w, c->bias, out, scratch), fc_bad[i].want, "%s", fc_bad[i].field);
    }
    nk_qfc_params fp = c->p;
    fp.w_format = NK_W_I4;
    cr_expect_eq(nk_qfc(&fp, c->in, c->w, c->bias, out, NULL), NK_EARG, "int4 needs scratch");

    static const bad_field bmm_bad[] = {
        {BMM_F(batch), 0, NK_EARG},  {BMM_F(a_batch), 3, NK_EARG}, {BMM_F(b_batch), 0, NK_EARG},
        {BMM_F(m), 0, NK_EARG},      {BMM_F(b_zp), 128, NK_EARG},  {BMM_F(shift), -32, NK_EARG},
        {BMM_F(mult), -5, NK_EARG},  {BMM_F(k), 40000, NK_EUNSUPPORTED},
    };
    const qk_bmm_case *b = &qk_bmm_cases[0];
    for (size_t i = 0; i < COUNT(bmm_bad); i++) {
        nk_qbmm_params p = b->p;
        set_field(&p, bmm_bad[i].off, bmm_bad[i].value);
        cr_expect_eq(nk_qbmm(&p, b->a, b->b, out, scratch), bmm_bad[i].want, "%s", bmm_bad[i].field);
    }
    cr_expect_eq(nk_qbmm(&b->p, b->a, b->b, out, NULL), NK_EARG);
    free(scratch);
}

Test(qvalidate, pools)
{
    static const bad_field bad[] = {
        {POOL_F(n), 0, NK_EARG},          {POOL_F(h_out), 7, NK_EARG},     {POOL_F(w_out), 0, NK_EARG},
        {POOL_F(k_w), 0, NK_EARG},        {POOL_F(stride_h), 0, NK_EARG},  {POOL_F(dil_w), -1, NK_EARG},
        {POOL_F(pad_left), -2, NK_EARG},  {POOL_F(in_zp), 128, NK_EARG},   {POOL_F(out_zp), -200, NK_EARG},
        {POOL_F(mult), -1, NK_EARG},      {POOL_F(shift), 31, NK_EARG},      {POOL_F(act_min), -129, NK_EARG},
        {POOL_F(act_max), 200, NK_EARG},  {POOL_F(k_h), 40, NK_EARG},
    };
    const qk_pool_case *c = &qk_pool_cases[0]; /* max 3x3 s2 p1 on 11x11: out 6x6 */
    int8_t out[1024];
    for (size_t i = 0; i < COUNT(bad); i++) {
        nk_qpool_params p = c->p;
        set_field(&p, bad[i].off, bad[i].value);
        cr_expect_eq(nk_qmaxpool(&p, c->in, out), bad[i].want, "max %s", bad[i].field);
        cr_expect_eq(nk_qavgpool(&p, c->in, out), bad[i].want, "avg %s", bad[i].field);
    }
    nk_qpool_params p = c->p;
    p.h_out = 7; /* ceil of (11 + 2 - 3) / 2 + 1 = 6 too: 7 starts past the input */
    cr_expect_eq(nk_qmaxpool(&p, c->in, out), NK_EARG);
    p = c->p;
    p.dil_h = 2;
    p.h_out = 5;
    cr_expect_eq(nk_qmaxpool(&p, c->in, out), NK_OK, "max pool dilates");
    cr_expect_eq(nk_qavgpool(&p, c->in, out), NK_EARG, "average pool does not");
    cr_expect_eq(nk_qmaxpool(&c->p, NULL, out), NK_EARG);
    p = c->p;
    p.c = 0;
    cr_expect_eq(nk_qglobal_avgpool(&p, c->in, out), NK_EARG);
    cr_expect_eq(nk_qglobal_avgpool(&c->p, NULL, out), NK_EARG);
    p = c->p;
    p.h_in = p.w_in = 1 << 12;
    cr_expect_eq(nk_qglobal_avgpool(&p, c->in, out), NK_EUNSUPPORTED);
    p = c->p;
    p.shift = -32;
    cr_expect_eq(nk_qglobal_avgpool(&p, c->in, out), NK_EARG);
}

Test(qvalidate, binary_requant_lut)
{
    const qk_bin_case *c = &qk_bin_cases[1]; /* [2,3,4,4] + [1,3,1,1] */
    int8_t out[1024];
    nk_qbinary_params p = c->p;
    p.b_shape.dims[1] = 2; /* 3 vs 2 do not broadcast */
    cr_expect_eq(nk_qbinary(&p, c->a, c->b, out), NK_EARG);
    p = c->p;
    p.out_shape.dims[0] = 4; /* wider than the broadcast */
    cr_expect_eq(nk_qbinary(&p, c->a, c->b, out), NK_EARG);
    p = c->p;
    p.a_shape.rank = 9;
    cr_expect_eq(nk_qbinary(&p, c->a, c->b, out), NK_EARG);
    p = c->p;
    p.op = (nk_qbin_op)42;
    cr_expect_eq(nk_qbinary(&p, c->a, c->b, out), NK_EARG);
    cr_expect_eq(nk_qbinary_prepare(&p, 0.1f, 0.1f, 0.1f), NK_EARG);
    p = c->p;
    p.left_shift = 30;
    cr_expect_eq(nk_qbinary(&p, c->a, c->b, out), NK_EARG);
    p = c->p;
    p.out_shift = 40;
    cr_expect_eq(nk_qbinary(&p, c->a, c->b, out), NK_EARG);
    p = c->p;
    p.a_zp = -200;
    cr_expect_eq(nk_qbinary(&p, c->a, c->b, out), NK_EARG);
    cr_expect_eq(nk_qbinary(&c->p, NULL, c->b, out), NK_EARG);
    cr_expect_eq(nk_qbinary_prepare(&p, -1.0f, 0.1f, 0.1f), NK_EARG);
    p = c->p;
    p.out_shape.dims[2] = p.a_shape.dims[2] = 0; /* empty: nothing to do, pointers unused */
    cr_expect_eq(nk_qbinary(&p, NULL, NULL, NULL), NK_OK);

    nk_qrequant_params r = {.in_zp = 0, .out_zp = 0, .mult = 1 << 30, .shift = 1, .act_min = -128, .act_max = 127};
    int8_t x[4] = {1, 2, 3, 4};
    cr_expect_eq(nk_qrequant(&r, x, out, 4), NK_OK);
    cr_expect_eq(memcmp(x, out, 4), 0, "identity multiplier");
    r.shift = -40;
    cr_expect_eq(nk_qrequant(&r, x, out, 4), NK_EARG);
    r.shift = 1;
    r.act_min = 5, r.act_max = 4;
    cr_expect_eq(nk_qrequant(&r, x, out, 4), NK_EARG);
    cr_expect_eq(nk_qrequant(NULL, x, out, 4), NK_EARG);
}
