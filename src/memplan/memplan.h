/* Memory planning: lifetimes over the step order, placement of every
 * activation in its DRAM region (peak-minimizing, concat/split/reshape
 * elided), the lower bound beside it; and the same placement code for SRAM
 * tile buffers (src/tiler calls mp_place). */
#ifndef NPU_MEMPLAN_H
#define NPU_MEMPLAN_H

#include "ir/ir.h"
#include "partition/partition.h"
#include "rt/npub.h"

/* One buffer to place: live from step first (its write) to step last (its
 * last read), inclusive. */
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

typedef struct mp_tensor {
    npub_region region; /* graph inputs: INPUT, outputs: OUTPUT, constants: CONST, others: ARENA */
    int64_t offset;     /* byte offset in the region (-1: not placed, e.g. CONST before emit) */
    int64_t size;
    int first, last;    /* step indices of the first write and the last read */
    int alias_of;       /* tensor id of the root buffer it lies in, or -1 */
} mp_tensor;

typedef struct mp_plan {
    int n_tensors;
    mp_tensor *t; /* per tensor id, in the graph's arena */
    int64_t region_bytes[NPUB_REGION_COUNT];
    int64_t arena_lower_bound;
    int64_t concat_bytes_copied;       /* with elision */
    int64_t concat_bytes_without_elision;
} mp_plan;

typedef struct mp_options {
    int64_t align;     /* DRAM alignment in bytes (the target's DMA alignment) */
    bool no_elision;   /* place concat inputs separately (for comparison) */
} mp_options;

/* Plans the quantized graph g along the schedule. */
npu_status mp_plan_graph(ir_graph *g, const part_schedule *sched, const mp_options *opts, mp_plan *out,
                         npu_err *err);

#endif
