/* Tiler internals shared by its files (not for other modules).
 *
 * A layer is lowered to a list of tile_work items; tile_pipeline emits them
 * with the token scheme of docs/tiler.md: loads of work j+1 on DMA channel 0
 * overlap the compute of work j, its stores go out on channel 1. */
#ifndef NPU_TILE_INTERNAL_H
#define NPU_TILE_INTERNAL_H

#include "kernels/nk_quant.h"
#include "tiler/tiler.h"

/* Tokens (bits of wait/signal); four, so the 4-token npu-v1-narrow works too.
 * Each token has one consumer queue within a pipeline, so counting
 * semaphores pair the k-th wait with the k-th signal (docs/tiler.md). */
enum {
    TILE_T_LOADED = 1 << 0, /* ch0: the last load of a work -> its compute (a copy: its store) */
    TILE_T_FREE = 1 << 1,   /* ch1: store j -> the loads of work j+2 (its slots are free) */
    TILE_T_DONE = 1 << 2,   /* compute -> store */
    TILE_T_BAR = 1 << 3,    /* the last store of a pipeline -> the next pipeline (its only consumer) */
    TILE_T_CHAIN = 1 << 4,  /* within a work, a compute -> the next one on another unit (ISAs with >= 5 tokens) */
    TILE_T_NEXT = 1 << 5,   /* in place over its input: the loads of work j+1 -> the store of work j */
    TILE_T_CHAIN_VEC = 1 << 6, /* CHAIN into the vector unit where chains also feed the MAC array (>= 7 tokens) */
    TILE_T_FLASHED = 1 << 7,   /* ch1: a work's loads over the flash bus -> the compute that reads them (8 tokens) */
};

/* The region of a box on an SRAM-resident tensor (mp_tensor.level): its
 * `dram` is then an SRAM address. Never encoded: tile_pipeline reads such an
 * operand in place (tile_resident.c). */
enum { TILE_REGION_SRAM = 99 };
/* Or'ed into the region of a tensor the plan stores packed (mp_tensor.packed,
 * int4 codes two per byte): its dram offsets and strides are nibbles, one per
 * element, so the per-op code addresses it as one byte per code; tile_dma
 * strips the bit and sets the DMA's a4. */
enum { TILE_REGION_A4 = 0x100 };

typedef struct tile_box {
    int region;
    int64_t dram, sram;
    int64_t c, h, w;
    int64_t dram_hs, dram_cs, sram_hs, sram_cs;
} tile_box;

enum { TILE_MAX_LOADS = 8, TILE_MAX_STORES = 16, TILE_MAX_SPLITS = 3, TILE_MAX_FLASH_LOADS = 2 };
/* SRAM buffers one pipeline places (tile_sram_place) */
enum { TILE_MAX_BUFFERS = 16 };

typedef struct tile_work {
    int n_load;
    tile_box load[TILE_MAX_LOADS];
    /* Later load groups (tile_load_split): the loads from split_load[s] on
     * signal LOADED apart, and the work's compute split_comp[s] waits for
     * them, so the computes before it overlap their transfer. */
    int n_split;
    int split_load[TILE_MAX_SPLITS], split_comp[TILE_MAX_SPLITS];
    int first_comp, n_comp; /* range of tile_ctx.comp */
    /* Load groups that went out early (emit_prefetch), each signalling
     * LOADED itself: emit_loads skips them, their computes still wait. */
    int n_pre;
    int n_store;
    tile_box store[TILE_MAX_STORES];
    /* Earlier store groups (tile_store_split): the stores before
     * store_split[s] (from the previous group's end) wait for DONE from the
     * work's compute store_comp[s], so they go out while later computes run
     * (a chain's last band, chunk by chunk); the rest wait for the last
     * compute. Those computes share the last compute's queue, so that the
     * DONE signals arrive in the order the stores take them. */
    int n_store_split;
    int store_split[TILE_MAX_STORES], store_comp[TILE_MAX_STORES];
    /* Loads over the flash bus beside channel 0's DRAM loads (tile_load_flash):
     * on channel 1, they signal FLASHED, which the work's compute
     * flash_comp waits for. Their slots are free: from work D on, in a
     * pipeline whose works store nothing but the last, they wait for DONE
     * from work j - D's last compute (DONE has no other consumer there); where
     * every work stores, channel 1's order puts them after store j - 2,
     * which waited for work j - 2's computes (D >= 2). Works from D on have
     * them all or none (the first D may load from DRAM alone). */
    int n_flash;
    tile_box flash[TILE_MAX_FLASH_LOADS];
    int flash_comp;
    /* its flash loads land in SRAM no other work of the pipeline touches: all but their last bytes may load
     * on channel 1 of the pipelines before (tile_retro_flash) */
    bool flash_pre;
    bool overflow; /* a load or store past TILE_MAX_LOADS / TILE_MAX_STORES: a tiler bug, not a dropped box */
} tile_work;

/* A compute instruction: its semantics and field values (wait/signal set by the pipeline). */
typedef struct tile_comp {
    tgt_sem sem;
    int64_t v[TGT_F_COUNT];
    /* a side branch: reads the compute before it (CHAIN, on another unit) and hands nothing on, so the
     * compute after it chains from the one before it (a squeeze's pool beside the next chunk's convs) */
    bool side;
    /* a lead piece: runs ahead on its unit, waiting for nothing in the work but the queue's order, and
     * hands its CHAIN to the compute after it (a prologue's chunk k + 1 beside the conv's chunk k) */
    bool lead;
} tile_comp;

/* A place in a pipeline's words, after work j's computes, where a load
 * could go on DMA channel 0 without delaying the pipeline: the static
 * schedule has the channel free from q and each bus from bus[], until `to`
 * (when the next load of the pipeline may start). tile_retro.c. */
typedef struct tile_gap {
    size_t word;
    int64_t q, bus[2], to;
    int64_t comp_end; /* when work j's last compute ends */
    int work;         /* -1: after the next pipeline's boundary prefetch, until the barrier */
} tile_gap;

/* A pipeline whose gaps are kept: the SRAM its instructions touch, when its last load ends, its gaps. */
typedef struct tile_gap_pipe {
    int64_t lo, hi, last;
    int64_t cap; /* resident tensors live above it while it runs */
    int64_t end; /* when its last instruction ends (its barrier) */
    bool ch1;    /* it uses DMA channel 1 (stores, flash loads) */
    int n_gaps;
} tile_gap_pipe;

/* Words put into an earlier layer's: at word `at`, `added` of them. */
typedef struct tile_move_log {
    size_t at, added;
} tile_move_log;

enum { TILE_GAP_HISTORY = 8 };

/* Static schedule: when each queue is free and when each token was signalled. */
enum { TILE_Q_DMA0, TILE_Q_DMA1, TILE_Q_MAC, TILE_Q_VEC, TILE_Q_CTRL, TILE_Q_COUNT };
enum { TILE_KIND_MIXED = -2 }; /* a pipeline whose LOADED consumers are on several queues (last_kind) */
enum { TILE_TOKENS = 8, TILE_TOK_RING = 64 };

typedef struct tile_sched {
    int64_t q_free[TILE_Q_COUNT];
    int64_t tok_time[TILE_TOKENS][TILE_TOK_RING]; /* FIFO of signal times per token */
    int tok_head[TILE_TOKENS], tok_tail[TILE_TOKENS];
    int64_t bus_free[2]; /* DRAM and flash: the channels share their bandwidth */
    int64_t end;         /* latest completion so far */
} tile_sched;

typedef struct tile_ctx {
    const tgt_target *t;      /* the target, its SRAM cut to what lies below the SRAM level */
    const tgt_target *t_full; /* the target as it is (encoding, checks, timing); NULL: t */
    int64_t sram_base;        /* SRAM address of the SRAM level (the resident tensors) */
    /* The SRAM level is placed from the top down, so at each position of the
     * plan everything below the lowest resident tensor live then is free:
     * pos_cap[pos] (NULL: the level's base throughout); lay_cap, the least
     * of the current layer's positions (0: c->t's SRAM). Tiles are placed
     * below the level's base (c->t) but for those of a layer that raises
     * below's SRAM to lay_cap (tile_head). */
    int64_t *pos_cap;
    int64_t lay_cap;
    tgt_target *below;
    char *miss;               /* per tensor id, or NULL: resident tensors that could not be used in place */
    bool serial;              /* every layer's buffers from 0 (clear_base off): tile_memplan's trials */
    bool deciding;            /* tile_cascades' scratch: a cascade weighs itself against its nodes apart */
    int n_missed;             /* misses in the current pipeline (then not emitted: a trial) */
    const ir_graph *g;
    const mp_plan *plan;
    emit_blob *consts;
    /* consts->measure: a throw-away build (tile_cascades' scratch,
     * tile_memplan's trials), whose constants get their offsets, which reach
     * the instructions' fields, but no bytes. qtab_ok: the last node whose
     * multipliers tile_qtab found valid (checked once, not per block). */
    const ir_node *qtab_ok;
    npu_alloc alloc;
    npu_err *err;
    const ir_node *node; /* the node being lowered (error messages) */

    uint32_t *words;
    size_t n_words, cap_words;

    tile_work *work;
    int n_work, cap_work;
    tile_comp *comp;
    int n_comp, cap_comp;

    int64_t sram_used; /* bump allocator of the current layer */
    int64_t sram_need; /* the same from 0: what the layer needs wherever it lies */
    int64_t sram_peak, need_peak; /* the maxima of both */
    bool pending_barrier; /* the last store of the previous pipeline signalled INFREE */
    int last_kind;        /* queue the previous pipeline's loads fed (TILE_Q_*), -1 none, TILE_KIND_MIXED several */

    int64_t *const_off; /* per tensor id: offset of its copy in consts, -1 none */

    tile_sched s;
    int64_t lay_dram_bytes, lay_sram; /* of the current layer */
    int lay_tiles;
    bool gate_next;          /* the next pipeline orders store j after the loads of work j+1 */
    int depth;               /* the next pipeline's slots per buffer, work j+depth reusing work j's (0: 2) */
    bool skew;               /* the next pipeline runs each work's first compute one work ahead (tile_pipeline) */
    /* SRAM below the level that the current pipeline's instructions touch,
     * [pipe_lo, pipe_hi), and the previous pipeline's: its buffers are busy
     * until its barrier, the rest is free for the next one's prefetch. */
    int64_t pipe_lo, pipe_hi, prev_lo, prev_hi;
    int64_t pipe_cap, prev_cap; /* their SRAM tops: resident tensors live above them while they run */
    bool pipe_ch1;           /* the current pipeline uses DMA channel 1 */
    int64_t sram_cap;        /* > 0: placements end below it (buffers placed above it by hand) */
    size_t n_words_at_layer; /* words when the current layer began */
    /* The gaps of the last pipelines (tile_retro.c), oldest first, each
     * pipeline's in hist; gaps_new: where the current pipeline's begin (-1:
     * it notes none). moves: what the current layer put into earlier
     * layers' words (tile_build moves their records). */
    tile_gap *gaps;
    int n_gaps, cap_gaps, gaps_new;
    tile_gap_pipe hist[TILE_GAP_HISTORY];
    int n_hist;
    tile_move_log *moves;
    int n_moves, cap_moves;
} tile_ctx;

static inline int64_t tile_min(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static inline int64_t tile_max(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Is the previous pipeline still running while this layer places its first
 * buffers (its barrier pending, some SRAM touched)? Not in tile_memplan's
 * serial trials, which place every layer from 0. */
static inline bool tile_prev_running(const tile_ctx *c)
{
    return !c->serial && c->pending_barrier && c->pipe_lo < c->pipe_hi;
}

/* Resident tensors may be live from here up while the current layer runs. */
static inline int64_t tile_lay_cap(const tile_ctx *c)
{
    return c->lay_cap > 0 ? c->lay_cap : c->t->p[TGT_P_SRAM_BYTES];
}

static inline int64_t tile_cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Input rows (or columns) that o outputs of a window k, stride s, dilation d read. */
static inline int64_t tile_span(int64_t o, int64_t k, int64_t s, int64_t d)
{
    return (o - 1) * s + d * (k - 1) + 1;
}

/* ---- tile_emit.c ---- */
int tile_insn(const tile_ctx *c, tgt_sem sem);
/* Dependency tokens the ISA's wait field holds. */
int tile_tokens(const tgt_target *t);
/* Encodes one instruction after tgt_check; an illegal tile is an error naming the node. */
npu_status tile_emit(tile_ctx *c, tgt_sem sem, const int64_t v[TGT_F_COUNT]);
/* A DMA box, split into several instructions when a dimension exceeds its field. */
npu_status tile_dma(tile_ctx *c, bool store, int ch, const tile_box *b, int64_t wait, int64_t signal);
/* SRAM of the current layer: 16-byte aligned bump allocation; -1 when it does not fit. */
/* The buffers of one pipeline (its double-buffered slots, weights, partial
 * sums), placed together by the memory planner's mp_place above what the
 * layer already holds: every one is live while the pipeline runs. A layer's
 * first call may place them above the previous pipeline's SRAM instead of
 * from 0 (clear_base), so a pipeline places all its buffers in one call.
 * When they do not fit the SRAM: tile_fail(c, "%s", misfit) and every
 * *off = -1; NPU_EINTERNAL when memory runs out. */
typedef struct tile_sram_req {
    int64_t bytes;
    int64_t *off;
} tile_sram_req;
npu_status tile_sram_place(tile_ctx *c, const tile_sram_req *r, int n, const char *misfit);
/* The same, the buffers marked early (the first work's) clear of the previous pipeline where only they fit so. */
npu_status tile_sram_place_early(tile_ctx *c, const tile_sram_req *r, int n, const bool *early, const char *misfit);
/* Would tile_sram_place_early place those marked early clear of the previous pipeline? (Places nothing.) */
bool tile_sram_early_fits(tile_ctx *c, const tile_sram_req *r, int n, const bool *early);
/* As tile_sram_place_early, trying the early set `fewer` (NULL: none) where `early` does not fit. */
npu_status tile_sram_place_early2(tile_ctx *c, const tile_sram_req *r, int n, const bool *early, const bool *fewer,
                                  const char *misfit);
/* Buffers placed by hand below `end` (more bytes than the bump allocator's): the layer's SRAM use. */
void tile_sram_claim(tile_ctx *c, int64_t end, int64_t more);
/* The same with each group (group[i] of r[i]) on banks of its own where the SRAM has room. */
npu_status tile_sram_place_banked(tile_ctx *c, const tile_sram_req *r, int n, const int *group, int n_groups,
                                  const char *misfit);
/* The first placement of a layer, by hand (tile_pack.c): the n buffers r in [0, top) outside [skip_lo, skip_hi)
 * (a range the caller fills), higher rank[i] first; those of rank > 0 (loaded) where the previous pipeline leaves
 * the SRAM free first. False, nothing placed, when they do not all fit; commit false: only whether they fit. */
bool tile_sram_pack(tile_ctx *c, const tile_sram_req *r, const int *rank, int n, int64_t top, int64_t skip_lo,
                    int64_t skip_hi, bool commit);
void tile_layer_begin(tile_ctx *c);
/* New work item and compute slots (pointers valid until the next call). */
tile_work *tile_work_new(tile_ctx *c);
tile_comp *tile_comp_new(tile_ctx *c, tile_work *w, tgt_sem sem);
void tile_load(tile_work *w, tile_box b);
/* The loads added from now on form a group that the work's compute number
 * comp (0-based, in the work's order) is the first to need. Past
 * TILE_MAX_SPLITS they join the group before, whose compute then waits for
 * them too: later, never wrong. */
void tile_load_split(tile_work *w, int comp);
/* Does work j of the n in w store as the pipeline wants: as work 0 does, or, where work 0 stores nothing,
 * the last work alone (nothing after it takes its FREE; BAR comes from its store)? */
bool tile_stores_alike(const tile_work *w, int n, int j);
/* The stores added since the last split form a group that waits for compute comp of the work. */
void tile_store_split(tile_work *w, int comp);
void tile_store(tile_work *w, tile_box b);
/* A contiguous copy of bytes between a region and SRAM, as at most two boxes (the count). */
int tile_flat_boxes(const tile_ctx *c, tgt_sem sem, int region, int64_t dram, int64_t sram, int64_t bytes,
                    tile_box out[2]);
void tile_load_flat(const tile_ctx *c, tile_work *wk, int region, int64_t dram, int64_t sram, int64_t bytes);
void tile_store_flat(const tile_ctx *c, tile_work *wk, int region, int64_t dram, int64_t sram, int64_t bytes);
/* Emits every work of the layer with the token scheme and resets the list. */
npu_status tile_pipeline(tile_ctx *c);
/* Read-only data (weights, tables) bound for SRAM clear of the previous pipeline. */
bool tile_prefetchable(const tile_ctx *c, const tile_box *b);
/* Where load group g of w ends (the index past its last load); group g - 1's end is where it starts. */
static inline int tile_group_end(const tile_work *w, int g)
{
    return g < 0 ? 0 : g < w->n_split ? w->split_load[g] : w->n_load;
}

/* ---- tile_retro.c ---- */
/* The box's bytes when it is one contiguous range on both sides (else -1). */
int64_t tile_contiguous_bytes(const tile_box *b);
/* The static schedule's cycles for one load of box b. */
int64_t tile_load_time(const tile_ctx *c, const tile_box *b);
/* ... and for a contiguous load of `bytes` from the region (as tile_flat_boxes cuts it). */
int64_t tile_flat_time(const tile_ctx *c, int region, int64_t bytes);
/* Do the pipeline's loads take longer than its busiest compute unit? */
bool tile_dma_bound(const tile_ctx *c);
/* Forget every gap (a new stream). */
void tile_gaps_reset(tile_ctx *c);
/* A pipeline begins: its gaps are noted (notes), or it forgets every gap (its SRAM unknown to them). */
void tile_gaps_begin(tile_ctx *c, bool notes);
/* Notes the gap after work j's computes (the pipeline emits in the order L0 L1 C0 S0 L2 C1 S1 ...). */
npu_status tile_gap_note(tile_ctx *c, int j, int comp_queue);
/* The pipeline's words are out: each gap's end from the load after it (slots per buffer D). */
void tile_gaps_close(tile_ctx *c, int D);
/* Moves the new pipeline's first loads (works j < D) into the gaps of the pipelines before it. */
npu_status tile_retro_prefetch(tile_ctx *c, int D);
/* After the boundary's prefetch: the next loads of those works go early in
 * pieces as far as the static schedule has them loaded by `until` (the barrier). */
npu_status tile_tail_prefetch(tile_ctx *c, int D, int64_t until);
/* The boundary's prefetch is out: what is left until the barrier is a gap of the previous pipeline. */
npu_status tile_gap_boundary(tile_ctx *c, int64_t bar);
/* Flash bytes that loads into SRAM [lo, hi) can move into the pipelines before (tile_retro_flash). */
int64_t tile_flash_room(const tile_ctx *c, int64_t lo, int64_t hi);
/* Moves the new pipeline's flash loads of works marked flash_pre, but for
 * the last bytes that signal FLASHED, onto channel 1 of the pipelines before
 * it, where that channel is idle and the SRAM clear. */
npu_status tile_retro_flash(tile_ctx *c);

/* tile_resident.c: the works' boxes on SRAM-resident tensors become the
 * computes' own addresses (no DMA). A box that is not a dense byte range, or
 * a copy between two such tensors, cannot: with c->miss the tensor is
 * marked (the box moves to a dummy DRAM place; the program is only a trial),
 * else it is a tiler bug. */
npu_status tile_resident(tile_ctx *c);
/* Does node n read or write an SRAM-resident tensor? (Tile choices then
 * prefer boxes that are whole planes.) */
bool tile_resident_io(const tile_ctx *c, const ir_node *n);
/* Is tensor x SRAM-resident in the plan? */
bool tile_tensor_resident(const tile_ctx *c, const ir_tensor *x);
/* Do conv and dwconv address their operands as planes apart (src_cs, dst_cs, b_cs)? Then a row band of a
 * resident tensor is an operand in place. */
bool tile_plane_strides(const tile_ctx *c);
/* tile_build with c->miss and c->serial set (tile_memplan's trial builds);
 * consts measuring only: a throw-away build (emit_blob_init_measure). */
npu_status tile_build_ex(const tgt_target *t, const ir_graph *g, const part_schedule *sched, const mp_plan *plan,
                         emit_blob *consts, npu_alloc alloc, char *miss, bool serial, tile_program *out,
                         npu_err *err);

/* Where a tensor lives: its plan entry, or constant data copied into consts. */
npu_status tile_tensor_addr(tile_ctx *c, const ir_tensor *t, int *region, int64_t *off);
/* Does the plan store t packed (int4 codes two per byte in DRAM, TILE_REGION_A4)? */
bool tile_packed(const tile_ctx *c, const ir_tensor *t);
/* Adds size bytes of data to the constants at a 16-byte offset (a measuring blob: the offset only). */
npu_status tile_const_add(tile_ctx *c, const void *data, size_t size, int64_t *off);
/* A dense box of a CHW tensor region (all sizes in bytes). */
tile_box tile_box_chw(int region, int64_t dram, int64_t H, int64_t W, int64_t sram, int64_t c, int64_t h,
                      int64_t w);
/* A 256-byte activation table (an npu.Lut's, a conv epilogue's) from region
 * r at offset dram into SRAM at sram. */
tile_box tile_box_table(int r, int64_t dram, int64_t sram);
/* A conv epilogue's table slot: 256 bytes at a 1024-aligned address (npu-v1
 * conv's table field has scale 1024), so the slot requested is
 * TILE_EPI_TABLE_BYTES and the table sits at tile_epi_table_at(slot). */
enum { TILE_EPI_TABLE_ALIGN = 1024, TILE_EPI_TABLE_BYTES = TILE_EPI_TABLE_ALIGN + 256 };
int64_t tile_epi_table_at(int64_t slot);
/* Largest field value an instruction accepts. */
int64_t tile_fmax(const tile_ctx *c, tgt_sem sem, tgt_fid f);
/* A lowering failure naming the node: NPU_EUSER ("no legal tile", the node runs
 * elsewhere or the compile fails), or NPU_EINTERNAL for a message starting
 * "tiler bug". */
npu_status tile_fail(tile_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The node reads or writes int16 activations (A16W8). */
bool tile_node_a16(const ir_node *n);

/* int4 weights run packed (w4) when the target has them and a filter fills whole bytes. */
bool tile_w4_ok(const tgt_target *t, int64_t elems_per_filter);

/* tile_build.c: lowers n alone (a quantized node). NPU_OK when it can,
 * *cycles (when non-NULL) the static schedule's end; NPU_EUSER with *reason
 * when no legal tile exists; NPU_EINTERNAL in err when memory runs out or
 * the tiler has a bug (never taken as "the NPU cannot run it"). */
npu_status tile_try_node(const tgt_target *t, const ir_graph *g, const ir_node *n, int64_t *cycles,
                         const char **reason, npu_err *err);

/* ---- tile_flash.c ---- */
/* Can pipelines stream constants over the flash bus beside DRAM (the target
 * asks for it, placement.flash_stream; a flash bus of its own for the
 * constants' image, two DMA channels, eight tokens)? */
bool tile_flash_streams(const tile_ctx *c);
/* Bytes of the constants at `dram` loaded over the flash bus (region flash: the
 * constants' image in flash) on channel 1, for the work's compute comp. */
void tile_load_flash(const tile_ctx *c, tile_work *w, int64_t dram, int64_t sram, int64_t bytes, int comp);
/* The tail of `bytes` of constants to load over flash so that it ends with the
 * rest over DRAM (after `other` cycles of DRAM loads of the same work):
 * 16-byte lines, 0 where flash cannot stream or the tail is too short to be
 * worth a transfer's latency. */
int64_t tile_flash_tail(const tile_ctx *c, int64_t other, int64_t bytes);
/* A DMA-bound pipeline whose works all store, or none but the last (one
 * load group each): works D and later load the flash tail of their largest
 * contiguous load of constants, where every one of them can. */
npu_status tile_flash_split(tile_ctx *c, int D, bool gate);

/* ---- per op: tile_conv.c, tile_cascade.c, tile_fc.c, tile_vec.c ---- */
/* A conv as one weight block (all output channels, one reduction chunk):
 * the instruction it runs on, its parameters, and the block in consts. */
typedef struct tile_convinfo {
    tgt_sem sem; /* TGT_SEM_CONV, or TGT_SEM_DWCONV for a depthwise conv the datapath takes */
    nk_qconv2d_params k;
    bool w4;
    int64_t blk_off, blk_bytes, qtab_rel; /* offset in consts (when built), size, qtab inside the block */
    int64_t chunk_bytes;                  /* bytes of one full reduction chunk's weights in the block */
} tile_convinfo;
npu_status tile_conv_info(tile_ctx *c, const ir_node *n, bool build, tile_convinfo *ci);
/* The block of output channels [o0, o0+ct) with reduction chunks of icc
 * input channels (ct, icc <= 0: all), as the conv tiles lay it out. */
npu_status tile_conv_block(tile_ctx *c, const ir_node *n, int64_t o0, int64_t ct, int64_t icc, bool build,
                           tile_convinfo *ci);
/* A depthwise conv n whose output only feeds the 1x1 conv m: per row tile,
 * dwconv into SRAM, then the 1x1 conv from there; n's output never goes to
 * DRAM. *done is false (nothing emitted) when no such plan fits. */
npu_status tile_dw_pw(tile_ctx *c, const ir_node *n, const ir_node *m, bool *done);
/* The inverted-residual chain nd[0..len): an expand 1x1 conv, the depthwise
 * conv after it, optionally the 1x1 projection and the eltwise after that,
 * or without the expand the depthwise conv, the projection and the eltwise
 * (len 3), as one pipeline over row bands (tile_cascade3.c); the
 * intermediates stay in SRAM. *done is false (nothing emitted) when no such
 * plan fits or it would not be faster than the convs apart. */
npu_status tile_chain(tile_ctx *c, const ir_node *const *nd, int len, bool *done);
/* A dense conv (one group) whose window is not 1x1 stride 1: a stem, which tile_chain takes as the expand
 * (tile_decide.c weighs such chains against their alternatives, tile_memplan.c tries them split). */
bool tile_stem_conv(const ir_node *n);
/* Does the target's pool accumulate a global average over instructions
 * (acc_in, acc_out, psum) and end one dividing by divisor (tile_support.c)? */
bool tile_pool_acc_ok(const tgt_target *t, int64_t divisor);
/* One node lowered on its own (tile_build.c). */
npu_status tile_lower_node(tile_ctx *c, const ir_node *n);
/* The cascade nd[0..len) lowered as one pipeline (tile_decide.c); *done
 * false (nothing emitted) when it does not apply. */
npu_status tile_lower_cascade(tile_ctx *c, const ir_node *const *nd, int len, bool *done);
/* Helpers of the cascades (tile_cascade_common.c). Is y read only by node m (and not a graph output)? */
bool tile_only_reader(const tile_ctx *c, const ir_tensor *y, const ir_node *m);
/* The conv instruction's fields that do not depend on the tile: window, weights at wgt, quantization. */
void tile_conv_fields(int64_t *v, const tile_convinfo *ci, int64_t src, int64_t dst, int64_t wgt);
/* tgt_timing of an instruction of semantics sem with the n (field, value) pairs of set, the rest defaults. */
int64_t tile_timing(const tile_ctx *c, tgt_sem sem, const int64_t *set, int n);
/* A DMA box of ch planes of h rows of w bytes, the DRAM rows dram_hs apart. */
int64_t tile_dma_time(const tile_ctx *c, int64_t ch, int64_t h, int64_t w, int64_t dram_hs);
/* A conv n whose output only the pool m reads, as one pipeline over row bands
 * of the pool's output (or, on whole planes, over channel chunks): the conv's
 * tile in SRAM, the pool (vector unit) after it through CHAIN
 * (tile_cascade_pool.c). *done false (nothing emitted) when it does not apply,
 * does not fit or would not be faster than the two apart. pre: the model
 * input's QuantizeLinear that only n reads, run on each band's float32 rows
 * first (a prologue), or NULL. */
npu_status tile_conv_pool(tile_ctx *c, const ir_node *pre, const ir_node *n, const ir_node *m, bool *done);
/* A model's head (tile_cascade_head.c): a conv [its Lut], its global average pool, [a view] and the
 * classifier Gemm as one pipeline over the conv's output channels, the classifier's weights streamed
 * beside the conv's MACs; *done false when it does not apply. */
npu_status tile_head(tile_ctx *c, const ir_node *const *nd, int len, bool *done);
/* A Gemm's int8 weights for every output in K chunks of kc ([N][kc] each, 16-aligned), then its qtab:
 * into the constants at *off when build; *chunk a full chunk's bytes, *bytes the whole. */
npu_status tile_fc_chunks(tile_ctx *c, const ir_node *n, int64_t kc, bool build, int64_t *off, int64_t *chunk,
                          int64_t *bytes);
npu_status tile_conv(tile_ctx *c, const ir_node *n);
/* The cost model's cycles for conv n lowered alone (its best plan), INT64_MAX when none fits;
 * resident: as if its input and output were SRAM-resident (whole planes, no DMA for them). */
int64_t tile_conv_estimate(tile_ctx *c, const ir_node *n, bool resident);
/* A conv whose output only feeds the eltwise node m (same shapes): each
 * tile's output is combined with the other operand's tile in SRAM and m's
 * output stored; the conv's own output never goes to DRAM. in_place: m's
 * output lies exactly on the conv's input; when no plan can do that safely,
 * *done is false and nothing was emitted. */
npu_status tile_conv_fused(tile_ctx *c, const ir_node *n, const ir_node *m, bool in_place, bool *done);
/* A conv whose output only the npu.Lut m reads (int8 to int8, same shape): the
 * table runs in the conv's output stage (epi_lut), the conv's own output
 * never leaves the MAC array. *done false (nothing emitted) when the ISA has
 * no epilogue table or the pair does not qualify. */
bool tile_conv_lut_ok(const tile_ctx *c, const ir_node *n, const ir_node *m);
npu_status tile_conv_lut(tile_ctx *c, const ir_node *n, const ir_node *m, bool *done);
/* An eltwise m (one operand C x 1 x 1: squeeze-excite's scale) whose output
 * only the conv n reads: each input tile of n is loaded from m's full-size
 * operand and combined with the resident C bytes in SRAM before the conv
 * reads it; m's output never goes to DRAM. Or m a QuantizeLinear of a
 * float32 tensor to int8 (per tensor): each input tile is loaded as float32
 * and the vector unit's quantize writes the conv's int8 tile. *done false
 * when it does not apply. */
bool tile_conv_pre_ok(const tile_ctx *c, const ir_node *m, const ir_node *n);
npu_status tile_conv_pre(tile_ctx *c, const ir_node *m, const ir_node *n, bool *done);
/* The prologue pair m, n with the eltwise a after the conv in its output
 * stage (epi_elt): squeeze-excite's Mul, the projection, the residual add. */
npu_status tile_conv_pre_epi(tile_ctx *c, const ir_node *m, const ir_node *n, const ir_node *a);
/* The eltwise epilogue (tile_epi.c): does the ISA's conv and dwconv have it? The parameter block of the
 * eltwise node m (the conv's result its input 0 when conv_is_a, else input 1), TGT_ETAB_BYTES built into
 * the constants at *off. The epilogue's fields on a conv instruction: operand, its broadcast, the block. */
bool tile_epi_elt_ok(const tile_ctx *c);
npu_status tile_epi_block(tile_ctx *c, const ir_node *m, bool conv_is_a, int64_t *off);
void tile_epi_set(int64_t *v, int64_t operand, int64_t bc, int64_t etab);
npu_status tile_pool(tile_ctx *c, const ir_node *n);
/* The same for pool n. */
int64_t tile_pool_estimate(tile_ctx *c, const ir_node *n, bool resident);
/* The fields of pool n's instruction that do not depend on the tile (window, mode, rescale, clamp). */
npu_status tile_pool_fields(tile_ctx *c, const ir_node *n, int64_t v[TGT_F_COUNT]);
npu_status tile_matmul(tile_ctx *c, const ir_node *n);
/* MatMul of two activations (tile_bmm.c): batched, broadcast, B transposed by the DMA. */
npu_status tile_bmm(tile_ctx *c, const ir_node *n);
npu_status tile_eltwise(tile_ctx *c, const ir_node *n);
/* The eltwise fields of a quantized binary node, addresses and sizes left to the caller. */
npu_status tile_eltwise_fields(tile_ctx *c, const ir_node *n, int64_t base[TGT_F_COUNT]);
npu_status tile_unary(tile_ctx *c, const ir_node *n); /* npu.Lut, npu.Requantize */
/* Their int16 forms (tile_a16.c): input at (xr, xo), output at (yr, yo). */
npu_status tile_unary_a16(tile_ctx *c, const ir_node *n, int xr, int64_t xo, int yr, int64_t yo);
npu_status tile_concat(tile_ctx *c, const ir_node *n);
npu_status tile_rownorm(tile_ctx *c, const ir_node *n); /* npu.Softmax, npu.LayerNorm: tile_norm.c */
npu_status tile_view(tile_ctx *c, const ir_node *n);
/* Strided copies of bytes by DMA (tile_transpose.c): Transpose, Slice. A
 * view's output dims and the input stride of each, reduced: size-1 axes
 * dropped, an axis merged into the next where it steps over exactly it. */
typedef struct tile_strided {
    int rank;
    int64_t dims[IR_MAX_RANK], stride[IR_MAX_RANK];
} tile_strided;
void tile_strided_reduce(int r, const int64_t *dims, const int64_t *stride, tile_strided *out);
bool tile_transpose_ok(const ir_node *n); /* perm is a permutation of the input's axes */
bool tile_slice_ok(const ir_node *n);     /* normalized, forward steps, within the input */
npu_status tile_slice(tile_ctx *c, const ir_node *n);
npu_status tile_transpose(tile_ctx *c, const ir_node *n);
/* rows x rb bytes from (region sr, offset so, row stride ss) to (dr, dof, ds), through SRAM (tile_vec.c). */
npu_status tile_copy_rows(tile_ctx *c, int sr, int64_t so, int64_t ss, int dr, int64_t dof, int64_t ds, int64_t rows,
                          int64_t rb);
/* Gather by constant indices (tile_gather.c): the indices, normalized, in idx; false when they are not
 * constant, out of range or more than TILE_GATHER_MAX. */
enum { TILE_GATHER_MAX = 64 };
bool tile_gather_indices(const ir_node *n, int64_t *idx, int64_t *count);
npu_status tile_gather(tile_ctx *c, const ir_node *n);
npu_status tile_quantize(tile_ctx *c, const ir_node *n); /* QuantizeLinear of a float input (tile_vec.c) */
/* The quantize instruction's fields of QuantizeLinear n (defaults, FSCALE, OUT_ZP, A16), addresses and length left
 * to the caller: its own pass and the conv prologue (tile_conv_pre) use the same numerics. */
npu_status tile_quantize_fields(tile_ctx *c, const ir_node *n, int64_t v[TGT_F_COUNT]);
/* Slice (step 1) and Split by DMA box copies (tile_move.c); nothing moves for a part left in place. */
bool tile_move_shape(const ir_node *n);
npu_status tile_move(tile_ctx *c, const ir_node *n);

/* One axis of a window op tile: outputs [o0, o1) need inputs [i0, i1) and these pads. */
typedef struct tile_axis {
    int64_t i0, i1, p0, p1;
} tile_axis;
tile_axis tile_axis_range(int64_t o0, int64_t o1, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad0);

/* Per-channel {bias, mult, shift} table of a weighted node for channels [c0, c0+n); out NULL: only
 * whether it can be made (a throw-away build). */
npu_status tile_qtab(tile_ctx *c, const ir_node *n, int64_t c0, int64_t cnt, uint8_t *out);
/* A weight block of size bytes with the qtab of channels [c0, c0+cnt) in a throw-away build (consts->measure):
 * its offset and the one check its bytes can fail (the multipliers; w4 blocks pack an int4 tensor's codes,
 * always in range). Laying out the weights was most of tile_memplan's trial builds. */
npu_status tile_block_reserve(tile_ctx *c, const ir_node *n, int64_t c0, int64_t cnt, int64_t size, int64_t *off);

#endif
