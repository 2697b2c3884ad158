/* fuse_hswish: Mul(x, HardSigmoid(x)) with HardSwish's constants (alpha
 * 1/6, beta 0.5), as PyTorch exports nn.Hardswish before opset 14, becomes
 * one HardSwish(x). Quantized, the pair is a table, an int8 tensor of the
 * gate and an int8 multiply, three roundings; HardSwish is one table on x.
 * Measured on the squeeze-excite / hardswish Fashion-MNIST model
 * (docs/numerics.md, "int4 that holds"). */
#include <math.h>

#include "opt/opt_internal.h"

/* The HardSigmoid producing t, reading x, with HardSwish's constants and
 * only this reader, or NULL. */
static ir_node *hswish_gate(const ir_graph *g, const ir_tensor *t, const ir_tensor *x, const ir_node *mul)
{
    ir_node *p = t->producer;
    if (!p || p->dead || p->op != IR_OP_HARD_SIGMOID || p->n_inputs != 1 || p->inputs[0] != x ||
        p->act.kind != IR_ACT_NONE || opt_single_user(g, t) != mul)
        return NULL;
    float alpha = ir_attr_float(p, "alpha", 0.2f), beta = ir_attr_float(p, "beta", 0.5f);
    return fabsf(alpha - 1.0f / 6.0f) < 1e-6f && fabsf(beta - 0.5f) < 1e-6f ? p : NULL;
}

npu_status opt_fuse_hswish(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    bool any = false;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || n->op != IR_OP_MUL || n->n_inputs != 2 || n->act.kind != IR_ACT_NONE)
            continue;
        for (int k = 0; k < 2; k++) {
            ir_tensor *x = n->inputs[k];
            ir_node *gate = hswish_gate(g, n->inputs[1 - k], x, n);
            if (!gate || x->dtype != IR_F32 || ir_tensor_numel(x) != ir_tensor_numel(n->outputs[0]))
                continue;
            if (!opt_set_inputs(g, n, 1, &x))
                return npu_fail(err, NPU_EINTERNAL, "fuse_hswish: node '%s': out of memory", n->name);
            n->op = IR_OP_HARD_SWISH;
            n->attrs = NULL, n->n_attrs = 0;
            gate->dead = true;
            any = true;
            break;
        }
    }
    if (any)
        ir_graph_compact(g);
    *changed = any;
    return NPU_OK;
}
