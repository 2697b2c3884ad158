/* Softmax and LayerNormalization over the last axis become the row-wise
 * integer ops npu.Softmax and npu.LayerNorm (kernels/nk_norm.h): the
 * quantizer computes their constant tables once from the scales, and the
 * reference, the tiler and the simulator read the same tables. */
#include <string.h>

#include "kernels/kernels.h"
#include "quantize/quantize_internal.h"

static bool last_axis(const ir_node *n, const ir_tensor *x)
{
    int64_t a = ir_attr_int(n, "axis", -1);
    return x->rank >= 1 && (a == -1 || a == x->rank - 1);
}

bool q_rownorm_ok(const ir_node *n)
{
    const ir_tensor *x = n->n_inputs ? n->inputs[0] : NULL;
    if (!x || !x->shape_known || !last_axis(n, x) || n->n_outputs < 1 || x->dims[x->rank - 1] < 1 ||
        x->dims[x->rank - 1] > NK_QROW_MAX_LEN)
        return false;
    if (n->op == IR_OP_SOFTMAX)
        return ir_attr_int(n, "_flatten_axis", 0) == 0;
    for (int i = 1; i < n->n_outputs; i++) /* Mean, InvStdDev: float only */
        if (n->outputs[i])
            return false;
    int64_t D = x->dims[x->rank - 1];
    for (int i = 1; i < 3; i++) {
        const ir_tensor *t = i < n->n_inputs ? n->inputs[i] : NULL;
        if (i == 1 && !t)
            return false; /* Scale is required */
        if (t && (!t->data || t->dtype != IR_F32 || (ir_tensor_numel(t) != D && ir_tensor_numel(t) != 1)))
            return false;
    }
    return true;
}

static npu_status oom(q_ctx *c)
{
    return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
}

/* inputs := {x, table}, no attributes, the npu op */
static npu_status set_table(q_ctx *c, ir_node *n, ir_op op, ir_tensor *table)
{
    ir_tensor **in = npu_arena_alloc(c->g->arena, 2 * sizeof *in);
    if (!table || !in)
        return oom(c);
    in[0] = n->inputs[0];
    in[1] = table;
    n->inputs = in;
    n->n_inputs = 2;
    n->n_outputs = 1;
    n->op = op;
    n->attrs = NULL;
    n->n_attrs = 0;
    return NPU_OK;
}

/* A per-column float of t (D elements or one) as D floats in scratch. */
static const float *per_column(q_ctx *c, const ir_tensor *t, int64_t D)
{
    if (!t || ir_tensor_numel(t) == D)
        return t ? t->data : NULL;
    float *v = npu_arena_alloc(c->g->arena, sizeof(float) * (size_t)D);
    for (int64_t j = 0; v && j < D; j++)
        v[j] = *(const float *)t->data;
    return v;
}

npu_status q_rownorm(q_ctx *c, ir_node *n, const ir_tensor *y)
{
    const ir_tensor *x = n->inputs[0];
    float xs = x->quant->scale[0], ys = n->outputs[0]->quant->scale[0];
    int64_t D = x->dims[x->rank - 1];
    if (n->op == IR_OP_SOFTMAX) {
        int32_t table[256];
        if (nk_qsoftmax_table(xs, table) != NK_OK)
            return npu_fail(c->err, NPU_EUSER, "node '%s' (Softmax): input scale %g has no exp table", n->name, xs);
        int64_t d = 256;
        return set_table(c, n, IR_OP_QSOFTMAX, ir_const_new(c->g, NULL, IR_I32, 1, &d, table));
    }
    const float *gamma = per_column(c, n->inputs[1], D);
    const float *beta = n->n_inputs > 2 ? per_column(c, n->inputs[2], D) : NULL;
    int64_t dims[2] = {D, 3};
    ir_tensor *cols = ir_const_new(c->g, NULL, IR_I32, 2, dims, NULL);
    if (!gamma || (n->n_inputs > 2 && n->inputs[2] && !beta) || !cols)
        return oom(c);
    if (nk_qlayernorm_cols(gamma, beta, (int32_t)D, ys, cols->data) != NK_OK)
        return npu_fail(c->err, NPU_EUSER, "node '%s' (LayerNormalization): scale or bias beyond 2^30 steps of "
                        "the output '%s' (scale %g)", n->name, y->name, ys);
    int64_t eps = nk_qlayernorm_eps(ir_attr_float(n, "epsilon", 1e-5f), xs, (int32_t)D);
    npu_status st = set_table(c, n, IR_OP_QLAYER_NORM, cols);
    if (st == NPU_OK && !ir_set_int(c->g, n, "eps_q", eps))
        return oom(c);
    return st;
}
