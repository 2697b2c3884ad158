/* Integer numerics and integer reference kernels: the one home of the
 * quantization math shared by the quantizer, the reference executor, the
 * on-device runtime and the simulator's functional units. Bit-exactness
 * between those rests on everyone calling these functions.
 *
 * Conventions (docs/numerics.md has the full text):
 * - real = scale * (q - zero_point); activations int8 asymmetric per tensor,
 *   weights int8 (or int4) symmetric per output channel, bias int32 with scale
 *   in_scale * w_scale[c].
 * - A real multiplier M is an int32 Q31 mantissa `mult` in [2^30, 2^31) and an
 *   exponent `shift` in [-31, 30]: M ~= mult * 2^(shift - 31).
 * - nk_requantize is the only fixed-point rescale; every kernel calls it.
 *   Every integer op rounds once, half to even, from the exact rational
 *   value (as onnxruntime); TFLite's double rounding is not used.
 * - Float -> int rounds half to even (onnxruntime QuantizeLinear) and saturates.
 * - int4 is packed two per byte, low nibble first.
 * - Tensors are dense NCHW (the IR's layout); weights are ONNX OIHW. */
#ifndef NK_QUANT_H
#define NK_QUANT_H

#include "kernels/nk_common.h"

/* ---- fixed-point requantization ------------------------------------------ */

#define NK_SHIFT_MIN (-31)
#define NK_SHIFT_MAX 30

/* real_multiplier = mult * 2^(shift - 31) with
 * mult in [2^30, 2^31). 0 gives (0, 0); multipliers below 2^-32 flush to
 * (0, 0). NK_EARG for a negative, non-finite or >= 2^30 multiplier. */
nk_status nk_quantize_multiplier(double real_multiplier, int32_t *mult, int *shift);

/* The canonical real multiplier of a conv/gemm output channel,
 * in_scale * w_scale / out_scale, computed in double, then
 * nk_quantize_multiplier. Everyone derives multipliers from scales this way. */
nk_status nk_multiplier_from_scales(float in_scale, float w_scale, float out_scale, int32_t *mult, int *shift);

/* floor(v / 2^e) + round-half-even correction, e in [1, 62]: the one
 * rounding of every integer op. `sticky` says the exact value lies strictly
 * above v / 2^e by less than 2^-e (a non-zero remainder of an earlier exact
 * floor division), which breaks a tie upward. Relies on >> of a negative
 * int64 being arithmetic (gcc, clang). */
static inline int64_t nk_round_shift_even(int64_t v, int e, int sticky)
{
    int64_t q = v >> e;
    int64_t rem = v - q * ((int64_t)1 << e); /* in [0, 2^e) */
    int64_t half = (int64_t)1 << (e - 1);
    int up = rem > half || (rem == half && (sticky || (q & 1)));
    return q + up;
}

static inline int32_t nk_sat_i64_i32(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : (v < INT32_MIN ? INT32_MIN : (int32_t)v);
}

/* acc * mult * 2^(shift - 31) rounded once, half to even, saturated to int32
 * (onnxruntime's round(exact real value)). acc * mult is exact in int64
 * (|.| <= 2^62) and the shift 31 - shift is in [1, 62]. shift must lie in
 * [NK_SHIFT_MIN, NK_SHIFT_MAX]. */
static inline int32_t nk_requantize(int32_t acc, int32_t mult, int shift)
{
    return nk_sat_i64_i32(nk_round_shift_even((int64_t)acc * mult, 31 - shift, 0));
}

/* acc * mult * 2^(shift - 31) / div rounded once, half to even, saturated
 * (average pooling: the window sum rescaled and divided by the count).
 * div > 0. Exact for every int32 acc and mult: floor-divide the exact
 * product by div first, the remainder only breaks ties. */
static inline int32_t nk_requantize_div(int32_t acc, int32_t mult, int shift, int32_t div)
{
    int64_t v = (int64_t)acc * mult;
    int64_t q = v / div, r = v % div; /* C truncates: make q the floor */
    if (r < 0) {
        q -= 1;
        r += div;
    }
    return nk_sat_i64_i32(nk_round_shift_even(q, 31 - shift, r != 0));
}

/* nk_requantize of an int64 accumulator (A16W8: int16 activations times
 * int8 weights overflow int32 sums): the same single half-to-even rounding
 * of the exact acc * mult * 2^(shift - 31), saturated to int32. The product
 * (up to 2^94) is formed exactly as two 64-bit halves, without __int128
 * (the rv32 firmware has none); half to even is symmetric, so the rounding
 * runs on the magnitude. Equals nk_requantize for every int32 acc. */
static inline int32_t nk_requantize64(int64_t acc, int32_t mult, int shift)
{
    if (acc >= INT32_MIN && acc <= INT32_MAX)
        return nk_requantize((int32_t)acc, mult, shift);
    int neg = acc < 0, e = 31 - shift; /* e in [1, 62] */
    uint64_t a = neg ? (uint64_t)0 - (uint64_t)acc : (uint64_t)acc, m = (uint64_t)(uint32_t)mult;
    uint64_t lo = (a & 0xffffffffu) * m, mid = (a >> 32) * m; /* a * m = mid * 2^32 + lo */
    uint64_t l = lo + (mid << 32), h = (mid >> 32) + (l < lo);
    if ((h >> e) != 0)
        return neg ? INT32_MIN : INT32_MAX;
    uint64_t q = (h << (64 - e)) | (l >> e), rem = l & (((uint64_t)1 << e) - 1), half = (uint64_t)1 << (e - 1);
    if (q > ((uint64_t)1 << 32))
        return neg ? INT32_MIN : INT32_MAX;
    q += rem > half || (rem == half && (q & 1));
    int64_t v = neg ? -(int64_t)q : (int64_t)q;
    return nk_sat_i64_i32(v);
}

static inline int32_t nk_clamp_i32(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* int32 addition that saturates instead of overflowing (bias adds). */
static inline int32_t nk_sat_add_i32(int32_t a, int32_t b)
{
    int64_t s = (int64_t)a + b;
    return s > INT32_MAX ? INT32_MAX : (s < INT32_MIN ? INT32_MIN : (int32_t)s);
}

/* The output stage of every kernel: requantize, add the output zero point,
 * clamp to [act_min, act_max] (the quantized-domain activation range). */
static inline int32_t nk_requant_out(int32_t acc, int32_t mult, int shift, int32_t out_zp, int32_t act_min,
                                     int32_t act_max)
{
    int64_t v = (int64_t)nk_requantize(acc, mult, shift) + out_zp;
    return v < act_min ? act_min : (v > act_max ? act_max : (int32_t)v);
}

/* The quantized range [lo, hi] of a fused activation on an output with
 * (scale, zp) and storage range [qmin, qmax]: NONE gives [qmin, qmax], RELU
 * [zp, qmax], CLIP the quantized bounds (rounded as nk_quantize_value).
 * NK_EUNSUPPORTED for LEAKY_RELU (not a clamp: use a LUT). */
nk_status nk_quant_act_range(nk_act act, float scale, int32_t zp, int32_t qmin, int32_t qmax, int32_t *lo,
                             int32_t *hi);

/* ---- float <-> int ------------------------------------------------------- */

/* round_half_even(x / scale) + zp saturated to [qmin, qmax] (onnxruntime
 * QuantizeLinear). NaN maps to zp. scale must be > 0. */
int32_t nk_quantize_value(float x, float scale, int32_t zp, int32_t qmin, int32_t qmax);

/* Arrays: NK_EARG when scale is not finite and > 0 or zp is outside the type. */
nk_status nk_quantize_f32_i8(const float *x, int8_t *q, size_t n, float scale, int32_t zp);
nk_status nk_quantize_f32_u8(const float *x, uint8_t *q, size_t n, float scale, int32_t zp);
nk_status nk_quantize_f32_i4(const float *x, uint8_t *packed, size_t n, float scale, int32_t zp);
/* real = (q - zp) * scale, as onnxruntime DequantizeLinear. */
nk_status nk_dequantize_i8_f32(const int8_t *q, float *x, size_t n, float scale, int32_t zp);
nk_status nk_dequantize_u8_f32(const uint8_t *q, float *x, size_t n, float scale, int32_t zp);
nk_status nk_dequantize_i4_f32(const uint8_t *packed, float *x, size_t n, float scale, int32_t zp);

/* ---- int4 packing: two per byte, element 2i in the low nibble ------------ */

/* Bytes holding n packed int4 values. */
static inline size_t nk_int4_bytes(size_t n)
{
    return (n + 1) / 2;
}

/* Element idx of a packed int4 array, sign-extended. */
static inline int8_t nk_int4_get(const uint8_t *p, size_t idx)
{
    unsigned b = p[idx >> 1];
    unsigned v = (idx & 1) ? (b >> 4) : (b & 15u);
    return (int8_t)((int)(v ^ 8u) - 8);
}

/* Packs n values in [-8, 7]; an odd count leaves the last high nibble 0.
 * NK_EARG (dst partly written) when a value is out of range. */
nk_status nk_int4_pack(const int8_t *src, uint8_t *dst, size_t n);
void nk_int4_unpack(const uint8_t *src, int8_t *dst, size_t n);

/* ---- weights and multipliers shared by conv and fully connected ---------- */

typedef enum nk_wformat {
    NK_W_I8 = 0, /* int8, one per byte */
    NK_W_I4 = 1, /* int4, packed over the flat weight index, low nibble first */
} nk_wformat;

/* Per-channel (n == channel count) or per-tensor (n == 1) multipliers. */
typedef struct nk_qmults {
    int32_t n;
    const int32_t *mult;
    const int32_t *shift;
} nk_qmults;

/* ---- conv2d -------------------------------------------------------------- */

/* out[n][oc][y][x] = clamp(requant(bias[oc] + sum (in - in_zp) * w, mult[oc], shift[oc]) + out_zp)
 * with in padded by in_zp (real 0). in int8 [n][c_in][h_in][w_in], w [c_out][c_in/groups][k_h][k_w],
 * bias int32 [c_out] or NULL, out int8 [n][c_out][h_out][w_out]; h_out, w_out must equal ONNX's
 * floor formula. Depthwise is groups == c_in == c_out (any multiplier c_out/groups works). */
typedef struct nk_qconv2d_params {
    int32_t n, c_in, h_in, w_in;
    int32_t c_out, h_out, w_out;
    int32_t k_h, k_w;
    int32_t stride_h, stride_w;
    int32_t dil_h, dil_w;
    int32_t pad_top, pad_left, pad_bottom, pad_right;
    int32_t groups;
    int32_t in_zp, out_zp;    /* in int8 range */
    int32_t act_min, act_max; /* in the int8 range, act_min <= act_max */
    nk_wformat w_format;
    nk_qmults q;              /* n == 1 or n == c_out */
} nk_qconv2d_params;

/* Scratch is always needed: nk_qconv2d_scratch_size bytes, 4-byte aligned
 * (0 for invalid parameters). */
size_t nk_qconv2d_scratch_size(const nk_qconv2d_params *p);
nk_status nk_qconv2d(const nk_qconv2d_params *p, const int8_t *in, const void *w, const int32_t *bias,
                     int8_t *out, void *scratch);

/* ---- fully connected / matmul -------------------------------------------- */

/* out[m][o] = clamp(requant(bias[o] + sum_k (in[m][k] - in_zp) * w[o][k]) + out_zp):
 * in int8 [batch][in_features], w [out_features][in_features] (Gemm transB=1),
 * bias int32 [out_features] or NULL, out int8 [batch][out_features].
 * Scratch: only for int4 weights (unpacked once per call); NULL otherwise. */
typedef struct nk_qfc_params {
    int32_t batch, in_features, out_features;
    int32_t in_zp, out_zp;
    int32_t act_min, act_max;
    nk_wformat w_format;
    nk_qmults q; /* n == 1 or n == out_features */
} nk_qfc_params;

size_t nk_qfc_scratch_size(const nk_qfc_params *p);
nk_status nk_qfc(const nk_qfc_params *p, const int8_t *in, const void *w, const int32_t *bias, int8_t *out,
                 void *scratch);

/* out[b][m][n] = clamp(requant(sum_k (a[b][m][k] - a_zp) * (b[b][k][n] - b_zp)) + out_zp) for two int8
 * activations; a_batch and b_batch are each batch or 1 (broadcast). Scratch (4-byte aligned) holds an
 * int32 row and b - b_zp as int16. */
typedef struct nk_qbmm_params {
    int32_t batch, a_batch, b_batch;
    int32_t m, k, n;
    int32_t a_zp, b_zp, out_zp;
    int32_t act_min, act_max;
    int32_t mult, shift;
} nk_qbmm_params;

size_t nk_qbmm_scratch_size(const nk_qbmm_params *p);
nk_status nk_qbmm(const nk_qbmm_params *p, const int8_t *a, const int8_t *b, int8_t *out, void *scratch);

/* ---- pooling -------------------------------------------------------------- */

/* in int8 [n][c][h_in][w_in] -> out [n][c][h_out][w_out]. h_out may be the
 * floor or the ceil (ceil_mode) size; windows are clipped to the input.
 * The output may have its own scale: (mult, shift) rescales in_scale to
 * out_scale (nk_multiplier_from_scales(in_scale, 1, out_scale); the identity
 * is mult 2^30, shift 1, exact).
 * Max: out = clamp(requant(max - in_zp) + out_zp); padding is ignored.
 * Average: S = sum over the window of (x - in_zp), padding counting as 0;
 *   out = clamp(out_zp + round_half_even(S * M / count)), one rounding of the
 *   exact value (nk_requantize_div). count is the number of input
 *   elements covered, or with count_include_pad the window clipped to the
 *   padded input (as onnxruntime).
 * A window that covers no input element (possible with dilation) gives out_zp. */
typedef struct nk_qpool_params {
    int32_t n, c, h_in, w_in, h_out, w_out;
    int32_t k_h, k_w;
    int32_t stride_h, stride_w;
    int32_t dil_h, dil_w; /* max pool only; average pool needs 1 */
    int32_t pad_top, pad_left, pad_bottom, pad_right;
    int32_t count_include_pad;
    int32_t in_zp, out_zp;
    int32_t mult, shift;
    int32_t act_min, act_max;
} nk_qpool_params;

nk_status nk_qmaxpool(const nk_qpool_params *p, const int8_t *in, int8_t *out);
nk_status nk_qavgpool(const nk_qpool_params *p, const int8_t *in, int8_t *out);
/* Average over h_in * w_in per (n, c), as nk_qavgpool; the window and
 * stride fields are ignored (h_out = w_out = 1). */
nk_status nk_qglobal_avgpool(const nk_qpool_params *p, const int8_t *in, int8_t *out);
/* Does an output size of out fit one pooled axis: the floor size, or the
 * ceil_mode size unless its last window would start in the trailing
 * padding (onnxruntime and PyTorch drop that window)? The pools' own check,
 * for callers that want to say why before calling them. */
int nk_qpool_size_ok(int32_t in, int32_t out, int32_t pad0, int32_t pad1, int32_t k, int32_t dil, int32_t stride);

/* The output code of an average whose sum of (x - in_zp) over count
 * elements is sum, as nk_qavgpool rounds and clamps it (count 0: out_zp):
 * for a sum accumulated elsewhere (the NPU's banded global pool). */
int32_t nk_qavg_code(const nk_qpool_params *p, int32_t sum, int32_t count);

/* ---- elementwise binary with numpy broadcast ----------------------------- */

typedef enum nk_qbin_op { NK_QADD, NK_QSUB, NK_QMUL, NK_QMIN, NK_QMAX } nk_qbin_op;

/* Shapes follow numpy broadcasting (ranks aligned to the right). Every op
 * rounds once, half to even. Per op:
 * ADD/SUB: out = round(((a - a_zp) * Ma +- (b - b_zp) * Mb)) + out_zp with
 *   Mx = x_mult * 2^(x_shift - 31) (= x_scale / out_scale), summed exactly in
 *   int64 on the smaller exponent (|a_shift - b_shift| <= NK_QADD_MAX_DSHIFT);
 *   left_shift, out_mult and out_shift are 0.
 * MUL: out = requant((a - a_zp) * (b - b_zp), out_mult, out_shift) + out_zp.
 * MIN/MAX: x' = requant(x - zp_x, mult_x, shift_x) + out_zp (the input in the
 *   output's scale); out = min/max(a', b').
 * Fill the multipliers with nk_qbinary_prepare. */
enum { NK_QADD_MAX_DSHIFT = 22 }; /* 2^8 * 2^31 * 2^22 per term: the sum stays below 2^62 */
typedef struct nk_qbinary_params {
    nk_qbin_op op;
    nk_shape a_shape, b_shape, out_shape;
    int32_t a_zp, b_zp, out_zp;
    int32_t left_shift;
    int32_t a_mult, a_shift, b_mult, b_shift;
    int32_t out_mult, out_shift;
    int32_t act_min, act_max;
} nk_qbinary_params;

/* Derives the multipliers of p->op from the three scales (in double, then
 * nk_quantize_multiplier). Zero points, shapes and clamps are the caller's. */
nk_status nk_qbinary_prepare(nk_qbinary_params *p, float a_scale, float b_scale, float out_scale);
nk_status nk_qbinary(const nk_qbinary_params *p, const int8_t *a, const int8_t *b, int8_t *out);

/* ---- unary --------------------------------------------------------------- */

/* out = clamp(requant(in - in_zp, mult, shift) + out_zp, act_min, act_max):
 * a change of scale (concat inputs, npu.Requantize). */
typedef struct nk_qrequant_params {
    int32_t in_zp, out_zp;
    int32_t mult, shift;
    int32_t act_min, act_max;
} nk_qrequant_params;

nk_status nk_qrequant(const nk_qrequant_params *p, const int8_t *in, int8_t *out, size_t count);

/* out[i] = lut[in[i] + 128]: the table is indexed by the int8 value offset to 0..255. */
void nk_lut_apply_i8(const int8_t *lut, const int8_t *in, int8_t *out, size_t count);

/* Builds lut[q + 128] = quantize(fn(in_scale * (q - in_zp))) for q in -128..127,
 * quantized with (out_scale, out_zp) by nk_quantize_value. fn runs 256 times,
 * in float; the table, not the function, is what every consumer shares. */
typedef float (*nk_lut_fn)(float x, const void *ctx);
nk_status nk_lut_build_i8(int8_t *lut, nk_lut_fn fn, const void *ctx, float in_scale, int32_t in_zp,
                          float out_scale, int32_t out_zp);

/* Ready-made functions for nk_lut_build_i8 (ctx unused unless noted). */
float nk_lut_sigmoid(float x, const void *ctx);
float nk_lut_tanh(float x, const void *ctx);
float nk_lut_hardswish(float x, const void *ctx);
/* ctx: const float[2] = {alpha, beta}; max(0, min(1, alpha * x + beta)). */
float nk_lut_hardsigmoid(float x, const void *ctx);
/* ctx: const float * alpha. */
float nk_lut_leaky_relu(float x, const void *ctx);
float nk_lut_gelu(float x, const void *ctx);

#endif
