/* The two MMIO pages: the sim-control page (console, exit, host clock,
 * request address) and the NPU register block, whose doorbell hands a job to
 * the NPU model (sim_npu_ops) and whose status read makes the host wait for
 * it. Register offsets: rt/fw_abi.h. Strict on purpose: an access to a
 * register that does not exist, a write to a read-only register or a sub-word
 * access stops the run, since it is a firmware bug. */
#include <string.h>

#include "rt/npub.h"
#include "sim/sim_internal.h"

/* The region registers are numbered like the .npub's regions. */
_Static_assert((int)FW_NPU_REGION_CONST == (int)NPUB_REGION_CONST &&
                   (int)FW_NPU_REGION_ARENA == (int)NPUB_REGION_ARENA &&
                   (int)FW_NPU_REGION_INPUT == (int)NPUB_REGION_INPUT &&
                   (int)FW_NPU_REGION_OUTPUT == (int)NPUB_REGION_OUTPUT,
               "fw_abi.h and npub.h number the regions alike");

/* ---- console ---------------------------------------------------------------- */
void sim_console_flush(sim_ctx *s)
{
    if (!s->con_len)
        return;
    if (s->cfg.console_fn) {
        s->cfg.console_fn(s->cfg.console_ud, s->con, s->con_len);
    } else if (s->cfg.console) {
        fwrite(s->con, 1, s->con_len, s->cfg.console);
        fflush(s->cfg.console);
    }
    s->con_len = 0;
}

static void console_putc(sim_ctx *s, char c)
{
    s->con[s->con_len++] = c;
    if (c == '\n' || s->con_len == sizeof s->con)
        sim_console_flush(s);
}

/* ---- shared checks ----------------------------------------------------------- */
static int bad_access(sim_ctx *s, const char *page, uint32_t base, uint64_t off, unsigned size, int store)
{
    if (size == 4 && off % 4 == 0)
        return 0;
    uint32_t a = base + (uint32_t)off;
    uint32_t pc = sim_access_pc(s, a, store);
    sim_stop_run(s, SIM_STOP_FAULT, pc, a, "%u-byte %s at 0x%08x (pc 0x%08x): %s registers are 32-bit words", size,
                 store ? "store" : "load", a, pc, page);
    return 1;
}

static void reg_fault(sim_ctx *s, const char *page, uint32_t base, uint64_t off, int store, const char *what)
{
    uint32_t a = base + (uint32_t)off;
    uint32_t pc = sim_access_pc(s, a, store);
    sim_stop_run(s, SIM_STOP_FAULT, pc, a, "%s at 0x%08x (pc 0x%08x): %s offset 0x%03x %s",
                 store ? "store" : "load", a, pc, page, (unsigned)off, what);
}

/* ---- sim-control page --------------------------------------------------------- */
uint64_t sim_ctl_read(uc_engine *uc, uint64_t off, unsigned size, void *ud)
{
    (void)uc;
    sim_ctx *s = ud;
    uint32_t base = s->cfg.map.ctl.base;
    if (s->stop != SIM_STOP_NONE || bad_access(s, "sim-control", base, off, size, 0))
        return 0;
    switch (off) {
    case FW_CTL_MAGIC: return FW_CTL_MAGIC_VALUE;
    case FW_CTL_VERSION: return FW_CTL_VERSION_VALUE;
    case FW_CTL_CYCLES_LO: {
        uint64_t t = sim_now(s);
        s->ctl_hi_latch[0] = (uint32_t)(t >> 32);
        return (uint32_t)t;
    }
    case FW_CTL_CYCLES_HI: return s->ctl_hi_latch[0];
    case FW_CTL_INSNS_LO:
        s->ctl_hi_latch[1] = (uint32_t)(s->insns >> 32);
        return (uint32_t)s->insns;
    case FW_CTL_INSNS_HI: return s->ctl_hi_latch[1];
    case FW_CTL_REQ_ADDR: return s->req_addr;
    case FW_CTL_SERVE: return s->serve ? 1u : 0u;
    case FW_CTL_PUTC:
    case FW_CTL_WAIT:
    case FW_CTL_EXIT: reg_fault(s, "sim-control", base, off, 0, "is write-only"); return 0;
    default: reg_fault(s, "sim-control", base, off, 0, "is not a register"); return 0;
    }
}

void sim_ctl_write(uc_engine *uc, uint64_t off, unsigned size, uint64_t value, void *ud)
{
    (void)uc;
    sim_ctx *s = ud;
    uint32_t base = s->cfg.map.ctl.base;
    if (s->stop != SIM_STOP_NONE || bad_access(s, "sim-control", base, off, size, 1))
        return;
    switch (off) {
    case FW_CTL_PUTC: console_putc(s, (char)(value & 0xffu)); return;
    case FW_CTL_EXIT:
        s->exit_code = (int32_t)(uint32_t)value;
        sim_stop_run(s, SIM_STOP_EXIT, s->cur_block, 0, "firmware exited with code %d", (int)s->exit_code);
        return;
    case FW_CTL_WAIT:
        if (!s->serve) {
            reg_fault(s, "sim-control", base, off, 1, "(wait) is only for a host that serves requests (FW_CTL_SERVE 0)");
            return;
        }
        s->resume_pc = sim_wait_resume_pc(s, sim_access_pc(s, base + (uint32_t)off, 1));
        sim_stop_run(s, SIM_STOP_WAIT, s->cur_block, 0, "firmware waits for the next request");
        return;
    case FW_CTL_MAGIC:
    case FW_CTL_VERSION:
    case FW_CTL_CYCLES_LO:
    case FW_CTL_CYCLES_HI:
    case FW_CTL_INSNS_LO:
    case FW_CTL_INSNS_HI:
    case FW_CTL_SERVE:
    case FW_CTL_REQ_ADDR: reg_fault(s, "sim-control", base, off, 1, "is read-only"); return;
    default: reg_fault(s, "sim-control", base, off, 1, "is not a register"); return;
    }
}

/* ---- NPU register block ------------------------------------------------------- */
void sim_npu_reset(sim_ctx *s)
{
    s->npu_cmd_base = s->npu_cmd_len = 0;
    memset(s->npu_region, 0, sizeof s->npu_region);
    s->npu_busy = s->npu_done = 0;
    s->npu_done_at = s->npu_last = s->npu_total = 0;
    s->npu_jobs = 0;
    s->npu_pending = 0;
    s->hdram_len = 0;
}

void sim_npu_sync(sim_ctx *s)
{
    sim_npu_run_pending(s);
    if (!s->npu_busy)
        return;
    uint64_t now = sim_now(s);
    if (s->npu_done_at > now)
        s->stall += s->npu_done_at - now;
    s->npu_busy = 0;
    s->npu_done = 1;
}

/* Runs one job; pc is its doorbell's (for the fault message). */
static void npu_run_job(sim_ctx *s, const sim_npu_job *job, uint32_t pc)
{
    uint64_t cycles = 0;
    npu_err e;
    npu_err_clear(&e);
    npu_status st = s->npu_ops.run(s->npu_ctx, s, job, &cycles, &e);
    if (st != NPU_OK) {
        sim_stop_run(s, SIM_STOP_NPU_FAULT, pc, job->cmd_base, "NPU job %u (doorbell at pc 0x%08x): %s", job->seq, pc,
                     e.msg[0] ? e.msg : "fault without a message");
        return;
    }
    s->npu_busy = 1;
    s->npu_done_at = job->start_cycle + sim_npu_to_host_cycles(s, cycles);
    s->npu_last = cycles;
    s->npu_total += cycles;
}

void sim_npu_run_pending(sim_ctx *s)
{
    if (!s->npu_pending)
        return;
    s->npu_pending = 0;
    s->npu_job.host_dram = s->hdram;
    s->npu_job.n_host_dram = s->hdram_len;
    npu_run_job(s, &s->npu_job, s->npu_job_pc);
    s->hdram_len = 0;
}

static void npu_doorbell(sim_ctx *s, uint32_t off, uint32_t value)
{
    uint32_t a = s->cfg.map.npu.base + off;
    if (!s->npu_ops.run) {
        uint32_t pc = sim_access_pc(s, a, 1);
        sim_stop_run(s, SIM_STOP_FAULT, pc, a, "NPU doorbell at pc 0x%08x, but no NPU model is attached", pc);
        return;
    }
    sim_npu_sync(s); /* one job at a time: a second doorbell waits for the first */
    sim_npu_job job = {.cmd_base = s->npu_cmd_base, .cmd_len = s->npu_cmd_len, .doorbell = value,
                       .seq = s->npu_jobs, .start_cycle = sim_now(s)};
    memcpy(job.region, s->npu_region, sizeof job.region);
    s->npu_jobs++;
    if (!s->cfg.host_dram_timing) {
        npu_run_job(s, &job, sim_access_pc(s, a, 1));
        return;
    }
    /* The host's accesses until it waits share the job's DRAM bus, so the
     * job runs then: a race-free firmware reads no output before it waits. */
    s->npu_job = job;
    s->npu_job_pc = sim_access_pc(s, a, 1);
    s->npu_pending = 1;
    s->hdram_len = 0;
}

static uint32_t *npu_rw_reg(sim_ctx *s, uint64_t off)
{
    if (off == FW_NPU_CMD_BASE)
        return &s->npu_cmd_base;
    if (off == FW_NPU_CMD_LEN)
        return &s->npu_cmd_len;
    if (off >= FW_NPU_REGION_BASE(0) && off < FW_NPU_REGION_BASE(FW_NPU_NREGIONS)) {
        sim_region *r = &s->npu_region[(off - FW_NPU_REGION_BASE(0)) / 8];
        return (off - FW_NPU_REGION_BASE(0)) % 8 ? &r->size : &r->base;
    }
    return NULL;
}

uint64_t sim_npu_read(uc_engine *uc, uint64_t off, unsigned size, void *ud)
{
    (void)uc;
    sim_ctx *s = ud;
    uint32_t base = s->cfg.map.npu.base;
    if (s->stop != SIM_STOP_NONE || bad_access(s, "NPU", base, off, size, 0))
        return 0;
    uint32_t *r = npu_rw_reg(s, off);
    if (r)
        return *r;
    switch (off) {
    case FW_NPU_ID: return FW_NPU_ID_VALUE;
    case FW_NPU_VERSION: return FW_NPU_VERSION_VALUE;
    case FW_NPU_JOBS: return s->npu_jobs;
    /* these wait for the running job: that is the point of reading them */
    case FW_NPU_STATUS: sim_npu_sync(s); return s->npu_done ? FW_NPU_ST_DONE : 0;
    case FW_NPU_CYCLES_LO:
        sim_npu_sync(s);
        s->npu_hi_latch[0] = (uint32_t)(s->npu_last >> 32);
        return (uint32_t)s->npu_last;
    case FW_NPU_CYCLES_HI: sim_npu_sync(s); return s->npu_hi_latch[0];
    case FW_NPU_TOTAL_LO:
        sim_npu_sync(s);
        s->npu_hi_latch[1] = (uint32_t)(s->npu_total >> 32);
        return (uint32_t)s->npu_total;
    case FW_NPU_TOTAL_HI: sim_npu_sync(s); return s->npu_hi_latch[1];
    case FW_NPU_DOORBELL: reg_fault(s, "NPU", base, off, 0, "is write-only"); return 0;
    default: reg_fault(s, "NPU", base, off, 0, "is not a register"); return 0;
    }
}

void sim_npu_write(uc_engine *uc, uint64_t off, unsigned size, uint64_t value, void *ud)
{
    (void)uc;
    sim_ctx *s = ud;
    uint32_t base = s->cfg.map.npu.base;
    if (s->stop != SIM_STOP_NONE || bad_access(s, "NPU", base, off, size, 1))
        return;
    uint32_t *r = npu_rw_reg(s, off);
    if (r) {
        *r = (uint32_t)value;
        return;
    }
    switch (off) {
    case FW_NPU_DOORBELL: npu_doorbell(s, (uint32_t)off, (uint32_t)value); return;
    case FW_NPU_ID:
    case FW_NPU_VERSION:
    case FW_NPU_STATUS:
    case FW_NPU_CYCLES_LO:
    case FW_NPU_CYCLES_HI:
    case FW_NPU_TOTAL_LO:
    case FW_NPU_TOTAL_HI:
    case FW_NPU_JOBS: reg_fault(s, "NPU", base, off, 1, "is read-only"); return;
    default: reg_fault(s, "NPU", base, off, 1, "is not a register"); return;
    }
}
