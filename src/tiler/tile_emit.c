/* Instruction emission: checked encoding, DMA boxes split to the ISA's
 * field widths, the double-buffered pipeline with its tokens, and the static
 * schedule that gives each layer its cycle estimate. */
#include <stdarg.h>
#include <string.h>

#include "tiler/tile_internal.h"

npu_status tile_fail(tile_ctx *c, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* "tiler bug: ..." is a broken invariant of ours, not the model's fault: internal (exit 3) */
    npu_status code = strncmp(msg, "tiler bug", 9) == 0 ? NPU_EINTERNAL : NPU_EUSER;
    if (c->node)
        return npu_fail(c->err, code, "node '%s' (%s): %s", c->node->name, ir_op_name(c->node->op), msg);
    return npu_fail(c->err, code, "%s", msg);
}

int tile_insn(const tile_ctx *c, tgt_sem sem)
{
    return tgt_insn_for_sem(c->t->isa, sem);
}

int tile_tokens(const tgt_target *t)
{
    int64_t m = tgt_field_max(t->isa, tgt_insn_for_sem(t->isa, TGT_SEM_SYNC), TGT_F_WAIT);
    int n = 0;
    while (n < 62 && (m >> n) & 1)
        n++;
    return n;
}

int64_t tile_fmax(const tile_ctx *c, tgt_sem sem, tgt_fid f)
{
    int i = tile_insn(c, sem);
    return i < 0 ? 0 : tgt_field_max(c->t->isa, i, f);
}

/* ---- static schedule ---- */

static int queue_of(const tgt_insn *in, const int64_t *v)
{
    switch (in->unit) {
    case TGT_UNIT_DMA: return v && v[TGT_F_CH] ? TILE_Q_DMA1 : TILE_Q_DMA0;
    case TGT_UNIT_MAC: return TILE_Q_MAC;
    case TGT_UNIT_VECTOR: return TILE_Q_VEC;
    default: return TILE_Q_CTRL;
    }
}

/* Issues the instruction into the schedule. A wait no earlier instruction
 * signals would deadlock the NPU: that is a tiler bug, reported as such. */
static npu_status sched_issue(tile_ctx *c, int insn, const int64_t *v, int64_t cycles)
{
    tile_sched *s = &c->s;
    const tgt_insn *in = &c->t->isa->insns[insn];
    int q = queue_of(in, v);
    int64_t start = s->q_free[q];
    if (q == TILE_Q_CTRL)
        for (int i = 0; i < TILE_Q_COUNT; i++)
            start = s->q_free[i] > start ? s->q_free[i] : start;
    for (int b = 0; b < TILE_TOKENS; b++) {
        if (!(v[TGT_F_WAIT] >> b & 1))
            continue;
        if (s->tok_head[b] == s->tok_tail[b])
            return npu_fail(c->err, NPU_EINTERNAL, "node '%s': tiler bug: %s waits on token %d that nothing signals",
                            c->node ? c->node->name : "?", in->name, b);
        int64_t t = s->tok_time[b][s->tok_head[b]++ % TILE_TOK_RING];
        start = t > start ? t : start;
    }
    int64_t end = start + cycles;
    if (in->unit == TGT_UNIT_DMA) { /* latency on the channel, then the transfer on the shared bus */
        bool flash = tgt_region_bus(c->t, v[TGT_F_REGION]) == TGT_BUS_FLASH;
        int64_t lat = c->t->p[flash ? TGT_P_FLASH_LATENCY : TGT_P_DRAM_LATENCY];
        lat = lat < cycles ? lat : cycles;
        int64_t b0 = start + lat > s->bus_free[flash] ? start + lat : s->bus_free[flash];
        end = b0 + cycles - lat;
        s->bus_free[flash] = end;
    }
    for (int b = 0; b < TILE_TOKENS; b++) {
        if (!(v[TGT_F_SIGNAL] >> b & 1))
            continue;
        if (s->tok_tail[b] - s->tok_head[b] >= TILE_TOK_RING)
            return npu_fail(c->err, NPU_EINTERNAL, "tiler bug: token %d signalled without waits", b);
        s->tok_time[b][s->tok_tail[b]++ % TILE_TOK_RING] = end;
    }
    s->q_free[q] = end;
    if (q == TILE_Q_CTRL)
        for (int i = 0; i < TILE_Q_COUNT; i++)
            s->q_free[i] = s->q_free[i] > end ? s->q_free[i] : end;
    s->end = end > s->end ? end : s->end;
    return NPU_OK;
}

/* Widens the pipeline's SRAM range by the instruction's SRAM operands below
 * the level (the resident tensors above it are the plan's, not the pipeline's). */
static void note_sram(tile_ctx *c, int insn, const int64_t *v)
{
    tgt_operand op[TGT_MAX_OPERANDS];
    for (int i = 0, n = tgt_operands(c->t->isa, insn, v, op); i < n; i++) {
        int64_t a = v[op[i].addr];
        if (op[i].dram || a >= c->t->p[TGT_P_SRAM_BYTES])
            continue;
        c->pipe_lo = a < c->pipe_lo ? a : c->pipe_lo;
        c->pipe_hi = a + op[i].bytes > c->pipe_hi ? a + op[i].bytes : c->pipe_hi;
    }
}

npu_status tile_emit(tile_ctx *c, tgt_sem sem, const int64_t v[TGT_F_COUNT])
{
    int insn = tile_insn(c, sem);
    if (insn < 0)
        return tile_fail(c, "the ISA %s has no %s instruction", c->t->isa->name, tgt_sem_name(sem));
    npu_err e;
    const tgt_target *tf = c->t_full ? c->t_full : c->t; /* resident operands lie above c->t's SRAM */
    if (tgt_check(tf, insn, v, &e) != NPU_OK)
        return tile_fail(c, "no legal tile: %s", e.msg);
    int64_t cycles = 0;
    if (tgt_timing(tf, insn, v, &cycles, &e) != NPU_OK)
        return tile_fail(c, "timing: %s", e.msg);
    size_t need = c->n_words + (size_t)c->t->isa->max_words;
    if (need > c->cap_words) {
        size_t ncap = c->cap_words ? c->cap_words * 2 : 1024;
        while (ncap < need)
            ncap *= 2;
        uint32_t *nw = npu_realloc(c->alloc, c->words, c->cap_words * sizeof *nw, ncap * sizeof *nw);
        if (!nw)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        c->words = nw;
        c->cap_words = ncap;
    }
    size_t nw = 0;
    if (tgt_encode(c->t->isa, insn, v, c->words + c->n_words, c->cap_words - c->n_words, &nw, &e) != NPU_OK)
        return tile_fail(c, "encoding: %s", e.msg);
    c->n_words += nw;
    note_sram(c, insn, v);
    if (sem == TGT_SEM_DMA_LOAD || sem == TGT_SEM_DMA_STORE) {
        c->lay_dram_bytes += tgt_dma_bus_bytes(v);
        c->pipe_ch1 |= v[TGT_F_CH] == 1;
    }
    return sched_issue(c, insn, v, cycles);
}

/* ---- DMA ---- */

enum { MAX_PIECES = 64 };

typedef struct pieces {
    int n;
    tile_box b[MAX_PIECES];
} pieces;

static int64_t fmax_dma(const tile_ctx *c, tgt_fid f)
{
    return tile_fmax(c, TGT_SEM_DMA_LOAD, f);
}

/* A stride that does not matter (one row / one plane) takes the dense value if it fits. */
static int64_t free_stride(const tile_ctx *c, tgt_fid f, int64_t dense)
{
    return dense <= fmax_dma(c, f) ? dense : 0;
}

static npu_status split_box(tile_ctx *c, tile_box b, pieces *p)
{
    if (b.c <= 0 || b.h <= 0 || b.w <= 0)
        return NPU_OK;
    if (b.h == 1) {
        b.dram_hs = free_stride(c, TGT_F_DRAM_HS, b.w);
        b.sram_hs = free_stride(c, TGT_F_SRAM_HS, b.w);
    }
    if (b.c == 1) {
        b.dram_cs = free_stride(c, TGT_F_DRAM_CS, b.h * b.w);
        b.sram_cs = free_stride(c, TGT_F_SRAM_CS, b.h * b.w);
    }
    /* rows whose stride a narrow field cannot hold become planes */
    if (b.c == 1 && b.h > 1 && (b.dram_hs > fmax_dma(c, TGT_F_DRAM_HS) || b.sram_hs > fmax_dma(c, TGT_F_SRAM_HS))) {
        tile_box t = b;
        t.c = b.h, t.h = 1, t.dram_cs = b.dram_hs, t.sram_cs = b.sram_hs;
        if (t.dram_cs <= fmax_dma(c, TGT_F_DRAM_CS) && t.sram_cs <= fmax_dma(c, TGT_F_SRAM_CS))
            return split_box(c, t, p);
    }
    int64_t cm = fmax_dma(c, TGT_F_C), hm = fmax_dma(c, TGT_F_H), wm = fmax_dma(c, TGT_F_W);
    if (b.c > cm) {
        for (int64_t z = 0; z < b.c; z += cm) {
            tile_box t = b;
            t.c = b.c - z < cm ? b.c - z : cm;
            t.dram += z * b.dram_cs, t.sram += z * b.sram_cs;
            npu_status st = split_box(c, t, p);
            if (st != NPU_OK)
                return st;
        }
        return NPU_OK;
    }
    if (b.h > hm) {
        for (int64_t y = 0; y < b.h; y += hm) {
            tile_box t = b;
            t.h = b.h - y < hm ? b.h - y : hm;
            t.dram += y * b.dram_hs, t.sram += y * b.sram_hs;
            npu_status st = split_box(c, t, p);
            if (st != NPU_OK)
                return st;
        }
        return NPU_OK;
    }
    if (b.w > wm) {
        for (int64_t x = 0; x < b.w; x += wm) {
            tile_box t = b;
            t.w = b.w - x < wm ? b.w - x : wm;
            t.dram += x, t.sram += x;
            if (t.h == 1)
                t.dram_hs = t.sram_hs = 0;
            npu_status st = split_box(c, t, p);
            if (st != NPU_OK)
                return st;
        }
        return NPU_OK;
    }
    if (p->n == MAX_PIECES)
        return tile_fail(c, "a DMA box of %lldx%lldx%lld needs more than %d transfers", (long long)b.c,
                         (long long)b.h, (long long)b.w, MAX_PIECES);
    p->b[p->n++] = b;
    return NPU_OK;
}

npu_status tile_dma(tile_ctx *c, bool store, int ch, const tile_box *b, int64_t wait, int64_t signal)
{
    pieces p = {0};
    npu_status st = split_box(c, *b, &p);
    if (st != NPU_OK)
        return st;
    if (p.n == 0)
        return tile_fail(c, "tiler bug: an empty DMA box");
    tgt_sem sem = store ? TGT_SEM_DMA_STORE : TGT_SEM_DMA_LOAD;
    int insn = tile_insn(c, sem);
    if (insn < 0)
        return tile_fail(c, "the ISA has no %s", tgt_sem_name(sem));
    if (ch >= c->t->p[TGT_P_DMA_CHANNELS])
        ch = 0;
    for (int i = 0; i < p.n; i++) {
        int64_t v[TGT_F_COUNT];
        tgt_defaults(c->t->isa, insn, v);
        const tile_box *q = &p.b[i];
        v[TGT_F_WAIT] = i == 0 ? wait : 0;
        v[TGT_F_SIGNAL] = i == p.n - 1 ? signal : 0;
        v[TGT_F_CH] = ch;
        v[TGT_F_REGION] = q->region & ~TILE_REGION_A4;
        v[TGT_F_A4] = (q->region & TILE_REGION_A4) != 0;
        v[TGT_F_DRAM] = q->dram, v[TGT_F_SRAM] = q->sram;
        v[TGT_F_C] = q->c, v[TGT_F_H] = q->h, v[TGT_F_W] = q->w;
        v[TGT_F_DRAM_HS] = q->dram_hs, v[TGT_F_DRAM_CS] = q->dram_cs;
        v[TGT_F_SRAM_HS] = q->sram_hs, v[TGT_F_SRAM_CS] = q->sram_cs;
        if ((st = tile_emit(c, sem, v)) != NPU_OK)
            return st;
    }
    return NPU_OK;
}

tile_box tile_box_chw(int region, int64_t dram, int64_t H, int64_t W, int64_t sram, int64_t c, int64_t h, int64_t w)
{
    return (tile_box){region, dram, sram, c, h, w, W, H * W, w, h * w};
}

tile_box tile_box_table(int r, int64_t dram, int64_t sram)
{
    return (tile_box){r, dram, sram, 1, 1, 256, 256, 256, 256, 256};
}

int64_t tile_epi_table_at(int64_t slot)
{
    return (slot + TILE_EPI_TABLE_ALIGN - 1) & ~(int64_t)(TILE_EPI_TABLE_ALIGN - 1);
}

/* A contiguous copy of bytes from a region into SRAM, as at most two boxes. */
/* rows of r bytes (r within the w field and the SRAM row stride), then the rest */
int tile_flat_boxes(const tile_ctx *c, tgt_sem sem, int region, int64_t dram, int64_t sram, int64_t bytes,
                    tile_box out[2])
{
    int64_t r = tile_min(bytes, tile_min(tile_fmax(c, sem, TGT_F_W), tile_fmax(c, sem, TGT_F_SRAM_HS)));
    r = r < 1 ? 1 : r;
    int64_t rows = bytes / r, rest = bytes - rows * r;
    out[0] = (tile_box){region, dram, sram, 1, rows, r, r, rows * r, r, rows * r};
    out[1] = (tile_box){region, dram + rows * r, sram + rows * r, 1, 1, rest, rest, rest, rest, rest};
    return rest ? 2 : 1;
}

void tile_load_flat(const tile_ctx *c, tile_work *wk, int region, int64_t dram, int64_t sram, int64_t bytes)
{
    tile_box b[2];
    for (int i = 0, n = tile_flat_boxes(c, TGT_SEM_DMA_LOAD, region, dram, sram, bytes, b); i < n; i++)
        tile_load(wk, b[i]);
}

void tile_store_flat(const tile_ctx *c, tile_work *wk, int region, int64_t dram, int64_t sram, int64_t bytes)
{
    tile_box b[2];
    for (int i = 0, n = tile_flat_boxes(c, TGT_SEM_DMA_STORE, region, dram, sram, bytes, b); i < n; i++)
        tile_store(wk, b[i]);
}

/* ---- layer state ---- */

/* Where placements end: the SRAM below the level, or below buffers placed by hand (sram_cap). */
static int64_t sram_top(const tile_ctx *c)
{
    return c->sram_cap > 0 ? c->sram_cap : c->t->p[TGT_P_SRAM_BYTES];
}

/* Where a layer's first buffers go: from 0, unless that meets the SRAM the
 * previous pipeline touches and they fit above it. Buffers clear of it let
 * this layer's weights load while that pipeline still runs (emit_prefetch);
 * consecutive layers that fit then alternate between the two ends. */
static int64_t clear_base(const tile_ctx *c, int64_t total)
{
    int64_t above = (c->pipe_hi + 15) & ~(int64_t)15;
    if (!tile_prev_running(c) || total <= c->pipe_lo ||
        above + total > tile_min(sram_top(c), c->pipe_cap))
        return 0;
    return above;
}

/* The layer's bump allocator now ends at used (need: from 0); the peaks follow. */
static void placed(tile_ctx *c, int64_t used, int64_t need)
{
    c->sram_used = used;
    c->sram_need = need;
    /* the SRAM above the tiles (the level, or what the layer's cap leaves of it) counts too */
    int64_t above =
        c->t_full && c->plan->sram_bytes > 0 ? c->t_full->p[TGT_P_SRAM_BYTES] - c->t->p[TGT_P_SRAM_BYTES] : 0;
    c->sram_peak = tile_max(c->sram_peak, c->sram_used + above);
    c->need_peak = tile_max(c->need_peak, c->sram_need + above);
    c->lay_sram = c->sram_used > c->lay_sram ? c->sram_used : c->lay_sram;
}

npu_status tile_sram_place(tile_ctx *c, const tile_sram_req *r, int n, const char *misfit)
{
    mp_item items[TILE_MAX_BUFFERS];
    int64_t base = (c->sram_used + 15) & ~(int64_t)15, need = (c->sram_need + 15) & ~(int64_t)15, total = 0;
    for (int i = 0; i < n; i++)
        *r[i].off = -1;
    if (n <= 0 || n > TILE_MAX_BUFFERS)
        return tile_fail(c, "tiler bug: %d SRAM buffers for one pipeline", n);
    for (int i = 0; i < n; i++) {
        if (r[i].bytes < 0)
            return tile_fail(c, "%s", misfit);
        items[i] = (mp_item){r[i].bytes, 0, 0, 0};
    }
    npu_status st = mp_place(items, n, 16, c->alloc, &total, c->err);
    if (st != NPU_OK)
        return st;
    if (base + total > sram_top(c) && c->sram_used != c->sram_need)
        return tile_fail(c, "tiler bug: a second SRAM placement after one placed clear of the previous pipeline");
    if (base + total > sram_top(c))
        return tile_fail(c, "%s", misfit);
    if (c->sram_used == 0)
        base = clear_base(c, total);
    for (int i = 0; i < n; i++)
        *r[i].off = base + items[i].offset;
    placed(c, base + total, need + total);
    return NPU_OK;
}

/* As tile_sram_place, but where the buffers do not fit clear of the
 * previous pipeline (above or below its SRAM) while those marked early (the
 * first work's, and what all works share) do above it with the rest below
 * them: so placed, the first work's loads still go out while that pipeline
 * runs (emit_prefetch). The later works' slots may lie on it: their loads
 * wait for the barrier unless clear (prefetch_more checks). Otherwise the
 * buffers are placed as tile_sram_place does, in the caller's order. */
static npu_status place_early_try(tile_ctx *c, const tile_sram_req *r, int n, const bool *early, bool commit,
                                  bool *done)
{
    *done = false;
    mp_item all[TILE_MAX_BUFFERS], part[2][TILE_MAX_BUFFERS];
    int64_t total = 0, size[2] = {0, 0}, sram = sram_top(c);
    int np[2] = {0, 0}, idx[2][TILE_MAX_BUFFERS];
    bool prev = tile_prev_running(c);
    if (!prev || c->sram_used != 0 || n > TILE_MAX_BUFFERS)
        return NPU_OK;
    for (int i = 0; i < n; i++) {
        if (r[i].bytes < 0)
            return NPU_OK;
        all[i] = (mp_item){r[i].bytes, 0, 0, 0};
        int k = early[i] ? 0 : 1;
        idx[k][np[k]] = i, part[k][np[k]++] = all[i];
    }
    npu_status st = mp_place(all, n, 16, c->alloc, &total, c->err);
    if (st != NPU_OK || !np[0] || !np[1] || total <= c->pipe_lo || clear_base(c, total) > 0)
        return st; /* whole and clear, or not at all */
    for (int k = 0; k < 2 && st == NPU_OK; k++)
        st = mp_place(part[k], np[k], 16, c->alloc, &size[k], c->err);
    if (st != NPU_OK)
        return st;
    /* the early ones above the previous pipeline and the rest below them; else the early ones below it (from
     * 0) and the rest above them: the previous pipeline left the bottom free (block 14 of MobileNetV2) */
    int64_t above = (c->pipe_hi + 15) & ~(int64_t)15, at[2];
    if (size[1] <= above && above + size[0] <= tile_min(sram, c->pipe_cap))
        at[0] = above, at[1] = (above - size[1]) & ~(int64_t)15;
    else if (size[0] <= c->pipe_lo && ((size[0] + 15) & ~(int64_t)15) + size[1] <= sram)
        at[0] = 0, at[1] = (size[0] + 15) & ~(int64_t)15;
    else
        return NPU_OK;
    *done = true;
    if (!commit)
        return NPU_OK;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < np[k]; i++)
            *r[idx[k][i]].off = at[k] + part[k][i].offset;
    int64_t end = at[0] + size[0] > at[1] + size[1] ? at[0] + size[0] : at[1] + size[1];
    placed(c, end, ((c->sram_need + 15) & ~(int64_t)15) + size[0] + size[1]);
    return NPU_OK;
}

npu_status tile_sram_place_early(tile_ctx *c, const tile_sram_req *r, int n, const bool *early, const char *misfit)
{
    return tile_sram_place_early2(c, r, n, early, NULL, misfit);
}

npu_status tile_sram_place_early2(tile_ctx *c, const tile_sram_req *r, int n, const bool *early, const bool *fewer,
                                  const char *misfit)
{
    bool done = false;
    npu_status st = place_early_try(c, r, n, early, true, &done);
    if (st == NPU_OK && !done && fewer)
        st = place_early_try(c, r, n, fewer, true, &done);
    return st != NPU_OK || done ? st : tile_sram_place(c, r, n, misfit);
}

bool tile_sram_early_fits(tile_ctx *c, const tile_sram_req *r, int n, const bool *early)
{
    bool done = false;
    return place_early_try(c, r, n, early, false, &done) == NPU_OK && done;
}

/* As tile_sram_place, but each group of buffers (group[i] of r[i], 0 to
 * n_groups - 1) starts on its own SRAM bank where the SRAM has room for
 * every group rounded up to whole banks: a pipeline whose works run on two
 * units at once (the MAC array on work j, the vector unit on work j-1)
 * then touches disjoint banks from each unit when each work's slots are
 * one group, and no unit stalls on the other's bank accesses (the NPU
 * model charges them; the static schedule does not see them). Otherwise
 * the buffers are packed as tile_sram_place does. */
npu_status tile_sram_place_banked(tile_ctx *c, const tile_sram_req *r, int n, const int *group, int n_groups,
                                  const char *misfit)
{
    const tgt_target *full = c->t_full ? c->t_full : c->t;
    int64_t bank = full->p[TGT_P_SRAM_BANKS] > 1 ? full->p[TGT_P_SRAM_BYTES] / full->p[TGT_P_SRAM_BANKS] : 0;
    /* 16-byte buffers: tile_cascades decides on a target cut to the SRAM level, whose "banks" need not be
     * (the example CNN's conv3 + global pool failed wgt % 16 below a 327,664-byte level) */
    bank &= ~(int64_t)15;
    int64_t span[16] = {0}, padded = 0; /* each group's bytes, then rounded up to whole banks */
    bool ok = bank >= 16 && n_groups > 1 && n_groups <= 16;
    for (int i = 0; ok && i < n; i++) {
        ok = r[i].bytes >= 0 && group[i] >= 0 && group[i] < n_groups;
        if (ok)
            span[group[i]] += (r[i].bytes + 15) & ~(int64_t)15;
    }
    for (int g = 0; ok && g < n_groups; g++)
        span[g] = (span[g] + bank - 1) / bank * bank, padded += span[g];
    /* A pipeline of its own: at the top of the SRAM, so that the next one
     * has the bottom to place clear of it (its prefetch, tile_emit's
     * boundary), if that is clear of the previous one; else from 0 if clear
     * (or serial: tile_memplan's trials); else packed. */
    int64_t sram = sram_top(c), base = -1;
    bool prev = tile_prev_running(c);
    if (ok && c->sram_used == 0 && padded <= sram) { /* else (sram - padded) / bank truncates to a top of 0 */
        int64_t top = (sram - padded) / bank * bank;
        if (top >= 0 && !c->serial && (!prev || (top >= c->pipe_hi && top + padded <= c->pipe_cap)))
            base = top;
        else if (padded <= sram && (!prev || padded <= c->pipe_lo))
            base = 0;
    }
    if (base < 0)
        return tile_sram_place(c, r, n, misfit);
    int64_t at[16], end = base;
    for (int g = 0; g < n_groups; g++)
        at[g] = g ? at[g - 1] + span[g - 1] : base;
    for (int i = 0; i < n; i++) {
        *r[i].off = at[group[i]];
        at[group[i]] += (r[i].bytes + 15) & ~(int64_t)15;
        end = at[group[i]] > end ? at[group[i]] : end;
    }
    placed(c, end, ((c->sram_need + 15) & ~(int64_t)15) + padded);
    return NPU_OK;
}

void tile_sram_claim(tile_ctx *c, int64_t end, int64_t more)
{
    placed(c, end > c->sram_used ? end : c->sram_used, ((c->sram_need + 15) & ~(int64_t)15) + more);
}

void tile_layer_begin(tile_ctx *c)
{
    c->n_words_at_layer = c->n_words;
    c->sram_used = c->sram_need = 0;
    c->n_work = 0;
    c->n_comp = 0;
}

tile_work *tile_work_new(tile_ctx *c)
{
    if (c->n_work == c->cap_work) {
        int ncap = c->cap_work ? c->cap_work * 2 : 64;
        tile_work *nw = npu_realloc(c->alloc, c->work, sizeof *nw * (size_t)c->cap_work, sizeof *nw * (size_t)ncap);
        if (!nw)
            return NULL;
        c->work = nw;
        c->cap_work = ncap;
    }
    tile_work *w = &c->work[c->n_work++];
    memset(w, 0, sizeof *w);
    w->first_comp = c->n_comp;
    return w;
}

tile_comp *tile_comp_new(tile_ctx *c, tile_work *w, tgt_sem sem)
{
    if (c->n_comp == c->cap_comp) {
        int ncap = c->cap_comp ? c->cap_comp * 2 : 64;
        tile_comp *nc = npu_realloc(c->alloc, c->comp, sizeof *nc * (size_t)c->cap_comp, sizeof *nc * (size_t)ncap);
        if (!nc)
            return NULL;
        c->comp = nc;
        c->cap_comp = ncap;
    }
    tile_comp *k = &c->comp[c->n_comp++];
    k->sem = sem;
    k->side = k->lead = false;
    int insn = tile_insn(c, sem);
    if (insn >= 0)
        tgt_defaults(c->t->isa, insn, k->v);
    else
        memset(k->v, 0, sizeof k->v);
    w->n_comp++;
    return k;
}

void tile_load(tile_work *w, tile_box b)
{
    if (w->n_load < TILE_MAX_LOADS)
        w->load[w->n_load++] = b;
    else
        w->overflow = true;
}

void tile_load_split(tile_work *w, int comp)
{
    if (w->n_split < TILE_MAX_SPLITS) {
        w->split_load[w->n_split] = w->n_load;
        w->split_comp[w->n_split++] = comp;
    }
}

bool tile_stores_alike(const tile_work *w, int n, int j)
{
    return (w[j].n_store > 0) == (w[0].n_store > 0) || (j == n - 1 && !w[0].n_store && w[j].n_comp);
}

void tile_store_split(tile_work *w, int comp)
{
    int prev = w->n_store_split ? w->store_split[w->n_store_split - 1] : 0;
    if (w->n_store > prev && w->n_store_split < TILE_MAX_STORES) {
        w->store_split[w->n_store_split] = w->n_store;
        w->store_comp[w->n_store_split++] = comp;
    }
}

void tile_store(tile_work *w, tile_box b)
{
    if (w->n_store < TILE_MAX_STORES)
        w->store[w->n_store++] = b;
    else
        w->overflow = true;
}

/* ---- the pipeline ---- */

static npu_status emit_group(tile_ctx *c, const tile_box *b, int n, bool store, int64_t wait, int64_t signal)
{
    for (int i = 0; i < n; i++) {
        npu_status st = tile_dma(c, store, store ? 1 : 0, &b[i], i == 0 ? wait : 0, i == n - 1 ? signal : 0);
        if (st != NPU_OK)
            return st;
    }
    return NPU_OK;
}

static int comp_queue(const tile_ctx *c, const tile_comp *k)
{
    return queue_of(&c->t->isa->insns[tile_insn(c, k->sem)], NULL);
}

/* The work's loads, each group signalling LOADED after its last load. */
static npu_status emit_loads(tile_ctx *c, int j, int64_t first_wait, bool gate, int depth)
{
    const tile_work *w = &c->work[j];
    npu_status st = NPU_OK;
    for (int g = w->n_pre; g <= w->n_split && st == NPU_OK && w->n_load; g++) {
        int a = tile_group_end(w, g - 1), b = tile_group_end(w, g);
        st = emit_group(c, w->load + a, b - a, false, a == 0 ? (j >= depth ? TILE_T_FREE : 0) | first_wait : 0,
                        TILE_T_LOADED | (gate && j >= 1 && b == w->n_load ? TILE_T_NEXT : 0));
    }
    /* where the works store, channel 1's order puts these after store j - 2 (tile_work) */
    bool after_done = j >= depth && !c->work[0].n_store;
    for (int i = 0; i < w->n_flash && st == NPU_OK; i++)
        st = tile_dma(c, false, 1, &w->flash[i], i == 0 && after_done ? TILE_T_DONE : 0,
                      i == w->n_flash - 1 ? TILE_T_FLASHED : 0);
    return st;
}

/* Does compute k of work w wait for a load group? */
static bool waits_loaded(const tile_work *w, int k)
{
    bool r = k == 0 && w->n_load;
    for (int s = 0; s < w->n_split; s++)
        r |= w->split_comp[s] == k;
    return r;
}

/* Store groups must be non-empty, in order, each waiting for an earlier
 * compute than the next on the last compute's queue. */
static bool store_splits_ok(const tile_ctx *c, const tile_work *w)
{
    for (int s = 0; s < w->n_store_split; s++) {
        int a0 = s ? w->store_split[s - 1] : 0, k0 = s ? w->store_comp[s - 1] : -1, k = w->store_comp[s];
        if (w->store_split[s] <= a0 || w->store_split[s] >= w->n_store || k <= k0 || k >= w->n_comp - 1 ||
            comp_queue(c, &c->comp[w->first_comp + k]) != comp_queue(c, &c->comp[w->first_comp + w->n_comp - 1]))
            return false;
    }
    return true;
}

/* Load groups must be non-empty, in order, each first needed by a later compute. */
static bool splits_ok(const tile_work *w)
{
    for (int s = 0; s < w->n_split; s++) {
        int l0 = s ? w->split_load[s - 1] : 0, k0 = s ? w->split_comp[s - 1] : 0;
        if (w->split_load[s] <= l0 || w->split_load[s] >= w->n_load || w->split_comp[s] <= k0 ||
            w->split_comp[s] >= w->n_comp)
            return false;
    }
    return true;
}

/* Read-only data (weights, tables: the constants and flash regions) into
 * SRAM clear of everything the previous pipeline touches. */
bool tile_prefetchable(const tile_ctx *c, const tile_box *b)
{
    int64_t end = b->sram + (b->c - 1) * b->sram_cs + (b->h - 1) * b->sram_hs + b->w;
    return (b->region == TGT_REGION_CONSTANTS || b->region == TGT_REGION_FLASH) &&
           (b->sram >= c->prev_hi || end <= c->prev_lo) && end <= c->prev_cap;
}

/* Overlap at the layer boundary: the first work's prefetchable loads need
 * not wait for the previous pipeline's barrier, so they go out first,
 * without a token, while the previous layer still computes; the DMA queue's
 * order puts every later load of this pipeline after them. At least one load
 * of the first group stays behind to take the barrier (the input, which the
 * previous layer may just have stored), unless `whole` (the pipeline syncs
 * on the barrier before its computes): then a first group that is all
 * prefetchable (an SRAM-resident input leaves the weights alone) goes out
 * whole and signals LOADED for compute 0. That signal pairs with compute 0's
 * wait whatever queue the previous pipeline's LOADED consumer was: compute 0
 * is fetched after the sync, when every earlier wait has taken its token. */
static npu_status emit_prefetch(tile_ctx *c, tile_work *w, bool whole)
{
    int g0 = tile_group_end(w, 0), h = 0, n_pre = 0;
    for (int i = 0; i < g0; i++)
        n_pre += tile_prefetchable(c, &w->load[i]);
    if (whole && g0 > 0 && n_pre == g0 && w->n_comp > 0) {
        w->n_pre = 1;
        return emit_group(c, w->load, g0, false, 0, TILE_T_LOADED);
    }
    tile_box keep[TILE_MAX_LOADS], pre[TILE_MAX_LOADS];
    int nk = 0;
    for (int i = 0; i < g0; i++) {
        const tile_box *b = &w->load[i];
        if (tile_prefetchable(c, b) && h + 1 < g0)
            pre[h++] = *b;
        else
            keep[nk++] = *b;
    }
    if (h == 0 || nk == 0)
        return NPU_OK;
    for (int i = 0; i < h; i++) {
        npu_status st = tile_dma(c, false, 0, &pre[i], 0, 0);
        if (st != NPU_OK)
            return st;
    }
    memmove(w->load + nk, w->load + g0, sizeof *w->load * (size_t)(w->n_load - g0));
    memcpy(w->load, keep, sizeof *keep * (size_t)nk);
    w->n_load -= h;
    for (int s = 0; s < w->n_split; s++)
        w->split_load[s] -= h;
    return NPU_OK;
}

/* When the previous pipeline's BAR comes in the static schedule (-1: none pending). */
static int64_t bar_time(const tile_ctx *c)
{
    const tile_sched *s = &c->s;
    int b0 = 0;
    while (!(TILE_T_BAR >> b0 & 1))
        b0++;
    return s->tok_head[b0] == s->tok_tail[b0] ? -1 : s->tok_time[b0][s->tok_head[b0] % TILE_TOK_RING];
}

/* After a whole first group went early, the load groups behind it that are
 * all prefetchable go too, in the order their computes take LOADED (tokens
 * count: a group may not pass one still to come), within the works whose
 * slots are free from the start (j < D), and only while the static schedule
 * has them loaded by the barrier `bar`: the sync's drain waits for every
 * queued transfer, so a later one would hold compute 0 back. */
static npu_status prefetch_more(tile_ctx *c, int D, int64_t bar)
{
    for (int j = 0; j < D && j < c->n_work; j++) {
        tile_work *w = &c->work[j];
        for (int g = w->n_pre; g <= w->n_split; g++) {
            int a = tile_group_end(w, g - 1), b = tile_group_end(w, g);
            for (int i = a; i < b; i++)
                if (!tile_prefetchable(c, &w->load[i]))
                    return NPU_OK;
            if (b == a)
                return NPU_OK;
            tile_sched keep = c->s;
            size_t words = c->n_words;
            int64_t lo = c->pipe_lo, hi = c->pipe_hi, bytes = c->lay_dram_bytes;
            npu_status st = emit_group(c, w->load + a, b - a, false, 0, TILE_T_LOADED);
            if (st != NPU_OK)
                return st;
            if (c->s.q_free[TILE_Q_DMA0] > bar) { /* not worth it: take it back */
                c->s = keep, c->n_words = words, c->pipe_lo = lo, c->pipe_hi = hi, c->lay_dram_bytes = bytes;
                return NPU_OK;
            }
            w->n_pre = g + 1;
        }
    }
    return NPU_OK;
}

/* The queue of the pipeline's LOADED consumers: each loading work's first
 * compute (a work without computes: its store). TILE_KIND_MIXED when they
 * differ (a squeeze-excite prologue on an input loaded once: the first
 * work's eltwise on the vector unit, the later works' convs on the MAC
 * array): a later LOADED wait on the MAC queue is then still pending when
 * the next pipeline is fetched, and a consumer of that pipeline on the
 * vector queue could take its token, so the next pipeline syncs. */
static int loaded_kind(const tile_ctx *c, const tile_work *w, int n)
{
    int kind = -1;
    for (int j = 0; j < n; j++) {
        if (j > 0 && !w[j].n_load)
            continue;
        int k = w[j].n_comp ? queue_of(&c->t->isa->insns[tile_insn(c, c->comp[w[j].first_comp].sem)], NULL)
                            : TILE_Q_DMA1;
        if (kind >= 0 && k != kind)
            return TILE_KIND_MIXED;
        kind = k;
    }
    return kind;
}

/* The boundary with the previous pipeline (when a barrier is pending): the
 * prefetch, then either a sync on BAR or, returned in *first_wait, BAR for
 * the first load. Fetch runs ahead: when this pipeline's LOADED consumer is
 * another queue than the last one's, it could take that pipeline's tokens,
 * so fetch holds (sync) until the last pipeline is done. On the same queue,
 * FIFO order keeps the pairing and the first load alone waits for the
 * barrier, unless it went out with the prefetch (or there is none). */
static npu_status emit_boundary(tile_ctx *c, int D, bool gate, bool same, int64_t *first_wait)
{
    tile_work *w0 = &c->work[0];
    *first_wait = 0;
    int64_t bar = bar_time(c); /* loads signal no BAR: the same after them */
    npu_status st = gate ? NPU_OK : tile_retro_prefetch(c, D);
    if (st == NPU_OK && !gate)
        st = tile_retro_flash(c);
    if (st == NPU_OK)
        st = emit_prefetch(c, w0, true);
    if (st == NPU_OK && w0->n_pre && !gate && bar >= 0)
        st = prefetch_more(c, D, bar);
    if (st == NPU_OK && !gate && bar >= 0) /* and in pieces what did not go whole */
        st = tile_tail_prefetch(c, D, bar);
    if (st == NPU_OK && !gate && bar >= 0)
        st = tile_gap_boundary(c, bar);
    if (st != NPU_OK)
        return st;
    bool early_flash = false; /* loads on channel 1 that no DONE orders after the barrier need the sync */
    for (int j = 0; j < D && j < c->n_work; j++)
        early_flash |= c->work[j].n_flash > 0;
    if (same && w0->n_load && !w0->n_pre && !early_flash) {
        *first_wait = TILE_T_BAR;
        return NPU_OK;
    }
    int64_t v[TGT_F_COUNT];
    tgt_defaults(c->t->isa, tile_insn(c, TGT_SEM_SYNC), v);
    v[TGT_F_WAIT] = TILE_T_BAR;
    /* BAR already implies an idle NPU; drain (where the ISA has it) says so to the hardware too */
    if (tgt_insn_field(c->t->isa, tile_insn(c, TGT_SEM_SYNC), TGT_F_DRAIN))
        v[TGT_F_DRAIN] = 1;
    return tile_emit(c, TGT_SEM_SYNC, v);
}

/* What every compute of a pipeline needs to set its tokens. */
typedef struct pipe_shape {
    int D;             /* slots per buffer */
    bool stores;       /* the works store */
    bool free_to_comp; /* compute 0 of work j >= D waits FREE (no loads to wait for it) */
    bool chain_vec;    /* chains feed both units: the vector unit's consumers take CHAIN_VEC */
} pipe_shape;

/* The CHAIN token whose consumer is queue q. */
static int64_t chain_token(const pipe_shape *ps, int q)
{
    return ps->chain_vec && q == TILE_Q_VEC ? TILE_T_CHAIN_VEC : TILE_T_CHAIN;
}

/* The compute of w that compute k takes its CHAIN hand-over from (-1: none):
 * the one before it, past any side branch (which hands nothing on) unless k
 * is the side branch itself. */
static int chained_from(const tile_ctx *c, const tile_work *w, int k)
{
    const tile_comp *cp = &c->comp[w->first_comp];
    int kp = k - 1;
    while (kp >= 0 && !cp[k].side && cp[kp].side)
        kp--;
    return kp;
}

/* Compute k of work j with its tokens; sig: what the work's last compute
 * signals when the work stores nothing. */
static npu_status emit_comp(tile_ctx *c, const pipe_shape *ps, int j, int k, int64_t sig)
{
    const tile_work *w = &c->work[j];
    tile_comp *cp = &c->comp[w->first_comp + k];
    int q = comp_queue(c, cp), qn = k + 1 < w->n_comp && !cp->side && !cp[1].lead ? comp_queue(c, cp + 1) : q;
    int kp = chained_from(c, w, k);
    int qp = kp >= 0 && !cp->lead ? comp_queue(c, &c->comp[w->first_comp + kp]) : q;
    cp->v[TGT_F_WAIT] = (waits_loaded(w, k) ? TILE_T_LOADED : 0) | (qp != q ? chain_token(ps, q) : 0) |
                        (ps->free_to_comp && j >= ps->D && k == 0 ? TILE_T_FREE : 0) |
                        (w->n_flash && k == w->flash_comp ? TILE_T_FLASHED : 0);
    bool last = k == w->n_comp - 1, ends_group = false;
    for (int s = 0; s < w->n_store_split; s++)
        ends_group |= w->store_comp[s] == k;
    cp->v[TGT_F_SIGNAL] = (last ? (w->n_store ? TILE_T_DONE : sig) : ends_group ? TILE_T_DONE : 0) |
                          (qn != q ? chain_token(ps, qn) : 0);
    if ((qp != q || qn != q) && tile_tokens(c->t) < 5)
        return tile_fail(c, "tiler bug: a chained tile needs a fifth token");
    if (ps->chain_vec && (qp != q || qn != q) && tile_tokens(c->t) < 7)
        return tile_fail(c, "tiler bug: chains into both units need a seventh token");
    return tile_emit(c, cp->sem, cp->v);
}

/* Load groups in a skewed pipeline: only in the last work, each waited for
 * by a compute on its first compute's queue. The LOADED waits on that queue
 * then come in the order the groups signal (the work's first compute went
 * out after the work before's second, its later ones after it); earlier,
 * work j+1's first compute would take work j's later group's token. */
static bool last_split_ok(const tile_ctx *c, const tile_work *w, int n, int j)
{
    if (j != n - 1)
        return false;
    int q0 = comp_queue(c, &c->comp[w[j].first_comp]);
    for (int s = 0; s < w[j].n_split; s++)
        if (comp_queue(c, &c->comp[w[j].first_comp + w[j].split_comp[s]]) != q0)
            return false;
    return true;
}

/* The pipeline's shape, after checking that its works are alike. */
static npu_status shape_of(tile_ctx *c, int D, bool stores, bool skew, pipe_shape *ps)
{
    int n = c->n_work;
    const tile_work *w = c->work;
    /* A work whose computes span two units (the MAC array ahead of the
     * vector unit) could otherwise start work j+D while work j's last
     * compute still reads the slots; on one unit the queue's order does it. */
    bool into_mac = false, into_vec = false;
    for (int j = 0; j < n; j++)
        for (int k = 1; k < w[j].n_comp; k++) {
            const tile_comp *ck = &c->comp[w[j].first_comp + k];
            int q = comp_queue(c, ck), kp = chained_from(c, &w[j], k);
            if (kp >= 0 && !ck->lead && q != comp_queue(c, &c->comp[w[j].first_comp + kp]))
                into_vec |= q == TILE_Q_VEC, into_mac |= q != TILE_Q_VEC;
            if (ck->side && k + 1 < w[j].n_comp && comp_queue(c, ck + 1) != comp_queue(c, ck - 1))
                return tile_fail(c, "tiler bug: the compute after a side branch is on another unit than the one "
                                 "before it");
        }
    bool cross = into_mac || into_vec;
    *ps = (pipe_shape){D, stores, (stores || cross) && n > D && !w[D].n_load, into_mac && into_vec};
    for (int j = 0; skew && j < n; j++)
        if (w[j].n_comp < 3 || !w[j].n_load || (w[j].n_split && !last_split_ok(c, w, n, j)) ||
            comp_queue(c, &c->comp[w[j].first_comp]) == comp_queue(c, &c->comp[w[j].first_comp + 1]))
            return tile_fail(c, "tiler bug: a skewed tile %d needs loads and a prologue before two more computes, "
                             "and load groups only as the last tile", j);
    for (int j = 0; j < n; j++)
        if ((j >= D && (w[j].n_flash > 0) != (w[D].n_flash > 0)) ||
            (w[j].n_flash && (stores ? !w[j].n_store : j < n - 1 && w[j].n_store)) ||
            (w[j].n_flash && (w[j].flash_comp < 0 || w[j].flash_comp >= w[j].n_comp || tile_tokens(c->t) < 8)))
            return tile_fail(c, "tiler bug: tile %d's flash loads: not in every tile, where some tiles store and "
                             "others not, for no compute, or without an eighth token", j);
    for (int j = 0; j < n; j++)
        if (w[j].overflow)
            return tile_fail(c, "tiler bug: tile %d has more than %d loads or %d stores", j, TILE_MAX_LOADS,
                             TILE_MAX_STORES);
    for (int j = 0; j < n; j++)
        if (!tile_stores_alike(w, n, j) || (w[j].n_comp == 0) != (w[0].n_comp == 0) ||
            (j > D && (w[j].n_load > 0) != (w[D].n_load > 0)) ||
            (w[j].n_comp == 0 && !w[j].n_store) || !splits_ok(&w[j]) || !store_splits_ok(c, &w[j]))
            return tile_fail(c, "tiler bug: tile %d mixes stores and none, loads and none, copies and compute, or "
                             "splits its loads wrongly", j);
    return NPU_OK;
}

/* Emits the works in the order L0 L1 C0 S0 L2 C1 S1 ...: loads of work j+1
 * go out while work j computes; the loads of work j+2 reuse work j's slots
 * once its store is done, which also frees the output slot compute j+2 writes. */
npu_status tile_pipeline(tile_ctx *c)
{
    int n = c->n_work;
    tile_work *w = c->work;
    if (n == 0)
        return NPU_OK;
    c->n_missed = 0;
    npu_status st = tile_resident(c);
    if (st != NPU_OK || c->n_missed) { /* a trial that found operands it cannot read in place: not emitted */
        c->depth = 0, c->skew = false;
        c->lay_tiles += n;
        c->n_work = c->n_comp = 0;
        return st;
    }
    /* Resident operands (tile_resident) leave works without loads, and a
     * layer writing a resident tensor has no stores at all: its computes
     * then free the slots (FREE) and end the pipeline (BAR). */
    bool stores = w[0].n_store > 0, gate = c->gate_next;
    /* Work j+D (D slots per buffer, 2 unless the tiler placed more) writes
     * the output slot store j reads: without loads of its own to wait for
     * FREE, its first compute does (works >= D all alike) */
    int D = c->depth > 2 && !gate ? c->depth : 2;
    c->depth = 0;
    pipe_shape ps;
    bool skew = c->skew;
    c->skew = false;
    if ((st = tile_flash_split(c, D, gate)) != NPU_OK || (st = shape_of(c, D, stores, skew, &ps)) != NPU_OK)
        return st;
    int kind = loaded_kind(c, w, n);
    bool barrier = c->pending_barrier;
    c->gate_next = false;
    if (gate && tile_tokens(c->t) < 6)
        return tile_fail(c, "tiler bug: an in-place pipeline needs a sixth token");
    for (int j = 1; gate && j < n; j++)
        if (!w[j].n_load)
            return tile_fail(c, "tiler bug: an in-place tile %d loads nothing", j);
    int64_t first_wait = 0;
    c->prev_lo = c->pipe_lo, c->prev_hi = c->pipe_hi, c->prev_cap = c->pipe_cap;
    c->pipe_lo = INT64_MAX, c->pipe_hi = 0, c->pipe_ch1 = false, c->pipe_cap = tile_lay_cap(c);
    st = barrier ? emit_boundary(c, D, gate, kind == c->last_kind, &first_wait) : NPU_OK;
    c->pending_barrier = false;
    c->last_kind = kind;
    if (st == NPU_OK)
        st = emit_loads(c, 0, first_wait, gate, D);
    /* Skewed with three slots: the loads of work j+2 go out before store j
     * (they wait for store j-1), so a transfer that the static schedule's
     * bus takes in issue order is not put behind a store that is ready later. */
    int ahead = skew && D >= 3 ? 2 : 1;
    /* where the next pipeline's first loads may go (tile_retro.c): not in-place or ahead-by-two pipelines */
    bool notes = !gate && ahead == 1 && !c->serial && !c->deciding;
    tile_gaps_begin(c, notes);
    if (ahead == 2 && n > 1 && st == NPU_OK)
        st = emit_loads(c, 1, 0, gate, D);
    for (int j = 0; j < n && st == NPU_OK; j++) {
        if (ahead == 1 && j + 1 < n && (st = emit_loads(c, j + 1, 0, gate, D)) != NPU_OK)
            break;
        int64_t gate_wait = gate && j + 1 < n ? TILE_T_NEXT : 0;
        int64_t sig = (j + D < n && (w[j + D].n_load || stores || ps.free_to_comp) ? TILE_T_FREE : 0) |
                      (j + D < n && w[j + D].n_flash && !stores ? TILE_T_DONE : 0) | (j == n - 1 ? TILE_T_BAR : 0);
        if (w[j].n_comp == 0) { /* a copy: the store waits for its load */
            st = emit_group(c, w[j].store, w[j].n_store, true, w[j].n_load ? TILE_T_LOADED : 0, sig);
            continue;
        }
        for (int k = 0; k < w[j].n_comp && st == NPU_OK; k++) {
            if (skew && k == 0 && j > 0)
                continue; /* went out with work j-1's */
            st = emit_comp(c, &ps, j, k, sig);
            /* skewed: work j+1's first compute (a prologue on the other unit)
             * goes out after work j's second, ahead of work j's later
             * computes on its unit, so it overlaps work j's second */
            if (st == NPU_OK && skew && k == 1 && j + 1 < n)
                st = emit_comp(c, &ps, j + 1, 0, 0);
        }
        if (st == NPU_OK && notes)
            st = tile_gap_note(c, j, comp_queue(c, &c->comp[w[j].first_comp + w[j].n_comp - 1]));
        if (st == NPU_OK && ahead == 2 && j + 2 < n)
            st = emit_loads(c, j + 2, 0, gate, D);
        for (int s = 0, a = 0; s <= w[j].n_store_split && st == NPU_OK && w[j].n_store; s++) {
            int b = s < w[j].n_store_split ? w[j].store_split[s] : w[j].n_store;
            st = emit_group(c, w[j].store + a, b - a, true, TILE_T_DONE | (s ? 0 : gate_wait),
                            b == w[j].n_store ? sig : 0);
            a = b;
        }
    }
    if (st == NPU_OK)
        c->pending_barrier = true;
    if (st == NPU_OK && notes)
        tile_gaps_close(c, D);
    c->lay_tiles += n;
    c->n_work = 0;
    c->n_comp = 0;
    return st;
}

/* ---- tensors and constants ---- */

npu_status tile_const_add(tile_ctx *c, const void *data, size_t size, int64_t *off)
{
    size_t o;
    npu_status st = emit_blob_add(c->consts, data, size, 16, &o, c->err);
    *off = (int64_t)o;
    return st;
}

npu_status tile_tensor_addr(tile_ctx *c, const ir_tensor *t, int *region, int64_t *off)
{
    if (t->data) {
        if (c->const_off[t->id] < 0) {
            int64_t o;
            npu_status st = tile_const_add(c, t->data, ir_tensor_bytes(t), &o);
            if (st != NPU_OK)
                return st;
            c->const_off[t->id] = o;
        }
        *region = TGT_REGION_CONSTANTS;
        *off = c->const_off[t->id];
        return NPU_OK;
    }
    if (t->id < 0 || t->id >= c->plan->n_tensors || c->plan->t[t->id].offset < 0)
        return tile_fail(c, "tensor '%s' has no place in the memory plan", t->name);
    *region = (int)c->plan->t[t->id].region;
    *off = c->plan->t[t->id].offset;
    if (c->plan->t[t->id].level == MP_LEVEL_SRAM)
        *region = TILE_REGION_SRAM, *off += c->sram_base;
    else if (c->plan->t[t->id].packed)
        *region |= TILE_REGION_A4, *off *= 2;
    return NPU_OK;
}

bool tile_packed(const tile_ctx *c, const ir_tensor *t)
{
    return t && !t->data && t->id >= 0 && t->id < c->plan->n_tensors && c->plan->t[t->id].packed &&
           c->plan->t[t->id].level == MP_LEVEL_DRAM;
}

tile_axis tile_axis_range(int64_t o0, int64_t o1, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad0)
{
    int64_t a = o0 * s - pad0, b = (o1 - 1) * s - pad0 + d * (k - 1) + 1; /* [a, b) */
    tile_axis r;
    r.i0 = a < 0 ? 0 : a;
    r.i1 = b > in ? in : b;
    r.p0 = r.i0 - a;
    r.p1 = b - r.i1;
    return r;
}
