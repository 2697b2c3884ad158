/* npucc's static estimate beyond the tiler's cycles: what each layer's
 * command words move (decoded, so exactly what the simulator counts), the
 * host steps' cycles from the partitioner's host model, and the energy. */
#ifndef NPU_DRIVER_ESTIMATE_H
#define NPU_DRIVER_ESTIMATE_H

#include "common/stats.h"
#include "partition/partition.h"
#include "target/target.h"

typedef struct drv_moved {
    uint64_t dram_read, dram_write, flash, sram_read, sram_write, vector;
    bool int4; /* a MAC instruction with int4 weights */
} drv_moved;

/* Sums the accesses of the instructions in words [first, first + n) into *m
 * (an undecodable word stops the count: the emitter encoded them). */
void drv_count_words(const tgt_target *t, const uint32_t *words, uint32_t first, uint32_t n, drv_moved *m);

/* The runtime's own host cycles (NPU cycles) for an inference of npu_steps NPU steps. */
uint64_t drv_runtime_host_cycles(const part_host_model *m, int npu_steps);

/* The host model of the target, as the partitioner costs with it. */
part_host_model drv_host_model(const tgt_target *t);

#endif
