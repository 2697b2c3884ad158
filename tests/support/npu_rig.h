/* The NPU model's test rig (tests/unit/test_npu*.c): hand-encoded streams
 * for a target of targets/, run on sim/npu.h against the reference kernels
 * on the same bytes; conv helpers shared by the conv and epilogue tests. */
#ifndef TESTS_NPU_RIG_H
#define TESTS_NPU_RIG_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/nk_quant.h"
#include "sim/npu.h"

/* ---- rig --------------------------------------------------------------------- */

enum { RB = 1 << 16, MAXW = 8192, MAXI = 512, MAXEV = 512 };

typedef struct rig {
    tgt_target *t;
    npu_model *m;
    uint8_t *sram;
    uint32_t w[MAXW];
    size_t n;
    uint32_t ninsn, off[MAXI];
    uint8_t *reg[TGT_REGION_COUNT];
    npu_mem mem;
    npu_insn_event ev[MAXEV];
    int nev;
    npu_run_stats st;
    npu_err err;
} rig;

static inline void on_event(void *ud, const npu_insn_event *e)
{
    rig *r = ud;
    cr_assert_lt(r->nev, MAXEV);
    r->ev[r->nev++] = *e;
}

static inline rig *rig_open(const char *target)
{
    rig *r = calloc(1, sizeof *r);
    cr_assert_not_null(r);
    const char *root = getenv("NPUCC_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/targets/%s.yaml", root && *root ? root : ".", target);
    cr_assert_eq(tgt_load(path, NULL, &r->t, &r->err), NPU_OK, "%s", r->err.msg);
    cr_assert_eq(npu_model_new(r->t, npu_alloc_default(), &r->m, &r->err), NPU_OK, "%s", r->err.msg);
    npu_model_set_events(r->m, on_event, r);
    r->sram = npu_model_sram(r->m);
    cr_assert_eq(npu_model_sram_size(r->m), (size_t)r->t->p[TGT_P_SRAM_BYTES]);
    for (int i = 0; i < TGT_REGION_COUNT; i++) {
        r->reg[i] = calloc(1, RB);
        cr_assert_not_null(r->reg[i]);
        r->mem.region[i] = (npu_mem_region){r->reg[i], RB, i != TGT_REGION_CONSTANTS && i != TGT_REGION_FLASH};
    }
    return r;
}

static inline void rig_close(rig *r)
{
    for (int i = 0; i < TGT_REGION_COUNT; i++)
        free(r->reg[i]);
    npu_model_free(r->m);
    tgt_free(r->t);
    free(r);
}

/* Appends one instruction; returns its index. */
static inline uint32_t emit(rig *r, const char *name, const tgt_kv *kv, size_t nkv)
{
    size_t nw;
    cr_assert_lt(r->ninsn, MAXI);
    cr_assert_eq(tgt_encode_named(r->t->isa, name, kv, nkv, r->w + r->n, MAXW - r->n, &nw, &r->err), NPU_OK, "%s",
                 r->err.msg);
    r->off[r->ninsn] = (uint32_t)r->n;
    r->n += nw;
    return r->ninsn++;
}
#define KV(...) (tgt_kv[]){__VA_ARGS__}, sizeof((tgt_kv[]){__VA_ARGS__}) / sizeof(tgt_kv)
#define END(r, wait) emit(r, "end", KV({"wait", wait}))

static inline int64_t dur(rig *r, uint32_t i)
{
    tgt_decoded d;
    int64_t c;
    cr_assert_eq(tgt_decode(r->t->isa, r->w, r->n, r->off[i], &d, &r->err), NPU_OK, "%s", r->err.msg);
    cr_assert_eq(tgt_timing(r->t, d.insn, d.v, &c, &r->err), NPU_OK, "%s", r->err.msg);
    return c;
}

static inline npu_status run(rig *r)
{
    r->nev = 0;
    npu_err_clear(&r->err);
    return npu_model_exec(r->m, &r->mem, r->w, r->n, &r->st, &r->err);
}

static inline void run_ok(rig *r)
{
    cr_assert_eq(run(r), NPU_OK, "%s", r->err.msg);
}

static inline const npu_insn_event *ev_of(rig *r, uint32_t index)
{
    for (int i = 0; i < r->nev; i++)
        if (r->ev[i].index == index)
            return &r->ev[i];
    cr_assert_fail("no event for instruction %u", index);
    return NULL;
}

/* A dense DMA of `bytes` bytes. */
static inline uint32_t dma1(rig *r, const char *name, int ch, int region, int64_t dram, int64_t sram, int64_t bytes, int wait,
                     int signal)
{
    return emit(r, name, KV({"ch", ch}, {"region", region}, {"dram", dram}, {"sram", sram}, {"c", 1}, {"h", 1},
                            {"w", bytes}, {"dram_hs", bytes}, {"dram_cs", bytes}, {"sram_hs", bytes},
                            {"sram_cs", bytes}, {"wait", wait}, {"signal", signal}));
}

static inline void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (uint8_t)(seed >> 24);
    }
}

static inline void expect_fault(rig *r, const char *what, uint32_t index)
{
    char at[48];
    cr_assert_eq(run(r), NPU_EUSER, "expected a fault (%s)", what);
    snprintf(at, sizeof at, "instruction %u (word %u)", index, r->off[index]);
    cr_assert(strstr(r->err.msg, at), "'%s' not in: %s", at, r->err.msg);
    cr_assert(strstr(r->err.msg, what), "'%s' not in: %s", what, r->err.msg);
}

/* A per-channel table: bias, and a multiplier of a small real scale. */
typedef struct qt {
    int32_t bias[64], mult[64], shift[64];
} qt;

static inline void make_qtab(rig *r, qt *q, int n, int64_t at, uint32_t seed)
{
    cr_assert_leq(n, 64);
    for (int o = 0; o < n; o++) {
        seed = seed * 1664525u + 1013904223u;
        q->bias[o] = (int32_t)(seed >> 20) - 2048;
        int s;
        cr_assert_eq(nk_quantize_multiplier(0.004 + 0.0007 * o, &q->mult[o], &s), NK_OK);
        q->shift[o] = s;
        int32_t e[3] = {q->bias[o], q->mult[o], q->shift[o]};
        for (int k = 0; k < 3; k++)
            for (int b = 0; b < 4; b++)
                r->sram[at + 12 * o + 4 * k + b] = (uint8_t)((uint32_t)e[k] >> (8 * b));
    }
}

/* ---- compute against the kernels ----------------------------------------------------- */

enum { SRC = 0x0, WGT = 0x10000, QT = 0x20000, DST = 0x30000, PSUM = 0x40000 };

typedef struct convt {
    int ic, oc, ih, iw, kh, kw, sh, sw, pt, pl, pb, pr, w4, in_zp, out_zp, lo, hi;
    int dh, dw; /* 0: 1 */
} convt;

static inline int dil(int d)
{
    return d ? d : 1;
}

static inline int odim_d(int in, int p0, int p1, int k, int d, int s)
{
    return (in + p0 + p1 - dil(d) * (k - 1) - 1) / s + 1;
}

static inline int odim(int in, int p0, int p1, int k, int s)
{
    return odim_d(in, p0, p1, k, 1, s);
}

static inline int conv_oh(const convt *c)
{
    return odim_d(c->ih, c->pt, c->pb, c->kh, c->dh, c->sh);
}

static inline int conv_ow(const convt *c)
{
    return odim_d(c->iw, c->pl, c->pr, c->kw, c->dw, c->sw);
}

static inline uint32_t emit_conv(rig *r, const convt *c, int icount, int64_t src, int64_t wgt, int acc_in, int acc_out,
                          int wait, int signal)
{
    return emit(r, "conv", KV({"src", src}, {"dst", DST}, {"wgt", wgt}, {"qtab", QT}, {"psum", PSUM},
                              {"ic", icount}, {"oc", c->oc}, {"ih", c->ih}, {"iw", c->iw},
                              {"oh", conv_oh(c)}, {"ow", conv_ow(c)}, {"kh", c->kh}, {"kw", c->kw},
                              {"dh", dil(c->dh)}, {"dw", dil(c->dw)}, {"sh", c->sh}, {"sw", c->sw}, {"pt", c->pt}, {"pl", c->pl}, {"pb", c->pb},
                              {"pr", c->pr}, {"w4", c->w4}, {"in_zp", c->in_zp}, {"out_zp", c->out_zp},
                              {"clamp_lo", c->lo}, {"clamp_hi", c->hi}, {"acc_in", acc_in}, {"acc_out", acc_out},
                              {"wait", wait}, {"signal", signal}));
}

/* Random input and weights (int4 packed when c->w4) and a table in SRAM. */
static inline void conv_data(rig *r, const convt *c, int groups, qt *q, uint32_t seed)
{
    fill(r->sram + SRC, (size_t)c->ic * c->ih * c->iw, seed);
    size_t nw = (size_t)c->oc * (c->ic / groups) * c->kh * c->kw;
    if (c->w4) {
        int8_t *v = malloc(nw);
        for (size_t i = 0; i < nw; i++)
            v[i] = (int8_t)((int)((i * 7 + seed) % 16) - 8);
        cr_assert_eq(nk_int4_pack(v, r->sram + WGT, nw), NK_OK);
        free(v);
    } else {
        fill(r->sram + WGT, nw, seed + 1);
    }
    make_qtab(r, q, c->oc, QT, seed + 2);
}

static inline void conv_ref(rig *r, const uint8_t *sram0, const convt *c, int groups, const qt *q, int8_t *want)
{
    nk_qconv2d_params p = {
        .n = 1, .c_in = c->ic, .h_in = c->ih, .w_in = c->iw, .c_out = c->oc,
        .h_out = conv_oh(c), .w_out = conv_ow(c),
        .k_h = c->kh, .k_w = c->kw, .stride_h = c->sh, .stride_w = c->sw, .dil_h = dil(c->dh), .dil_w = dil(c->dw),
        .pad_top = c->pt, .pad_left = c->pl, .pad_bottom = c->pb, .pad_right = c->pr, .groups = groups,
        .in_zp = c->in_zp, .out_zp = c->out_zp, .act_min = c->lo, .act_max = c->hi,
        .w_format = c->w4 ? NK_W_I4 : NK_W_I8, .q = {c->oc, q->mult, q->shift}};
    void *scratch = malloc(nk_qconv2d_scratch_size(&p));
    cr_assert_eq(nk_qconv2d(&p, (const int8_t *)sram0 + SRC, sram0 + WGT, q->bias, want, scratch), NK_OK);
    free(scratch);
    (void)r;
}

static inline uint8_t *snapshot(rig *r)
{
    uint8_t *s = malloc(npu_model_sram_size(r->m));
    memcpy(s, r->sram, npu_model_sram_size(r->m));
    return s;
}

#endif
