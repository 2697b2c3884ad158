/* sim host side: runs the real firmware (NPUCC_BUILD/fw/npurt.elf, built by
 * `make`) through its diagnostic commands (rt/fw_abi.h), checks counting,
 * time, MMIO, faults and the NPU seam with a mock model, and feeds the ELF
 * loader corrupted copies of the firmware. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "target/target.h"

/* ---- fixtures ------------------------------------------------------------- */
static const char *fw_path(void)
{
    static char path[1024];
    const char *b = getenv("NPUCC_BUILD");
    snprintf(path, sizeof path, "%s/fw/npurt.elf", b && *b ? b : "build");
    return path;
}

static uint8_t *read_fw(size_t *len)
{
    FILE *f = fopen(fw_path(), "rb");
    cr_assert_not_null(f, "%s missing: run make first", fw_path());
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

typedef struct capture {
    char text[4096];
    size_t len;
    int calls;
} capture;

static void capture_fn(void *ud, const char *t, size_t n)
{
    capture *c = ud;
    c->calls++;
    if (n > sizeof c->text - 1 - c->len)
        n = sizeof c->text - 1 - c->len;
    memcpy(c->text + c->len, t, n);
    c->len += n;
    c->text[c->len] = '\0';
}

static sim_ctx *open_sim_cfg(sim_config *cfg, capture *cap)
{
    if (cap) {
        memset(cap, 0, sizeof *cap);
        cfg->console_fn = capture_fn;
        cfg->console_ud = cap;
    }
    sim_ctx *s;
    npu_err err;
    npu_err_clear(&err);
    cr_assert_eq(sim_new(cfg, &s, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(sim_load_elf_file(s, fw_path(), &err), NPU_OK, "%s", err.msg);
    return s;
}

static sim_ctx *open_sim(capture *cap)
{
    sim_config cfg;
    sim_config_default(&cfg);
    return open_sim_cfg(&cfg, cap);
}

/* Places a request for cmd with up to 8 args, runs, reads the block back. */
static npu_status run_cmd(sim_ctx *s, uint32_t cmd, const uint32_t *args, int nargs, fw_request *back,
                          sim_result *r, npu_err *err)
{
    fw_request req = {.magic = FW_REQ_MAGIC, .version = FW_REQ_VERSION, .command = cmd};
    for (int i = 0; i < nargs; i++)
        req.arg[i] = args[i];
    uint32_t at;
    npu_err_clear(err);
    cr_assert_eq(sim_place_request(s, &req, &at, err), NPU_OK, "%s", err->msg);
    npu_status st = sim_run(s, r, err);
    npu_err e2;
    cr_assert_eq(sim_mem_read(s, at, back, sizeof *back, &e2), NPU_OK);
    return st;
}

static uint64_t loop_insns(sim_ctx *s, uint32_t n)
{
    fw_request back;
    sim_result r;
    npu_err err;
    cr_assert_eq(run_cmd(s, FW_CMD_LOOP, &n, 1, &back, &r, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(r.exit_code, 0);
    return r.stats.insns;
}

/* The self-check's computation, natively, to compare with the firmware's. */
static uint32_t host_hash(uint32_t n, uint32_t seed)
{
    uint32_t x = seed, acc = 0;
    for (uint32_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        acc ^= x >> (i & 15u);
        acc = acc << 1 | acc >> 31;
    }
    return acc;
}

static uint32_t host_basel_bits(uint32_t n)
{
    float s = 0.0f;
    for (uint32_t k = 1; k <= n; k++)
        s += 1.0f / ((float)k * (float)k);
    uint32_t u;
    memcpy(&u, &s, 4);
    return u;
}

/* ---- running the firmware --------------------------------------------------- */
Test(sim_host, selfcheck_runs_prints_and_exits)
{
    capture cap;
    sim_ctx *s = open_sim(&cap);
    uint32_t args[2] = {500, 12345};
    fw_request back;
    sim_result r;
    npu_err err;
    cr_assert_eq(run_cmd(s, FW_CMD_SELFCHECK, args, 2, &back, &r, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(r.stop, SIM_STOP_EXIT);
    cr_assert_eq(r.exit_code, FW_EXIT_OK, "%s", cap.text);
    cr_assert_eq(back.status, FW_REQ_ST_DONE);
    cr_assert_eq(back.result[0], host_hash(500, 12345));
    cr_assert_eq(back.result[1], host_basel_bits(500), "float sum differs: FPU not enabled?");
    char want[128];
    snprintf(want, sizeof want, "selfcheck: n=500 int=0x%08x float=", host_hash(500, 12345));
    cr_assert(strstr(cap.text, want), "console: '%s'", cap.text);
    cr_assert(strstr(cap.text, ": ok\n"), "console: '%s'", cap.text);
    cr_assert_eq(cap.calls, 1, "one line, one flush");
    sim_free(s);
}

Test(sim_host, exit_code_and_console_flushing)
{
    capture cap;
    sim_ctx *s = open_sim(&cap);
    char text[600];
    memcpy(text, "ab\ncd", 5);
    uint32_t at;
    npu_err err;
    cr_assert_eq(sim_place_dram(s, text, 5, 4, &at, &err), NPU_OK);
    uint32_t args[3] = {5, at, 42};
    fw_request back;
    sim_result r;
    cr_assert_eq(run_cmd(s, FW_CMD_EXIT, args, 3, &back, &r, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(r.exit_code, 42);
    cr_assert_str_eq(cap.text, "ab\ncd");
    cr_assert_eq(cap.calls, 2, "a line, then the rest at the end of the run");

    /* no newline: flushed whenever the 256-byte buffer fills */
    memset(text, 'x', sizeof text);
    cr_assert_eq(sim_place_dram(s, text, sizeof text, 4, &at, &err), NPU_OK);
    memset(&cap, 0, sizeof cap);
    uint32_t args2[3] = {sizeof text, at, (uint32_t)-7};
    cr_assert_eq(run_cmd(s, FW_CMD_EXIT, args2, 3, &back, &r, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(r.exit_code, -7);
    cr_assert_eq(cap.len, sizeof text);
    cr_assert_eq(cap.calls, 3);
    sim_free(s);
}

Test(sim_host, bad_request_block_is_reported_by_firmware)
{
    capture cap;
    sim_ctx *s = open_sim(&cap);
    fw_request req = {.magic = 0xdeadbeef, .version = FW_REQ_VERSION, .command = FW_CMD_SELFCHECK};
    npu_err err;
    cr_assert_eq(sim_place_request(s, &req, NULL, &err), NPU_OK);
    sim_result r;
    cr_assert_eq(sim_run(s, &r, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(r.exit_code, FW_EXIT_BAD_REQUEST);
    cr_assert(strstr(cap.text, "bad request"), "%s", cap.text);

    uint32_t none = 0;
    fw_request back;
    cr_assert_eq(run_cmd(s, 99, &none, 0, &back, &r, &err), NPU_OK);
    cr_assert_eq(r.exit_code, FW_EXIT_BAD_COMMAND);
    sim_free(s);
}

/* ---- counting and time ------------------------------------------------------ */
Test(sim_host, counts_are_deterministic_and_plausible)
{
    sim_ctx *a = open_sim(NULL), *b = open_sim(NULL);
    uint32_t args[2] = {1000, 1};
    fw_request back;
    sim_result r1, r2, r3;
    npu_err err;
    cr_assert_eq(run_cmd(a, FW_CMD_SELFCHECK, args, 2, &back, &r1, &err), NPU_OK);
    cr_assert_eq(run_cmd(a, FW_CMD_SELFCHECK, args, 2, &back, &r2, &err), NPU_OK);
    cr_assert_eq(run_cmd(b, FW_CMD_SELFCHECK, args, 2, &back, &r3, &err), NPU_OK);
    cr_assert_eq(r1.stats.insns, r2.stats.insns);
    cr_assert_eq(r1.stats.insns, r3.stats.insns);
    /* two LCG loops (one with a 20-step soft multiply) and a float loop of
     * 1000 iterations: well above 20 instructions per iteration, well below 2000 */
    cr_assert_gt(r1.stats.insns, 20u * 1000u);
    cr_assert_lt(r1.stats.insns, 2000u * 1000u);
    cr_assert_eq(r1.stats.host_cycles, r1.stats.insns, "CPI 1");
    cr_assert_eq(r1.stats.total_cycles, r1.stats.insns);
    cr_assert_gt(r1.stats.blocks, 1000u);
    cr_assert_lt(r1.stats.block_kinds, r1.stats.blocks / 10, "blocks are decoded once, not per execution");
    sim_config cfg;
    sim_config_default(&cfg);
    cr_assert_float_eq(r1.stats.time_s, (double)r1.stats.total_cycles / cfg.host_hz, 1e-12);
    sim_free(a);
    sim_free(b);
}

Test(sim_host, loop_of_known_length_adds_two_instructions_per_iteration)
{
    sim_ctx *s = open_sim(NULL);
    uint64_t c1 = loop_insns(s, 1000), c2 = loop_insns(s, 2000), c3 = loop_insns(s, 5000);
    /* addi (compressed, 2 bytes) + bnez (4 bytes): a byte count / 4 would be wrong */
    cr_assert_eq(c2 - c1, 2000u);
    cr_assert_eq(c3 - c2, 6000u);
    sim_free(s);
}

Test(sim_host, firmware_reads_host_cycles_at_cpi)
{
    static const double cpis[] = {1.0, 2.0, 1.5};
    for (size_t k = 0; k < sizeof cpis / sizeof cpis[0]; k++) {
        sim_config cfg;
        sim_config_default(&cfg);
        cfg.host_cpi = cpis[k];
        sim_ctx *s = open_sim_cfg(&cfg, NULL);
        uint32_t n = 4000;
        fw_request back;
        sim_result r;
        npu_err err;
        cr_assert_eq(run_cmd(s, FW_CMD_LOOP, &n, 1, &back, &r, &err), NPU_OK, "%s", err.msg);
        double diff = (double)(back.result[1] - back.result[0]);
        /* the clock is resolved per block: a few instructions either side */
        cr_assert(diff >= 2.0 * n * cpis[k] - 1 && diff <= (2.0 * n + 64) * cpis[k], "cpi %g: diff %g", cpis[k],
                  diff);
        cr_assert_eq(r.stats.host_cycles, (uint64_t)llround((double)r.stats.insns * cpis[k]));
        sim_free(s);
    }
}

Test(sim_host, runaway_firmware_stops_at_the_limit)
{
    sim_config cfg;
    sim_config_default(&cfg);
    cfg.max_insns = 200000;
    sim_ctx *s = open_sim_cfg(&cfg, NULL);
    uint32_t none = 0;
    fw_request back;
    sim_result r;
    npu_err err;
    cr_assert_eq(run_cmd(s, FW_CMD_HANG, &none, 0, &back, &r, &err), NPU_EUSER);
    cr_assert_eq(r.stop, SIM_STOP_LIMIT);
    cr_assert_geq(r.stats.insns, 200000u);
    cr_assert_lt(r.stats.insns, 200000u + 600u, "stops within a block");
    cr_assert(strstr(err.msg, "instruction limit of 200000"), "%s", err.msg);
    cr_assert_eq(back.status, FW_REQ_ST_RUNNING);
    sim_free(s);
}

/* ---- faults ------------------------------------------------------------------ */
typedef struct fault_case {
    const char *name;
    uint32_t cmd, addr;
    const char *want;
} fault_case;

static const fault_case faults[] = {
    {"unmapped load", FW_CMD_LOAD, 0x50000000u, "load at address 0x50000000"},
    {"load past DRAM", FW_CMD_LOAD, 0x84000000u, "no memory or device"},
    {"top of memory", FW_CMD_LOAD, 0xfffffff0u, "no memory or device"},
    {"unmapped store", FW_CMD_STORE, 0x30000000u, "store at address 0x30000000"},
    {"store to ROM", FW_CMD_STORE, 0x00000100u, "in ROM (pc"},
    {"store to flash", FW_CMD_STORE, 0x20000040u, "read-only"},
    {"NPU register hole", FW_CMD_LOAD, 0x40000ffcu, "NPU offset 0xffc is not a register"},
    {"doorbell read", FW_CMD_LOAD, 0x40000080u, "is write-only"},
    {"console read", FW_CMD_LOAD, 0x40001008u, "sim-control offset 0x008 is write-only"},
    {"magic write", FW_CMD_STORE, 0x40001000u, "is read-only"},
};

Test(sim_host, faults_name_pc_and_address)
{
    sim_ctx *s = open_sim(NULL);
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        const fault_case *c = &faults[i];
        uint32_t args[2] = {c->addr, 0x1234};
        fw_request back;
        sim_result r;
        npu_err err;
        cr_assert_eq(run_cmd(s, c->cmd, args, 2, &back, &r, &err), NPU_EUSER, "%s", c->name);
        cr_assert_eq(r.stop, SIM_STOP_FAULT, "%s: %s", c->name, r.msg);
        cr_assert_eq(r.addr, c->addr, "%s", c->name);
        cr_assert_eq(r.pc, back.result[0], "%s: pc 0x%08x, the access is at 0x%08x", c->name, r.pc,
                     back.result[0]);
        char pc[32], addr[32];
        snprintf(pc, sizeof pc, "pc 0x%08x", back.result[0]);
        snprintf(addr, sizeof addr, "0x%08x", c->addr);
        cr_assert(strstr(err.msg, pc) && strstr(err.msg, addr), "%s: %s", c->name, err.msg);
        cr_assert(strstr(err.msg, c->want), "%s: '%s' lacks '%s'", c->name, err.msg, c->want);
        cr_assert_str_eq(r.msg, err.msg);
    }
    sim_free(s);
}

Test(sim_host, mapped_load_works)
{
    sim_ctx *s = open_sim(NULL);
    uint32_t v = 0xcafef00d, at;
    npu_err err;
    cr_assert_eq(sim_place_flash(s, &v, 4, 4, &at, &err), NPU_OK);
    fw_request back;
    sim_result r;
    cr_assert_eq(run_cmd(s, FW_CMD_LOAD, &at, 1, &back, &r, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(back.result[1], 0xcafef00d);
    sim_free(s);
}

Test(sim_host, illegal_instruction_stops_with_its_pc)
{
    sim_ctx *s = open_sim(NULL);
    uint32_t none = 0;
    fw_request back;
    sim_result r;
    npu_err err;
    cr_assert_eq(run_cmd(s, FW_CMD_ILLEGAL, &none, 0, &back, &r, &err), NPU_EUSER);
    cr_assert_eq(r.stop, SIM_STOP_FAULT);
    cr_assert_eq(r.pc, back.result[0]);
    char want[64];
    snprintf(want, sizeof want, "illegal instruction at pc 0x%08x", back.result[0]);
    cr_assert(strstr(err.msg, want), "%s", err.msg);
    sim_free(s);
}

/* ---- NPU seam ------------------------------------------------------------------ */
typedef struct mock_npu {
    int calls;
    sim_npu_job job;
    uint64_t cycles;
    npu_status fail;
    uint8_t cmd[8];
    npu_status cmd_read;
} mock_npu;

static npu_status mock_run(void *ctx, sim_ctx *sim, const sim_npu_job *job, uint64_t *cycles, npu_err *err)
{
    mock_npu *m = ctx;
    m->calls++;
    m->job = *job;
    m->cmd_read = sim_mem_read(sim, job->cmd_base, m->cmd, sizeof m->cmd, err);
    uint8_t *out = sim_mem_ptr(sim, job->region[FW_NPU_REGION_OUTPUT].base, 4, 1);
    if (out)
        memcpy(out, "DONE", 4);
    *cycles = m->cycles;
    if (m->fail)
        return npu_fail(err, m->fail, "instruction 3 (conv): illegal opcode 0x7f at 0x%08x", job->cmd_base + 12);
    return NPU_OK;
}

static const sim_npu_ops mock_ops = {mock_run};

/* Places a command stream, an output buffer and a region table; kicks the NPU. */
static npu_status kick(sim_ctx *s, mock_npu *m, uint32_t wait_wfi, fw_request *back, sim_result *r, npu_err *err,
                       fw_npu_region_desc regs[FW_NPU_NREGIONS])
{
    static const uint8_t cmds[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint32_t cmd_at, out_at, tab_at;
    cr_assert_eq(sim_place_dram(s, cmds, sizeof cmds, 64, &cmd_at, err), NPU_OK);
    cr_assert_eq(sim_place_dram(s, NULL, 64, 64, &out_at, err), NPU_OK);
    for (unsigned i = 0; i < FW_NPU_NREGIONS; i++)
        regs[i] = (fw_npu_region_desc){0x80400000u + 0x10000u * i, 0x1000u + i};
    regs[FW_NPU_REGION_OUTPUT] = (fw_npu_region_desc){out_at, 64};
    cr_assert_eq(sim_place_dram(s, regs, sizeof(fw_npu_region_desc) * FW_NPU_NREGIONS, 8, &tab_at, err), NPU_OK);
    sim_attach_npu(s, &mock_ops, m);
    uint32_t args[5] = {cmd_at, sizeof cmds, tab_at, 0xabcd, wait_wfi};
    return run_cmd(s, FW_CMD_NPU_KICK, args, 5, back, r, err);
}

static void check_kick(sim_ctx *s, const mock_npu *m, const fw_request *back, const sim_result *r,
                       const fw_npu_region_desc *regs)
{
    cr_assert_eq(m->calls, 1);
    cr_assert_eq(m->cmd_read, NPU_OK);
    cr_assert_eq(m->job.cmd_len, 8);
    cr_assert_eq(m->cmd[0], 1);
    cr_assert_eq(m->cmd[7], 8);
    cr_assert_eq(m->job.doorbell, 0xabcd);
    cr_assert_eq(m->job.seq, 0);
    for (unsigned i = 0; i < FW_NPU_NREGIONS; i++) {
        cr_assert_eq(m->job.region[i].base, regs[i].base, "region %u", i);
        cr_assert_eq(m->job.region[i].size, regs[i].size, "region %u", i);
    }
    char out[4];
    npu_err err;
    cr_assert_eq(sim_mem_read(s, regs[FW_NPU_REGION_OUTPUT].base, out, 4, &err), NPU_OK);
    cr_assert(memcmp(out, "DONE", 4) == 0, "the model writes guest memory");
    /* the model's 100000 cycles at the NPU clock, in host cycles */
    const sim_config *cfg = sim_config_of(s);
    uint64_t npu_host = (uint64_t)ceil(100000.0 * cfg->host_hz / cfg->npu_hz);
    cr_assert_eq(sim_npu_to_host_cycles(s, 100000), npu_host);
    uint64_t done = m->job.start_cycle + npu_host;
    cr_assert_geq(m->job.start_cycle, back->result[0]);
    cr_assert_lt(m->job.start_cycle - back->result[0], 64u, "doorbell shortly after the first clock read");
    cr_assert_geq(back->result[1], done, "the wait advanced host time to the NPU's completion");
    cr_assert_lt(back->result[1], done + 64u);
    cr_assert_eq(back->result[2], FW_NPU_ST_DONE);
    cr_assert_eq(back->result[3], 100000u);
    cr_assert_eq(back->result[4], 1u);
    cr_assert_gt(r->stats.stall_cycles, npu_host - 64u);
    cr_assert_leq(r->stats.stall_cycles, npu_host);
    cr_assert_eq(r->stats.total_cycles, r->stats.host_cycles + r->stats.stall_cycles);
    cr_assert_eq(r->stats.npu_cycles, 100000u);
    cr_assert_eq(r->stats.npu_jobs, 1u);
}

Test(sim_host, doorbell_calls_npu_and_status_read_waits)
{
    sim_ctx *s = open_sim(NULL);
    mock_npu m = {.cycles = 100000};
    fw_npu_region_desc regs[FW_NPU_NREGIONS];
    fw_request back;
    sim_result r;
    npu_err err;
    cr_assert_eq(kick(s, &m, 0, &back, &r, &err, regs), NPU_OK, "%s", err.msg);
    cr_assert_eq(r.exit_code, 0);
    check_kick(s, &m, &back, &r, regs);
    sim_free(s);
}

Test(sim_host, wfi_waits_for_the_npu)
{
    sim_ctx *s = open_sim(NULL);
    mock_npu m = {.cycles = 100000};
    fw_npu_region_desc regs[FW_NPU_NREGIONS];
    fw_request back;
    sim_result r;
    npu_err err;
    cr_assert_eq(kick(s, &m, 1, &back, &r, &err, regs), NPU_OK, "%s", err.msg);
    check_kick(s, &m, &back, &r, regs);
    sim_free(s);
}

Test(sim_host, wfi_without_npu_job_is_a_deadlock)
{
    sim_ctx *s = open_sim(NULL);
    uint32_t none = 0;
    fw_request back;
    sim_result r;
    npu_err err;
    cr_assert_eq(run_cmd(s, FW_CMD_WFI, &none, 0, &back, &r, &err), NPU_EUSER);
    cr_assert_eq(r.stop, SIM_STOP_FAULT);
    cr_assert(strstr(err.msg, "wfi at pc") && strstr(err.msg, "nothing would ever wake"), "%s", err.msg);
    const uint8_t *insn = sim_mem_ptr(s, r.pc, 4, 0);
    cr_assert_not_null(insn);
    cr_assert(insn[0] == 0x73 && insn[1] == 0x00 && insn[2] == 0x50 && insn[3] == 0x10, "pc names the wfi");
    sim_free(s);
}

Test(sim_host, npu_fault_stops_the_run)
{
    sim_ctx *s = open_sim(NULL);
    mock_npu m = {.cycles = 10, .fail = NPU_EUSER};
    fw_npu_region_desc regs[FW_NPU_NREGIONS];
    fw_request back;
    sim_result r;
    npu_err err;
    cr_assert_eq(kick(s, &m, 0, &back, &r, &err, regs), NPU_EUSER);
    cr_assert_eq(r.stop, SIM_STOP_NPU_FAULT);
    cr_assert(strstr(err.msg, "NPU job 0") && strstr(err.msg, "illegal opcode 0x7f"), "%s", err.msg);
    cr_assert_eq(back.status, FW_REQ_ST_RUNNING, "the firmware did not get past the doorbell");
    sim_free(s);
}

Test(sim_host, doorbell_without_model_faults)
{
    sim_ctx *s = open_sim(NULL);
    fw_request back;
    sim_result r;
    npu_err err;
    uint32_t args[5] = {0, 0, 0, 1, 0};
    sim_attach_npu(s, NULL, NULL);
    cr_assert_eq(run_cmd(s, FW_CMD_NPU_KICK, args, 5, &back, &r, &err), NPU_EUSER);
    cr_assert_eq(r.stop, SIM_STOP_FAULT);
    cr_assert(strstr(err.msg, "no NPU model"), "%s", err.msg);
    sim_free(s);
}

/* ---- several contexts ------------------------------------------------------------ */
Test(sim_host, two_contexts_are_independent)
{
    capture ca, cb;
    sim_ctx *a = open_sim(&ca), *b = open_sim(&cb);
    uint64_t a1 = loop_insns(a, 1000);
    uint64_t b1 = loop_insns(b, 5000);
    uint64_t a2 = loop_insns(a, 1000);
    cr_assert_eq(a1, a2);
    cr_assert_eq(b1 - a1, 8000u);
    uint32_t na = 10, nb = 20;
    fw_request back;
    sim_result r;
    npu_err err;
    cr_assert_eq(run_cmd(a, FW_CMD_SELFCHECK, &na, 1, &back, &r, &err), NPU_OK);
    cr_assert_eq(run_cmd(b, FW_CMD_SELFCHECK, &nb, 1, &back, &r, &err), NPU_OK);
    cr_assert(strstr(ca.text, "n=10 ") && !strstr(ca.text, "n=20 "), "%s", ca.text);
    cr_assert(strstr(cb.text, "n=20 ") && !strstr(cb.text, "n=10 "), "%s", cb.text);
    /* a's memory is not b's: the same guest address holds different values */
    uint32_t v = 0x11111111, w = 0x22222222, at = 0x80800000u, got_a, got_b;
    cr_assert_eq(sim_mem_write(a, at, &v, 4, &err), NPU_OK);
    cr_assert_eq(sim_mem_write(b, at, &w, 4, &err), NPU_OK);
    cr_assert_eq(sim_mem_read(a, at, &got_a, 4, &err), NPU_OK);
    cr_assert_eq(sim_mem_read(b, at, &got_b, 4, &err), NPU_OK);
    cr_assert_eq(got_a, v);
    cr_assert_eq(got_b, w);
    sim_free(a);
    sim_free(b);
}

/* ---- memory map and guest memory API ------------------------------------------- */
Test(sim_host, guest_memory_bounds_and_permissions)
{
    sim_ctx *s = open_sim(NULL);
    sim_memmap m;
    sim_memmap_default(&m);
    uint32_t dram_end = m.dram.base + m.dram.size;
    cr_assert_not_null(sim_mem_ptr(s, dram_end - 4, 4, 1));
    cr_assert_null(sim_mem_ptr(s, dram_end - 4, 5, 1));
    cr_assert_null(sim_mem_ptr(s, m.npu.base, 4, 0), "MMIO has no backing buffer");
    cr_assert_not_null(sim_mem_ptr(s, m.flash.base, 16, 0));
    cr_assert_null(sim_mem_ptr(s, m.flash.base, 16, 1), "flash is read-only");
    npu_err err;
    uint32_t v = 1;
    cr_assert_eq(sim_mem_write(s, m.rom.base, &v, 4, &err), NPU_EUSER);
    cr_assert(strstr(err.msg, "ROM is read-only"), "%s", err.msg);
    cr_assert_eq(sim_mem_read(s, 0x50000000u, &v, 4, &err), NPU_EUSER);
    cr_assert(strstr(err.msg, "0x50000000"), "%s", err.msg);
    /* placement: DRAM above the firmware's RAM, flash from its base */
    const sim_fw_info *fw = sim_fw(s);
    cr_assert_not_null(fw);
    cr_assert_eq(fw->ram_end, 0x80100000u, "rt/fw.ld gives the firmware the first MiB of DRAM");
    uint32_t at;
    cr_assert_eq(sim_place_dram(s, NULL, 100, 256, &at, &err), NPU_OK);
    cr_assert_geq(at, fw->ram_end);
    cr_assert_eq(at % 256, 0);
    cr_assert_eq(sim_place_flash(s, NULL, 10, 0, &at, &err), NPU_OK);
    cr_assert_eq(at, m.flash.base);
    cr_assert_eq(sim_place_flash(s, NULL, m.flash.size, 0, &at, &err), NPU_EUSER);
    cr_assert(strstr(err.msg, "do not fit in flash"), "%s", err.msg);
    cr_assert_eq(sim_place_dram(s, NULL, 8, 3, &at, &err), NPU_EUSAGE);
    cr_assert_eq(sim_load_elf_file(s, fw_path(), &err), NPU_EUSAGE, "firmware after placement");
    sim_free(s);
}

Test(sim_host, memmap_and_config_validation)
{
    static const struct {
        const char *name;
        int field;
        uint32_t base, size;
        const char *want;
    } cases[] = {
        {"unaligned", 1, 0x10000100u, 0x1000u, "multiples of 4096"},
        {"empty", 2, 0x80000000u, 0, "multiples"},
        {"overlap", 3, 0x00020000u, 0x1000u, "NPU registers [0x00020000, 0x00021000) overlaps ROM"},
        {"past 4 GiB", 2, 0xfff00000u, 0x00200000u, "runs past 4 GiB"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_config cfg;
        sim_config_default(&cfg);
        sim_region *r[] = {&cfg.map.rom, &cfg.map.flash, &cfg.map.dram, &cfg.map.npu, &cfg.map.ctl};
        *r[cases[i].field] = (sim_region){cases[i].base, cases[i].size};
        sim_ctx *s = NULL;
        npu_err err;
        cr_assert_eq(sim_new(&cfg, &s, &err), NPU_EUSER, "%s", cases[i].name);
        cr_assert_null(s);
        cr_assert(strstr(err.msg, cases[i].want), "%s: %s", cases[i].name, err.msg);
    }
    sim_config cfg;
    sim_config_default(&cfg);
    cfg.host_cpi = 0;
    sim_ctx *s;
    npu_err err;
    cr_assert_eq(sim_new(&cfg, &s, &err), NPU_EUSER);
}

Test(sim_host, config_comes_from_the_target)
{
    static const char *const names[] = {"edge-v1", "edge-v1-wide", "edge-v1-lite"};
    const char *root = getenv("NPUCC_ROOT");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/targets/%s.yaml", root && *root ? root : ".", names[i]);
        tgt_target *t;
        npu_err err;
        cr_assert_eq(tgt_load(path, NULL, &t, &err), NPU_OK, "%s", err.msg);
        sim_config cfg;
        sim_config_default(&cfg);
        cfg.max_insns = 12345678;
        cr_assert_eq(sim_config_from_target(t, &cfg, &err), NPU_OK, "%s", err.msg);
        const sim_region *got[] = {&cfg.map.rom, &cfg.map.flash, &cfg.map.dram, &cfg.map.npu, &cfg.map.ctl};
        const tgt_mem want[] = {TGT_MEM_ROM, TGT_MEM_FLASH, TGT_MEM_DRAM, TGT_MEM_NPU_REGS, TGT_MEM_SIM_CTRL};
        for (int m = 0; m < 5; m++) {
            cr_assert_eq(got[m]->base, t->mem[want[m]].base, "%s %s", names[i], tgt_mem_name(want[m]));
            cr_assert_eq(got[m]->size, t->mem[want[m]].size, "%s %s", names[i], tgt_mem_name(want[m]));
        }
        cr_assert_float_eq(cfg.host_hz, t->host_clock_mhz * 1e6, 1e-3);
        cr_assert_float_eq(cfg.npu_hz, t->npu_clock_mhz * 1e6, 1e-3);
        cr_assert_float_eq(cfg.host_cpi, t->host_cpi, 1e-12);
        cr_assert_eq(cfg.max_insns, 12345678u, "the rest is kept");
        if (i == 0) {
            sim_config d;
            sim_config_default(&d);
            cr_assert(memcmp(&d.map, &cfg.map, sizeof d.map) == 0, "the defaults are edge-v1's map");
            cr_assert(d.host_hz == cfg.host_hz && d.npu_hz == cfg.npu_hz && d.host_cpi == cfg.host_cpi);
        }
        tgt_free(t);
        /* the firmware runs on every variant's map */
        sim_ctx *s = open_sim_cfg(&cfg, NULL);
        uint32_t n = 50;
        fw_request back;
        sim_result r;
        cr_assert_eq(run_cmd(s, FW_CMD_SELFCHECK, &n, 1, &back, &r, &err), NPU_OK, "%s: %s", names[i], err.msg);
        cr_assert_eq(r.exit_code, 0);
        sim_free(s);
    }
}

Test(sim_host, config_from_target_rejects_what_the_host_cannot_map)
{
    sim_memmap d;
    sim_memmap_default(&d);
    tgt_target t;
    memset(&t, 0, sizeof t);
    t.file = "x.yaml";
    t.host_isa = "rv64gc";
    t.host_clock_mhz = t.npu_clock_mhz = 100;
    t.host_cpi = 1;
    t.mem[TGT_MEM_ROM] = (tgt_region){d.rom.base, d.rom.size};
    t.mem[TGT_MEM_FLASH] = (tgt_region){d.flash.base, d.flash.size};
    t.mem[TGT_MEM_DRAM] = (tgt_region){d.dram.base, d.dram.size};
    t.mem[TGT_MEM_NPU_REGS] = (tgt_region){d.npu.base, d.npu.size};
    t.mem[TGT_MEM_SIM_CTRL] = (tgt_region){d.ctl.base, d.ctl.size};
    sim_config cfg;
    sim_config_default(&cfg);
    npu_err err;
    cr_assert_eq(sim_config_from_target(&t, &cfg, &err), NPU_EUSER);
    cr_assert(strstr(err.msg, "x.yaml: host isa 'rv64gc'"), "%s", err.msg);
    t.host_isa = "rv32imafc";
    cr_assert_eq(sim_config_from_target(&t, &cfg, &err), NPU_OK, "%s", err.msg);
    t.mem[TGT_MEM_DRAM].base = 0x100000000ull;
    cr_assert_eq(sim_config_from_target(&t, &cfg, &err), NPU_EUSER);
    cr_assert(strstr(err.msg, "memory_map.dram") && strstr(err.msg, "32-bit"), "%s", err.msg);
    t.mem[TGT_MEM_DRAM] = (tgt_region){d.flash.base, d.dram.size};
    cr_assert_eq(sim_config_from_target(&t, &cfg, &err), NPU_EUSER);
    cr_assert(strstr(err.msg, "x.yaml: memory map: DRAM") && strstr(err.msg, "overlaps flash"), "%s", err.msg);
}

Test(sim_host, failing_allocations_are_clean)
{
    for (size_t n = 1; n < 4; n++) {
        npu_alloc_counter c = {.fail_at = n};
        sim_config cfg;
        sim_config_default(&cfg);
        cfg.alloc = npu_alloc_counting(&c);
        sim_ctx *s = NULL;
        npu_err err;
        npu_status st = sim_new(&cfg, &s, &err);
        if (st == NPU_OK) {
            st = sim_load_elf_file(s, fw_path(), &err);
            sim_result r;
            if (st == NPU_OK)
                st = sim_run(s, &r, &err); /* the count cache may fail: still counts */
            cr_assert(st == NPU_OK || st == NPU_EINTERNAL, "%s", err.msg);
            sim_free(s);
        } else {
            cr_assert_eq(st, NPU_EINTERNAL);
            cr_assert_null(s);
        }
        cr_assert_eq(c.live_bytes, 0, "fail_at %zu", n);
    }
}

/* ---- ELF loader robustness --------------------------------------------------------- */
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void wr32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

/* File offset of the first program header of this type with these flags. */
static size_t phdr_at(const uint8_t *d, uint32_t type, uint32_t flags)
{
    uint32_t phoff = rd32(d + 28);
    unsigned n = (unsigned)(d[44] | d[45] << 8);
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *p = d + phoff + 32u * i;
        if (rd32(p) == type && (rd32(p + 24) & flags) == flags && (type != 1 || rd32(p + 20) != 0))
            return phoff + 32u * i;
    }
    cr_assert_fail("no program header of type %u flags %u", type, flags);
    return 0;
}

enum { PT_LOAD_ = 1, PF_X_ = 1, PF_W_ = 2 };

/* Each case corrupts a copy of the firmware and says where the loader must point. */
typedef struct elf_case {
    const char *name;
    void (*mutate)(uint8_t *d, size_t *len, char *want_byte);
    const char *want;
} elf_case;

#define AT(fmt_off) snprintf(want_byte, 32, "byte %zu:", (size_t)(fmt_off))
static void m_truncated(uint8_t *d, size_t *len, char *want_byte) { (void)d; *len = 40; AT(40); }
static void m_magic(uint8_t *d, size_t *len, char *want_byte) { (void)len; d[1] = 'X'; AT(0); }
static void m_class64(uint8_t *d, size_t *len, char *want_byte) { (void)len; d[4] = 2; AT(4); }
static void m_bigendian(uint8_t *d, size_t *len, char *want_byte) { (void)len; d[5] = 2; AT(5); }
static void m_machine(uint8_t *d, size_t *len, char *want_byte) { (void)len; wr16(d + 18, 62); AT(18); }
static void m_type(uint8_t *d, size_t *len, char *want_byte) { (void)len; wr16(d + 16, 3); AT(16); }
static void m_double(uint8_t *d, size_t *len, char *want_byte) { (void)len; wr32(d + 36, 0x5); AT(36); }
static void m_phentsize(uint8_t *d, size_t *len, char *want_byte) { (void)len; wr16(d + 42, 56); AT(42); }
static void m_phnum0(uint8_t *d, size_t *len, char *want_byte) { (void)len; wr16(d + 44, 0); AT(44); }
static void m_phoff(uint8_t *d, size_t *len, char *want_byte) { wr32(d + 28, (uint32_t)*len - 40); AT(28); }
static void m_cut_phdrs(uint8_t *d, size_t *len, char *want_byte)
{
    wr32(d + 32, 0); /* no section headers, so the cut hits the program headers first */
    *len = 100;
    AT(28);
}
static void m_shoff(uint8_t *d, size_t *len, char *want_byte) { wr32(d + 32, (uint32_t)*len - 8); AT(32); }
static void m_seg_offset(uint8_t *d, size_t *len, char *want_byte)
{
    size_t p = phdr_at(d, PT_LOAD_, PF_X_);
    wr32(d + p + 4, (uint32_t)*len + 4096);
    AT(p + 4);
}
static void m_seg_wrap(uint8_t *d, size_t *len, char *want_byte)
{
    (void)len;
    size_t p = phdr_at(d, PT_LOAD_, PF_X_);
    wr32(d + p + 4, 0xffffff00u);
    AT(p + 4);
}
static void m_filesz(uint8_t *d, size_t *len, char *want_byte)
{
    (void)len;
    size_t p = phdr_at(d, PT_LOAD_, PF_X_);
    wr32(d + p + 20, rd32(d + p + 16) - 4);
    AT(p + 16);
}
static void m_out_of_map(uint8_t *d, size_t *len, char *want_byte)
{
    (void)len;
    size_t p = phdr_at(d, PT_LOAD_, PF_X_);
    wr32(d + p + 8, 0x30000000u);
    wr32(d + p + 12, 0x30000000u);
    AT(p + 8);
}
static void m_in_mmio(uint8_t *d, size_t *len, char *want_byte)
{
    (void)len;
    size_t p = phdr_at(d, PT_LOAD_, PF_W_);
    wr32(d + p + 12, 0x40000000u); /* the .data load image inside the NPU registers */
    AT(p + 12);
}
static void m_straddle(uint8_t *d, size_t *len, char *want_byte)
{
    (void)len;
    size_t p = phdr_at(d, PT_LOAD_, PF_W_);
    wr32(d + p + 8, 0x84000000u - 16u); /* runs past the end of DRAM */
    AT(p + 8);
}
static void m_overlap(uint8_t *d, size_t *len, char *want_byte)
{
    (void)len;
    size_t x = phdr_at(d, PT_LOAD_, PF_X_), w = phdr_at(d, PT_LOAD_, PF_W_);
    wr32(d + w + 12, rd32(d + x + 12)); /* .data's load image on top of the code */
    AT(w + 12);
}
static void m_exec_dram(uint8_t *d, size_t *len, char *want_byte)
{
    (void)len;
    size_t p = phdr_at(d, PT_LOAD_, PF_X_);
    wr32(d + p + 8, 0x80200000u);
    wr32(d + p + 12, 0x80200000u);
    AT(p + 24);
}
static void m_entry(uint8_t *d, size_t *len, char *want_byte) { (void)len; wr32(d + 24, 0x80000000u); AT(24); }
static void m_interp(uint8_t *d, size_t *len, char *want_byte)
{
    (void)len;
    uint32_t phoff = rd32(d + 28);
    wr32(d + phoff, 3); /* the first program header becomes PT_INTERP */
    AT(phoff);
}

static const elf_case elf_cases[] = {
    {"truncated header", m_truncated, "truncated ELF header"},
    {"bad magic", m_magic, "not an ELF file"},
    {"ELF64", m_class64, "ELF class 2, expected 1"},
    {"big-endian", m_bigendian, "little-endian"},
    {"x86-64 machine", m_machine, "e_machine 62, expected 243"},
    {"shared object", m_type, "e_type 3"},
    {"double-float ABI", m_double, "double/quad float ABI"},
    {"program header size", m_phentsize, "e_phentsize 56"},
    {"no program headers", m_phnum0, "e_phnum 0"},
    {"program headers past EOF", m_phoff, "program header table"},
    {"cut inside program headers", m_cut_phdrs, "program header table"},
    {"section headers past EOF", m_shoff, "section header table"},
    {"segment offset past EOF", m_seg_offset, "runs past the end of the file"},
    {"segment offset wraps", m_seg_wrap, "runs past the end of the file"},
    {"filesz above memsz", m_filesz, "p_filesz"},
    {"segment outside the map", m_out_of_map, "vaddr range [0x30000000"},
    {"segment in MMIO", m_in_mmio, "overlaps the NPU register block"},
    {"segment past DRAM end", m_straddle, "not inside one memory (it overlaps DRAM)"},
    {"overlapping segments", m_overlap, "overlaps segment"},
    {"code in DRAM", m_exec_dram, "executable but runs at 0x80200000 outside ROM"},
    {"entry outside code", m_entry, "e_entry 0x80000000"},
    {"dynamic", m_interp, "PT_INTERP"},
};

Test(sim_elf, malformed_files_are_rejected_with_offset)
{
    size_t len;
    uint8_t *orig = read_fw(&len);
    sim_memmap map;
    sim_memmap_default(&map);
    sim_fw_info info;
    npu_err err;
    cr_assert_eq(sim_elf_check(orig, len, "fw.elf", &map, &info, &err), NPU_OK, "%s", err.msg);
    uint8_t *d = malloc(len);
    for (size_t i = 0; i < sizeof elf_cases / sizeof elf_cases[0]; i++) {
        const elf_case *c = &elf_cases[i];
        memcpy(d, orig, len);
        size_t n = len;
        char want_byte[32] = "";
        c->mutate(d, &n, want_byte);
        npu_err_clear(&err);
        cr_assert_eq(sim_elf_check(d, n, "fw.elf", &map, &info, &err), NPU_EUSER, "%s: accepted", c->name);
        cr_assert(strncmp(err.msg, "fw.elf: ", 8) == 0, "%s: %s", c->name, err.msg);
        cr_assert(strstr(err.msg, want_byte), "%s: '%s' lacks '%s'", c->name, err.msg, want_byte);
        cr_assert(strstr(err.msg, c->want), "%s: '%s' lacks '%s'", c->name, err.msg, c->want);
    }
    free(d);
    free(orig);
}

Test(sim_elf, every_truncation_is_rejected)
{
    size_t len;
    uint8_t *orig = read_fw(&len);
    sim_memmap map;
    sim_memmap_default(&map);
    for (size_t n = 0; n < len; n += n < 512 ? 1 : 61) {
        uint8_t *d = malloc(n ? n : 1); /* exactly n bytes, so ASan sees any overread */
        memcpy(d, orig, n);
        npu_err err;
        npu_err_clear(&err);
        cr_assert_eq(sim_elf_check(d, n, "t.elf", &map, NULL, &err), NPU_EUSER, "length %zu accepted", n);
        cr_assert(strstr(err.msg, "t.elf: byte "), "length %zu: %s", n, err.msg);
        free(d);
    }
    free(orig);
}

Test(sim_elf, random_header_corruption_never_crashes)
{
    size_t len;
    uint8_t *orig = read_fw(&len);
    sim_ctx *s = open_sim(NULL);
    uint8_t *d = malloc(len);
    uint32_t seed = 12345;
    int rejected = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(d, orig, len);
        for (int k = 0; k < 3; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % 256; /* ELF header and program headers */
            seed = seed * 1103515245u + 12345u;
            d[at] = (uint8_t)(seed >> 16);
        }
        npu_err err;
        npu_err_clear(&err);
        npu_status st = sim_load_elf(s, d, len, "f.elf", &err);
        if (st != NPU_OK) {
            rejected++;
            cr_assert_eq(st, NPU_EUSER);
            cr_assert(err.msg[0], "a rejection always says why");
        } else {
            cr_assert_lt(sim_fw(s)->entry, 0x00100000u, "an accepted entry lies in ROM");
        }
    }
    cr_assert_gt(rejected, 100);
    free(d);
    free(orig);
    sim_free(s);
}

Test(sim_elf, reload_and_rerun_gives_the_same_counts)
{
    sim_config cfg;
    sim_config_default(&cfg);
    sim_ctx *s;
    npu_err err;
    cr_assert_eq(sim_new(&cfg, &s, &err), NPU_OK);
    sim_result r1, r2, r3;
    cr_assert_eq(sim_run(s, &r1, &err), NPU_EUSAGE, "no firmware yet");
    cr_assert_eq(sim_load_elf_file(s, fw_path(), &err), NPU_OK, "%s", err.msg);
    /* no request block: the firmware runs its default self-check */
    cr_assert_eq(sim_run(s, &r1, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(r1.exit_code, 0);
    cr_assert_eq(sim_run(s, &r2, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(sim_load_elf_file(s, fw_path(), &err), NPU_OK, "reloading before placing is fine");
    cr_assert_eq(sim_run(s, &r3, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(r1.stats.insns, r2.stats.insns);
    cr_assert_eq(r1.stats.insns, r3.stats.insns);
    cr_assert_eq(sim_load_elf_file(s, "/nonexistent/fw.elf", &err), NPU_EUSER);
    cr_assert(strstr(err.msg, "/nonexistent/fw.elf: cannot open"), "%s", err.msg);
    sim_free(s);
}
