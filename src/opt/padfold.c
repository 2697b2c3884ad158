/* padfold: a constant-zero Pad of the spatial axes only, read by a Conv or
 * an AveragePool alone, becomes that node's own padding. PyTorch exports
 * DenseNet's transition pool (and padded pools in general) as Pad +
 * AveragePool; folded, the pool counts the padding (count_include_pad = 1:
 * the padded zeros were real elements of its input), so the result is the
 * same, and quantized the pad value is the zero point, as the Pad's 0 would
 * be. A Conv pads with zeros anyway. Conditions: mode constant, value 0 (or
 * absent), pads a constant of 2 x rank non-negative values, zero on N and C,
 * no axes input; the reader has no pads of its own beyond what adds up to
 * less than its kernel extent (the NPU's limit, and what a real window
 * needs); an AveragePool without ceil_mode whose count_include_pad is already
 * 1 or has no pads. MaxPool does not fold (its pad is -inf, not 0). */
#include "opt/opt_internal.h"

#include <string.h>

static bool zero_value(const ir_node *pad)
{
    if (strcmp(ir_attr_string(pad, "mode", "constant"), "constant") != 0)
        return false;
    if (pad->n_inputs > 2 && pad->inputs[2] && ir_tensor_numel(pad->inputs[2]) > 0) {
        float v;
        return opt_const_scalar(pad->inputs[2], &v) && v == 0.0f;
    }
    return ir_attr_float(pad, "value", 0.0f) == 0.0f;
}

/* The spatial pads [b..., e...] of a rank-r Pad (r - 2 each); false when it does not qualify. */
static bool spatial_pads(const ir_node *pad, int r, int64_t *sp)
{
    int64_t p[2 * IR_MAX_RANK];
    int np = -1;
    if (pad->n_inputs > 3 && pad->inputs[3])
        return false;
    if (pad->n_inputs > 1 && pad->inputs[1])
        np = opt_const_ints(pad->inputs[1], p, 2 * IR_MAX_RANK);
    else
        np = ir_attr_ints(pad, "pads", p, 2 * IR_MAX_RANK);
    if (np != 2 * r || p[0] || p[1] || p[r] || p[r + 1])
        return false;
    for (int i = 0; i < r - 2; i++) {
        sp[i] = p[2 + i], sp[r - 2 + i] = p[r + 2 + i];
        if (sp[i] < 0 || sp[r - 2 + i] < 0)
            return false;
    }
    return true;
}

/* The reader's kernel extent per spatial axis; false when it cannot take the pads. */
static bool reader_takes(const ir_node *m, int s, int64_t *ext)
{
    int64_t k[2], d[2] = {1, 1};
    if (ir_attr_ints(m, "kernel_shape", k, 2) != s && m->op == IR_OP_AVERAGE_POOL)
        return false;
    if (m->op == IR_OP_CONV) {
        const ir_tensor *w = m->inputs[1];
        if (!w || !w->shape_known || w->rank != s + 2 || strcmp(ir_attr_string(m, "auto_pad", "NOTSET"), "NOTSET"))
            return false;
        for (int i = 0; i < s; i++)
            k[i] = w->dims[2 + i];
        if (ir_attr_ints(m, "dilations", d, 2) < 0)
            d[0] = d[1] = 1;
    } else {
        bool own_pads = false;
        int64_t q[4] = {0, 0, 0, 0};
        int nq = ir_attr_ints(m, "pads", q, 4);
        for (int i = 0; i < nq; i++)
            own_pads |= q[i] != 0;
        if (ir_attr_int(m, "ceil_mode", 0) || (own_pads && !ir_attr_int(m, "count_include_pad", 0)) ||
            strcmp(ir_attr_string(m, "auto_pad", "NOTSET"), "NOTSET"))
            return false;
    }
    for (int i = 0; i < s; i++)
        ext[i] = (k[i] - 1) * d[i] + 1;
    return true;
}

static npu_status fold_one(ir_graph *g, ir_node *pad, bool *changed, npu_err *err)
{
    ir_tensor *x = pad->inputs[0], *y = pad->outputs[0];
    ir_node *m = y ? opt_single_user(g, y) : NULL;
    if (!m || (m->op != IR_OP_CONV && m->op != IR_OP_AVERAGE_POOL) || m->inputs[0] != y || !x || !x->shape_known ||
        (x->rank != 3 && x->rank != 4) || !zero_value(pad))
        return NPU_OK;
    int r = x->rank, s = r - 2;
    int64_t sp[4], ext[2], q[4] = {0, 0, 0, 0};
    if (!spatial_pads(pad, r, sp) || !reader_takes(m, s, ext))
        return NPU_OK;
    int nq = ir_attr_ints(m, "pads", q, 4);
    if (nq >= 0 && nq != 2 * s)
        return NPU_OK;
    int64_t np[4];
    for (int i = 0; i < 2 * s; i++) {
        np[i] = q[i] + sp[i];
        if (np[i] >= ext[i % s])
            return NPU_OK;
    }
    if (!ir_set_ints(g, m, "pads", 2 * s, np) ||
        (m->op == IR_OP_AVERAGE_POOL && !ir_set_int(g, m, "count_include_pad", 1)))
        return npu_fail(err, NPU_EINTERNAL, "padfold: node '%s': out of memory", pad->name);
    m->inputs[0] = x;
    pad->dead = true;
    *changed = true;
    return NPU_OK;
}

npu_status opt_padfold(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    bool any = false;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || n->op != IR_OP_PAD || n->n_inputs < 1 || n->n_outputs != 1)
            continue;
        npu_status st = fold_one(g, n, &any, err);
        if (st != NPU_OK)
            return st;
    }
    if (any)
        ir_graph_compact(g);
    *changed = any;
    return NPU_OK;
}
