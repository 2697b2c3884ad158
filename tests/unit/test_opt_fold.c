/* Graph rewrites (src/opt): bnfold, fuse_act, bnconv and padfold on small
 * hand-built graphs, before and after, numbers through the reference
 * executor. */
#include "tests/support/opt_graphs.h"

/* ---- bnfold ---- */

typedef struct bn_case {
    const char *what;
    ir_op op;
    int group;     /* Conv, ConvTranspose */
    bool bias;     /* Conv, ConvTranspose: has a bias */
    int trans_b;   /* Gemm */
    int c_rank;    /* Gemm C: -1 none, 0 scalar, 1 [N], 2 [M, N] */
    float beta;    /* Gemm */
} bn_case;

static const bn_case bn_cases[] = {
    {"conv with bias", IR_OP_CONV, 1, true, 0, 0, 0},
    {"conv without bias", IR_OP_CONV, 1, false, 0, 0, 0},
    {"grouped conv", IR_OP_CONV, 2, true, 0, 0, 0},
    {"depthwise conv", IR_OP_CONV, 4, false, 0, 0, 0},
    {"conv transpose, groups", IR_OP_CONV_TRANSPOSE, 2, true, 0, 0, 0},
    {"conv transpose", IR_OP_CONV_TRANSPOSE, 1, false, 0, 0, 0},
    {"gemm transB, C [N]", IR_OP_GEMM, 1, false, 1, 1, 1.0f},
    {"gemm, no C", IR_OP_GEMM, 1, false, 0, -1, 1.0f},
    {"gemm, scalar C, beta", IR_OP_GEMM, 1, false, 0, 0, 0.5f},
    {"gemm, C [M, N], beta", IR_OP_GEMM, 1, false, 1, 2, 2.0f},
};

/* x -> producer -> t -> BatchNormalization -> y; returns the producer */
static ir_node *bn_graph(ir_graph *g, const bn_case *k)
{
    ir_node *p;
    ir_tensor *t;
    int64_t ch = 4; /* output channels */
    if (k->op == IR_OP_GEMM) {
        ir_tensor *a = input(g, "x", SHP(3, 5));
        ir_tensor *w = k->trans_b ? cf(g, "w", SHP(4, 5), NULL) : cf(g, "w", SHP(5, 4), NULL);
        t = val(g, "t", SHP(3, 4));
        ir_tensor *c = k->c_rank < 0    ? NULL
                       : k->c_rank == 0 ? cf(g, "c", SCALAR, NULL)
                       : k->c_rank == 1 ? cf(g, "c", SHP(4), NULL)
                                        : cf(g, "c", SHP(3, 4), NULL);
        p = c ? node(g, IR_OP_GEMM, "gemm", t, 3, a, w, c) : node(g, IR_OP_GEMM, "gemm", t, 2, a, w);
        ir_set_int(g, p, "transB", k->trans_b);
        ir_set_float(g, p, "beta", k->beta);
        ir_set_float(g, p, "alpha", 0.75f);
    } else {
        bool tr = k->op == IR_OP_CONV_TRANSPOSE;
        ir_tensor *x = input(g, "x", SHP(1, 4, 5, 5));
        ir_tensor *w = tr ? cf(g, "w", SHP(4, ch / k->group, 2, 2), NULL)
                          : cf(g, "w", SHP(ch, 4 / k->group, 3, 3), NULL);
        t = tr ? val(g, "t", SHP(1, ch, 10, 10)) : val(g, "t", SHP(1, ch, 5, 5));
        ir_tensor *b = k->bias ? cf(g, "b", SHP(ch), NULL) : NULL;
        p = b ? node(g, k->op, "conv", t, 3, x, w, b) : node(g, k->op, "conv", t, 2, x, w);
        ir_set_ints(g, p, "kernel_shape", 2, tr ? (int64_t[]){2, 2} : (int64_t[]){3, 3});
        if (tr)
            ir_set_ints(g, p, "strides", 2, (int64_t[]){2, 2});
        else
            ir_set_ints(g, p, "pads", 4, (int64_t[]){1, 1, 1, 1});
        ir_set_int(g, p, "group", k->group);
    }
    float var[4];
    for (int i = 0; i < 4; i++)
        var[i] = fabsf(frand()) + 0.25f;
    ir_tensor *y = val(g, "y", t->rank, t->dims);
    ir_node *bn = node(g, IR_OP_BATCH_NORM, "bn", y, 5, t, cf(g, "scale", SHP(4), NULL),
                       cf(g, "beta", SHP(4), NULL), cf(g, "mean", SHP(4), NULL), cf(g, "var", SHP(4), var));
    ir_set_float(g, bn, "epsilon", 1e-3f);
    output(g, y);
    return p;
}

Test(bnfold, folds_into_conv_conv_transpose_and_gemm)
{
    for (size_t c = 0; c < sizeof bn_cases / sizeof bn_cases[0]; c++) {
        const bn_case *k = &bn_cases[c];
        ir_graph *g = graph(13);
        ir_node *p = bn_graph(g, k);
        ir_tensor *w = p->inputs[1];
        snapshot s = before(g);
        s.what = k->what;
        cr_assert(pass(g, "bnfold"), "%s", k->what);
        cr_assert_str_eq(ops(g), ir_op_name(k->op), "%s", k->what);
        cr_assert_str_eq(p->outputs[0]->name, "y", "%s: the BN's output name stays", k->what);
        cr_assert_eq(p->n_inputs, 3, "%s", k->what);
        cr_assert_not_null(p->inputs[2], "%s: a bias", k->what);
        cr_assert_neq(p->inputs[1], w, "%s: new weights, the old ones untouched", k->what);
        if (k->op == IR_OP_GEMM)
            cr_assert_eq(ir_attr_float(p, "beta", 0), 1.0f, "%s", k->what);
        after(g, &s);
        ir_graph_free(g);
    }
}

Test(bnfold, folded_values_by_hand)
{
    /* 1x1 conv, one channel: w 2, b 1; BN scale 3, B 0.5, mean 1, var 3,
     * eps 1: s = 3 / sqrt(4) = 1.5, w' = 3, b' = 1 * 1.5 + 0.5 - 1 * 1.5 = 0.5 */
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(1, 1, 2, 2));
    ir_tensor *t = val(g, "t", SHP(1, 1, 2, 2)), *y = val(g, "y", SHP(1, 1, 2, 2));
    ir_node *conv = node(g, IR_OP_CONV, "conv", t, 3, x, cf(g, "w", SHP(1, 1, 1, 1), (float[]){2}),
                         cf(g, "b", SHP(1), (float[]){1}));
    ir_node *bn = node(g, IR_OP_BATCH_NORM, "bn", y, 5, t, cf(g, "sc", SHP(1), (float[]){3}),
                       cf(g, "B", SHP(1), (float[]){0.5f}), cf(g, "m", SHP(1), (float[]){1}),
                       cf(g, "v", SHP(1), (float[]){3}));
    ir_set_float(g, bn, "epsilon", 1.0f);
    output(g, y);
    char *d0 = dump(g);
    cr_assert(strstr(d0, "= BatchNormalization(%t:f32[1,1,2,2]"), "%s", d0);
    cr_assert(pass(g, "bnfold"));
    char *d1 = dump(g);
    cr_assert_null(strstr(d1, "BatchNormalization"), "%s", d1);
    cr_assert(strstr(d1, "%y:f32[1,1,2,2] = Conv(%x:f32[1,1,2,2], %w_bnfold:f32[1,1,1,1]=3, %bn_bias:f32[1]=0.5)"),
              "%s", d1);
    cr_assert_eq(*(float *)conv->inputs[1]->data, 3.0f);
    cr_assert_eq(*(float *)conv->inputs[2]->data, 0.5f);
    free(d0);
    free(d1);
    ir_graph_free(g);
}

typedef enum bn_neg { BN_TWO_USERS, BN_FUSED_ACT, BN_MEAN_INPUT, BN_AFTER_POOL, BN_TRAINING, BN_NEG_COUNT } bn_neg;

Test(bnfold, what_does_not_fold)
{
    static const char *const what[] = {"conv output has two users", "conv has a fused activation",
                                       "mean is not constant", "producer is a pool", "training_mode"};
    for (int c = 0; c < BN_NEG_COUNT; c++) {
        ir_graph *g = graph(15);
        ir_tensor *x = input(g, "x", SHP(1, 2, 4, 4));
        ir_tensor *t = val(g, "t", SHP(1, 2, 4, 4)), *y = val(g, "y", SHP(1, 2, 4, 4));
        ir_node *p = c == BN_AFTER_POOL ? node(g, IR_OP_MAX_POOL, "pool", t, 1, x)
                                        : node(g, IR_OP_CONV, "conv", t, 2, x, cf(g, "w", SHP(2, 2, 1, 1), NULL));
        if (c == BN_AFTER_POOL)
            ir_set_ints(g, p, "kernel_shape", 2, (int64_t[]){1, 1});
        if (c == BN_FUSED_ACT)
            p->act.kind = IR_ACT_RELU;
        ir_tensor *mean = c == BN_MEAN_INPUT ? input(g, "mean", SHP(2)) : cf(g, "mean", SHP(2), NULL);
        ir_node *bn = node(g, IR_OP_BATCH_NORM, "bn", y, 5, t, cf(g, "s", SHP(2), NULL), cf(g, "B", SHP(2), NULL),
                           mean, cf(g, "v", SHP(2), (float[]){1, 2}));
        if (c == BN_TRAINING)
            ir_set_int(g, bn, "training_mode", 1);
        output(g, y);
        if (c == BN_TWO_USERS)
            output(g, t);
        cr_assert_not(pass(g, "bnfold"), "%s", what[c]);
        cr_assert_not_null(find_op(g, IR_OP_BATCH_NORM), "%s", what[c]);
        ir_graph_free(g);
    }
}

/* ---- fuse_act ---- */

/* x -> producer -> t: [1, 3, 4, 4] from x [1, 2, 4, 4] (Conv, ConvTranspose;
 * BatchNormalization keeps x's shape) or x [1, 1, 4, 4] (MatMul, Add,
 * broadcasting against a [1, 3, 4, 4] constant) */
static ir_node *producer(ir_graph *g, ir_op op, ir_tensor *t)
{
    bool bcast = op == IR_OP_MATMUL || op == IR_OP_ADD;
    ir_tensor *x = bcast ? input(g, "x", SHP(1, 1, 4, 4)) : input(g, "x", SHP(1, 2, 4, 4));
    ir_node *p = NULL;
    switch (op) {
    case IR_OP_CONV:
        p = node(g, op, "p", t, 3, x, cf(g, "w", SHP(3, 2, 3, 3), NULL), cf(g, "b", SHP(3), NULL));
        ir_set_ints(g, p, "kernel_shape", 2, (int64_t[]){3, 3});
        ir_set_ints(g, p, "pads", 4, (int64_t[]){1, 1, 1, 1});
        break;
    case IR_OP_CONV_TRANSPOSE:
        p = node(g, op, "p", t, 2, x, cf(g, "w", SHP(2, 3, 1, 1), NULL));
        ir_set_ints(g, p, "kernel_shape", 2, (int64_t[]){1, 1});
        break;
    case IR_OP_MATMUL:
        p = node(g, op, "p", t, 2, cf(g, "a", SHP(1, 3, 4, 4), NULL), x);
        break;
    case IR_OP_ADD: p = node(g, op, "p", t, 2, cf(g, "a", SHP(1, 3, 4, 4), NULL), x); break;
    case IR_OP_BATCH_NORM:
        p = node(g, op, "p", t, 5, x, cf(g, "s", SHP(2), NULL), cf(g, "B", SHP(2), NULL), cf(g, "m", SHP(2), NULL),
                 cf(g, "v", SHP(2), (float[]){0.5f, 2}));
        break;
    default: cr_assert_fail("no producer %s", ir_op_name(op));
    }
    return p;
}

Test(fuse_act, into_every_producer_that_carries_one)
{
    static const struct {
        ir_op op;
        int64_t dims[4];
    } prods[] = {
        {IR_OP_CONV, {1, 3, 4, 4}},
        {IR_OP_CONV_TRANSPOSE, {1, 3, 4, 4}},
        {IR_OP_ADD, {1, 3, 4, 4}},
        {IR_OP_BATCH_NORM, {1, 2, 4, 4}},
    };
    static const struct {
        const char *what;
        ir_op op;
        int opset;
        float lo, hi, alpha; /* Clip bounds (NAN: that bound absent), LeakyRelu alpha */
        ir_act want;
    } acts[] = {
        {"relu", IR_OP_RELU, 13, 0, 0, 0, {IR_ACT_RELU, 0, 0, 0}},
        {"relu6 (inputs)", IR_OP_CLIP, 13, 0, 6, 0, {IR_ACT_CLIP, 0, 6, 0}},
        {"clip max only", IR_OP_CLIP, 13, NAN, 6, 0, {IR_ACT_CLIP, -INFINITY, 6, 0}},
        {"clip (attributes, opset 10)", IR_OP_CLIP, 10, -1, 1, 0, {IR_ACT_CLIP, -1, 1, 0}},
        {"relu6 (inputs and attributes, as imported)", IR_OP_CLIP, 14, 0, 6, 0, {IR_ACT_CLIP, 0, 6, 0}},
        {"leaky relu", IR_OP_LEAKY_RELU, 13, 0, 0, 0.2f, {IR_ACT_LEAKY_RELU, 0, 0, 0.2f}},
    };
    for (size_t pi = 0; pi < sizeof prods / sizeof prods[0]; pi++)
        for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++) {
            ir_graph *g = graph(acts[ai].opset);
            ir_tensor *t = val(g, "t", 4, prods[pi].dims), *y = val(g, "y", 4, prods[pi].dims);
            ir_node *p = producer(g, prods[pi].op, t);
            ir_node *a;
            if (acts[ai].op == IR_OP_CLIP && acts[ai].opset >= 11) {
                ir_tensor *lo = isnan(acts[ai].lo) ? NULL : cf(g, "lo", SCALAR, &acts[ai].lo);
                a = node(g, IR_OP_CLIP, "act", y, 3, t, lo, cf(g, "hi", SCALAR, &acts[ai].hi));
                if (acts[ai].opset == 14) { /* shape inference mirrors constant bounds into attributes */
                    ir_set_float(g, a, "min", acts[ai].lo);
                    ir_set_float(g, a, "max", acts[ai].hi);
                }
            } else {
                a = node(g, acts[ai].op, "act", y, 1, t);
                if (acts[ai].op == IR_OP_CLIP) {
                    ir_set_float(g, a, "min", acts[ai].lo);
                    ir_set_float(g, a, "max", acts[ai].hi);
                }
                if (acts[ai].op == IR_OP_LEAKY_RELU)
                    ir_set_float(g, a, "alpha", acts[ai].alpha);
            }
            output(g, y);
            const char *what = acts[ai].what, *pname = ir_op_name(prods[pi].op);
            snapshot s = before(g);
            s.what = npu_arena_printf(g->arena, "%s into %s", what, pname);
            cr_assert(pass(g, "fuse_act"), "%s into %s", what, pname);
            cr_assert_str_eq(ops(g), pname, "%s into %s", what, pname);
            const ir_act *w = &acts[ai].want;
            cr_assert_eq(p->act.kind, w->kind, "%s into %s", what, pname);
            cr_assert(p->act.lo == w->lo && p->act.hi == w->hi && p->act.alpha == w->alpha,
                      "%s into %s: %g %g %g", what, pname, (double)p->act.lo, (double)p->act.hi,
                      (double)p->act.alpha);
            cr_assert_eq(p->outputs[0], y, "the activation's output name stays");
            after(g, &s);
            ir_graph_free(g);
        }
}

typedef struct stack_case {
    const char *what;
    ir_act first, second; /* as nodes: RELU, CLIP lo..hi, LEAKY alpha */
    bool both_fuse;
    ir_act want; /* the Conv's act at the end */
} stack_case;

static ir_node *act_node(ir_graph *g, const char *name, ir_act a, ir_tensor *in, ir_tensor *out)
{
    ir_node *n;
    switch (a.kind) {
    case IR_ACT_RELU: return node(g, IR_OP_RELU, name, out, 1, in);
    case IR_ACT_CLIP:
        return node(g, IR_OP_CLIP, name, out, 3, in, cf(g, npu_arena_printf(g->arena, "%s_lo", name), SCALAR, &a.lo),
                    cf(g, npu_arena_printf(g->arena, "%s_hi", name), SCALAR, &a.hi));
    case IR_ACT_LEAKY_RELU:
        n = node(g, IR_OP_LEAKY_RELU, name, out, 1, in);
        ir_set_float(g, n, "alpha", a.alpha);
        return n;
    default: cr_assert_fail("bad case"); return NULL;
    }
}

#define RELU {IR_ACT_RELU, 0, 0, 0}
#define CLIP(l, h) {IR_ACT_CLIP, l, h, 0}
#define LEAKY(a) {IR_ACT_LEAKY_RELU, 0, 0, a}

Test(fuse_act, stacked_activations_compose)
{
    static const stack_case cases[] = {
        {"relu, relu6", RELU, CLIP(0, 6), true, CLIP(0, 6)},
        {"relu6, relu", CLIP(0, 6), RELU, true, CLIP(0, 6)},
        {"relu, relu", RELU, RELU, true, RELU},
        {"clip -1..1, relu", CLIP(-1, 1), RELU, true, CLIP(0, 1)},
        {"leaky, relu", LEAKY(0.1f), RELU, true, RELU},
        {"relu, leaky", RELU, LEAKY(0.1f), true, RELU},
        {"leaky, leaky", LEAKY(0.5f), LEAKY(0.5f), true, LEAKY(0.25f)},
        {"clip 0..6, clip 2..10", CLIP(0, 6), CLIP(2, 10), true, CLIP(2, 6)},
        {"clip 0..1, clip 2..3 (disjoint)", CLIP(0, 1), CLIP(2, 3), true, CLIP(2, 2)},
        {"clip -1..1, leaky: no single act", CLIP(-1, 1), LEAKY(0.1f), false, CLIP(-1, 1)},
        {"leaky, clip -1..1: no single act", LEAKY(0.1f), CLIP(-1, 1), false, LEAKY(0.1f)},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const stack_case *k = &cases[c];
        ir_graph *g = graph(13);
        ir_tensor *t = val(g, "t", SHP(1, 3, 4, 4)), *u = val(g, "u", SHP(1, 3, 4, 4));
        ir_tensor *y = val(g, "y", SHP(1, 3, 4, 4));
        ir_node *p = producer(g, IR_OP_CONV, t);
        act_node(g, "a1", k->first, t, u);
        act_node(g, "a2", k->second, u, y);
        output(g, y);
        snapshot s = before(g);
        s.what = k->what;
        cr_assert(pass(g, "fuse_act"), "%s", k->what);
        cr_assert_eq(g->n_nodes, k->both_fuse ? 1 : 2, "%s: %s", k->what, ops(g));
        cr_assert_eq(p->act.kind, k->want.kind, "%s", k->what);
        cr_assert(p->act.lo == k->want.lo && p->act.hi == k->want.hi && p->act.alpha == k->want.alpha,
                  "%s: %g %g %g", k->what, (double)p->act.lo, (double)p->act.hi, (double)p->act.alpha);
        after(g, &s);
        ir_graph_free(g);
    }
}

typedef enum fuse_neg {
    FN_TWO_USERS,
    FN_OUTPUT_TOO,
    FN_MIN_INPUT,
    FN_MIN_ABOVE_MAX,
    FN_POOL,
    FN_MATMUL,
    FN_COUNT
} fuse_neg;

Test(fuse_act, what_does_not_fuse)
{
    static const char *const what[] = {"conv output read twice", "conv output is a graph output",
                                       "clip min is not constant", "clip min above max", "producer is a pool",
                                       "producer is a MatMul (its adapter ignores n->act)"};
    for (int c = 0; c < FN_COUNT; c++) {
        ir_graph *g = graph(13);
        ir_tensor *t = val(g, "t", SHP(1, 3, 4, 4)), *y = val(g, "y", SHP(1, 3, 4, 4));
        if (c == FN_POOL) {
            t = val(g, "tp", SHP(1, 2, 4, 4));
            y = val(g, "yp", SHP(1, 2, 4, 4));
            ir_node *pool = node(g, IR_OP_MAX_POOL, "pool", t, 1, input(g, "x", SHP(1, 2, 4, 4)));
            ir_set_ints(g, pool, "kernel_shape", 2, (int64_t[]){1, 1});
        } else {
            producer(g, c == FN_MATMUL ? IR_OP_MATMUL : IR_OP_CONV, t);
        }
        if (c == FN_MIN_INPUT) {
            ir_tensor *lo = input(g, "lo", SCALAR);
            node(g, IR_OP_CLIP, "clip", y, 3, t, lo, cf(g, "hi", SCALAR, (float[]){6}));
        } else if (c == FN_MIN_ABOVE_MAX) {
            node(g, IR_OP_CLIP, "clip", y, 3, t, cf(g, "lo", SCALAR, (float[]){6}), cf(g, "hi", SCALAR, (float[]){0}));
        } else {
            node(g, IR_OP_RELU, "relu", y, 1, t);
        }
        output(g, y);
        if (c == FN_TWO_USERS) {
            ir_tensor *z = val(g, "z", SHP(1, 3, 4, 4));
            node(g, IR_OP_SIGMOID, "sig", z, 1, t);
            output(g, z);
        }
        if (c == FN_OUTPUT_TOO)
            output(g, t);
        int before_n = g->n_nodes;
        cr_assert_not(pass(g, "fuse_act"), "%s", what[c]);
        cr_assert_eq(g->n_nodes, before_n, "%s", what[c]);
        cr_assert_eq(g->nodes[0]->act.kind, IR_ACT_NONE, "%s", what[c]);
        ir_graph_free(g);
    }
}

Test(fuse_act, dump_before_and_after)
{
    ir_graph *g = graph(13);
    ir_tensor *t = val(g, "t", SHP(1, 3, 4, 4)), *y = val(g, "y", SHP(1, 3, 4, 4));
    producer(g, IR_OP_CONV, t);
    node(g, IR_OP_RELU, "relu", y, 1, t);
    output(g, y);
    char *d0 = dump(g);
    cr_assert(strstr(d0, "%y:f32[1,3,4,4] = Relu(%t:f32[1,3,4,4])  # relu"), "%s", d0);
    pass(g, "fuse_act");
    char *d1 = dump(g);
    cr_assert(strstr(d1, "%y:f32[1,3,4,4] = Conv(%x:f32[1,2,4,4], %w:f32[3,2,3,3] const, %b:f32[3]="), "%s", d1);
    cr_assert(strstr(d1, "{kernel_shape=[3,3], pads=[1,1,1,1], act=relu(0,0,0)}  # p"), "%s", d1);
    cr_assert_null(strstr(d1, "Relu("), "%s", d1);
    free(d0);
    free(d1);
    ir_graph_free(g);
}

/* ---- gemm_bias ---- */

/* A Gemm's C of one value becomes a row of beta * C, one that varies by
 * row an Add after the Gemm (the Relu then fused into the Add): the same
 * values, and a C the quantizer folds (one value per output column). */
Test(gemm_bias, c_that_is_not_a_row_becomes_a_row_or_an_add)
{
    const int64_t cdims[3][2] = {{1, 1}, {3, 1}, {3, 4}};
    const char *want[3] = {"Gemm", "Gemm,Add", "Gemm,Add"};
    for (int k = 0; k < 3; k++) {
        ir_graph *g = graph(13);
        ir_tensor *a = input(g, "x", SHP(3, 5)), *t = val(g, "t", SHP(3, 4)), *y = val(g, "y", SHP(3, 4));
        ir_node *p = node(g, IR_OP_GEMM, "gemm", t, 3, a, cf(g, "w", SHP(5, 4), NULL), cf(g, "c", 2, cdims[k], NULL));
        ir_set_float(g, p, "alpha", 0.75f);
        ir_set_float(g, p, "beta", -1.5f);
        node(g, IR_OP_RELU, "relu", y, 1, t);
        output(g, y);
        snapshot s = before(g);
        run_all(g);
        cr_assert_str_eq(ops(g), want[k], "case %d: %s", k, ops(g));
        ir_node *gm = find_op(g, IR_OP_GEMM);
        if (k == 0) {
            cr_assert(gm->n_inputs == 3 && ir_tensor_numel(gm->inputs[2]) == 4, "case 0: C is a row of 4");
            cr_assert_float_eq(ir_attr_float(gm, "beta", 0), 1.0f, 0);
            cr_assert_eq(gm->act.kind, IR_ACT_RELU);
        } else {
            cr_assert(gm->n_inputs == 2 || !gm->inputs[2], "case %d: the Gemm keeps no C", k);
            cr_assert_eq(find_op(g, IR_OP_ADD)->act.kind, IR_ACT_RELU, "case %d: the Relu follows the sum", k);
        }
        after(g, &s);
        ir_graph_free(g);
    }
}

/* ---- bnconv ---- */

/* BN after a pool (rank 4), on a graph input (rank 3): each ends as a
 * depthwise 1x1 Conv computing the same values, the Relu fused into it. */
Test(bnconv, standalone_bn_becomes_a_depthwise_conv_with_the_same_values)
{
    for (int rank = 3; rank <= 4; rank++) {
        ir_graph *g = graph(15);
        int64_t d[4] = {1, 3, 4, 5};
        ir_tensor *x = input(g, "x", rank, d), *t = x;
        if (rank == 4) {
            t = val(g, "t", rank, d);
            ir_set_ints(g, node(g, IR_OP_MAX_POOL, "pool", t, 1, x), "kernel_shape", 2, (int64_t[]){1, 1});
        }
        ir_tensor *b = val(g, "b", rank, d), *y = val(g, "y", rank, d);
        node(g, IR_OP_BATCH_NORM, "bn", b, 5, t, cf(g, "s", SHP(3), (float[]){0.5f, -2, 3}), cf(g, "B", SHP(3), NULL),
             cf(g, "m", SHP(3), NULL), cf(g, "v", SHP(3), (float[]){0.5f, 1, 2}));
        node(g, IR_OP_RELU, "relu", y, 1, b);
        output(g, y);
        snapshot s = before(g);
        run_all(g);
        cr_assert_str_eq(ops(g), rank == 4 ? "MaxPool,Conv" : "Conv");
        ir_node *conv = find_op(g, IR_OP_CONV);
        cr_assert_eq(ir_attr_int(conv, "group", 0), 3);
        cr_assert_eq(conv->inputs[1]->rank, rank);
        cr_assert_eq(conv->inputs[1]->dims[0], 3);
        cr_assert_eq(conv->act.kind, IR_ACT_RELU);
        cr_assert_str_eq(conv->name, "bn");
        after(g, &s);
        ir_graph_free(g);
    }
}

Test(bnconv, what_stays_a_batchnorm)
{
    for (int c = 0; c < 2; c++) { /* a rank-2 input (no conv form); a non-constant mean */
        ir_graph *g = graph(15);
        int64_t d[4] = {2, 3, 4, 4};
        int rank = c == 0 ? 2 : 4;
        ir_tensor *x = input(g, "x", rank, d), *y = val(g, "y", rank, d);
        ir_tensor *mean = c == 1 ? input(g, "mean", SHP(3)) : cf(g, "m", SHP(3), NULL);
        node(g, IR_OP_BATCH_NORM, "bn", y, 5, x, cf(g, "s", SHP(3), NULL), cf(g, "B", SHP(3), NULL), mean,
             cf(g, "v", SHP(3), (float[]){1, 2, 3}));
        output(g, y);
        cr_assert_not(pass(g, "bnconv"), "case %d", c);
        cr_assert_not_null(find_op(g, IR_OP_BATCH_NORM));
        ir_graph_free(g);
    }
}

/* ---- padfold ---- */

/* x -> Pad(spatial, zeros) -> AveragePool 2x2 s2 (or Conv 3x3) -> y */
static ir_graph *pad_conv_pool_graph(bool conv, const int64_t *pads, float value, int64_t ceil_mode)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(1, 2, 5, 5));
    int64_t pd[4] = {1, 2, 5 + pads[2] + pads[6], 5 + pads[3] + pads[7]};
    ir_tensor *p = val(g, "p", 4, pd);
    node(g, IR_OP_PAD, "pad", p, 3, x, ci(g, "pads", 8, pads), cf(g, "v", SCALAR, &value));
    ir_node *m;
    int64_t od[4] = {1, conv ? 3 : 2, conv ? pd[2] - 2 : pd[2] / 2, conv ? pd[3] - 2 : pd[3] / 2};
    ir_tensor *y = val(g, "y", 4, od);
    if (conv) {
        m = node(g, IR_OP_CONV, "conv", y, 2, p, cf(g, "w", SHP(3, 2, 3, 3), NULL));
        ir_set_ints(g, m, "kernel_shape", 2, (int64_t[]){3, 3});
    } else {
        m = node(g, IR_OP_AVERAGE_POOL, "pool", y, 1, p);
        ir_set_ints(g, m, "kernel_shape", 2, (int64_t[]){2, 2});
        ir_set_ints(g, m, "strides", 2, (int64_t[]){2, 2});
        ir_set_int(g, m, "ceil_mode", ceil_mode);
    }
    output(g, y);
    return g;
}

Test(padfold, zero_pad_folds_into_conv_and_average_pool_with_the_same_values)
{
    static const int64_t pads[8] = {0, 0, 1, 0, 0, 0, 0, 1};
    for (int conv = 0; conv < 2; conv++) {
        ir_graph *g = pad_conv_pool_graph(conv, pads, 0.0f, 0);
        snapshot s = before(g);
        cr_assert(pass(g, "padfold"));
        cr_assert_str_eq(ops(g), conv ? "Conv" : "AveragePool");
        int64_t got[4];
        cr_assert_eq(ir_attr_ints(g->nodes[0], "pads", got, 4), 4);
        cr_assert(got[0] == 1 && got[1] == 0 && got[2] == 0 && got[3] == 1);
        if (!conv)
            cr_assert_eq(ir_attr_int(g->nodes[0], "count_include_pad", 0), 1);
        after(g, &s);
        ir_graph_free(g);
    }
}

Test(padfold, what_does_not_fold)
{
    static const int64_t spatial[8] = {0, 0, 1, 1, 0, 0, 1, 1}, chan[8] = {0, 1, 0, 0, 0, 0, 0, 0};
    static const int64_t wide[8] = {0, 0, 2, 0, 0, 0, 0, 0}; /* 2 >= the 2x2 pool's extent */
    ir_graph *g = pad_conv_pool_graph(false, spatial, 1.0f, 0);           /* a non-zero value */
    cr_assert_not(pass(g, "padfold"));
    ir_graph_free(g);
    g = pad_conv_pool_graph(false, spatial, 0.0f, 1); /* ceil_mode */
    cr_assert_not(pass(g, "padfold"));
    ir_graph_free(g);
    g = pad_conv_pool_graph(false, wide, 0.0f, 0);
    cr_assert_not(pass(g, "padfold"));
    ir_graph_free(g);
    g = graph(13); /* channel padding */
    ir_tensor *x = input(g, "x", SHP(1, 2, 4, 4)), *p = val(g, "p", SHP(1, 3, 4, 4)), *y = val(g, "y", SHP(1, 3, 2, 2));
    node(g, IR_OP_PAD, "pad", p, 2, x, ci(g, "pads", 8, chan));
    ir_set_ints(g, node(g, IR_OP_AVERAGE_POOL, "pool", y, 1, p), "kernel_shape", 2, (int64_t[]){2, 2});
    output(g, y);
    cr_assert_not(pass(g, "padfold"));
    cr_assert_not_null(find_op(g, IR_OP_PAD));
    ir_graph_free(g);
}
