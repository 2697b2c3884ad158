/* fuse_norm: GELU and LayerNormalization as PyTorch exports them at opset
 * 13 become one node each (ONNX Gelu, LayerNormalization), which the
 * quantizer turns into one NPU instruction (a lookup table, a row-wise
 * layernorm) instead of seven to ten ops that have no integer form.
 *
 * GELU: a product x * 0.5 * (1 + erf(x / sqrt 2)) in any association of
 * Mul (and Div by a constant), or 0.5 * x * (1 + tanh(sqrt(2/pi) * (x +
 * 0.044715 * x^3))) with x^3 as Mul chains or Pow(x, 3).
 * LayerNorm: d = x - ReduceMean(x), Div(d, Sqrt(ReduceMean(d^2) + eps)),
 * then optionally Mul by a constant scale and Add of a constant bias, both
 * reductions over the last axis only (keepdims).
 * Every intermediate must be used only inside the pattern, constants must
 * match to 1e-4 relative: anything else is left alone. */
#include <math.h>
#include <string.h>

#include "opt/opt_internal.h"

enum { MAX_FACTORS = 8, MAX_NODES = 24 };

typedef struct match {
    ir_node *nodes[MAX_NODES]; /* pattern nodes that die, the root excluded */
    int n;
} match;

typedef struct product {
    ir_tensor *f[MAX_FACTORS];
    int nf;
    double coef;
} product;

static bool near(double v, double want)
{
    return fabs(v - want) <= 1e-4 * fabs(want);
}

static bool keep(match *m, ir_node *n)
{
    if (m->n >= MAX_NODES)
        return false;
    m->nodes[m->n++] = n;
    return true;
}

/* The live producer of t when t's only reader is user (so it can die). */
static ir_node *owned_producer(const ir_graph *g, const ir_tensor *t, const ir_node *user, ir_op op)
{
    ir_node *p = t->producer;
    if (!p || p->dead || p->op != op || p->n_outputs != 1 || p->act.kind != IR_ACT_NONE ||
        opt_single_user(g, t) != user)
        return NULL;
    return p;
}

static bool scalar(const ir_tensor *t, double *v)
{
    float f;
    if (!t || !opt_const_scalar(t, &f))
        return false;
    *v = f;
    return true;
}

static bool add_factor(product *p, ir_tensor *t, int times)
{
    for (int i = 0; i < times; i++) {
        if (p->nf >= MAX_FACTORS)
            return false;
        p->f[p->nf++] = t;
    }
    return true;
}

static bool flatten(const ir_graph *g, ir_tensor *t, const ir_node *user, product *p, match *m, int depth);

/* The factors of node n's product (a Mul, a Div by a constant, Pow(x, 2|3)). */
static bool flatten_node(const ir_graph *g, ir_node *n, product *p, match *m, int depth)
{
    double c;
    if (n->n_inputs != 2 || depth > 8)
        return false;
    switch (n->op) {
    case IR_OP_MUL:
        return flatten(g, n->inputs[0], n, p, m, depth + 1) && flatten(g, n->inputs[1], n, p, m, depth + 1);
    case IR_OP_DIV:
        if (!scalar(n->inputs[1], &c) || c == 0.0)
            return false;
        p->coef /= c;
        return flatten(g, n->inputs[0], n, p, m, depth + 1);
    case IR_OP_POW:
        if (!scalar(n->inputs[1], &c) || (c != 2.0 && c != 3.0) || scalar(n->inputs[0], &c))
            return false;
        return add_factor(p, n->inputs[0], (int)c);
    default: return false;
    }
}

static bool flatten(const ir_graph *g, ir_tensor *t, const ir_node *user, product *p, match *m, int depth)
{
    double c;
    if (scalar(t, &c)) {
        p->coef *= c;
        return true;
    }
    ir_node *q = t->producer;
    if (q && (q->op == IR_OP_MUL || q->op == IR_OP_DIV || q->op == IR_OP_POW) &&
        owned_producer(g, t, user, q->op)) {
        product save = *p;
        int n0 = m->n;
        if (keep(m, q) && flatten_node(g, q, p, m, depth))
            return true;
        *p = save; /* not a product of constants and factors: t itself is the factor */
        m->n = n0;
    }
    return add_factor(p, t, 1);
}

static int count_of(const product *p, const ir_tensor *t)
{
    int k = 0;
    for (int i = 0; i < p->nf; i++)
        k += p->f[i] == t;
    return k;
}

/* t = Add(1, op(u)) owned by user: returns u's producer chain start (u), op's node kept. */
static ir_tensor *one_plus(const ir_graph *g, ir_tensor *t, const ir_node *user, ir_op op, match *m)
{
    ir_node *a = owned_producer(g, t, user, IR_OP_ADD);
    double c;
    if (!a || a->n_inputs != 2)
        return NULL;
    int k = scalar(a->inputs[0], &c) ? 1 : 0;
    if (!scalar(a->inputs[k ? 0 : 1], &c) || c != 1.0)
        return NULL;
    ir_node *f = owned_producer(g, a->inputs[k], a, op);
    if (!f || f->n_inputs != 1 || !keep(m, a) || !keep(m, f))
        return NULL;
    return f->inputs[0];
}

/* The pattern node from m->nodes[from] on that reads t, else fallback. */
static ir_node *reader_of(const match *m, int from, const ir_tensor *t, ir_node *fallback)
{
    for (int k = from; k < m->n; k++)
        for (int j = 0; j < m->nodes[k]->n_inputs; j++)
            if (m->nodes[k]->inputs[j] == t)
                return m->nodes[k];
    return fallback;
}

/* u = sqrt(2/pi) * (x + 0.044715 x^3), every piece owned by the pattern. */
static bool tanh_arg(const ir_graph *g, ir_tensor *u, ir_node *user, const ir_tensor *x, match *m)
{
    product p = {.coef = 1.0};
    int n0 = m->n;
    if (!flatten(g, u, user, &p, m, 0) || p.nf != 1 || !near(p.coef, 0.7978845608028654))
        return false;
    ir_node *a = owned_producer(g, p.f[0], reader_of(m, n0, p.f[0], user), IR_OP_ADD);
    if (!a || a->n_inputs != 2 || !keep(m, a))
        return false;
    int k = a->inputs[0] == x ? 1 : a->inputs[1] == x ? 0 : -1;
    if (k < 0)
        return false;
    product c = {.coef = 1.0};
    if (!flatten(g, a->inputs[k], a, &c, m, 0) || c.nf != 3 || count_of(&c, x) != 3)
        return false;
    return near(c.coef, 0.044715);
}

/* Root r (a Mul) computes GELU of x: which form, or 0. */
static int match_gelu(const ir_graph *g, ir_node *r, ir_tensor **xo, match *m)
{
    product p = {.coef = 1.0};
    if (r->act.kind != IR_ACT_NONE || r->n_outputs != 1 || !flatten_node(g, r, &p, m, 0) || p.nf != 2 ||
        !near(p.coef, 0.5))
        return 0;
    for (int i = 0; i < 2; i++) {
        ir_tensor *x = p.f[i], *a = p.f[1 - i];
        if (x->dtype != IR_F32 || opt_is_const(x) || !ir_shape_equal(x, r->outputs[0]))
            continue;
        ir_node *reader = reader_of(m, 0, a, r); /* the node of the product that reads a */
        int n0 = m->n;
        ir_tensor *u = one_plus(g, a, reader, IR_OP_ERF, m);
        if (u) {
            product q = {.coef = 1.0};
            ir_node *erf = m->nodes[m->n - 1];
            if (flatten(g, u, erf, &q, m, 0) && q.nf == 1 && q.f[0] == x && near(q.coef, 0.70710678118654752)) {
                *xo = x;
                return 1;
            }
        }
        m->n = n0;
        if ((u = one_plus(g, a, reader, IR_OP_TANH, m)) && tanh_arg(g, u, m->nodes[m->n - 1], x, m)) {
            *xo = x;
            return 2;
        }
        m->n = n0;
    }
    return 0;
}

/* ReduceMean of t over exactly its last axis, keepdims: the node, or NULL. */
static ir_node *last_axis_mean(const ir_tensor *t)
{
    ir_node *p = t->producer;
    int64_t axes[2];
    if (!p || p->dead || p->op != IR_OP_REDUCE_MEAN || p->n_inputs != 1 || ir_attr_int(p, "keepdims", 1) != 1)
        return NULL;
    const ir_tensor *x = p->inputs[0];
    if (ir_attr_ints(p, "axes", axes, 2) != 1 || (axes[0] != -1 && axes[0] != x->rank - 1))
        return NULL;
    return p;
}

typedef struct ln_match {
    ir_tensor *x;
    double eps;
    ir_node *root;
    ir_tensor *scale, *bias; /* NULL: 1, 0 */
} ln_match;

/* Div node dv starts a decomposed LayerNorm. */
static bool match_ln(const ir_graph *g, ir_node *dv, ln_match *l, match *m)
{
    if (dv->n_inputs != 2 || dv->act.kind != IR_ACT_NONE)
        return false;
    ir_tensor *d = dv->inputs[0];
    ir_node *sub = d->producer, *sq = owned_producer(g, dv->inputs[1], dv, IR_OP_SQRT);
    if (!sub || sub->dead || sub->op != IR_OP_SUB || sub->n_inputs != 2 || !sq)
        return false;
    ir_tensor *x = sub->inputs[0];
    ir_node *m1 = last_axis_mean(sub->inputs[1]);
    if (!m1 || m1->inputs[0] != x || opt_single_user(g, sub->inputs[1]) != sub || x->dtype != IR_F32 || x->rank < 1)
        return false;
    ir_node *ad = owned_producer(g, sq->inputs[0], sq, IR_OP_ADD);
    double eps;
    if (!ad || ad->n_inputs != 2)
        return false;
    int k = scalar(ad->inputs[1], &eps) ? 0 : scalar(ad->inputs[0], &eps) ? 1 : -1;
    ir_node *m2 = k < 0 ? NULL : last_axis_mean(ad->inputs[k]);
    if (!m2 || opt_single_user(g, ad->inputs[k]) != ad || !(eps >= 0.0))
        return false;
    ir_node *pw = m2->inputs[0]->producer;
    double e;
    bool sqr = pw && !pw->dead && opt_single_user(g, m2->inputs[0]) == m2 && pw->n_inputs == 2 &&
               ((pw->op == IR_OP_POW && pw->inputs[0] == d && scalar(pw->inputs[1], &e) && e == 2.0) ||
                (pw->op == IR_OP_MUL && pw->inputs[0] == d && pw->inputs[1] == d));
    if (!sqr || ir_use_count(g, d) != (pw->op == IR_OP_MUL ? 3 : 2) || !keep(m, m1) || !keep(m, sub) || !keep(m, pw) || !keep(m, m2) || !keep(m, ad) || !keep(m, sq))
        return false;
    *l = (ln_match){x, eps, dv, NULL, NULL};
    /* the affine tail: Mul by a constant, then Add of a constant */
    int64_t D = x->dims[x->rank - 1];
    for (int step = 0; step < 2; step++) {
        ir_op op = step ? IR_OP_ADD : IR_OP_MUL;
        ir_tensor *y = l->root->outputs[0];
        ir_node *u = opt_single_user(g, y);
        if (!u || u->op != op || u->n_inputs != 2 || u->act.kind != IR_ACT_NONE || u->n_outputs != 1)
            continue;
        ir_tensor *c = u->inputs[u->inputs[0] == y ? 1 : 0];
        int64_t nc = opt_is_const(c) && c->dtype == IR_F32 ? ir_tensor_numel(c) : 0;
        /* [D] or [1, .., D] or a scalar: one value per column */
        bool per_col = nc == 1 || (nc == D && c->rank >= 1 && c->dims[c->rank - 1] == D);
        if (!per_col || c->rank > x->rank || !ir_shape_equal(u->outputs[0], x))
            continue;
        if (!keep(m, l->root))
            return false;
        l->root = u;
        *(step ? &l->bias : &l->scale) = c;
    }
    return ir_shape_equal(l->root->outputs[0], x);
}

/* A [D] copy of c (numel D or 1), or of fill when c is NULL. */
static ir_tensor *row_const(ir_graph *g, const char *base, const char *what, const ir_tensor *c, int64_t D, float fill)
{
    ir_tensor *t = opt_const_new(g, base, what, IR_F32, 1, &D, NULL);
    if (!t)
        return NULL;
    float *o = t->data;
    const float *s = c ? c->data : NULL;
    for (int64_t j = 0; j < D; j++)
        o[j] = !s ? fill : ir_tensor_numel(c) == 1 ? s[0] : s[j];
    return t;
}

static void kill(match *m)
{
    for (int i = 0; i < m->n; i++)
        m->nodes[i]->dead = true;
}

static npu_status rewrite_ln(ir_graph *g, const ln_match *l, match *m, npu_err *err)
{
    ir_node *r = l->root;
    int64_t D = l->x->dims[l->x->rank - 1];
    ir_tensor *in[3] = {l->x, row_const(g, r->name, "ln_scale", l->scale, D, 1.0f),
                        row_const(g, r->name, "ln_bias", l->bias, D, 0.0f)};
    if (!in[1] || !in[2] || !opt_set_inputs(g, r, 3, in))
        return npu_fail(err, NPU_EINTERNAL, "fuse_norm: node '%s': out of memory", r->name);
    r->op = IR_OP_LAYER_NORM;
    r->attrs = NULL, r->n_attrs = 0;
    if (!ir_set_int(g, r, "axis", l->x->rank - 1) || !ir_set_float(g, r, "epsilon", (float)l->eps))
        return npu_fail(err, NPU_EINTERNAL, "fuse_norm: node '%s': out of memory", r->name);
    kill(m);
    return NPU_OK;
}

npu_status opt_fuse_norm(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    bool any = false;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        match m = {.n = 0};
        ln_match l;
        ir_tensor *x = NULL;
        int form;
        if (n->op == IR_OP_DIV && match_ln(g, n, &l, &m)) {
            npu_status st = rewrite_ln(g, &l, &m, err);
            if (st != NPU_OK)
                return st;
            any = true;
        } else if (n->op == IR_OP_MUL && (m.n = 0, form = match_gelu(g, n, &x, &m))) {
            if (!opt_set_inputs(g, n, 1, &x))
                return npu_fail(err, NPU_EINTERNAL, "fuse_norm: node '%s': out of memory", n->name);
            n->op = IR_OP_GELU;
            n->attrs = NULL, n->n_attrs = 0;
            if (form == 2 && !ir_set_string(g, n, "approximate", "tanh"))
                return npu_fail(err, NPU_EINTERNAL, "fuse_norm: node '%s': out of memory", n->name);
            kill(&m);
            any = true;
        }
    }
    if (any)
        ir_graph_compact(g);
    *changed = any;
    return NPU_OK;
}
