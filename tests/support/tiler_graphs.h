/* Test helpers of the tiler's tests: hand-built quantized graphs (conv,
 * gemm, pools, eltwise, lut, concat), a hand-made memory plan and a one-step
 * schedule, the structural check of a program (every instruction decodes and
 * passes tgt_check, tokens are signalled before they are waited on, DMA stays
 * inside its region) and, with the NPU model, the bit-exact comparison of a
 * program's output with the reference executor's. */
#ifndef TESTS_TILER_GRAPHS_H
#define TESTS_TILER_GRAPHS_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/nk_quant.h"
#include "ref/ref.h"
#include "tests/support/testgraph.h"
#include "tiler/tiler.h"

#if __has_include("sim/npu.h")
#include "sim/npu.h"
#define HAVE_NPU_MODEL 1
#endif

static const char *const targets[] = {"edge-v1", "edge-v1-lite", "edge-v1-wide", "edge-v1-narrow"};
#define N_TARGETS 4

static inline tgt_target *load_target(const char *name)
{
    const char *r = getenv("NPUCC_ROOT");
    char p[1024];
    snprintf(p, sizeof p, "%s/targets/%s.yaml", r && *r ? r : ".", name);
    tgt_target *t = NULL;
    npu_err e;
    cr_assert_eq(tgt_load(p, NULL, &t, &e), NPU_OK, "%s", e.msg);
    return t;
}

/* ---- building quantized graphs ---- */

static inline uint32_t rng_next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static inline ir_quant *quant(ir_graph *g, int count, float scale0, float step)
{
    ir_quant *q = npu_arena_alloc(g->arena, sizeof *q);
    q->axis = count > 1 ? 0 : -1;
    q->count = count;
    q->scale = npu_arena_alloc(g->arena, sizeof(float) * (size_t)count);
    q->zero_point = npu_arena_alloc(g->arena, sizeof(int32_t) * (size_t)count);
    for (int i = 0; i < count; i++)
        q->scale[i] = scale0 + step * (float)(i % 7);
    return q;
}

static inline ir_tensor *act(ir_graph *g, const char *name, int rank, const int64_t *dims, float scale, int32_t zp)
{
    ir_tensor *t = ir_tensor_new(g, name, IR_I8, rank, dims);
    cr_assert_not_null(t);
    t->quant = quant(g, 1, scale, 0);
    t->quant->zero_point[0] = zp;
    return t;
}

static inline ir_tensor *rand_const(ir_graph *g, const char *name, ir_dtype dt, int rank, const int64_t *dims, int lo, int hi,
                             uint32_t seed)
{
    ir_tensor *t = ir_const_new(g, name, dt, rank, dims, NULL);
    cr_assert_not_null(t);
    int64_t n = ir_tensor_numel(t);
    uint32_t s = seed;
    if (dt == IR_I4) {
        int8_t *tmp = malloc((size_t)n);
        for (int64_t i = 0; i < n; i++)
            tmp[i] = (int8_t)(lo + (int)(rng_next(&s) % (uint32_t)(hi - lo + 1)));
        cr_assert_eq(nk_int4_pack(tmp, t->data, (size_t)n), NK_OK);
        free(tmp);
    } else if (dt == IR_I32) {
        for (int64_t i = 0; i < n; i++)
            ((int32_t *)t->data)[i] = lo + (int32_t)(rng_next(&s) % (uint32_t)(hi - lo + 1));
    } else {
        for (int64_t i = 0; i < n; i++)
            ((int8_t *)t->data)[i] = (int8_t)(lo + (int)(rng_next(&s) % (uint32_t)(hi - lo + 1)));
    }
    return t;
}

typedef struct conv_spec {
    int64_t n, c, h, w, oc, k, stride, pad, groups;
    ir_dtype wdt;
    bool relu;
    int64_t dil; /* 0: 1 */
} conv_spec;

static inline ir_tensor *add_conv(ir_graph *g, ir_tensor *x, const conv_spec *s, const char *name, uint32_t seed)
{
    int64_t d = s->dil ? s->dil : 1, ext = d * (s->k - 1) + 1;
    int64_t oh = (s->h + 2 * s->pad - ext) / s->stride + 1, ow = (s->w + 2 * s->pad - ext) / s->stride + 1;
    int64_t yd[4] = {s->n, s->oc, oh, ow}, wd[4] = {s->oc, s->c / s->groups, s->k, s->k}, bd[1] = {s->oc};
    char nm[64];
    snprintf(nm, sizeof nm, "%s:y", name);
    ir_tensor *y = act(g, nm, 4, yd, 0.05f, s->relu ? -128 : 3);
    snprintf(nm, sizeof nm, "%s:w", name);
    bool i4 = s->wdt == IR_I4;
    ir_tensor *w = rand_const(g, nm, s->wdt, 4, wd, i4 ? -8 : -127, i4 ? 7 : 127, seed);
    w->quant = quant(g, (int)s->oc, i4 ? 0.02f : 0.002f, 0.0003f);
    snprintf(nm, sizeof nm, "%s:b", name);
    ir_tensor *b = rand_const(g, nm, IR_I32, 1, bd, -2000, 2000, seed + 1);
    ir_tensor *ins[3] = {x, w, b};
    ir_node *n = ir_node_new(g, IR_OP_CONV, name, 3, ins, 1, &y);
    int64_t st[2] = {s->stride, s->stride}, pads[4] = {s->pad, s->pad, s->pad, s->pad}, dl[2] = {d, d};
    ir_set_ints(g, n, "strides", 2, st);
    ir_set_ints(g, n, "dilations", 2, dl);
    ir_set_ints(g, n, "pads", 4, pads);
    ir_set_int(g, n, "group", s->groups);
    if (s->relu)
        n->act.kind = IR_ACT_RELU;
    return y;
}

/* x (float32) and its QuantizeLinear to int8 (scale 0.02, zero point -3), the model input's. */
static inline ir_tensor *add_quantize(ir_graph *g, const int64_t *xd, ir_tensor **x)
{
    *x = ir_tensor_new(g, "x", IR_F32, 4, xd);
    ir_tensor *xq = act(g, "x:q", 4, xd, 0.02f, -3);
    float sc = 0.02f;
    int8_t zp = -3;
    ir_tensor *ins[3] = {*x, ir_const_new(g, "x:scale", IR_F32, 0, NULL, &sc),
                         ir_const_new(g, "x:zp", IR_I8, 0, NULL, &zp)};
    cr_assert(*x && ins[1] && ins[2]);
    ir_node_new(g, IR_OP_QUANTIZE_LINEAR, "quantize", 3, ins, 1, &xq);
    return xq;
}

/* A pool over y: op, a k x k window, stride s, pads p (a global pool ignores them). */
typedef struct pool_spec {
    ir_op op;
    int64_t k, s, p;
    bool ceil_mode, count_pad;
} pool_spec;

static inline ir_tensor *add_pool(ir_graph *g, ir_tensor *y, const pool_spec *s)
{
    bool global = s->op == IR_OP_GLOBAL_AVERAGE_POOL || s->op == IR_OP_GLOBAL_MAX_POOL;
    bool max = s->op == IR_OP_MAX_POOL || s->op == IR_OP_GLOBAL_MAX_POOL;
    int64_t h = y->dims[2], w = y->dims[3], extra = s->ceil_mode ? s->s - 1 : 0;
    int64_t yd[4] = {1, y->dims[1], global ? 1 : (h + 2 * s->p - s->k + extra) / s->s + 1,
                     global ? 1 : (w + 2 * s->p - s->k + extra) / s->s + 1};
    ir_tensor *z = act(g, "z", 4, yd, max ? 0.05f : 0.03f, max ? -128 : -7);
    ir_node *n = ir_node_new(g, s->op, "pool", 1, &y, 1, &z);
    if (global)
        return z;
    int64_t ks[2] = {s->k, s->k}, st[2] = {s->s, s->s}, pads[4] = {s->p, s->p, s->p, s->p};
    ir_set_ints(g, n, "kernel_shape", 2, ks);
    ir_set_ints(g, n, "strides", 2, st);
    ir_set_ints(g, n, "pads", 4, pads);
    ir_set_int(g, n, "ceil_mode", s->ceil_mode);
    ir_set_int(g, n, "count_include_pad", s->count_pad);
    return z;
}

static inline ir_graph *conv_graph(const conv_spec *s)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {s->n, s->c, s->h, s->w};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, -5);
    ir_tensor *y = add_conv(g, x, s, "conv", 7);
    tg_set_io(g, 1, &x, y);
    return g;
}

static inline ir_graph *gemm_graph(int64_t M, int64_t K, int64_t N, ir_dtype wdt)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[2] = {M, K}, yd[2] = {M, N}, wd[2] = {N, K}, bd[1] = {N};
    ir_tensor *x = act(g, "x", 2, xd, 0.03f, 2);
    ir_tensor *y = act(g, "y", 2, yd, 0.08f, -7);
    bool i4 = wdt == IR_I4;
    ir_tensor *w = rand_const(g, "w", wdt, 2, wd, i4 ? -8 : -127, i4 ? 7 : 127, 11);
    w->quant = quant(g, (int)N, i4 ? 0.02f : 0.002f, 0.0002f);
    ir_tensor *b = rand_const(g, "b", IR_I32, 1, bd, -3000, 3000, 12);
    ir_tensor *ins[3] = {x, w, b};
    ir_node *n = ir_node_new(g, IR_OP_GEMM, "fc", 3, ins, 1, &y);
    ir_set_int(g, n, "transB", 1);
    tg_set_io(g, 1, &x, y);
    return g;
}

static inline ir_graph *pool_graph_ex(ir_op op, int64_t C, int64_t H, int64_t k, int64_t s, int64_t p, float out_scale,
                               bool ceil_mode, bool count_pad)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    bool global = op == IR_OP_GLOBAL_AVERAGE_POOL || op == IR_OP_GLOBAL_MAX_POOL;
    int64_t oh = global ? 1 : (H + 2 * p - k + (ceil_mode ? s - 1 : 0)) / s + 1;
    int64_t xd[4] = {1, C, H, H}, yd[4] = {1, C, oh, oh};
    ir_tensor *x = act(g, "x", 4, xd, 0.05f, 4);
    ir_tensor *y = act(g, "y", 4, yd, out_scale, -3);
    ir_node *n = ir_node_new(g, op, "pool", 1, &x, 1, &y);
    if (!global) {
        int64_t ks[2] = {k, k}, st[2] = {s, s}, pads[4] = {p, p, p, p};
        ir_set_ints(g, n, "kernel_shape", 2, ks);
        ir_set_ints(g, n, "strides", 2, st);
        ir_set_ints(g, n, "pads", 4, pads);
        ir_set_int(g, n, "ceil_mode", ceil_mode);
        ir_set_int(g, n, "count_include_pad", count_pad);
    }
    tg_set_io(g, 1, &x, y);
    return g;
}

static inline ir_graph *pool_graph(ir_op op, int64_t C, int64_t H, int64_t k, int64_t s, int64_t p, float out_scale)
{
    return pool_graph_ex(op, C, H, k, s, p, out_scale, false, false);
}

static inline ir_graph *binary_graph(ir_op op, int rank, const int64_t *ad, const int64_t *bd, const int64_t *yd, bool relu)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    ir_tensor *a = act(g, "a", rank, ad, 0.05f, 3);
    ir_tensor *b = act(g, "b", rank, bd, 0.03f, -9);
    ir_tensor *y = act(g, "y", rank, yd, 0.07f, -20);
    ir_tensor *ins[2] = {a, b};
    ir_node *n = ir_node_new(g, op, "bin", 2, ins, 1, &y);
    if (relu)
        n->act.kind = IR_ACT_RELU;
    tg_set_io(g, 2, ins, y);
    return g;
}

static inline ir_graph *lut_graph(int64_t n)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[2] = {1, n}, td[1] = {256};
    ir_tensor *x = act(g, "x", 2, d, 0.05f, 0);
    ir_tensor *y = act(g, "y", 2, d, 1.0f / 256, -128);
    ir_tensor *tab = rand_const(g, "table", IR_I8, 1, td, -128, 127, 5);
    ir_tensor *ins[2] = {x, tab};
    ir_node_new(g, IR_OP_LUT, "lut", 2, ins, 1, &y);
    tg_set_io(g, 1, &x, y);
    return g;
}

/* Two convs into a channel concat (the second input requantized), then a flatten. */
static inline ir_graph *concat_graph(void)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 8, 12, 12};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, 1);
    conv_spec s1 = {1, 8, 12, 12, 16, 3, 1, 1, 1, IR_I8, true, 1}, s2 = {1, 8, 12, 12, 8, 1, 1, 0, 1, IR_I8, false, 1};
    ir_tensor *a = add_conv(g, x, &s1, "c1", 21), *b = add_conv(g, x, &s2, "c2", 22);
    b->quant->scale[0] = 0.06f, b->quant->zero_point[0] = -2; /* requantized into its slice */
    a->quant->scale[0] = 0.05f, a->quant->zero_point[0] = 3;
    int64_t yd[4] = {1, 24, 12, 12}, fd[2] = {1, 24 * 144};
    ir_tensor *y = act(g, "cat", 4, yd, 0.05f, 3);
    ir_tensor *ins[2] = {a, b};
    ir_node *n = ir_node_new(g, IR_OP_CONCAT, "concat", 2, ins, 1, &y);
    ir_set_int(g, n, "axis", 1);
    ir_tensor *f = act(g, "flat", 2, fd, 0.05f, 3);
    ir_node_new(g, IR_OP_FLATTEN, "flatten", 1, &y, 1, &f);
    tg_set_io(g, 1, &x, f);
    return g;
}

/* ---- plan, schedule, program ---- */

typedef struct built {
    ir_graph *g;
    mp_plan plan;
    part_schedule sched;
    emit_blob consts;
    tile_program prog;
} built;

/* Every activation at its own offset; graph inputs/outputs in their regions. */
static inline void make_plan(ir_graph *g, mp_plan *p, bool alias_views)
{
    memset(p, 0, sizeof *p);
    p->n_tensors = g->n_tensors;
    p->t = npu_arena_alloc(g->arena, sizeof *p->t * (size_t)g->n_tensors);
    for (int i = 0; i < g->n_tensors; i++) {
        ir_tensor *t = g->tensors[i];
        mp_tensor *m = &p->t[t->id];
        m->alias_of = -1;
        m->size = (int64_t)ir_tensor_bytes(t);
        if (t->data) {
            m->region = MP_REGION_CONST, m->offset = -1;
            continue;
        }
        m->region = t->flags & IR_TENSOR_INPUT ? MP_REGION_INPUT
                    : t->flags & IR_TENSOR_OUTPUT ? MP_REGION_OUTPUT
                                                  : MP_REGION_ARENA;
        m->offset = (p->region_bytes[m->region] + 63) & ~(int64_t)63;
        p->region_bytes[m->region] = m->offset + m->size;
    }
    if (!alias_views)
        return;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->op == IR_OP_FLATTEN) { /* the view's output shares its input's bytes */
            p->t[n->outputs[0]->id].alias_of = n->inputs[0]->id;
            p->t[n->outputs[0]->id].region = p->t[n->inputs[0]->id].region;
            p->t[n->outputs[0]->id].offset = p->t[n->inputs[0]->id].offset;
        }
    }
}

/* Builds g on the plan already in b->plan, every node on the NPU. */
static inline npu_status build_planned(const tgt_target *t, ir_graph *g, built *b, npu_err *e)
{
    b->g = g;
    b->sched.n_steps = 1;
    b->sched.steps = npu_arena_alloc(g->arena, sizeof *b->sched.steps);
    b->sched.steps[0] = (part_step){IR_UNIT_NPU, 0, g->n_nodes};
    for (int i = 0; i < g->n_nodes; i++)
        g->nodes[i]->unit = IR_UNIT_NPU;
    emit_blob_init(&b->consts, npu_alloc_default());
    return tile_build(t, g, &b->sched, &b->plan, &b->consts, npu_alloc_default(), &b->prog, e);
}

static inline npu_status build(const tgt_target *t, ir_graph *g, built *b, npu_err *e)
{
    memset(b, 0, sizeof *b);
    make_plan(g, &b->plan, false);
    return build_planned(t, g, b, e);
}

static inline void built_free(built *b)
{
    tile_program_free(&b->prog, npu_alloc_default());
    emit_blob_free(&b->consts);
    ir_graph_free(b->g);
}

/* Decodes every instruction, checks it, counts instructions per semantics
 * and checks that in program order no token is waited on before it is signalled. */
/* check_program's counts: one per semantics, then the conv and dwconv instructions with the eltwise epilogue. */
enum { TG_EPI_ELT = TGT_SEM_COUNT, TG_COUNTS };

/* Does the target's conv have the eltwise epilogue (npu-v1; the tiler then runs a fused eltwise there)? */
static inline bool has_epi_elt(const tgt_target *t)
{
    return tgt_insn_field(t->isa, tgt_insn_for_sem(t->isa, TGT_SEM_CONV), TGT_F_EPI_ELT);
}

static inline void check_program(const tgt_target *t, const built *b, const char *what, int counts[TG_COUNTS])
{
    const tile_program *p = &b->prog;
    memset(counts, 0, sizeof(int) * TG_COUNTS);
    cr_assert_leq(p->sram_peak, t->p[TGT_P_SRAM_BYTES], "%s on %s: SRAM peak", what, t->name);
    cr_assert_gt(p->n_segments, 0, "%s on %s", what, t->name);
    for (int s = 0; s < p->n_segments; s++) {
        size_t off = p->segments[s].first_word, end = off + p->segments[s].n_words;
        int64_t tokens[16] = {0};
        tgt_sem last = TGT_SEM_COUNT;
        while (off < end) {
            tgt_decoded d;
            npu_err e;
            cr_assert_eq(tgt_decode(t->isa, p->words, end, off, &d, &e), NPU_OK, "%s on %s: %s", what, t->name, e.msg);
            cr_assert_eq(tgt_check(t, d.insn, d.v, &e), NPU_OK, "%s on %s: %s", what, t->name, e.msg);
            tgt_sem sem = t->isa->insns[d.insn].sem;
            counts[sem]++;
            counts[TG_EPI_ELT] += (int)d.v[TGT_F_EPI_ELT];
            for (int k = 0; k < 16; k++) {
                if (d.v[TGT_F_WAIT] >> k & 1) {
                    cr_assert_gt(tokens[k], 0, "%s on %s: word %zu waits on token %d before any signal", what,
                                 t->name, off, k);
                    tokens[k]--;
                }
                tokens[k] += d.v[TGT_F_SIGNAL] >> k & 1;
            }
            if (sem == TGT_SEM_DMA_LOAD || sem == TGT_SEM_DMA_STORE) {
                int64_t r = d.v[TGT_F_REGION];
                int64_t ext = d.v[TGT_F_DRAM] + (d.v[TGT_F_C] - 1) * d.v[TGT_F_DRAM_CS] +
                              (d.v[TGT_F_H] - 1) * d.v[TGT_F_DRAM_HS] + d.v[TGT_F_W];
                int64_t size = r == TGT_REGION_CONSTANTS || r == TGT_REGION_FLASH ? (int64_t)b->consts.size
                               : r < MP_REGION_COUNT                            ? b->plan.region_bytes[r]
                                                                               : -1;
                cr_assert_leq(ext, size, "%s on %s: DMA past its region %lld", what, t->name, (long long)r);
                if (sem == TGT_SEM_DMA_STORE)
                    cr_assert(r == TGT_REGION_ARENA || r == TGT_REGION_OUTPUTS, "%s: store into region %lld", what,
                              (long long)r);
            }
            last = sem;
            off += (size_t)d.nwords;
        }
        cr_assert_eq(last, TGT_SEM_END, "%s on %s: a segment ends with end", what, t->name);
    }
    for (int i = 0; i < p->n_layers; i++) {
        const tile_layer *L = &p->layers[i];
        if (L->n_words) {
            cr_assert_gt(L->cycles, 0, "%s: layer %s has cycles", what, L->node->name);
            cr_assert_gt(L->tiles, 0);
            cr_assert(L->sram_bytes > 0 && L->sram_bytes <= p->sram_peak);
        }
        cr_assert_geq(L->cycles, L->bound_cycles / 4, "%s on %s: %s estimate %lld far below its bound %lld", what,
                      t->name, L->node->name, (long long)L->cycles, (long long)L->bound_cycles);
    }
}

/* Does t's ISA have n tokens? */
static inline bool has_tokens(const tgt_target *t, int n)
{
    return tgt_field_max(t->isa, tgt_insn_for_sem(t->isa, TGT_SEM_SYNC), TGT_F_WAIT) >= (1 << n) - 1;
}

/* Calls visit on each of the layer's instructions in order, until it returns false. */
typedef bool (*insn_visit)(const tgt_target *t, const tgt_decoded *d, void *ud);
static inline void for_each_insn(const tgt_target *t, const tile_layer *L, const tile_program *p, insn_visit visit,
                                 void *ud)
{
    for (size_t off = L->first_word; off < (size_t)L->first_word + L->n_words;) {
        tgt_decoded d;
        npu_err e;
        cr_assert_eq(tgt_decode(t->isa, p->words, p->n_words, off, &d, &e), NPU_OK, "%s", e.msg);
        if (!visit(t, &d, ud))
            return;
        off += (size_t)d.nwords;
    }
}

typedef struct field_acc {
    tgt_sem sem;
    tgt_fid f;
    int64_t sum;
} field_acc;

static inline bool add_field(const tgt_target *t, const tgt_decoded *d, void *ud)
{
    field_acc *a = ud;
    if (t->isa->insns[d->insn].sem == a->sem)
        a->sum += a->f == TGT_F_COUNT ? d->v[TGT_F_C] * d->v[TGT_F_H] * d->v[TGT_F_W] : d->v[a->f];
    return true;
}

/* The sum of field f over the layer's instructions of semantics sem; f =
 * TGT_F_COUNT: the bytes of their boxes (DMA: C x H x W). */
static inline int64_t field_sum(const tgt_target *t, const tile_layer *L, const tile_program *p, tgt_sem sem,
                                tgt_fid f)
{
    field_acc a = {sem, f, 0};
    for_each_insn(t, L, p, add_field, &a);
    return a.sum;
}

typedef struct wait_acc {
    tgt_sem sem;
    int64_t mask, region;
    int64_t n;
} wait_acc;

static inline bool count_wait(const tgt_target *t, const tgt_decoded *d, void *ud)
{
    wait_acc *a = ud;
    a->n += t->isa->insns[d->insn].sem == a->sem && (d->v[TGT_F_WAIT] & a->mask);
    return true;
}

/* The layer's instructions of semantics sem that wait on a token of mask. */
static inline int64_t waits_on(const tgt_target *t, const tile_layer *L, const tile_program *p, tgt_sem sem,
                               int64_t mask)
{
    wait_acc a = {sem, mask, 0, 0};
    for_each_insn(t, L, p, count_wait, &a);
    return a.n;
}

static inline bool add_load_before(const tgt_target *t, const tgt_decoded *d, void *ud)
{
    wait_acc *a = ud;
    if (d->v[TGT_F_WAIT] & a->mask)
        return false;
    if (t->isa->insns[d->insn].sem == TGT_SEM_DMA_LOAD && d->v[TGT_F_REGION] == a->region)
        a->n += d->v[TGT_F_C] * d->v[TGT_F_H] * d->v[TGT_F_W];
    return true;
}

/* Bytes the layer loads from region before its first instruction that waits on a token of mask. */
static inline int64_t loads_before_wait(const tgt_target *t, const tile_layer *L, const tile_program *p, int region,
                                        int64_t mask)
{
    wait_acc a = {TGT_SEM_DMA_LOAD, mask, region, 0};
    for_each_insn(t, L, p, add_load_before, &a);
    return a.n;
}

static inline bool add_flash_off_channel_1(const tgt_target *t, const tgt_decoded *d, void *ud)
{
    int64_t *n = ud;
    *n += t->isa->insns[d->insn].sem == TGT_SEM_DMA_LOAD && d->v[TGT_F_REGION] == TGT_REGION_FLASH &&
          d->v[TGT_F_CH] != 1;
    return true;
}

/* The layer's loads over the flash bus that are not on DMA channel 1 (tile_load_flash's). */
static inline int64_t flash_loads_off_channel_1(const tgt_target *t, const tile_layer *L, const tile_program *p)
{
    int64_t n = 0;
    for_each_insn(t, L, p, add_flash_off_channel_1, &n);
    return n;
}

/* SRAM ranges the computes of a layer read or write (up to 64 distinct). */
typedef struct sram_spans {
    int n;
    int64_t lo[64], hi[64];
} sram_spans;

static inline bool add_compute_spans(const tgt_target *t, const tgt_decoded *d, void *ud)
{
    sram_spans *s = ud;
    if (t->isa->insns[d->insn].unit == TGT_UNIT_DMA || t->isa->insns[d->insn].unit == TGT_UNIT_CTRL)
        return true;
    tgt_operand op[TGT_MAX_OPERANDS];
    for (int i = 0, n = tgt_operands(t->isa, d->insn, d->v, op); i < n; i++) {
        int64_t lo = d->v[op[i].addr], hi = lo + op[i].bytes;
        bool known = op[i].dram;
        for (int k = 0; k < s->n && !known; k++)
            known = s->lo[k] == lo && s->hi[k] == hi;
        if (!known && s->n < 64)
            s->lo[s->n] = lo, s->hi[s->n++] = hi;
    }
    return true;
}

static inline bool spans_meet(const sram_spans *s, int64_t lo, int64_t hi)
{
    for (int k = 0; k < s->n; k++)
        if (lo < s->hi[k] && s->lo[k] < hi)
            return true;
    return false;
}

/* Constants loads of a layer as DRAM intervals [lo, hi) (up to 256); with
 * `skip`, only those into SRAM that none of skip's spans meets. */
typedef struct dram_spans {
    const sram_spans *skip;
    int64_t stop; /* up to the first instruction waiting on one of these tokens (0: the whole layer) */
    int n;
    int64_t lo[256], hi[256];
} dram_spans;

static inline bool add_const_load(const tgt_target *t, const tgt_decoded *d, void *ud)
{
    dram_spans *s = ud;
    if (d->v[TGT_F_WAIT] & s->stop)
        return false;
    int64_t bytes = d->v[TGT_F_C] * d->v[TGT_F_H] * d->v[TGT_F_W];
    if (s->skip && spans_meet(s->skip, d->v[TGT_F_SRAM], d->v[TGT_F_SRAM] + bytes))
        return true;
    if (t->isa->insns[d->insn].sem == TGT_SEM_DMA_LOAD && d->v[TGT_F_REGION] == TGT_REGION_CONSTANTS && s->n < 256) {
        s->lo[s->n] = d->v[TGT_F_DRAM];
        s->hi[s->n++] = d->v[TGT_F_DRAM] + bytes;
    }
    return true;
}

/* Bytes of constants layer L loads for layer N: into SRAM no compute of L
 * touches, pieces cut from the front of N's weight loads, each ending where
 * another such piece or one of N's own loads begins (tile_retro.c); with a
 * stop mask, only those before L's first wait on one of its tokens. */
static inline int64_t loads_carried_before(const tgt_target *t, const tile_program *p, const tile_layer *L,
                                           const tile_layer *N, int64_t stop)
{
    sram_spans own = {0};
    for_each_insn(t, L, p, add_compute_spans, &own);
    dram_spans in_l = {&own, stop, 0, {0}, {0}}, in_n = {0};
    for_each_insn(t, L, p, add_const_load, &in_l);
    for_each_insn(t, N, p, add_const_load, &in_n);
    bool mine[256] = {0};
    int64_t bytes = 0;
    for (bool grew = true; grew;) {
        grew = false;
        for (int i = 0; i < in_l.n; i++) {
            bool ends_at = false;
            for (int k = 0; k < in_n.n && !ends_at; k++)
                ends_at = in_l.hi[i] == in_n.lo[k];
            for (int k = 0; k < in_l.n && !ends_at; k++)
                ends_at = mine[k] && in_l.hi[i] == in_l.lo[k];
            if (ends_at && !mine[i])
                mine[i] = grew = true, bytes += in_l.hi[i] - in_l.lo[i];
        }
    }
    return bytes;
}

static inline int64_t loads_carried_for(const tgt_target *t, const tile_program *p, const tile_layer *L,
                                        const tile_layer *N)
{
    return loads_carried_before(t, p, L, N, 0);
}

/* Bytes the layer's dma_store instructions write. */
static inline int64_t store_bytes(const tgt_target *t, const tile_layer *L, const tile_program *p)
{
    return field_sum(t, L, p, TGT_SEM_DMA_STORE, TGT_F_COUNT);
}

static inline int compute_count(const int *counts)
{
    return counts[TGT_SEM_CONV] + counts[TGT_SEM_DWCONV] + counts[TGT_SEM_MATMUL] + counts[TGT_SEM_POOL] +
           counts[TGT_SEM_ELTWISE] + counts[TGT_SEM_LUT] + counts[TGT_SEM_REQUANT];
}

/* ---- functional: the NPU model against the reference ---- */

#ifdef HAVE_NPU_MODEL
static inline void print_event(void *ud, const npu_insn_event *ev)
{
    (void)ud;
    fprintf(stderr, "ev word %u unit %d q %d start %llu end %llu\n", ev->word, (int)ev->unit, ev->queue,
            (unsigned long long)ev->start, (unsigned long long)ev->end);
}

/* Runs every segment on the model with one buffer per region, the input in
 * INPUT; compares OUTPUT with the reference on the same quantized graph. */
static inline void run_functional(const tgt_target *t, const built *b, const char *what, uint32_t seed)
{
    const ir_graph *g = b->g;
    npu_mem mem;
    memset(&mem, 0, sizeof mem);
    uint8_t *buf[TGT_REGION_COUNT] = {0};
    for (int r = 0; r < TGT_REGION_COUNT; r++) {
        bool consts = r == TGT_REGION_CONSTANTS || r == TGT_REGION_FLASH; /* flash: the constants again */
        uint64_t size = consts ? b->consts.size : r < MP_REGION_COUNT ? (uint64_t)b->plan.region_bytes[r] : 0;
        buf[r] = calloc(size + 64, 1);
        if (consts && b->consts.size)
            memcpy(buf[r], b->consts.data, b->consts.size);
        mem.region[r] = (npu_mem_region){buf[r], size, r == TGT_REGION_ARENA || r == TGT_REGION_OUTPUTS};
    }
    const void *ins[4];
    uint32_t s = seed;
    for (int i = 0; i < g->n_inputs; i++) {
        const ir_tensor *x = g->inputs[i];
        uint8_t *p = buf[b->plan.t[x->id].region] + b->plan.t[x->id].offset;
        if (x->dtype == IR_F32) /* finite values (a quantize's input), past int8's range and on rounding ties */
            for (int64_t k = 0; k < ir_tensor_numel(x); k++) {
                float f = (float)((int)(rng_next(&s) % 4001) - 2000) * 0.0025f;
                memcpy(p + 4 * k, &f, sizeof f);
            }
        else
            for (size_t k = 0; k < ir_tensor_bytes(x); k++)
                p[k] = (uint8_t)rng_next(&s);
        ins[i] = p;
    }
    npu_err e;
    npu_model *m = NULL;
    cr_assert_eq(npu_model_new(t, npu_alloc_default(), &m, &e), NPU_OK, "%s", e.msg);
    if (getenv("TILER_DUMP"))
        npu_model_set_events(m, print_event, NULL);
    for (int sg = 0; sg < b->prog.n_segments; sg++) {
        npu_run_stats st;
        memset(&st, 0, sizeof st);
        const tile_segment *seg = &b->prog.segments[sg];
        if (getenv("TILER_DUMP"))
            tgt_disasm(t->isa, b->prog.words + seg->first_word, seg->n_words, stderr, NULL, NULL, &e);
        cr_assert_eq(npu_model_exec(m, &mem, b->prog.words + seg->first_word, seg->n_words, &st, &e), NPU_OK,
                     "%s on %s: %s", what, t->name, e.msg);
        int64_t est = 0;
        for (int i = 0; i < b->prog.n_layers; i++)
            est += b->prog.layers[i].cycles;
        if (getenv("TILER_CYCLES"))
            fprintf(stderr, "%-12s %-15s static %9lld model %9llu ratio %.2f\n", what, t->name, (long long)est,
                    (unsigned long long)st.cycles, (double)est / (double)st.cycles);
        /* the static schedule models the same queues, tokens and shared bus: it should land near the model */
        cr_assert(est * 10 >= (int64_t)st.cycles * 6 && est * 10 <= (int64_t)st.cycles * 16,
                  "%s on %s: static estimate %lld cycles, the model ran %llu", what, t->name, (long long)est,
                  (unsigned long long)st.cycles);
        /* with an SRAM level (resident tensors) at the top of the SRAM, the tiles' peak is below it */
        int64_t top = b->plan.sram_bytes > 0 ? t->p[TGT_P_SRAM_BYTES] : b->prog.sram_peak;
        cr_assert_leq(st.sram_peak, (uint64_t)top,
                      "%s on %s: the model touched SRAM up to %llu, past the tiler's peak %lld", what, t->name,
                      (unsigned long long)st.sram_peak, (long long)top);
    }
    npu_model_free(m);
    const ir_tensor *y = g->outputs[0];
    size_t n = ir_tensor_bytes(y);
    int8_t *want = malloc(n);
    ref_ctx *ctx = ref_ctx_new(g, npu_alloc_default(), &e);
    cr_assert_not_null(ctx, "%s", e.msg);
    void *outs[1] = {want};
    cr_assert_eq(ref_ctx_run(ctx, ins, outs, &e), NPU_OK, "%s: %s", what, e.msg);
    ref_ctx_free(ctx);
    const int8_t *got = (const int8_t *)(buf[b->plan.t[y->id].region] + b->plan.t[y->id].offset);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && bad++ == 0)
            first = i;
    cr_assert_eq(bad, 0, "%s on %s: %zu of %zu bytes differ, first at %zu: %d vs %d", what, t->name, bad, n, first,
                 got[first], want[first]);
    free(want);
    for (int r = 0; r < TGT_REGION_COUNT; r++)
        free(buf[r]);
}
#endif

/* Every node supported, the program built and structurally checked on t;
 * the caller checks counts, then finish_built runs it on the model (when
 * there is one) against the reference and frees it. */
static inline void build_checked(tgt_target *t, ir_graph *g, const char *what, built *b, int counts[TG_COUNTS])
{
    for (int i = 0; i < g->n_nodes; i++) {
        const char *why = NULL;
        cr_assert(tile_supports(t, g, g->nodes[i], &why), "%s on %s: %s", what, t->name, why);
    }
    npu_err e;
    cr_assert_eq(build(t, g, b, &e), NPU_OK, "%s on %s: %s", what, t->name, e.msg);
    check_program(t, b, what, counts);
}

/* build_checked(), with the n tensors r in the SRAM level for the whole
 * program (as the compiler's two-level plan puts small activations). */
static inline void build_resident(const tgt_target *t, ir_graph *g, const ir_tensor *const *r, int n,
                                  const char *what, built *b, int counts[TG_COUNTS])
{
    memset(b, 0, sizeof *b);
    b->g = g;
    make_plan(g, &b->plan, false);
    for (int i = 0; i < n; i++) {
        mp_tensor *m = &b->plan.t[r[i]->id];
        m->level = MP_LEVEL_SRAM, m->offset = b->plan.sram_bytes, m->first_pos = 0, m->last_pos = g->n_nodes;
        b->plan.sram_bytes += (m->size + 63) & ~(int64_t)63;
    }
    npu_err e;
    cr_assert_eq(build_planned(t, g, b, &e), NPU_OK, "%s on %s: %s", what, t->name, e.msg);
    check_program(t, b, what, counts);
}

static inline void finish_built(const tgt_target *t, built *b, const char *what, uint32_t seed)
{
#ifdef HAVE_NPU_MODEL
    run_functional(t, b, what, seed);
#else
    (void)t, (void)what, (void)seed;
#endif
    built_free(b);
}

/* One build of make() on t with placement.flash_stream on (r[0], also run
 * bit-exact on the model) and one with it off (r[1]): the first layer's static
 * cycles, the bytes it loads from region flash and from the constants, the
 * instruction counts, whether the last layer ran inside the first. Every
 * flash load goes on DMA channel 1 (tile_load_flash). */
typedef struct flash_run {
    int64_t cycles, flash, consts;
    int counts[TG_COUNTS];
    bool last_fused;
} flash_run;

static inline void build_flash_on_off(tgt_target *t, ir_graph *(*make)(void), const char *what, uint32_t seed,
                                      flash_run r[2])
{
    int64_t was = t->p[TGT_P_PLACEMENT_FLASH_STREAM];
    for (int off = 0; off < 2; off++) {
        built b;
        t->p[TGT_P_PLACEMENT_FLASH_STREAM] = off ? 0 : 1;
        build_checked(t, make(), what, &b, r[off].counts);
        const tile_layer *L = &b.prog.layers[0];
        r[off].flash = loads_before_wait(t, L, &b.prog, TGT_REGION_FLASH, 0);
        r[off].consts = loads_before_wait(t, L, &b.prog, TGT_REGION_CONSTANTS, 0);
        r[off].cycles = L->cycles;
        r[off].last_fused = b.prog.layers[b.prog.n_layers - 1].fused;
        cr_assert_eq(flash_loads_off_channel_1(t, L, &b.prog), 0, "%s: flash loads go on channel 1", what);
        if (!off)
            finish_built(t, &b, what, seed);
        else
            built_free(&b);
    }
    t->p[TGT_P_PLACEMENT_FLASH_STREAM] = was;
}

#endif
