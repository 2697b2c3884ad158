/* The NPU model of npusim: executes command streams of a YAML-described ISA
 * (docs/isa.md) functionally, bit-exact with the reference kernels
 * (kernels/nk_quant.h), and times them with an event model of the fetcher,
 * the unit queues, the dependency tokens and the shared DRAM bus.
 * docs/npu-model.md describes what is modelled, the timing rules and the
 * faults.
 *
 * Typical use:
 *   npu_model *m; npu_model_new(target, npu_alloc_default(), &m, &err);
 *   npu_mem mem = {...};                       // host buffers of the five regions
 *   npu_run_stats st; npu_model_exec(m, &mem, words, n, &st, &err);
 * or, inside the simulator: sim_attach_npu(sim, npu_model_sim_ops(), m).
 * A model holds its SRAM (kept across jobs, zero at creation) and scratch;
 * nothing is global. */
#ifndef SIM_NPU_H
#define SIM_NPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"
#include "target/target.h"

typedef struct npu_model npu_model;

typedef struct npu_mem_region {
    uint8_t *ptr; /* NULL (and size 0): the region is not mapped; any access faults */
    uint64_t size;
    bool writable;
} npu_mem_region;

/* Indexed by TGT_REGION_*: constants, arena, inputs, outputs, flash. */
typedef struct npu_mem {
    npu_mem_region region[TGT_REGION_COUNT];
    /* Other masters' traffic on the DRAM bus during the job (the host's),
     * sorted by time: each occupies the bus for its bytes at the bus's rate
     * from when it arrives, delaying the DMA transfers that want it later. */
    const sim_bus_use *dram_foreign;
    size_t n_dram_foreign;
} npu_mem;

/* One per executed instruction (sync and end included), delivered when it
 * completes: for per-layer statistics and the trace. */
typedef struct npu_insn_event {
    uint32_t word;  /* word offset of the instruction in the stream */
    uint32_t index; /* instruction index in the stream */
    int insn;       /* index into t->isa->insns */
    tgt_unit unit;
    int queue;          /* DMA channel for dma, else 0 */
    uint64_t start, end; /* NPU cycles from the job start */
    uint64_t macs, dram_read, dram_write;
    uint64_t flash_read; /* a dma_load from the flash region counts here, not in dram_read */
    uint64_t int4_macs;  /* the part of macs with int4 weights (the array's int4 rate) */
    uint64_t sram_read, sram_write; /* SRAM bytes its operands read and write */
    uint64_t bank_stall;            /* cycles of end - start lost to SRAM bank conflicts */
} npu_insn_event;

typedef void (*npu_event_fn)(void *ud, const npu_insn_event *e);

typedef struct npu_run_stats {
    uint64_t cycles;               /* job duration: until `end` retires */
    uint64_t busy[TGT_UNIT_COUNT]; /* busy cycles per unit kind (sum over DMA channels for dma) */
    uint64_t macs, dram_read, dram_write, flash_read; /* MACs; bytes moved by DMA per side */
    uint64_t sram_peak;            /* one past the highest SRAM byte touched */
    uint64_t insns;
    uint64_t sram_read, sram_write; /* SRAM bytes of every operand */
    uint64_t bank_stall;            /* cycles instructions lost to SRAM bank conflicts */
    uint64_t foreign_dram;          /* bytes of other masters' DRAM traffic the bus served before a DMA */
} npu_run_stats;

/* The target must outlive the model. NPU_EUSER for a target the model cannot
 * run (more than 64 tokens), NPU_EINTERNAL when allocation fails. */
npu_status npu_model_new(const tgt_target *t, npu_alloc alloc, npu_model **out, npu_err *err);
void npu_model_free(npu_model *m);
void npu_model_set_events(npu_model *m, npu_event_fn fn, void *ud);
/* Threads for one conv instruction's pixel blocks (npusim -j N with fewer
 * inferences than threads); 1, the default, runs every instruction on the
 * caller's thread. Outputs, cycles and traces do not depend on it: only the
 * host time does. NPU_EINTERNAL when the pool cannot be allocated. */
npu_status npu_model_set_threads(npu_model *m, int threads, npu_err *err);

/* Runs one command stream (it must contain `end`; words after it are not
 * read) against mem. st (may be NULL) gets this job's statistics, also on a
 * fault (up to the fault). A fault is NPU_EUSER with a message naming the
 * instruction index, its word offset, its disassembly and the address. */
npu_status npu_model_exec(npu_model *m, const npu_mem *mem, const uint32_t *words, size_t n_words,
                          npu_run_stats *st, npu_err *err);

/* Cumulative statistics over every job since new: all fields summed,
 * sram_peak the maximum. */
const npu_run_stats *npu_model_totals(const npu_model *m);

/* The model's SRAM (sram.bytes of the target): tests preload and inspect it. */
uint8_t *npu_model_sram(npu_model *m);
size_t npu_model_sram_size(const npu_model *m);

/* The sim_npu_ops adapter: sim_attach_npu(sim, npu_model_sim_ops(), model).
 * Reads the command stream at job->cmd_base (cmd_len bytes, a multiple of 4)
 * and maps job->region[i] (FW_NPU_REGION_* == TGT_REGION_*; size 0 means
 * unmapped) through sim_mem_ptr: constants and flash read-only, the others
 * writable when they lie in DRAM. Then npu_model_exec. */
const sim_npu_ops *npu_model_sim_ops(void);

#endif
