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
#include "target/target.h"
#include "tiler/tiler.h"

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

/* count, values: the same expansion, for an i64 constant's contents */
#define I64S(...) SHP(__VA_ARGS__)

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
    const char *what; /* the case, in failure messages */
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
    cr_assert(s->ok && kernels_for(g, &missing), "no reference kernel for %s", missing);
    float *out[4];
    run_ref(g, s->in, out);
    for (int i = 0; i < s->n_out; i++) {
        int64_t n = ir_tensor_numel(g->outputs[i]);
        float mag = 1e-3f;
        for (int64_t k = 0; k < n; k++)
            mag = fmaxf(mag, fabsf(s->out[i][k]));
        for (int64_t k = 0; k < n; k++)
            cr_assert(fabsf(out[i][k] - s->out[i][k]) <= 1e-5f * mag, "%s: output %d[%ld]: %g before, %g after",
                      s->what ? s->what : "", i, (long)k, (double)s->out[i][k], (double)out[i][k]);
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

/* ---- the pipeline ---- */

Test(pipeline, pass_names_in_order)
{
    static const char *const want[] = {"elide_identity", "constfold", "views", "cse", "dce", "fuse_norm", "fuse_hswish", "reduce_gap",
                                       "padfold", "bnfold", "bnconv", "fuse_act", "pool_concat"};
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
    cr_assert(strstr(e.msg, "unknown pass 'fold'") && strstr(e.msg, "bnfold, bnconv, fuse_act"), "%s", e.msg);
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
