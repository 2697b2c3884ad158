/* Graph rewrites (src/opt): each pass on small hand-built graphs, before and
 * after; numbers checked through the reference executor where a pass
 * computes them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "opt/opt.h"
#include "ref/ref.h"

/* 1 once every kernel the numeric checks use is in main: a missing kernel
 * then fails the test instead of skipping its numeric half. */
#define KERNELS_REQUIRED 0

/* ---- building graphs ---- */

/* rank 0 with a dims pointer: a known scalar shape (NULL dims means unknown) */
#define SCALAR 0, (int64_t[]){0}
#define SHP(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

static ir_graph *graph(int opset)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    cr_assert_not_null(g);
    g->opset = opset;
    return g;
}

static void push(ir_graph *g, ir_tensor ***arr, int *n, ir_tensor *t)
{
    *arr = npu_arena_grow(g->arena, *arr, sizeof **arr * (size_t)*n, sizeof **arr * (size_t)(*n + 1));
    (*arr)[(*n)++] = t;
}

static ir_tensor *input(ir_graph *g, const char *name, int rank, const int64_t *dims)
{
    ir_tensor *t = ir_tensor_new(g, name, IR_F32, rank, dims);
    cr_assert_not_null(t);
    t->flags |= IR_TENSOR_INPUT;
    push(g, &g->inputs, &g->n_inputs, t);
    return t;
}

static void output(ir_graph *g, ir_tensor *t)
{
    t->flags |= IR_TENSOR_OUTPUT;
    push(g, &g->outputs, &g->n_outputs, t);
}

static ir_tensor *val(ir_graph *g, const char *name, int rank, const int64_t *dims)
{
    ir_tensor *t = ir_tensor_new(g, name, IR_F32, rank, dims);
    cr_assert_not_null(t);
    return t;
}

static uint32_t rng = 12345;
static float frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* An f32 constant: data, or random values in [-1, 1) when NULL. */
static ir_tensor *cf(ir_graph *g, const char *name, int rank, const int64_t *dims, const float *data)
{
    ir_tensor *t = ir_const_new(g, name, IR_F32, rank, dims, data);
    cr_assert_not_null(t);
    if (!data)
        for (int64_t i = 0; i < ir_tensor_numel(t); i++)
            ((float *)t->data)[i] = frand();
    return t;
}

static ir_tensor *ci(ir_graph *g, const char *name, int n, const int64_t *v)
{
    ir_tensor *t = ir_const_new(g, name, IR_I64, 1, (int64_t[]){n}, v);
    cr_assert_not_null(t);
    return t;
}

#define I64S(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

/* node(g, op, name, out, n_in, in...) with one output */
static ir_node *node(ir_graph *g, ir_op op, const char *name, ir_tensor *out, int n_in, ...)
{
    ir_tensor *in[8];
    va_list ap;
    va_start(ap, n_in);
    for (int i = 0; i < n_in; i++)
        in[i] = va_arg(ap, ir_tensor *);
    va_end(ap);
    ir_node *n = ir_node_new(g, op, name, n_in, in, 1, &out);
    cr_assert_not_null(n);
    return n;
}

/* ---- inspecting ---- */

/* "Conv,Relu": the live nodes' ops in order */
static const char *ops(const ir_graph *g)
{
    static char buf[512];
    buf[0] = '\0';
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead) {
            strcat(buf, buf[0] ? "," : "");
            strcat(buf, ir_op_name(g->nodes[i]->op));
        }
    return buf;
}

static ir_node *find_op(const ir_graph *g, ir_op op)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead && g->nodes[i]->op == op)
            return g->nodes[i];
    return NULL;
}

/* t is still in the graph's tensor list (not dropped by compaction) */
static bool listed(const ir_graph *g, const ir_tensor *t)
{
    for (int i = 0; i < g->n_tensors; i++)
        if (g->tensors[i] == t)
            return true;
    return false;
}

static char *dump(const ir_graph *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ir_dump(g, f);
    fclose(f);
    return buf;
}

static bool pass(ir_graph *g, const char *name)
{
    npu_err e = {0};
    bool changed = false;
    opt_options o = {.verify = true};
    cr_assert_eq(opt_run_pass(g, name, &o, &changed, &e), NPU_OK, "%s: %s", name, e.msg);
    cr_assert_eq(ir_graph_verify(g, &e), NPU_OK, "after %s: %s", name, e.msg);
    return changed;
}

static void run_all(ir_graph *g)
{
    npu_err e = {0};
    opt_options o = {.verify = true};
    cr_assert_eq(opt_run(g, &o, &e), NPU_OK, "%s", e.msg);
}

/* ---- numeric before/after through the reference executor ---- */

typedef struct snapshot {
    bool ok;          /* every node had a kernel */
    const char *missing;
    int n_in, n_out;
    float *in[4], *out[4];
} snapshot;

static bool kernels_for(const ir_graph *g, const char **missing)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead && !ref_lookup_node(g->nodes[i])) {
            *missing = ir_op_name(g->nodes[i]->op);
            return false;
        }
    return true;
}

static void run_ref(const ir_graph *g, float *const *in, float **out)
{
    npu_err e = {0};
    ref_ctx *ctx = ref_ctx_new(g, npu_alloc_default(), &e);
    cr_assert_not_null(ctx, "%s", e.msg);
    for (int i = 0; i < g->n_outputs; i++)
        out[i] = calloc((size_t)ir_tensor_numel(g->outputs[i]), sizeof(float));
    cr_assert_eq(ref_ctx_run(ctx, (const void *const *)in, (void *const *)out, &e), NPU_OK, "%s", e.msg);
    ref_ctx_free(ctx);
}

static snapshot before(const ir_graph *g)
{
    snapshot s = {.n_in = g->n_inputs, .n_out = g->n_outputs};
    s.ok = kernels_for(g, &s.missing);
    if (!s.ok)
        return s;
    for (int i = 0; i < g->n_inputs; i++) {
        int64_t n = ir_tensor_numel(g->inputs[i]);
        s.in[i] = malloc(sizeof(float) * (size_t)(n ? n : 1));
        for (int64_t k = 0; k < n; k++)
            s.in[i][k] = 2.0f * frand();
    }
    run_ref(g, s.in, s.out);
    return s;
}

/* Outputs unchanged within 1e-5 of the output's magnitude (elementwise
 * relative error means nothing next to a cancellation to zero). */
static void after(const ir_graph *g, snapshot *s)
{
    const char *missing = s->missing;
    if (s->ok && !kernels_for(g, &missing))
        s->ok = false;
    if (!s->ok) {
        if (KERNELS_REQUIRED)
            cr_assert_fail("no reference kernel for %s", missing);
        cr_skip_test("structure checked; numeric check waits for the %s kernel", missing);
    }
    float *out[4];
    run_ref(g, s->in, out);
    for (int i = 0; i < s->n_out; i++) {
        int64_t n = ir_tensor_numel(g->outputs[i]);
        float mag = 1e-3f;
        for (int64_t k = 0; k < n; k++)
            mag = fmaxf(mag, fabsf(s->out[i][k]));
        for (int64_t k = 0; k < n; k++)
            cr_assert(fabsf(out[i][k] - s->out[i][k]) <= 1e-5f * mag, "output %d[%ld]: %g before, %g after", i,
                      (long)k, (double)s->out[i][k], (double)out[i][k]);
        free(out[i]);
        free(s->out[i]);
    }
    for (int i = 0; i < s->n_in; i++)
        free(s->in[i]);
}

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
        if (k->folds && !ref_lookup(IR_OP_EXPAND)) {
            if (KERNELS_REQUIRED)
                cr_assert_fail("no Expand kernel");
            cr_skip_test("waits for the Expand kernel");
        }
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
    const ir_op need[] = {IR_OP_GATHER, IR_OP_UNSQUEEZE, IR_OP_CONCAT};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!ref_lookup(need[i])) {
            if (KERNELS_REQUIRED)
                cr_assert_fail("no %s kernel", ir_op_name(need[i]));
            cr_skip_test("waits for the %s kernel", ir_op_name(need[i]));
        }
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
    if (!ref_lookup(IR_OP_ADD)) {
        cr_assert_not(pass(g, "constfold"), "no kernel: nothing folds");
        if (KERNELS_REQUIRED)
            cr_assert_fail("no Add kernel");
        cr_skip_test("waits for the Add kernel");
    }
    cr_assert(pass(g, "constfold"));
    cr_assert_str_eq(ops(g), "Mul");
    cr_assert_not_null(s->data);
    const float *v = s->data;
    cr_assert(v[0] == 11 && v[1] == 22 && v[2] == 33);
    cr_assert_not(listed(g, a), "inputs of the fold are dropped");
    ir_graph_free(g);
}
