/* Weights over the flash bus beside DRAM.
 *
 * Where a target copies its constants to DRAM at load time
 * (placement.constants: dram), the flash original stays on a bus of its own,
 * idle for the whole inference; the runtime points region flash at the
 * constants' image there, at the constants region's offsets. A DMA-bound
 * pipeline (placement.flash_stream: on) loads the tail of a work's weights
 * over flash on channel 1 while the rest comes over DRAM on channel 0, sized
 * so that both end together (tile_flash_tail). The flash loads signal
 * FLASHED to the compute that first reads them; what keeps them off slots
 * still in use is the pipeline's (tile_work.flash). The head cascade adds
 * them itself; tile_flash_split adds them to other pipelines whose works all
 * store, or none but the last (docs/tiler.md, "Both buses"). */
#include <string.h>

#include "tiler/tile_internal.h"

/* A flash tail under 1 KB is not worth its transfer's latency (400 ns on edge-v1's flash). */
enum { MIN_TAIL = 1024 };

void tile_load_flash(const tile_ctx *c, tile_work *w, int64_t dram, int64_t sram, int64_t bytes, int comp)
{
    tile_box b[2];
    for (int i = 0, n = tile_flat_boxes(c, TGT_SEM_DMA_LOAD, TGT_REGION_FLASH, dram, sram, bytes, b); i < n; i++) {
        if (w->n_flash < TILE_MAX_FLASH_LOADS)
            w->flash[w->n_flash++] = b[i];
        else
            w->overflow = true;
    }
    w->flash_comp = comp;
}

int64_t tile_flash_tail(const tile_ctx *c, int64_t other, int64_t bytes)
{
    int64_t lo = 0, hi = (bytes / 2) & ~(int64_t)15; /* the flash time grows, the DRAM's falls */
    if (!tile_flash_streams(c) || hi < 16)
        return 0;
    while (lo < hi) {
        int64_t mid = ((lo + hi) / 2 + 15) & ~(int64_t)15;
        mid = mid > hi ? hi : mid;
        if (tile_flat_time(c, TGT_REGION_FLASH, mid) <= other + tile_flat_time(c, TGT_REGION_CONSTANTS, bytes - mid))
            lo = mid;
        else
            hi = mid - 16;
    }
    return lo >= MIN_TAIL ? lo : 0;
}

/* tile_cascades and the memory planner's trials weigh their choices on DRAM
 * alone, as their margins were measured: with the flash tails in their static
 * schedules edge-v1-wide took plans that ran slower (EfficientNet-B0's head,
 * 5.0% ahead statically, 2.8K cycles behind the classifier apart on npusim;
 * MobileNetV2's classifier apart, split into column tiles that stream, beat
 * its head statically and ran 17.9K cycles slower). The build streams. */
bool tile_flash_streams(const tile_ctx *c)
{
    const tgt_target *t = c->t;
    return !c->deciding && !c->serial && t->p[TGT_P_PLACEMENT_CONSTANTS] == TGT_PLACE_DRAM &&
           t->p[TGT_P_PLACEMENT_FLASH_STREAM] && t->p[TGT_P_DMA_CHANNELS] >= 2 && tile_tokens(t) >= 8 &&
           tgt_bus_bytes_per_cycle(t, TGT_BUS_FLASH) > 0;
}

/* Does a compute of work w touch SRAM [lo, hi)? *first: the first that does (-1 none). */
static bool comps_touch(const tile_ctx *c, const tile_work *w, int64_t lo, int64_t hi, int *first)
{
    *first = -1;
    for (int k = 0; k < w->n_comp && *first < 0; k++) {
        const tile_comp *cp = &c->comp[w->first_comp + k];
        tgt_operand op[TGT_MAX_OPERANDS];
        int insn = tile_insn(c, cp->sem);
        for (int i = 0, n = insn < 0 ? 0 : tgt_operands(c->t->isa, insn, cp->v, op); i < n && *first < 0; i++)
            if (!op[i].dram && cp->v[op[i].addr] < hi && lo < cp->v[op[i].addr] + op[i].bytes)
                *first = k;
    }
    return *first >= 0;
}

/* Work j's split: its largest contiguous load of constants, *i (-1 none),
 * and the flash tail of it, *tail, with the compute that first reads it. */
static void plan_work(const tile_ctx *c, int j, int D, int *i, int64_t *tail, int *comp)
{
    const tile_work *w = &c->work[j];
    int64_t best = 0, other = 0;
    *i = -1, *tail = 0, *comp = -1;
    for (int k = 0; k < w->n_load; k++) {
        int64_t b = w->load[k].region == TGT_REGION_CONSTANTS ? tile_contiguous_bytes(&w->load[k]) : -1;
        if (b > best)
            best = b, *i = k;
    }
    if (*i < 0)
        return;
    for (int k = 0; k < w->n_load; k++)
        other += k == *i ? 0 : tile_load_time(c, &w->load[k]);
    int64_t f = tile_flash_tail(c, other, best), lo = w->load[*i].sram + best - f, hi = w->load[*i].sram + best;
    /* the D - 1 works before may still run when the tail loads: they must not touch its SRAM */
    bool clear = f && comps_touch(c, w, lo, hi, comp);
    for (int k = j - D + 1, unused; clear && k < j; k++)
        clear = !comps_touch(c, &c->work[k], lo, hi, &unused);
    *tail = clear ? f : 0;
}

npu_status tile_flash_split(tile_ctx *c, int D, bool gate)
{
    int n = c->n_work;
    tile_work *w = c->work;
    if (gate || n <= D || !tile_flash_streams(c) || !tile_dma_bound(c))
        return NPU_OK;
    /* every work stores (channel 1's order frees the slots) or none but the last (DONE does); one load group */
    int stores = 0;
    for (int j = 0; j < n; j++) {
        if (w[j].n_flash || w[j].n_split || w[j].n_pre)
            return NPU_OK;
        stores += w[j].n_store > 0;
    }
    if (stores != n && stores > (w[n - 1].n_store > 0))
        return NPU_OK;
    int i, comp;
    int64_t tail;
    for (int j = D; j < n; j++) { /* the works from D on all stream, or none does */
        plan_work(c, j, D, &i, &tail, &comp);
        if (!tail || w[j].n_load + 1 > TILE_MAX_LOADS) /* the rest may take two boxes */
            return NPU_OK;
    }
    for (int j = D; j < n; j++) { /* the plan again: a work's computes and the one before's have not changed */
        tile_work *wk = &w[j];
        plan_work(c, j, D, &i, &tail, &comp);
        tile_box b = wk->load[i], r[2];
        int64_t bytes = tile_contiguous_bytes(&b) - tail;
        int nr = tile_flat_boxes(c, TGT_SEM_DMA_LOAD, b.region, b.dram, b.sram, bytes, r);
        memmove(wk->load + i + nr, wk->load + i + 1, sizeof *wk->load * (size_t)(wk->n_load - i - 1));
        memcpy(wk->load + i, r, sizeof *r * (size_t)nr);
        wk->n_load += nr - 1;
        tile_load_flash(c, wk, b.dram + bytes, b.sram + bytes, tail, comp);
    }
    return NPU_OK;
}
