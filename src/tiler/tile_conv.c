/* Window ops: conv, depthwise conv and pools. Tiles split output channels
 * (one weight block per channel tile), rows and columns (input rows with
 * their halo; border tiles carry the padding), and for conv the reduction
 * over input channels (partial sums in SRAM). The plan with the lowest
 * estimated cycles among a few candidate tile shapes wins. */
#include <string.h>

#include "numerics/numerics.h"
#include "tiler/tile_internal.h"

typedef struct win {
    tgt_sem sem; /* CONV, DWCONV or POOL */
    int64_t N, C, H, W, OC, OH, OW;
    int64_t kh, kw, sh, sw, dh, dw, pt, pl;
    int64_t G, icg, ocg; /* conv groups; dw/pool: G = 1, icg = ocg = C */
    bool w4;
    const ir_tensor *wt;
    int64_t wbytes_el2; /* weight bytes per two elements: 1 (int4) or 2 (int8) */
    const ir_node *fuse; /* an eltwise node applied to each output tile (tile_conv_fused), or NULL */
    bool in_place;       /* fused, and the output overwrites the conv's own input (same shape, stride 1) */
    bool epi;            /* fused, in the conv's output stage (epi_elt) rather than on the vector unit */
    bool resident;       /* its input or output is SRAM-resident: tiles of whole planes read it in place */
    bool res_in, res_out; /* which: with whole planes no DMA moves it, so the cost model charges none */
    const ir_node *lut;  /* an npu.Lut run in the conv's output stage (epi_lut, tile_conv_lut), or NULL */
    const ir_node *pre;  /* an eltwise with a C x 1 x 1 operand producing the conv's input, applied in
                          * place to each loaded input tile, or a QuantizeLinear of float32 whose
                          * quantize writes the tile from its float32 load (tile_conv_pre), or NULL */
    bool a16;            /* int16 activations (A16W8): es = 2 bytes per element, no partial sums */
    int64_t es;
    bool in_a4, out_a4;  /* input / stored output packed in DRAM (a4 DMA: half the bus bytes) */
} win;

enum { MAX_DEPTH = 4 }; /* slots per streamed buffer, at most (deepen) */

typedef struct plan {
    int64_t ct, icc, oht, owt; /* channel tile, reduction chunk, output rows, cols */
    bool sp_outer;             /* spatial tiles outer, channel tiles inner */
    int64_t n_ct, n_y, n_x, n_chunks;
    int64_t in_slot, w_slot, out_slot, psum; /* bytes per slot */
    int in_slots, w_slots, out_slots;
    int depth;             /* slots per streamed buffer (2, or 3: deeper) */
    int64_t cost, traffic; /* estimated cycles; DRAM bytes */
    bool reload;           /* every tile loads its input */
    bool in_once;          /* the first tile alone loads it */
    int64_t in_f;          /* quantize prologue: the float32 tile's offset in each input slot (0: none) */
    int64_t pre_icc;       /* a split prologue (pre_split): the first work's reduction chunk, else 0 */
} plan;

/* The prologue is a quantize of float32 (4 bytes per input element loaded). */
static bool pre_quant(const win *w)
{
    return w->pre && w->pre->op == IR_OP_QUANTIZE_LINEAR;
}

/* A squeeze-excite prologue on an input loaded once, scaled chunk by
 * reduction chunk in the first work: the vector unit scales chunk k + 1
 * while the MAC array reduces chunk k (emit_chunks), so only the first
 * chunk's pass is exposed before the MACs start (EfficientNet-B0's stage 5
 * projections on edge-v1: 8,464 cycles of it). Only the first work: its
 * partial sums cost SRAM bank stalls that whole reductions do not (stage 6:
 * each channel tile's four chunks 4,175 cycles against 3,544). */
static bool pre_split(const plan *p)
{
    return p->pre_icc > 0;
}

/* Weight block of one channel tile: the chunk blocks (16-aligned), then the qtab. */
static int64_t chunk_bytes(const win *w, int64_t ct, int64_t icc)
{
    int64_t el = ct * (w->sem == TGT_SEM_CONV ? icc : 1) * w->kh * w->kw;
    return ((el * w->wbytes_el2 + 1) / 2 + 15) & ~(int64_t)15;
}

static int64_t block_bytes(const win *w, int64_t ct, int64_t icc)
{
    if (w->sem == TGT_SEM_POOL)
        return 0;
    int64_t b = 0, nch = w->sem == TGT_SEM_CONV ? tile_cdiv(w->icg, icc) : 1;
    for (int64_t k = 0; k < nch; k++)
        b += chunk_bytes(w, ct, w->sem == TGT_SEM_CONV ? tile_min(icc, w->icg - k * icc) : 1);
    return b + ((12 * ct + 15) & ~(int64_t)15);
}

static int64_t plan_bytes(const win *w, const plan *p)
{
    return 16 * 5 + (w->lut ? TILE_EPI_TABLE_BYTES : 0) + (w->pre && !pre_quant(w) ? w->C : 0) + p->in_slots * p->in_slot +
           p->w_slots * p->w_slot + (w->fuse ? 2 : 1) * p->out_slots * p->out_slot +
           p->psum; /* fused: the other operand's tile */
}

/* The first work's reduction chunk for a split prologue (pre_split): the
 * most chunks, up to 8, in multiples of the array's rows (no MAC cycle
 * lost to a partial row), that fit the SRAM with their partial sums. */
static void split_prologue(const tile_ctx *c, const win *w, plan *p)
{
    p->pre_icc = 0;
    if (!w->pre || pre_quant(w) || w->sem != TGT_SEM_CONV || !p->in_once || p->n_chunks > 1 || w->a16)
        return;
    int64_t rows = c->t->p[TGT_P_MAC_ROWS];
    for (int64_t k = 8; k >= 2; k /= 2) {
        plan s = *p;
        s.pre_icc = tile_cdiv(tile_cdiv(w->icg, k), rows) * rows;
        s.psum = 4 * p->ct * p->oht * p->owt;
        int64_t wb = block_bytes(w, p->ct, s.pre_icc);
        s.w_slot = wb > p->w_slot ? wb : p->w_slot;
        if (s.pre_icc < w->icg && s.pre_icc <= tile_fmax(c, TGT_SEM_CONV, TGT_F_IC) &&
            plan_bytes(w, &s) <= c->t->p[TGT_P_SRAM_BYTES]) {
            *p = s;
            return;
        }
    }
}

/* Fills the sizes of plan p; false when it does not fit the SRAM. */
static bool size_plan(const tile_ctx *c, const win *w, plan *p)
{
    int64_t ih = tile_min(w->H, tile_span(p->oht, w->kh, w->sh, w->dh));
    int64_t iw = tile_min(w->W, tile_span(p->owt, w->kw, w->sw, w->dw));
    p->n_ct = w->G * tile_cdiv(w->ocg, p->ct);
    p->n_y = tile_cdiv(w->OH, p->oht), p->n_x = tile_cdiv(w->OW, p->owt);
    p->n_chunks = w->sem == TGT_SEM_CONV ? tile_cdiv(w->icg, p->icc) : 1;
    int64_t n_sp = w->N * p->n_y * p->n_x, tiles = n_sp * p->n_ct;
    int64_t cin = w->sem == TGT_SEM_CONV ? w->icg : p->ct;
    bool in_per_ct = w->sem != TGT_SEM_CONV || w->G > 1;
    int64_t in_loads = p->sp_outer ? n_sp * (in_per_ct ? p->n_ct : 1)
                                   : (n_sp > 1 || in_per_ct ? tiles : 1);
    int64_t w_loads = p->sp_outer ? (p->n_ct > 1 ? tiles : 1) : p->n_ct;
    p->reload = in_loads == tiles;
    p->in_once = in_loads == 1;
    p->in_slot = cin * ih * iw * w->es;
    p->in_f = pre_quant(w) ? (p->in_slot + 15) & ~(int64_t)15 : 0; /* the int8 tile, then the float32 one */
    if (pre_quant(w))
        p->in_slot = p->in_f + 4 * cin * ih * iw;
    int64_t xes = pre_quant(w) ? 4 : w->es; /* bytes per element loaded */
    p->w_slot = block_bytes(w, p->ct, p->icc);
    p->out_slot = p->ct * p->oht * p->owt * w->es;
    p->psum = p->n_chunks > 1 ? 4 * p->ct * p->oht * p->owt : 0;
    p->depth = 2;
    p->in_slots = in_loads > 1 ? 2 : 1;
    p->w_slots = w_loads > 1 ? 2 : 1;
    p->out_slots = tiles > 1 ? 2 : 1;
    if (plan_bytes(w, p) > c->t->p[TGT_P_SRAM_BYTES])
        return false;
    split_prologue(c, w, p);
    /* cost: the busiest queue over the layer, plus the first load and the last store that nothing hides */
    int64_t v[TGT_F_COUNT];
    int ci = tile_insn(c, w->sem), di = tile_insn(c, TGT_SEM_DMA_LOAD);
    tgt_defaults(c->t->isa, ci, v);
    v[TGT_F_IC] = tile_min(p->icc, w->icg), v[TGT_F_OC] = p->ct, v[TGT_F_C] = p->ct;
    v[TGT_F_KH] = w->kh, v[TGT_F_KW] = w->kw, v[TGT_F_OH] = p->oht, v[TGT_F_OW] = p->owt;
    v[TGT_F_W4] = w->w4;
    v[TGT_F_A16] = w->a16;
    int64_t comp = 0, ld = 0, stc = 0, wl = 0;
    npu_err e;
    if (tgt_timing(c->t, ci, v, &comp, &e) != NPU_OK)
        return false;
    comp *= p->n_chunks;
    tgt_defaults(c->t->isa, di, v);
    v[TGT_F_C] = cin, v[TGT_F_H] = ih, v[TGT_F_W] = iw * xes, v[TGT_F_DRAM_HS] = w->W * xes;
    v[TGT_F_SRAM_HS] = iw * xes, v[TGT_F_A4] = w->in_a4;
    if (tgt_timing(c->t, di, v, &ld, &e) != NPU_OK)
        return false;
    v[TGT_F_C] = p->ct, v[TGT_F_H] = p->oht, v[TGT_F_W] = p->owt * w->es, v[TGT_F_DRAM_HS] = w->OW * w->es;
    v[TGT_F_SRAM_HS] = p->owt * w->es, v[TGT_F_A4] = w->out_a4;
    if (tgt_timing(c->t, di, v, &stc, &e) != NPU_OK)
        return false;
    v[TGT_F_A4] = 0;
    if (p->w_slot) {
        v[TGT_F_C] = 1, v[TGT_F_H] = 1, v[TGT_F_W] = p->w_slot, v[TGT_F_DRAM_HS] = v[TGT_F_SRAM_HS] = p->w_slot;
        if (tgt_timing(c->t, di, v, &wl, &e) != NPU_OK)
            return false;
    }
    int64_t fl = w->fuse ? tiles * stc : 0; /* the fused eltwise's other operand, a tile like the output */
    if (w->resident && w->res_in) /* whole planes read in place: no input loads */
        ld = 0, in_loads = 0;
    if (w->resident && w->res_out) /* written in place: no stores */
        stc = 0;
    int64_t loads = in_loads * ld + w_loads * wl + fl, q = tiles * comp;
    q = q > loads ? q : loads;
    int64_t first = 0; /* an input loaded once: its prologue (the first chunk's, split) before any MAC */
    if (w->pre) { /* the vector unit's pass over each loaded input tile */
        int64_t el;
        int vi = tile_insn(c, pre_quant(w) ? TGT_SEM_QUANTIZE : TGT_SEM_ELTWISE);
        tgt_defaults(c->t->isa, vi, v);
        v[TGT_F_C] = cin, v[TGT_F_H] = ih, v[TGT_F_W] = iw, v[TGT_F_LEN] = cin * ih * iw;
        if (tgt_timing(c->t, vi, v, &el, &e) != NPU_OK)
            return false;
        q = q > in_loads * el ? q : in_loads * el;
        v[TGT_F_C] = pre_split(p) ? p->pre_icc : cin;
        if (p->in_once && tgt_timing(c->t, vi, v, &first, &e) != NPU_OK)
            return false;
        /* split, the later pieces run beside the first work's MACs: what they take beyond those is exposed too
         * (a channel tile of 16 outputs reduces faster than the vector unit scales the input) */
        if (pre_split(p) && el - first > comp)
            first += el - first - comp;
    }
    q = q > tiles * stc ? q : tiles * stc;
    p->cost = q + ld + wl + stc + first;
    int64_t out_bytes = stc ? w->N * w->OC * w->OH * w->OW * w->es : 0; /* packed sides move half */
    p->traffic = in_loads * cin * ih * iw * xes / (w->in_a4 ? 2 : 1) + w_loads * p->w_slot + out_bytes / (w->out_a4 ? 2 : 1);
    return true;
}

/* Field limits of one tile of w under plan p. */
static bool fields_ok(const tile_ctx *c, const win *w, const plan *p)
{
    tgt_sem s = w->sem;
    int64_t ih = tile_min(w->H, tile_span(p->oht, w->kh, w->sh, w->dh));
    int64_t iw = tile_min(w->W, tile_span(p->owt, w->kw, w->sw, w->dw));
    if (p->oht > tile_fmax(c, s, TGT_F_OH) || p->owt > tile_fmax(c, s, TGT_F_OW) || ih > tile_fmax(c, s, TGT_F_IH) ||
        iw > tile_fmax(c, s, TGT_F_IW))
        return false;
    int64_t cin = s == TGT_SEM_CONV ? w->icg : p->ct;
    if (pre_quant(w) && cin * ih * iw > tile_fmax(c, TGT_SEM_QUANTIZE, TGT_F_LEN))
        return false;
    if (w->pre && !pre_quant(w) &&
        (cin > tile_fmax(c, TGT_SEM_ELTWISE, TGT_F_C) || ih > tile_fmax(c, TGT_SEM_ELTWISE, TGT_F_H) ||
         iw > tile_fmax(c, TGT_SEM_ELTWISE, TGT_F_W)))
        return false;
    if (s == TGT_SEM_CONV)
        return p->ct <= tile_fmax(c, s, TGT_F_OC) && p->icc <= tile_fmax(c, s, TGT_F_IC);
    return p->ct <= tile_fmax(c, s, TGT_F_C);
}

/* Pass 0 finds the fewest cycles; pass 1 takes, among plans within 3% of
 * them, the one that moves the fewest DRAM bytes (DRAM is shared with the host).
 * Pass 0 keeps the sized candidates in order (seen), so that pass 1 walks
 * them instead of sizing them again: the search was a tenth of a compile. */
typedef struct search {
    int pass;
    int64_t min_cost;
    plan best;
    bool found;
    npu_alloc alloc;
    plan *seen;
    int n_seen, cap_seen;
    bool seen_lost; /* out of memory keeping them: pass 1 searches again */
} search;

static void pick(search *s, const plan *cand)
{
    bool better;
    if (s->pass == 0)
        better = !s->found || cand->cost < s->best.cost;
    else
        better = cand->cost * 100 <= s->min_cost * 103 &&
                 (!s->found || cand->traffic < s->best.traffic ||
                  (cand->traffic == s->best.traffic && cand->cost < s->best.cost));
    if (better) {
        s->best = *cand;
        s->found = true;
    }
}

static void keep_seen(search *s, const plan *cand)
{
    if (s->seen_lost)
        return;
    if (s->n_seen == s->cap_seen) {
        int ncap = s->cap_seen ? 2 * s->cap_seen : 64;
        plan *np = npu_realloc(s->alloc, s->seen, sizeof *np * (size_t)s->cap_seen, sizeof *np * (size_t)ncap);
        if (!np) {
            s->seen_lost = true;
            return;
        }
        s->seen = np;
        s->cap_seen = ncap;
    }
    s->seen[s->n_seen++] = *cand;
}

static void consider(const tile_ctx *c, const win *w, plan cand, search *s)
{
    if (cand.ct < 1 || cand.icc < 1 || cand.oht < 1 || cand.owt < 1 || !fields_ok(c, w, &cand))
        return;
    if (w->a16 && w->sem == TGT_SEM_CONV && cand.icc < w->icg)
        return; /* a16 conv has no partial-sum form: the whole reduction in one instruction */
    /* in place: one pass over the input in row order (all channels, whole rows), and a tile at least as
     * tall as the top padding, so that tile j+2 never reads rows tile j has overwritten */
    if (w->in_place && (cand.ct != w->ocg || cand.owt != w->OW || !cand.sp_outer || cand.oht < w->pt))
        return;
    if (w->resident && (cand.oht != w->OH || cand.owt != w->OW))
        return;
    if (!size_plan(c, w, &cand))
        return;
    /* a prologue runs on every input load: each work's first compute (the LOADED consumer) is then the
     * prologue's eltwise, one queue for the whole pipeline as tile_pipeline's token pairing needs; or the
     * first work's alone, when it alone loads the input: every later LOADED consumer (a conv) queues behind
     * the first work's conv, which waits for the prologue (CHAIN), so none takes the prologue's token (a
     * squeeze-excite projection on whole planes, its weights streamed by channel tiles) */
    if (w->pre && !cand.reload && !cand.in_once)
        return;
    if (s->pass == 0)
        keep_seen(s, &cand);
    pick(s, &cand);
}

/* Largest rows-per-tile that fits, by bisection (fit is monotone in rows). */
static int64_t max_rows(const tile_ctx *c, const win *w, plan p)
{
    int64_t lo = 0, hi = tile_min(w->OH, tile_fmax(c, w->sem, TGT_F_OH));
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        p.oht = mid;
        if (fields_ok(c, w, &p) && size_plan(c, w, &p))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static void search_plans(const tile_ctx *c, const win *w, search *s)
{
    int64_t cols = c->t->p[TGT_P_MAC_COLS];
    int64_t ctmax = tile_min(w->ocg, tile_fmax(c, w->sem, w->sem == TGT_SEM_CONV ? TGT_F_OC : TGT_F_C));
    int64_t icmax = w->sem == TGT_SEM_CONV ? tile_min(w->icg, tile_fmax(c, w->sem, TGT_F_IC)) : 1;
    for (int64_t ct = ctmax; ct >= 1; ct = ct > cols ? ((ct / 2 + cols - 1) / cols) * cols : ct / 2) {
        int64_t nch0 = w->sem == TGT_SEM_CONV ? tile_cdiv(w->icg, icmax) : 1, nchmax = w->sem == TGT_SEM_CONV ? w->icg : 1;
        for (int64_t nch = nch0; nch <= nchmax; nch *= 2) {
            int64_t icc = w->sem == TGT_SEM_CONV ? tile_cdiv(w->icg, nch) : 1;
            if (w->w4 && (w->kh * w->kw) % 2 && icc % 2 && icc != w->icg)
                icc++;
            bool fit = false;
            for (int64_t owt = tile_min(w->OW, tile_fmax(c, w->sem, TGT_F_OW)); owt >= 1; owt = owt > 1 ? tile_cdiv(owt, 2) : 0) {
                for (int sp = 0; sp < 2; sp++) {
                    plan p = {.ct = ct, .icc = icc, .owt = owt, .sp_outer = sp};
                    int64_t rows = max_rows(c, w, p);
                    fit |= rows > 0;
                    for (int64_t r = rows, k = 0; r >= 1 && k < 5; r = tile_cdiv(r, 2), k++) {
                        p.oht = r;
                        consider(c, w, p, s);
                        if (r == 1)
                            break;
                    }
                }
                if (fit && owt < w->OW)
                    break; /* the full width and one narrower: more only adds halo and tiles */
            }
            if (fit)
                break; /* fewer reduction chunks are always better when they fit */
        }
    }
}

static bool choose_plan_once(const tile_ctx *c, const win *w, plan *best)
{
    search s = {.alloc = c->alloc};
    search_plans(c, w, &s);
    bool found = s.found;
    if (found) {
        s.min_cost = s.best.cost;
        s.pass = 1;
        s.found = false;
        if (s.seen_lost)
            search_plans(c, w, &s);
        else
            for (int i = 0; i < s.n_seen; i++)
                pick(&s, &s.seen[i]);
        *best = s.best;
    }
    npu_free(s.alloc, s.seen, sizeof *s.seen * (size_t)s.cap_seen);
    return found;
}

/* Whole planes first where an operand is SRAM-resident; when none fits,
 * any tile (the operand then goes back to DRAM: tile_memplan). */
static bool choose_plan(const tile_ctx *c, const win *w, plan *best)
{
    if (w->resident && choose_plan_once(c, w, best))
        return true;
    win any = *w;
    any.resident = false;
    return choose_plan_once(c, &any, best);
}

/* Element (o, i, ky, kx) of the OIHW weights as int8. */
static int8_t wval(const win *w, int64_t o, int64_t i, int64_t ky, int64_t kx)
{
    int64_t cin = w->sem == TGT_SEM_CONV ? w->icg : 1;
    int64_t idx = ((o * cin + i) * w->kh + ky) * w->kw + kx;
    return w->wt->dtype == IR_I4 ? nk_int4_get(w->wt->data, (size_t)idx) : ((const int8_t *)w->wt->data)[idx];
}

/* Builds the weight block of output channels [o0, o0+ct) (conv: of group gi). */
static npu_status build_block(tile_ctx *c, const ir_node *n, const win *w, const plan *p, int64_t o0, int64_t ct,
                              int64_t *off)
{
    int64_t size = block_bytes(w, ct, p->icc);
    if (c->consts->measure)
        return tile_block_reserve(c, n, o0, ct, size, off);
    int64_t cin = w->sem == TGT_SEM_CONV ? w->icg : 1;
    uint8_t *blk = npu_malloc(c->alloc, (size_t)size);
    int8_t *tmp = npu_malloc(c->alloc, (size_t)(ct * cin * w->kh * w->kw + 1));
    npu_status st = NPU_OK;
    if (!blk || !tmp) {
        st = npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        goto done;
    }
    memset(blk, 0, (size_t)size);
    int64_t pos = 0;
    for (int64_t k = 0; k < p->n_chunks; k++) {
        int64_t i0 = k * p->icc, icc = w->sem == TGT_SEM_CONV ? tile_min(p->icc, w->icg - i0) : 1;
        int64_t e = 0;
        for (int64_t o = 0; o < ct; o++)
            for (int64_t i = 0; i < icc; i++)
                for (int64_t ky = 0; ky < w->kh; ky++)
                    for (int64_t kx = 0; kx < w->kw; kx++)
                        tmp[e++] = wval(w, o0 + o, i0 + i, ky, kx);
        if (w->w4) {
            if (nk_int4_pack(tmp, blk + pos, (size_t)e) != NK_OK) {
                st = tile_fail(c, "int4 weights out of range");
                goto done;
            }
        } else {
            memcpy(blk + pos, tmp, (size_t)e);
        }
        pos += chunk_bytes(w, ct, icc);
    }
    if ((st = tile_qtab(c, n, o0, ct, blk + pos)) == NPU_OK)
        st = tile_const_add(c, blk, (size_t)size, off);
done:
    npu_free(c->alloc, blk, (size_t)size);
    npu_free(c->alloc, tmp, (size_t)(ct * cin * w->kh * w->kw + 1));
    return st;
}

typedef struct qfields {
    int64_t in_zp, out_zp, lo, hi, mult, shift, count_pad, mode;
} qfields;

/* Which input of the prologue eltwise is the full-size one (the other is C x 1 x 1). */
static int io_pre_big(const ir_node *m)
{
    return ir_shape_equal(m->inputs[0], m->outputs[0]) ? 0 : 1;
}

/* Where the layer's tensors live and which SRAM slots its tiles rotate
 * through (two of each kind at most: double buffering). */
typedef struct conv_bufs {
    int xr, yr, fr, tr, pr;
    int64_t xoff, yoff, foff, toff, table, elt[TGT_F_COUNT]; /* tr/toff: the epilogue table in consts */
    int64_t poff, pslot, pelt[TGT_F_COUNT];                  /* the prologue's C x 1 x 1 operand; its (or the
                                                              * quantize's) fields */
    bool conv_is_a; /* fused: the conv's tile is the eltwise's a (else its b) */
    int64_t eoff, etab; /* the epilogue's parameter block: in consts, in SRAM */
    int64_t in_s[MAX_DEPTH], w_s[MAX_DEPTH], out_s[MAX_DEPTH], psum, f_s[MAX_DEPTH];
} conv_bufs;

/* One output tile: its batch, channel block and rows/columns, and the input
 * window they read. */
typedef struct conv_tile {
    int64_t b, yi, xi, ct_i, gi, o0, ct, oc_glob, y0, y1, x0, x1, ih, iw;
    tile_axis ay, ax;
} conv_tile;

/* The input, the output (the fused eltwise's when there is one) and the
 * eltwise's other operand with its fields. */
static npu_status resolve_addrs(tile_ctx *c, const ir_node *n, const win *w, conv_bufs *io)
{
    /* with a prologue the conv reads the eltwise's full-size operand (the quantize's float32 input); its own
     * input has no home */
    const ir_tensor *x = pre_quant(w) ? w->pre->inputs[0] : w->pre ? w->pre->inputs[io_pre_big(w->pre)] : n->inputs[0];
    npu_status st = tile_tensor_addr(c, x, &io->xr, &io->xoff);
    if (st == NPU_OK && pre_quant(w))
        st = tile_quantize_fields(c, w->pre, io->pelt);
    else if (st == NPU_OK && w->pre) {
        if ((st = tile_tensor_addr(c, w->pre->inputs[!io_pre_big(w->pre)], &io->pr, &io->poff)) == NPU_OK)
            st = tile_eltwise_fields(c, w->pre, io->pelt);
    }
    if (st == NPU_OK)
        st = tile_tensor_addr(c, (w->fuse ? w->fuse : w->lut ? w->lut : n)->outputs[0], &io->yr, &io->yoff);
    if (st == NPU_OK && w->lut)
        st = tile_tensor_addr(c, w->lut->inputs[1], &io->tr, &io->toff);
    io->conv_is_a = true;
    io->fr = 0;
    io->foff = 0;
    if (st == NPU_OK && w->fuse) {
        io->conv_is_a = w->fuse->inputs[0] == n->outputs[0];
        const ir_tensor *other = w->fuse->inputs[io->conv_is_a ? 1 : 0];
        if ((st = tile_tensor_addr(c, other, &io->fr, &io->foff)) == NPU_OK)
            st = tile_eltwise_fields(c, w->fuse, io->elt);
        if (st == NPU_OK && w->epi)
            st = tile_epi_block(c, w->fuse, io->conv_is_a, &io->eoff);
    }
    return st;
}

/* The SRAM slots the plan sized, placed in one go. */
static npu_status place_buffers(tile_ctx *c, const win *w, const plan *p, conv_bufs *io)
{
    for (int i = 0; i < MAX_DEPTH; i++)
        io->in_s[i] = io->out_s[i] = -1, io->w_s[i] = io->f_s[i] = 0;
    io->psum = 0, io->table = 0, io->etab = 0;
    tile_sram_req rq[TILE_MAX_BUFFERS];
    int nr = 0;
    if (w->lut)
        rq[nr++] = (tile_sram_req){TILE_EPI_TABLE_BYTES, &io->table};
    if (w->epi)
        rq[nr++] = (tile_sram_req){TGT_ETAB_BYTES, &io->etab};
    io->pslot = 0;
    if (w->pre && !pre_quant(w))
        rq[nr++] = (tile_sram_req){w->C, &io->pslot};
    /* early: the shared buffers and slot 0's, clear of the layer before where only they fit so */
    bool early[TILE_MAX_BUFFERS] = {0};
    for (int i = 0; i < nr; i++)
        early[i] = true;
    for (int i = 0; i < p->in_slots; i++)
        early[nr] = i == 0, rq[nr++] = (tile_sram_req){p->in_slot, &io->in_s[i]};
    for (int i = 0; i < p->w_slots && p->w_slot; i++)
        early[nr] = i == 0, rq[nr++] = (tile_sram_req){p->w_slot, &io->w_s[i]};
    for (int i = 0; i < p->out_slots; i++)
        early[nr] = i == 0, rq[nr++] = (tile_sram_req){p->out_slot, &io->out_s[i]};
    if (p->psum)
        early[nr] = true, rq[nr++] = (tile_sram_req){p->psum, &io->psum};
    for (int i = 0; i < p->out_slots && w->fuse; i++)
        early[nr] = i == 0, rq[nr++] = (tile_sram_req){p->out_slot, &io->f_s[i]};
    npu_status st = tile_sram_place_early(c, rq, nr, early, "tiler bug: planned buffers exceed the SRAM");
    io->table = tile_epi_table_at(io->table);
    if (st == NPU_OK &&
        (c->sram_used > c->t->p[TGT_P_SRAM_BYTES] || io->in_s[0] < 0 || io->out_s[0] < 0 || io->psum < 0))
        st = tile_fail(c, "tiler bug: planned buffers exceed the SRAM");
    return st;
}

/* Tile t of the plan's order: spatial outer (channel blocks inner) or the
 * other way round. */
static void tile_geometry(const win *w, const plan *p, int64_t t, conv_tile *g)
{
    int64_t n_sp = w->N * p->n_y * p->n_x, cpg = tile_cdiv(w->ocg, p->ct);
    g->ct_i = p->sp_outer ? t % p->n_ct : t / n_sp;
    int64_t sp = p->sp_outer ? t / p->n_ct : t % n_sp;
    g->b = sp / (p->n_y * p->n_x), g->yi = sp / p->n_x % p->n_y, g->xi = sp % p->n_x;
    g->gi = g->ct_i / cpg, g->o0 = (g->ct_i % cpg) * p->ct, g->ct = tile_min(p->ct, w->ocg - g->o0);
    g->oc_glob = g->gi * w->ocg + g->o0;
    g->y0 = g->yi * p->oht, g->y1 = tile_min(w->OH, g->y0 + p->oht);
    g->x0 = g->xi * p->owt, g->x1 = tile_min(w->OW, g->x0 + p->owt);
    g->ay = tile_axis_range(g->y0, g->y1, w->H, w->kh, w->sh, w->dh, w->pt);
    g->ax = tile_axis_range(g->x0, g->x1, w->W, w->kw, w->sw, w->dw, w->pl);
    g->ih = g->ay.i1 - g->ay.i0, g->iw = g->ax.i1 - g->ax.i0;
}

/* The fields of a window instruction that no tile changes: kernel, strides,
 * quantization, clamp; a pool's mode and rescale. */
static void window_fields(int64_t *v, const win *w, const qfields *q)
{
    v[TGT_F_KH] = w->kh, v[TGT_F_KW] = w->kw, v[TGT_F_SH] = w->sh, v[TGT_F_SW] = w->sw;
    v[TGT_F_IN_ZP] = q->in_zp, v[TGT_F_OUT_ZP] = q->out_zp;
    v[TGT_F_CLAMP_LO] = q->lo, v[TGT_F_CLAMP_HI] = q->hi;
    if (w->a16) /* the int16 bounds live in their own word; the 8-bit ones keep their defaults */
        v[TGT_F_A16] = 1, v[TGT_F_CLAMP16_LO] = q->lo, v[TGT_F_CLAMP16_HI] = q->hi, v[TGT_F_CLAMP_LO] = -128,
        v[TGT_F_CLAMP_HI] = 127;
    if (w->sem == TGT_SEM_POOL)
        v[TGT_F_MODE] = q->mode, v[TGT_F_COUNT_PAD] = q->count_pad, v[TGT_F_MULT] = q->mult, v[TGT_F_SHIFT] = q->shift;
}

/* The tile's computes, one per input-channel chunk (accumulating in psum
 * when there are several); weights at cur_w, input at cur_in. */
static npu_status emit_pre(tile_ctx *c, tile_work *wk, const win *w, const conv_bufs *io, const conv_tile *g,
                           int64_t in, int64_t in_f, int64_t cin0, int64_t cin);

/* The reduction chunks of one tile; with pre (a split prologue, pre_split),
 * each chunk's input channels scaled right before it, from channel cin0 of
 * the prologue's operand, the pieces after the first running ahead. */
static npu_status emit_chunks(tile_ctx *c, tile_work *wk, const win *w, const plan *p, const qfields *q,
                              const conv_tile *g, int64_t cur_in, int64_t cur_w, int64_t dst, int64_t psum,
                              const conv_bufs *pre, int64_t cin0)
{
    int64_t ct = g->ct, wpos = 0, half = (p->n_chunks + 1) / 2;
    for (int64_t i = 0; i < p->n_chunks; i++) {
        /* split, the chunks alternate between the input's two halves, so that the vector unit scales chunk
         * k + 1 on other SRAM banks than the MAC array reads chunk k from (the sums are exact in any order) */
        int64_t k = pre ? (i % 2 ? half + i / 2 : i / 2) : i;
        int64_t i0 = k * p->icc, icc = w->sem == TGT_SEM_CONV ? tile_min(p->icc, w->icg - i0) : ct;
        npu_status st = pre ? emit_pre(c, wk, w, pre, g, cur_in + i0 * g->ih * g->iw * w->es, 0, cin0 + i0, icc)
                            : NPU_OK;
        if (st != NPU_OK)
            return st;
        if (pre)
            c->comp[c->n_comp - 1].lead = i > 0;
        tile_comp *cp = tile_comp_new(c, wk, w->sem);
        if (!cp)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        int64_t *v = cp->v;
        v[TGT_F_SRC] = cur_in + (w->sem == TGT_SEM_CONV ? i0 * g->ih * g->iw * w->es : 0);
        v[TGT_F_DST] = dst;
        v[TGT_F_IH] = g->ih, v[TGT_F_IW] = g->iw, v[TGT_F_OH] = g->y1 - g->y0, v[TGT_F_OW] = g->x1 - g->x0;
        v[TGT_F_PT] = g->ay.p0, v[TGT_F_PB] = g->ay.p1, v[TGT_F_PL] = g->ax.p0, v[TGT_F_PR] = g->ax.p1;
        window_fields(v, w, q);
        if (w->sem == TGT_SEM_POOL) {
            v[TGT_F_C] = ct;
            continue;
        }
        v[TGT_F_DH] = w->dh, v[TGT_F_DW] = w->dw, v[TGT_F_W4] = w->w4;
        v[TGT_F_WGT] = cur_w + (pre ? k * chunk_bytes(w, ct, p->icc) : wpos); /* every chunk but the last full */
        v[TGT_F_QTAB] = cur_w + block_bytes(w, ct, p->icc) - ((12 * ct + 15) & ~(int64_t)15);
        wpos += chunk_bytes(w, ct, w->sem == TGT_SEM_CONV ? icc : 1);
        if (w->sem == TGT_SEM_DWCONV) {
            v[TGT_F_C] = ct;
            continue;
        }
        v[TGT_F_IC] = icc, v[TGT_F_OC] = ct;
        if (p->n_chunks > 1) {
            v[TGT_F_PSUM] = psum;
            v[TGT_F_ACC_IN] = i > 0;
            v[TGT_F_ACC_OUT] = i < p->n_chunks - 1;
        }
    }
    return NPU_OK;
}

/* Fused: the other operand's tile at fs, combined in place with the conv's. */
static npu_status emit_fused(tile_ctx *c, tile_work *wk, const win *w, const conv_bufs *io, const conv_tile *g,
                             int64_t fs, int64_t dst)
{
    int64_t oh = g->y1 - g->y0, ow = g->x1 - g->x0;
    tile_load(wk, tile_box_chw(io->fr, io->foff + ((g->b * w->OC + g->oc_glob) * w->OH + g->y0) * w->OW + g->x0,
                               w->OH, w->OW, fs, g->ct, oh, ow));
    if (w->epi) { /* in the output stage of the chunk that writes dst */
        tile_epi_set(c->comp[wk->first_comp + wk->n_comp - 1].v, fs, 0, io->etab);
        return NPU_OK;
    }
    tile_comp *cp = tile_comp_new(c, wk, TGT_SEM_ELTWISE);
    if (!cp)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    memcpy(cp->v, io->elt, sizeof io->elt);
    cp->v[TGT_F_A] = io->conv_is_a ? dst : fs, cp->v[TGT_F_B] = io->conv_is_a ? fs : dst, cp->v[TGT_F_DST] = dst;
    cp->v[TGT_F_C] = g->ct, cp->v[TGT_F_H] = oh, cp->v[TGT_F_W] = ow;
    return NPU_OK;
}

/* Prologue: the loaded input tile (cin channels from cin0) combined in place with the resident C x 1 x 1
 * operand, broadcast over the tile's rows and columns; or the float32 tile loaded at in + in_f quantized
 * into the int8 tile at in (vector unit; the conv waits for it through CHAIN). */
static npu_status emit_pre(tile_ctx *c, tile_work *wk, const win *w, const conv_bufs *io, const conv_tile *g,
                           int64_t in, int64_t in_f, int64_t cin0, int64_t cin)
{
    tile_comp *cp = tile_comp_new(c, wk, pre_quant(w) ? TGT_SEM_QUANTIZE : TGT_SEM_ELTWISE);
    if (!cp)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    memcpy(cp->v, io->pelt, sizeof io->pelt);
    if (pre_quant(w)) { /* dense tiles: the flat order of the float32 tile is the conv's C x H x W */
        cp->v[TGT_F_SRC] = in + in_f, cp->v[TGT_F_DST] = in, cp->v[TGT_F_LEN] = cin * g->ih * g->iw;
        return NPU_OK;
    }
    bool big_a = io_pre_big(w->pre) == 0;
    int64_t bc = (g->ih > 1 ? TGT_BC_H : 0) | (g->iw > 1 ? TGT_BC_W : 0);
    cp->v[TGT_F_A] = big_a ? in : io->pslot + cin0, cp->v[TGT_F_B] = big_a ? io->pslot + cin0 : in;
    cp->v[big_a ? TGT_F_B_BC : TGT_F_A_BC] = bc;
    cp->v[TGT_F_DST] = in;
    cp->v[TGT_F_C] = cin, cp->v[TGT_F_H] = g->ih, cp->v[TGT_F_W] = g->iw;
    return NPU_OK;
}

/* Every tile as load input (when its window changed), load weights (when
 * its channel block changed), computes, store; then the pipeline. */
static npu_status emit_tiles(tile_ctx *c, const ir_node *n, const win *w, const plan *p, const qfields *q)
{
    conv_bufs io = {0};
    npu_status st = resolve_addrs(c, n, w, &io);
    if (st != NPU_OK)
        return st;
    int64_t *blk = NULL;
    plan first = *p; /* the first work's chunks: a split prologue's (pre_split), else the plan's */
    if (pre_split(p))
        first.icc = p->pre_icc, first.n_chunks = tile_cdiv(w->icg, p->pre_icc);
    if (w->sem != TGT_SEM_POOL) {
        blk = npu_malloc(c->alloc, sizeof(int64_t) * (size_t)p->n_ct);
        if (!blk)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        for (int64_t t = 0; t < p->n_ct && st == NPU_OK; t++) {
            int64_t gi = t / tile_cdiv(w->ocg, p->ct), o0 = (t % tile_cdiv(w->ocg, p->ct)) * p->ct;
            st = build_block(c, n, w, t ? p : &first, gi * w->ocg + o0, tile_min(p->ct, w->ocg - o0), &blk[t]);
        }
    }
    if (st == NPU_OK)
        st = place_buffers(c, w, p, &io);
    int64_t tiles = w->N * p->n_y * p->n_x * p->n_ct;
    int64_t prev_in = -1, prev_w = -1, in_loads = 0, w_loads = 0, cur_in = io.in_s[0], cur_w = io.w_s[0];
    bool split = false; /* this work loads the input and scales it chunk by chunk */
    for (int64_t t = 0; t < tiles && st == NPU_OK; t++) {
        conv_tile g;
        tile_geometry(w, p, t, &g);
        if (g.ih < 1 || g.iw < 1) {
            st = tile_fail(c, "an output tile whose window lies entirely in the padding");
            break;
        }
        int64_t cin0 = w->sem == TGT_SEM_CONV ? g.gi * w->icg : g.oc_glob, cin = w->sem == TGT_SEM_CONV ? w->icg : g.ct;
        int64_t in_key = ((g.b * p->n_y + g.yi) * p->n_x + g.xi) * (p->n_ct + 1) +
                         (w->sem == TGT_SEM_CONV && w->G == 1 ? 0 : g.ct_i + 1);
        tile_work *wk = tile_work_new(c);
        if (!wk) {
            st = npu_fail(c->err, NPU_EINTERNAL, "out of memory");
            break;
        }
        if (w->lut && t == 0) /* the epilogue's table, resident for the layer */
            tile_load(wk, tile_box_table(io.tr, io.toff, io.table));
        if (w->epi && t == 0) /* the eltwise epilogue's block, likewise */
            tile_load_flat(c, wk, TGT_REGION_CONSTANTS, io.eoff, io.etab, TGT_ETAB_BYTES);
        if (w->pre && !pre_quant(w) && t == 0) /* the prologue's per-channel operand, resident */
            tile_load_flat(c, wk, io.pr, io.poff, io.pslot, w->C);
        if (in_key != prev_in) {
            cur_in = io.in_s[in_loads++ % p->in_slots];
            int64_t xes = pre_quant(w) ? 4 : w->es; /* a quantize prologue loads float32 */
            tile_load(wk, tile_box_chw(io.xr, io.xoff + (((g.b * w->C + cin0) * w->H + g.ay.i0) * w->W + g.ax.i0) * xes,
                                       w->H, w->W * xes, cur_in + p->in_f, cin, g.ih, g.iw * xes));
            prev_in = in_key;
            split = pre_split(p);
            if (w->pre && !split && (st = emit_pre(c, wk, w, &io, &g, cur_in, p->in_f, cin0, cin)) != NPU_OK)
                break;
        }
        const plan *pc = split ? &first : p;
        if (blk && g.ct_i != prev_w) {
            cur_w = io.w_s[w_loads++ % p->w_slots];
            tile_load_flat(c, wk, TGT_REGION_CONSTANTS, blk[g.ct_i], cur_w, block_bytes(w, g.ct, pc->icc));
            prev_w = g.ct_i;
        }
        int64_t dst = io.out_s[t % p->out_slots];
        st = emit_chunks(c, wk, w, pc, q, &g, cur_in, cur_w, dst, io.psum, split ? &io : NULL, cin0);
        split = false;
        if (w->lut && st == NPU_OK) { /* the last chunk writes dst: its output stage looks the table up */
            tile_comp *last = &c->comp[wk->first_comp + wk->n_comp - 1];
            last->v[TGT_F_EPI_LUT] = 1, last->v[TGT_F_TABLE] = io.table;
        }
        if (w->fuse && st == NPU_OK)
            st = emit_fused(c, wk, w, &io, &g, io.f_s[t % p->out_slots], dst);
        if (st != NPU_OK)
            break;
        tile_store(wk, tile_box_chw(io.yr, io.yoff + (((g.b * w->OC + g.oc_glob) * w->OH + g.y0) * w->OW + g.x0) * w->es,
                                    w->OH, w->OW * w->es, dst, g.ct, g.y1 - g.y0, (g.x1 - g.x0) * w->es));
    }
    npu_free(c->alloc, blk, sizeof(int64_t) * (size_t)p->n_ct);
    c->gate_next = w->in_place; /* store j waits until the rows tile j+1 reads are loaded */
    c->depth = st == NPU_OK ? p->depth : 0;
    return st == NPU_OK ? tile_pipeline(c) : st;
}

/* The SRAM buffers place_buffers asks for. */
static int n_buffers(const win *w, const plan *p)
{
    return (w->lut ? 1 : 0) + (w->epi ? 1 : 0) + (w->pre && !pre_quant(w) ? 1 : 0) + p->in_slots +
           (p->w_slot ? p->w_slots : 0) + (w->fuse ? 2 : 1) * p->out_slots + (p->psum ? 1 : 0);
}

/* A third slot for every streamed buffer where the SRAM has room: a work's
 * loads then wait for the store of the work three before it, not two, so a
 * layer whose stores are long (an output larger than its input) overlaps its
 * load, compute and store instead of chaining them. With a prologue the
 * chain has four stages (load, the vector unit's pass, the MACs, store) and
 * a fourth slot where it fits: with three, EfficientNet-B0's stage 2.0
 * projection ran a tile every 2,375 cycles, its load, scale, conv and store
 * (7,125) over three slots, for a conv of 1,861. Not for an in-place conv,
 * whose NEXT token pairs work j+1's loads with store j. */
static void deepen(const tile_ctx *c, const win *w, plan *p)
{
    if (w->in_place)
        return;
    for (int depth = w->pre ? MAX_DEPTH : 3; depth >= 3; depth--) {
        plan d = *p;
        d.depth = depth;
        d.in_slots = p->in_slots > 1 ? depth : 1;
        d.w_slots = p->w_slots > 1 ? depth : 1;
        d.out_slots = p->out_slots > 1 ? depth : 1;
        if (d.out_slots > 1 && plan_bytes(w, &d) <= c->t->p[TGT_P_SRAM_BYTES] &&
            n_buffers(w, &d) <= TILE_MAX_BUFFERS) {
            *p = d;
            return;
        }
    }
}

static npu_status run_window(tile_ctx *c, const ir_node *n, win *w, const qfields *q)
{
    plan p = {0};
    if (!choose_plan(c, w, &p) && w->in_place)
        return NPU_EUSER; /* no in-place plan: the caller lowers the two nodes apart */
    if (!p.ct)
        return tile_fail(c, "no tile of this %s fits the SRAM (%lld bytes) and the fields of %s",
                         tgt_sem_name(w->sem), (long long)c->t->p[TGT_P_SRAM_BYTES], c->t->isa->name);
    deepen(c, w, &p);
    return emit_tiles(c, n, w, &p, q);
}

/* Would one small tile of this depthwise conv pass the target's checks? */
static bool dwconv_ok(const tile_ctx *c, const win *w)
{
    int i = tile_insn(c, TGT_SEM_DWCONV);
    if (i < 0 || w->kh > tgt_field_max(c->t->isa, i, TGT_F_KH) || w->kw > tgt_field_max(c->t->isa, i, TGT_F_KW))
        return false;
    int64_t v[TGT_F_COUNT];
    tgt_defaults(c->t->isa, i, v);
    v[TGT_F_C] = 1, v[TGT_F_KH] = w->kh, v[TGT_F_KW] = w->kw, v[TGT_F_SH] = w->sh, v[TGT_F_SW] = w->sw;
    v[TGT_F_DH] = w->dh, v[TGT_F_DW] = w->dw;
    v[TGT_F_IH] = tile_span(1, w->kh, 1, w->dh), v[TGT_F_IW] = tile_span(1, w->kw, 1, w->dw), v[TGT_F_OH] = v[TGT_F_OW] = 1;
    npu_err e;
    return tgt_check(c->t, i, v, &e) == NPU_OK;
}

/* The window of conv n, on the depthwise datapath when it takes it. */
static npu_status conv_win(tile_ctx *c, const ir_node *n, const ir_node *fuse, bool in_place, win *out,
                           nk_qconv2d_params *kp)
{
    nk_qconv2d_params k;
    npu_status st = ref_qconv_params(n, &k, c->err);
    if (st != NPU_OK)
        return npu_err_prefix(c->err, "node '%s'", n->name);
    win w = {.sem = TGT_SEM_CONV, .N = k.n, .C = k.c_in, .H = k.h_in, .W = k.w_in, .OC = k.c_out, .OH = k.h_out,
             .OW = k.w_out, .kh = k.k_h, .kw = k.k_w, .sh = k.stride_h, .sw = k.stride_w, .dh = k.dil_h,
             .dw = k.dil_w, .pt = k.pad_top, .pl = k.pad_left, .G = k.groups, .wt = n->inputs[1], .fuse = fuse,
             .epi = fuse && tile_epi_elt_ok(c),
             .in_place = in_place, .a16 = ref_is_a16(n->inputs[0]), .es = ref_is_a16(n->inputs[0]) ? 2 : 1};
    if (w.a16 && fuse)
        return tile_fail(c, "an int16 conv has no fused eltwise");
    w.resident = tile_resident_io(c, n) || (fuse && tile_resident_io(c, fuse));
    w.res_in = tile_tensor_resident(c, n->inputs[0]);
    w.res_out = tile_tensor_resident(c, (fuse ? fuse : n)->outputs[0]);
    w.in_a4 = tile_packed(c, n->inputs[0]), w.out_a4 = tile_packed(c, (fuse ? fuse : n)->outputs[0]);
    w.icg = w.C / w.G, w.ocg = w.OC / w.G;
    if (w.G > 1 && w.G == w.C && w.OC == w.C && dwconv_ok(c, &w)) {
        w.sem = TGT_SEM_DWCONV;
        w.G = 1, w.icg = w.ocg = w.C;
    }
    w.w4 = w.wt->dtype == IR_I4 && tile_w4_ok(c->t, w.sem == TGT_SEM_CONV ? w.icg * w.kh * w.kw : 2) &&
           tgt_insn_field(c->t->isa, tile_insn(c, w.sem), TGT_F_W4);
    w.wbytes_el2 = w.w4 ? 1 : 2;
    *out = w;
    *kp = k;
    return NPU_OK;
}

static npu_status conv(tile_ctx *c, const ir_node *n, const ir_node *fuse, bool in_place, const ir_node *lut,
                       const ir_node *pre)
{
    win w;
    nk_qconv2d_params k;
    npu_status st = conv_win(c, n, fuse, in_place, &w, &k);
    if (st != NPU_OK)
        return st;
    w.lut = lut;
    w.pre = pre;
    w.res_in = w.res_in && !pre; /* a prologue loads the Mul's operand */
    w.res_out = lut ? tile_tensor_resident(c, lut->outputs[0]) : w.res_out;
    qfields q = {k.in_zp, k.out_zp, k.act_min, k.act_max, 0, 0, 0, 0};
    return run_window(c, n, &w, &q);
}

/* A window op's plan as if its input and output were SRAM-resident: whole planes, no DMA for them. */
static void on_chip(win *w)
{
    w->resident = w->res_in = w->res_out = true;
}

int64_t tile_conv_estimate(tile_ctx *c, const ir_node *n, bool resident)
{
    win w;
    nk_qconv2d_params k;
    plan p = {0};
    if (conv_win(c, n, NULL, false, &w, &k) != NPU_OK)
        return INT64_MAX;
    if (resident)
        on_chip(&w);
    return choose_plan(c, &w, &p) ? p.cost : INT64_MAX;
}

npu_status tile_conv(tile_ctx *c, const ir_node *n)
{
    return conv(c, n, NULL, false, NULL, NULL);
}

npu_status tile_conv_block(tile_ctx *c, const ir_node *n, int64_t o0, int64_t ct, int64_t icc, bool build,
                           tile_convinfo *ci)
{
    memset(ci, 0, sizeof *ci);
    win w;
    npu_status st = conv_win(c, n, NULL, false, &w, &ci->k);
    if (st != NPU_OK)
        return st;
    if (w.G != 1)
        return tile_fail(c, "a grouped conv has no single weight block"); /* the cascades then run apart */
    ct = ct > 0 ? ct : w.ocg;
    icc = w.sem != TGT_SEM_CONV ? 1 : icc > 0 ? icc : w.icg;
    plan p = {.ct = ct, .icc = icc, .n_chunks = w.sem == TGT_SEM_CONV ? tile_cdiv(w.icg, icc) : 1};
    ci->sem = w.sem;
    ci->w4 = w.w4;
    ci->blk_bytes = block_bytes(&w, ct, icc);
    ci->chunk_bytes = chunk_bytes(&w, ct, icc);
    ci->qtab_rel = ci->blk_bytes - ((12 * ct + 15) & ~(int64_t)15);
    return build ? build_block(c, n, &w, &p, o0, ct, &ci->blk_off) : NPU_OK;
}

npu_status tile_conv_info(tile_ctx *c, const ir_node *n, bool build, tile_convinfo *ci)
{
    return tile_conv_block(c, n, 0, 0, 0, build, ci);
}

npu_status tile_conv_fused(tile_ctx *c, const ir_node *n, const ir_node *m, bool in_place, bool *done)
{
    npu_status st = conv(c, n, m, in_place, NULL, NULL);
    *done = !(in_place && st == NPU_EUSER && c->n_work == 0 && c->n_words_at_layer == c->n_words);
    return *done ? st : NPU_OK;
}

/* The window and quantization of pool n (a ReduceMean: the average pool of a view). */
static npu_status pool_win(tile_ctx *c, const ir_node *n, win *out, qfields *q)
{
    nk_qpool_params k;
    npu_status st = n->op == IR_OP_REDUCE_MEAN ? ref_qreduce_mean_params(n, &k, c->err) : ref_qpool_params(n, &k, c->err);
    if (st != NPU_OK)
        return npu_err_prefix(c->err, "node '%s'", n->name);
    win w = {.sem = TGT_SEM_POOL, .N = k.n, .C = k.c, .H = k.h_in, .W = k.w_in, .OC = k.c, .OH = k.h_out,
             .OW = k.w_out, .kh = k.k_h, .kw = k.k_w, .sh = k.stride_h, .sw = k.stride_w, .dh = 1, .dw = 1,
             .pt = k.pad_top, .pl = k.pad_left, .G = 1, .icg = k.c, .ocg = k.c, .wbytes_el2 = 2,
             .resident = tile_resident_io(c, n), .res_in = tile_tensor_resident(c, n->inputs[0]),
             .res_out = tile_tensor_resident(c, n->outputs[0]), .a16 = ref_is_a16(n->inputs[0]),
             .es = ref_is_a16(n->inputs[0]) ? 2 : 1};
    w.in_a4 = tile_packed(c, n->inputs[0]), w.out_a4 = tile_packed(c, n->outputs[0]);
    bool max = n->op == IR_OP_MAX_POOL || n->op == IR_OP_GLOBAL_MAX_POOL;
    *q = (qfields){k.in_zp, k.out_zp, k.act_min, k.act_max, k.mult, k.shift, k.count_include_pad,
                   max ? TGT_POOL_MAX : TGT_POOL_AVG};
    if (k.dil_h != 1 || k.dil_w != 1)
        return tile_fail(c, "dilated pool");
    *out = w;
    return NPU_OK;
}

npu_status tile_pool(tile_ctx *c, const ir_node *n)
{
    win w;
    qfields q;
    npu_status st = pool_win(c, n, &w, &q);
    return st == NPU_OK ? run_window(c, n, &w, &q) : st;
}

int64_t tile_pool_estimate(tile_ctx *c, const ir_node *n, bool resident)
{
    win w;
    qfields q;
    plan p = {0};
    if (pool_win(c, n, &w, &q) != NPU_OK)
        return INT64_MAX;
    if (resident)
        on_chip(&w);
    return choose_plan(c, &w, &p) ? p.cost : INT64_MAX;
}

npu_status tile_pool_fields(tile_ctx *c, const ir_node *n, int64_t v[TGT_F_COUNT])
{
    win w;
    qfields q;
    npu_status st = pool_win(c, n, &w, &q);
    if (st != NPU_OK)
        return st;
    if (w.a16)
        return tile_fail(c, "tiler bug: the fields of an int16 pool");
    tgt_defaults(c->t->isa, tile_insn(c, TGT_SEM_POOL), v);
    window_fields(v, &w, &q);
    return NPU_OK;
}

bool tile_conv_lut_ok(const tile_ctx *c, const ir_node *n, const ir_node *m)
{
    if (n->op != IR_OP_CONV || m->op != IR_OP_LUT || m->n_inputs != 2 || m->inputs[0] != n->outputs[0])
        return false;
    const ir_tensor *y = n->outputs[0], *z = m->outputs[0], *tab = m->inputs[1];
    if (ir_use_count(c->g, y) != 1 || (y->flags & IR_TENSOR_OUTPUT) || y->dtype != IR_I8 || z->dtype != IR_I8 ||
        !tab->data || tab->dtype != IR_I8 || ir_tensor_numel(tab) != 256 || !ir_shape_equal(y, z))
        return false;
    for (int s = 0; s < 2; s++) { /* both datapaths: which one runs the conv is decided later */
        int i = tile_insn(c, s ? TGT_SEM_DWCONV : TGT_SEM_CONV);
        if (i >= 0 && (!tgt_insn_field(c->t->isa, i, TGT_F_EPI_LUT) || !tgt_insn_field(c->t->isa, i, TGT_F_TABLE)))
            return false;
    }
    return true;
}

npu_status tile_conv_lut(tile_ctx *c, const ir_node *n, const ir_node *m, bool *done)
{
    *done = tile_conv_lut_ok(c, n, m);
    return *done ? conv(c, n, NULL, false, m, NULL) : NPU_OK;
}

/* An int8 tensor of one scale: a prologue operand or result. */
static bool i8_per_tensor(const ir_tensor *t)
{
    return t && t->dtype == IR_I8 && t->quant && t->quant->count == 1;
}

/* A QuantizeLinear of a float32 activation to int8 per tensor (not int16: A16) that only conv n reads. */
static bool quant_pre_ok(const tile_ctx *c, const ir_node *m, const ir_node *n)
{
    const ir_tensor *x = m->inputs[0], *y = m->outputs[0];
    return n->op == IR_OP_CONV && n->inputs[0] == y && m->n_outputs == 1 && tile_tokens(c->t) >= 5 &&
           tile_insn(c, TGT_SEM_QUANTIZE) >= 0 && ir_use_count(c->g, y) == 1 && !(y->flags & IR_TENSOR_OUTPUT) &&
           y->rank == 4 && x && x->dtype == IR_F32 && !x->data && ir_shape_equal(x, y) && i8_per_tensor(y);
}

bool tile_conv_pre_ok(const tile_ctx *c, const ir_node *m, const ir_node *n)
{
    if (m->op == IR_OP_QUANTIZE_LINEAR && m->n_inputs >= 1)
        return quant_pre_ok(c, m, n);
    if (n->op != IR_OP_CONV || n->inputs[0] != m->outputs[0] || m->n_inputs != 2 || m->n_outputs != 1 ||
        tile_tokens(c->t) < 5 || tile_insn(c, TGT_SEM_ELTWISE) < 0)
        return false;
    if (m->op != IR_OP_ADD && m->op != IR_OP_SUB && m->op != IR_OP_MUL && m->op != IR_OP_MIN && m->op != IR_OP_MAX)
        return false;
    const ir_tensor *y = m->outputs[0], *x = m->inputs[io_pre_big(m)], *s = m->inputs[!io_pre_big(m)];
    if (ir_use_count(c->g, y) != 1 || (y->flags & IR_TENSOR_OUTPUT) || y->rank != 4 || y->dims[0] != 1 ||
        !ir_shape_equal(x, y) || !i8_per_tensor(x) || !i8_per_tensor(s) || !i8_per_tensor(y) || x->data)
        return false;
    /* s is C x 1 x 1 (rank 3 or 4, batch 1) */
    int64_t sc = s->rank >= 3 ? s->dims[s->rank - 3] : 0;
    return (s->rank == 3 || (s->rank == 4 && s->dims[0] == 1)) && sc == y->dims[1] && s->dims[s->rank - 1] == 1 &&
           s->dims[s->rank - 2] == 1;
}

npu_status tile_conv_pre(tile_ctx *c, const ir_node *m, const ir_node *n, bool *done)
{
    *done = tile_conv_pre_ok(c, m, n);
    return *done ? conv(c, n, NULL, false, NULL, m) : NPU_OK;
}

npu_status tile_conv_pre_epi(tile_ctx *c, const ir_node *m, const ir_node *n, const ir_node *a)
{
    if (!tile_conv_pre_ok(c, m, n) || m->op == IR_OP_QUANTIZE_LINEAR || !tile_epi_elt_ok(c))
        return tile_fail(c, "tiler bug: no squeeze-excite prologue with an eltwise epilogue here");
    return conv(c, n, a, false, NULL, m);
}
