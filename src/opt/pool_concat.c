/* pool_concat: MaxPool(Concat(x1..xn, channels)) becomes
 * Concat(MaxPool(x1)..MaxPool(xn)): a max pool works on each channel
 * alone, so the two are equal, element for element. SqueezeNet's fire
 * modules end so (features.5 and .8: an expand 1x1 and an expand 3x3 conv,
 * their concat, a 3x3 max pool). Each conv then has a pool of its own right
 * after it, which the tiler runs with the conv as one pipeline (the pool on
 * the vector unit beside the next band's MACs, docs/tiler.md), and the
 * concat, elided, receives the pooled halves; before, the pool was a
 * vector-unit pass in series over the whole concat, read back from DRAM. */
#include "opt/opt_internal.h"

#include <string.h>

static bool channel_concat(const ir_node *c)
{
    if (!c || c->op != IR_OP_CONCAT || c->n_outputs != 1 || c->n_inputs < 2 || c->outputs[0]->rank != 4)
        return false;
    int64_t axis = ir_attr_int(c, "axis", 0);
    if (axis != 1 && axis != -3)
        return false;
    for (int i = 0; i < c->n_inputs; i++) {
        const ir_tensor *x = c->inputs[i];
        if (!x || !x->shape_known || x->rank != 4 || x->dtype != IR_F32 || opt_is_const(x) || !x->producer)
            return false;
        for (int i2 = 0; i2 < i; i2++)
            if (c->inputs[i2] == x)
                return false; /* the same tensor twice: one pool would have two consumers' slots */
    }
    return true;
}

/* A max pool (not global, no Indices output) of a channel concat that only it reads. */
static bool applies(const ir_graph *g, const ir_node *n)
{
    if (n->op != IR_OP_MAX_POOL || n->n_inputs != 1 || n->n_outputs < 1 || !n->outputs[0]->shape_known ||
        n->outputs[0]->rank != 4)
        return false;
    for (int i = 1; i < n->n_outputs; i++)
        if (n->outputs[i])
            return false;
    const ir_tensor *x = n->inputs[0];
    return x && channel_concat(x->producer) && opt_single_user(g, x) == n;
}

/* Moves node k of g right after the node producing its first input. */
static void place_after_producer(ir_graph *g, int k)
{
    ir_node *n = g->nodes[k];
    int j = k - 1;
    while (j >= 0 && g->nodes[j] != n->inputs[0]->producer)
        j--;
    if (j < 0 || j + 1 == k)
        return;
    memmove(&g->nodes[j + 2], &g->nodes[j + 1], sizeof *g->nodes * (size_t)(k - j - 1));
    g->nodes[j + 1] = n;
}

static npu_status rewrite(ir_graph *g, ir_node *n, ir_node **pools, int *n_pools, npu_err *err)
{
    ir_node *c = n->inputs[0]->producer;
    ir_tensor *y = n->outputs[0];
    ir_tensor **pooled = npu_arena_alloc(g->arena, sizeof *pooled * (size_t)c->n_inputs);
    ir_attr *attrs = npu_arena_alloc(g->arena, sizeof *attrs * (size_t)(n->n_attrs ? n->n_attrs : 1));
    if (!pooled || !attrs)
        return npu_fail(err, NPU_EINTERNAL, "node '%s' (MaxPool): out of memory", n->name);
    memcpy(attrs, n->attrs, sizeof *attrs * (size_t)n->n_attrs);
    for (int i = 0; i < c->n_inputs; i++) {
        ir_tensor *x = c->inputs[i];
        int64_t dims[4] = {y->dims[0], x->dims[1], y->dims[2], y->dims[3]};
        const char *name = npu_arena_printf(g->arena, "%s/%d", n->name, i);
        pooled[i] = ir_tensor_new(g, NULL, IR_F32, 4, dims);
        ir_node *p = pooled[i] && name ? ir_node_new(g, IR_OP_MAX_POOL, name, 1, &x, 1, &pooled[i]) : NULL;
        if (!p)
            return npu_fail(err, NPU_EINTERNAL, "node '%s' (MaxPool): out of memory", n->name);
        p->n_attrs = n->n_attrs, p->attrs = attrs, p->act = n->act;
        pools[(*n_pools)++] = p;
    }
    /* the concat now joins the pooled halves into the pool's own output */
    if (!opt_set_inputs(g, c, c->n_inputs, pooled))
        return npu_fail(err, NPU_EINTERNAL, "node '%s' (Concat): out of memory", c->name);
    c->outputs[0]->producer = NULL;
    c->outputs[0] = y;
    y->producer = c;
    n->dead = true;
    return NPU_OK;
}

npu_status opt_pool_concat(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    int n_nodes = g->n_nodes, n_pools = 0, cap = 0;
    for (int i = 0; i < n_nodes; i++)
        if (!g->nodes[i]->dead && applies(g, g->nodes[i]))
            cap += g->nodes[i]->inputs[0]->producer->n_inputs;
    *changed = cap > 0;
    if (!cap)
        return NPU_OK;
    ir_node **pools = npu_arena_alloc(g->arena, sizeof *pools * (size_t)cap);
    if (!pools)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    for (int i = 0; i < n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || !applies(g, n))
            continue;
        npu_status st = rewrite(g, n, pools, &n_pools, err);
        if (st != NPU_OK)
            return st;
    }
    ir_graph_compact(g);
    npu_status st = ir_graph_toposort(g, err);
    if (st != NPU_OK)
        return st;
    /* each pool right after its producer: the tiler cascades consecutive nodes */
    for (int k = 0; k < g->n_nodes; k++)
        for (int p = 0; p < n_pools; p++)
            if (g->nodes[k] == pools[p])
                place_after_producer(g, k);
    return NPU_OK;
}
