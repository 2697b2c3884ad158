/* libnpurt natively: small quantized graphs built with the IR API become
 * all-host .npub files (tensor table from the graph, records from
 * emit_host_step, emit_npub_assemble), run with npurt_run, and must match
 * the reference executor (ref_ctx_run) on the same graph bit for bit. Then
 * npurt_open against broken records, and npurt_run against a bad
 * environment and NPU steps. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "calib/dataset.h"
#include "emit/hostops.h"
#include "import/import.h"
#include "opt/opt.h"
#include "quantize/quantize.h"
#include "emit/npub_write.h"
#include "kernels/kernels.h"
#include "ref/ref.h"
#include "ref/ref_qparams.h"
#include "rt/npurt.h"
#include "sim/npu.h"
#include "sim/sim.h"
#include "target/target.h"

/* ---- graph building ---------------------------------------------------------- */

static uint32_t rng_next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static float rng_unit(uint32_t *s) /* [-1, 1) */
{
    return (float)(rng_next(s) & 0xffff) / 32768.0f - 1.0f;
}

static ir_quant *quant(ir_graph *g, int count, const float *scales, int32_t zp)
{
    ir_quant *q = npu_arena_alloc(g->arena, sizeof *q);
    q->axis = count > 1 ? 0 : -1;
    q->count = count;
    q->scale = npu_arena_alloc(g->arena, sizeof(float) * (size_t)count);
    q->zero_point = npu_arena_alloc(g->arena, sizeof(int32_t) * (size_t)count);
    for (int i = 0; i < count; i++) {
        q->scale[i] = scales[i];
        q->zero_point[i] = count > 1 ? 0 : zp;
    }
    return q;
}

static ir_tensor *act(ir_graph *g, const char *name, int rank, const int64_t *dims, float scale, int32_t zp)
{
    ir_tensor *t = ir_tensor_new(g, name, IR_I8, rank, dims);
    cr_assert_not_null(t);
    t->quant = quant(g, 1, &scale, zp);
    return t;
}

static ir_tensor *fact(ir_graph *g, const char *name, int rank, const int64_t *dims)
{
    ir_tensor *t = ir_tensor_new(g, name, IR_F32, rank, dims);
    cr_assert_not_null(t);
    return t;
}

/* Per-channel int8 (or int4, packed) weights with random values. */
static ir_tensor *weights(ir_graph *g, const char *name, bool i4, int rank, const int64_t *dims, int channels,
                          uint32_t *seed)
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

static ir_tensor *bias(ir_graph *g, const char *name, int n, uint32_t *seed)
{
    int32_t *b = malloc(sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < n; i++)
        b[i] = (int32_t)(rng_next(seed) % 2001) - 1000;
    int64_t d[1] = {n};
    ir_tensor *t = ir_const_new(g, name, IR_I32, 1, d, b);
    free(b);
    return t;
}

static ir_node *node(ir_graph *g, ir_op op, const char *name, int n_in, ir_tensor *const *in, ir_tensor *out)
{
    ir_node *n = ir_node_new(g, op, name, n_in, in, 1, &out);
    cr_assert_not_null(n);
    return n;
}

/* QuantizeLinear(x) -> y with y's scale and zero point as constant inputs. */
static void quantize(ir_graph *g, const char *name, ir_tensor *x, ir_tensor *y)
{
    char buf[64];
    int8_t zp = (int8_t)y->quant->zero_point[0];
    snprintf(buf, sizeof buf, "%s_s", name);
    ir_tensor *s = ir_const_new(g, buf, IR_F32, 0, NULL, &y->quant->scale[0]);
    snprintf(buf, sizeof buf, "%s_z", name);
    ir_tensor *z = ir_const_new(g, buf, IR_I8, 0, NULL, &zp);
    ir_tensor *in[3] = {x, s, z};
    node(g, IR_OP_QUANTIZE_LINEAR, name, 3, in, y);
}

static void dequantize(ir_graph *g, const char *name, ir_tensor *x, ir_tensor *y)
{
    char buf[64];
    int8_t zp = (int8_t)x->quant->zero_point[0];
    snprintf(buf, sizeof buf, "%s_s", name);
    ir_tensor *s = ir_const_new(g, buf, IR_F32, 0, NULL, &x->quant->scale[0]);
    snprintf(buf, sizeof buf, "%s_z", name);
    ir_tensor *z = ir_const_new(g, buf, IR_I8, 0, NULL, &zp);
    ir_tensor *in[3] = {x, s, z};
    node(g, IR_OP_DEQUANTIZE_LINEAR, name, 3, in, y);
}

static void set_io(ir_graph *g, int n_in, ir_tensor *const *in, ir_tensor *out)
{
    g->inputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *) * (size_t)n_in);
    for (int i = 0; i < n_in; i++) {
        in[i]->flags |= IR_TENSOR_INPUT;
        g->inputs[i] = in[i];
    }
    g->n_inputs = n_in;
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->outputs[0] = out;
    out->flags |= IR_TENSOR_OUTPUT;
    g->n_outputs = 1;
}

static void conv_attrs(ir_graph *g, ir_node *n, int k, int stride, int pad, int group)
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

static uint32_t add_string(asm_state *a, const char *s)
{
    uint32_t at = a->strings_size;
    size_t len = strlen(s) + 1;
    cr_assert(at + len <= sizeof a->strings);
    memcpy(a->strings + at, s, len);
    a->strings_size += (uint32_t)len;
    return at;
}

static uint32_t map_index(void *ud, const ir_tensor *t)
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

static void asm_init(asm_state *a, const ir_graph *g)
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

static void asm_free(asm_state *a)
{
    free(a->index);
    emit_blob_free(&a->consts);
    emit_blob_free(&a->params);
}

static void *assemble(asm_state *a, size_t *size)
{
    npub_memory mem;
    memset(&mem, 0, sizeof mem);
    memcpy(mem.region_bytes, a->region_bytes, sizeof mem.region_bytes);
    mem.region_bytes[NPUB_REGION_CONST] = (uint32_t)a->consts.size;
    mem.scratch_bytes = a->scratch;
    emit_section secs[] = {
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
    cr_assert_eq(emit_npub_assemble("edge-v1", 1, 0, secs, 8, npu_alloc_default(), &buf, size, &e), NPU_OK,
                 "%s", e.msg);
    return buf;
}

/* Buffers of one run, sized from the binary. */
static void env_alloc(const npub_view *v, npurt_env *env)
{
    memset(env, 0, sizeof *env);
    for (int r = 1; r < NPUB_REGION_COUNT; r++) {
        env->region_size[r] = v->memory->region_bytes[r];
        env->region[r] = calloc(1, env->region_size[r] + 16);
    }
    env->scratch_size = v->memory->scratch_bytes;
    env->scratch = calloc(1, env->scratch_size + 16);
}

static void env_free(npurt_env *env)
{
    for (int r = 1; r < NPUB_REGION_COUNT; r++)
        free(env->region[r]);
    free(env->scratch);
}

/* The reference's output bytes for g on inputs (malloc'ed). */
static uint8_t *reference_output(ir_graph *g, const void *const *inputs, size_t *bytes)
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

static void compare_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *who)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "output byte %zu: %s 0x%02x, reference 0x%02x", i, who, got[i],
                     want[i]);
}

/* Runs g with the reference and as an all-host .npub; the outputs must be
 * the same bytes. */
static void check_graph(ir_graph *g, const void *const *inputs)
{
    size_t out_bytes;
    uint8_t *want = reference_output(g, inputs, &out_bytes);
    asm_state *a = malloc(sizeof *a);
    asm_init(a, g);
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
    asm_free(a);
    free(a);
    free(want);
}

static float *random_input(size_t n, uint32_t seed)
{
    float *x = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        x[i] = rng_unit(&seed);
    return x;
}

/* ---- graphs ----------------------------------------------------------------- */

/* Quantize -> Conv 3x3 pad 1 (Relu) -> MaxPool -> Add(depthwise conv) ->
 * GlobalAveragePool -> Flatten -> Gemm -> Dequantize -> Softmax */
static ir_graph *cnn_graph(void)
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
    set_io(g, 1, &x, y);
    return g;
}

Test(npurt, cnn_matches_reference)
{
    ir_graph *g = cnn_graph();
    float *x = random_input(3 * 8 * 8, 1);
    const void *in[1] = {x};
    check_graph(g, in);
    free(x);
    ir_graph_free(g);
}

/* int4 weights: Conv (stride 2, per-channel int4) -> AveragePool ->
 * Flatten -> MatMul by int4 [K, N] weights (the transposed path) -> Dequantize */
Test(npurt, int4_conv_and_matmul_match_reference)
{
    uint32_t seed = 11;
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 4, 6, 6}, cd[4] = {1, 6, 3, 3}, pd[4] = {1, 6, 2, 2}, fd[2] = {1, 24}, yd[2] = {1, 5};
    int64_t wd[4] = {6, 4, 3, 3}, md[2] = {24, 5};
    ir_tensor *x = fact(g, "x", 4, xd), *q = act(g, "q", 4, xd, 1.0f / 100, -3);
    ir_tensor *c = act(g, "c", 4, cd, 0.15f, 2), *p = act(g, "p", 4, pd, 0.1f, 0);
    ir_tensor *f = act(g, "f", 2, fd, 0.1f, 0), *m = act(g, "m", 2, yd, 0.4f, -7);
    ir_tensor *y = fact(g, "y", 2, yd);
    quantize(g, "quant", x, q);
    ir_tensor *conv_in[3] = {q, weights(g, "w", true, 4, wd, 6, &seed), bias(g, "b", 6, &seed)};
    conv_attrs(g, node(g, IR_OP_CONV, "conv4", 3, conv_in, c), 3, 2, 1, 0);
    ir_node *n = node(g, IR_OP_AVERAGE_POOL, "avg", 1, &c, p);
    conv_attrs(g, n, 2, 1, 0, 0);
    ir_set_int(g, node(g, IR_OP_FLATTEN, "flat", 1, &p, f), "axis", 1);
    ir_tensor *mm_in[2] = {f, weights(g, "wm", true, 2, md, 5, &seed)};
    mm_in[1]->quant->axis = 1;
    node(g, IR_OP_MATMUL, "matmul", 2, mm_in, m);
    dequantize(g, "dequant", m, y);
    set_io(g, 1, &x, y);
    float *xv = random_input(4 * 36, 2);
    const void *in[1] = {xv};
    check_graph(g, in);
    free(xv);
    ir_graph_free(g);
}

/* Requantize and a LUT branch, Concat with the input itself (one input
 * copied, two requantized), then the float side: Dequantize -> Sigmoid ->
 * Add a constant. */
Test(npurt, concat_requant_lut_and_float_ops_match_reference)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 4, 3, 3}, od[4] = {1, 12, 3, 3}, kd[1] = {1};
    ir_tensor *x = fact(g, "x", 4, xd), *q = act(g, "q", 4, xd, 0.05f, 3);
    ir_tensor *r = act(g, "r", 4, xd, 0.06f, 0), *l = act(g, "l", 4, xd, 1.0f / 256, -128);
    ir_tensor *cat = act(g, "cat", 4, od, 0.06f, 0);
    ir_tensor *dq = fact(g, "dq", 4, od), *sg = fact(g, "sg", 4, od), *y = fact(g, "y", 4, od);
    quantize(g, "quant", x, q);
    node(g, IR_OP_REQUANTIZE, "requant", 1, &q, r);
    int8_t lut[256];
    cr_assert_eq(nk_lut_build_i8(lut, nk_lut_sigmoid, NULL, 0.05f, 3, 1.0f / 256, -128), NK_OK);
    int64_t ld[1] = {256};
    ir_tensor *lut_in[2] = {q, ir_const_new(g, "table", IR_I8, 1, ld, lut)};
    node(g, IR_OP_LUT, "lut", 2, lut_in, l);
    ir_tensor *cat_in[3] = {r, l, q};
    ir_set_int(g, node(g, IR_OP_CONCAT, "concat", 3, cat_in, cat), "axis", 1);
    dequantize(g, "dequant", cat, dq);
    node(g, IR_OP_SIGMOID, "sigmoid", 1, &dq, sg);
    float k = 0.25f;
    ir_tensor *add_in[2] = {sg, ir_const_new(g, "k", IR_F32, 1, kd, &k)};
    node(g, IR_OP_ADD, "fadd", 2, add_in, y);
    set_io(g, 1, &x, y);
    float *xv = random_input(36, 3);
    for (int i = 0; i < 36; i++)
        xv[i] *= 6.0f; /* wide enough to saturate some values */
    const void *in[1] = {xv};
    check_graph(g, in);
    free(xv);
    ir_graph_free(g);
}

/* A matmul of two activations (QBMM). */
Test(npurt, matmul_of_activations_matches_reference)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t ad[3] = {2, 3, 4}, bd[3] = {2, 4, 5}, yd[3] = {2, 3, 5};
    ir_tensor *a = fact(g, "a", 3, ad), *b = fact(g, "b", 3, bd);
    ir_tensor *qa = act(g, "qa", 3, ad, 1.0f / 120, 4), *qb = act(g, "qb", 3, bd, 1.0f / 100, -6);
    ir_tensor *m = act(g, "m", 3, yd, 0.02f, 1), *y = fact(g, "y", 3, yd);
    quantize(g, "qa_node", a, qa);
    quantize(g, "qb_node", b, qb);
    ir_tensor *mm_in[2] = {qa, qb};
    node(g, IR_OP_MATMUL, "bmm", 2, mm_in, m);
    dequantize(g, "dequant", m, y);
    ir_tensor *ins[2] = {a, b};
    set_io(g, 2, ins, y);
    float *av = random_input(24, 4), *bv = random_input(40, 5);
    const void *in[2] = {av, bv};
    check_graph(g, in);
    free(av);
    free(bv);
    ir_graph_free(g);
}

/* Broadcast binaries, a padded average pool counting the pad, a global max pool. */
Test(npurt, binaries_and_pools_match_reference)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 4, 4, 4}, bd[4] = {1, 4, 1, 1}, gd[4] = {1, 4, 1, 1};
    ir_tensor *x = fact(g, "x", 4, xd), *b = fact(g, "b", 4, bd);
    ir_tensor *qx = act(g, "qx", 4, xd, 1.0f / 127, 2), *qb = act(g, "qb", 4, bd, 1.0f / 64, -10);
    ir_tensor *av = act(g, "av", 4, xd, 1.0f / 150, 0), *mu = act(g, "mu", 4, xd, 1.0f / 300, 4);
    ir_tensor *mn = act(g, "mn", 4, xd, 1.0f / 200, -3), *sb = act(g, "sb", 4, xd, 1.0f / 90, 1);
    ir_tensor *gm = act(g, "gm", 4, gd, 1.0f / 90, 1), *y = fact(g, "y", 4, gd);
    quantize(g, "qx_node", x, qx);
    quantize(g, "qb_node", b, qb);
    ir_node *n = node(g, IR_OP_AVERAGE_POOL, "avg", 1, &qx, av);
    conv_attrs(g, n, 3, 1, 1, 0);
    ir_set_int(g, n, "count_include_pad", 1);
    ir_tensor *mul_in[2] = {av, qb}, *min_in[2] = {mu, qx}, *sub_in[2] = {mn, qb};
    node(g, IR_OP_MUL, "mul", 2, mul_in, mu);
    node(g, IR_OP_MIN, "min", 2, min_in, mn);
    node(g, IR_OP_SUB, "sub", 2, sub_in, sb)->act.kind = IR_ACT_RELU;
    node(g, IR_OP_GLOBAL_MAX_POOL, "gmax", 1, &sb, gm);
    dequantize(g, "dequant", gm, y);
    ir_tensor *ins[2] = {x, b};
    set_io(g, 2, ins, y);
    float *xv = random_input(64, 6), *bv = random_input(4, 7);
    const void *in[2] = {xv, bv};
    check_graph(g, in);
    free(xv);
    free(bv);
    ir_graph_free(g);
}

/* Per-axis uint8 QuantizeLinear and DequantizeLinear, then float unary and
 * binary ops with broadcast, a Clip with constant bound inputs, LogSoftmax. */
Test(npurt, per_axis_qdq_and_float_chain_match_reference)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[3] = {2, 3, 5}, cd[1] = {3}, kd[3] = {1, 3, 1};
    ir_tensor *x = fact(g, "x", 3, xd), *q = ir_tensor_new(g, "q", IR_U8, 3, xd);
    float scales[3] = {0.01f, 0.02f, 0.005f}, kv[3] = {0.5f, -2.0f, 3.0f}, lo = -0.4f, hi = 0.9f;
    uint8_t zps[3] = {128, 100, 140};
    ir_tensor *s = ir_const_new(g, "s", IR_F32, 1, cd, scales), *z = ir_const_new(g, "z", IR_U8, 1, cd, zps);
    ir_tensor *qin[3] = {x, s, z};
    ir_set_int(g, node(g, IR_OP_QUANTIZE_LINEAR, "quant", 3, qin, q), "axis", 1);
    ir_tensor *dq = fact(g, "dq", 3, xd), *th = fact(g, "th", 3, xd), *dv = fact(g, "dv", 3, xd);
    ir_tensor *cl = fact(g, "cl", 3, xd), *y = fact(g, "y", 3, xd);
    ir_tensor *dqin[3] = {q, s, z};
    ir_set_int(g, node(g, IR_OP_DEQUANTIZE_LINEAR, "dequant", 3, dqin, dq), "axis", 1);
    node(g, IR_OP_TANH, "tanh", 1, &dq, th)->act.kind = IR_ACT_RELU;
    ir_tensor *div_in[2] = {th, ir_const_new(g, "k", IR_F32, 3, kd, kv)};
    node(g, IR_OP_DIV, "div", 2, div_in, dv);
    ir_tensor *clip_in[3] = {dv, ir_const_new(g, "lo", IR_F32, 0, NULL, &lo),
                             ir_const_new(g, "hi", IR_F32, 0, NULL, &hi)};
    node(g, IR_OP_CLIP, "clip", 3, clip_in, cl);
    ir_set_int(g, node(g, IR_OP_LOG_SOFTMAX, "logsoftmax", 1, &cl, y), "axis", 1);
    set_io(g, 1, &x, y);
    float *xv = random_input(30, 8);
    const void *in[1] = {xv};
    check_graph(g, in);
    free(xv);
    ir_graph_free(g);
}

/* ---- npurt_open rejects broken records, naming the step -------------------- */

enum { STEP_QUANT = 0, STEP_CONV1 = 1, STEP_POOL = 2, STEP_FC = 7 };

static npurt_rec_header *rec_of(asm_state *a, uint32_t step)
{
    return (npurt_rec_header *)(a->params.data + a->steps[step].a);
}

static uint32_t *slots_of(asm_state *a, uint32_t step)
{
    return (uint32_t *)(rec_of(a, step) + 1);
}

typedef void (*mutate_fn)(asm_state *a);

/* Assembles the cnn graph with one mutation; npurt_open must fail with a
 * message naming the step and its node and containing `what`. */
static void expect_open_fail(mutate_fn mutate, uint32_t step, const char *node_name, const char *what)
{
    ir_graph *g = cnn_graph();
    asm_state *a = malloc(sizeof *a);
    asm_init(a, g);
    mutate(a);
    size_t size;
    void *blob = assemble(a, &size);
    npub_view v;
    npub_error pe;
    cr_assert_eq(npurt_open(blob, size, &v, &pe), -1, "a broken binary was accepted (%s)", what);
    char prefix[96];
    snprintf(prefix, sizeof prefix, "step %u (node '%s'", step, node_name);
    cr_assert(strstr(pe.msg, prefix), "'%s' does not name '%s'", pe.msg, prefix);
    cr_assert(strstr(pe.msg, what), "'%s' does not say '%s'", pe.msg, what);
    cr_assert(pe.offset > 0 && pe.offset < size, "offset %u", pe.offset);
    free(blob);
    asm_free(a);
    free(a);
    ir_graph_free(g);
}

static void unknown_kernel(asm_state *a)
{
    rec_of(a, STEP_CONV1)->kernel = 99;
    a->steps[STEP_CONV1].op = 99;
}
static void kernel_differs_from_op(asm_state *a)
{
    a->steps[STEP_POOL].op = NPURT_K_QAVGPOOL;
}
static void step_shorter_than_record(asm_state *a)
{
    a->steps[STEP_CONV1].b -= 4;
}
static void truncated_params(asm_state *a)
{
    uint32_t keep = (uint32_t)sizeof(npurt_rec_header) + 4 * 4 + 8; /* slots and 2 words of parameters */
    rec_of(a, STEP_CONV1)->size = keep;
    a->steps[STEP_CONV1].b = keep;
}
static void arrays_cut(asm_state *a)
{
    rec_of(a, STEP_CONV1)->size -= 8; /* one multiplier and shift short */
    a->steps[STEP_CONV1].b -= 8;
}
static void index_out_of_range(asm_state *a)
{
    slots_of(a, STEP_CONV1)[1] = a->n_tensors + 5;
}
static void empty_slot(asm_state *a)
{
    slots_of(a, STEP_FC)[0] = NPUB_NONE;
}
static void weight_dtype(asm_state *a)
{
    a->tensors[slots_of(a, STEP_CONV1)[1]].dtype = IR_U8; /* same size, wrong type */
}
static void input_dtype(asm_state *a)
{
    a->tensors[slots_of(a, STEP_QUANT)[0]].dtype = IR_I32; /* f32 expected, same size */
}
static void record_shape(asm_state *a)
{
    npurt_p_qpool *p = (npurt_p_qpool *)(slots_of(a, STEP_POOL) + 2);
    p->h_in = 16, p->h_out = 8; /* a consistent pool that would read past its input */
}
static void old_version(asm_state *a)
{
    rec_of(a, STEP_FC)->version = NPURT_REC_VERSION + 1;
}
static void little_scratch(asm_state *a)
{
    a->scratch = 4;
}
static void output_in_const(asm_state *a)
{
    npub_tensor *t = &a->tensors[slots_of(a, STEP_POOL)[1]];
    t->region = NPUB_REGION_CONST;
    t->offset = 0;
    while (a->consts.size < t->size) {
        size_t off;
        npu_err e;
        emit_blob_add(&a->consts, NULL, 16, 1, &off, &e);
    }
}

Test(npurt, open_rejects_broken_records)
{
    expect_open_fail(unknown_kernel, STEP_CONV1, "conv1", "unknown kernel id 99");
    expect_open_fail(kernel_differs_from_op, STEP_POOL, "pool", "the step says");
    expect_open_fail(step_shorter_than_record, STEP_CONV1, "conv1", "its step");
    expect_open_fail(truncated_params, STEP_CONV1, "conv1", "truncated");
    expect_open_fail(arrays_cut, STEP_CONV1, "conv1", "its parameters make");
    expect_open_fail(index_out_of_range, STEP_CONV1, "conv1", "out of range");
    expect_open_fail(empty_slot, STEP_FC, "fc", "slot 0 is empty");
    expect_open_fail(weight_dtype, STEP_CONV1, "conv1", "dtype");
    expect_open_fail(input_dtype, STEP_QUANT, "quant", "dtype");
    expect_open_fail(record_shape, STEP_POOL, "pool", "bytes");
    expect_open_fail(old_version, STEP_FC, "fc", "version");
    expect_open_fail(little_scratch, STEP_CONV1, "conv1", "scratch");
    expect_open_fail(output_in_const, STEP_POOL, "pool", "constant");
}

/* Every truncation of a record (with the step and header agreeing) fails
 * the structural check instead of reading past it. */
Test(npurt, every_record_truncation_is_rejected)
{
    ir_graph *g = cnn_graph();
    asm_state *a = malloc(sizeof *a);
    asm_init(a, g);
    for (uint32_t s = 0; s < a->n_steps; s++) {
        uint32_t size = a->steps[s].b, scratch;
        npurt_fault f;
        uint8_t *copy = malloc(size);
        memcpy(copy, rec_of(a, s), size);
        cr_assert_eq(npurt_rec_check(copy, size, &scratch, &f), 0, "step %u: %s", s, f.msg);
        for (uint32_t cut = 0; cut < size; cut += 4) {
            if (cut >= sizeof(npurt_rec_header))
                ((npurt_rec_header *)copy)->size = cut;
            cr_assert_eq(npurt_rec_check(copy, cut, &scratch, &f), -1, "step %u cut at %u accepted", s, cut);
        }
        free(copy);
    }
    asm_free(a);
    free(a);
    ir_graph_free(g);
}

/* ---- npurt_run: environment, NPU steps, the step hook ----------------------- */

typedef struct fake_npu {
    int calls, fail_with;
    uint32_t first, count;
    uint8_t *region[4];
} fake_npu;

static int fake_launch(void *ud, const npub_view *v, uint32_t first, uint32_t count, uint8_t *const region[4])
{
    fake_npu *f = ud;
    (void)v;
    f->calls++;
    f->first = first;
    f->count = count;
    memcpy(f->region, region, sizeof f->region);
    return f->fail_with;
}

static void count_steps(void *ud, uint32_t step, int done)
{
    int *calls = ud;
    (void)step;
    calls[done ? 1 : 0]++;
}

/* The cnn graph with an NPU step (command words 1..2) in front. */
static void *npu_blob(ir_graph *g, size_t *size)
{
    asm_state *a = malloc(sizeof *a);
    asm_init(a, g);
    memmove(a->steps + 1, a->steps, sizeof(npub_step) * a->n_steps);
    a->n_steps++;
    a->steps[0] = (npub_step){.kind = NPUB_STEP_NPU, .a = 1, .b = 2, .name = add_string(a, "npu0")};
    a->n_cmds = 4;
    void *blob = assemble(a, size);
    asm_free(a);
    free(a);
    return blob;
}

Test(npurt, run_launches_npu_steps_with_region_bases)
{
    ir_graph *g = cnn_graph();
    size_t size;
    void *blob = npu_blob(g, &size);
    npub_view v;
    npub_error pe;
    cr_assert_eq(npurt_open(blob, size, &v, &pe), 0, "%s", pe.msg);
    npurt_env env;
    env_alloc(&v, &env);
    fake_npu f = {0};
    int hook[2] = {0, 0};
    env.npu_launch = fake_launch;
    env.npu_ud = &f;
    env.on_step = count_steps;
    env.step_ud = hook;
    cr_assert_eq(npurt_run(&v, &env, &pe), 0, "%s", pe.msg);
    cr_assert_eq(f.calls, 1);
    cr_assert(f.first == 1 && f.count == 2, "launched words %u+%u", f.first, f.count);
    cr_assert_eq(f.region[NPUB_REGION_CONST], v.constants, "const resolves to the blob's CONSTANTS");
    cr_assert_eq(f.region[NPUB_REGION_ARENA], env.region[NPUB_REGION_ARENA]);
    cr_assert_eq(f.region[NPUB_REGION_OUTPUT], env.region[NPUB_REGION_OUTPUT]);
    cr_assert(hook[0] == (int)v.n_steps && hook[1] == (int)v.n_steps, "hook %d/%d of %u", hook[0], hook[1],
              v.n_steps);

    f.fail_with = 5;
    cr_assert_eq(npurt_run(&v, &env, &pe), -1);
    cr_assert(strstr(pe.msg, "step 0 (node 'npu0', NPU)") && strstr(pe.msg, "fault 5"), "%s", pe.msg);
    env.npu_launch = NULL;
    cr_assert_eq(npurt_run(&v, &env, &pe), -1);
    cr_assert(strstr(pe.msg, "npu_launch"), "%s", pe.msg);
    env_free(&env);
    free(blob);
    ir_graph_free(g);
}

Test(npurt, run_checks_the_environment)
{
    ir_graph *g = cnn_graph();
    asm_state *a = malloc(sizeof *a);
    asm_init(a, g);
    size_t size;
    void *blob = assemble(a, &size);
    npub_view v;
    npub_error pe;
    cr_assert_eq(npurt_open(blob, size, &v, &pe), 0, "%s", pe.msg);
    npurt_env env;
    env_alloc(&v, &env);
    env.region_size[NPUB_REGION_ARENA] -= 1;
    cr_assert_eq(npurt_run(&v, &env, &pe), -1);
    cr_assert(strstr(pe.msg, "arena region"), "%s", pe.msg);
    env.region_size[NPUB_REGION_ARENA] += 1;
    env.scratch_size = v.memory->scratch_bytes - 1;
    cr_assert_eq(npurt_run(&v, &env, &pe), -1);
    cr_assert(strstr(pe.msg, "scratch"), "%s", pe.msg);
    env.scratch_size = v.memory->scratch_bytes;
    uint8_t *in = env.region[NPUB_REGION_INPUT];
    env.region[NPUB_REGION_INPUT] = NULL;
    cr_assert_eq(npurt_run(&v, &env, &pe), -1);
    cr_assert(strstr(pe.msg, "input region"), "%s", pe.msg);
    env.region[NPUB_REGION_INPUT] = in;
    /* an explicit const region (a copy of the constants) is used instead of the blob's */
    uint8_t *cst = malloc(v.constants_size);
    memcpy(cst, v.constants, v.constants_size);
    env.region[NPUB_REGION_CONST] = cst;
    env.region_size[NPUB_REGION_CONST] = v.constants_size;
    cr_assert_eq(npurt_run(&v, &env, &pe), 0, "%s", pe.msg);
    free(cst);
    env_free(&env);
    free(blob);
    asm_free(a);
    free(a);
    ir_graph_free(g);
}

/* ---- what the emitter accepts -------------------------------------------- */

Test(npurt, host_support_says_why_not)
{
    ir_graph *g = cnn_graph();
    const char *why = NULL;
    ir_node *conv = g->nodes[STEP_CONV1];
    conv->act.kind = IR_ACT_LEAKY_RELU; /* not a clamp: needs a LUT */
    cr_assert_not(emit_host_supports(g, conv, &why));
    cr_assert(why && strstr(why, "quantization parameters"), "%s", why ? why : "(null)");
    emit_blob params;
    emit_blob_init(&params, npu_alloc_default());
    asm_state *a = calloc(1, sizeof *a);
    a->index = malloc(sizeof(uint32_t) * (size_t)g->n_tensors);
    for (int i = 0; i < g->n_tensors; i++)
        a->index[i] = NPUB_NONE;
    a->strings_size = 1;
    emit_blob_init(&a->consts, npu_alloc_default());
    emit_blob_init(&a->params, npu_alloc_default());
    emit_tensor_map map = {map_index, a};
    uint16_t k;
    uint32_t off, sz, scratch;
    npu_err e;
    cr_assert_eq(emit_host_step(g, conv, &map, &params, &k, &off, &sz, &scratch, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "conv1") && strstr(e.msg, "LeakyRelu"), "%s", e.msg);
    cr_assert_eq(params.size, 0, "nothing appended on failure");
    conv->act.kind = IR_ACT_NONE;

    /* a float Conv: no host kernel; an int8 Softmax: f32 only */
    ir_tensor *q = g->nodes[STEP_QUANT]->outputs[0];
    q->quant = NULL;
    q->dtype = IR_F32;
    cr_assert_not(emit_host_supports(g, conv, &why));
    cr_assert(why && strstr(why, "no host kernel"), "%s", why ? why : "(null)");
    ir_node *sm = g->nodes[g->n_nodes - 1];
    ir_tensor *dq = sm->inputs[0];
    dq->dtype = IR_I8;
    cr_assert_not(emit_host_supports(g, sm, &why));
    cr_assert(why && strstr(why, "f32"), "%s", why ? why : "(null)");
    emit_blob_free(&params);
    asm_free(a);
    free(a);
    ir_graph_free(g);
}

/* ---- the same binaries in the firmware on the simulated rv32 host ---------- */

static const char *fw_path(void)
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

static void console_fn(void *ud, const char *text, size_t len)
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

/* Places blob, inputs, arena and scratch, runs FW_CMD_RUN_NPUB (with an NPU
 * model attached when npu is non-NULL). */
static void run_firmware_npu(const void *blob, size_t size, const void *const *inputs, npu_model *npu,
                             fw_run *run)
{
    npub_view v;
    npub_error pe;
    cr_assert_eq(npub_open(blob, size, &v, &pe), 0, "%s", pe.msg);
    memset(run, 0, sizeof *run);
    sim_config cfg;
    sim_config_default(&cfg);
    cfg.console_fn = console_fn;
    cfg.console_ud = &run->con;
    sim_ctx *s;
    npu_err e;
    cr_assert_eq(sim_new(&cfg, &s, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(sim_load_elf_file(s, fw_path(), &e), NPU_OK, "%s (run make first)", e.msg);
    if (npu)
        sim_attach_npu(s, npu_model_sim_ops(), npu);
    uint32_t blob_at, in_at, out_at, arena_at, scratch_at;
    cr_assert_eq(sim_place_flash(s, blob, size, 64, &blob_at, &e), NPU_OK, "%s", e.msg);
    const uint32_t *rb = v.memory->region_bytes;
    uint32_t scratch = v.memory->scratch_bytes + 8 * v.n_steps + 16;
    uint8_t *in = calloc(1, rb[NPUB_REGION_INPUT] + 1), *zeros = calloc(1, scratch + rb[1] + rb[3] + 16);
    for (uint32_t i = 0; i < v.io->n_inputs; i++)
        memcpy(in + v.tensors[v.inputs[i]].offset, inputs[i], v.tensors[v.inputs[i]].size);
    cr_assert_eq(sim_place_dram(s, in, rb[NPUB_REGION_INPUT], 16, &in_at, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(sim_place_dram(s, zeros, rb[NPUB_REGION_OUTPUT], 16, &out_at, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(sim_place_dram(s, zeros, rb[NPUB_REGION_ARENA] + 1, 16, &arena_at, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(sim_place_dram(s, zeros, scratch, 16, &scratch_at, &e), NPU_OK, "%s", e.msg);
    fw_request req = {.magic = FW_REQ_MAGIC, .version = FW_REQ_VERSION, .command = FW_CMD_RUN_NPUB};
    req.arg[FW_NPUB_ARG_BLOB] = blob_at;
    req.arg[FW_NPUB_ARG_BLOB_SIZE] = (uint32_t)size;
    req.arg[FW_NPUB_ARG_INPUT] = in_at;
    req.arg[FW_NPUB_ARG_OUTPUT] = out_at;
    req.arg[FW_NPUB_ARG_ARENA] = arena_at;
    req.arg[FW_NPUB_ARG_ARENA_SIZE] = rb[NPUB_REGION_ARENA] + 1;
    req.arg[FW_NPUB_ARG_SCRATCH] = scratch_at;
    req.arg[FW_NPUB_ARG_SCRATCH_SIZE] = scratch;
    uint32_t req_at;
    cr_assert_eq(sim_place_request(s, &req, &req_at, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(sim_run(s, &run->r, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(sim_mem_read(s, req_at, &run->back, sizeof run->back, &e), NPU_OK, "%s", e.msg);
    run->out = malloc(rb[NPUB_REGION_OUTPUT] + 1);
    cr_assert_eq(sim_mem_read(s, out_at, run->out, rb[NPUB_REGION_OUTPUT], &e), NPU_OK, "%s", e.msg);
    if (run->back.result[FW_NPUB_RES_STEP_TABLE]) {
        run->steps = malloc(8 * v.n_steps);
        cr_assert_eq(sim_mem_read(s, run->back.result[FW_NPUB_RES_STEP_TABLE], run->steps, 8 * v.n_steps, &e),
                     NPU_OK, "%s", e.msg);
    }
    free(in);
    free(zeros);
    sim_free(s);
}

static void run_firmware(const void *blob, size_t size, const void *const *inputs, fw_run *run)
{
    run_firmware_npu(blob, size, inputs, NULL, run);
}

Test(npurt, firmware_runs_the_binary_bit_exactly)
{
    ir_graph *g = cnn_graph();
    float *x = random_input(3 * 8 * 8, 1);
    const void *in[1] = {x};
    size_t out_bytes;
    uint8_t *want = reference_output(g, in, &out_bytes);
    asm_state *a = malloc(sizeof *a);
    asm_init(a, g);
    size_t size;
    void *blob = assemble(a, &size);
    fw_run *run = malloc(sizeof *run);
    run_firmware(blob, size, in, run);
    cr_assert_eq(run->r.exit_code, 0, "exit %d: %s", run->r.exit_code, run->con.text);
    cr_assert_eq(run->back.status, FW_REQ_ST_DONE);
    cr_assert_eq(run->back.result[FW_NPUB_RES_STATUS], 0);
    cr_assert_eq(run->back.result[FW_NPUB_RES_STEPS], a->n_steps);
    cr_assert_eq(run->back.result[FW_NPUB_RES_JOBS], 0, "an all-host binary starts no NPU job");
    cr_assert_gt(run->back.result[FW_NPUB_RES_CYCLES_LO], 1000);
    uint32_t y_off = a->tensors[a->io[2 + a->io[0]]].offset;
    compare_bytes(run->out + y_off, want, out_bytes, "firmware");
    cr_assert_not_null(run->steps, "the scratch had room for the step table");
    uint64_t sum = 0;
    for (uint32_t i = 0; i < a->n_steps; i++) {
        cr_assert_gt(run->steps[2 * i], 0, "step %u took no cycles", i);
        sum += run->steps[2 * i];
    }
    cr_assert_leq(sum, run->back.result[FW_NPUB_RES_CYCLES_LO]);
    free(run->out);
    free(run->steps);

    /* a broken record: the firmware says which step and exits with its code */
    rec_of(a, STEP_CONV1)->kernel = 99;
    a->steps[STEP_CONV1].op = 99;
    free(blob);
    blob = assemble(a, &size);
    run_firmware(blob, size, in, run);
    cr_assert_eq(run->r.exit_code, FW_EXIT_NPUB_BAD, "exit %d", run->r.exit_code);
    cr_assert_eq(run->back.result[FW_NPUB_RES_STATUS], FW_EXIT_NPUB_BAD);
    cr_assert(strstr(run->con.text, "npurt:") && strstr(run->con.text, "step 1 (node 'conv1'"), "%s",
              run->con.text);
    free(run->out);
    free(run->steps);
    free(run);
    free(blob);
    asm_free(a);
    free(a);
    free(want);
    free(x);
    ir_graph_free(g);
}

/* Corrupting any byte of any record (the CRCs recomputed, so npub_open
 * passes) never makes the runtime read or write outside its buffers: the
 * record is rejected, or it runs within its tensors (ASan checks this). */
Test(npurt, corrupted_records_are_rejected_or_run_in_bounds)
{
    ir_graph *g = cnn_graph();
    asm_state *a = malloc(sizeof *a);
    asm_init(a, g);
    size_t size;
    void *blob = assemble(a, &size);
    npub_view v;
    npub_error pe;
    cr_assert_eq(npurt_open(blob, size, &v, &pe), 0, "%s", pe.msg);
    npurt_env env;
    env_alloc(&v, &env);
    free(blob);
    static const uint8_t flips[] = {0x01, 0x80, 0xff};
    int rejected = 0, ran = 0;
    for (size_t i = 0; i < a->params.size; i++) {
        for (size_t k = 0; k < sizeof flips; k++) {
            a->params.data[i] ^= flips[k];
            blob = assemble(a, &size);
            if (npurt_open(blob, size, &v, &pe) == 0) {
                npurt_run(&v, &env, &pe);
                ran++;
            } else {
                cr_assert(strstr(pe.msg, "step "), "%s", pe.msg);
                rejected++;
            }
            free(blob);
            a->params.data[i] ^= flips[k];
        }
    }
    cr_log_info("%d rejected, %d ran", rejected, ran);
    cr_assert_gt(rejected, 0);
    cr_assert_gt(ran, 0, "changes to parameter values the kernels accept still run");
    env_free(&env);
    asm_free(a);
    free(a);
    ir_graph_free(g);
}

/* An NPU step in the firmware: the NPU model copies a constant (from the
 * const region in flash) into an arena tensor, then a host step requantizes
 * it into the output. This checks the region bases, the command range and
 * the doorbell/status handshake the firmware performs. */
Test(npurt, firmware_drives_the_npu_for_npu_steps)
{
    const char *root = getenv("NPUCC_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/targets/edge-v1.yaml", root && *root ? root : ".");
    tgt_target *t;
    npu_model *m;
    npu_err e;
    cr_assert_eq(tgt_load(path, NULL, &t, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(npu_model_new(t, npu_alloc_default(), &m, &e), NPU_OK, "%s", e.msg);

    ir_graph *g = ir_graph_new(npu_alloc_default());
    enum { N = 64 };
    int64_t d[1] = {N};
    int8_t cv[N];
    for (int i = 0; i < N; i++)
        cv[i] = (int8_t)(i * 37 - 100);
    ir_tensor *c = ir_const_new(g, "c", IR_I8, 1, d, cv);
    ir_tensor *av = act(g, "a", 1, d, 0.05f, 3), *y = act(g, "y", 1, d, 0.08f, -2);
    ir_node *rq = node(g, IR_OP_REQUANTIZE, "rq", 1, &av, y);
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->outputs[0] = y;
    y->flags |= IR_TENSOR_OUTPUT;
    g->n_outputs = 1;

    asm_state *a = malloc(sizeof *a);
    asm_init(a, g);
    const npub_tensor *ct = &a->tensors[map_index(a, c)], *at = &a->tensors[map_index(a, av)];
    size_t nw = 0, k;
    const tgt_kv ld[] = {{"region", TGT_REGION_CONSTANTS},
                         {"dram", ct->offset},
                         {"sram", 0},
                         {"c", 1},
                         {"h", 1},
                         {"w", N},
                         {"dram_hs", N},
                         {"dram_cs", N},
                         {"sram_hs", N},
                         {"sram_cs", N},
                         {"signal", 1}};
    const tgt_kv st[] = {{"ch", 1},
                         {"region", TGT_REGION_ARENA},
                         {"dram", at->offset},
                         {"sram", 0},
                         {"c", 1},
                         {"h", 1},
                         {"w", N},
                         {"dram_hs", N},
                         {"dram_cs", N},
                         {"sram_hs", N},
                         {"sram_cs", N},
                         {"wait", 1}};
    const tgt_kv end[] = {{"wait", 0}};
    cr_assert_eq(tgt_encode_named(t->isa, "dma_load", ld, 11, a->cmds, 64, &k, &e), NPU_OK, "%s", e.msg);
    nw += k;
    cr_assert_eq(tgt_encode_named(t->isa, "dma_store", st, 12, a->cmds + nw, 64 - nw, &k, &e), NPU_OK, "%s",
                 e.msg);
    nw += k;
    cr_assert_eq(tgt_encode_named(t->isa, "end", end, 1, a->cmds + nw, 64 - nw, &k, &e), NPU_OK, "%s", e.msg);
    nw += k;
    a->cmds[nw] = 0xffffffffu; /* past `end`: never read */
    a->n_cmds = (uint32_t)nw + 1;
    memmove(a->steps + 1, a->steps, sizeof(npub_step) * a->n_steps);
    a->n_steps++;
    a->steps[0] =
        (npub_step){.kind = NPUB_STEP_NPU, .a = 0, .b = (uint32_t)nw, .name = add_string(a, "npu_copy")};
    size_t size;
    void *blob = assemble(a, &size);

    fw_run *run = malloc(sizeof *run);
    run_firmware_npu(blob, size, NULL, m, run);
    cr_assert_eq(run->r.exit_code, 0, "exit %d: %s %s", run->r.exit_code, run->r.msg, run->con.text);
    cr_assert_eq(run->back.result[FW_NPUB_RES_JOBS], 1);
    cr_assert_not_null(run->steps);
    cr_assert_gt(run->steps[0], 0);
    nk_qrequant_params p;
    cr_assert_eq(ref_qrequant_params(rq, av, y, &p, &e), NPU_OK, "%s", e.msg);
    int8_t want[N];
    cr_assert_eq(nk_qrequant(&p, cv, want, N), NK_OK);
    compare_bytes(run->out + a->tensors[map_index(a, y)].offset, (const uint8_t *)want, N, "firmware + NPU");
    cr_assert_eq(npu_model_totals(m)->dram_write, N, "the NPU wrote the arena tensor");
    free(run->out);
    free(run->steps);
    free(run);
    free(blob);
    asm_free(a);
    free(a);
    ir_graph_free(g);
    npu_model_free(m);
    tgt_free(t);
}

/* Transposes (int8 in the quantized part, f32 after it) and a float
 * reduction with a fused activation. */
Test(npurt, transposes_and_reductions_match_reference)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 3, 4, 5}, td[4] = {1, 4, 5, 3}, fd[4] = {3, 5, 4, 1}, rd[3] = {3, 4, 1};
    ir_tensor *x = fact(g, "x", 4, xd), *q = act(g, "q", 4, xd, 1.0f / 127, 5);
    ir_tensor *tq = act(g, "tq", 4, td, 1.0f / 127, 5), *dq = fact(g, "dq", 4, td);
    ir_tensor *tf = fact(g, "tf", 4, fd), *y = fact(g, "y", 3, rd);
    quantize(g, "quant", x, q);
    int64_t p1[4] = {0, 2, 3, 1};
    ir_set_ints(g, node(g, IR_OP_TRANSPOSE, "nhwc", 1, &q, tq), "perm", 4, p1);
    dequantize(g, "dequant", tq, dq);
    node(g, IR_OP_TRANSPOSE, "reverse", 1, &dq, tf); /* no perm: the dims reversed */
    ir_node *r = node(g, IR_OP_REDUCE_MEAN, "mean", 1, &tf, y);
    int64_t axes[1] = {-3};
    ir_set_ints(g, r, "axes", 1, axes);
    ir_set_int(g, r, "keepdims", 0);
    r->act.kind = IR_ACT_RELU;
    set_io(g, 1, &x, y);
    float *xv = random_input(60, 9);
    const void *in[1] = {xv};
    check_graph(g, in);
    free(xv);
    ir_graph_free(g);
}

/* The example model through the real front end (import, opt, calibration
 * on a few samples, quantization, int8 and int4 weights), then all-host on
 * the runtime: the quantizer's graph as it is, not one written for the test. */
static ir_graph *fmnist_quantized(int wbits)
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
    cal_input_spec spec = {in->name, in->rank, in->dims};
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

Test(npurt, quantized_example_model_matches_reference)
{
    for (int wbits = 8; wbits >= 4; wbits -= 4) {
        ir_graph *g = fmnist_quantized(wbits);
        int i4 = 0;
        for (int i = 0; i < g->n_tensors; i++)
            i4 += g->tensors[i]->dtype == IR_I4;
        cr_assert_eq(i4 > 0, wbits == 4, "%d int4 tensors with %d-bit weights", i4, wbits);
        float *x = random_input(28 * 28, 10);
        for (int i = 0; i < 28 * 28; i++)
            x[i] = x[i] * 0.5f + 0.5f; /* images in [0, 1] */
        const void *in[1] = {x};
        check_graph(g, in);
        if (wbits == 8) { /* and the same binary in the firmware */
            size_t out_bytes, size;
            uint8_t *want = reference_output(g, in, &out_bytes);
            asm_state *a = malloc(sizeof *a);
            asm_init(a, g);
            void *blob = assemble(a, &size);
            fw_run *run = malloc(sizeof *run);
            run_firmware(blob, size, in, run);
            cr_assert_eq(run->r.exit_code, 0, "exit %d: %s", run->r.exit_code, run->con.text);
            compare_bytes(run->out + a->tensors[a->io[2 + a->io[0]]].offset, want, out_bytes, "firmware");
            cr_log_info("fmnist in the firmware: %u host cycles, %llu instructions",
                        run->back.result[FW_NPUB_RES_CYCLES_LO], (unsigned long long)run->r.stats.insns);
            free(run->out);
            free(run->steps);
            free(run);
            free(blob);
            asm_free(a);
            free(a);
            free(want);
        }
        free(x);
        ir_graph_free(g);
    }
}
