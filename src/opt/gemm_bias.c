/* gemm_bias: a Gemm whose constant C is not one value per output column,
 * which the quantizer cannot fold into the int32 bias (q_classify), so the
 * Gemm stayed float (and the partition sent it to the NPU, which takes only
 * quantized ones). One value for the whole output ([], [1], [1, 1])
 * becomes beta * C per column ([N], beta 1); a C that varies by row ([M, 1],
 * [M, N] with M > 1) becomes an Add of beta * C after the Gemm, which the
 * quantizer takes as a binary op with a constant operand. The same bits in
 * float: the kernel computes beta * C + alpha * A B, the Add alpha * A B +
 * beta * C (one rounding of beta * C, one of the sum, either way). */
#include "opt/opt_internal.h"

/* The Gemm's output columns, or 0 when it is not one this pass rewrites. */
static int64_t gemm_columns(const ir_node *n)
{
    const ir_tensor *a = n->inputs[0], *b = n->n_inputs > 1 ? n->inputs[1] : NULL,
                    *c = n->n_inputs > 2 ? n->inputs[2] : NULL, *y = n->n_outputs ? n->outputs[0] : NULL;
    if (!a || !b || !c || !y || !opt_is_const(c) || c->dtype != IR_F32 || !y->shape_known || y->rank != 2 ||
        y->dtype != IR_F32 || c->rank > 2)
        return 0;
    int64_t cols = y->dims[1];
    return ir_tensor_numel(c) == cols ? 0 : cols;
}

static npu_status rewrite(ir_graph *g, ir_node *n, int64_t cols, npu_err *err)
{
    ir_tensor *c = n->inputs[2], *y = n->outputs[0];
    float beta = ir_attr_float(n, "beta", 1.0f);
    const float *cv = c->data;
    if (ir_tensor_numel(c) == 1) { /* one value: beta * C in every column */
        ir_tensor *row = opt_const_new(g, n->name, "bias", IR_F32, 1, &cols, NULL);
        if (!row || !ir_set_float(g, n, "beta", 1.0f))
            return npu_fail(err, NPU_EINTERNAL, "gemm_bias: node '%s': out of memory", n->name);
        for (int64_t j = 0; j < cols; j++)
            ((float *)row->data)[j] = beta * cv[0];
        n->inputs[2] = row;
        return NPU_OK;
    }
    /* varies by row: the Gemm without C, then Add(Y, beta * C) */
    ir_tensor *cb = opt_const_new(g, n->name, "addend", IR_F32, c->rank, c->dims, NULL);
    ir_tensor *prod = cb ? ir_tensor_new(g, NULL, IR_F32, 2, y->dims) : NULL;
    if (!prod)
        return npu_fail(err, NPU_EINTERNAL, "gemm_bias: node '%s': out of memory", n->name);
    for (int64_t i = 0; i < ir_tensor_numel(c); i++)
        ((float *)cb->data)[i] = beta * cv[i];
    prod->shape_known = true;
    ir_tensor *in[2] = {prod, cb};
    ir_node *add = ir_node_new(g, IR_OP_ADD, n->name, 2, in, 1, &y);
    if (!add)
        return npu_fail(err, NPU_EINTERNAL, "gemm_bias: node '%s': out of memory", n->name);
    add->act = n->act; /* a fused activation follows the sum */
    n->act = (ir_act){IR_ACT_NONE, 0, 0, 0};
    n->n_inputs = 2;
    n->outputs[0] = prod; /* ir_node_new made the Add y's producer */
    prod->producer = n;
    return NPU_OK;
}

npu_status opt_gemm_bias(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    bool any = false;
    int count = g->n_nodes; /* the new Adds are appended: not revisited */
    for (int i = 0; i < count; i++) {
        ir_node *n = g->nodes[i];
        int64_t cols = n->dead || n->op != IR_OP_GEMM ? 0 : gemm_columns(n);
        if (!cols)
            continue;
        npu_status st = rewrite(g, n, cols, err);
        if (st != NPU_OK)
            return st;
        any = true;
    }
    *changed = any;
    if (!any)
        return NPU_OK;
    ir_graph_compact(g);
    return ir_graph_toposort(g, err);
}
