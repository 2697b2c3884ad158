/* Internal to src/ref/: small helpers shared by the op adapters
 * (ops_*.c). Messages need not name the node: run_node adds it. */
#ifndef NPU_REF_INTERNAL_H
#define NPU_REF_INTERNAL_H

#include <string.h>

#include "kernels/kernels.h"
#include "ref/ref.h"

/* The kernel shape of a tensor (dims must fit int32). */
static inline npu_status ref_shape(const ir_tensor *t, nk_shape *s, npu_err *err)
{
    if (t->rank < 0 || t->rank > NK_MAX_RANK)
        return npu_fail(err, NPU_EUSER, "tensor '%s' has rank %d (at most %d)", t->name, t->rank, NK_MAX_RANK);
    s->rank = t->rank;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0 || t->dims[i] > INT32_MAX)
            return npu_fail(err, NPU_EUSER, "tensor '%s': dimension %d is %lld (0..%d supported)", t->name, i,
                            (long long)t->dims[i], INT32_MAX);
        s->dims[i] = (int32_t)t->dims[i];
    }
    return NPU_OK;
}

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

/* A fused activation on a float output that the kernel did not apply itself. */
static inline void ref_apply_act(const ir_node *n, float *y, int64_t count)
{
    nk_act a = ref_nk_act(n->act);
    if (a.kind != NK_ACT_NONE)
        for (int64_t i = 0; i < count; i++)
            y[i] = nk_act_apply(a, y[i]);
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

/* Bytes of one element; 0 for the packed int4 types. */
static inline size_t ref_elem_size(const ir_tensor *t)
{
    int bits = ir_dtype_bits(t->dtype);
    return bits % 8 ? 0 : (size_t)bits / 8;
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

#endif
