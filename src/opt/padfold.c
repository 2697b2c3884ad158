/* padfold: a constant-mode Pad on the spatial axes only goes into the
 * window op reading it, whose own pads then cover it (torch exports
 * AvgPool2d and some padded convolutions as Pad + op). Exact cases only:
 *   - a Pad of all-zero pads is an identity (dense_block's AvgPool2d);
 *   - value 0 into a Conv (its padding is zeros);
 *   - value 0 into an AveragePool counting its padding (count_include_pad=1),
 *     or not counting it but with no pads of its own, which then counts all
 *     (the padded zeros were real elements of its input);
 *   - value -inf into a MaxPool (its padding never wins).
 * The Pad's output must have no other reader, and the merged pads must stay
 * smaller than the window's extent (what ONNX runtimes and the NPU take). */
#include <math.h>
#include <string.h>

#include "opt/opt_internal.h"

/* The Pad's begin/end per axis of x; false unless constant and non-negative. */
static bool pad_amounts(const ir_node *n, int64_t *begin, int64_t *end, float *value)
{
    const ir_tensor *x = n->inputs[0];
    int r = x->rank;
    if (n->op != IR_OP_PAD || n->n_outputs != 1 || n->n_inputs < 2 || !x->shape_known || x->dtype != IR_F32 ||
        r > IR_MAX_RANK || strcmp(ir_attr_string(n, "mode", "constant"), "constant") != 0 ||
        n->act.kind != IR_ACT_NONE)
        return false;
    int64_t pads[2 * IR_MAX_RANK], axes[IR_MAX_RANK];
    int np = opt_const_ints(n->inputs[1], pads, 2 * IR_MAX_RANK), na = r;
    if (n->n_inputs > 3 && n->inputs[3]) {
        if ((na = opt_const_ints(n->inputs[3], axes, IR_MAX_RANK)) < 0)
            return false;
    } else {
        for (int i = 0; i < r; i++)
            axes[i] = i;
    }
    if (np != 2 * na)
        return false;
    memset(begin, 0, sizeof *begin * (size_t)r);
    memset(end, 0, sizeof *end * (size_t)r);
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r || pads[i] < 0 || pads[na + i] < 0)
            return false;
        begin[a] = pads[i], end[a] = pads[na + i];
    }
    *value = 0.0f;
    const ir_tensor *v = n->n_inputs > 2 ? n->inputs[2] : NULL;
    return !v || ir_tensor_numel(v) == 0 || opt_const_scalar(v, value);
}

/* Whether op m reading the Pad takes pads of value v as its own padding. */
static bool absorbs(const ir_node *m, float v)
{
    if (strcmp(ir_attr_string(m, "auto_pad", "NOTSET"), "NOTSET") != 0 || m->inputs[0]->rank < 3 ||
        m->inputs[0]->rank > 4)
        return false;
    switch (m->op) {
    case IR_OP_CONV: return v == 0.0f;
    case IR_OP_AVERAGE_POOL: {
        if (v != 0.0f || ir_attr_int(m, "ceil_mode", 0))
            return false;
        if (ir_attr_int(m, "count_include_pad", 0))
            return true;
        int64_t own[4] = {0, 0, 0, 0};
        int k = ir_attr_ints(m, "pads", own, 4);
        for (int i = 0; i < k && i < 4; i++)
            if (own[i])
                return false;
        return true;
    }
    case IR_OP_MAX_POOL: return isinf(v) && v < 0 && m->n_outputs == 1;
    default: return false;
    }
}

/* m's pads plus the Pad's on the spatial axes; false past the window's extent. */
static bool merged_pads(const ir_node *m, const int64_t *begin, const int64_t *end, int64_t *out)
{
    int r = m->inputs[0]->rank, s = r - 2;
    int64_t k[2] = {1, 1}, dl[2] = {1, 1};
    if (m->op == IR_OP_CONV) {
        const ir_tensor *w = m->inputs[1];
        if (!w || w->rank != r)
            return false;
        for (int i = 0; i < s; i++)
            k[i] = w->dims[2 + i];
        if (ir_attr_ints(m, "dilations", dl, 2) == 1)
            dl[1] = dl[0];
    } else if (ir_attr_ints(m, "kernel_shape", k, 2) != s) {
        return false;
    }
    int64_t own[4] = {0, 0, 0, 0};
    int np = ir_attr_ints(m, "pads", own, 4);
    if (np > 0 && np != 2 * s)
        return false;
    for (int i = 0; i < s; i++) {
        out[i] = own[i] + begin[2 + i];
        out[s + i] = own[s + i] + end[2 + i];
        int64_t ext = (k[i] - 1) * (m->op == IR_OP_CONV ? dl[i] : 1) + 1;
        if (out[i] >= ext || out[s + i] >= ext)
            return false;
    }
    return true;
}

static bool fold_one(ir_graph *g, ir_node *pad)
{
    ir_tensor *x = pad->inputs[0], *y = pad->outputs[0];
    int64_t begin[IR_MAX_RANK], end[IR_MAX_RANK], merged[4];
    float v;
    if (!pad_amounts(pad, begin, end, &v))
        return false;
    bool none = true;
    for (int i = 0; i < x->rank; i++)
        none &= begin[i] == 0 && end[i] == 0;
    if (none)
        return opt_bypass(g, pad, x, y);
    if (begin[0] || end[0] || begin[1] || end[1])
        return false; /* batch or channels padded: no window op's padding */
    ir_node *m = opt_single_user(g, y);
    if (!m || m->inputs[0] != y || !absorbs(m, v) || !merged_pads(m, begin, end, merged))
        return false;
    if (!ir_set_ints(g, m, "pads", 2 * (x->rank - 2), merged))
        return false;
    if (m->op == IR_OP_AVERAGE_POOL && !ir_set_int(g, m, "count_include_pad", 1))
        return false;
    m->inputs[0] = x;
    pad->dead = true;
    y->producer = NULL;
    return true;
}

npu_status opt_padfold(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o, (void)err;
    bool any = false;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (!n->dead && n->op == IR_OP_PAD && n->n_inputs > 0 && n->inputs[0])
            any |= fold_one(g, n);
    }
    if (any)
        ir_graph_compact(g);
    *changed = any;
    return NPU_OK;
}
