/* views: every Reshape/Flatten/Squeeze/Unsqueeze becomes
 * Reshape(x, <constant of its static output dims>), reading the start of its
 * chain of reshape-like nodes. Memory planning then treats each reshape as
 * one kind of alias of its input, and later stages never resolve 0/-1 or
 * axes again. A shape operand computed at run time is replaced too: shapes
 * are static, so the output dims are already known. */
#include "opt/opt_internal.h"

npu_status opt_views(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    bool any = false;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || !opt_is_reshape_like(n->op) || n->n_inputs < 1 || !n->inputs[0] || n->n_outputs != 1 ||
            !n->outputs[0])
            continue;
        ir_tensor *in = n->inputs[0], *src = in;
        while (src->producer && !src->producer->dead && opt_is_reshape_like(src->producer->op) &&
               src->producer->n_inputs > 0 && src->producer->inputs[0])
            src = src->producer->inputs[0];
        npu_status st = opt_make_static_reshape(g, n, src, &any, err);
        if (st != NPU_OK)
            return st;
        if (src != in)
            opt_drop_unused_views(g, in);
    }
    if (any)
        ir_graph_compact(g);
    *changed = any;
    return NPU_OK;
}
