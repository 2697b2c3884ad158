/* fuse_norm (src/opt/fuse_norm.c): GELU and LayerNorm as PyTorch exports
 * them become Gelu and LayerNormalization; near misses stay as they are.
 * Values are checked against formulas evaluated here, not against the pass. */
#include "tests/support/opt_graphs.h"

typedef struct gb {
    ir_graph *g;
    int k; /* name counter */
} gb;

static gb mk(void)
{
    return (gb){graph(13), 0};
}

static ir_tensor *scalar(gb *b, float v)
{
    char name[32];
    snprintf(name, sizeof name, "c%d", b->k++);
    ir_tensor *t = ir_const_new(b->g, name, IR_F32, 0, (int64_t[]){0}, &v);
    cr_assert_not_null(t);
    return t;
}

/* op(a, b_or_NULL) with an output of a's shape (or `like`'s when given) */
static ir_tensor *op2(gb *b, ir_op op, ir_tensor *x, ir_tensor *y, const ir_tensor *like)
{
    char name[32];
    snprintf(name, sizeof name, "t%d", b->k++);
    const ir_tensor *s = like ? like : x;
    ir_tensor *out = ir_tensor_new(b->g, name, IR_F32, s->rank, s->dims);
    ir_tensor *in[2] = {x, y};
    cr_assert(out && ir_node_new(b->g, op, name, y ? 2 : 1, in, 1, &out));
    return out;
}

static ir_tensor *mean_last(gb *b, ir_tensor *x, int64_t axis)
{
    int64_t d[8];
    memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->rank);
    d[x->rank - 1] = 1;
    char name[32];
    snprintf(name, sizeof name, "m%d", b->k++);
    ir_tensor *out = ir_tensor_new(b->g, name, IR_F32, x->rank, d);
    ir_node *n = ir_node_new(b->g, IR_OP_REDUCE_MEAN, name, 1, &x, 1, &out);
    cr_assert(out && n && ir_set_ints(b->g, n, "axes", 1, &axis));
    return out;
}

static void fuse(ir_graph *g)
{
    npu_err e = {0};
    opt_options o = {.verify = true};
    bool changed;
    cr_assert_eq(opt_run_pass(g, "fuse_norm", &o, &changed, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(ir_graph_verify(g, &e), NPU_OK, "%s", e.msg);
}

static void run(ir_graph *g, const float *x, float *y)
{
    npu_err e = {0};
    ref_ctx *ctx = ref_ctx_new(g, npu_alloc_default(), &e);
    cr_assert_not_null(ctx, "%s", e.msg);
    const void *in[1] = {x};
    void *out[1] = {y};
    cr_assert_eq(ref_ctx_run(ctx, in, out, &e), NPU_OK, "%s", e.msg);
    ref_ctx_free(ctx);
}

/* ---- GELU ---- */

static const float xs[8] = {-3.0f, -1.0f, -0.5f, 0.0f, 0.25f, 1.0f, 2.0f, 4.0f};

static double gelu_erf(double x)
{
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static double gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

/* variant: 0 torch (Div, then (x*A)*0.5), 1 Mul by 1/sqrt2 and x*0.5 first, 2 0.5*(A*x); k_half, k_sqrt2 the constants */
static gb erf_gelu(int variant, float k_half, float k_sqrt2, bool leak)
{
    gb b = mk();
    ir_tensor *x = input(b.g, "x", SHP(1, 8));
    ir_tensor *u = variant == 1 ? op2(&b, IR_OP_MUL, x, scalar(&b, 1.0f / k_sqrt2), NULL)
                                : op2(&b, IR_OP_DIV, x, scalar(&b, k_sqrt2), NULL);
    ir_tensor *e = op2(&b, IR_OP_ERF, u, NULL, NULL);
    ir_tensor *a = op2(&b, IR_OP_ADD, e, scalar(&b, 1.0f), NULL);
    ir_tensor *y;
    if (variant == 0)
        y = op2(&b, IR_OP_MUL, op2(&b, IR_OP_MUL, x, a, NULL), scalar(&b, k_half), NULL);
    else if (variant == 1)
        y = op2(&b, IR_OP_MUL, op2(&b, IR_OP_MUL, x, scalar(&b, k_half), NULL), a, NULL);
    else
        y = op2(&b, IR_OP_MUL, scalar(&b, k_half), op2(&b, IR_OP_MUL, a, x, NULL), x);
    output(b.g, y);
    if (leak) /* an intermediate read outside the pattern */
        output(b.g, e);
    return b;
}

static void check_gelu(ir_graph *g, bool tanh_form)
{
    float y[8];
    run(g, xs, y);
    for (int i = 0; i < 8; i++) {
        double want = tanh_form ? gelu_tanh(xs[i]) : gelu_erf(xs[i]);
        cr_assert(fabs(y[i] - want) < 1e-6, "x=%g: %g, want %g", xs[i], y[i], want);
    }
}

Test(fuse_norm, gelu_erf_forms_become_one_gelu)
{
    for (int v = 0; v < 3; v++) {
        gb b = erf_gelu(v, 0.5f, 1.4142135381698608f, false);
        fuse(b.g);
        cr_assert_str_eq(ops(b.g), "Gelu", "variant %d", v);
        cr_assert_str_eq(ir_attr_string(b.g->nodes[0], "approximate", "none"), "none");
        cr_assert_str_eq(b.g->nodes[0]->outputs[0]->name, b.g->outputs[0]->name);
        check_gelu(b.g, false);
        ir_graph_free(b.g);
    }
}

Test(fuse_norm, gelu_erf_near_misses_stay)
{
    gb cases[] = {erf_gelu(0, 0.6f, 1.4142135f, false), erf_gelu(0, 0.5f, 1.5f, false),
                  erf_gelu(1, 0.5f, 1.4142135f, true)};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int before = cases[i].g->n_nodes;
        fuse(cases[i].g);
        cr_assert_eq(cases[i].g->n_nodes, before, "case %zu: %s", i, ops(cases[i].g));
        cr_assert(!strstr(ops(cases[i].g), "Gelu"));
        ir_graph_free(cases[i].g);
    }
}

/* torch's tanh GELU; cube: 0 x*(x*x), 1 Pow(x, 3); k_cubic the 0.044715 */
static gb tanh_gelu(int cube, float k_cubic, bool leak)
{
    gb b = mk();
    ir_tensor *x = input(b.g, "x", SHP(1, 8));
    ir_tensor *x3 = cube ? op2(&b, IR_OP_POW, x, scalar(&b, 3.0f), NULL)
                         : op2(&b, IR_OP_MUL, x, op2(&b, IR_OP_MUL, x, x, NULL), NULL);
    ir_tensor *inner = op2(&b, IR_OP_ADD, x, op2(&b, IR_OP_MUL, scalar(&b, k_cubic), x3, x), NULL);
    ir_tensor *t = op2(&b, IR_OP_TANH, op2(&b, IR_OP_MUL, scalar(&b, 0.7978845834732056f), inner, x), NULL, NULL);
    ir_tensor *a = op2(&b, IR_OP_ADD, scalar(&b, 1.0f), t, x);
    ir_tensor *y = op2(&b, IR_OP_MUL, scalar(&b, 0.5f), op2(&b, IR_OP_MUL, x, a, NULL), x);
    output(b.g, y);
    if (leak)
        output(b.g, inner);
    return b;
}

Test(fuse_norm, gelu_tanh_forms_become_one_gelu)
{
    for (int cube = 0; cube < 2; cube++) {
        gb b = tanh_gelu(cube, 0.044715f, false);
        fuse(b.g);
        cr_assert_str_eq(ops(b.g), "Gelu", "cube %d", cube);
        cr_assert_str_eq(ir_attr_string(b.g->nodes[0], "approximate", "none"), "tanh");
        check_gelu(b.g, true);
        ir_graph_free(b.g);
    }
}

Test(fuse_norm, gelu_tanh_near_misses_stay)
{
    gb cases[] = {tanh_gelu(0, 0.05f, false), tanh_gelu(1, 0.044715f, true)};
    for (size_t i = 0; i < 2; i++) {
        fuse(cases[i].g);
        cr_assert(!strstr(ops(cases[i].g), "Gelu"), "case %zu: %s", i, ops(cases[i].g));
        ir_graph_free(cases[i].g);
    }
}

/* ---- LayerNorm ---- */

typedef struct ln_opts {
    int64_t axis1, axis2; /* the two ReduceMean axes */
    bool mul_square;      /* d*d instead of Pow(d, 2) */
    bool affine;
    bool leak;            /* the variance is also a graph output */
} ln_opts;

static const float gam[4] = {1.0f, 0.5f, -2.0f, 0.25f}, bet[4] = {0.0f, 1.0f, -0.5f, 2.0f};

static gb ln_graph(ln_opts o)
{
    gb b = mk();
    ir_tensor *x = input(b.g, "x", SHP(1, 2, 4));
    ir_tensor *d = op2(&b, IR_OP_SUB, x, mean_last(&b, x, o.axis1), NULL);
    ir_tensor *p = o.mul_square ? op2(&b, IR_OP_MUL, d, d, NULL) : op2(&b, IR_OP_POW, d, scalar(&b, 2.0f), NULL);
    ir_tensor *v = mean_last(&b, p, o.axis2);
    ir_tensor *s = op2(&b, IR_OP_SQRT, op2(&b, IR_OP_ADD, v, scalar(&b, 1e-5f), NULL), NULL, NULL);
    ir_tensor *y = op2(&b, IR_OP_DIV, d, s, NULL);
    if (o.affine) {
        ir_tensor *gt = ir_const_new(b.g, "gamma", IR_F32, 1, (int64_t[]){4}, gam);
        ir_tensor *bt = ir_const_new(b.g, "beta", IR_F32, 1, (int64_t[]){4}, bet);
        y = op2(&b, IR_OP_ADD, op2(&b, IR_OP_MUL, y, gt, NULL), bt, NULL);
    }
    output(b.g, y);
    if (o.leak)
        output(b.g, v);
    return b;
}

static const float lnx[8] = {1.0f, 2.0f, 3.0f, 6.0f, -1.0f, -1.0f, 0.5f, 4.0f};

static void check_ln(ir_graph *g, bool affine)
{
    float y[8];
    run(g, lnx, y);
    for (int r = 0; r < 2; r++) {
        const float *x = lnx + 4 * r;
        double m = (x[0] + x[1] + x[2] + x[3]) / 4.0, v = 0;
        for (int j = 0; j < 4; j++)
            v += (x[j] - m) * (x[j] - m) / 4.0;
        for (int j = 0; j < 4; j++) {
            double z = (x[j] - m) / sqrt(v + 1e-5), want = affine ? z * gam[j] + bet[j] : z;
            cr_assert(fabs(y[4 * r + j] - want) < 1e-5, "row %d col %d: %g, want %g", r, j, y[4 * r + j], want);
        }
    }
}

Test(fuse_norm, decomposed_layernorm_becomes_one_node)
{
    ln_opts cases[] = {{-1, -1, false, true, false}, {2, -1, true, true, false}, {-1, 2, false, false, false}};
    for (size_t i = 0; i < 3; i++) {
        gb b = ln_graph(cases[i]);
        fuse(b.g);
        cr_assert_str_eq(ops(b.g), "LayerNormalization", "case %zu", i);
        ir_node *n = b.g->nodes[0];
        cr_assert_eq(ir_attr_int(n, "axis", 0), 2);
        cr_assert_float_eq(ir_attr_float(n, "epsilon", 0), 1e-5f, 1e-12f);
        cr_assert_eq(n->n_inputs, 3);
        check_ln(b.g, cases[i].affine);
        ir_graph_free(b.g);
    }
}

Test(fuse_norm, layernorm_near_misses_stay)
{
    /* a reduction over another axis; the variance read outside */
    ln_opts cases[] = {{1, -1, false, true, false}, {-1, 1, false, true, false}, {-1, -1, false, true, true}};
    for (size_t i = 0; i < 3; i++) {
        gb b = ln_graph(cases[i]);
        fuse(b.g);
        cr_assert(!strstr(ops(b.g), "LayerNormalization"), "case %zu: %s", i, ops(b.g));
        ir_graph_free(b.g);
    }
}

/* ---- fuse_hswish: Mul(x, HardSigmoid(x)) as PyTorch exports Hardswish at opset 13 ---- */

/* x * HardSigmoid(x) (gate first when swap), alpha/beta given; leak: the gate is an output too */
static gb hswish(float alpha, float beta, bool swap, bool leak)
{
    gb b = mk();
    ir_tensor *x = input(b.g, "x", SHP(1, 8));
    ir_tensor *h = op2(&b, IR_OP_HARD_SIGMOID, x, NULL, NULL);
    ir_node *hn = h->producer;
    cr_assert(ir_set_float(b.g, hn, "alpha", alpha) && ir_set_float(b.g, hn, "beta", beta));
    output(b.g, swap ? op2(&b, IR_OP_MUL, h, x, NULL) : op2(&b, IR_OP_MUL, x, h, NULL));
    if (leak)
        output(b.g, h);
    return b;
}

static void fuse_hs(ir_graph *g)
{
    npu_err e = {0};
    opt_options o = {.verify = true};
    bool changed;
    cr_assert_eq(opt_run_pass(g, "fuse_hswish", &o, &changed, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(ir_graph_verify(g, &e), NPU_OK, "%s", e.msg);
}

Test(fuse_hswish, mul_by_own_hardsigmoid_becomes_hardswish)
{
    for (int swap = 0; swap < 2; swap++) {
        gb b = hswish(1.0f / 6.0f, 0.5f, swap, false);
        fuse_hs(b.g);
        cr_assert_str_eq(ops(b.g), "HardSwish", "swap %d", swap);
        cr_assert_str_eq(b.g->nodes[0]->outputs[0]->name, b.g->outputs[0]->name);
        float y[8];
        run(b.g, xs, y);
        for (int i = 0; i < 8; i++) {
            double x = xs[i], want = x * fmin(1.0, fmax(0.0, x / 6.0 + 0.5));
            cr_assert(fabs(y[i] - want) < 1e-6, "x=%g: %g, want %g", x, y[i], want);
        }
        ir_graph_free(b.g);
    }
}

Test(fuse_hswish, near_misses_stay)
{
    gb cases[] = {hswish(0.2f, 0.5f, false, false), hswish(1.0f / 6.0f, 0.4f, false, false),
                  hswish(1.0f / 6.0f, 0.5f, false, true)};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fuse_hs(cases[i].g);
        cr_assert_str_eq(ops(cases[i].g), "HardSigmoid,Mul", "case %zu", i);
        ir_graph_free(cases[i].g);
    }
}
