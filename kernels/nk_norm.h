/* Transformer-block kernels: GELU, LayerNormalization (float), and the
 * integer row-wise Softmax and LayerNorm that the NPU's vector unit runs
 * (docs/numerics.md, "Softmax and LayerNorm in integers"). The integer
 * kernels are the one definition: the reference executor, the simulator's
 * softmax/layernorm instructions and the quantizer's parameters all come
 * from here, which keeps npusim bit-exact with npuref. */
#ifndef NK_NORM_H
#define NK_NORM_H

#include "kernels/nk_common.h"

/* ---- float ---------------------------------------------------------------- */

/* y = x * 0.5 * (1 + erf(x / sqrt 2)), or with tanh_form
 * y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) (ONNX Gelu, approximate="tanh"). */
void nk_gelu_f32(const float *x, float *y, int64_t n, int tanh_form);
float nk_gelu_tanh(float x);

/* ONNX LayerNormalization over [outer, len]: each row of len elements is
 * normalized, y = (x - mean) / sqrt(var + eps) * scale + bias, scale and bias
 * of len elements (or 1, broadcast; bias may be NULL). mean and inv_std
 * (outer each) may be NULL. Sums in double. */
typedef struct nk_layernorm_params {
    int64_t outer, len;
    int64_t scale_len, bias_len; /* len or 1 */
    float eps;
} nk_layernorm_params;
nk_status nk_layernorm_f32(const nk_layernorm_params *p, const float *x, const float *scale, const float *bias,
                           float *y, float *mean, float *inv_std);

/* ---- integer, row-wise ---------------------------------------------------- */

/* Softmax of rows of len int8 codes (any zero point: it cancels).
 * table[d] = round(2^15 * exp(-in_scale * d)) for d = max - x in 0..255
 * (nk_qsoftmax_table); per row S = sum table[max - x_j] (int32: len <= 65535),
 * out_j = clamp(out_zp + round_half_even(table[max - x_j] * M / S)) with
 * M = mult * 2^(shift - 31) = 1 / out_scale: one rounding of the exact
 * value (nk_requantize_div). */
enum { NK_QSOFTMAX_ONE = 1 << 15, NK_QROW_MAX_LEN = 65535 };
typedef struct nk_qsoftmax_params {
    int32_t rows, len;
    int32_t mult, shift; /* 1 / out_scale (nk_quantize_multiplier) */
    int32_t out_zp, act_min, act_max;
} nk_qsoftmax_params;
nk_status nk_qsoftmax_table(float in_scale, int32_t table[256]);
nk_status nk_qsoftmax(const nk_qsoftmax_params *p, const int32_t *table, const int8_t *in, int8_t *out);

/* LayerNorm of rows of N = len int8 codes (the zero point cancels), all
 * exact integers: S = sum x, Q = sum x^2, V = N*Q - S^2 (N^2 times the
 * variance in codes^2), D = V + eps with eps = round(N^2 * epsilon /
 * in_scale^2) (nk_qlayernorm_eps, at most 2^31 - 1);
 * R = floor(sqrt(floor(2^62 / D))) (0 when D = 0), an rsqrt in Q31;
 * Z_j = round_half_even((N*x_j - S) * R / 2^19), the normalized value in Q12;
 * out_j = clamp(out_zp + round_half_even((Z_j * mult_j + bias_j) / 2^shift_j))
 * with cols[3j..3j+2] = {bias_j, mult_j, shift_j} from nk_qlayernorm_cols:
 * mult_j ~ gamma_j / out_scale * 2^(shift_j - 12), bias_j ~ beta_j / out_scale * 2^shift_j. */
typedef struct nk_qlayernorm_params {
    int32_t rows, len;
    int64_t eps;
    int32_t out_zp, act_min, act_max;
} nk_qlayernorm_params;
int64_t nk_qlayernorm_eps(float epsilon, float in_scale, int32_t len);
/* gamma, beta: len floats each (beta may be NULL: 0); shift_j the largest in
 * [1, 62] that keeps |mult_j| and |bias_j| below 2^30. NK_EARG when out_scale
 * is not positive or a value is not finite. */
nk_status nk_qlayernorm_cols(const float *gamma, const float *beta, int32_t len, float out_scale, int32_t *cols);
nk_status nk_qlayernorm(const nk_qlayernorm_params *p, const int32_t *cols, const int8_t *in, int8_t *out);

/* floor(sqrt(v)), exact. */
uint64_t nk_isqrt_u64(uint64_t v);

#endif
