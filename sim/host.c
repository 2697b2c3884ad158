/* The host CPU: a Unicorn RV32 engine per context, the block hook that counts
 * instructions (through a per-block count cache, never a per-instruction
 * hook), fault hooks, and the run loop. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim_internal.h"

/* uc_emu_start's "until": odd, so no instruction can ever be there. */
#define SIM_UNTIL 0xFFFFFFFFu
#define RV_WFI 0x10500073u
#define MSTATUS_FS 0x6000u
/* A QEMU block is at most 512 instructions and one page; bigger sizes come
 * from blocks that end in a faulting instruction (Unicorn 2.0.1 reports
 * garbage for those), and such a run stops anyway. */
#define SIM_MAX_BLOCK 8192u

void sim_config_default(sim_config *c)
{
    memset(c, 0, sizeof *c);
    sim_memmap_default(&c->map);
    c->host_hz = 400e6;
    c->host_cpi = 1.0;
    c->npu_hz = 500e6;
    c->max_insns = 2000000000ull;
    c->alloc = npu_alloc_default();
}

const char *sim_stop_name(sim_stop stop)
{
    switch (stop) {
    case SIM_STOP_NONE: return "none";
    case SIM_STOP_EXIT: return "exit";
    case SIM_STOP_FAULT: return "fault";
    case SIM_STOP_LIMIT: return "limit";
    case SIM_STOP_NPU_FAULT: return "npu-fault";
    case SIM_STOP_WAIT: return "wait";
    }
    return "?";
}

void sim_stop_run(sim_ctx *s, sim_stop why, uint32_t pc, uint32_t addr, const char *fmt, ...)
{
    if (s->stop != SIM_STOP_NONE)
        return; /* the rest of a block still runs after uc_emu_stop: keep the first reason */
    s->stop = why;
    s->fault_pc = pc;
    s->fault_addr = addr;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->msg, sizeof s->msg, fmt, ap);
    va_end(ap);
    uc_emu_stop(s->uc);
}

uint64_t sim_now(const sim_ctx *s)
{
    return (uint64_t)llround((double)s->insns * s->cfg.host_cpi) + s->stall;
}

uint64_t sim_npu_to_host_cycles(const sim_ctx *s, uint64_t npu_cycles)
{
    if (s->cfg.host_hz == s->cfg.npu_hz)
        return npu_cycles;
    double v = (double)npu_cycles * s->cfg.host_hz / s->cfg.npu_hz;
    uint64_t r = (uint64_t)v;
    return (double)r < v ? r + 1 : r;
}

/* ---- instruction counting --------------------------------------------------- */
static size_t bc_hash(uint32_t addr, uint32_t size)
{
    return (size_t)(((addr >> 1) ^ size * 0x9e37u) * 0x9E3779B1u);
}

static uint32_t block_decode(sim_ctx *s, uint32_t addr, uint32_t size)
{
    if (size > SIM_MAX_BLOCK)
        return 1;
    sim_mem *g = sim_mem_find(s, addr, 0);
    if (!g)
        return 1;
    uint32_t avail = g->r.base + (g->r.size - 1) - addr + 1;
    return sim_rv_count(g->host + (addr - g->r.base), size < avail ? size : avail);
}

static int bc_grow(sim_ctx *s)
{
    size_t cap = s->bc_cap ? s->bc_cap * 2 : 1024;
    sim_bc_entry *n = npu_malloc(s->cfg.alloc, cap * sizeof *n);
    if (!n)
        return 0;
    memset(n, 0, cap * sizeof *n);
    for (size_t i = 0; i < s->bc_cap; i++) {
        sim_bc_entry *e = &s->bc[i];
        if (!e->used)
            continue;
        size_t j = bc_hash(e->addr, e->size) & (cap - 1);
        while (n[j].used)
            j = (j + 1) & (cap - 1);
        n[j] = *e;
    }
    npu_free(s->cfg.alloc, s->bc, s->bc_cap * sizeof *s->bc);
    s->bc = n;
    s->bc_cap = cap;
    return 1;
}

/* Keyed by (address, size): QEMU may translate the same address into blocks
 * of different lengths (e.g. after a stop request), each counted once. */
static uint32_t block_count(sim_ctx *s, uint32_t addr, uint32_t size)
{
    if (s->bc_cap) {
        size_t mask = s->bc_cap - 1;
        for (size_t i = bc_hash(addr, size) & mask; s->bc[i].used; i = (i + 1) & mask)
            if (s->bc[i].addr == addr && s->bc[i].size == size)
                return s->bc[i].count;
    }
    uint32_t n = block_decode(s, addr, size);
    if ((s->bc_used + 1) * 2 > s->bc_cap && !bc_grow(s))
        return n; /* out of memory: still correct, just not cached */
    size_t mask = s->bc_cap - 1, i = bc_hash(addr, size) & mask;
    while (s->bc[i].used)
        i = (i + 1) & mask;
    s->bc[i] = (sim_bc_entry){addr, size, n, 1};
    s->bc_used++;
    return n;
}

static void on_block(uc_engine *uc, uint64_t address, uint32_t size, void *ud)
{
    (void)uc;
    sim_ctx *s = ud;
    uint32_t a = (uint32_t)address;
    s->cur_block = a;
    s->cur_block_size = size;
    s->insns += block_count(s, a, size);
    s->blocks++;
    if (s->cfg.max_insns && s->insns - s->base_insns > s->cfg.max_insns)
        sim_stop_run(s, SIM_STOP_LIMIT, a, 0,
                     "instruction limit of %llu reached at pc 0x%08x: the firmware does not finish",
                     (unsigned long long)s->cfg.max_insns, a);
}

/* ---- host DRAM traffic (host_dram_timing) ------------------------------- */
void sim_host_dram_access(sim_ctx *s, uint32_t bytes)
{
    if (s->hdram_len == s->hdram_cap) {
        size_t cap = s->hdram_cap ? 2 * s->hdram_cap : 1024;
        sim_bus_use *p = npu_realloc(s->cfg.alloc, s->hdram, s->hdram_cap * sizeof *p, cap * sizeof *p);
        if (!p) {
            sim_stop_run(s, SIM_STOP_FAULT, s->cur_block, 0, "sim: out of memory recording host DRAM traffic");
            return;
        }
        s->hdram = p;
        s->hdram_cap = cap;
    }
    /* the block's instructions are counted at its start: the access is timed
     * at most one block late */
    uint64_t host = sim_now(s) - s->npu_job.start_cycle;
    uint64_t npu = (uint64_t)((double)host * s->cfg.npu_hz / s->cfg.host_hz);
    s->hdram[s->hdram_len++] = (sim_bus_use){npu, bytes};
}

static void on_dram(uc_engine *uc, uc_mem_type type, uint64_t address, int size, int64_t value, void *ud)
{
    (void)uc, (void)type, (void)address, (void)value;
    sim_ctx *s = ud;
    if (s->npu_pending)
        sim_host_dram_access(s, (uint32_t)size);
}

/* ---- faults ------------------------------------------------------------ */
static uint32_t reg_read32(uc_engine *uc, int reg)
{
    uint64_t v = 0; /* RV32 writes only the low 4 bytes */
    uc_reg_read(uc, reg, &v);
    return (uint32_t)v;
}

uint32_t sim_access_pc(sim_ctx *s, uint32_t addr, int is_store)
{
    uint32_t start = s->cur_block, size = s->cur_block_size > SIM_MAX_BLOCK ? SIM_MAX_BLOCK : s->cur_block_size;
    sim_mem *g = sim_mem_find(s, start, 0);
    if (!g)
        return start;
    uint32_t avail = g->r.base + (g->r.size - 1) - start + 1;
    if (size > avail)
        size = avail;
    /* TCG writes guest registers back before every memory access that can
     * fault or reach MMIO, so x[] is the state at the accessing instruction. */
    uint32_t x[32] = {0};
    for (int i = 1; i < 32; i++)
        x[i] = reg_read32(s->uc, UC_RISCV_REG_X0 + i);
    const uint8_t *p = g->host + (start - g->r.base);
    for (uint32_t i = 0; i + 2 <= size;) {
        unsigned len = (p[i] & 3u) == 3u ? 4u : 2u;
        if (i + len > size)
            break;
        uint32_t insn = p[i] | (uint32_t)p[i + 1] << 8;
        if (len == 4)
            insn |= (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24;
        uint32_t ea;
        int st;
        if (sim_rv_mem_access(insn, len, x, &ea, &st) && addr - ea < 8u &&
            (st == is_store || (insn & 0x7fu) == 0x2fu))
            return start + i;
        i += len;
    }
    return start;
}

static bool on_bad_mem(uc_engine *uc, uc_mem_type type, uint64_t address, int size, int64_t value, void *ud)
{
    (void)uc;
    (void)value;
    sim_ctx *s = ud;
    uint32_t a = (uint32_t)address;
    int fetch = type == UC_MEM_FETCH_UNMAPPED || type == UC_MEM_FETCH_PROT;
    int store = type == UC_MEM_WRITE_UNMAPPED || type == UC_MEM_WRITE_PROT;
    int unmapped = type == UC_MEM_READ_UNMAPPED || type == UC_MEM_WRITE_UNMAPPED || type == UC_MEM_FETCH_UNMAPPED;
    sim_mem *g = sim_mem_find(s, a, 0);
    const char *why = unmapped ? "no memory or device is mapped there"
                      : fetch  ? "that memory is not executable (only ROM is)"
                      : store  ? "that memory is read-only"
                               : "that memory is not readable";
    if (fetch) {
        sim_stop_run(s, SIM_STOP_FAULT, a, a, "instruction fetch at 0x%08x%s%s: %s", a, g ? " in " : "",
                     g ? g->name : "", why);
    } else {
        uint32_t pc = sim_access_pc(s, a, store);
        sim_stop_run(s, SIM_STOP_FAULT, pc, a, "%d-byte %s at address 0x%08x%s%s (pc 0x%08x): %s", size,
                     store ? "store" : "load", a, g ? " in " : "", g ? g->name : "", pc, why);
    }
    return false;
}

static const char *cause_name(uint32_t c)
{
    static const char *const n[] = {"instruction address misaligned", "instruction access fault",
                                    "illegal instruction", "breakpoint (ebreak)", "load address misaligned",
                                    "load access fault", "store address misaligned", "store access fault",
                                    "ecall from U-mode", "ecall from S-mode", "exception 10", "ecall from M-mode"};
    return c < sizeof n / sizeof n[0] ? n[c] : "exception";
}

static void on_intr(uc_engine *uc, uint32_t intno, void *ud)
{
    sim_ctx *s = ud;
    /* Unicorn 2.0.1 hands hooked RISC-V exceptions over with pc already
     * advanced by 4, whatever the instruction's length. */
    uint32_t pc = reg_read32(uc, UC_RISCV_REG_PC) - 4u;
    uint8_t b[4] = {0};
    const uint8_t *p = sim_mem_ptr(s, pc, 4, 0);
    if (p)
        memcpy(b, p, 4);
    uint32_t insn = (b[0] & 3u) == 3u ? (uint32_t)b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24
                                      : (uint32_t)b[0] | b[1] << 8;
    const char *hint = intno == 3   ? ": there is no semihosting; end a run through the sim-control EXIT register"
                       : intno >= 8 && intno <= 11 ? ": the simulator has no OS to call"
                                                   : "";
    sim_stop_run(s, SIM_STOP_FAULT, pc, 0, "%s at pc 0x%08x (instruction 0x%0*x)%s", cause_name(intno), pc,
                 (b[0] & 3u) == 3u ? 8 : 4, insn, hint);
}

/* ---- context ------------------------------------------------------------ */
static npu_status check_config(const sim_config *c, npu_err *err)
{
    npu_status st = sim_memmap_check(&c->map, err);
    if (st != NPU_OK)
        return st;
    if (!(c->host_hz > 0 && isfinite(c->host_hz)) || !(c->npu_hz > 0 && isfinite(c->npu_hz)) ||
        !(c->host_cpi > 0 && isfinite(c->host_cpi)))
        return npu_fail(err, NPU_EUSER, "sim: host_hz %g, npu_hz %g and host_cpi %g must be positive", c->host_hz,
                        c->npu_hz, c->host_cpi);
    return NPU_OK;
}

npu_status sim_new(const sim_config *cfg, sim_ctx **out, npu_err *err)
{
    *out = NULL;
    npu_status st = check_config(cfg, err);
    if (st != NPU_OK)
        return st;
    npu_alloc a = cfg->alloc.fn ? cfg->alloc : npu_alloc_default();
    sim_ctx *s = npu_malloc(a, sizeof *s);
    if (!s)
        return npu_fail(err, NPU_EINTERNAL, "sim: out of memory");
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->cfg.alloc = a;
    uc_err ue = uc_open(UC_ARCH_RISCV, UC_MODE_RISCV32, &s->uc);
    if (ue != UC_ERR_OK) {
        npu_free(a, s, sizeof *s);
        return npu_fail(err, NPU_EINTERNAL, "sim: cannot open the RISC-V emulator: %s", uc_strerror(ue));
    }
    if ((st = sim_mem_setup(s, err)) != NPU_OK) {
        sim_free(s);
        return st;
    }
    uc_hook h;
    const sim_memmap *m = &cfg->map;
    if ((ue = uc_mmio_map(s->uc, m->ctl.base, m->ctl.size, sim_ctl_read, s, sim_ctl_write, s)) ||
        (ue = uc_mmio_map(s->uc, m->npu.base, m->npu.size, sim_npu_read, s, sim_npu_write, s)) ||
        (ue = uc_hook_add(s->uc, &h, UC_HOOK_BLOCK, (void *)on_block, s, 1, 0)) ||
        (ue = uc_hook_add(s->uc, &h, UC_HOOK_INTR, (void *)on_intr, s, 1, 0)) ||
        (ue = uc_hook_add(s->uc, &h, UC_HOOK_MEM_INVALID, (void *)on_bad_mem, s, 1, 0))) {
        sim_free(s);
        return npu_fail(err, NPU_EINTERNAL, "sim: emulator set-up: %s", uc_strerror(ue));
    }
    if (cfg->host_dram_timing && (ue = uc_hook_add(s->uc, &h, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, (void *)on_dram, s,
                                                  m->dram.base, (uint64_t)m->dram.base + m->dram.size - 1))) {
        sim_free(s);
        return npu_fail(err, NPU_EINTERNAL, "sim: emulator set-up (DRAM hook): %s", uc_strerror(ue));
    }
    *out = s;
    return NPU_OK;
}

void sim_free(sim_ctx *s)
{
    if (!s)
        return;
    if (s->uc)
        uc_close(s->uc);
    sim_mem_teardown(s);
    npu_free(s->cfg.alloc, s->bc, s->bc_cap * sizeof *s->bc);
    npu_free(s->cfg.alloc, s->hdram, s->hdram_cap * sizeof *s->hdram);
    npu_free(s->cfg.alloc, s, sizeof *s);
}

const sim_config *sim_config_of(const sim_ctx *s)
{
    return &s->cfg;
}

void sim_attach_npu(sim_ctx *s, const sim_npu_ops *ops, void *npu_ctx)
{
    s->npu_ops = ops ? *ops : (sim_npu_ops){0};
    s->npu_ctx = ops ? npu_ctx : NULL;
}

/* ---- running ------------------------------------------------------------ */
static npu_status reset_cpu(sim_ctx *s, npu_err *err)
{
    uint64_t zero = 0, v;
    uc_err ue = UC_ERR_OK;
    for (int i = 1; i < 32 && !ue; i++)
        ue = uc_reg_write(s->uc, UC_RISCV_REG_X0 + i, &zero);
    for (int i = 0; i < 32 && !ue; i++)
        ue = uc_reg_write(s->uc, UC_RISCV_REG_F0 + i, &zero);
    /* picolibc's crt0 sets sp and gp itself; these are for other firmware */
    v = s->fw.ram_end & ~15u;
    if (!ue)
        ue = uc_reg_write(s->uc, UC_RISCV_REG_SP, &v);
    v = 0;
    if (!ue)
        ue = uc_reg_read(s->uc, UC_RISCV_REG_MSTATUS, &v);
    v = (v & 0xffffffffu) | MSTATUS_FS; /* crt0 does it too, but code before it may use the FPU */
    if (!ue)
        ue = uc_reg_write(s->uc, UC_RISCV_REG_MSTATUS, &v);
    if (!ue)
        ue = uc_reg_write(s->uc, UC_RISCV_REG_FCSR, &zero);
    if (ue)
        return npu_fail(err, NPU_EINTERNAL, "sim: resetting the host CPU: %s", uc_strerror(ue));
    return NPU_OK;
}

/* Where a firmware waiting at the store at pc goes on: past the store and
 * past the wfi that follows it (fw_wait_next). Unicorn stops at the MMIO
 * store itself and leaves the pc register at the block's start, so the pc
 * is decoded, not read. */
uint32_t sim_wait_resume_pc(sim_ctx *s, uint32_t pc)
{
    const uint8_t *p = sim_mem_ptr(s, pc, 2, 0);
    pc += p && (p[0] & 3u) != 3u ? 2u : 4u;
    p = sim_mem_ptr(s, pc, 4, 0);
    if (p && ((uint32_t)p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24) == RV_WFI)
        pc += 4;
    return pc;
}

static int after_wfi(sim_ctx *s, uint32_t pc)
{
    const uint8_t *p = sim_mem_ptr(s, pc - 4u, 4, 0);
    return p && ((uint32_t)p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24) == RV_WFI;
}

/* Counts of this run: since boot, or since the resume. */
static void fill_result(sim_ctx *s, sim_result *res)
{
    res->stop = s->stop;
    res->exit_code = s->exit_code;
    res->pc = s->fault_pc;
    res->addr = s->fault_addr;
    snprintf(res->msg, sizeof res->msg, "%s", s->msg);
    sim_stats *t = &res->stats;
    uint64_t base = (uint64_t)llround((double)s->base_insns * s->cfg.host_cpi) + s->base_stall;
    t->insns = s->insns - s->base_insns;
    t->stall_cycles = s->stall - s->base_stall;
    t->total_cycles = sim_now(s) - base;
    t->host_cycles = t->total_cycles - t->stall_cycles;
    if (s->npu_busy && s->npu_done_at > sim_now(s))
        t->total_cycles = s->npu_done_at - base;
    t->npu_cycles = s->npu_total - s->base_npu_total;
    t->npu_jobs = s->npu_jobs - s->base_npu_jobs;
    t->blocks = s->blocks - s->base_blocks;
    t->block_kinds = s->bc_used;
    t->time_s = (double)t->total_cycles / s->cfg.host_hz;
}

static void clear_stop(sim_ctx *s)
{
    s->stop = SIM_STOP_NONE;
    s->exit_code = 0;
    s->fault_pc = s->fault_addr = 0;
    s->msg[0] = '\0';
    s->con_len = 0;
    s->waiting = 0;
}

/* Emulates from pc until a stop; a wfi waits for the running NPU job. */
static npu_status run_from(sim_ctx *s, uint32_t pc, sim_result *res, npu_err *err)
{
    s->ran = 1;
    for (;;) {
        uc_err ue = uc_emu_start(s->uc, pc, SIM_UNTIL, 0, 0);
        if (s->stop != SIM_STOP_NONE)
            break;
        pc = reg_read32(s->uc, UC_RISCV_REG_PC);
        if (ue != UC_ERR_OK) {
            sim_stop_run(s, SIM_STOP_FAULT, pc, 0, "emulator error near pc 0x%08x: %s", pc, uc_strerror(ue));
            break;
        }
        /* Unicorn returns from a wfi (QEMU halts the CPU): wake it when the
         * NPU finishes, the only interrupt source of this SoC. */
        if (after_wfi(s, pc)) {
            if (s->npu_busy) {
                sim_npu_sync(s);
                continue;
            }
            sim_stop_run(s, SIM_STOP_FAULT, pc - 4, 0,
                         "wfi at pc 0x%08x with no NPU job running: nothing would ever wake the host", pc - 4);
            break;
        }
        sim_stop_run(s, SIM_STOP_FAULT, pc, 0, "the emulator stopped at pc 0x%08x for no known reason", pc);
        break;
    }
    sim_npu_run_pending(s); /* a job rung and never waited for still runs */
    sim_console_flush(s);
    if (s->stop == SIM_STOP_WAIT)
        s->waiting = 1; /* resume_pc: set at the FW_CTL_WAIT store */
    if (s->stop == SIM_STOP_EXIT || s->stop == SIM_STOP_WAIT)
        s->fault_pc = s->cur_block;
    fill_result(s, res);
    if (s->stop == SIM_STOP_EXIT || s->stop == SIM_STOP_WAIT)
        return NPU_OK;
    return npu_fail(err, NPU_EUSER, "%s", s->msg);
}

npu_status sim_run(sim_ctx *s, sim_result *res, npu_err *err)
{
    memset(res, 0, sizeof *res);
    if (!s->have_fw)
        return npu_fail(err, NPU_EUSAGE, "sim: no firmware loaded");
    s->insns = s->stall = s->blocks = 0;
    s->base_insns = s->base_stall = s->base_blocks = s->base_npu_total = s->base_npu_jobs = 0;
    clear_stop(s);
    s->cur_block = s->fw.entry;
    s->cur_block_size = 0;
    sim_npu_reset(s);
    npu_status st = reset_cpu(s, err);
    if (st != NPU_OK)
        return st;
    return run_from(s, s->fw.entry, res, err);
}

void sim_set_serve(sim_ctx *s, int serve)
{
    s->serve = serve != 0;
}

int sim_waiting(const sim_ctx *s)
{
    return s->waiting;
}

npu_status sim_resume(sim_ctx *s, sim_result *res, npu_err *err)
{
    memset(res, 0, sizeof *res);
    if (!s->waiting)
        return npu_fail(err, NPU_EUSAGE, "sim: no firmware waits for a request");
    uint32_t pc = s->resume_pc;
    clear_stop(s);
    s->base_insns = s->insns, s->base_stall = s->stall, s->base_blocks = s->blocks;
    s->base_npu_total = s->npu_total, s->base_npu_jobs = s->npu_jobs;
    return run_from(s, pc, res, err);
}
