/* Graph rewrites (src/opt): elide_identity, constfold, dce, cse and the
 * views on small hand-built graphs, before and after; numbers checked
 * through the reference executor where a pass computes them. The other
 * passes: test_opt_fold.c, test_opt_pipeline.c. */
#include "tests/support/opt_graphs.h"

/* ---- elide_identity ---- */

/* x -> Neg -> a -> OP -> y (graph output) -> Relu -> z (graph output) */
typedef struct elide_case {
    const char *what;
    ir_op op;
    int in_rank, out_rank;
    int64_t in_dims[3], out_dims[3];
    const char *after; /* expected ops after the pass */
} elide_case;

static const elide_case elide_cases[] = {
    {"identity", IR_OP_IDENTITY, 3, 3, {2, 3, 4}, {2, 3, 4}, "Neg,Relu"},
    {"dropout", IR_OP_DROPOUT, 3, 3, {2, 3, 4}, {2, 3, 4}, "Neg,Relu"},
    {"reshape to the same shape", IR_OP_RESHAPE, 3, 3, {2, 3, 4}, {2, 3, 4}, "Neg,Relu"},
    {"flatten to the same shape", IR_OP_FLATTEN, 2, 2, {2, 12}, {2, 12}, "Neg,Relu"},
    {"squeeze of nothing", IR_OP_SQUEEZE, 2, 2, {2, 12}, {2, 12}, "Neg,Relu"},
    {"a real reshape stays", IR_OP_RESHAPE, 3, 2, {2, 3, 4}, {6, 4}, "Neg,Reshape,Relu"},
    {"a real flatten stays", IR_OP_FLATTEN, 3, 2, {2, 3, 4}, {2, 12}, "Neg,Flatten,Relu"},
};

Test(elide_identity, pass_through_nodes_go_and_outputs_keep_their_names)
{
    for (size_t c = 0; c < sizeof elide_cases / sizeof elide_cases[0]; c++) {
        const elide_case *k = &elide_cases[c];
        ir_graph *g = graph(13);
        ir_tensor *x = input(g, "x", k->in_rank, k->in_dims);
        ir_tensor *a = val(g, "a", k->in_rank, k->in_dims);
        ir_tensor *y = val(g, "y", k->out_rank, k->out_dims);
        ir_tensor *z = val(g, "z", k->out_rank, k->out_dims);
        node(g, IR_OP_NEG, "neg", a, 1, x);
        if (k->op == IR_OP_RESHAPE)
            node(g, k->op, "op", y, 2, a, ci(g, "shape", k->out_rank, k->out_dims));
        else
            node(g, k->op, "op", y, 1, a);
        node(g, IR_OP_RELU, "relu", z, 1, y);
        output(g, y);
        output(g, z);
        pass(g, "elide_identity");
        cr_assert_str_eq(ops(g), k->after, "%s: %s", k->what, ops(g));
        /* y is still the graph output, now written by Neg when OP went */
        cr_assert_eq(g->outputs[0], y, "%s", k->what);
        cr_assert_eq(find_op(g, IR_OP_RELU)->inputs[0], y, "%s", k->what);
        if (strcmp(k->after, "Neg,Relu") == 0)
            cr_assert_eq(y->producer, find_op(g, IR_OP_NEG), "%s", k->what);
        ir_graph_free(g);
    }
}

Test(elide_identity, inner_identity_rewires_readers)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(4));
    ir_tensor *a = val(g, "a", SHP(4)), *b = val(g, "b", SHP(4)), *y = val(g, "y", SHP(4));
    node(g, IR_OP_IDENTITY, "id1", a, 1, x);
    node(g, IR_OP_IDENTITY, "id2", b, 1, a);
    node(g, IR_OP_RELU, "relu", y, 1, b);
    output(g, y);
    cr_assert(pass(g, "elide_identity"));
    cr_assert_str_eq(ops(g), "Relu");
    cr_assert_eq(g->nodes[0]->inputs[0], x);
    cr_assert_not(listed(g, a), "a was dropped from the tensor list");
    cr_assert_not(pass(g, "elide_identity"), "a second run finds nothing");
    ir_graph_free(g);
}

Test(elide_identity, identity_from_input_to_output_stays)
{
    /* renaming would change a graph input or output: the node stays */
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(4));
    ir_tensor *y = val(g, "y", SHP(4));
    node(g, IR_OP_IDENTITY, "id", y, 1, x);
    output(g, y);
    cr_assert_not(pass(g, "elide_identity"));
    cr_assert_str_eq(ops(g), "Identity");
    ir_graph_free(g);
}

Test(elide_identity, dropout_with_used_mask_or_training_stays)
{
    for (int variant = 0; variant < 2; variant++) {
        ir_graph *g = graph(13);
        ir_tensor *x = input(g, "x", SHP(4));
        ir_tensor *a = val(g, "a", SHP(4)), *y = val(g, "y", SHP(4));
        ir_tensor *mask = ir_tensor_new(g, "mask", IR_BOOL, SHP(4));
        node(g, IR_OP_NEG, "neg", a, 1, x);
        ir_tensor *outs[2] = {y, mask};
        ir_tensor *ins[3] = {a, cf(g, "ratio", SCALAR, (float[]){0.5f}), NULL};
        if (variant == 1)
            ins[2] = ir_const_new(g, "train", IR_BOOL, SCALAR, (uint8_t[]){1});
        ir_node_new(g, IR_OP_DROPOUT, "drop", 3, ins, 2, outs);
        output(g, y);
        if (variant == 0)
            output(g, mask);
        cr_assert_not(pass(g, "elide_identity"), "variant %d", variant);
        cr_assert_str_eq(ops(g), "Neg,Dropout");
        ir_graph_free(g);
    }
}

Test(elide_identity, reshape_chain_collapses_to_one_explicit_reshape)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(2, 3, 4));
    ir_tensor *a = val(g, "a", SHP(2, 12)), *b = val(g, "b", SHP(3, 8)), *y = val(g, "y", SHP(3, 2, 4));
    node(g, IR_OP_FLATTEN, "flat", a, 1, x);
    node(g, IR_OP_RESHAPE, "r1", b, 2, a, ci(g, "s1", I64S(3, -1)));
    node(g, IR_OP_RESHAPE, "r2", y, 2, b, ci(g, "s2", I64S(0, 2, 4))); /* 0 copies b's 3, not x's 2 */
    output(g, y);
    snapshot s = before(g);
    cr_assert(pass(g, "elide_identity"));
    cr_assert_str_eq(ops(g), "Reshape");
    ir_node *r = g->nodes[0];
    cr_assert_eq(r->inputs[0], x);
    cr_assert_eq(r->inputs[1]->dtype, IR_I64);
    const int64_t *sv = r->inputs[1]->data;
    cr_assert(ir_tensor_numel(r->inputs[1]) == 3 && sv[0] == 3 && sv[1] == 2 && sv[2] == 4);
    after(g, &s);
    ir_graph_free(g);
}

/* ---- constfold ---- */

typedef struct shape_case {
    int64_t start, end; /* INT64_MIN: attribute absent */
    int len;
    int64_t want[4];
} shape_case;

Test(constfold, shape_folds_from_the_static_shape)
{
    static const shape_case cases[] = {
        {INT64_MIN, INT64_MIN, 4, {1, 3, 8, 9}},
        {1, INT64_MIN, 3, {3, 8, 9}},
        {-2, INT64_MIN, 2, {8, 9}},
        {1, -1, 2, {3, 8}},
        {0, 100, 4, {1, 3, 8, 9}}, /* clamped */
        {3, 1, 0, {0}},            /* empty */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const shape_case *k = &cases[c];
        ir_graph *g = graph(15);
        ir_tensor *x = input(g, "x", SHP(1, 3, 8, 9));
        ir_tensor *s = ir_tensor_new(g, "s", IR_I64, 1, (int64_t[]){k->len});
        ir_tensor *y = val(g, "y", SHP(1, 3, 8, 9));
        ir_node *sh = node(g, IR_OP_SHAPE, "shape", s, 1, x);
        if (k->start != INT64_MIN)
            ir_set_int(g, sh, "start", k->start);
        if (k->end != INT64_MIN)
            ir_set_int(g, sh, "end", k->end);
        node(g, IR_OP_ADD, "use", y, 2, x, x); /* x stays an activation */
        output(g, y);
        output(g, s);
        cr_assert(pass(g, "constfold"));
        cr_assert_str_eq(ops(g), "Add", "case %zu", c);
        cr_assert_null(s->producer);
        cr_assert_not_null(s->data);
        cr_assert_eq(ir_tensor_numel(s), k->len, "case %zu", c);
        for (int i = 0; i < k->len; i++)
            cr_assert_eq(((int64_t *)s->data)[i], k->want[i], "case %zu [%d]", c, i);
        ir_graph_free(g);
    }
}

Test(constfold, constant_node_becomes_a_constant)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(3));
    ir_tensor *c = val(g, "c", SHP(3)), *y = val(g, "y", SHP(3));
    ir_node *k = node(g, IR_OP_CONSTANT, "k", c, 0);
    ir_tensor value = {.name = "value", .dtype = IR_F32, .rank = 1, .dims = {3}, .shape_known = true,
                       .data = (float[]){1, 2, 3}};
    ir_set_tensor(g, k, "value", &value);
    node(g, IR_OP_MUL, "mul", y, 2, x, c);
    output(g, y);
    cr_assert(pass(g, "constfold"));
    cr_assert_str_eq(ops(g), "Mul");
    cr_assert_not_null(c->data);
    cr_assert_eq(((float *)c->data)[2], 3.0f);
    ir_graph_free(g);
}

Test(constfold, quantization_ops_and_activations_are_not_folded)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(4));
    ir_tensor *w = ir_const_new(g, "w", IR_I8, 1, (int64_t[]){4}, (int8_t[]){1, -2, 3, -4});
    ir_tensor *wf = val(g, "wf", SHP(4)), *y = val(g, "y", SHP(4));
    node(g, IR_OP_DEQUANTIZE_LINEAR, "dq", wf, 3, w, cf(g, "sc", SCALAR, (float[]){0.5f}),
         ir_const_new(g, "zp", IR_I8, SCALAR, (int8_t[]){0}));
    node(g, IR_OP_ADD, "add", y, 2, x, wf);
    output(g, y);
    cr_assert_not(pass(g, "constfold"));
    cr_assert_str_eq(ops(g), "DequantizeLinear,Add");
    ir_graph_free(g);
}

/* e = Expand(ones[1], [3]): 24 bytes from 16 bytes of inputs, so it grows
 * constant storage. Under a 16-byte limit it folds only when a shape
 * operand (a Reshape's shape) reads it. */
typedef struct grow_case {
    size_t limit;
    bool as_shape;
    bool folds;
} grow_case;

Test(constfold, growing_folds_respect_the_limit_unless_a_shape_needs_them)
{
    static const grow_case cases[] = {
        {16, false, false},
        {16, true, true},
        {0, false, true}, /* the default limit is far above 24 bytes */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const grow_case *k = &cases[c];
        ir_graph *g = graph(13);
        ir_tensor *e = ir_tensor_new(g, "e", IR_I64, SHP(3));
        node(g, IR_OP_EXPAND, "expand", e, 2, ci(g, "one", I64S(1)), ci(g, "to", I64S(3)));
        ir_tensor *y;
        if (k->as_shape) {
            ir_tensor *x = input(g, "x", SHP(1));
            y = val(g, "y", SHP(1, 1, 1));
            node(g, IR_OP_RESHAPE, "reshape", y, 2, x, e);
        } else {
            ir_tensor *xi = ir_tensor_new(g, "xi", IR_I64, SHP(3));
            xi->flags |= IR_TENSOR_INPUT;
            push(g, &g->inputs, &g->n_inputs, xi);
            y = ir_tensor_new(g, "y", IR_I64, SHP(3));
            node(g, IR_OP_ADD, "add", y, 2, xi, e);
        }
        output(g, y);
        opt_options o = {.verify = true, .fold_limit_bytes = k->limit};
        npu_err err = {0};
        bool changed = false;
        cr_assert_eq(opt_run_pass(g, "constfold", &o, &changed, &err), NPU_OK, "%s", err.msg);
        cr_assert_eq(changed, k->folds, "case %zu", c);
        cr_assert_eq(find_op(g, IR_OP_EXPAND) == NULL, k->folds, "case %zu: %s", c, ops(g));
        if (k->folds) {
            cr_assert_not_null(e->data);
            for (int i = 0; i < 3; i++)
                cr_assert_eq(((int64_t *)e->data)[i], 1);
        }
        ir_graph_free(g);
    }
}

static ir_tensor *i64_val(ir_graph *g, const char *name, int rank, const int64_t *dims)
{
    ir_tensor *t = ir_tensor_new(g, name, IR_I64, rank, dims);
    cr_assert_not_null(t);
    return t;
}

/* The PyTorch export of x.view(x.size(0), -1):
 *   s = Shape(x); n = Gather(s, 0); u = Unsqueeze(n, [0]);
 *   c = Concat(u, [-1]); y = Reshape(x, c) */
static ir_graph *view_chain(void)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(2, 3, 4));
    ir_tensor *s = i64_val(g, "s", SHP(3)), *n = i64_val(g, "n", SCALAR);
    ir_tensor *u = i64_val(g, "u", SHP(1)), *c = i64_val(g, "c", SHP(2));
    ir_tensor *y = val(g, "y", SHP(2, 12));
    node(g, IR_OP_SHAPE, "shape", s, 1, x);
    ir_tensor *zero = ir_const_new(g, "zero", IR_I64, SCALAR, (int64_t[]){0});
    ir_set_int(g, node(g, IR_OP_GATHER, "gather", n, 2, s, zero), "axis", 0);
    node(g, IR_OP_UNSQUEEZE, "unsq", u, 2, n, ci(g, "axes", I64S(0)));
    ir_set_int(g, node(g, IR_OP_CONCAT, "concat", c, 2, u, ci(g, "minus1", I64S(-1))), "axis", 0);
    node(g, IR_OP_RESHAPE, "view", y, 2, x, c);
    output(g, y);
    return g;
}

Test(constfold, pytorch_shape_chain_folds_to_the_reshape_operand)
{
    ir_graph *g = view_chain();
    pass(g, "constfold");
    pass(g, "dce");
    cr_assert_str_eq(ops(g), "Reshape");
    int64_t v[2];
    const ir_tensor *c = g->nodes[0]->inputs[1];
    cr_assert_eq(c, ir_graph_find(g, "c"), "the Concat's output became the constant");
    cr_assert(c->data && c->dtype == IR_I64 && ir_tensor_numel(c) == 2);
    memcpy(v, c->data, sizeof v);
    cr_assert(v[0] == 2 && v[1] == -1, "%ld,%ld", (long)v[0], (long)v[1]);
    ir_graph_free(g);
}

Test(pipeline, pytorch_view_ends_as_one_static_reshape)
{
    ir_graph *g = view_chain();
    ir_tensor *x = g->inputs[0];
    char *before_dump = dump(g);
    cr_assert(strstr(before_dump, "= Shape(%x:f32[2,3,4])"), "%s", before_dump);
    run_all(g);
    cr_assert_str_eq(ops(g), "Reshape");
    cr_assert_eq(g->nodes[0]->inputs[0], x);
    char *after_dump = dump(g);
    /* the dump shows small integer constants: the explicit shape is visible */
    cr_assert(strstr(after_dump, "= Reshape(%x:f32[2,3,4], %") && strstr(after_dump, ":i64[2]=2,12)"), "%s",
              after_dump);
    cr_assert_null(strstr(after_dump, "Shape("), "%s", after_dump);
    free(before_dump);
    free(after_dump);
    ir_graph_free(g);
}

Test(constfold, arithmetic_on_constants_is_evaluated)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(3));
    ir_tensor *a = cf(g, "a", SHP(3), (float[]){1, 2, 3}), *b = cf(g, "b", SHP(3), (float[]){10, 20, 30});
    ir_tensor *s = val(g, "s", SHP(3)), *y = val(g, "y", SHP(3));
    node(g, IR_OP_ADD, "sum", s, 2, a, b);
    node(g, IR_OP_MUL, "mul", y, 2, x, s);
    output(g, y);
    cr_assert(pass(g, "constfold"));
    cr_assert_str_eq(ops(g), "Mul");
    cr_assert_not_null(s->data);
    const float *v = s->data;
    cr_assert(v[0] == 11 && v[1] == 22 && v[2] == 33);
    cr_assert_not(listed(g, a), "inputs of the fold are dropped");
    ir_graph_free(g);
}

/* ---- dce ---- */

Test(dce, unused_branches_and_tensors_go)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(4));
    ir_tensor *a = val(g, "a", SHP(4)), *b = val(g, "b", SHP(4)), *c = val(g, "c", SHP(4));
    ir_tensor *y = val(g, "y", SHP(4));
    ir_tensor *w = cf(g, "w", SHP(4), NULL), *unused = cf(g, "unused", SHP(4), NULL);
    node(g, IR_OP_NEG, "neg", a, 1, x);
    node(g, IR_OP_MUL, "dead1", b, 2, a, w); /* b feeds only dead2 */
    node(g, IR_OP_EXP, "dead2", c, 1, b);
    node(g, IR_OP_RELU, "relu", y, 1, a);
    output(g, y);
    cr_assert(pass(g, "dce"));
    cr_assert_str_eq(ops(g), "Neg,Relu");
    cr_assert_not(listed(g, w) || listed(g, unused) || listed(g, b) || listed(g, c));
    cr_assert(listed(g, x) && listed(g, a) && listed(g, y));
    cr_assert_not(pass(g, "dce"));
    ir_graph_free(g);
}

Test(dce, a_node_with_one_used_output_stays)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(4));
    ir_tensor *p = val(g, "p", SHP(2)), *q = val(g, "q", SHP(2)), *y = val(g, "y", SHP(2));
    ir_tensor *outs[2] = {p, q};
    ir_node *split = ir_node_new(g, IR_OP_SPLIT, "split", 1, &x, 2, outs);
    ir_set_int(g, split, "axis", 0);
    node(g, IR_OP_RELU, "relu", y, 1, q);
    output(g, y);
    cr_assert_not(pass(g, "dce"));
    cr_assert_str_eq(ops(g), "Split,Relu");
    ir_graph_free(g);
}

/* ---- cse ---- */

Test(cse, equal_nodes_merge_and_chains_follow)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(4));
    ir_tensor *a1 = val(g, "a1", SHP(4)), *a2 = val(g, "a2", SHP(4));
    ir_tensor *b1 = val(g, "b1", SHP(4)), *b2 = val(g, "b2", SHP(4)), *y = val(g, "y", SHP(4));
    node(g, IR_OP_SIGMOID, "s1", a1, 1, x);
    node(g, IR_OP_SIGMOID, "s2", a2, 1, x);
    node(g, IR_OP_EXP, "e1", b1, 1, a1);
    node(g, IR_OP_EXP, "e2", b2, 1, a2); /* equal once s2 merged into s1 */
    node(g, IR_OP_SUB, "sub", y, 2, b1, b2);
    output(g, y);
    snapshot s = before(g);
    cr_assert(pass(g, "cse"));
    cr_assert_str_eq(ops(g), "Sigmoid,Exp,Sub");
    ir_node *sub = find_op(g, IR_OP_SUB);
    cr_assert_eq(sub->inputs[0], b1);
    cr_assert_eq(sub->inputs[1], b1);
    cr_assert_not(pass(g, "cse"));
    after(g, &s);
    ir_graph_free(g);
}

typedef struct cse_case {
    const char *what;
    ir_op op1, op2;
    bool swap;            /* second node reads (b, a) */
    int attr1, attr2;     /* "axis" values; 0: none */
    ir_act_kind act2;     /* fused activation of the second node */
    bool merges;
} cse_case;

Test(cse, what_counts_as_equal)
{
    static const cse_case cases[] = {
        {"same op and inputs", IR_OP_SUB, IR_OP_SUB, false, 0, 0, IR_ACT_NONE, true},
        {"Add commutes", IR_OP_ADD, IR_OP_ADD, true, 0, 0, IR_ACT_NONE, true},
        {"Mul commutes", IR_OP_MUL, IR_OP_MUL, true, 0, 0, IR_ACT_NONE, true},
        {"Sub does not", IR_OP_SUB, IR_OP_SUB, true, 0, 0, IR_ACT_NONE, false},
        {"different ops", IR_OP_ADD, IR_OP_SUB, false, 0, 0, IR_ACT_NONE, false},
        {"equal attributes", IR_OP_CONCAT, IR_OP_CONCAT, false, 1, 1, IR_ACT_NONE, true},
        {"different attributes", IR_OP_CONCAT, IR_OP_CONCAT, false, 1, 2, IR_ACT_NONE, false},
        {"different fused activation", IR_OP_ADD, IR_OP_ADD, false, 0, 0, IR_ACT_RELU, false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const cse_case *k = &cases[c];
        ir_graph *g = graph(13);
        bool concat = k->op1 == IR_OP_CONCAT;
        ir_tensor *a = input(g, "a", SHP(1, 2, 4)), *b = input(g, "b", SHP(1, 2, 4));
        int64_t od[3] = {1, 2, 4};
        if (concat)
            od[k->attr1] *= 2;
        ir_tensor *o1 = val(g, "o1", 3, od), *o2 = val(g, "o2", 3, od), *y = val(g, "y", 3, od);
        ir_node *n1 = node(g, k->op1, "n1", o1, 2, a, b);
        ir_node *n2 = k->swap ? node(g, k->op2, "n2", o2, 2, b, a) : node(g, k->op2, "n2", o2, 2, a, b);
        if (k->attr1) {
            ir_set_int(g, n1, "axis", k->attr1);
            ir_set_int(g, n2, "axis", k->attr2);
        }
        n2->act.kind = k->act2;
        node(g, IR_OP_MAX, "max", y, 2, o1, o2);
        output(g, y);
        cr_assert_eq(pass(g, "cse"), k->merges, "%s", k->what);
        cr_assert_eq(g->n_nodes, k->merges ? 2 : 3, "%s: %s", k->what, ops(g));
        ir_graph_free(g);
    }
}

Test(cse, attribute_order_does_not_matter)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(1, 1, 4, 4));
    ir_tensor *p1 = val(g, "p1", SHP(1, 1, 2, 2)), *p2 = val(g, "p2", SHP(1, 1, 2, 2));
    ir_tensor *y = val(g, "y", SHP(1, 1, 2, 2));
    ir_node *m1 = node(g, IR_OP_MAX_POOL, "m1", p1, 1, x), *m2 = node(g, IR_OP_MAX_POOL, "m2", p2, 1, x);
    ir_set_ints(g, m1, "kernel_shape", 2, (int64_t[]){2, 2});
    ir_set_ints(g, m1, "strides", 2, (int64_t[]){2, 2});
    ir_set_ints(g, m2, "strides", 2, (int64_t[]){2, 2});
    ir_set_ints(g, m2, "kernel_shape", 2, (int64_t[]){2, 2});
    node(g, IR_OP_ADD, "add", y, 2, p1, p2);
    output(g, y);
    cr_assert(pass(g, "cse"));
    cr_assert_str_eq(ops(g), "MaxPool,Add");
    ir_graph_free(g);
}

Test(cse, equal_constants_dedupe_so_their_readers_merge)
{
    /* two Unsqueeze(x, axes) whose axes are separate but equal constants,
     * as exporters emit them, and a third with different axes */
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(4));
    ir_tensor *u1 = val(g, "u1", SHP(1, 4)), *u2 = val(g, "u2", SHP(1, 4)), *u3 = val(g, "u3", SHP(4, 1));
    ir_tensor *ax1 = ci(g, "ax1", I64S(0)), *ax2 = ci(g, "ax2", I64S(0)), *ax3 = ci(g, "ax3", I64S(1));
    node(g, IR_OP_UNSQUEEZE, "n1", u1, 2, x, ax1);
    node(g, IR_OP_UNSQUEEZE, "n2", u2, 2, x, ax2);
    node(g, IR_OP_UNSQUEEZE, "n3", u3, 2, x, ax3);
    ir_tensor *s = val(g, "s", SHP(1, 4)), *y = val(g, "y", SHP(4, 4));
    node(g, IR_OP_ADD, "add", s, 2, u1, u2);
    node(g, IR_OP_MUL, "mul", y, 2, s, u3);
    output(g, y);
    cr_assert(pass(g, "cse"));
    cr_assert_str_eq(ops(g), "Unsqueeze,Unsqueeze,Add,Mul");
    cr_assert_not(listed(g, ax2));
    cr_assert(listed(g, ax1) && listed(g, ax3));
    ir_node *add = find_op(g, IR_OP_ADD);
    cr_assert_eq(add->inputs[0], add->inputs[1]);
    ir_graph_free(g);
}

Test(cse, a_duplicate_writing_a_graph_output_stays)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(4));
    ir_tensor *y1 = val(g, "y1", SHP(4)), *y2 = val(g, "y2", SHP(4));
    node(g, IR_OP_RELU, "r1", y1, 1, x);
    node(g, IR_OP_RELU, "r2", y2, 1, x);
    output(g, y1);
    output(g, y2);
    cr_assert_not(pass(g, "cse"));
    cr_assert_str_eq(ops(g), "Relu,Relu");
    cr_assert_str_eq(g->outputs[1]->name, "y2");
    ir_graph_free(g);
}

/* ---- views ---- */

typedef struct view_case {
    const char *what;
    ir_op op;
    int in_rank, out_rank;
    int64_t in_dims[4], out_dims[4];
    int64_t axes[2];   /* Squeeze/Unsqueeze axes (n_axes of them); Flatten axis in axes[0] */
    int n_axes;
    bool axes_input;   /* opset 13: axes as an input, else an attribute */
} view_case;

static const view_case view_cases[] = {
    {"flatten axis 1", IR_OP_FLATTEN, 4, 2, {2, 3, 4, 5}, {2, 60}, {1}, 1, false},
    {"flatten axis 0", IR_OP_FLATTEN, 3, 2, {2, 3, 4}, {1, 24}, {0}, 1, false},
    {"squeeze attribute", IR_OP_SQUEEZE, 4, 2, {1, 3, 1, 5}, {3, 5}, {0, 2}, 2, false},
    {"squeeze input", IR_OP_SQUEEZE, 3, 2, {3, 1, 5}, {3, 5}, {1}, 1, true},
    {"unsqueeze attribute", IR_OP_UNSQUEEZE, 2, 4, {3, 5}, {1, 3, 5, 1}, {0, 3}, 2, false},
    {"unsqueeze input", IR_OP_UNSQUEEZE, 2, 3, {3, 5}, {3, 1, 5}, {1}, 1, true},
    {"reshape with -1 and 0", IR_OP_RESHAPE, 3, 2, {2, 3, 4}, {2, 12}, {0, -1}, 2, true},
};

Test(views, reshape_likes_become_reshape_with_a_constant_shape)
{
    for (size_t c = 0; c < sizeof view_cases / sizeof view_cases[0]; c++) {
        const view_case *k = &view_cases[c];
        ir_graph *g = graph(k->axes_input ? 13 : 11);
        ir_tensor *x = input(g, "x", k->in_rank, k->in_dims);
        ir_tensor *a = val(g, "a", k->in_rank, k->in_dims), *y = val(g, "y", k->out_rank, k->out_dims);
        node(g, IR_OP_NEG, "neg", a, 1, x);
        ir_node *n = k->axes_input ? node(g, k->op, "v", y, 2, a, ci(g, "axes", k->n_axes, k->axes))
                                   : node(g, k->op, "v", y, 1, a);
        if (k->op == IR_OP_FLATTEN)
            ir_set_int(g, n, "axis", k->axes[0]);
        else if (!k->axes_input)
            ir_set_ints(g, n, "axes", k->n_axes, k->axes);
        output(g, y);
        snapshot s = before(g);
        s.what = k->what;
        cr_assert(pass(g, "views"), "%s", k->what);
        cr_assert_str_eq(ops(g), "Neg,Reshape", "%s", k->what);
        cr_assert_eq(n->op, IR_OP_RESHAPE);
        cr_assert_eq(n->n_attrs, 0, "%s", k->what);
        cr_assert_eq(n->n_inputs, 2);
        cr_assert_eq(n->inputs[0], a);
        const ir_tensor *shape = n->inputs[1];
        cr_assert(shape->data && shape->dtype == IR_I64 && ir_tensor_numel(shape) == k->out_rank, "%s", k->what);
        for (int i = 0; i < k->out_rank; i++)
            cr_assert_eq(((int64_t *)shape->data)[i], k->out_dims[i], "%s [%d]", k->what, i);
        cr_assert_not(pass(g, "views"), "%s: canonical already", k->what);
        after(g, &s);
        ir_graph_free(g);
    }
}

Test(views, chains_merge_into_one_view_of_the_source)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(2, 3, 4));
    ir_tensor *a = val(g, "a", SHP(2, 12)), *b = val(g, "b", SHP(1, 2, 12)), *c = val(g, "c", SHP(24));
    ir_tensor *y = val(g, "y", SHP(24)), *side = val(g, "side", SHP(1, 2, 12));
    node(g, IR_OP_FLATTEN, "flat", a, 1, x);
    node(g, IR_OP_UNSQUEEZE, "unsq", b, 2, a, ci(g, "axes", I64S(0)));
    node(g, IR_OP_RESHAPE, "r", c, 2, b, ci(g, "minus1", I64S(-1)));
    node(g, IR_OP_RELU, "relu", y, 1, c);
    node(g, IR_OP_SIGMOID, "sig", side, 1, b); /* b has another reader: unsq stays */
    output(g, y);
    output(g, side);
    snapshot s = before(g);
    cr_assert(pass(g, "views"));
    pass(g, "dce");
    cr_assert_str_eq(ops(g), "Reshape,Reshape,Relu,Sigmoid");
    ir_node *relu = find_op(g, IR_OP_RELU), *sig = find_op(g, IR_OP_SIGMOID);
    cr_assert_eq(relu->inputs[0]->producer->inputs[0], x, "the Relu's view reads x directly");
    cr_assert_eq(sig->inputs[0]->producer->inputs[0], x, "so does the Sigmoid's");
    after(g, &s);
    ir_graph_free(g);
}

Test(views, a_shape_computed_at_run_time_becomes_constant)
{
    ir_graph *g = graph(13);
    ir_tensor *x = input(g, "x", SHP(2, 6));
    ir_tensor *shp = ir_tensor_new(g, "shp", IR_I64, SHP(2));
    shp->flags |= IR_TENSOR_INPUT;
    push(g, &g->inputs, &g->n_inputs, shp);
    ir_tensor *y = val(g, "y", SHP(3, 4));
    node(g, IR_OP_RESHAPE, "r", y, 2, x, shp);
    output(g, y);
    cr_assert(pass(g, "views"));
    cr_assert(opt_pass_exists("views"));
    const ir_tensor *s = g->nodes[0]->inputs[1];
    cr_assert_neq(s, shp);
    cr_assert(s->data && ((int64_t *)s->data)[0] == 3 && ((int64_t *)s->data)[1] == 4);
    ir_graph_free(g);
}
