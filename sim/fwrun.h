/* A firmware of its own on the simulated SoC (npusim --firmware ELF without
 * a model): the target's memory map and clocks, the NPU model attached
 * behind the register block, the console on a FILE, the run ended by the
 * firmware's write to the EXIT register (docs/simulator.md). The built-in
 * firmware's self-check runs the same way (a request block asks for it; a
 * customer firmware may ignore it). */
#ifndef SIM_FWRUN_H
#define SIM_FWRUN_H

#include <stdio.h>

#include "common/stats.h"
#include "sim/sim.h"

typedef struct simfw_options {
    const char *firmware;
    const char *target;       /* NAME or FILE.yaml; NULL: edge-v1 */
    const char *const *sets;  /* --set PATH=VALUE overrides of the target */
    int nsets;
    uint64_t max_insns;       /* 0: the default limit */
    FILE *console;
    FILE *trace;              /* Chrome trace JSON of the NPU jobs (NULL: none) */
    uint32_t selfcheck_iters; /* the request block's FW_CMD_SELFCHECK rounds (0: the default) */
} simfw_options;

typedef struct simfw_result {
    sim_config cfg;
    sim_result run;
    npu_stats stats; /* cycles of the whole run (boot included), NPU jobs, MACs, DRAM bytes */
    char target[64]; /* the target's name (stats.target) */
    char target_config[16384]; /* stats.target_config (empty when it would not fit) */
} simfw_result;

/* Boots the firmware and runs it to its EXIT write. NPU_OK when it exited
 * (whatever the code: res->run.exit_code); a fault, the instruction limit
 * or an NPU fault is NPU_EUSER with the message naming the pc. stats.model
 * is o->firmware. */
npu_status simfw_run(const simfw_options *o, simfw_result *res, npu_err *err);

#endif
