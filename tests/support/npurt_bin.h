/* Test helpers of libnpurt (tests/unit/test_npurt*.c): small quantized IR
 * graphs, an all-host .npub assembler over emit_host_step (a tensor table
 * from the graph: constants in CONSTANTS, graph inputs/outputs in their
 * regions, the rest in the arena), runtime environments, the reference
 * output, and the firmware run through FW_CMD_RUN_NPUB on the simulator. */
#ifndef TESTS_NPURT_BIN_H
#define TESTS_NPURT_BIN_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/dataset.h"
#include "emit/hostops.h"
#include "format/format.h"
#include "import/import.h"
#include "kernels/kernels.h"
#include "opt/opt.h"
#include "quantize/quantize.h"
#include "ref/ref.h"
#include "rt/npurt.h"
#include "sim/npu.h"
#include "sim/sim.h"
#include "tests/support/testgraph.h"

/* ---- graph building ---------------------------------------------------------- */

static inline uint32_t rng_next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static inline float rng_unit(uint32_t *s) /* [-1, 1) */
{
    return (float)(rng_next(s) & 0xffff) / 32768.0f - 1.0f;
}

/* Per tensor with zero point zp, or per axis 0 with zero points 0. */
static inline ir_quant *quant(ir_graph *g, int count, const float *scales, int32_t zp)
{
    return tg_quant(g, count, scales, count > 1 ? NULL : &zp);
}

static inline ir_tensor *act(ir_graph *g, const char *name, int rank, const int64_t *dims, float scale,
                             int32_t zp)
{
    ir_tensor *t = tg_act(g, name, rank, dims, scale, zp);
    cr_assert_not_null(t);
    return t;
}

static inline ir_tensor *fact(ir_graph *g, const char *name, int rank, const int64_t *dims)
{
    ir_tensor *t = ir_tensor_new(g, name, IR_F32, rank, dims);
    cr_assert_not_null(t);
    return t;
}

/* Per-channel int8 (or int4, packed) weights with random values. */
static inline ir_tensor *weights(ir_graph *g, const char *name, bool i4, int rank, const int64_t *dims,
                                 int channels, uint32_t *seed)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    int8_t *v = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = (int8_t)(i4 ? (int)(rng_next(seed) % 16) - 8 : (int)(rng_next(seed) % 255) - 127);
    ir_tensor *w = ir_const_new(g, name, i4 ? IR_I4 : IR_I8, rank, dims, NULL);
    if (i4)
        cr_assert_eq(nk_int4_pack(v, w->data, (size_t)n), NK_OK);
    else
        memcpy(w->data, v, (size_t)n);
    free(v);
    float *s = malloc(sizeof(float) * (size_t)channels);
    for (int c = 0; c < channels; c++)
        s[c] = (i4 ? 0.08f : 0.004f) * (1.0f + 0.1f * (float)c);
    w->quant = quant(g, channels, s, 0);
    free(s);
    return w;
}

static inline ir_tensor *bias(ir_graph *g, const char *name, int n, uint32_t *seed)
{
    int32_t *b = malloc(sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < n; i++)
        b[i] = (int32_t)(rng_next(seed) % 2001) - 1000;
    int64_t d[1] = {n};
    ir_tensor *t = ir_const_new(g, name, IR_I32, 1, d, b);
    free(b);
    return t;
}

static inline ir_node *node(ir_graph *g, ir_op op, const char *name, int n_in, ir_tensor *const *in,
                            ir_tensor *out)
{
    ir_node *n = ir_node_new(g, op, name, n_in, in, 1, &out);
    cr_assert_not_null(n);
    return n;
}

/* QuantizeLinear(x) -> y or DequantizeLinear(x) -> y, with the quantized
 * side's scale and zero point as constant inputs. */
static inline void qdq_node(ir_graph *g, ir_op op, const char *name, ir_tensor *x, ir_tensor *y)
{
    const ir_quant *q = op == IR_OP_QUANTIZE_LINEAR ? y->quant : x->quant;
    char buf[64];
    int8_t zp = (int8_t)q->zero_point[0];
    snprintf(buf, sizeof buf, "%s_s", name);
    ir_tensor *s = ir_const_new(g, buf, IR_F32, 0, NULL, &q->scale[0]);
    snprintf(buf, sizeof buf, "%s_z", name);
    ir_tensor *z = ir_const_new(g, buf, IR_I8, 0, NULL, &zp);
    ir_tensor *in[3] = {x, s, z};
    node(g, op, name, 3, in, y);
}

static inline void quantize(ir_graph *g, const char *name, ir_tensor *x, ir_tensor *y)
{
    qdq_node(g, IR_OP_QUANTIZE_LINEAR, name, x, y);
}

static inline void dequantize(ir_graph *g, const char *name, ir_tensor *x, ir_tensor *y)
{
    qdq_node(g, IR_OP_DEQUANTIZE_LINEAR, name, x, y);
}

static inline void conv_attrs(ir_graph *g, ir_node *n, int k, int stride, int pad, int group)
{
    int64_t ks[2] = {k, k}, st[2] = {stride, stride}, pads[4] = {pad, pad, pad, pad};
    ir_set_ints(g, n, "kernel_shape", 2, ks);
    ir_set_ints(g, n, "strides", 2, st);
    ir_set_ints(g, n, "pads", 4, pads);
    if (group)
        ir_set_int(g, n, "group", group);
}

/* ---- the all-host .npub ----------------------------------------------------- */

typedef struct asm_state {
    const ir_graph *g;
    uint32_t *index; /* per tensor id: npub index or NPUB_NONE */
    npub_tensor tensors[256];
    uint32_t n_tensors;
    char strings[4096];
    uint32_t strings_size;
    emit_blob consts, params;
    uint32_t region_bytes[NPUB_REGION_COUNT];
    npub_step steps[64];
    uint32_t n_steps;
    uint32_t scratch;
    uint32_t io[2 + 8];
    uint32_t cmds[64];
    uint32_t n_cmds;
} asm_state;

static inline uint32_t add_string(asm_state *a, const char *s)
{
    uint32_t at = a->strings_size;
    size_t len = strlen(s) + 1;
    cr_assert(at + len <= sizeof a->strings);
    memcpy(a->strings + at, s, len);
    a->strings_size += (uint32_t)len;
    return at;
}

static inline uint32_t map_index(void *ud, const ir_tensor *t)
{
    asm_state *a = ud;
    if (a->index[t->id] != NPUB_NONE)
        return a->index[t->id];
    cr_assert(a->n_tensors < 256 && t->rank <= NPUB_MAX_RANK);
    npub_tensor *o = &a->tensors[a->n_tensors];
    memset(o, 0, sizeof *o);
    o->name = add_string(a, t->name);
    o->dtype = (uint8_t)t->dtype;
    o->rank = (uint8_t)t->rank;
    for (int i = 0; i < t->rank; i++)
        o->dims[i] = (int32_t)t->dims[i];
    o->size = (uint32_t)ir_tensor_bytes(t);
    o->alias_of = NPUB_NONE;
    if (t->quant && t->quant->count == 1) {
        o->has_quant = 1;
        o->scale = t->quant->scale[0];
        o->zero_point = t->quant->zero_point[0];
    }
    npu_err e;
    if (t->data) {
        size_t off;
        cr_assert_eq(emit_blob_add(&a->consts, t->data, o->size, 16, &off, &e), NPU_OK);
        o->region = NPUB_REGION_CONST;
        o->offset = (uint32_t)off;
    } else {
        o->region = (t->flags & IR_TENSOR_INPUT)    ? NPUB_REGION_INPUT
                    : (t->flags & IR_TENSOR_OUTPUT) ? NPUB_REGION_OUTPUT
                                                    : NPUB_REGION_ARENA;
        uint32_t *rb = &a->region_bytes[o->region];
        o->offset = (*rb + 15u) & ~15u;
        *rb = o->offset + o->size;
    }
    a->index[t->id] = a->n_tensors;
    return a->n_tensors++;
}

static inline void asm_init(asm_state *a, const ir_graph *g)
{
    memset(a, 0, sizeof *a);
    a->g = g;
    a->index = malloc(sizeof(uint32_t) * (size_t)g->n_tensors);
    for (int i = 0; i < g->n_tensors; i++)
        a->index[i] = NPUB_NONE;
    a->strings_size = 1; /* offset 0 is "" */
    emit_blob_init(&a->consts, npu_alloc_default());
    emit_blob_init(&a->params, npu_alloc_default());
    emit_tensor_map map = {map_index, a};
    for (int i = 0; i < g->n_inputs; i++)
        map_index(a, g->inputs[i]);
    for (int k = 0; k < g->n_nodes; k++) {
        const ir_node *n = g->nodes[k];
        const char *why = NULL;
        cr_assert(emit_host_supports(g, n, &why), "node '%s': %s", n->name, why);
        npub_step *s = &a->steps[a->n_steps++];
        uint16_t kernel;
        uint32_t scratch;
        npu_err e;
        cr_assert_eq(emit_host_step(g, n, &map, &a->params, &kernel, &s->a, &s->b, &scratch, &e), NPU_OK,
                     "%s", e.msg);
        s->kind = NPUB_STEP_HOST;
        s->op = kernel;
        s->name = add_string(a, n->name);
        a->scratch = scratch > a->scratch ? scratch : a->scratch;
    }
    a->io[0] = (uint32_t)g->n_inputs;
    a->io[1] = (uint32_t)g->n_outputs;
    for (int i = 0; i < g->n_inputs; i++)
        a->io[2 + i] = map_index(a, g->inputs[i]);
    for (int i = 0; i < g->n_outputs; i++)
        a->io[2 + g->n_inputs + i] = map_index(a, g->outputs[i]);
}

static inline void asm_free(asm_state *a)
{
    free(a->index);
    emit_blob_free(&a->consts);
    emit_blob_free(&a->params);
}

static inline asm_state *asm_new(const ir_graph *g)
{
    asm_state *a = malloc(sizeof *a);
    cr_assert_not_null(a);
    asm_init(a, g);
    return a;
}

static inline void asm_delete(asm_state *a)
{
    asm_free(a);
    free(a);
}

static inline void *assemble(asm_state *a, size_t *size)
{
    npub_memory mem;
    memset(&mem, 0, sizeof mem);
    memcpy(mem.region_bytes, a->region_bytes, sizeof mem.region_bytes);
    mem.region_bytes[NPUB_REGION_CONST] = (uint32_t)a->consts.size;
    mem.scratch_bytes = a->scratch;
    fmt_section secs[] = {
        {NPUB_SEC_COMMANDS, a->cmds, a->n_cmds * 4},
        {NPUB_SEC_CONSTANTS, a->consts.data, a->consts.size},
        {NPUB_SEC_TENSORS, a->tensors, a->n_tensors * sizeof(npub_tensor)},
        {NPUB_SEC_STEPS, a->steps, a->n_steps * sizeof(npub_step)},
        {NPUB_SEC_IO, a->io, (2 + a->io[0] + a->io[1]) * 4},
        {NPUB_SEC_STRINGS, a->strings, a->strings_size},
        {NPUB_SEC_PARAMS, a->params.data, a->params.size},
        {NPUB_SEC_MEMORY, &mem, sizeof mem},
    };
    void *buf;
    npu_err e;
    cr_assert_eq(fmt_npub_assemble("edge-v1", 1, 0, secs, 8, npu_alloc_default(), &buf, size, &e), NPU_OK,
                 "%s", e.msg);
    return buf;
}

/* Buffers of one run, sized from the binary. */
static inline void env_alloc(const npub_view *v, npurt_env *env)
{
    memset(env, 0, sizeof *env);
    for (int r = 1; r < NPUB_REGION_COUNT; r++) {
        env->region_size[r] = v->memory->region_bytes[r];
        env->region[r] = calloc(1, env->region_size[r] + 16);
    }
    env->scratch_size = v->memory->scratch_bytes;
    env->scratch = calloc(1, env->scratch_size + 16);
}

static inline void env_free(npurt_env *env)
{
    for (int r = 1; r < NPUB_REGION_COUNT; r++)
        free(env->region[r]);
    free(env->scratch);
}

/* The reference's output bytes for g on inputs (malloc'ed). */
static inline uint8_t *reference_output(ir_graph *g, const void *const *inputs, size_t *bytes)
{
    npu_err e;
    cr_assert_eq(ir_graph_verify(g, &e), NPU_OK, "%s", e.msg);
    const ir_tensor *yt = g->outputs[0];
    *bytes = ir_tensor_bytes(yt);
    uint8_t *want = malloc(*bytes);
    ref_ctx *ctx = ref_ctx_new(g, g->alloc, &e);
    cr_assert_not_null(ctx, "%s", e.msg);
    void *outs[1] = {want};
    cr_assert_eq(ref_ctx_run(ctx, inputs, outs, &e), NPU_OK, "%s", e.msg);
    ref_ctx_free(ctx);
    size_t es = (size_t)ir_dtype_bits(yt->dtype) / 8, distinct = 0;
    for (size_t i = es; i < *bytes; i += es)
        distinct += memcmp(want + i, want, es) != 0;
    cr_assert(distinct > 0, "the reference output is constant: the graph tests nothing");
    return want;
}

static inline void compare_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *who)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "output byte %zu: %s 0x%02x, reference 0x%02x", i, who, got[i],
                     want[i]);
}

/* Runs g with the reference and as an all-host .npub; the outputs must be
 * the same bytes. */
static inline void check_graph(ir_graph *g, const void *const *inputs)
{
    size_t out_bytes;
    uint8_t *want = reference_output(g, inputs, &out_bytes);
    asm_state *a = asm_new(g);
    size_t size;
    void *blob = assemble(a, &size);
    npub_view v;
    npub_error pe;
    cr_assert_eq(npurt_open(blob, size, &v, &pe), 0, "%s", pe.msg);
    cr_assert_eq(v.n_steps, (uint32_t)g->n_nodes);
    npurt_env env;
    env_alloc(&v, &env);
    for (uint32_t i = 0; i < v.io->n_inputs; i++) {
        const npub_tensor *t = &v.tensors[v.inputs[i]];
        memcpy(env.region[t->region] + t->offset, inputs[i], t->size);
    }
    cr_assert_eq(npurt_run(&v, &env, &pe), 0, "%s", pe.msg);
    const npub_tensor *ot = &v.tensors[v.outputs[0]];
    cr_assert_eq(ot->size, out_bytes);
    compare_bytes(env.region[ot->region] + ot->offset, want, out_bytes, "runtime");
    env_free(&env);
    free(blob);
    asm_delete(a);
    free(want);
}

static inline float *random_input(size_t n, uint32_t seed)
{
    float *x = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        x[i] = rng_unit(&seed);
    return x;
}

/* ---- graphs ----------------------------------------------------------------- */

/* Quantize -> Conv 3x3 pad 1 (Relu) -> MaxPool -> Add(depthwise conv) ->
 * GlobalAveragePool -> Flatten -> Gemm -> Dequantize -> Softmax */
static inline ir_graph *cnn_graph(void)
{
    uint32_t seed = 7;
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 3, 8, 8}, cd[4] = {1, 8, 8, 8}, pd[4] = {1, 8, 4, 4}, gd[4] = {1, 8, 1, 1};
    int64_t fd[2] = {1, 8}, yd[2] = {1, 10}, w1d[4] = {8, 3, 3, 3}, w2d[4] = {8, 1, 3, 3}, w3d[2] = {10, 8};
    ir_tensor *x = fact(g, "x", 4, xd);
    ir_tensor *q = act(g, "q", 4, xd, 1.0f / 127, 0);
    ir_tensor *c1 = act(g, "c1", 4, cd, 0.02f, -128);
    ir_tensor *mp = act(g, "mp", 4, pd, 0.02f, -128);
    ir_tensor *dw = act(g, "dw", 4, pd, 0.01f, 5);
    ir_tensor *ad = act(g, "ad", 4, pd, 0.03f, -20);
    ir_tensor *gp = act(g, "gp", 4, gd, 0.02f, -30);
    ir_tensor *fl = act(g, "fl", 2, fd, 0.02f, -30);
    ir_tensor *fc = act(g, "fc", 2, yd, 0.05f, 3);
    ir_tensor *dq = fact(g, "dq", 2, yd), *y = fact(g, "y", 2, yd);
    quantize(g, "quant", x, q);
    ir_tensor *conv_in[3] = {q, weights(g, "w1", false, 4, w1d, 8, &seed), bias(g, "b1", 8, &seed)};
    ir_node *n = node(g, IR_OP_CONV, "conv1", 3, conv_in, c1);
    conv_attrs(g, n, 3, 1, 1, 0);
    n->act.kind = IR_ACT_RELU;
    conv_attrs(g, node(g, IR_OP_MAX_POOL, "pool", 1, &c1, mp), 2, 2, 0, 0);
    ir_tensor *dw_in[2] = {mp, weights(g, "w2", false, 4, w2d, 8, &seed)};
    conv_attrs(g, node(g, IR_OP_CONV, "dwconv", 2, dw_in, dw), 3, 1, 1, 8);
    ir_tensor *add_in[2] = {mp, dw};
    node(g, IR_OP_ADD, "add", 2, add_in, ad);
    node(g, IR_OP_GLOBAL_AVERAGE_POOL, "gap", 1, &ad, gp);
    ir_set_int(g, node(g, IR_OP_FLATTEN, "flat", 1, &gp, fl), "axis", 1);
    ir_tensor *fc_in[3] = {fl, weights(g, "w3", false, 2, w3d, 10, &seed), bias(g, "b3", 10, &seed)};
    ir_set_int(g, node(g, IR_OP_GEMM, "fc", 3, fc_in, fc), "transB", 1);
    dequantize(g, "dequant", fc, dq);
    ir_set_int(g, node(g, IR_OP_SOFTMAX, "softmax", 1, &dq, y), "axis", -1);
    tg_set_io(g, 1, &x, y);
    return g;
}

enum { STEP_QUANT = 0, STEP_CONV1 = 1, STEP_POOL = 2, STEP_FC = 7 };

/* A float constant of random values in [-1, 1). */
static inline ir_tensor *fconst(ir_graph *g, const char *name, int rank, const int64_t *dims, uint32_t *seed)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = rng_unit(seed);
    ir_tensor *t = ir_const_new(g, name, IR_F32, rank, dims, v);
    free(v);
    cr_assert_not_null(t);
    return t;
}

/* The ops of NODE records, all in float or on other dtypes (no quantization):
 * BatchNormalization -> Conv (f32 weights) -> MaxPool -> Pad -> Slice
 * (negative step) -> Resize (nearest, x2) -> MatMul by its own transpose
 * (batched, two activations) -> Less than a constant -> Where -> Concat ->
 * Gather (int64 indices) -> Expand. NODE_STEP_* name some of the steps. */
enum { NODE_STEP_BN = 0, NODE_STEP_CONV = 1, NODE_STEP_SLICE = 4, NODE_STEP_GATHER = 11 };
static inline ir_graph *node_graph(void)
{
    uint32_t seed = 5;
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 2, 4, 4}, cd[4] = {1, 3, 4, 4}, pd[4] = {1, 3, 3, 3}, qd[4] = {1, 3, 5, 5};
    int64_t sd[4] = {1, 3, 2, 5}, rd[4] = {1, 3, 4, 5}, td[4] = {1, 3, 5, 4}, md[4] = {1, 3, 4, 4};
    int64_t kd[4] = {1, 6, 4, 4}, gd[4] = {1, 2, 4, 4}, ed[4] = {2, 2, 4, 4}, two[1] = {2}, wd[4] = {3, 2, 3, 3};
    int64_t three[1] = {3}, four[1] = {4};
    ir_tensor *x = fact(g, "x", 4, xd), *a = fact(g, "bn", 4, xd), *c = fact(g, "conv", 4, cd);
    ir_tensor *p = fact(g, "pool", 4, pd), *q = fact(g, "pad", 4, qd), *sl = fact(g, "slice", 4, sd);
    ir_tensor *r = fact(g, "resize", 4, rd), *t = fact(g, "tr", 4, td), *m = fact(g, "mm", 4, md);
    ir_tensor *lt = ir_tensor_new(g, "lt", IR_BOOL, 4, md), *w = fact(g, "where", 4, md);
    ir_tensor *k = fact(g, "cat", 4, kd), *ga = fact(g, "gather", 4, gd), *y = fact(g, "y", 4, ed);
    ir_tensor *bn_in[5] = {x, fconst(g, "s", 1, two, &seed), fconst(g, "b", 1, two, &seed),
                           fconst(g, "mean", 1, two, &seed), tg_const(g, "var", IR_F32, 1, two, (float[]){0.5f, 2.0f})};
    ir_set_float(g, node(g, IR_OP_BATCH_NORM, "bn", 5, bn_in, a), "epsilon", 1e-3f);
    ir_tensor *conv_in[3] = {a, fconst(g, "w", 4, wd, &seed), fconst(g, "cb", 1, three, &seed)};
    ir_node *cv = node(g, IR_OP_CONV, "conv", 3, conv_in, c);
    conv_attrs(g, cv, 3, 1, 1, 0);
    cv->act.kind = IR_ACT_RELU;
    conv_attrs(g, node(g, IR_OP_MAX_POOL, "pool", 1, &c, p), 2, 1, 0, 0);
    ir_set_ints(g, node(g, IR_OP_PAD, "pad", 1, &p, q), "pads", 8, (int64_t[]){0, 0, 1, 1, 0, 0, 1, 1});
    ir_node *sn = node(g, IR_OP_SLICE, "slice", 1, &q, sl);
    ir_set_ints(g, sn, "starts", 1, (int64_t[]){4});
    ir_set_ints(g, sn, "ends", 1, (int64_t[]){0});
    ir_set_ints(g, sn, "axes", 1, (int64_t[]){2});
    ir_set_ints(g, sn, "steps", 1, (int64_t[]){-2});
    ir_tensor *rs_in[3] = {sl, NULL, tg_const(g, "scales", IR_F32, 1, four, (float[]){1, 1, 2, 1})};
    node(g, IR_OP_RESIZE, "resize", 3, rs_in, r);
    ir_set_ints(g, node(g, IR_OP_TRANSPOSE, "tr", 1, &r, t), "perm", 4, (int64_t[]){0, 1, 3, 2});
    ir_tensor *mm_in[2] = {r, t};
    node(g, IR_OP_MATMUL, "mm", 2, mm_in, m);
    ir_tensor *lt_in[2] = {m, tg_const(g, "lim", IR_F32, 0, NULL, (float[]){0.5f})};
    node(g, IR_OP_LESS, "lt", 2, lt_in, lt);
    ir_tensor *wh_in[3] = {lt, m, tg_const(g, "zero", IR_F32, 0, NULL, (float[]){-1.0f})};
    node(g, IR_OP_WHERE, "where", 3, wh_in, w);
    ir_tensor *cat_in[2] = {w, m};
    ir_set_int(g, node(g, IR_OP_CONCAT, "cat", 2, cat_in, k), "axis", 1);
    int64_t idx[2] = {5, -6};
    ir_tensor *ga_in[2] = {k, ir_const_new(g, "idx", IR_I64, 1, two, idx)};
    ir_set_int(g, node(g, IR_OP_GATHER, "gather", 2, ga_in, ga), "axis", 1);
    ir_tensor *ex_in[2] = {ga, ir_const_new(g, "eshape", IR_I64, 1, four, (int64_t[]){2, 1, 1, 1})};
    node(g, IR_OP_EXPAND, "expand", 2, ex_in, y);
    tg_set_io(g, 1, &x, y);
    return g;
}

/* Every truncation of every record of g (with the step and header agreeing)
 * fails the structural check instead of reading past it. */
static inline void expect_truncations_rejected(ir_graph *g)
{
    asm_state *a = asm_new(g);
    for (uint32_t s = 0; s < a->n_steps; s++) {
        uint32_t size = a->steps[s].b, scratch;
        npurt_fault f;
        uint8_t *copy = malloc(size);
        memcpy(copy, (const uint8_t *)a->params.data + a->steps[s].a, size);
        cr_assert_eq(npurt_rec_check(copy, size, &scratch, &f), 0, "step %u: %s", s, f.msg);
        for (uint32_t cut = 0; cut < size; cut += 4) {
            if (cut >= sizeof(npurt_rec_header))
                ((npurt_rec_header *)copy)->size = cut;
            cr_assert_eq(npurt_rec_check(copy, cut, &scratch, &f), -1, "step %u cut at %u accepted", s, cut);
        }
        free(copy);
    }
    asm_delete(a);
}

/* Corrupting any byte of any record of g (the CRCs recomputed, so npub_open
 * passes) never makes the runtime read or write outside its buffers: the
 * record is rejected, or it runs within its tensors (ASan checks this).
 * *rejected and *ran count the outcomes. */
static inline void expect_flips_safe(ir_graph *g, int *rejected, int *ran)
{
    asm_state *a = asm_new(g);
    size_t size;
    void *blob = assemble(a, &size);
    npub_view v;
    npub_error pe;
    cr_assert_eq(npurt_open(blob, size, &v, &pe), 0, "%s", pe.msg);
    npurt_env env;
    env_alloc(&v, &env);
    free(blob);
    static const uint8_t flips[] = {0x01, 0x80, 0xff};
    *rejected = *ran = 0;
    for (size_t i = 0; i < a->params.size; i++) {
        for (size_t k = 0; k < sizeof flips; k++) {
            a->params.data[i] ^= flips[k];
            blob = assemble(a, &size);
            if (npurt_open(blob, size, &v, &pe) == 0) {
                npurt_run(&v, &env, &pe);
                (*ran)++;
            } else {
                cr_assert(strstr(pe.msg, "step "), "%s", pe.msg);
                (*rejected)++;
            }
            free(blob);
            a->params.data[i] ^= flips[k];
        }
    }
    env_free(&env);
    asm_delete(a);
}

static inline npurt_rec_header *rec_of(asm_state *a, uint32_t step)
{
    return (npurt_rec_header *)(a->params.data + a->steps[step].a);
}

static inline uint32_t *slots_of(asm_state *a, uint32_t step)
{
    return (uint32_t *)(rec_of(a, step) + 1);
}

/* The example model through the real front end (import, opt, calibration
 * on a few samples, quantization, int8 and int4 weights), then all-host on
 * the runtime: the quantizer's graph as it is, not one written for the test. */
static inline ir_graph *fmnist_quantized(int wbits)
{
    const char *root = getenv("NPUCC_ROOT");
    char model[1024], calib[1024];
    snprintf(model, sizeof model, "%s/examples/fmnist/fmnist_cnn.onnx", root && *root ? root : ".");
    snprintf(calib, sizeof calib, "%s/examples/fmnist/calib", root && *root ? root : ".");
    npu_alloc al = npu_alloc_default();
    ir_graph *g;
    npu_err e;
    imp_options io = {0};
    cr_assert_eq(imp_load_onnx(model, &io, al, &g, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(opt_run(g, NULL, &e), NPU_OK, "%s", e.msg);
    const ir_tensor *in = g->inputs[0];
    cal_input_spec spec = {in->name, in->rank, in->dims, NULL, 0};
    cal_dataset *ds;
    cr_assert_eq(cal_dataset_open(calib, &spec, al, &ds, &e), NPU_OK, "%s", e.msg);
    ref_ctx *rc = ref_ctx_new(g, al, &e);
    q_calib *qc = q_calib_new(g, al, &e);
    cr_assert(rc && qc, "%s", e.msg);
    for (int i = 0; i < 8; i++) {
        const float *x;
        cr_assert_eq(cal_dataset_next(ds, &x, &e), NPU_OK, "%s", e.msg);
        const void *ins[1] = {x};
        cr_assert_eq(q_calib_run(qc, rc, ins, &e), NPU_OK, "%s", e.msg);
    }
    ref_ctx_free(rc);
    size_t nt = (size_t)g->n_tensors;
    float *lo = malloc(sizeof(float) * nt), *hi = malloc(sizeof(float) * nt);
    cal_range_opts ro = {CAL_MINMAX, 0, 8};
    q_calib_ranges(qc, &ro, lo, hi);
    q_options qo = {.wbits = wbits, .abits = 8};
    cr_assert_eq(q_quantize(g, lo, hi, &qo, &e), NPU_OK, "%s", e.msg);
    free(lo);
    free(hi);
    q_calib_free(qc);
    cal_dataset_close(ds);
    return g;
}

/* ---- the same binaries in the firmware on the simulated rv32 host ---------- */

static inline const char *fw_path(void)
{
    static char path[512];
    const char *b = getenv("NPUCC_BUILD");
    snprintf(path, sizeof path, "%s/fw/npurt.elf", b && *b ? b : "build");
    return path;
}

typedef struct console {
    char text[4096];
    size_t len;
} console;

static inline void console_fn(void *ud, const char *text, size_t len)
{
    console *c = ud;
    size_t room = sizeof c->text - 1 - c->len;
    len = len < room ? len : room;
    memcpy(c->text + c->len, text, len);
    c->len += len;
    c->text[c->len] = '\0';
}

typedef struct fw_run {
    fw_request back;
    sim_result r;
    uint8_t *out;    /* the output region after the run */
    uint32_t *steps; /* the step-cycle table, or NULL */
    console con;
} fw_run;

/* A firmware with a binary, its inputs, arena and scratch placed and a
 * FW_CMD_RUN_NPUB request for it in DRAM (not run yet). */
typedef struct fw_session {
    sim_ctx *s;
    npub_view v;
    fw_request req;
    uint32_t req_at, out_at;
} fw_session;

static inline void fw_session_open(const void *blob, size_t size, const void *const *inputs, npu_model *npu,
                                   console *con, fw_session *fs)
{
    npub_error pe;
    cr_assert_eq(npub_open(blob, size, &fs->v, &pe), 0, "%s", pe.msg);
    sim_config cfg;
    sim_config_default(&cfg);
    cfg.console_fn = console_fn;
    cfg.console_ud = con;
    npu_err e;
    cr_assert_eq(sim_new(&cfg, &fs->s, &e), NPU_OK, "%s", e.msg);
    sim_ctx *s = fs->s;
    cr_assert_eq(sim_load_elf_file(s, fw_path(), &e), NPU_OK, "%s (run make first)", e.msg);
    if (npu)
        sim_attach_npu(s, npu_model_sim_ops(), npu);
    uint32_t blob_at, in_at, arena_at, scratch_at;
    cr_assert_eq(sim_place_flash(s, blob, size, 64, &blob_at, &e), NPU_OK, "%s", e.msg);
    const npub_view *v = &fs->v;
    const uint32_t *rb = v->memory->region_bytes;
    uint32_t scratch = v->memory->scratch_bytes + 8 * v->n_steps + 16;
    uint8_t *in = calloc(1, rb[NPUB_REGION_INPUT] + 1), *zeros = calloc(1, scratch + rb[1] + rb[3] + 16);
    for (uint32_t i = 0; inputs && i < v->io->n_inputs; i++)
        memcpy(in + v->tensors[v->inputs[i]].offset, inputs[i], v->tensors[v->inputs[i]].size);
    cr_assert_eq(sim_place_dram(s, in, rb[NPUB_REGION_INPUT], 16, &in_at, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(sim_place_dram(s, zeros, rb[NPUB_REGION_OUTPUT], 16, &fs->out_at, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(sim_place_dram(s, zeros, rb[NPUB_REGION_ARENA] + 1, 16, &arena_at, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(sim_place_dram(s, zeros, scratch, 16, &scratch_at, &e), NPU_OK, "%s", e.msg);
    fw_request req = {.magic = FW_REQ_MAGIC, .version = FW_REQ_VERSION, .command = FW_CMD_RUN_NPUB};
    req.arg[FW_NPUB_ARG_BLOB] = blob_at;
    req.arg[FW_NPUB_ARG_BLOB_SIZE] = (uint32_t)size;
    req.arg[FW_NPUB_ARG_INPUT] = in_at;
    req.arg[FW_NPUB_ARG_OUTPUT] = fs->out_at;
    req.arg[FW_NPUB_ARG_ARENA] = arena_at;
    req.arg[FW_NPUB_ARG_ARENA_SIZE] = rb[NPUB_REGION_ARENA] + 1;
    req.arg[FW_NPUB_ARG_SCRATCH] = scratch_at;
    req.arg[FW_NPUB_ARG_SCRATCH_SIZE] = scratch;
    fs->req = req;
    cr_assert_eq(sim_place_request(s, &req, &fs->req_at, &e), NPU_OK, "%s", e.msg);
    free(in);
    free(zeros);
}

/* Places blob, inputs, arena and scratch, runs FW_CMD_RUN_NPUB (with an NPU
 * model attached when npu is non-NULL). */
static inline void run_firmware_npu(const void *blob, size_t size, const void *const *inputs, npu_model *npu,
                                    fw_run *run)
{
    memset(run, 0, sizeof *run);
    fw_session fs;
    fw_session_open(blob, size, inputs, npu, &run->con, &fs);
    sim_ctx *s = fs.s;
    const npub_view *v = &fs.v;
    const uint32_t *rb = v->memory->region_bytes;
    npu_err e;
    cr_assert_eq(sim_run(s, &run->r, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(sim_mem_read(s, fs.req_at, &run->back, sizeof run->back, &e), NPU_OK, "%s", e.msg);
    run->out = malloc(rb[NPUB_REGION_OUTPUT] + 1);
    cr_assert_eq(sim_mem_read(s, fs.out_at, run->out, rb[NPUB_REGION_OUTPUT], &e), NPU_OK, "%s", e.msg);
    if (run->back.result[FW_NPUB_RES_STEP_TABLE]) {
        run->steps = malloc(8 * v->n_steps);
        cr_assert_eq(sim_mem_read(s, run->back.result[FW_NPUB_RES_STEP_TABLE], run->steps, 8 * v->n_steps, &e),
                     NPU_OK, "%s", e.msg);
    }
    sim_free(s);
}

static inline void fw_run_release(fw_run *run)
{
    free(run->out);
    free(run->steps);
    run->out = NULL;
    run->steps = NULL;
}

static inline void run_firmware(const void *blob, size_t size, const void *const *inputs, fw_run *run)
{
    run_firmware_npu(blob, size, inputs, NULL, run);
}

#endif
