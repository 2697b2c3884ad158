/* Cross-layer equalization (Nagel et al., "Data-Free Quantization", 2019)
 * of Conv -> Conv pairs: output channel i of the first conv is divided by
 * s_i and input channel i of the second multiplied by s_i, with
 * s_i = sqrt(r1_i / r2_i) (r: the largest |w| of the channel on each side),
 * so both see the same range. Exact in float through no activation, Relu
 * and LeakyRelu (positively homogeneous). A clip at hi (Relu6) is kept
 * exact on the calibration data: a channel that reaches hi is not scaled,
 * the others only with s_i > max_i / hi. Depthwise layers, whose per
 * channel ranges differ most, gain most. */
#include <math.h>
#include <string.h>

#include "quantize/quantize_internal.h"

static bool is_conv_with_weights(const ir_node *n)
{
    return !n->dead && n->op == IR_OP_CONV && n->n_inputs >= 2 && n->inputs[1]->data &&
           n->inputs[1]->dtype == IR_F32 && (n->n_inputs < 3 || !n->inputs[2] || n->inputs[2]->data) &&
           n->inputs[1]->rank >= 3;
}

/* The single live consumer of t, or NULL. */
static ir_node *only_consumer(ir_graph *g, const ir_tensor *t)
{
    ir_node *found = NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == t) {
                if (found || k != 0)
                    return NULL;
                found = n;
            }
    }
    return found;
}

static bool act_allows(const ir_act *a)
{
    return a->kind == IR_ACT_NONE || a->kind == IR_ACT_RELU || (a->kind == IR_ACT_LEAKY_RELU && a->alpha >= 0) ||
           (a->kind == IR_ACT_CLIP && a->lo == 0.0f && a->hi > 0.0f);
}

/* Weights and bias in the graph are shared constants: give the node its own
 * copies before changing them in place. */
static float *own_copy(ir_graph *g, ir_node *n, int k)
{
    ir_tensor *t = n->inputs[k];
    ir_tensor *c = ir_const_new(g, NULL, IR_F32, t->rank, t->dims, t->data);
    if (!c)
        return NULL;
    n->inputs[k] = c;
    return c->data;
}

static bool equalize(ir_graph *g, ir_node *a, ir_node *b, float *chan_max)
{
    const ir_tensor *wa = a->inputs[1], *wb = b->inputs[1];
    int64_t c = wa->dims[0], per_a = ir_tensor_numel(wa) / c;
    int64_t gb = ir_attr_int(b, "group", 1);
    if (gb <= 0 || c % gb || wb->dims[1] * gb != c)
        return false;
    int64_t cg = c / gb, ocb = wb->dims[0], ocg = ocb / gb, ksz = ir_tensor_numel(wb) / (ocb * cg);
    float *fa = own_copy(g, a, 1), *fb = fa ? own_copy(g, b, 1) : NULL;
    float *ba = fb && a->n_inputs > 2 && a->inputs[2] ? own_copy(g, a, 2) : NULL;
    if (!fb || (a->n_inputs > 2 && a->inputs[2] && !ba))
        return false;
    bool changed = false;
    for (int64_t i = 0; i < c; i++) {
        double r1 = 0, r2 = 0;
        for (int64_t j = 0; j < per_a; j++)
            r1 = fmax(r1, fabs(fa[i * per_a + j]));
        int64_t grp = i / cg, col = i % cg;
        for (int64_t o = grp * ocg; o < (grp + 1) * ocg; o++)
            for (int64_t j = 0; j < ksz; j++)
                r2 = fmax(r2, fabs(fb[(o * cg + col) * ksz + j]));
        if (r1 <= 0 || r2 <= 0)
            continue;
        double s = sqrt(r1 / r2);
        if (a->act.kind == IR_ACT_CLIP) {
            double hi = a->act.hi, m = chan_max ? chan_max[i] : hi;
            if (m >= hi * 0.999)
                continue; /* the clip is active: scaling would move it */
            s = fmax(s, m / hi * 1.01);
        }
        if (fabs(s - 1.0) < 1e-6)
            continue;
        for (int64_t j = 0; j < per_a; j++)
            fa[i * per_a + j] = (float)(fa[i * per_a + j] / s);
        if (ba)
            ba[i] = (float)(ba[i] / s);
        for (int64_t o = grp * ocg; o < (grp + 1) * ocg; o++)
            for (int64_t j = 0; j < ksz; j++)
                fb[(o * cg + col) * ksz + j] = (float)(fb[(o * cg + col) * ksz + j] * s);
        if (chan_max)
            chan_max[i] = (float)(chan_max[i] / s);
        changed = true;
    }
    return changed;
}

int q_cle_apply(ir_graph *g, float *const *chan_max, int rounds)
{
    int pairs = 0;
    for (int r = 0; r < rounds; r++) {
        int changed = 0;
        for (int i = 0; i < g->n_nodes; i++) {
            ir_node *a = g->nodes[i];
            if (!is_conv_with_weights(a) || !act_allows(&a->act))
                continue;
            ir_tensor *y = a->outputs[0];
            if (y->flags & IR_TENSOR_OUTPUT)
                continue;
            ir_node *b = only_consumer(g, y);
            if (!b || !is_conv_with_weights(b) || b->inputs[1]->rank != a->inputs[1]->rank)
                continue;
            bool graph_out = false;
            for (int k = 0; k < g->n_outputs; k++)
                graph_out |= g->outputs[k] == y;
            if (graph_out || (a->act.kind == IR_ACT_CLIP && !(chan_max && chan_max[y->id])))
                continue;
            if (equalize(g, a, b, chan_max ? chan_max[y->id] : NULL))
                changed++;
        }
        if (r == 0)
            pairs = changed;
        if (!changed)
            break;
    }
    return pairs;
}
