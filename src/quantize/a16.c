/* A16W8 activation widths (docs/numerics.md, "A16W8"). Every integer node
 * runs at one width: its inputs and output are all int16 or all int8. A node
 * takes --abits, or its --layer-bits override; a reshape or max pool without
 * an override keeps its input's width; ops without an int16 kernel (Softmax,
 * LayerNorm, a MatMul of two activations, Pad, Transpose, ...) run at 8 bits.
 * Where a tensor's width differs from its consumer's, an npu.Requantize
 * converts it (one per tensor and width), on the consumer's scale for that
 * width from the same calibrated range. */
#include <string.h>

#include "quantize/quantize_internal.h"

static int override_abits(const q_options *o, const char *name)
{
    for (int i = 0; name && i < o->n_layer_bits; i++)
        if (o->layer_bits[i].abits && strcmp(o->layer_bits[i].node, name) == 0)
            return o->layer_bits[i].abits;
    return 0;
}

/* The ops with int16 kernels (kernels/nk_q16.h). */
static bool a16_capable(const ir_node *n, q_kind k)
{
    switch (k) {
    case Q_KIND_WEIGHTED:
    case Q_KIND_BINARY:
    case Q_KIND_CONCAT:
    case Q_KIND_LUT: return true;
    case Q_KIND_OWN_RANGE: return n->op == IR_OP_AVERAGE_POOL || n->op == IR_OP_GLOBAL_AVERAGE_POOL;
    case Q_KIND_INHERIT:
        return n->op == IR_OP_MAX_POOL || n->op == IR_OP_GLOBAL_MAX_POOL || n->op == IR_OP_RESHAPE ||
               n->op == IR_OP_FLATTEN || n->op == IR_OP_SQUEEZE || n->op == IR_OP_UNSQUEEZE;
    default: return false;
    }
}

static bool wants16(const q_options *o)
{
    if (o->abits == 16)
        return true;
    for (int i = 0; i < o->n_layer_bits; i++)
        if (o->layer_bits[i].abits == 16)
            return true;
    return false;
}

static bool activation(const ir_tensor *x)
{
    return x && !x->data && x->dtype == IR_F32;
}

/* The width of node n when planning (its inputs' producers still linked). */
static int plan_width(const q_ctx *c, const ir_node *n, q_kind k)
{
    int w = override_abits(c->opts, n->name);
    const ir_tensor *x = n->n_inputs ? n->inputs[0] : NULL;
    if (!w && k == Q_KIND_INHERIT && activation(x) && x->producer && q_classify(x->producer) != Q_KIND_FLOAT &&
        x->id < c->n_orig_tensors)
        w = c->a16[x->id] ? 16 : 8;
    if (!w)
        w = c->opts->abits == 16 ? 16 : 8;
    return w == 16 && a16_capable(n, k) ? 16 : 8;
}

npu_status q_a16_plan(q_ctx *c)
{
    ir_graph *g = c->g;
    c->a16 = npu_arena_alloc(g->arena, sizeof *c->a16 * (size_t)(c->n_orig_tensors + 1));
    c->qalt = npu_arena_alloc(g->arena, sizeof *c->qalt * (size_t)(c->n_orig_tensors + 1));
    if (!c->a16 || !c->qalt)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    memset(c->a16, 0, sizeof *c->a16 * (size_t)(c->n_orig_tensors + 1));
    memset(c->qalt, 0, sizeof *c->qalt * (size_t)(c->n_orig_tensors + 1));
    if (!wants16(c->opts))
        return NPU_OK;
    /* outputs take their producer's width (nodes are in topological order) */
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        q_kind k = q_classify(n);
        if (n->dead || k == Q_KIND_FLOAT || plan_width(c, n, k) != 16)
            continue;
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] && n->outputs[j]->id < c->n_orig_tensors)
                c->a16[n->outputs[j]->id] = true;
    }
    /* graph inputs and float results enter at 16 bits when a 16-bit node reads them */
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || q_classify(n) == Q_KIND_FLOAT || !n->n_outputs || !n->outputs[0] ||
            !c->a16[n->outputs[0]->id])
            continue;
        for (int j = 0; j < n->n_inputs; j++) {
            ir_tensor *x = n->inputs[j];
            if (activation(x) && x->id < c->n_orig_tensors &&
                (!x->producer || q_classify(x->producer) == Q_KIND_FLOAT))
                c->a16[x->id] = true;
        }
    }
    return NPU_OK;
}

int q_node_abits(const q_ctx *c, const ir_node *n)
{
    const ir_tensor *y = n->n_outputs ? n->outputs[0] : NULL;
    return c->a16 && y && y->id < c->n_orig_tensors && c->a16[y->id] ? 16 : 8;
}

npu_status q_width_version(q_ctx *c, const ir_node *n, ir_tensor *x, ir_tensor *xq, ir_tensor **out)
{
    bool want16 = q_node_abits(c, n) == 16;
    *out = xq;
    if ((xq->dtype == IR_I16) == want16)
        return NPU_OK;
    if (x->id < c->n_orig_tensors && c->qalt[x->id]) {
        *out = c->qalt[x->id];
        return NPU_OK;
    }
    if (x->id >= c->n_ranges)
        return npu_fail(c->err, NPU_EINTERNAL, "quantize: '%s' has no calibrated range", x->name);
    float s;
    int32_t zp;
    q_params_from_range(c->lo[x->id], c->hi[x->id], want16 ? 16 : 8, &s, &zp);
    ir_quant *q = q_quant_tensor(c->g, s, zp);
    if (!q)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    ir_tensor *t;
    npu_status st = q_new_int_tensor_bits(c, x, q, want16 ? 16 : 8, &t);
    if (st != NPU_OK)
        return st;
    char name[512];
    snprintf(name, sizeof name, "%s:a%d", x->name, want16 ? 16 : 8);
    ir_node *r = ir_node_new(c->g, IR_OP_REQUANTIZE, ir_graph_find(c->g, name) ? NULL : name, 1, &xq, 1, &t);
    if (!r)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    r->unit = n->unit;
    r->unit_reason = n->unit_reason;
    if (x->id < c->n_orig_tensors)
        c->qalt[x->id] = t;
    *out = t;
    return NPU_OK;
}
