/* A16W8 integer kernels: int16 activations with int8 (or packed int4)
 * weights, TFLite's 16x8 scheme (docs/numerics.md, "A16W8").
 *
 * - Activations are int16, symmetric: zero point 0 (the kernels take the
 *   zero points of the int8 parameter structs and require 0), codes
 *   -32768..32767, act_min/act_max in that range.
 * - Sums run in int64 and are rescaled by nk_requantize64: the same one
 *   half-to-even rounding of the exact value as the int8 kernels (the
 *   multipliers are the same nk_multiplier_from_scales ones; no reduced
 *   16-bit multiplier as TFLite's reference uses).
 * - Bias stays int32 at in_scale * w_scale (the quantizer saturates it).
 * - LUT activations use TFLite's 513-entry int16 table with linear
 *   interpolation between entries (nk_lut_apply_i16).
 * The parameter structs are the int8 kernels' own (kernels/nk_quant.h), so
 * src/numerics fills both. */
#ifndef NK_Q16_H
#define NK_Q16_H

#include "kernels/nk_quant.h"

/* Conv (any groups) as nk_qconv2d, int16 in/out. No scratch. */
nk_status nk_qconv2d_a16(const nk_qconv2d_params *p, const int16_t *in, const void *w, const int32_t *bias,
                         int16_t *out);
/* Fully connected as nk_qfc ([N, K] weights), int16 in/out. No scratch. */
nk_status nk_qfc_a16(const nk_qfc_params *p, const int16_t *in, const void *w, const int32_t *bias, int16_t *out);
/* Pools as nk_qmaxpool / nk_qavgpool / nk_qglobal_avgpool; average windows
 * of at most 65535 elements (the int32 sum of int16 codes). */
nk_status nk_qmaxpool_a16(const nk_qpool_params *p, const int16_t *in, int16_t *out);
nk_status nk_qavgpool_a16(const nk_qpool_params *p, const int16_t *in, int16_t *out);
nk_status nk_qglobal_avgpool_a16(const nk_qpool_params *p, const int16_t *in, int16_t *out);

/* Add/sub with int16 inputs: each term |x| * 2^31 * 2^d must stay below 2^61,
 * so the exponents lie within NK_QADD16_MAX_DSHIFT (the smaller multiplier
 * weighs < 2^-14 of the larger one beyond that and is rounded to it). */
enum { NK_QADD16_MAX_DSHIFT = 14 };
nk_status nk_qbinary_prepare_a16(nk_qbinary_params *p, float a_scale, float b_scale, float out_scale);
/* nk_qbinary with int16 operands and output (numpy broadcast). */
nk_status nk_qbinary_a16(const nk_qbinary_params *p, const int16_t *a, const int16_t *b, int16_t *out);

/* nk_qrequant between element widths: in_bytes, out_bytes 1 (int8) or 2
 * (int16); the zero point and clamp of each side within its type. The
 * boundary between layers of 8- and 16-bit activations. */
nk_status nk_qrequant_x(const nk_qrequant_params *p, const void *in, int in_bytes, void *out, int out_bytes,
                        size_t count);

/* The 513-entry int16 LUT: x = 128 i + f (i = x >> 7, f in 0..127),
 * out = lut[i + 256] + round_half_even((lut[i + 257] - lut[i + 256]) f / 128). */
enum { NK_LUT16_SIZE = 513 };
void nk_lut_apply_i16(const int16_t *lut, const int16_t *in, int16_t *out, size_t count);
/* The table from fv[2j] = f(in_scale * 128 (j - 256)) and its midpoints
 * fv[2j + 1] = f(in_scale * 128 (j - 256 + 1/2)) (2 * 513 - 1 values): each
 * entry quantized on out_scale (zero point 0) less half the interpolation's
 * error at the midpoint after it (TFLite's gen_lut), so the line between two
 * entries errs equally at its ends and its middle. */
nk_status nk_lut_build_i16(int16_t *lut, const float *fv, float out_scale);

/* float <-> int16 (zero point in int16), as nk_quantize_f32_i8 / nk_dequantize_i8_f32. */
nk_status nk_quantize_f32_i16(const float *x, int16_t *q, size_t n, float scale, int32_t zp);
nk_status nk_dequantize_i16_f32(const int16_t *q, float *x, size_t n, float scale, int32_t zp);

#endif
