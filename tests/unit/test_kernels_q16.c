/* A16W8 kernels (kernels/nk_q16.h): nk_requantize64 against an exact
 * 128-bit reference (the test runs on the x86-64 host, which has
 * __int128; the kernel does without it), the interpolated int16 LUT, the
 * int16 conv against a double reference and the width-changing requantize. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "kernels/kernels.h"

__extension__ typedef __int128 i128;

/* round_half_even(acc * mult / 2^(31 - shift)) saturated to int32, exactly. */
static int32_t ref_requant64(int64_t acc, int32_t mult, int shift)
{
    i128 p = (i128)acc * mult;
    int e = 31 - shift;
    i128 q = p >> e, rem = p - q * ((i128)1 << e), half = (i128)1 << (e - 1);
    if (rem > half || (rem == half && (q & 1)))
        q += 1;
    return q > INT32_MAX ? INT32_MAX : q < INT32_MIN ? INT32_MIN : (int32_t)q;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

Test(q16, requantize64_exact)
{
    for (int i = 0; i < 400000; i++) {
        int bits = 1 + (int)(rnd() % 62); /* accumulators of every magnitude up to 2^62 */
        int64_t acc = (int64_t)(rnd() >> (64 - bits)) * ((rnd() & 1) ? -1 : 1);
        int32_t mult = (int32_t)((1u << 30) | (uint32_t)(rnd() & 0x3fffffffu));
        int shift = NK_SHIFT_MIN + (int)(rnd() % (NK_SHIFT_MAX - NK_SHIFT_MIN + 1));
        int32_t got = nk_requantize64(acc, mult, shift), want = ref_requant64(acc, mult, shift);
        cr_assert_eq(got, want, "acc %lld mult %d shift %d: %d, exact %d", (long long)acc, mult, shift, got, want);
        if (acc >= INT32_MIN && acc <= INT32_MAX)
            cr_assert_eq(got, nk_requantize((int32_t)acc, mult, shift));
    }
    /* ties of both signs beyond int32: acc * 2^30 / 2^61 = acc / 2^31 */
    cr_assert_eq(nk_requantize64((int64_t)5 << 30, 1 << 30, -30), 2);    /* 2.5 -> 2 */
    cr_assert_eq(nk_requantize64(-((int64_t)7 << 30), 1 << 30, -30), -4); /* -3.5 -> -4 */
    cr_assert_eq(nk_requantize64(INT64_MAX, 1 << 30, 30), INT32_MAX);
    cr_assert_eq(nk_requantize64(INT64_MIN + 1, 1 << 30, 30), INT32_MIN);
}

/* A linear function is reproduced exactly between entries; the table and
 * the interpolation agree with the float function within 1 LSB elsewhere. */
Test(q16, lut_interpolates)
{
    float fv[2 * NK_LUT16_SIZE - 1];
    const float in_scale = 6.0f / 32768.0f, out_scale = 1.0f / 32768.0f;
    for (int k = 0; k < 2 * NK_LUT16_SIZE - 1; k++)
        fv[k] = tanhf(in_scale * 64.0f * (float)(k - NK_LUT16_SIZE + 1));
    int16_t lut[NK_LUT16_SIZE];
    cr_assert_eq(nk_lut_build_i16(lut, fv, out_scale), NK_OK);
    int worst = 0;
    for (int x = -32768; x < 32768; x += 7) {
        int16_t in = (int16_t)x, out;
        nk_lut_apply_i16(lut, &in, &out, 1);
        int want = (int)lrint(tanh((double)in_scale * x) / out_scale);
        want = want > 32767 ? 32767 : want;
        worst = abs(out - want) > worst ? abs(out - want) : worst;
    }
    /* tanh's curvature over 128 codes at this scale: the line errs a few LSBs at most */
    cr_assert(worst <= 4, "int16 tanh LUT off by %d LSB", worst);
    for (int k = 0; k < 2 * NK_LUT16_SIZE - 1; k++)
        fv[k] = (float)(k - NK_LUT16_SIZE + 1) * 16.0f; /* f(x) = x / 4 in codes: exact midpoints */
    cr_assert_eq(nk_lut_build_i16(lut, fv, 1.0f), NK_OK);
    for (int x = -32768; x < 32768; x += 3) {
        int16_t in = (int16_t)x, out;
        nk_lut_apply_i16(lut, &in, &out, 1);
        double want = x / 4.0, f = floor(want), d = want - f;
        int w = (int)(d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0) ? f + 1 : f);
        cr_assert_eq(out, w, "x = %d: %d, want %d", x, out, w);
    }
}

/* The int16 conv is the exact sum, requantized once: against doubles. */
Test(q16, conv_matches_double)
{
    enum { C = 5, H = 7, W = 6, OC = 3, K = 3 };
    int16_t in[C * H * W], out[OC * H * W];
    int8_t w[OC * C * K * K];
    int32_t bias[OC] = {100000, -3, 77777};
    for (int i = 0; i < C * H * W; i++)
        in[i] = (int16_t)(rnd() % 65536 - 32768);
    for (int i = 0; i < OC * C * K * K; i++)
        w[i] = (int8_t)(rnd() % 255 - 127);
    int32_t mult[OC], shift[OC];
    for (int o = 0; o < OC; o++) {
        int s;
        cr_assert_eq(nk_quantize_multiplier(1.0 / (1000.0 + o * 333.0), &mult[o], &s), NK_OK);
        shift[o] = s;
    }
    nk_qconv2d_params p = {.n = 1, .c_in = C, .h_in = H, .w_in = W, .c_out = OC, .h_out = H, .w_out = W,
                           .k_h = K, .k_w = K, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
                           .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .groups = 1,
                           .act_min = -32768, .act_max = 32767, .w_format = NK_W_I8, .q = {OC, mult, shift}};
    cr_assert_eq(nk_qconv2d_a16(&p, in, w, bias, out), NK_OK);
    for (int o = 0; o < OC; o++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                int64_t acc = bias[o];
                for (int c = 0; c < C; c++)
                    for (int ky = 0; ky < K; ky++)
                        for (int kx = 0; kx < K; kx++) {
                            int iy = y + ky - 1, ix = x + kx - 1;
                            if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                                acc += (int64_t)w[((o * C + c) * K + ky) * K + kx] * in[(c * H + iy) * W + ix];
                        }
                int32_t want = nk_clamp_i32(ref_requant64(acc, mult[o], shift[o]), -32768, 32767);
                cr_assert_eq(out[(o * H + y) * W + x], want);
            }
    p.in_zp = 1; /* int16 activations are symmetric */
    cr_assert_eq(nk_qconv2d_a16(&p, in, w, bias, out), NK_EARG);
}

/* int8 -> int16 -> int8 by the scale change and back is the identity. */
Test(q16, requant_widths_round_trip)
{
    int8_t a[256], back[256];
    int16_t wide[256];
    for (int i = 0; i < 256; i++)
        a[i] = (int8_t)(i - 128);
    int32_t m, mb;
    int s, sb;
    cr_assert_eq(nk_multiplier_from_scales(0.05f, 1.0f, 0.05f / 200.0f, &m, &s), NK_OK);
    cr_assert_eq(nk_multiplier_from_scales(0.05f / 200.0f, 1.0f, 0.05f, &mb, &sb), NK_OK);
    nk_qrequant_params up = {.in_zp = 3, .out_zp = 0, .mult = m, .shift = s, .act_min = -32768, .act_max = 32767};
    nk_qrequant_params down = {.in_zp = 0, .out_zp = 3, .mult = mb, .shift = sb, .act_min = -128, .act_max = 127};
    cr_assert_eq(nk_qrequant_x(&up, a, 1, wide, 2, 256), NK_OK);
    cr_assert_eq(nk_qrequant_x(&down, wide, 2, back, 1, 256), NK_OK);
    for (int i = 0; i < 256; i++) {
        cr_assert_eq(wide[i], (i - 128 - 3) * 200);
        cr_assert_eq(back[i], a[i]);
    }
    cr_assert_eq(nk_qrequant_x(&up, a, 3, wide, 2, 256), NK_EARG);
}
