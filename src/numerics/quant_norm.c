/* The kernel parameters of the quantizer's row-wise ops, npu.Softmax and
 * npu.LayerNorm (over the last axis, kernels/nk_norm.h), and of an integer
 * ReduceMean as the average pool it is. */
#include <string.h>

#include "kernels/kernels.h"
#include "numerics/numerics.h"

/* Rows of the last axis of an int8 x with y of its shape; the table input's
 * dtype and element count. */
static npu_status row_setup(const ir_node *n, int64_t table_elems, int32_t *rows, int32_t *len, int32_t *out_zp,
                            int32_t *lo, int32_t *hi, npu_err *err)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0], *t = n->n_inputs > 1 ? n->inputs[1] : NULL;
    if (x->dtype != IR_I8 || y->dtype != IR_I8 || !x->quant || !y->quant || y->quant->count != 1 ||
        !ir_shape_equal(x, y) || x->rank < 1)
        return npu_fail(err, NPU_EUSER, "needs per-tensor quantized int8 input and output of one shape");
    int64_t l = x->dims[x->rank - 1], r = l ? ir_tensor_numel(x) / l : 0;
    if (l < 1 || l > NK_QROW_MAX_LEN || r > INT32_MAX)
        return npu_fail(err, NPU_EUSER, "rows of %lld elements (1..%d supported)", (long long)l, NK_QROW_MAX_LEN);
    if (!t || !t->data || t->dtype != IR_I32 || ir_tensor_numel(t) != table_elems)
        return npu_fail(err, NPU_EUSER, "needs a constant int32 table of %lld entries", (long long)table_elems);
    *rows = (int32_t)r, *len = (int32_t)l, *out_zp = y->quant->zero_point[0];
    ref_act_code_range(y, lo, hi);
    return NPU_OK;
}

npu_status ref_qsoftmax_params(const ir_node *n, nk_qsoftmax_params *p, npu_err *err)
{
    npu_status st = row_setup(n, 256, &p->rows, &p->len, &p->out_zp, &p->act_min, &p->act_max, err);
    int shift = 0;
    if (st == NPU_OK && nk_quantize_multiplier(1.0 / n->outputs[0]->quant->scale[0], &p->mult, &shift) != NK_OK)
        return npu_fail(err, NPU_EUSER, "output scale %g: 1/scale is no multiplier", n->outputs[0]->quant->scale[0]);
    p->shift = shift;
    return st;
}

npu_status ref_qlayernorm_params(const ir_node *n, nk_qlayernorm_params *p, npu_err *err)
{
    const ir_tensor *x = n->inputs[0];
    npu_status st = row_setup(n, 3 * (x->rank ? x->dims[x->rank - 1] : 0), &p->rows, &p->len, &p->out_zp,
                              &p->act_min, &p->act_max, err);
    p->eps = ir_attr_int(n, "eps_q", 0);
    if (st == NPU_OK && (p->eps < 0 || p->eps > INT32_MAX))
        return npu_fail(err, NPU_EUSER, "eps_q %lld outside 0..2^31-1", (long long)p->eps);
    return st;
}

bool ref_reduce_mean_window(const ir_node *n, int64_t win[5])
{
    const ir_tensor *x = n->n_inputs == 1 ? n->inputs[0] : NULL;
    int64_t axes[IR_MAX_RANK];
    int k = x ? ir_attr_ints(n, "axes", axes, IR_MAX_RANK) : -1;
    if (k < 1 || k > x->rank || ir_tensor_numel(x) < 1)
        return false;
    for (int i = 0; i < k; i++)
        if (axes[i] != axes[0] + i || axes[i] < 0 || axes[i] >= x->rank)
            return false; /* one run of consecutive axes (infer_reduce sorts them) */
    int64_t outer = 1, r = 1, inner = 1, last = x->dims[axes[k - 1]];
    for (int d = 0; d < x->rank; d++)
        *(d < axes[0] ? &outer : d <= axes[k - 1] ? &r : &inner) *= x->dims[d];
    /* C x H x W, window kh x kw: the run's last axis across W when nothing follows it */
    int64_t v[5] = {outer, inner == 1 ? r / last : r, inner == 1 ? last : inner, inner == 1 ? r / last : r,
                    inner == 1 ? last : 1};
    for (int i = 0; i < 5; i++)
        if (v[i] > INT32_MAX)
            return false;
    memcpy(win, v, sizeof v);
    return true;
}

npu_status ref_qreduce_mean_params(const ir_node *n, nk_qpool_params *p, npu_err *err)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int64_t w[5];
    memset(p, 0, sizeof *p);
    if (!ref_reduce_mean_window(n, w) || ir_tensor_numel(y) * w[3] * w[4] != ir_tensor_numel(x))
        return npu_fail(err, NPU_EUSER, "an integer ReduceMean reduces one run of consecutive axes");
    if (x->dtype != IR_I8 || y->dtype != IR_I8 || !x->quant || !y->quant || x->quant->count != 1 ||
        y->quant->count != 1)
        return npu_fail(err, NPU_EUSER, "needs per-tensor quantized int8 input and output");
    int shift;
    if (nk_multiplier_from_scales(x->quant->scale[0], 1.0f, y->quant->scale[0], &p->mult, &shift) != NK_OK)
        return npu_fail(err, NPU_EUSER, "scales %g / %g give no valid multiplier", x->quant->scale[0],
                        y->quant->scale[0]);
    *p = (nk_qpool_params){.n = 1, .c = (int32_t)w[0], .h_in = (int32_t)w[1], .w_in = (int32_t)w[2], .h_out = 1,
                           .w_out = (int32_t)(w[2] - w[4] + 1), .k_h = (int32_t)w[3], .k_w = (int32_t)w[4],
                           .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1, .in_zp = x->quant->zero_point[0],
                           .out_zp = y->quant->zero_point[0], .mult = p->mult, .shift = shift};
    ref_act_code_range(y, &p->act_min, &p->act_max);
    return NPU_OK;
}
