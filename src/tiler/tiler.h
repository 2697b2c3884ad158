/* Tiler: turns every NPU node of the quantized graph into NPU instructions
 * (encoded through the ISA tables of src/target): tiles that fit the SRAM and
 * the ISA's field widths, DMA of inputs/weights/outputs, compute, dependency
 * tokens so that the DMA of the next tile overlaps the compute of this one.
 * It also answers the partitioner's question "can the NPU run this node?". */
#ifndef NPU_TILER_H
#define NPU_TILER_H

#include "common/blob.h"
#include "ir/ir.h"
#include "memplan/memplan.h"
#include "partition/partition.h"
#include "target/target.h"

/* part_caps callback: ud is the tgt_target. Judges the node as it will be
 * after quantization (int8 activations, int8/int4 weights). */
bool tile_supports(void *target, const ir_graph *g, const ir_node *n, const char **reason);
/* q_options.int_supported callback (ud: the tgt_target), asked of the float
 * node: false for a Softmax / LayerNormalization whose integer form the
 * target's NPU cannot run (it then stays float, for the host); true for
 * every other node. */
bool tile_int_supported(void *target, const ir_graph *g, const ir_node *n);

/* opt_split_pool's test (ud: the tgt_target): does the NPU's pool take an
 * average over a kh x kw window at this stride (its fields, the target's
 * checks, an exact int32 sum)? */
bool tile_avgpool_ok(void *target, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w);

/* part_caps.npu_cost (ud: the tgt_target): the NPU cost of n alone, *cycles
 * from the static schedule of n's own instructions (lowered into a
 * throw-away context, as tile_supports does; no program is built, no
 * cascade or fusion with its neighbours). NPU_EUSER, with the reason, when
 * the NPU cannot run it; NPU_EINTERNAL in err when the tiler runs out of
 * memory or has a bug. */
npu_status tile_estimate(void *target, const ir_graph *g, const ir_node *n, int64_t *cycles, const char **reason,
                         npu_err *err);

/* The NPU pipelines the tiler cascades (docs/tiler.md): per index into
 * g->nodes, the index of the first node of the cascade it runs in (itself
 * when it runs alone). Decided from the target, the graph and the schedule
 * alone, so that the memory planner can keep the intermediates out of DRAM
 * (mp_options.group); tile_build decides the same. */
npu_status tile_cascades(const tgt_target *t, const ir_graph *g, const part_schedule *sched, npu_alloc alloc,
                         int *group, npu_err *err);

/* The int4 activations to store packed, two codes per byte, in DRAM
 * (mp_options.packed, per tensor id, in g's arena): on targets with int4
 * activations whose DMA has the a4 field, those produced and read only by
 * NPU ops that address them in DMA boxes (not views, Concat, Split, Slice,
 * host ops, the graph's inputs and outputs). NULL when there are none. */
const char *tile_a4_packable(const tgt_target *t, const ir_graph *g);

/* The memory-plan stage: the graph planned along the schedule (align 16)
 * with the tiler's cascades kept out of DRAM (tile_cascades,
 * mp_options.group) and the int4 activations of tile_a4_packable packed,
 * then checked (mp_check). */
npu_status tile_memplan(const tgt_target *t, ir_graph *g, const part_schedule *sched, npu_alloc alloc, mp_plan *plan,
                        npu_err *err);

typedef struct tile_segment {
    int step;            /* index into the schedule's steps */
    uint32_t first_word; /* into tile_program.words; the range ends with `end` */
    uint32_t n_words;
} tile_segment;

typedef struct tile_layer {
    const ir_node *node;
    uint32_t first_word, n_words;
    int64_t cycles;       /* static estimate: the token schedule of the layer's instructions on the
                           * unit queues and the shared DRAM bus (docs/tiler.md) */
    int64_t macs;
    int64_t dram_bytes;   /* DMA traffic of the layer */
    int64_t bound_cycles; /* max(macs / peak MACs per cycle, dram_bytes / bandwidth) */
    int tiles;            /* work items (a tile: its loads, computes and store) */
    int64_t sram_bytes;   /* SRAM the layer's buffers occupy */
    bool fused;           /* run inside the previous layer's tiles (an eltwise after a conv, a 1x1 conv
                           * after a depthwise one): no words or cycles of its own, macs counted here */
} tile_layer;

typedef struct tile_program {
    uint32_t *words;
    size_t n_words;
    int n_segments;
    tile_segment *segments; /* one per NPU step, in step order */
    int n_layers;
    tile_layer *layers;     /* one per NPU node, in order */
    int64_t sram_peak; /* one past the highest SRAM byte the program touches */
    int64_t sram_need; /* the most SRAM a layer's buffers need (placed from 0), the SRAM level included */
} tile_program;

/* Builds the program for every NPU step of sched. NPU-side constants
 * (weights in the layout the MAC array reads, per-channel requantization
 * tables, LUTs) are appended to consts, whose offsets are those of the
 * CONST region. plan gives every activation's region and offset. */
npu_status tile_build(const tgt_target *t, const ir_graph *g, const part_schedule *sched, const mp_plan *plan,
                      emit_blob *consts, npu_alloc alloc, tile_program *out, npu_err *err);
void tile_program_free(tile_program *p, npu_alloc alloc);

#endif
