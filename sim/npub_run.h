/* Running a compiled model on the simulated SoC: the firmware (libnpurt)
 * on the emulated host, the NPU model behind the MMIO registers, the .npub
 * in flash and the arena, inputs and outputs in DRAM. npusim's model mode
 * and the end-to-end tests both go through here. A context runs any number
 * of inferences; per-layer NPU cycles accumulate over them. */
#ifndef SIM_NPUB_RUN_H
#define SIM_NPUB_RUN_H

#include <stdbool.h>
#include <stdio.h>

#include "common/file.h"
#include "common/stats.h"
#include "rt/npub.h"
#include "sim/npu.h"
#include "sim/sim.h"

typedef struct simrun_options {
    const char *firmware;  /* the firmware ELF (fw/npurt.elf) */
    const char *target;    /* NULL: the target named in the binary */
    bool any_target;       /* run even when the target's hash differs from the binary's */
    const char *const *sets; /* --set PATH=VALUE overrides of the target (imply any_target) */
    int nsets;
    const char *verify_key; /* --verify-key FILE: refuse a binary whose full tag does not hold (NULL: no check) */
    uint64_t max_insns;    /* 0: the default limit */
    FILE *console;         /* firmware console (NULL: discarded) */
    FILE *trace;           /* Chrome trace JSON (NULL: none): of inference trace_inference, or all */
    bool trace_all;        /* --trace-all */
    uint64_t trace_inference; /* --trace-inference N (0: the first) */
    npu_alloc alloc;       /* .fn NULL: the default */
    npu_read_opts files;   /* reading the .npub: regular files only unless allowed, the read cap */
} simrun_options;

typedef struct simrun simrun;

/* Validates the binary (npub_open), loads its target and the firmware,
 * places everything. Errors name the file. */
npu_status simrun_open(const char *npub_path, const simrun_options *o, simrun **out, npu_err *err);
void simrun_free(simrun *r);
/* Completes the trace document (metadata, closing brackets); call before closing o->trace. */
void simrun_trace_end(simrun *r);

/* The validated binary (tensor table, IO) of the run. */
const npub_view *simrun_view(const simrun *r);
/* The run's NPU model (npu_model_set_threads). */
npu_model *simrun_npu(simrun *r);

/* One inference: inputs[i] holds the data of graph input i (dense, its
 * dtype), outputs[j] receives output j. A firmware error or an NPU fault
 * is an error with the firmware's or the model's message. */
npu_status simrun_infer(simrun *r, const void *const *inputs, void *const *outputs, npu_err *err);

/* Totals over every inference so far, in the --stats-json shape (per-layer
 * cycles, MACs and DRAM bytes from the NPU model's instruction events). The
 * strings point into the run; valid until simrun_free. */
void simrun_stats(simrun *r, npu_stats *s);
uint64_t simrun_inferences(const simrun *r);

/* Adds src's totals (another context of the same binary) into dst. */
void simrun_merge(simrun *dst, const simrun *src);

/* Inference n's data: ins[i] for graph input i, outs[j] for output j. */
typedef void (*simrun_io_fn)(void *ud, int64_t n, const void **ins, void **outs);

/* Runs inferences [0, runs): r runs the first slice, up to threads - 1 more
 * contexts opened like r (path and o, without the trace) run the next
 * contiguous slices in parallel, and their totals are merged into r. Each
 * inference is independent, so outputs and totals are those of one context
 * running all of them. With fewer inferences than threads, each context's
 * NPU model splits its conv instructions over threads / contexts threads
 * (npu_model_set_threads). The error is the first failing inference's. */
npu_status simrun_batch(simrun *r, const char *path, const simrun_options *o, int threads, int64_t runs,
                        simrun_io_fn io, void *ud, npu_err *err);

/* NPUCC_THREADS when set to a count, else the online processors. */
int simrun_default_threads(void);

#endif
