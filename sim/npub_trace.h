/* The model run's Chrome/Perfetto trace (npusim --trace): a host track of
 * the runtime's steps, one track per NPU unit queue, bus tracks per memory
 * and DMA channel with the bytes of each transfer, counter tracks (DRAM and
 * flash bandwidth, MAC utilization), process and thread names, time 0 at
 * the first traced inference. An inference's NPU events are buffered and
 * written once its host step cycles are known (docs/simulator.md, "Trace"). */
#ifndef SIM_NPUB_TRACE_H
#define SIM_NPUB_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "common/alloc.h"
#include "common/status.h"
#include "sim/npu.h"

typedef struct simtrace simtrace;

typedef struct simtrace_step {
    const char *name, *op;
    int npu;              /* an NPU launch (1) or a host kernel (0) */
    uint64_t host_cycles; /* this inference's, from the runtime's step table */
} simtrace_step;

simtrace *simtrace_new(npu_alloc a, FILE *out, const tgt_target *t, double host_hz, double npu_hz);
/* The target and clocks, known once the run is configured (before any event). */
void simtrace_bind(simtrace *tr, const tgt_target *t, double host_hz, double npu_hz);
/* Writes the metadata and closes the document; then frees. */
void simtrace_finish(simtrace *tr);
void simtrace_free(simtrace *tr);

/* Buffers one NPU instruction of the inference being traced; false when out of memory. */
int simtrace_event(simtrace *tr, uint64_t job_host_start, const npu_insn_event *e, const char *layer);
/* Writes inference n (its buffered NPU events, its steps), then empties the buffer. */
void simtrace_inference(simtrace *tr, uint64_t n, const simtrace_step *steps, uint32_t n_steps);

#endif
