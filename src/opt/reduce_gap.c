/* reduce_gap: ReduceMean over the two spatial axes of an NCHW tensor is a
 * GlobalAveragePool (MnasNet and ShuffleNetV2 export their head pooling that
 * way). The NPU pools; it has no general reduction, so without this rewrite
 * the head ran on the host in float between a dequantize and a quantize.
 * keepdims=0 becomes GlobalAveragePool then a Reshape to [N, C]. */
#include "opt/opt_internal.h"

/* The reduced axes of a ReduceMean, from its attribute or its constant
 * second input (opset 18); false when they are not known at compile time. */
static bool reduced_axes(const ir_node *n, int64_t *axes, int *count)
{
    if (n->n_inputs > 1 && n->inputs[1]) {
        *count = opt_const_ints(n->inputs[1], axes, IR_MAX_RANK);
        return *count >= 0;
    }
    *count = ir_attr_ints(n, "axes", axes, IR_MAX_RANK);
    return *count > 0; /* absent axes reduce every axis: not a spatial pool */
}

static bool is_spatial_mean(const ir_node *n)
{
    const ir_tensor *x = n->inputs[0];
    if (n->op != IR_OP_REDUCE_MEAN || n->n_outputs != 1 || !x || !x->shape_known || x->rank != 4 ||
        x->dtype != IR_F32 || n->act.kind != IR_ACT_NONE)
        return false;
    int64_t axes[IR_MAX_RANK];
    int k = 0;
    if (!reduced_axes(n, axes, &k) || k != 2)
        return false;
    unsigned mask = 0;
    for (int i = 0; i < k; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + 4 : axes[i];
        if (a < 0 || a > 3)
            return false;
        mask |= 1u << a;
    }
    return mask == 0xCu;
}

static npu_status rewrite(ir_graph *g, ir_node *n, npu_err *err)
{
    ir_tensor *x = n->inputs[0];
    bool keepdims = ir_attr_int(n, "keepdims", 1) != 0;
    if (keepdims) {
        if (!opt_set_inputs(g, n, 1, &x))
            return npu_fail(err, NPU_EINTERNAL, "node '%s' (ReduceMean): out of memory", n->name);
        n->op = IR_OP_GLOBAL_AVERAGE_POOL;
        n->n_attrs = 0;
        return NPU_OK;
    }
    /* GlobalAveragePool into a new [N, C, 1, 1] tensor; n becomes the Reshape */
    int64_t dims[4] = {x->dims[0], x->dims[1], 1, 1};
    ir_tensor *pooled = ir_tensor_new(g, NULL, IR_F32, 4, dims);
    const char *name = npu_arena_printf(g->arena, "%s/pool", n->name);
    ir_node *pool = pooled && name ? ir_node_new(g, IR_OP_GLOBAL_AVERAGE_POOL, name, 1, &x, 1, &pooled) : NULL;
    if (!pool)
        return npu_fail(err, NPU_EINTERNAL, "node '%s' (ReduceMean): out of memory", n->name);
    n->n_attrs = 0;
    n->op = IR_OP_FLATTEN; /* a reshape-like placeholder that opt_make_static_reshape canonicalizes */
    bool changed = false;
    return opt_make_static_reshape(g, n, pooled, &changed, err);
}

npu_status opt_reduce_gap(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    bool any = false, appended = false;
    int n_nodes = g->n_nodes; /* nodes appended below are pools, not candidates */
    for (int i = 0; i < n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || !is_spatial_mean(n))
            continue;
        appended |= ir_attr_int(n, "keepdims", 1) == 0;
        npu_status st = rewrite(g, n, err);
        if (st != NPU_OK)
            return st;
        any = true;
    }
    if (appended) {
        npu_status st = ir_graph_toposort(g, err);
        if (st != NPU_OK)
            return st;
    }
    if (any)
        ir_graph_compact(g);
    *changed = any;
    return NPU_OK;
}
