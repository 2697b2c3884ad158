/* Loads into earlier pipelines' idle DMA time.
 *
 * The boundary's prefetch (tile_emit.c, emit_prefetch) goes out after the
 * previous pipeline's last words. Channel 0's queue is FIFO and that
 * pipeline's loads wait for their slots (FREE) with the bus idle between
 * them, so the prefetch starts only after its last load: a compute-bound
 * layer before a weight-bound one (MobileNetV2's last projection before
 * its head) leaves its idle bus unused while the next layer's weights wait.
 *
 * Here the next pipeline's first loads (read-only) go into the words of the
 * pipelines before it instead, one piece per gap: after work j's computes,
 * sized to the time the static schedule has channel 0 and the bus idle
 * there (tile_gap), and ending before that pipeline's last load does (from
 * then on the boundary's prefetch has the channel anyway; pieces there only
 * add a transfer's latency: ResNet-18's classifier after its pool). The
 * gaps of the last TILE_GAP_HISTORY pipelines are kept; a piece goes into
 * a pipeline's gaps only where its SRAM is clear of that pipeline and of
 * every one after it. What the next pipeline's boundary prefetch leaves of
 * the time from a pipeline's last load to its barrier is one more gap
 * (tile_gap_boundary), for pipelines that are DMA-bound: a piece still
 * running at the barrier holds the sync's drain, worth it only where every
 * byte loaded early counts; and for the first work's loads where the
 * pipeline just before is shorter, from its last load on, than they take
 * and the gap is an older pipeline's: the first compute would wait for them
 * after that short pipeline's own loads (MobileNetV2's projections after
 * their 2.4K-cycle depthwise layers waited 900 cycles each). They carry
 * no tokens. Each load group keeps the last
 * bytes of one load (KEPT), whose LOADED its compute takes; the pieces sit
 * before it on the same channel, so that queue's order puts them all
 * before that compute. */
#include <string.h>

#include "tiler/tile_internal.h"

/* A piece takes 7/8 of its gap: the static schedule sees neither SRAM bank
 * stalls nor the queues' depth, and with the whole gap some previous
 * pipelines ran longer (SqueezeNet 1.1 on edge-v1-wide +783 cycles). 7/8
 * against 3/4 on the 28 bench runs (session 27): -12.8K cycles in all
 * (MobileNetV2's head on edge-v1 -2.2K, MobileNetV2 on -narrow -5.0K),
 * SqueezeNet 1.1 +592 on -wide and +302 on -narrow, nothing else slower by
 * more than 90. A piece at the stream's end is at least 4 KB: with 2 KB, fmnist
 * mbv2's block 5 ran 200 cycles longer (bank stalls beside its first
 * computes); with 8 KB, EfficientNet-B0 gained 2.4K cycles less. */
enum { MAX_PIECES = 256, MIN_PIECE = 2048, MIN_TAIL = 4096, KEPT = 16 };

void tile_gaps_reset(tile_ctx *c)
{
    c->n_gaps = 0;
    c->n_hist = 0;
    c->gaps_new = -1;
}

void tile_gaps_begin(tile_ctx *c, bool notes)
{
    if (!notes)
        tile_gaps_reset(c);
    else
        c->gaps_new = c->n_gaps;
}

npu_status tile_gap_note(tile_ctx *c, int j, int comp_queue)
{
    if (c->n_gaps == c->cap_gaps) {
        int ncap = c->cap_gaps ? c->cap_gaps * 2 : 64;
        tile_gap *ng = npu_realloc(c->alloc, c->gaps, sizeof *ng * (size_t)c->cap_gaps, sizeof *ng * (size_t)ncap);
        if (!ng)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        c->gaps = ng, c->cap_gaps = ncap;
    }
    const tile_sched *s = &c->s;
    c->gaps[c->n_gaps++] = (tile_gap){c->n_words, s->q_free[TILE_Q_DMA0], {s->bus_free[0], s->bus_free[1]}, 0,
                                      s->q_free[comp_queue], j};
    return NPU_OK;
}

npu_status tile_gap_boundary(tile_ctx *c, int64_t bar)
{
    if (!c->n_hist || c->gaps_new >= 0)
        return NPU_OK;
    npu_status st = tile_gap_note(c, -1, TILE_Q_DMA0);
    if (st == NPU_OK) {
        c->gaps[c->n_gaps - 1].to = bar;
        c->hist[c->n_hist - 1].n_gaps++;
    }
    return st;
}

static int64_t box_bytes(const tile_box *b)
{
    return b->c * b->h * b->w;
}

void tile_gaps_close(tile_ctx *c, int D)
{
    int n = c->n_work, g0 = c->gaps_new;
    if (g0 < 0 || c->n_gaps - g0 != n) { /* a work without computes: no gap after it */
        tile_gaps_reset(c);
        return;
    }
    /* The next load on channel 0 after gap j is work j + 2's (emitted with
     * work j + 1's computes); from work D on it waits for FREE from work
     * j' - D, so the channel is free until that work's computes end. */
    tile_gap *gp = c->gaps + g0;
    for (int j = 0; j < n; j++) {
        int next = j + 2;
        while (next < n && !c->work[next].n_load)
            next++;
        gp[j].to = next >= n ? c->s.end : next < D ? gp[j].q : gp[next - D].comp_end;
    }
    if (c->n_hist == TILE_GAP_HISTORY) { /* the oldest pipeline's gaps go */
        int drop = c->hist[0].n_gaps;
        memmove(c->gaps, c->gaps + drop, sizeof *c->gaps * (size_t)(c->n_gaps - drop));
        c->n_gaps -= drop;
        memmove(c->hist, c->hist + 1, sizeof *c->hist * (TILE_GAP_HISTORY - 1));
        c->n_hist--;
    }
    c->hist[c->n_hist++] = (tile_gap_pipe){c->pipe_lo, c->pipe_hi, c->s.q_free[TILE_Q_DMA0], c->pipe_cap, c->s.end,
                                                   c->pipe_ch1, n};
    c->gaps_new = -1;
}

int64_t tile_contiguous_bytes(const tile_box *b)
{
    if (b->region & TILE_REGION_A4)
        return -1;
    bool rows = b->h == 1 || (b->dram_hs == b->w && b->sram_hs == b->w);
    bool planes = b->c == 1 || (b->dram_cs == b->h * b->w && b->sram_cs == b->h * b->w);
    return rows && planes ? b->c * b->h * b->w : -1;
}

int64_t tile_load_time(const tile_ctx *c, const tile_box *b)
{
    int64_t set[] = {TGT_F_REGION, b->region & ~TILE_REGION_A4, TGT_F_C, b->c, TGT_F_H, b->h, TGT_F_W, b->w,
                     TGT_F_DRAM_HS, b->dram_hs, TGT_F_SRAM_HS, b->sram_hs};
    return tile_timing(c, TGT_SEM_DMA_LOAD, set, 6);
}

int64_t tile_flat_time(const tile_ctx *c, int region, int64_t bytes)
{
    tile_box b[2];
    int64_t t = 0;
    for (int i = 0, n = tile_flat_boxes(c, TGT_SEM_DMA_LOAD, region, 0, 0, bytes, b); i < n; i++)
        t += tile_load_time(c, &b[i]);
    return t;
}

/* The most bytes (a multiple of 16, at most max) that load within `avail` cycles. */
static int64_t fitting_bytes(const tile_ctx *c, int region, int64_t max, int64_t avail)
{
    int64_t lo = 0, hi = max;
    while (lo < hi) {
        int64_t mid = ((lo + hi + 1) / 2 + 15) & ~(int64_t)15;
        mid = mid > hi ? hi : mid;
        if (mid <= lo)
            break;
        if (tile_flat_time(c, region, mid) <= avail)
            lo = mid;
        else
            hi = mid - 1 < lo ? lo : ((mid - 1) & ~(int64_t)15);
    }
    return lo;
}

typedef struct piece {
    int gap;
    int region;
    int64_t dram, sram, bytes;
    int64_t end; /* when the static schedule has it loaded */
} piece;

typedef struct plan {
    tile_gap *gaps; /* where pieces may go, in word order */
    int ch;         /* the DMA channel the pieces go on: 0, or 1 for flash loads (tile_retro_flash) */
    bool multi;     /* a gap takes pieces until it is full (the stream's end), not one */
    piece p[MAX_PIECES];
    int n;
    int gi, g_end;  /* the gap to try next, past the current pipeline's */
    int64_t cur;    /* channel 0's time after the pieces placed so far */
    int64_t until;  /* no piece in the current pipeline's gaps ends later */
    bool dma_bound; /* the pipeline moving its loads: its loads take longer than its busiest unit */
    bool first;     /* the load placed is the first work's: its first compute waits for it */
} plan;

/* Places bytes [off, most) of a contiguous load, piece by piece, in the
 * current pipeline's gaps; returns the bytes placed. */
static int64_t place(const tile_ctx *c, plan *pl, const tile_box *b, int64_t off, int64_t most)
{
    int64_t done = off;
    int bus = tgt_region_bus(c->t, b->region) == TGT_BUS_FLASH;
    while (done < most && pl->gi < pl->g_end && pl->n < MAX_PIECES) {
        const tile_gap *g = &pl->gaps[pl->gi];
        int64_t start = pl->cur > g->q ? pl->cur : g->q;
        start = start > g->bus[bus] ? start : g->bus[bus];
        /* a boundary's gap runs until the barrier, for pipelines whose every byte loaded early counts */
        int64_t end = g->work < 0 ? (pl->dma_bound || pl->first ? g->to : 0)
                                  : g->to < pl->until ? g->to : pl->until;
        int64_t rest = most - done, k = fitting_bytes(c, b->region, rest, (end - start) * 7 / 8);
        if (!pl->multi || k < rest)
            pl->gi++;
        if (k < rest && k < (pl->multi ? MIN_TAIL : MIN_PIECE))
            continue;
        int gap = pl->gi - (pl->multi && k == rest ? 0 : 1);
        pl->cur = start + tile_flat_time(c, b->region, k);
        pl->p[pl->n++] = (piece){gap, b->region, b->dram + done, b->sram + done, k, pl->cur};
        done += k;
    }
    return done - off;
}

/* The work's loads with `moved[i]` bytes of load i gone to the pieces (the rest from where they end). */
static void rebuild(const tile_ctx *c, tile_work *w, const int64_t *moved)
{
    tile_box old[TILE_MAX_LOADS];
    int n_old = w->n_load, split[TILE_MAX_SPLITS];
    memcpy(old, w->load, sizeof old);
    w->n_load = 0;
    for (int g = 0; g <= w->n_split; g++) {
        int a = g ? split[g - 1] : 0, b = g < w->n_split ? w->split_load[g] : n_old;
        if (g < w->n_split)
            split[g] = b;
        for (int i = a; i < b; i++) {
            int64_t total = tile_contiguous_bytes(&old[i]);
            if (!moved[i]) {
                w->load[w->n_load++] = old[i];
            } else if (moved[i] < total) {
                tile_box r[2];
                int nr = tile_flat_boxes(c, TGT_SEM_DMA_LOAD, old[i].region, old[i].dram + moved[i],
                                         old[i].sram + moved[i], total - moved[i], r);
                for (int k = 0; k < nr; k++)
                    w->load[w->n_load++] = r[k];
            }
        }
        if (g < w->n_split)
            w->split_load[g] = w->n_load;
    }
}

/* Reverses words [a, b). */
static void reverse(uint32_t *w, size_t a, size_t b)
{
    for (; a + 1 < b; a++, b--) {
        uint32_t t = w[a];
        w[a] = w[b - 1];
        w[b - 1] = t;
    }
}

/* Notes words put at `at`, before the current layer's: tile_build moves the layer records after. */
static npu_status log_move(tile_ctx *c, size_t at, size_t added)
{
    if (c->n_moves == c->cap_moves) {
        int ncap = c->cap_moves ? c->cap_moves * 2 : 64;
        tile_move_log *nm = npu_realloc(c->alloc, c->moves, sizeof *nm * (size_t)c->cap_moves,
                                        sizeof *nm * (size_t)ncap);
        if (!nm)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        c->moves = nm, c->cap_moves = ncap;
    }
    c->moves[c->n_moves++] = (tile_move_log){at, added};
    c->n_words_at_layer += added;
    return NPU_OK;
}

/* Emits the pieces at their gaps: each at the end of the stream, then
 * rotated into place; every gap from there on (the history's too) moves
 * with the words, and a gap that took a piece is busy until it ends. */
static npu_status emit_pieces(tile_ctx *c, const plan *pl, int n_gaps)
{
    tile_sched keep = c->s; /* they run in earlier pipelines' idle time */
    npu_status st = NPU_OK;
    for (int i = 0; i < pl->n && st == NPU_OK; i++) {
        const piece *p = &pl->p[i];
        tile_box b[2];
        size_t n0 = c->n_words, at = pl->gaps[p->gap].word;
        for (int k = 0, n = tile_flat_boxes(c, TGT_SEM_DMA_LOAD, p->region, p->dram, p->sram, p->bytes, b);
             k < n && st == NPU_OK; k++)
            st = tile_dma(c, false, pl->ch, &b[k], 0, 0);
        if (st != NPU_OK)
            break;
        size_t added = c->n_words - n0;
        reverse(c->words, at, n0);
        reverse(c->words, n0, c->n_words);
        reverse(c->words, at, c->n_words);
        for (int g = 0; g < n_gaps; g++)
            pl->gaps[g].word += pl->gaps[g].word >= at ? added : 0;
        tile_gap *taken = &pl->gaps[p->gap]; /* a later pipeline's pieces there start after this one */
        if (pl->ch == 0)
            taken->q = taken->q > p->end ? taken->q : p->end;
        if (at < c->n_words_at_layer)
            st = log_move(c, at, added);
    }
    c->s = keep;
    if (pl->ch)
        return st; /* flash pieces end with the pipelines that carry them */
    /* channel 0 and the buses busy until the last piece ends (for prefetch_more) */
    c->s.q_free[TILE_Q_DMA0] = pl->cur > c->s.q_free[TILE_Q_DMA0] ? pl->cur : c->s.q_free[TILE_Q_DMA0];
    for (int b = 0; b < 2; b++)
        c->s.bus_free[b] = pl->cur > c->s.bus_free[b] ? pl->cur : c->s.bus_free[b];
    return st;
}

/* Is the load's SRAM clear of pipelines h and later in the history (the last one: tile_prefetchable)? */
static bool clear_since(const tile_ctx *c, const tile_box *b, int64_t bytes, int h)
{
    for (int k = h; k >= 0 && k < c->n_hist; k++)
        if ((b->sram < c->hist[k].hi && c->hist[k].lo < b->sram + bytes) || b->sram + bytes > c->hist[k].cap)
            return false;
    return tile_prefetchable(c, b);
}

enum { MAX_WORKS = 4 };

bool tile_dma_bound(const tile_ctx *c)
{
    int64_t dma = 0, mac = 0, vec = 0;
    const tgt_target *tf = c->t_full ? c->t_full : c->t;
    for (int j = 0; j < c->n_work; j++) {
        const tile_work *w = &c->work[j];
        for (int i = 0; i < w->n_load; i++)
            dma += tile_load_time(c, &w->load[i]);
        for (int k = 0; k < w->n_comp; k++) {
            const tile_comp *cp = &c->comp[w->first_comp + k];
            int insn = tile_insn(c, cp->sem);
            int64_t cyc = 0;
            npu_err e;
            if (insn >= 0 && tgt_timing(tf, insn, cp->v, &cyc, &e) == NPU_OK)
                *(c->t->isa->insns[insn].unit == TGT_UNIT_VECTOR ? &vec : &mac) += cyc;
        }
    }
    return dma > mac && dma > vec;
}

/* Moves the first works' read-only loads (works j < D, their groups from
 * n_pre on, in the order their computes take LOADED) into the gaps of the
 * pipelines h0 .. n_hist - 1 in turn (h0 = -1: the one gap pl->gaps[0]). */
static npu_status move_loads(tile_ctx *c, int D, plan *pl, int h0, int n_gaps)
{
    int nw = D < c->n_work ? D : c->n_work;
    nw = nw < MAX_WORKS ? nw : MAX_WORKS;
    int64_t moved[MAX_WORKS][TILE_MAX_LOADS] = {{0}};
    int room[MAX_WORKS];
    for (int j = 0; j < nw; j++)
        room[j] = TILE_MAX_LOADS - c->work[j].n_load;
    pl->dma_bound = h0 >= 0 && tile_dma_bound(c);
    int64_t need = 0; /* the first work's first group */
    for (int i = 0; c->n_work && i < tile_group_end(&c->work[0], 0); i++)
        need += tile_load_time(c, &c->work[0].load[i]);
    const tile_gap_pipe *last = c->n_hist ? &c->hist[c->n_hist - 1] : NULL;
    bool short_prev = last && last->end - last->last < need;
    for (int h = h0, g0 = 0; h < (h0 < 0 ? 0 : c->n_hist); h++) {
        pl->gi = g0, pl->g_end = h < 0 ? 1 : g0 + c->hist[h].n_gaps;
        pl->until = h < 0 ? pl->until : c->hist[h].last;
        g0 = pl->g_end;
        for (int j = 0; j < nw && pl->gi < pl->g_end; j++) {
            tile_work *w = &c->work[j];
            pl->first = j == 0 && h < c->n_hist - 1 && short_prev;
            for (int g = w->n_pre; g <= w->n_split && pl->gi < pl->g_end; g++) {
                int a = tile_group_end(w, g - 1), b = tile_group_end(w, g), keep = a;
                for (int i = a; i < b; i++) /* the group's LOADED rides on the last bytes of its smallest load */
                    keep = box_bytes(&w->load[i]) < box_bytes(&w->load[keep]) ? i : keep;
                for (int i = a; i < b && pl->gi < pl->g_end; i++) {
                    int64_t total = tile_contiguous_bytes(&w->load[i]);
                    int64_t most = i == keep ? (total - KEPT) & ~(int64_t)15 : total;
                    if (most <= moved[j][i] || !clear_since(c, &w->load[i], total, h))
                        continue;
                    int undo_n = pl->n, undo_gi = pl->gi;
                    int64_t undo_cur = pl->cur, k = place(c, pl, &w->load[i], moved[j][i], most);
                    tile_box r[2];
                    int64_t now = moved[j][i] + k, was = moved[j][i];
                    int extra = now < total ? tile_flat_boxes(c, TGT_SEM_DMA_LOAD, 0, 0, 0, total - now, r) - 1 : 0;
                    int before = was && was < total ? tile_flat_boxes(c, TGT_SEM_DMA_LOAD, 0, 0, 0, total - was, r) - 1
                                                    : 0;
                    if (k && extra - before > room[j]) { /* the rest would not fit the work's loads */
                        pl->n = undo_n, pl->gi = undo_gi, pl->cur = undo_cur;
                        continue;
                    }
                    room[j] -= k ? extra - before : 0;
                    moved[j][i] = now;
                }
            }
        }
    }
    for (int j = 0; j < nw; j++)
        for (int i = 0; i < c->work[j].n_load; i++)
            if (moved[j][i]) {
                rebuild(c, &c->work[j], moved[j]);
                break;
            }
    return pl->n ? emit_pieces(c, pl, n_gaps) : NPU_OK;
}

npu_status tile_retro_prefetch(tile_ctx *c, int D)
{
    if (!c->n_hist || c->serial || c->deciding)
        return NPU_OK;
    plan pl = {.gaps = c->gaps};
    return move_loads(c, D, &pl, 0, c->n_gaps);
}

npu_status tile_tail_prefetch(tile_ctx *c, int D, int64_t until)
{
    if (c->serial || c->deciding)
        return NPU_OK;
    const tile_sched *s = &c->s;
    tile_gap end = {c->n_words, s->q_free[TILE_Q_DMA0], {s->bus_free[0], s->bus_free[1]}, until, 0, 0};
    plan pl = {.gaps = &end, .multi = true, .until = until};
    return move_loads(c, D, &pl, -1, 1);
}

/* Flash loads onto channel 1 of earlier pipelines (tile_retro_flash). One
 * piece per pipeline, at its first gap, of what the flash bus loads in 3/4
 * of the time until that pipeline's end (a boundary's sync drains every
 * queue). The last KEPT bytes of each work's last flash load stay in the
 * work and signal FLASHED; channel 1's order puts the pieces before them. */

static int idle_ch1_from(const tile_ctx *c)
{
    int h = c->n_hist;
    while (h > 0 && !c->hist[h - 1].ch1)
        h--;
    return h;
}

static int64_t flash_room_in(const tile_ctx *c, int h, int *gap)
{
    int g0 = 0;
    for (int k = 0; k < h; k++)
        g0 += c->hist[k].n_gaps;
    *gap = g0;
    if (c->hist[h].n_gaps < 1 || c->gaps[g0].work < 0)
        return 0;
    const tile_gap *g = &c->gaps[g0];
    int64_t start = g->comp_end > g->bus[1] ? g->comp_end : g->bus[1];
    int64_t avail = (c->hist[h].end - start) * 3 / 4;
    return avail > 0 ? fitting_bytes(c, TGT_REGION_FLASH, (int64_t)1 << 30, avail) : 0;
}

/* The oldest kept pipeline from which on channel 1 is idle and the load's SRAM clear (n_hist: none). */
static int clear_flash_from(const tile_ctx *c, const tile_box *b, int64_t bytes)
{
    int h = c->n_hist, from = idle_ch1_from(c);
    if (!clear_since(c, b, bytes, h))
        return h;
    while (h > from && clear_since(c, b, bytes, h - 1))
        h--;
    return h;
}

int64_t tile_flash_room(const tile_ctx *c, int64_t lo, int64_t hi)
{
    if (!c->n_hist || c->serial || c->deciding)
        return 0;
    tile_box b = {TGT_REGION_FLASH, 0, lo, 1, 1, hi - lo, hi - lo, hi - lo, hi - lo, hi - lo};
    int64_t room = 0;
    int gap;
    for (int h = clear_flash_from(c, &b, hi - lo); h < c->n_hist; h++)
        room += flash_room_in(c, h, &gap);
    return room;
}

npu_status tile_retro_flash(tile_ctx *c)
{
    if (!c->n_hist || c->serial || c->deciding)
        return NPU_OK;
    plan pl = {.gaps = c->gaps, .ch = 1};
    int64_t room[TILE_GAP_HISTORY];
    int gap[TILE_GAP_HISTORY];
    for (int h = 0; h < c->n_hist; h++)
        room[h] = flash_room_in(c, h, &gap[h]);
    for (int j = 0; j < c->n_work; j++) {
        tile_work *w = &c->work[j];
        if (!w->flash_pre)
            continue;
        int64_t moved[TILE_MAX_FLASH_LOADS] = {0};
        for (int i = 0; i < w->n_flash; i++) {
            const tile_box *b = &w->flash[i];
            int64_t total = tile_contiguous_bytes(b);
            int64_t most = i == w->n_flash - 1 ? (total - KEPT) & ~(int64_t)15 : total;
            if (total < 0 || most <= 0)
                continue;
            for (int h = clear_flash_from(c, b, total); h < c->n_hist && moved[i] < most; h++) {
                int64_t k = tile_min(room[h], most - moved[i]) & ~(int64_t)15;
                if (k < MIN_PIECE || pl.n == MAX_PIECES)
                    continue;
                pl.p[pl.n++] = (piece){gap[h], TGT_REGION_FLASH, b->dram + moved[i], b->sram + moved[i], k, 0};
                room[h] -= k, moved[i] += k;
            }
        }
        int n = 0;
        tile_box rest[TILE_MAX_FLASH_LOADS];
        for (int i = 0; i < w->n_flash; i++) { /* what is left of each (one or two boxes) */
            tile_box r[2] = {w->flash[i]};
            int64_t total = tile_contiguous_bytes(&w->flash[i]);
            int nr = moved[i] == total ? 0 : 1;
            if (moved[i] && moved[i] < total)
                nr = tile_flat_boxes(c, TGT_SEM_DMA_LOAD, TGT_REGION_FLASH, r[0].dram + moved[i], r[0].sram + moved[i],
                                     total - moved[i], r);
            for (int k = 0; k < nr; k++) {
                if (n == TILE_MAX_FLASH_LOADS)
                    return tile_fail(c, "tiler bug: tile %d keeps more than %d flash loads", j, TILE_MAX_FLASH_LOADS);
                rest[n++] = r[k];
            }
        }
        memcpy(w->flash, rest, sizeof *rest * (size_t)n);
        w->n_flash = n;
    }
    return pl.n ? emit_pieces(c, &pl, c->n_gaps) : NPU_OK;
}
