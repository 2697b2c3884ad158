/* The kernel parameters of a quantized node, derived from its tensors'
 * scales exactly as the reference executor derives them. The tiler (NPU
 * instruction fields), the host-step emitter (runtime records) and the
 * reference all call these, so the three cannot disagree on a multiplier,
 * a pad or a clamp. Errors name what does not fit the integer kernels. */
#ifndef NPU_REF_QPARAMS_H
#define NPU_REF_QPARAMS_H

#include <stdbool.h>

#include "ir/ir.h"
#include "kernels/nk_quant.h"

/* The codes an int8 activation may hold: -128..127, or -8..7 for int4
 * activations (IR_TENSOR_INT4_CODES: int4 codes held one per byte). */
void ref_act_code_range(const ir_tensor *t, int32_t *qmin, int32_t *qmax);

/* Geometry, zero points and clamp of a quantized Conv; p->q is the per-tensor
 * identity (fill real multipliers with ref_qmults). */
npu_status ref_qconv_params(const ir_node *n, nk_qconv2d_params *p, npu_err *err);
/* Per-channel multipliers x_scale * w_scale[c] / y_scale for the
 * w->quant->count channels. */
npu_status ref_qmults(const ir_tensor *x, const ir_tensor *w, const ir_tensor *y, int32_t *mult, int32_t *shift,
                      npu_err *err);

/* Gemm / MatMul by constant weights, input flattened to [M, K]. */
typedef struct ref_qfc_setup {
    nk_qfc_params p;  /* q: identity, as for conv */
    bool transpose;   /* weights stored [K, N] (MatMul, Gemm transB=0) */
} ref_qfc_setup;
npu_status ref_qfc_params(const ir_node *n, ref_qfc_setup *f, npu_err *err);
/* MatMul of two activations. */
bool ref_q_is_bmm(const ir_node *n);
npu_status ref_qbmm_params(const ir_node *n, nk_qbmm_params *p, npu_err *err);

/* Max/average/global pools, with the output rescale. */
npu_status ref_qpool_params(const ir_node *n, nk_qpool_params *p, npu_err *err);
/* Add/Sub/Mul/Min/Max, multipliers prepared. */
npu_status ref_qbinary_params(const ir_node *n, nk_qbinary_params *p, npu_err *err);
/* Requantize from x's parameters to y's, with n's fused clamp. */
npu_status ref_qrequant_params(const ir_node *n, const ir_tensor *x, const ir_tensor *y, nk_qrequant_params *p,
                               npu_err *err);
/* Whether that requantization is the identity (a Concat input copied as is):
 * equal parameters, no clamp inside y's code range, the same code range. */
bool ref_qrequant_is_copy(const ir_tensor *x, const ir_tensor *y, const nk_qrequant_params *p);

/* npu.Softmax (x, int32[256] exp table) and npu.LayerNorm (x, int32[len][3]
 * column table, attribute eps_q): rows over the last axis (kernels/nk_norm.h). */
struct nk_qsoftmax_params;
struct nk_qlayernorm_params;
npu_status ref_qsoftmax_params(const ir_node *n, struct nk_qsoftmax_params *p, npu_err *err);
npu_status ref_qlayernorm_params(const ir_node *n, struct nk_qlayernorm_params *p, npu_err *err);
/* ReduceMean over one run of consecutive axes as an average pool of a
 * C x H x W view with a kh x kw window: win = {C, H, W, kh, kw}; false for
 * other axes. ref_qreduce_mean_params: that pool's kernel parameters. */
bool ref_reduce_mean_window(const ir_node *n, int64_t win[5]);
npu_status ref_qreduce_mean_params(const ir_node *n, nk_qpool_params *p, npu_err *err);

#endif
