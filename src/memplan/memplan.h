/* Memory planning: lifetimes over the step order, placement of every
 * activation in its DRAM region (peak-minimizing, concat/split/reshape
 * elided), the lower bound beside it; and the same placement code for SRAM
 * tile buffers (src/tiler calls mp_place). */
#ifndef NPU_MEMPLAN_H
#define NPU_MEMPLAN_H

#include "ir/ir.h"
#include "partition/partition.h"

/* Where a tensor lives. The codes are the .npub's regions (npub_region,
 * rt/npub.h; src/emit/emit.c checks), named here so that the planner needs
 * no runtime header. */
typedef enum mp_region {
    MP_REGION_CONST = 0,  /* constants */
    MP_REGION_ARENA = 1,  /* activations */
    MP_REGION_INPUT = 2,  /* model inputs */
    MP_REGION_OUTPUT = 3, /* model outputs */
    MP_REGION_COUNT = 4
} mp_region;

/* The memory level of an arena tensor (docs/memplan.md "Two levels"):
 * DRAM (its offset is in the DRAM arena region) or resident in the NPU's
 * SRAM (its offset is in the SRAM level, which the tiler puts at the top of
 * the SRAM; no DMA ever moves it). */
typedef enum mp_level { MP_LEVEL_DRAM = 0, MP_LEVEL_SRAM = 1 } mp_level;

/* One buffer to place: live from time first (its write) to time last (its
 * last read), inclusive. Time is whatever axis the caller uses (node
 * positions for mp_plan_graph, steps, instruction indices for SRAM). */
typedef struct mp_item {
    int64_t size;
    int first, last;
    int64_t offset; /* out */
} mp_item;

/* Places items in [0, *total) so that no two with overlapping lifetimes
 * overlap in space; offsets aligned to align. Deterministic. */
npu_status mp_place(mp_item *items, int n, int64_t align, npu_alloc alloc, int64_t *total, npu_err *err);
/* max over steps of the sum of sizes live at that step */
int64_t mp_lower_bound(const mp_item *items, int n);
/* the same with offsets multiples of align: at least mp_lower_bound, and no
 * placement is below it (the search's stopping point) */
int64_t mp_lower_bound_aligned(const mp_item *items, int n, int64_t align);

/* Effort of the improvement search in work units (one unit ~ one
 * neighbour visit or one item moved, a few ns): the default costs some
 * 10-20 ms on 500 buffers when the lower bound is out of reach (on real
 * graphs the first orders tried usually reach it). */
#define MP_EFFORT_DEFAULT ((int64_t)6000000)

typedef struct mp_place_options {
    int64_t align;  /* offsets are multiples of it (<= 0: 1) */
    int64_t effort; /* work-unit budget of the search (<= 0: MP_EFFORT_DEFAULT) */
} mp_place_options;

/* mp_place with options; the search stops early at the lower bound. */
npu_status mp_place_ex(mp_item *items, int n, const mp_place_options *o, npu_alloc alloc, int64_t *total,
                       npu_err *err);

typedef struct mp_tensor {
    mp_region region;   /* graph inputs: INPUT, outputs: OUTPUT, constants: CONST, others: ARENA */
    int64_t offset;     /* byte offset in the region (-1: not placed, e.g. CONST before emit) */
    int64_t size;
    int first, last;    /* step indices of the first write and the last read (-1: unused tensor) */
    int alias_of;       /* tensor id of the root buffer it lies in, or -1 */
    /* The planner's time axis: positions of nodes in schedule order (the
     * n-th live node executed), or steps when planned with by_step. A root's
     * lifetime covers those of all tensors aliased into it. */
    int first_pos, last_pos;
    bool in_sram;       /* a cascade's intermediate: only in NPU SRAM, no DRAM home (offset -1) */
    mp_level level;     /* arena tensors: DRAM, or SRAM-resident (offset then in the SRAM level) */
    bool packed;        /* int4 codes two per byte, low nibble first (size: half, rounded up); DRAM only */
} mp_tensor;

typedef struct mp_plan {
    int n_tensors;
    mp_tensor *t; /* per tensor id, in the graph's arena */
    int64_t region_bytes[MP_REGION_COUNT];
    int64_t arena_lower_bound;
    int64_t concat_bytes_copied;       /* with elision */
    int64_t concat_bytes_without_elision;
    int concats, concats_elided; /* live Concat nodes; those with every input written in place */
    int splits, splits_in_place; /* live Split nodes; those whose outputs all lie in the input */
    int inplace_ops;  /* elementwise nodes writing their output over an input */
    bool by_step;     /* first_pos/last_pos are steps (see mp_options) */
    int n_steps;
    int n_positions;  /* live nodes in the schedule */
    int *node_pos;    /* per index into g->nodes: its position, -1 when not scheduled */
    int *pos_step;    /* per position: the step holding that node */
    int *pos_group;   /* per position: the position of its cascade's first node (mp_options.group), or NULL */
    int64_t sram_bytes;       /* the SRAM level: bytes of the SRAM-resident arena tensors (placed) */
    int64_t sram_lower_bound; /* its max-live bound */
    int sram_tensors;         /* roots resident in SRAM */
} mp_plan;

typedef struct mp_options {
    int64_t align;     /* DRAM alignment in bytes (the target's DMA alignment) */
    bool no_elision;   /* no concat elision, no split in place (for comparison); views still alias */
    bool no_inplace;   /* no elementwise output written over its input */
    /* Plan with whole steps as the time unit. By default two tensors of one
     * NPU segment may share space when their node lifetimes do not overlap,
     * which needs the tiler to finish a node's reads before a later node of
     * the segment writes (see docs/memplan.md). */
    bool by_step;
    int64_t effort;    /* mp_place_options.effort */
    /* Cascades (the tiler's tile_cascades): per index into g->nodes, the
     * index of the first node of the NPU pipeline it runs in (itself when
     * alone), or NULL. The nodes of a group run at once: every tensor they
     * read or write is live across the whole group, and the outputs of all
     * but the group's last node live in NPU SRAM only (in_sram, no DRAM home). */
    const int *group;
    /* The two-level plan: at most sram_bytes (<= 0: none) of arena roots are
     * made SRAM-resident, the ones that avoid the most DMA traffic per byte
     * (a write and each read), among roots live within one NPU step and not
     * excluded by no_sram (per tensor id, or NULL): the tiler's verdict on
     * tensors it cannot read or write in place. */
    int64_t sram_bytes;
    const char *no_sram;
    /* Per tensor id, or NULL: int4 activations to store two codes per byte
     * while they live in DRAM (the tiler's verdict, tile_a4_packable: its
     * DMA unpacks and packs them). An in-place output shares its input's
     * buffer only when both are packed or neither. */
    const char *packed;
} mp_options;

/* Plans the quantized graph g along the schedule. */
npu_status mp_plan_graph(ir_graph *g, const part_schedule *sched, const mp_options *opts, mp_plan *out,
                         npu_err *err);

/* part_caps.arena for the partition's order search (part_choose_order):
 * the arena bytes of g planned along sched with opts (a const mp_options *;
 * NULL: align 1) and a small search effort. Leaves the plan's arrays in the
 * graph's arena. */
npu_status mp_order_arena(void *opts, ir_graph *g, const part_schedule *sched, int64_t *arena, npu_err *err);

/* Checks a plan against the graph without trusting the planner: lifetimes
 * cover every write and read, no two buffers of a region live at the same
 * time overlap, every buffer lies inside its region, and every alias lies
 * inside its root in space and time and is justified by a view or a concat
 * at the right offset. Errors name the tensors involved. */
npu_status mp_check(const ir_graph *g, const mp_plan *p, npu_err *err);

/* The --report lines: arena and bound, concat bytes copied with and
 * without elision, splits read in place. */
void mp_report(const mp_plan *p, FILE *out);
/* One line: every arena tensor's home ("dram", "sram", "sram (cascade)"). */
void mp_report_homes(const mp_plan *p, const ir_graph *g, FILE *out);

/* Split outputs, or a contiguous Slice's one output (one axis, step 1, the
 * dims before it 1), as byte ranges of the input: prefix[j] is output j's
 * byte offset in it. false when they are not plain byte ranges. */
bool mp_split_layout(const ir_node *n, int64_t *prefix);

#endif
