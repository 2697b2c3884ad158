/* fuse_act: Relu, Clip (constant bounds; Relu6 is Clip 0..6) and LeakyRelu
 * fused into the node producing their input, as its ir_act, when that output
 * has no other reader. Producers: the ops whose reference adapters apply
 * n->act on their float result (and whose NPU forms do the same in the
 * requantize step): Conv, ConvTranspose, Gemm, BatchNormalization, Add.
 * MatMul is not one yet (its adapter ignores n->act); PyTorch's Linear
 * exports Gemm, or MatMul then Add, where the Add takes the activation.
 * Stacked activations compose (Relu then Clip 0..6 is Clip 0..6); a pair
 * with no single ir_act equivalent (LeakyRelu after Clip -1..1) stays. */
#include "opt/opt_internal.h"

#include <math.h>

static bool carries_act(ir_op op)
{
    switch (op) {
    case IR_OP_CONV:
    case IR_OP_CONV_TRANSPOSE:
    case IR_OP_GEMM:
    case IR_OP_BATCH_NORM:
    case IR_OP_ADD: return true;
    default: return false;
    }
}

/* The activation node n as an ir_act (Relu as Clip 0..inf for composing). */
static bool act_of(const ir_node *n, ir_act *a)
{
    switch (n->op) {
    case IR_OP_RELU: *a = (ir_act){IR_ACT_CLIP, 0.0f, INFINITY, 0.0f}; return n->n_inputs == 1;
    case IR_OP_LEAKY_RELU:
        *a = (ir_act){IR_ACT_LEAKY_RELU, 0.0f, 0.0f, ir_attr_float(n, "alpha", 0.01f)};
        return n->n_inputs == 1;
    case IR_OP_CLIP: {
        /* an input (opset 11+; constant here) wins over the attribute (opset
         * < 11, or mirrored from a constant input by shape inference) */
        float lo = ir_attr_float(n, "min", -INFINITY), hi = ir_attr_float(n, "max", INFINITY);
        if (n->n_inputs > 3)
            return false;
        if (n->n_inputs > 1 && n->inputs[1] && !opt_const_scalar(n->inputs[1], &lo))
            return false;
        if (n->n_inputs > 2 && n->inputs[2] && !opt_const_scalar(n->inputs[2], &hi))
            return false;
        *a = (ir_act){IR_ACT_CLIP, lo, hi, 0.0f};
        return lo <= hi; /* also false for a NaN bound */
    }
    default: return false;
    }
}

static float clampf(float v, float lo, float hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* b applied after a, as one ir_act. */
static bool compose(ir_act a, ir_act b, ir_act *out)
{
    if (a.kind == IR_ACT_RELU)
        a = (ir_act){IR_ACT_CLIP, 0.0f, INFINITY, 0.0f};
    if (a.kind == IR_ACT_NONE) {
        *out = b;
    } else if (a.kind == IR_ACT_CLIP && b.kind == IR_ACT_CLIP) {
        /* clip(clip(x, a), b) is a clip with both bounds of a clipped by b */
        *out = (ir_act){IR_ACT_CLIP, clampf(a.lo, b.lo, b.hi), clampf(a.hi, b.lo, b.hi), 0.0f};
    } else if (a.kind == IR_ACT_CLIP && b.kind == IR_ACT_LEAKY_RELU) {
        if (a.lo < 0.0f)
            return false;
        *out = a; /* LeakyRelu leaves non-negative values alone */
    } else if (a.kind == IR_ACT_LEAKY_RELU && b.kind == IR_ACT_CLIP) {
        if (a.alpha < 0.0f || b.lo < 0.0f)
            return false;
        *out = b; /* the negative side ends below b.lo either way */
    } else if (a.kind == IR_ACT_LEAKY_RELU && b.kind == IR_ACT_LEAKY_RELU) {
        if (a.alpha < 0.0f || b.alpha < 0.0f)
            return false;
        *out = (ir_act){IR_ACT_LEAKY_RELU, 0.0f, 0.0f, a.alpha * b.alpha};
    } else {
        return false;
    }
    if (out->kind == IR_ACT_CLIP && out->lo == 0.0f && out->hi == INFINITY)
        *out = (ir_act){IR_ACT_RELU, 0.0f, 0.0f, 0.0f};
    return true;
}

npu_status opt_fuse_act(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    (void)err;
    bool any = false;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        ir_act a, fused;
        if (n->dead || n->n_inputs < 1 || n->n_outputs != 1 || !act_of(n, &a))
            continue;
        ir_tensor *x = n->inputs[0], *y = n->outputs[0];
        ir_node *p = x ? x->producer : NULL;
        if (!p || p->dead || !carries_act(p->op) || p->n_outputs != 1 || !y || x->dtype != IR_F32 ||
            y->dtype != IR_F32 || opt_single_user(g, x) != n || !compose(p->act, a, &fused))
            continue;
        ir_act before = p->act;
        p->act = fused;
        if (!opt_bypass(g, n, x, y)) {
            p->act = before;
            continue;
        }
        any = true;
    }
    if (any)
        ir_graph_compact(g);
    *changed = any;
    return NPU_OK;
}
