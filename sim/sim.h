/* npusim host side: the simulated SoC's memory map, a Unicorn RV32 host CPU
 * running the firmware ELF, the sim-control page (console, exit, host clock)
 * and the NPU register block whose doorbell calls an NPU model through
 * sim_npu_ops. docs/simulator.md describes the map, registers and timing;
 * the register offsets are in rt/fw_abi.h (shared with the firmware).
 *
 * Typical use:
 *   sim_config cfg; sim_config_default(&cfg);        // or fill from the target YAML
 *   sim_ctx *s; sim_new(&cfg, &s, &err);
 *   sim_load_elf_file(s, "build/fw/npurt.elf", &err);
 *   sim_place_flash(s, blob, n, 64, &blob_addr, &err);
 *   sim_place_request(s, &req, &req_addr, &err);
 *   sim_attach_npu(s, &my_npu_ops, my_npu);
 *   sim_result r; sim_run(s, &r, &err);
 *   sim_free(s);
 * Several contexts may exist in one process; nothing is global. */
#ifndef SIM_H
#define SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/alloc.h"
#include "common/status.h"
#include "rt/fw_abi.h"

/* ---- memory map --------------------------------------------------------- */
typedef struct sim_region {
    uint32_t base, size; /* both multiples of SIM_PAGE */
} sim_region;

typedef struct sim_memmap {
    sim_region rom;   /* firmware code and rodata (read/execute) */
    sim_region flash; /* model blob (read-only to the host CPU) */
    sim_region dram;  /* firmware data/stack, arena, inputs, outputs (read/write) */
    sim_region npu;   /* NPU register block (MMIO) */
    sim_region ctl;   /* sim-control page (MMIO) */
} sim_memmap;

#define SIM_PAGE 4096u

/* The map of targets/edge-v1.yaml (what rt/fw.ld links for): ROM 0x0 256 KiB,
 * flash 0x20000000 16 MiB, DRAM 0x80000000 64 MiB, NPU 0x40000000 4 KiB,
 * sim-ctl 0x40001000 4 KiB. */
void sim_memmap_default(sim_memmap *m);
/* Alignment, non-empty, within 4 GiB, no two regions overlap. */
npu_status sim_memmap_check(const sim_memmap *m, npu_err *err);

/* ---- configuration ----------------------------------------------------- */
typedef void (*sim_console_fn)(void *ud, const char *text, size_t len);

typedef struct sim_config {
    sim_memmap map;
    double host_hz;     /* host CPU clock */
    double host_cpi;    /* host cycles per instruction (> 0) */
    double npu_hz;      /* NPU clock: the model's cycle counts are in it */
    uint64_t max_insns; /* run-time limit in host instructions; 0: none */
    /* Console sink: the callback if set, else the FILE if set, else discarded.
     * Output is buffered per line and flushed at the end of a run. */
    sim_console_fn console_fn;
    void *console_ud;
    FILE *console;
    npu_alloc alloc;
    /* Time the host's DRAM loads and stores on the NPU's DRAM bus: while a job
     * runs, every host access to DRAM is recorded and the job (run when the
     * host waits for it, not at the doorbell) sees them as bus traffic. Off
     * by default: the memory hook costs host speed (docs/npu-model.md). */
    int host_dram_timing;
} sim_config;

/* edge-v1's numbers: its map, 400 MHz host at CPI 1.0, 500 MHz NPU; a 2e9
 * instruction limit, console discarded (a library prints nothing unless told
 * where), the default allocator. */
void sim_config_default(sim_config *c);

/* Takes map, clocks and CPI from a loaded target (src/target), keeping the
 * rest of *c. Refuses a map outside 32 bits or a host that is not rv32. */
struct tgt_target;
npu_status sim_config_from_target(const struct tgt_target *t, sim_config *c, npu_err *err);

typedef struct sim_ctx sim_ctx;

npu_status sim_new(const sim_config *cfg, sim_ctx **out, npu_err *err);
void sim_free(sim_ctx *s);
const sim_config *sim_config_of(const sim_ctx *s);

/* ---- firmware ELF --------------------------------------------------------- */
typedef struct sim_fw_info {
    uint32_t entry;   /* e_entry */
    uint32_t ram_end; /* end of the firmware's DRAM (highest PT_LOAD vaddr+memsz in DRAM) */
    uint32_t rom_end; /* end of the image in ROM */
    unsigned nload;   /* PT_LOAD segments */
} sim_fw_info;

/* Validates an ELF32 little-endian RISC-V executable against the memory map
 * without loading it: every offset and size against the file, every segment
 * against the map. Errors name the file and the byte offset. */
npu_status sim_elf_check(const uint8_t *data, size_t len, const char *name, const sim_memmap *map,
                         sim_fw_info *info, npu_err *err);
/* Checks, then copies the PT_LOAD segments to their physical (load) addresses
 * and zero-fills memsz beyond filesz. Must precede any sim_place_* call. */
npu_status sim_load_elf(sim_ctx *s, const uint8_t *data, size_t len, const char *name, npu_err *err);
npu_status sim_load_elf_file(sim_ctx *s, const char *path, npu_err *err);
const sim_fw_info *sim_fw(const sim_ctx *s); /* NULL before a load */

/* ---- guest memory --------------------------------------------------------- */
/* Host pointer to [addr, addr+len) if it lies in one RAM-backed region (ROM,
 * flash, DRAM; writable: DRAM only), else NULL. Valid for the context's
 * lifetime: this is what the NPU model uses for speed. */
uint8_t *sim_mem_ptr(sim_ctx *s, uint32_t addr, size_t len, int writable);
/* Copies with the same checks; errors name the address and the region. */
npu_status sim_mem_read(sim_ctx *s, uint32_t addr, void *dst, size_t len, npu_err *err);
npu_status sim_mem_write(sim_ctx *s, uint32_t addr, const void *src, size_t len, npu_err *err);

/* Bump placement of blobs: flash from its base, DRAM above the firmware's RAM.
 * data NULL reserves zeroed space. align: power of two (0 means 16). */
npu_status sim_place_flash(sim_ctx *s, const void *data, size_t len, uint32_t align, uint32_t *addr,
                           npu_err *err);
npu_status sim_place_dram(sim_ctx *s, const void *data, size_t len, uint32_t align, uint32_t *addr,
                          npu_err *err);
/* Places a request block in DRAM and points FW_CTL_REQ_ADDR at it. */
npu_status sim_place_request(sim_ctx *s, const fw_request *req, uint32_t *addr, npu_err *err);
void sim_set_request_addr(sim_ctx *s, uint32_t addr);

/* ---- NPU model seam ------------------------------------------------------ */
/* A host access on the DRAM bus while a job runs: its time in NPU cycles
 * from the job's start and its bytes (sim_config.host_dram_timing). */
typedef struct sim_bus_use {
    uint64_t at;
    uint32_t bytes;
} sim_bus_use;

/* The register values at the doorbell write, handed to the model. */
typedef struct sim_npu_job {
    uint32_t cmd_base, cmd_len;
    sim_region region[FW_NPU_NREGIONS]; /* FW_NPU_REGION_* */
    uint32_t doorbell;                  /* the value written to FW_NPU_DOORBELL */
    uint32_t seq;                       /* 0 for the first job of a run */
    uint64_t start_cycle;               /* host cycles (sim_now) when the job starts */
    const sim_bus_use *host_dram;       /* the host's DRAM traffic during the job, by time */
    size_t n_host_dram;
} sim_npu_job;

typedef struct sim_npu_ops {
    /* Runs one job to completion, functionally, reading and writing guest
     * memory through sim_mem_*; returns the job's duration in NPU cycles in
     * *npu_cycles. A non-OK status is an NPU fault: it stops the run and its
     * message (command index, disassembly, address) is the run's message. */
    npu_status (*run)(void *npu_ctx, sim_ctx *sim, const sim_npu_job *job, uint64_t *npu_cycles,
                      npu_err *err);
} sim_npu_ops;

/* ops NULL detaches; a doorbell with no model attached is a fault. */
void sim_attach_npu(sim_ctx *s, const sim_npu_ops *ops, void *npu_ctx);

/* ---- running ----------------------------------------------------------- */
typedef enum sim_stop {
    SIM_STOP_NONE = 0,
    SIM_STOP_EXIT,      /* the firmware wrote FW_CTL_EXIT */
    SIM_STOP_FAULT,     /* host CPU fault: unmapped/protected access, illegal instruction, ... */
    SIM_STOP_LIMIT,     /* max_insns reached */
    SIM_STOP_NPU_FAULT, /* the NPU model reported a fault */
    SIM_STOP_WAIT,      /* the firmware answered and waits for the next request (FW_CTL_WAIT): sim_resume */
} sim_stop;

typedef struct sim_stats {
    uint64_t insns;        /* host instructions executed */
    uint64_t host_cycles;  /* insns x CPI */
    uint64_t stall_cycles; /* host cycles spent waiting for the NPU (status read, wfi) */
    uint64_t total_cycles; /* host clock at the end: host + stall, or NPU completion if later */
    uint64_t npu_cycles;   /* NPU clock cycles of all jobs */
    uint64_t npu_jobs;
    uint64_t blocks;       /* translation blocks executed */
    uint64_t block_kinds;  /* distinct blocks decoded (size of the count cache) */
    double time_s;         /* total_cycles at host_hz */
} sim_stats;

typedef struct sim_result {
    sim_stop stop;
    int32_t exit_code; /* SIM_STOP_EXIT */
    uint32_t pc;       /* faulting instruction (SIM_STOP_FAULT), last block otherwise */
    uint32_t addr;     /* faulting data address, if any */
    sim_stats stats;
    char msg[512];     /* what stopped the run, for every stop reason */
} sim_result;

/* Runs the firmware from its entry with fresh registers and counters (memory
 * is kept, so placed blobs stay). NPU_OK when the firmware exited through the
 * control register, whatever its code; NPU_EUSER for a fault or the limit
 * (err and res->msg say which, with pc and address); NPU_EINTERNAL if the
 * emulator fails. res is filled in every case. */
npu_status sim_run(sim_ctx *s, sim_result *res, npu_err *err);

/* FW_CTL_SERVE: 1 asks the firmware to wait for the next request after
 * answering one (SIM_STOP_WAIT) instead of exiting; a firmware that does not
 * know the register exits as before. */
void sim_set_serve(sim_ctx *s, int serve);
/* True after a run stopped with SIM_STOP_WAIT. */
int sim_waiting(const sim_ctx *s);
/* Continues a waiting firmware where it stopped (place the next request
 * first): no reboot, memory and the host clock go on; res counts from the
 * resume (instructions, cycles, NPU jobs of this part only). Results as
 * sim_run's; NPU_EUSAGE when nothing waits. */
npu_status sim_resume(sim_ctx *s, sim_result *res, npu_err *err);
const char *sim_stop_name(sim_stop stop);

/* Host clock now, in host cycles (for the NPU model and tests). */
uint64_t sim_now(const sim_ctx *s);
/* NPU cycles as host cycles, rounded up. */
uint64_t sim_npu_to_host_cycles(const sim_ctx *s, uint64_t npu_cycles);

#endif
