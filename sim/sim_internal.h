/* Internals shared by the sim/ files; not for other modules. */
#ifndef SIM_INTERNAL_H
#define SIM_INTERNAL_H

#include <unicorn/unicorn.h>

#include "sim/sim.h"

/* A RAM-backed region: ROM, flash or DRAM. */
typedef struct sim_mem {
    const char *name;
    sim_region r;
    uint8_t *host; /* mmap'ed, size r.size */
    int writable;  /* by the guest and by sim_mem_write */
    uint32_t prot; /* UC_PROT_* for the guest */
} sim_mem;

enum { SIM_MEM_ROM, SIM_MEM_FLASH, SIM_MEM_DRAM, SIM_NMEM };

/* One entry of the per-block instruction-count cache (open addressing). */
typedef struct sim_bc_entry {
    uint32_t addr, size, count, used;
} sim_bc_entry;

enum { SIM_CONSOLE_BUF = 256 };

struct sim_ctx {
    sim_config cfg;
    uc_engine *uc;
    sim_mem mem[SIM_NMEM];
    int have_fw;
    sim_fw_info fw;
    uint32_t flash_next, dram_next, dram_floor; /* bump pointers; floor = firmware RAM end */
    int placed;
    int ran; /* translated blocks may exist */
    uint32_t req_addr;
    int serve;     /* FW_CTL_SERVE */
    int waiting;   /* stopped at FW_CTL_WAIT: sim_resume continues at resume_pc */
    uint32_t resume_pc;

    sim_bc_entry *bc;
    size_t bc_cap, bc_used;

    /* since boot (the host clock); a resumed run counts from base_* */
    uint64_t insns, stall, blocks;
    uint64_t base_insns, base_stall, base_blocks, base_npu_total, base_npu_jobs;
    uint32_t cur_block, cur_block_size; /* the block now executing (set by the block hook) */
    sim_stop stop;
    int32_t exit_code;
    uint32_t fault_pc, fault_addr;
    char msg[512];
    uint32_t ctl_hi_latch[2]; /* cycles, insns */

    char con[SIM_CONSOLE_BUF];
    size_t con_len;

    /* NPU register file and job state */
    sim_npu_ops npu_ops;
    void *npu_ctx;
    uint32_t npu_cmd_base, npu_cmd_len;
    sim_region npu_region[FW_NPU_NREGIONS];
    int npu_busy, npu_done;
    uint64_t npu_done_at;       /* host cycles */
    uint64_t npu_last, npu_total; /* NPU cycles */
    uint32_t npu_jobs;
    uint32_t npu_hi_latch[2];   /* last, total */
    /* host_dram_timing: the job rung but not yet run, its doorbell's pc, and
     * the host's DRAM accesses since the doorbell */
    int npu_pending;
    sim_npu_job npu_job;
    uint32_t npu_job_pc;
    sim_bus_use *hdram;
    size_t hdram_len, hdram_cap;
};

/* memmap.c */
sim_mem *sim_mem_find(sim_ctx *s, uint32_t addr, size_t len);
npu_status sim_mem_setup(sim_ctx *s, npu_err *err);
void sim_mem_teardown(sim_ctx *s);

/* mmio.c: the callbacks for uc_mmio_map, the console and the NPU clock */
uint64_t sim_ctl_read(uc_engine *uc, uint64_t off, unsigned size, void *ud);
void sim_ctl_write(uc_engine *uc, uint64_t off, unsigned size, uint64_t value, void *ud);
uint64_t sim_npu_read(uc_engine *uc, uint64_t off, unsigned size, void *ud);
void sim_npu_write(uc_engine *uc, uint64_t off, unsigned size, uint64_t value, void *ud);
void sim_console_flush(sim_ctx *s);
void sim_npu_reset(sim_ctx *s);
void sim_npu_sync(sim_ctx *s); /* host waits for the running job */
void sim_npu_run_pending(sim_ctx *s); /* host_dram_timing: runs the rung job now */
/* host.c: records a host DRAM access while a job is pending */
void sim_host_dram_access(sim_ctx *s, uint32_t bytes);

/* host.c: the pc after a FW_CTL_WAIT store at pc (and its wfi) */
uint32_t sim_wait_resume_pc(sim_ctx *s, uint32_t pc);
/* host.c: stop the run (the first reason wins); pc/addr for the message */
void sim_stop_run(sim_ctx *s, sim_stop why, uint32_t pc, uint32_t addr, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The pc of the load/store in the current block that accessed addr
 * (Unicorn reports only the block start), or the block start if unsure. */
uint32_t sim_access_pc(sim_ctx *s, uint32_t addr, int is_store);

/* rvdecode.c: just enough RV32IMAFC decoding for counting and fault reports */
/* Instructions in [p, p+len): 16-bit if the low two bits are not 11. */
uint32_t sim_rv_count(const uint8_t *p, uint32_t len);
/* If insn (len 2 or 4 bytes) accesses memory, its effective address from the
 * registers x[32] and whether it stores; returns 1, else 0. */
int sim_rv_mem_access(uint32_t insn, unsigned len, const uint32_t x[32], uint32_t *ea, int *is_store);

#endif
