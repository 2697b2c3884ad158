/* Internal to src/ref/: small helpers shared by the op adapters
 * (ops_*.c). Messages need not name the node: run_node adds it. */
#ifndef NPU_REF_INTERNAL_H
#define NPU_REF_INTERNAL_H

#include <string.h>

#include "kernels/kernels.h"
#include "numerics/numerics.h"
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

/* A fused activation on a float output that the kernel did not apply itself. */
static inline void ref_apply_act(const ir_node *n, float *y, int64_t count)
{
    nk_act a = ref_nk_act(n->act);
    if (a.kind != NK_ACT_NONE)
        for (int64_t i = 0; i < count; i++)
            y[i] = nk_act_apply(a, y[i]);
}

/* Bytes of one element; 0 for the packed int4 types. */
static inline size_t ref_elem_size(const ir_tensor *t)
{
    int bits = ir_dtype_bits(t->dtype);
    return bits % 8 ? 0 : (size_t)bits / 8;
}

#endif
