/* Numerics: the kernel parameters of an IR node, read from its attributes,
 * shapes and tensors' scales. The reference (src/ref), the tiler (NPU
 * instruction fields) and the host-step emitter (runtime records) all call
 * these, so they cannot disagree on a multiplier, a pad or a clamp; the
 * requantization itself is kernels/nk_quant.h's. Below ref, tiler and emit;
 * includes only kernels, ir and common. The names keep the reference's ref_
 * prefix: they are what npuref runs. Errors name what does not fit the
 * kernels; the caller prefixes the node name and op type. */
#ifndef NPU_NUMERICS_H
#define NPU_NUMERICS_H

#include <stdbool.h>
#include <string.h>

#include "ir/ir.h"
#include "kernels/kernels.h"
#include "kernels/nk_quant.h"

/* ---- IR -> kernel vocabulary ------------------------------------------------- */

static inline nk_act ref_nk_act(ir_act a)
{
    nk_act r = {NK_ACT_NONE, a.lo, a.hi, a.alpha};
    switch (a.kind) {
    case IR_ACT_RELU: r.kind = NK_ACT_RELU; break;
    case IR_ACT_CLIP: r.kind = NK_ACT_CLIP; break;
    case IR_ACT_LEAKY_RELU: r.kind = NK_ACT_LEAKY_RELU; break;
    default: break;
    }
    return r;
}

/* The kernels' dtype of an IR dtype; false for the packed int4 types. */
static inline bool ref_nk_dtype(ir_dtype dt, nk_dtype *out)
{
    static const int map[IR_DTYPE_COUNT] = {
        [IR_F32] = NK_DT_F32, [IR_F16] = NK_DT_F16, [IR_I64] = NK_DT_I64, [IR_I32] = NK_DT_I32,
        [IR_I16] = NK_DT_I16, [IR_I8] = NK_DT_I8,   [IR_U8] = NK_DT_U8,   [IR_I4] = -1,
        [IR_U4] = -1,         [IR_BOOL] = NK_DT_BOOL,
    };
    if ((unsigned)dt >= IR_DTYPE_COUNT || map[dt] < 0)
        return false;
    *out = (nk_dtype)map[dt];
    return true;
}

/* An axis attribute in [-rank, rank) made non-negative; -1 when out of range. */
static inline int ref_axis(int64_t axis, int rank)
{
    if (axis < -rank || axis >= rank)
        return -1;
    return (int)(axis < 0 ? axis + rank : axis);
}

/* The int32/int64 values of input i (data in[i]) as int64: at most max of
 * them go to out, *count gets the element count. */
static inline npu_status ref_input_ints(const ir_node *n, int i, const void *data, int64_t *out, int max,
                                        int *count, npu_err *err)
{
    const ir_tensor *t = n->inputs[i];
    int64_t k = ir_tensor_numel(t);
    if (t->dtype != IR_I64 && t->dtype != IR_I32)
        return npu_fail(err, NPU_EUSER, "input %d ('%s') must be int32 or int64, not %s", i, t->name,
                        ir_dtype_name(t->dtype));
    if (k > max)
        return npu_fail(err, NPU_EUSER, "input %d ('%s') has %lld values (at most %d)", i, t->name, (long long)k,
                        max);
    for (int64_t j = 0; j < k; j++)
        out[j] = t->dtype == IR_I64 ? ((const int64_t *)data)[j] : ((const int32_t *)data)[j];
    *count = (int)k;
    return NPU_OK;
}

/* The values of an ints attribute or, when absent, of input i (if present):
 * -1 in *count when neither is given. */
static inline npu_status ref_ints_attr_or_input(const ir_node *n, const char *attr, int i, const void *const *in,
                                                int64_t *out, int max, int *count, npu_err *err)
{
    int k = ir_attr_ints(n, attr, out, max);
    if (k > max)
        return npu_fail(err, NPU_EUSER, "attribute '%s' has %d values (at most %d)", attr, k, max);
    if (k >= 0) {
        *count = k;
        return NPU_OK;
    }
    *count = -1;
    if (i < n->n_inputs && n->inputs[i])
        return ref_input_ints(n, i, in[i], out, max, count, err);
    return NPU_OK;
}

/* ---- float ops (kernels/nk_nn.h, nk_shape.h, nk_elem.h) ---------------------------
 * in[] is the node's input data where a parameter comes from an input
 * (constants when compiled). */

/* The nk_binop of Add, Sub, Mul, Div, Pow, Max, Min, PRelu. */
nk_binop ref_binop(ir_op op);
npu_status ref_conv_params(const ir_node *n, bool transpose, nk_conv_params *p, npu_err *err);
npu_status ref_gemm_params(const ir_node *n, nk_gemm_params *p, npu_err *err);
npu_status ref_matmul_params(const ir_node *n, nk_matmul_params *p, npu_err *err);
npu_status ref_batchnorm_params(const ir_node *n, nk_batchnorm_params *p, npu_err *err);
npu_status ref_pool_params(const ir_node *n, nk_pool_params *p, npu_err *err);
npu_status ref_global_pool_params(const ir_node *n, nk_global_pool_params *p, npu_err *err);
npu_status ref_resize_params(const ir_node *n, const void *const *in, nk_resize_params *p, npu_err *err);
/* Shapes and attributes only, scales left 0 (out / in): enough for a scratch size. */
npu_status ref_resize_shape_params(const ir_node *n, nk_resize_params *p, npu_err *err);
npu_status ref_slice_params(const ir_node *n, const void *const *in, const ir_tensor *x, nk_slice_params *p,
                            npu_err *err);
/* p->value is left unset: *value holds the constant (es bytes). */
npu_status ref_pad_params(const ir_node *n, const void *const *in, size_t es, nk_pad_params *p, uint64_t *value,
                          npu_err *err);

/* ---- quantized ops (kernels/nk_quant.h, nk_norm.h) ----------------------------------- */

/* The codes an int8 activation may hold: -128..127, or -8..7 for int4
 * activations (IR_TENSOR_INT4_CODES: int4 codes held one per byte). */
void ref_act_code_range(const ir_tensor *t, int32_t *qmin, int32_t *qmax);
/* An int16 activation (A16W8, kernels/nk_q16.h): the node runs the _a16 kernels. */
bool ref_is_a16(const ir_tensor *t);

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
