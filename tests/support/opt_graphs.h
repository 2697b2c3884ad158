/* Building small graphs for the src/opt tests, inspecting them, and
 * comparing a graph's outputs before and after a rewrite through the
 * reference executor (tests/unit/test_opt*.c). */
#ifndef NPU_TESTS_OPT_GRAPHS_H
#define NPU_TESTS_OPT_GRAPHS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "opt/opt.h"
#include "ref/ref.h"

/* ---- building graphs ---- */

/* rank 0 with a dims pointer: a known scalar shape (NULL dims means unknown) */
#define SCALAR 0, (int64_t[]){0}
#define SHP(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

static inline ir_graph *graph(int opset)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    cr_assert_not_null(g);
    g->opset = opset;
    return g;
}

static inline void push(ir_graph *g, ir_tensor ***arr, int *n, ir_tensor *t)
{
    *arr = npu_arena_grow(g->arena, *arr, sizeof **arr * (size_t)*n, sizeof **arr * (size_t)(*n + 1));
    (*arr)[(*n)++] = t;
}

static inline ir_tensor *input(ir_graph *g, const char *name, int rank, const int64_t *dims)
{
    ir_tensor *t = ir_tensor_new(g, name, IR_F32, rank, dims);
    cr_assert_not_null(t);
    t->flags |= IR_TENSOR_INPUT;
    push(g, &g->inputs, &g->n_inputs, t);
    return t;
}

static inline void output(ir_graph *g, ir_tensor *t)
{
    t->flags |= IR_TENSOR_OUTPUT;
    push(g, &g->outputs, &g->n_outputs, t);
}

static inline ir_tensor *val(ir_graph *g, const char *name, int rank, const int64_t *dims)
{
    ir_tensor *t = ir_tensor_new(g, name, IR_F32, rank, dims);
    cr_assert_not_null(t);
    return t;
}

static uint32_t rng = 12345;
static inline float frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* An f32 constant: data, or random values in [-1, 1) when NULL. */
static inline ir_tensor *cf(ir_graph *g, const char *name, int rank, const int64_t *dims, const float *data)
{
    ir_tensor *t = ir_const_new(g, name, IR_F32, rank, dims, data);
    cr_assert_not_null(t);
    if (!data)
        for (int64_t i = 0; i < ir_tensor_numel(t); i++)
            ((float *)t->data)[i] = frand();
    return t;
}

static inline ir_tensor *ci(ir_graph *g, const char *name, int n, const int64_t *v)
{
    ir_tensor *t = ir_const_new(g, name, IR_I64, 1, (int64_t[]){n}, v);
    cr_assert_not_null(t);
    return t;
}

/* count, values: the same expansion, for an i64 constant's contents */
#define I64S(...) SHP(__VA_ARGS__)

/* node(g, op, name, out, n_in, in...) with one output */
static inline ir_node *node(ir_graph *g, ir_op op, const char *name, ir_tensor *out, int n_in, ...)
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
static inline const char *ops(const ir_graph *g)
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

static inline ir_node *find_op(const ir_graph *g, ir_op op)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead && g->nodes[i]->op == op)
            return g->nodes[i];
    return NULL;
}

/* t is still in the graph's tensor list (not dropped by compaction) */
static inline bool listed(const ir_graph *g, const ir_tensor *t)
{
    for (int i = 0; i < g->n_tensors; i++)
        if (g->tensors[i] == t)
            return true;
    return false;
}

static inline char *dump(const ir_graph *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ir_dump(g, f);
    fclose(f);
    return buf;
}

static inline bool pass(ir_graph *g, const char *name)
{
    npu_err e = {0};
    bool changed = false;
    opt_options o = {.verify = true};
    cr_assert_eq(opt_run_pass(g, name, &o, &changed, &e), NPU_OK, "%s: %s", name, e.msg);
    cr_assert_eq(ir_graph_verify(g, &e), NPU_OK, "after %s: %s", name, e.msg);
    return changed;
}

static inline void run_all(ir_graph *g)
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

static inline bool kernels_for(const ir_graph *g, const char **missing)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead && !ref_lookup_node(g->nodes[i])) {
            *missing = ir_op_name(g->nodes[i]->op);
            return false;
        }
    return true;
}

static inline void run_ref(const ir_graph *g, float *const *in, float **out)
{
    npu_err e = {0};
    ref_ctx *ctx = ref_ctx_new(g, npu_alloc_default(), &e);
    cr_assert_not_null(ctx, "%s", e.msg);
    for (int i = 0; i < g->n_outputs; i++)
        out[i] = calloc((size_t)ir_tensor_numel(g->outputs[i]), sizeof(float));
    cr_assert_eq(ref_ctx_run(ctx, (const void *const *)in, (void *const *)out, &e), NPU_OK, "%s", e.msg);
    ref_ctx_free(ctx);
}

static inline snapshot before(const ir_graph *g)
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
static inline void after(const ir_graph *g, snapshot *s)
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

#endif
