/* elide_identity: nodes that pass their input through unchanged go away.
 * Identity; Dropout at inference (its mask unused, training_mode absent or
 * false); a Reshape/Flatten/Squeeze/Unsqueeze whose output shape equals its
 * input shape. A Reshape reading another reshape-like node reads that node's
 * input instead (with an explicit shape), so chains collapse to one. */
#include "opt/opt_internal.h"

static bool dropout_is_identity(const ir_graph *g, const ir_node *n)
{
    if (n->n_outputs > 1 && n->outputs[1] && ir_use_count(g, n->outputs[1]) > 0)
        return false;
    if (n->n_inputs > 2 && n->inputs[2]) {
        const ir_tensor *tm = n->inputs[2];
        if (!opt_is_const(tm) || tm->dtype != IR_BOOL || ir_tensor_numel(tm) != 1 || *(const uint8_t *)tm->data)
            return false;
    }
    return true;
}

npu_status opt_elide_identity(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    bool any = false;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || n->n_inputs < 1 || n->n_outputs < 1 || !n->inputs[0] || !n->outputs[0])
            continue;
        ir_tensor *in = n->inputs[0], *out = n->outputs[0];
        bool pass_through = n->op == IR_OP_IDENTITY || (n->op == IR_OP_DROPOUT && dropout_is_identity(g, n)) ||
                            (opt_is_reshape_like(n->op) && in->shape_known && out->shape_known &&
                             ir_shape_equal(in, out));
        if (pass_through && opt_bypass(g, n, in, out)) {
            any = true;
            continue;
        }
        if (n->op != IR_OP_RESHAPE)
            continue;
        ir_tensor *src = in;
        while (src->producer && !src->producer->dead && opt_is_reshape_like(src->producer->op) &&
               src->producer->n_inputs > 0 && src->producer->inputs[0])
            src = src->producer->inputs[0];
        if (src != in) {
            npu_status st = opt_make_static_reshape(g, n, src, &any, err);
            if (st != NPU_OK)
                return st;
            opt_drop_unused_views(g, in);
        }
    }
    if (any)
        ir_graph_compact(g);
    *changed = any;
    return NPU_OK;
}
