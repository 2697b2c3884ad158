/* bnfold: BatchNormalization (inference) folded into the Conv,
 * ConvTranspose or Gemm before it. BN computes y = x * s + t per channel with
 * s = scale / sqrt(var + eps), t = B - mean * s; so the producer's weights are
 * scaled by s along its output channels and its bias becomes b * s + t.
 * Conditions: the producer's output is read by the BN alone (another reader
 * needs the unnormalized value), it has no fused activation yet, its weights
 * and bias and all BN parameters are f32 constants, and training_mode is off.
 * New weight and bias tensors are made, never written in place: a weight may
 * be shared. Arithmetic in double, rounded once to float. A BN that cannot
 * fold stays and runs on the reference kernel. */
#include "opt/opt_internal.h"

#include <math.h>

static bool f32_const_len(const ir_tensor *t, int64_t len)
{
    return opt_is_const(t) && t->dtype == IR_F32 && t->shape_known && !t->quant && ir_tensor_numel(t) == len;
}

bool opt_bn_coefficients(ir_graph *g, const ir_node *bn, opt_bn_coef *k)
{
    const ir_tensor *x = bn->inputs[0];
    if (bn->n_inputs != 5 || !x || !x->shape_known || x->rank < 2 || x->dtype != IR_F32 ||
        ir_attr_int(bn, "training_mode", 0) != 0)
        return false;
    for (int j = 1; j < bn->n_outputs; j++)
        if (bn->outputs[j] && ir_use_count(g, bn->outputs[j]) > 0)
            return false;
    k->c = x->dims[1];
    for (int j = 1; j < 5; j++)
        if (!f32_const_len(bn->inputs[j], k->c))
            return false;
    const float *scale = bn->inputs[1]->data, *b = bn->inputs[2]->data, *mean = bn->inputs[3]->data,
                *var = bn->inputs[4]->data;
    double eps = ir_attr_float(bn, "epsilon", 1e-5f);
    k->s = npu_arena_alloc(g->arena, sizeof(double) * (size_t)k->c);
    k->t = npu_arena_alloc(g->arena, sizeof(double) * (size_t)k->c);
    if (!k->s || !k->t)
        return false;
    for (int64_t i = 0; i < k->c; i++) {
        k->s[i] = scale[i] / sqrt((double)var[i] + eps);
        k->t[i] = b[i] - mean[i] * k->s[i];
    }
    return true;
}

/* Output channel of each weight element, as (block of `per` elements) ->
 * channel: W is [outer, inner, per...]; the channel of block (o, i) is
 * chan(o, i). */
typedef struct wlayout {
    int64_t outer, inner, per;
    int64_t group_in; /* ConvTranspose: input channels per group; 0 otherwise */
    bool by_inner;    /* Gemm without transB: channel = inner index */
} wlayout;

static int64_t channel_of(const wlayout *l, int64_t o, int64_t i)
{
    if (l->group_in)
        return (o / l->group_in) * l->inner + i;
    return l->by_inner ? i : o;
}

static bool weight_layout(const ir_node *p, const ir_tensor *w, int64_t c, wlayout *l)
{
    if (!opt_is_const(w) || w->dtype != IR_F32 || w->quant || !w->shape_known || w->rank < 2)
        return false;
    *l = (wlayout){.outer = w->dims[0], .inner = w->dims[1], .per = 1};
    for (int d = 2; d < w->rank; d++)
        l->per *= w->dims[d];
    switch (p->op) {
    case IR_OP_CONV: /* [M, C/group, k...] */
        l->per *= l->inner;
        l->inner = 1;
        return l->outer == c;
    case IR_OP_CONV_TRANSPOSE: { /* [C, M/group, k...] */
        int64_t group = ir_attr_int(p, "group", 1);
        if (group < 1 || l->outer % group || l->inner * group != c)
            return false;
        l->group_in = l->outer / group;
        return true;
    }
    case IR_OP_GEMM: /* B is [K, N], or [N, K] with transB */
        if (w->rank != 2)
            return false;
        if (ir_attr_int(p, "transB", 0)) {
            l->per = l->inner;
            l->inner = 1;
            return l->outer == c;
        }
        l->by_inner = true;
        return l->inner == c;
    default: return false;
    }
}

/* Where element (r, c) of the producer's bias is (r*rs + c*cs), over `rows`
 * rows: a Gemm's C broadcasts (scalar, [N], [1,N], [M,1], [M,N]). False when
 * the bias is not a usable constant. */
typedef struct blayout {
    int64_t rows, rs, cs;
} blayout;

static bool bias_layout(const ir_node *p, int64_t c, blayout *l)
{
    const ir_tensor *b = p->n_inputs > 2 ? p->inputs[2] : NULL;
    *l = (blayout){.rows = 1, .rs = 0, .cs = 1};
    if (!b)
        return true;
    if (!opt_is_const(b) || b->dtype != IR_F32 || b->quant || !b->shape_known)
        return false;
    int64_t n = ir_tensor_numel(b);
    if (p->op != IR_OP_GEMM || b->rank < 2) {
        l->cs = n == 1 && c != 1 ? 0 : 1;
        return n == c || (p->op == IR_OP_GEMM && n == 1);
    }
    int64_t m = p->outputs[0]->dims[0];
    if (b->rank != 2 || (b->dims[1] != 1 && b->dims[1] != c) || (b->dims[0] != 1 && b->dims[0] != m))
        return false;
    l->cs = b->dims[1] == 1 ? 0 : 1;
    if (b->dims[0] != 1) {
        l->rows = m;
        l->rs = b->dims[1];
    }
    return true;
}

/* The folded bias: [C], or [M, C] when a Gemm's C varies along rows. */
static ir_tensor *folded_bias(ir_graph *g, const ir_node *p, const ir_node *bn, const opt_bn_coef *k, const blayout *l)
{
    const ir_tensor *b = p->n_inputs > 2 ? p->inputs[2] : NULL;
    double beta = p->op == IR_OP_GEMM ? ir_attr_float(p, "beta", 1.0f) : 1.0;
    int64_t dims[2] = {l->rows, k->c};
    ir_tensor *nb = l->rows > 1 ? opt_const_new(g, bn->name, "bias", IR_F32, 2, dims, NULL)
                                : opt_const_new(g, bn->name, "bias", IR_F32, 1, &dims[1], NULL);
    if (!nb)
        return NULL;
    float *o = nb->data;
    const float *bv = b ? b->data : NULL;
    for (int64_t r = 0; r < l->rows; r++)
        for (int64_t c = 0; c < k->c; c++)
            o[r * k->c + c] = (float)((bv ? beta * bv[r * l->rs + c * l->cs] : 0.0) * k->s[c] + k->t[c]);
    return nb;
}

static npu_status fold_one(ir_graph *g, ir_node *bn, bool *folded, npu_err *err)
{
    ir_tensor *x = bn->inputs[0], *y = bn->n_outputs > 0 ? bn->outputs[0] : NULL;
    ir_node *p = x ? x->producer : NULL;
    if (!p || p->dead || (p->op != IR_OP_CONV && p->op != IR_OP_CONV_TRANSPOSE && p->op != IR_OP_GEMM) ||
        p->act.kind != IR_ACT_NONE || p->n_outputs != 1 || p->n_inputs < 2 || p->n_inputs > 3 || !y ||
        y->dtype != x->dtype || !y->shape_known || !ir_shape_equal(x, y) || opt_single_user(g, x) != bn)
        return NPU_OK;
    opt_bn_coef k;
    wlayout l;
    blayout bl;
    ir_tensor *w = p->inputs[1];
    if (!opt_bn_coefficients(g, bn, &k) || !weight_layout(p, w, k.c, &l) || !bias_layout(p, k.c, &bl))
        return NPU_OK;
    ir_tensor *nb = folded_bias(g, p, bn, &k, &bl);
    ir_tensor *nw = nb ? opt_const_new(g, w->name, "bnfold", IR_F32, w->rank, w->dims, NULL) : NULL;
    if (!nw)
        return npu_fail(err, NPU_EINTERNAL, "bnfold: node '%s': out of memory", bn->name);
    const float *wv = w->data;
    float *ov = nw->data;
    for (int64_t o = 0; o < l.outer; o++)
        for (int64_t i = 0; i < l.inner; i++) {
            double s = k.s[channel_of(&l, o, i)];
            int64_t base = (o * l.inner + i) * l.per;
            for (int64_t e = 0; e < l.per; e++)
                ov[base + e] = (float)(wv[base + e] * s);
        }
    ir_tensor *in[3] = {p->inputs[0], nw, nb};
    if (!opt_set_inputs(g, p, 3, in) || (p->op == IR_OP_GEMM && !ir_set_float(g, p, "beta", 1.0f)))
        return npu_fail(err, NPU_EINTERNAL, "bnfold: node '%s': out of memory", bn->name);
    if (!opt_bypass(g, bn, x, y))
        return npu_fail(err, NPU_EINTERNAL, "bnfold: node '%s': cannot rewire its output", bn->name);
    *folded = true;
    return NPU_OK;
}

npu_status opt_bnfold(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    bool any = false;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || n->op != IR_OP_BATCH_NORM)
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
