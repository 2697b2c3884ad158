/* Graph rewrites (src/opt): the pipeline as a whole, reduce_gap,
 * padfold's pool cases, pool_concat and the target-dependent split_pool. */
#include "tests/support/opt_graphs.h"
#include "target/target.h"
#include "tiler/tiler.h"

/* ---- the pipeline ---- */

Test(pipeline, pass_names_in_order)
{
    static const char *const want[] = {"elide_identity", "constfold", "views", "cse", "dce", "fuse_norm", "fuse_hswish", "reduce_gap",
                                       "padfold", "bnfold", "bnconv", "gemm_bias", "fuse_act", "pool_concat"};
    const char *const *names = opt_pass_names();
    size_t i = 0;
    for (; names[i]; i++) {
        cr_assert(i < sizeof want / sizeof want[0]);
        cr_assert_str_eq(names[i], want[i]);
        cr_assert(opt_pass_exists(names[i]));
    }
    cr_assert_eq(i, sizeof want / sizeof want[0]);
    cr_assert_not(opt_pass_exists("fold"));
    cr_assert_not(opt_pass_exists(""));
}

/* x -> Conv -> BN -> Relu -> Identity -> Flatten -> Gemm -> Dropout -> y */
static ir_graph *small_net(npu_alloc alloc)
{
    ir_graph *g = ir_graph_new(alloc);
    cr_assert_not_null(g);
    g->opset = 13;
    ir_tensor *x = input(g, "x", SHP(1, 2, 4, 4));
    ir_tensor *t1 = val(g, "t1", SHP(1, 3, 4, 4)), *t2 = val(g, "t2", SHP(1, 3, 4, 4));
    ir_tensor *t3 = val(g, "t3", SHP(1, 3, 4, 4)), *t4 = val(g, "t4", SHP(1, 3, 4, 4));
    ir_tensor *t5 = val(g, "t5", SHP(1, 48)), *t6 = val(g, "t6", SHP(1, 5)), *y = val(g, "y", SHP(1, 5));
    ir_node *conv = node(g, IR_OP_CONV, "conv", t1, 2, x, cf(g, "w", SHP(3, 2, 3, 3), NULL));
    ir_set_ints(g, conv, "kernel_shape", 2, (int64_t[]){3, 3});
    ir_set_ints(g, conv, "pads", 4, (int64_t[]){1, 1, 1, 1});
    node(g, IR_OP_BATCH_NORM, "bn", t2, 5, t1, cf(g, "s", SHP(3), NULL), cf(g, "B", SHP(3), NULL),
         cf(g, "m", SHP(3), NULL), cf(g, "v", SHP(3), (float[]){0.5f, 1, 2}));
    node(g, IR_OP_RELU, "relu", t3, 1, t2);
    node(g, IR_OP_IDENTITY, "id", t4, 1, t3);
    node(g, IR_OP_FLATTEN, "flat", t5, 1, t4);
    ir_set_int(g, node(g, IR_OP_GEMM, "fc", t6, 3, t5, cf(g, "fw", SHP(5, 48), NULL), cf(g, "fb", SHP(5), NULL)),
               "transB", 1);
    node(g, IR_OP_DROPOUT, "drop", y, 1, t6);
    output(g, y);
    return g;
}

Test(pipeline, conv_bn_relu_net_ends_as_three_nodes)
{
    ir_graph *g = small_net(npu_alloc_default());
    snapshot s = before(g);
    run_all(g);
    cr_assert_str_eq(ops(g), "Conv,Reshape,Gemm");
    cr_assert_eq(g->nodes[0]->act.kind, IR_ACT_RELU);
    cr_assert_str_eq(g->outputs[0]->name, "y");
    cr_assert_eq(g->outputs[0]->producer, g->nodes[2]);
    after(g, &s);
    ir_graph_free(g);
}

typedef struct trace {
    int n;
    const char *names[64];
} trace;

static void record(void *ud, const char *name, const ir_graph *g)
{
    trace *t = ud;
    cr_assert_eq(ir_graph_verify(g, &(npu_err){0}), NPU_OK, "the callback sees a valid graph");
    if (t->n < 64)
        t->names[t->n++] = name;
}

Test(pipeline, disabled_passes_do_not_run_and_the_callback_sees_the_rest)
{
    ir_graph *g = small_net(npu_alloc_default());
    trace tr = {0};
    opt_options o = {.after_pass = record, .ud = &tr, .disable = "fuse_act,cse", .verify = true};
    npu_err e = {0};
    cr_assert_eq(opt_run(g, &o, &e), NPU_OK, "%s", e.msg);
    cr_assert_str_eq(ops(g), "Conv,Relu,Reshape,Gemm");
    /* the first round, in table order, then repeats only of passes that changed something */
    static const char *const first[] = {"elide_identity", "constfold", "views", "dce"};
    cr_assert_geq(tr.n, 5);
    for (int i = 0; i < 4; i++)
        cr_assert_str_eq(tr.names[i], first[i]);
    bool saw_bnfold = false;
    for (int i = 0; i < tr.n; i++) {
        cr_assert(strcmp(tr.names[i], "fuse_act") && strcmp(tr.names[i], "cse"), "%s ran", tr.names[i]);
        saw_bnfold |= strcmp(tr.names[i], "bnfold") == 0;
    }
    cr_assert(saw_bnfold);
    cr_assert_str_eq(tr.names[tr.n - 1], "pool_concat"); /* the last in table order */
    ir_graph_free(g);
}

Test(pipeline, unknown_pass_names_are_usage_errors)
{
    ir_graph *g = small_net(npu_alloc_default());
    npu_err e = {0};
    opt_options o = {.disable = "cse,fold"};
    cr_assert_eq(opt_run(g, &o, &e), NPU_EUSAGE);
    cr_assert(strstr(e.msg, "unknown pass 'fold'") && strstr(e.msg, "bnfold, bnconv, gemm_bias, fuse_act"), "%s", e.msg);
    cr_assert_str_eq(ops(g), "Conv,BatchNormalization,Relu,Identity,Flatten,Gemm,Dropout", "nothing ran");
    cr_assert_eq(opt_run_pass(g, "nope", NULL, NULL, &e), NPU_EUSAGE);
    cr_assert(strstr(e.msg, "unknown pass 'nope'"), "%s", e.msg);
    o.disable = ",,";
    cr_assert_eq(opt_run(g, &o, &e), NPU_OK, "empty names are ignored: %s", e.msg);
    ir_graph_free(g);
}

Test(pipeline, failing_allocations_never_crash_or_leak)
{
    bool completed = false;
    for (size_t k = 1; k < 400 && !completed; k++) {
        npu_alloc_counter c = {0};
        ir_graph *g = small_net(npu_alloc_counting(&c));
        c.fail_at = c.count + k;
        npu_err e = {0};
        npu_status st = opt_run(g, NULL, &e);
        cr_assert(st == NPU_OK || st == NPU_EINTERNAL, "allocation %zu: status %d (%s)", k, st, e.msg);
        completed = st == NPU_OK && c.count < c.fail_at;
        if (completed)
            cr_assert_str_eq(ops(g), "Conv,Reshape,Gemm");
        ir_graph_free(g);
        cr_assert_eq(c.live_bytes, 0, "leak when failing allocation %zu", k);
    }
    cr_assert(completed, "the pipeline finished within the allocations tried");
}

/* ---- reduce_gap ---- */

typedef struct gap_case {
    const char *what;
    int n_axes;
    int64_t axes[3];
    int keepdims;
    bool axes_input; /* opset 18: axes as a constant second input */
    const char *after;
} gap_case;

static const gap_case gap_cases[] = {
    {"axes [2,3], keepdims", 2, {2, 3}, 1, false, "GlobalAveragePool"},
    {"axes [-1,-2], keepdims", 2, {-1, -2}, 1, false, "GlobalAveragePool"},
    {"axes [2,3], no keepdims", 2, {2, 3}, 0, false, "GlobalAveragePool,Reshape"},
    {"axes as an input", 2, {3, 2}, 1, true, "GlobalAveragePool"},
    {"channel and H: not a pool", 2, {1, 2}, 1, false, "ReduceMean"},
    {"W alone: not a pool", 1, {3}, 1, false, "ReduceMean"},
    {"every axis: not a pool", 3, {1, 2, 3}, 1, false, "ReduceMean"},
};

Test(reduce_gap, spatial_means_become_global_average_pools)
{
    for (size_t c = 0; c < sizeof gap_cases / sizeof gap_cases[0]; c++) {
        const gap_case *k = &gap_cases[c];
        ir_graph *g = graph(k->axes_input ? 18 : 13);
        ir_tensor *x = input(g, "x", SHP(2, 3, 4, 5));
        int64_t dims[4] = {2, 3, 4, 5};
        for (int i = 0; i < k->n_axes; i++)
            dims[k->axes[i] < 0 ? k->axes[i] + 4 : k->axes[i]] = 1;
        ir_tensor *y = k->keepdims ? val(g, "y", 4, dims) : val(g, "y", SHP(2, 3));
        ir_node *r = k->axes_input ? node(g, IR_OP_REDUCE_MEAN, "mean", y, 2, x, ci(g, "axes", k->n_axes, k->axes))
                                   : node(g, IR_OP_REDUCE_MEAN, "mean", y, 1, x);
        if (!k->axes_input)
            ir_set_ints(g, r, "axes", k->n_axes, k->axes);
        ir_set_int(g, r, "keepdims", k->keepdims);
        output(g, y);
        snapshot s = before(g);
        s.what = k->what;
        bool changed = pass(g, "reduce_gap");
        cr_assert_str_eq(ops(g), k->after, "%s", k->what);
        cr_assert_eq(changed, strcmp(k->after, "ReduceMean") != 0, "%s", k->what);
        cr_assert_eq(g->outputs[0], y, "%s: the output keeps its tensor", k->what);
        after(g, &s);
        ir_graph_free(g);
    }
}

/* ---- padfold ---- */

typedef struct pad_case {
    const char *what;
    ir_op op;         /* the reader: Conv, AveragePool or MaxPool, 3x3, stride 1 */
    int64_t pads[8];  /* the Pad's, NCHW begins then ends */
    int value;        /* 0: absent, 1: 0.0, 2: 1.0, 3: -inf */
    int64_t own[4];   /* the reader's own pads */
    int cip;          /* AveragePool count_include_pad */
    bool other_reader;
    const char *after;
    int64_t merged[4]; /* the reader's pads after, when folded */
} pad_case;

static const pad_case pad_cases[] = {
    {"conv: into its own pads", IR_OP_CONV, {0, 0, 1, 1, 0, 0, 0, 1}, 1, {0, 0, 1, 0}, 0, false, "Conv", {1, 1, 1, 1}},
    {"conv, value absent", IR_OP_CONV, {0, 0, 2, 2, 0, 0, 2, 2}, 0, {0}, 0, false, "Conv", {2, 2, 2, 2}},
    {"avg pool counting pads", IR_OP_AVERAGE_POOL, {0, 0, 1, 1, 0, 0, 1, 1}, 1, {1, 0, 0, 0}, 1, false,
     "AveragePool", {2, 1, 1, 1}},
    {"avg pool, no pads of its own", IR_OP_AVERAGE_POOL, {0, 0, 1, 0, 0, 0, 1, 2}, 1, {0}, 0, false, "AveragePool",
     {1, 0, 1, 2}},
    {"max pool, -inf", IR_OP_MAX_POOL, {0, 0, 1, 1, 0, 0, 1, 1}, 3, {0}, 0, false, "MaxPool", {1, 1, 1, 1}},
    {"all-zero pads: an identity", IR_OP_MAX_POOL, {0}, 1, {1, 1, 1, 1}, 0, false, "MaxPool", {1, 1, 1, 1}},
    {"avg pool not counting its own pads", IR_OP_AVERAGE_POOL, {0, 0, 1, 1, 0, 0, 1, 1}, 1, {1, 1, 1, 1}, 0, false,
     "Pad,AveragePool", {0}},
    {"max pool, 0", IR_OP_MAX_POOL, {0, 0, 1, 1, 0, 0, 1, 1}, 1, {0}, 0, false, "Pad,MaxPool", {0}},
    {"conv, value 1", IR_OP_CONV, {0, 0, 1, 1, 0, 0, 1, 1}, 2, {0}, 0, false, "Pad,Conv", {0}},
    {"channels padded", IR_OP_CONV, {0, 1, 0, 0, 0, 0, 0, 0}, 1, {0}, 0, false, "Pad,Conv", {0}},
    {"past the kernel", IR_OP_CONV, {0, 0, 2, 0, 0, 0, 0, 0}, 1, {1, 0, 0, 0}, 0, false, "Pad,Conv", {0}},
    {"another reader", IR_OP_CONV, {0, 0, 1, 1, 0, 0, 1, 1}, 1, {0}, 0, true, "Pad,Conv,Relu", {0}},
};

static ir_graph *pad_graph(const pad_case *k, ir_node **reader)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(1, 2, 5, 5));
    int64_t pd[4], od[4];
    for (int i = 0; i < 4; i++)
        pd[i] = (i == 1 ? 2 : i == 0 ? 1 : 5) + k->pads[i] + k->pads[4 + i];
    ir_tensor *p = val(g, "p", 4, pd), *in[3] = {x, ci(g, "pads", 8, k->pads), NULL};
    static const float values[4] = {0, 0.0f, 1.0f, -INFINITY};
    if (k->value)
        in[2] = cf(g, "v", SCALAR, &values[k->value]);
    cr_assert_not_null(ir_node_new(g, IR_OP_PAD, "pad", k->value ? 3 : 2, in, 1, &p));
    ir_set_string(g, g->nodes[0], "mode", "constant");
    od[0] = 1, od[1] = k->op == IR_OP_CONV ? 3 : pd[1];
    od[2] = pd[2] + k->own[0] + k->own[2] - 2, od[3] = pd[3] + k->own[1] + k->own[3] - 2;
    ir_tensor *y = val(g, "y", 4, od);
    *reader = k->op == IR_OP_CONV ? node(g, IR_OP_CONV, "r", y, 2, p, cf(g, "w", SHP(3, pd[1], 3, 3), NULL))
                                  : node(g, k->op, "r", y, 1, p);
    ir_set_ints(g, *reader, "kernel_shape", 2, (int64_t[]){3, 3});
    ir_set_ints(g, *reader, "pads", 4, k->own);
    if (k->op == IR_OP_AVERAGE_POOL)
        ir_set_int(g, *reader, "count_include_pad", k->cip);
    output(g, y);
    if (k->other_reader) {
        ir_tensor *z = val(g, "z", 4, pd);
        node(g, IR_OP_RELU, "relu", z, 1, p);
        output(g, z);
    }
    return g;
}

Test(padfold, zero_pads_join_the_window_ops_own)
{
    for (size_t c = 0; c < sizeof pad_cases / sizeof pad_cases[0]; c++) {
        const pad_case *k = &pad_cases[c];
        ir_node *r;
        ir_graph *g = pad_graph(k, &r);
        snapshot s = before(g);
        s.what = k->what;
        bool folded = strstr(k->after, "Pad") == NULL;
        cr_assert_eq(pass(g, "padfold"), folded, "%s", k->what);
        cr_assert_str_eq(ops(g), k->after, "%s", k->what);
        if (folded) {
            int64_t got[4] = {-1, -1, -1, -1};
            cr_assert_eq(ir_attr_ints(r, "pads", got, 4), 4, "%s", k->what);
            for (int i = 0; i < 4; i++)
                cr_assert_eq(got[i], k->merged[i], "%s: pads[%d]", k->what, i);
            cr_assert_eq(r->inputs[0], g->inputs[0], "%s: reads the Pad's input", k->what);
            if (k->op == IR_OP_AVERAGE_POOL)
                cr_assert_eq(ir_attr_int(r, "count_include_pad", 0), 1, "%s", k->what);
        }
        after(g, &s);
        ir_graph_free(g);
    }
}

/* ---- pool_concat ---- */

/* x -> conv a (3 channels), conv b (5 channels) -> Concat -> MaxPool 3x3/2 (ceil) -> y; extra: a second
 * reader of the concat */
static ir_graph *fire_graph(bool extra)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(1, 4, 9, 9));
    ir_tensor *a = val(g, "a", SHP(1, 3, 9, 9)), *b = val(g, "b", SHP(1, 5, 9, 9)), *c = val(g, "c", SHP(1, 8, 9, 9));
    ir_tensor *y = val(g, "y", SHP(1, 8, 4, 4));
    node(g, IR_OP_CONV, "ca", a, 2, x, cf(g, "wa", SHP(3, 4, 1, 1), NULL));
    node(g, IR_OP_CONV, "cb", b, 2, x, cf(g, "wb", SHP(5, 4, 1, 1), NULL));
    ir_set_int(g, node(g, IR_OP_CONCAT, "cat", c, 2, a, b), "axis", 1);
    ir_node *p = node(g, IR_OP_MAX_POOL, "pool", y, 1, c);
    ir_set_ints(g, p, "kernel_shape", 2, (int64_t[]){3, 3});
    ir_set_ints(g, p, "strides", 2, (int64_t[]){2, 2});
    ir_set_int(g, p, "ceil_mode", 0);
    output(g, y);
    if (extra) {
        ir_tensor *z = val(g, "z", SHP(1, 8, 9, 9));
        node(g, IR_OP_RELU, "relu", z, 1, c);
        output(g, z);
    }
    return g;
}

Test(pool_concat, each_concat_input_gets_its_pool_right_after_its_producer)
{
    ir_graph *g = fire_graph(false);
    snapshot s = before(g);
    cr_assert(pass(g, "pool_concat"));
    cr_assert_str_eq(ops(g), "Conv,MaxPool,Conv,MaxPool,Concat");
    const ir_node *cat = find_op(g, IR_OP_CONCAT);
    cr_assert_str_eq(cat->outputs[0]->name, "y", "the concat writes the pool's output");
    for (int i = 0; i < 2; i++) {
        const ir_tensor *p = cat->inputs[i];
        cr_assert_eq(p->producer->op, IR_OP_MAX_POOL);
        cr_assert(p->dims[1] == (i ? 5 : 3) && p->dims[2] == 4 && p->dims[3] == 4);
        cr_assert_eq(ir_attr_int(p->producer, "ceil_mode", 1), 0, "attributes copied");
    }
    after(g, &s);
    ir_graph_free(g);
}

Test(pool_concat, what_stays)
{
    ir_graph *g = fire_graph(true); /* the concat has another reader */
    cr_assert_not(pass(g, "pool_concat"));
    ir_graph_free(g);
    g = fire_graph(false); /* an average pool mixes nothing across channels either, but rounds: not rewritten */
    find_op(g, IR_OP_MAX_POOL)->op = IR_OP_AVERAGE_POOL;
    cr_assert_not(pass(g, "pool_concat"));
    ir_graph_free(g);
    g = fire_graph(false); /* a concat along H */
    ir_set_int(g, find_op(g, IR_OP_CONCAT), "axis", 2);
    cr_assert_not(pass(g, "pool_concat"));
    ir_graph_free(g);
}

/* ---- split_pool (target-dependent: the driver runs it with tile_avgpool_ok) ---- */

/* edge-v1's pool, by hand: windows of at most 4096 elements and 256 per side, strides up to 8 */
static bool divider_4096(void *ud, int64_t kh, int64_t kw, int64_t sh, int64_t sw)
{
    (void)ud;
    return kh * kw <= 4096 && kh <= 256 && kw <= 256 && sh <= 8 && sw <= 8;
}

static ir_graph *gap_graph(int64_t h, int64_t w)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(1, 3, h, w)), *y = val(g, "y", SHP(1, 3, 1, 1));
    node(g, IR_OP_GLOBAL_AVERAGE_POOL, "gap", y, 1, x);
    output(g, y);
    return g;
}

Test(split_pool, a_global_pool_past_the_divider_becomes_block_means_then_their_mean)
{
    ir_graph *g = gap_graph(96, 72);
    snapshot s = before(g);
    npu_err e = {0};
    bool changed = false;
    cr_assert_eq(opt_split_pool(g, divider_4096, NULL, &changed, &e), NPU_OK, "%s", e.msg);
    cr_assert(changed);
    cr_assert_str_eq(ops(g), "AveragePool,GlobalAveragePool");
    const ir_node *p = find_op(g, IR_OP_AVERAGE_POOL);
    int64_t k[2], st[2];
    cr_assert_eq(ir_attr_ints(p, "kernel_shape", k, 2), 2);
    cr_assert_eq(ir_attr_ints(p, "strides", st, 2), 2);
    /* the largest block both halves take: 8x8 (strides stop at 8), then a 12x9 global pool */
    cr_assert(k[0] == 8 && k[1] == 8 && st[0] == 8 && st[1] == 8, "%lldx%lld /%lldx%lld", (long long)k[0],
              (long long)k[1], (long long)st[0], (long long)st[1]);
    cr_assert(p->outputs[0]->dims[2] == 12 && p->outputs[0]->dims[3] == 9);
    cr_assert_eq(find_op(g, IR_OP_GLOBAL_AVERAGE_POOL)->inputs[0], p->outputs[0]);
    cr_assert_eq(ir_graph_verify(g, &e), NPU_OK, "%s", e.msg);
    after(g, &s); /* the mean of equal blocks' means is the mean */
    ir_graph_free(g);
}

Test(split_pool, what_stays)
{
    npu_err e = {0};
    bool changed = true;
    ir_graph *g = gap_graph(64, 64); /* 4096: the pool takes it whole */
    cr_assert_eq(opt_split_pool(g, divider_4096, NULL, &changed, &e), NPU_OK);
    cr_assert_not(changed);
    cr_assert_str_eq(ops(g), "GlobalAveragePool");
    ir_graph_free(g);
    g = gap_graph(97, 89); /* primes: no equal blocks; the host pools it */
    cr_assert_eq(opt_split_pool(g, divider_4096, NULL, &changed, &e), NPU_OK);
    cr_assert_not(changed);
    cr_assert_str_eq(ops(g), "GlobalAveragePool");
    ir_graph_free(g);
    g = gap_graph(2, (int64_t)1 << 40); /* hostile: no split either half takes, found without 2^40 tries */
    cr_assert_eq(opt_split_pool(g, divider_4096, NULL, &changed, &e), NPU_OK);
    cr_assert_not(changed);
    ir_graph_free(g);
}

/* A pre-quantized model's pool between DequantizeLinear and QuantizeLinear
 * becomes the integer pool with the model's own parameters; block means
 * would add a rounding the model does not have (a random QDQ model on
 * edge-v1-narrow then failed to compile: the blocks read the float DQ). */
Test(split_pool, a_pool_reading_a_dequantize_is_left_whole)
{
    ir_graph *g = graph(13);
    ir_tensor *q = input(g, "q", SHP(1, 3, 96, 72));
    q->dtype = IR_I8;
    ir_tensor *x = val(g, "x", SHP(1, 3, 96, 72)), *y = val(g, "y", SHP(1, 3, 1, 1));
    node(g, IR_OP_DEQUANTIZE_LINEAR, "dq", x, 3, q, cf(g, "sc", SCALAR, (float[]){0.5f}),
         ir_const_new(g, "zp", IR_I8, SCALAR, (int8_t[]){0}));
    node(g, IR_OP_GLOBAL_AVERAGE_POOL, "gap", y, 1, x);
    output(g, y);
    npu_err e = {0};
    bool changed = true;
    cr_assert_eq(opt_split_pool(g, divider_4096, NULL, &changed, &e), NPU_OK, "%s", e.msg);
    cr_assert_not(changed);
    cr_assert_str_eq(ops(g), "DequantizeLinear,GlobalAveragePool");
    ir_graph_free(g);
}

Test(split_pool, edge_v1_takes_the_halves_not_the_whole)
{
    tgt_target *t = NULL;
    npu_err e = {0};
    tgt_opts o = {.alloc = npu_alloc_default()};
    cr_assert_eq(tgt_load("targets/edge-v1.yaml", &o, &t, &e), NPU_OK, "%s", e.msg);
    cr_assert_not(tile_avgpool_ok(t, 112, 112, 1, 1), "past the target's 4096-element divider");
    cr_assert(tile_avgpool_ok(t, 64, 64, 1, 1));
    cr_assert(tile_avgpool_ok(t, 8, 8, 8, 8));
    cr_assert_not(tile_avgpool_ok(t, 16, 16, 16, 16), "the sh field stops at 8");
    ir_graph *g = gap_graph(112, 112);
    bool changed = false;
    cr_assert_eq(opt_split_pool(g, tile_avgpool_ok, t, &changed, &e), NPU_OK, "%s", e.msg);
    cr_assert(changed);
    cr_assert_eq(find_op(g, IR_OP_AVERAGE_POOL)->outputs[0]->dims[2], 14);
    ir_graph_free(g);
    tgt_free(t);
}
