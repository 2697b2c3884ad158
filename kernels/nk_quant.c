/* Quantization math: multipliers, float <-> int, int4 packing, activation
 * ranges, requantize and LUT kernels. The kernels proper live in nk_q*.c. */
#include "kernels/nk_math.h"
#include "kernels/nk_quant.h"

#include <math.h>
#include <string.h>

nk_status nk_quantize_multiplier(double real_multiplier, int32_t *mult, int *shift)
{
    if (!mult || !shift || !(real_multiplier >= 0.0) || !isfinite(real_multiplier))
        return NK_EARG;
    *mult = 0;
    *shift = 0;
    if (real_multiplier == 0.0)
        return NK_OK;
    int e;
    double q = frexp(real_multiplier, &e); /* q in [0.5, 1) */
    /* q * 2^31 is exact (q has 53 bits); round() rounds ties away from zero as TfLiteRound. */
    int64_t q_fixed = (int64_t)round(q * 2147483648.0);
    if (q_fixed == ((int64_t)1 << 31)) {
        q_fixed /= 2;
        e++;
    }
    if (e < NK_SHIFT_MIN)
        return NK_OK; /* would shift everything out: flush to zero, as TFLite */
    if (e > NK_SHIFT_MAX)
        return NK_EARG;
    *mult = (int32_t)q_fixed;
    *shift = e;
    return NK_OK;
}

nk_status nk_multiplier_from_scales(float in_scale, float w_scale, float out_scale, int32_t *mult, int *shift)
{
    if (!(in_scale > 0.0f) || !(w_scale > 0.0f) || !(out_scale > 0.0f))
        return NK_EARG;
    /* the product of two floats is exact in double; one rounding, at the division */
    return nk_quantize_multiplier((double)in_scale * (double)w_scale / (double)out_scale, mult, shift);
}

/* Round half to even without libm: adding and removing 1.5 * 2^23 leaves
 * the nearest integer, ties to even, for |v| < 2^22 in the default
 * round-to-nearest-even mode (x86-64 and RISC-V F both start in it and
 * nothing here changes it). Three instructions instead of a trunc, a
 * fraction and four compares: the host quantizes every model input with it. */
__attribute__((always_inline)) static inline float round_half_even_small(float v)
{
    const float magic = 12582912.0f; /* 1.5 * 2^23 */
    return (v + magic) - magic;
}

/* round_half_even(x / scale) + zp saturated to [qmin, qmax]; the bounds in
 * the x / scale domain (lo = qmin - zp, hi = qmax - zp) are the caller's, so
 * that array loops hoist them. */
/* always inlined: the firmware is built -Os, where a call per element
 * would cost as much as the work */
__attribute__((always_inline)) static inline int32_t quantize_one(float x, float scale, float lo, float hi, int32_t zp)
{
    float v = x / scale;
    if (v != v)
        return zp; /* NaN: zp lies in [qmin, qmax] */
    v = v < lo ? lo : (v > hi ? hi : v);
    return (int32_t)round_half_even_small(v) + zp;
}

/* IEEE minNum/maxNum (a NaN operand gives the other). This gcc calls libm
 * for fminf on RISC-V, whose F extension has them as single instructions. */
__attribute__((always_inline)) static inline float min_num(float a, float b)
{
#if defined(__riscv) && defined(__riscv_flen)
    float r;
    __asm__("fmin.s %0, %1, %2" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return fminf(a, b);
#endif
}

__attribute__((always_inline)) static inline float max_num(float a, float b)
{
#if defined(__riscv) && defined(__riscv_flen)
    float r;
    __asm__("fmax.s %0, %1, %2" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return fmaxf(a, b);
#endif
}

/* quantize_one for arrays, in about nine host instructions per element (the
 * firmware quantizes every float model input with it): the clamp is minNum
 * and maxNum (one F instruction each, no branch), the rounding reads the
 * integer out of the bits of v + 1.5 * 2^23 (for |v| < 2^22 its low mantissa
 * bits hold round_half_even(v); bias = zp - bits(1.5 * 2^23)), and NaNs are
 * found per block of 32 by summing v (a NaN, or inf - inf, makes the sum
 * NaN): such a block is redone with quantize_one, whose NaN gives zp. The
 * same float operations as quantize_one, so the same codes. */
__attribute__((always_inline)) static inline int32_t quantize_bits(float v, float lo, float hi, int32_t bias)
{
    union {
        float f;
        uint32_t u;
    } b = {max_num(min_num(v, hi), lo) + 12582912.0f};
    return (int32_t)b.u + bias;
}

#define QUANTIZE_ARRAY(T)                                                                                          \
    do {                                                                                                           \
        const int32_t bias = zp - 0x4B400000; /* the bits of 1.5 * 2^23 */                                         \
        for (size_t i0 = 0; i0 < n; i0 += 32) {                                                                    \
            size_t end = n - i0 < 32 ? n : i0 + 32, i = i0;                                                        \
            float sum = 0.0f;                                                                                      \
            for (; i + 4 <= end; i += 4) { /* unrolled: -Os would not */                                           \
                float v0 = x[i] / scale, v1 = x[i + 1] / scale, v2 = x[i + 2] / scale, v3 = x[i + 3] / scale;     \
                sum += v0 + v1 + v2 + v3;                                                                          \
                q[i] = (T)quantize_bits(v0, lo, hi, bias);                                                         \
                q[i + 1] = (T)quantize_bits(v1, lo, hi, bias);                                                     \
                q[i + 2] = (T)quantize_bits(v2, lo, hi, bias);                                                     \
                q[i + 3] = (T)quantize_bits(v3, lo, hi, bias);                                                     \
            }                                                                                                      \
            for (; i < end; i++) {                                                                                 \
                float v = x[i] / scale;                                                                            \
                sum += v;                                                                                          \
                q[i] = (T)quantize_bits(v, lo, hi, bias);                                                          \
            }                                                                                                      \
            if (sum != sum)                                                                                        \
                for (i = i0; i < end; i++)                                                                         \
                    q[i] = (T)quantize_one(x[i], scale, lo, hi, zp);                                               \
        }                                                                                                          \
    } while (0)

int32_t nk_quantize_value(float x, float scale, int32_t zp, int32_t qmin, int32_t qmax)
{
    /* one past each bound, so that a zp outside [qmin, qmax] still saturates;
     * bounds beyond 2^22 (wider than any type we quantize to) are cut there */
    const int64_t lim = (int64_t)1 << 22;
    int64_t lo = (int64_t)qmin - zp - 1, hi = (int64_t)qmax - zp + 1;
    lo = lo < -lim ? -lim : lo;
    hi = hi > lim ? lim : hi;
    int64_t v = (int64_t)quantize_one(x, scale, (float)lo, (float)hi, 0) + zp; /* NaN gives zp */
    return v < qmin ? qmin : (v > qmax ? qmax : (int32_t)v);
}

static int scale_ok(float scale)
{
    return scale > 0.0f && isfinite(scale);
}

nk_status nk_quantize_f32_i8(const float *x, int8_t *q, size_t n, float scale, int32_t zp)
{
    if ((n && (!x || !q)) || !scale_ok(scale) || zp < -128 || zp > 127)
        return NK_EARG;
    float lo = (float)(-128 - zp), hi = (float)(127 - zp);
    QUANTIZE_ARRAY(int8_t);
    return NK_OK;
}

nk_status nk_quantize_f32_u8(const float *x, uint8_t *q, size_t n, float scale, int32_t zp)
{
    if ((n && (!x || !q)) || !scale_ok(scale) || zp < 0 || zp > 255)
        return NK_EARG;
    float lo = (float)-zp, hi = (float)(255 - zp);
    QUANTIZE_ARRAY(uint8_t);
    return NK_OK;
}

nk_status nk_quantize_f32_i4(const float *x, uint8_t *packed, size_t n, float scale, int32_t zp)
{
    if ((n && (!x || !packed)) || !scale_ok(scale) || zp < -8 || zp > 7)
        return NK_EARG;
    float lo = (float)(-8 - zp), hi = (float)(7 - zp);
    for (size_t i = 0; i < n; i += 2) {
        unsigned a = (unsigned)quantize_one(x[i], scale, lo, hi, zp) & 15u;
        unsigned b = i + 1 < n ? (unsigned)quantize_one(x[i + 1], scale, lo, hi, zp) & 15u : 0u;
        packed[i / 2] = (uint8_t)(a | b << 4);
    }
    return NK_OK;
}

nk_status nk_dequantize_i8_f32(const int8_t *q, float *x, size_t n, float scale, int32_t zp)
{
    if ((n && (!x || !q)) || !scale_ok(scale) || zp < -128 || zp > 127)
        return NK_EARG;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((int32_t)q[i] - zp) * scale;
    return NK_OK;
}

nk_status nk_dequantize_u8_f32(const uint8_t *q, float *x, size_t n, float scale, int32_t zp)
{
    if ((n && (!x || !q)) || !scale_ok(scale) || zp < 0 || zp > 255)
        return NK_EARG;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((int32_t)q[i] - zp) * scale;
    return NK_OK;
}

nk_status nk_dequantize_i4_f32(const uint8_t *packed, float *x, size_t n, float scale, int32_t zp)
{
    if ((n && (!x || !packed)) || !scale_ok(scale) || zp < -8 || zp > 7)
        return NK_EARG;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((int32_t)nk_int4_get(packed, i) - zp) * scale;
    return NK_OK;
}

nk_status nk_int4_pack(const int8_t *src, uint8_t *dst, size_t n)
{
    if (n && (!src || !dst))
        return NK_EARG;
    for (size_t i = 0; i < n; i += 2) {
        int8_t a = src[i], b = i + 1 < n ? src[i + 1] : 0;
        if (a < -8 || a > 7 || b < -8 || b > 7)
            return NK_EARG;
        dst[i / 2] = (uint8_t)(((unsigned)a & 15u) | ((unsigned)b & 15u) << 4);
    }
    return NK_OK;
}

void nk_int4_unpack(const uint8_t *src, int8_t *dst, size_t n)
{
    size_t pairs = n / 2;
    for (size_t i = 0; i < pairs; i++) {
        unsigned b = src[i];
        dst[2 * i] = (int8_t)((int)((b & 15u) ^ 8u) - 8);
        dst[2 * i + 1] = (int8_t)((int)((b >> 4) ^ 8u) - 8);
    }
    if (n & 1)
        dst[n - 1] = nk_int4_get(src, n - 1);
}

nk_status nk_quant_act_range(nk_act act, float scale, int32_t zp, int32_t qmin, int32_t qmax, int32_t *lo,
                             int32_t *hi)
{
    if (!lo || !hi || !scale_ok(scale) || qmin > qmax || zp < qmin || zp > qmax)
        return NK_EARG;
    *lo = qmin;
    *hi = qmax;
    switch (act.kind) {
    case NK_ACT_NONE:
        return NK_OK;
    case NK_ACT_RELU:
        *lo = zp;
        return NK_OK;
    case NK_ACT_CLIP:
        if (!(act.lo <= act.hi))
            return NK_EARG;
        *lo = nk_quantize_value(act.lo, scale, zp, qmin, qmax);
        *hi = nk_quantize_value(act.hi, scale, zp, qmin, qmax);
        return NK_OK;
    default:
        return NK_EUNSUPPORTED;
    }
}

nk_status nk_qrequant(const nk_qrequant_params *p, const int8_t *in, int8_t *out, size_t count)
{
    if (!p || (count && (!in || !out)) || p->in_zp < -128 || p->in_zp > 127 || p->out_zp < -128 ||
        p->out_zp > 127 || p->shift < NK_SHIFT_MIN || p->shift > NK_SHIFT_MAX || p->mult < 0 ||
        p->act_min < -128 || p->act_max > 127 || p->act_min > p->act_max)
        return NK_EARG;
    for (size_t i = 0; i < count; i++)
        out[i] = (int8_t)nk_requant_out((int32_t)in[i] - p->in_zp, p->mult, p->shift, p->out_zp, p->act_min,
                                        p->act_max);
    return NK_OK;
}

void nk_lut_apply_i8(const int8_t *lut, const int8_t *in, int8_t *out, size_t count)
{
    const int8_t *t = lut + 128;
    for (size_t i = 0; i < count; i++)
        out[i] = t[in[i]];
}

nk_status nk_lut_build_i8(int8_t *lut, nk_lut_fn fn, const void *ctx, float in_scale, int32_t in_zp,
                          float out_scale, int32_t out_zp)
{
    if (!lut || !fn || !scale_ok(in_scale) || !scale_ok(out_scale) || in_zp < -128 || in_zp > 127 ||
        out_zp < -128 || out_zp > 127)
        return NK_EARG;
    for (int q = -128; q < 128; q++) {
        float x = in_scale * (float)(q - in_zp);
        lut[q + 128] = (int8_t)nk_quantize_value(fn(x, ctx), out_scale, out_zp, -128, 127);
    }
    return NK_OK;
}

float nk_lut_sigmoid(float x, const void *ctx)
{
    (void)ctx;
    return 1.0f / (1.0f + nk_expf(-x));
}

float nk_lut_tanh(float x, const void *ctx)
{
    (void)ctx;
    return nk_tanhf(x);
}

float nk_lut_hardswish(float x, const void *ctx)
{
    (void)ctx;
    float r = x + 3.0f;
    r = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
    return x * r / 6.0f;
}

float nk_lut_hardsigmoid(float x, const void *ctx)
{
    const float *ab = ctx;
    float alpha = ab ? ab[0] : 0.2f, beta = ab ? ab[1] : 0.5f; /* ONNX defaults */
    float r = alpha * x + beta;
    return r < 0.0f ? 0.0f : (r > 1.0f ? 1.0f : r);
}

float nk_lut_leaky_relu(float x, const void *ctx)
{
    float alpha = ctx ? *(const float *)ctx : 0.01f;
    return x < 0.0f ? alpha * x : x;
}

float nk_lut_gelu(float x, const void *ctx)
{
    (void)ctx;
    return 0.5f * x * (1.0f + nk_erff(x * 0.70710678118654752f));
}
