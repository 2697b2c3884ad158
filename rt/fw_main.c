/* Firmware entry of the simulated SoC. picolibc's crt0 sets sp, gp, mstatus.FS,
 * copies .data and clears .bss, then calls main. main reads the request block
 * the simulator placed in DRAM (rt/fw_abi.h) and runs its command: the
 * self-check, a few diagnostics the simulator's tests use, and
 * FW_CMD_RUN_NPUB, which runs a .npub with libnpurt. The run ends through
 * FW_CTL_EXIT.
 * Target-only (a *_main.c file is not part of the native libnpurt.a). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "rt/fw_hal.h"
#include "rt/npurt.h"

/* Integer part of the self-check: an LCG through the M extension's mul,
 * checked against a shift-and-add multiply that uses only base instructions. */
static uint32_t soft_mul(uint32_t a, uint32_t b)
{
    uint32_t r = 0;
    for (; b; b >>= 1, a <<= 1)
        if (b & 1u)
            r += a;
    return r;
}

static uint32_t int_hash(uint32_t n, uint32_t seed, int soft)
{
    uint32_t x = seed, acc = 0;
    for (uint32_t i = 0; i < n; i++) {
        x = (soft ? soft_mul(x, 1664525u) : x * 1664525u) + 1013904223u;
        acc ^= x >> (i & 15u);
        acc = acc << 1 | acc >> 31;
    }
    return acc;
}

/* Float part: the Basel sum, which converges to pi^2/6 (needs the F extension,
 * so mstatus.FS must be on). */
static float basel(uint32_t n)
{
    float s = 0.0f;
    for (uint32_t k = 1; k <= n; k++)
        s += 1.0f / ((float)k * (float)k);
    return s;
}

static int cmd_selfcheck(volatile fw_request *req)
{
    uint32_t n = req->arg[0] ? req->arg[0] : 1000u;
    uint32_t h = int_hash(n, req->arg[1], 0);
    float s = basel(n);
    union { float f; uint32_t u; } bits = {.f = s};
    req->result[0] = h;
    req->result[1] = bits.u;
    /* The tail after n terms lies between 1/(n+1) and 1/n; single-precision
     * rounding adds up to a few 1e-4 (the sum stops growing near n = 4000). */
    float tail = 3.14159265f * 3.14159265f / 6.0f - s;
    int ok = h == int_hash(n, req->arg[1], 1) && tail > 1.0f / ((float)n + 1.0f) - 4e-4f &&
             tail < 1.0f / (float)n + 4e-4f && fabsf(sqrtf(6.0f * (s + tail)) - 3.14159265f) < 1e-5f;
    printf("selfcheck: n=%u int=0x%08x float=%.6f: %s\n", (unsigned)n, (unsigned)h, (double)s,
           ok ? "ok" : "FAILED");
    return ok ? FW_EXIT_OK : FW_EXIT_CHECK_FAILED;
}

/* Exactly two instructions per iteration (addi; bnez), so a test can check
 * that the simulator's instruction count grows by 2 per iteration. */
static int cmd_loop(volatile fw_request *req)
{
    uint32_t n = req->arg[0];
    uint64_t t0 = fw_host_cycles();
    if (n)
        __asm__ volatile("1: addi %0, %0, -1\n\tbnez %0, 1b" : "+r"(n));
    uint64_t t1 = fw_host_cycles();
    req->result[0] = (uint32_t)t0;
    req->result[1] = (uint32_t)t1;
    return FW_EXIT_OK;
}

/* The faulting diagnostics store the pc of the access into result0 before
 * making it, so a test can compare it with the pc the simulator reports.
 * RVC is off in these sequences: auipc, addi, sw are 4 bytes each, so the
 * access is at the auipc's pc + 12. */
#define PC_OF_ACCESS(pcreg, slot) \
    ".option push\n\t.option norvc\n\tauipc " pcreg ", 0\n\taddi " pcreg ", " pcreg ", 12\n\tsw " pcreg \
    ", 0(" slot ")\n\t"

static int cmd_load(volatile fw_request *req)
{
    uint32_t pc, v;
    __asm__ volatile(PC_OF_ACCESS("%0", "%2") "lw %1, 0(%3)\n\t.option pop"
                     : "=&r"(pc), "=&r"(v)
                     : "r"(&req->result[0]), "r"(req->arg[0])
                     : "memory");
    req->result[1] = v;
    return FW_EXIT_OK;
}

static int cmd_store(volatile fw_request *req)
{
    uint32_t pc;
    __asm__ volatile(PC_OF_ACCESS("%0", "%1") "sw %2, 0(%3)\n\t.option pop"
                     : "=&r"(pc)
                     : "r"(&req->result[0]), "r"(req->arg[1]), "r"(req->arg[0])
                     : "memory");
    return FW_EXIT_OK;
}

static int cmd_illegal(volatile fw_request *req)
{
    uint32_t pc;
    __asm__ volatile(PC_OF_ACCESS("%0", "%1") ".4byte 0\n\t.option pop" : "=&r"(pc) : "r"(&req->result[0]) : "memory");
    return FW_EXIT_OK;
}

static int cmd_npu_kick(volatile fw_request *req)
{
    if (req->arg[2]) {
        const volatile fw_npu_region_desc *t = (const volatile fw_npu_region_desc *)(uintptr_t)req->arg[2];
        for (unsigned i = 0; i < FW_NPU_NREGIONS; i++)
            npurt_npu_set_region(i, t[i].base, t[i].size);
    }
    uint64_t t0 = fw_host_cycles();
    npurt_npu_start(req->arg[0], req->arg[1], req->arg[3]);
    /* host work overlapping the job: read-modify-write arg6 bytes at arg5 */
    volatile uint32_t *busy = (volatile uint32_t *)(uintptr_t)req->arg[5];
    for (uint32_t i = 0; i < req->arg[6] / 4; i++)
        busy[i] += 1;
    uint32_t st;
    if (req->arg[4] == 1) {
        __asm__ volatile("wfi");
        st = npurt_hal_read(NPURT_NPU_STATUS);
    } else {
        st = npurt_hal_wait();
    }
    uint64_t t1 = fw_host_cycles();
    req->result[0] = (uint32_t)t0;
    req->result[1] = (uint32_t)t1;
    req->result[2] = st;
    req->result[3] = (uint32_t)npurt_npu_last_cycles();
    req->result[4] = npurt_hal_read(NPURT_NPU_JOBS);
    return FW_EXIT_OK;
}

static int cmd_exit(volatile fw_request *req)
{
    const volatile char *text = (const volatile char *)(uintptr_t)req->arg[1];
    for (uint32_t i = 0; text && i < req->arg[0]; i++)
        fw_putc(text[i]);
    return (int)req->arg[2];
}

/* ---- FW_CMD_RUN_NPUB ------------------------------------------------------ */

typedef struct fw_npub_ctx {
    uint64_t step_start;
    uint32_t *step_cycles;    /* {lo, hi} per step, or NULL */
} fw_npub_ctx;

static void fw_npub_on_step(void *ud, uint32_t step, int done)
{
    fw_npub_ctx *c = ud;
    uint64_t now = fw_host_cycles();
    if (!done) {
        c->step_start = now;
    } else if (c->step_cycles) {
        c->step_cycles[2 * step] = (uint32_t)(now - c->step_start);
        c->step_cycles[2 * step + 1] = (uint32_t)((now - c->step_start) >> 32);
    }
}

/* The binary opened since boot. npurt_open validates a blob (header, section
 * table, every section's CRC, each host record) when the firmware first
 * meets it; a later request for the same blob at the same address and size
 * reuses the view. The blob lies in flash, which neither the host CPU nor the
 * NPU can write, so what was checked is what runs (docs/runtime.md). */
typedef struct fw_opened {
    uint32_t addr, size;
    int valid;
    npub_view v;
} fw_opened;

static int open_npub(volatile fw_request *req, fw_opened *o, npub_error *err)
{
    uint32_t addr = req->arg[FW_NPUB_ARG_BLOB], size = req->arg[FW_NPUB_ARG_BLOB_SIZE];
    if (o->valid && o->addr == addr && o->size == size)
        return 0;
    o->valid = 0;
    if (npurt_open((const void *)(uintptr_t)addr, size, &o->v, err))
        return -1;
    o->addr = addr, o->size = size, o->valid = 1;
    return 0;
}

static int cmd_run_npub(volatile fw_request *req, fw_opened *o)
{
    npub_error err;
    for (int i = 0; i < 8; i++)
        req->result[i] = 0;
    req->result[FW_NPUB_RES_STEP] = NPUB_NONE;
    if (open_npub(req, o, &err)) {
        printf("npurt: the binary at 0x%08x is rejected: %s\n", (unsigned)req->arg[FW_NPUB_ARG_BLOB], err.msg);
        req->result[FW_NPUB_RES_OFFSET] = err.offset;
        return req->result[FW_NPUB_RES_STATUS] = FW_EXIT_NPUB_BAD;
    }
    /* region 4 reads the flash original of a blob run from a DRAM copy; set on every request, as the
     * cached view outlives the request that opened it */
    o->v.flash = req->flash_blob ? (const uint8_t *)(uintptr_t)req->flash_blob : o->v.base;
    const npub_view *v = &o->v;
    fw_npub_ctx c = {0};
    /* NPU steps through the reference driver (rt/npurt_hal.h), as a customer firmware's */
    npurt_env env = {.npu_launch = npurt_npu_launch, .on_step = fw_npub_on_step, .step_ud = &c};
    env.region[NPUB_REGION_ARENA] = (uint8_t *)(uintptr_t)req->arg[FW_NPUB_ARG_ARENA];
    env.region_size[NPUB_REGION_ARENA] = req->arg[FW_NPUB_ARG_ARENA_SIZE];
    env.region[NPUB_REGION_INPUT] = (uint8_t *)(uintptr_t)req->arg[FW_NPUB_ARG_INPUT];
    env.region_size[NPUB_REGION_INPUT] = v->memory->region_bytes[NPUB_REGION_INPUT];
    env.region[NPUB_REGION_OUTPUT] = (uint8_t *)(uintptr_t)req->arg[FW_NPUB_ARG_OUTPUT];
    env.region_size[NPUB_REGION_OUTPUT] = v->memory->region_bytes[NPUB_REGION_OUTPUT];
    env.scratch = (void *)(uintptr_t)req->arg[FW_NPUB_ARG_SCRATCH];
    env.scratch_size = req->arg[FW_NPUB_ARG_SCRATCH_SIZE];
    /* the step-cycle table takes the end of the scratch area when it fits */
    uint32_t need = (v->memory->scratch_bytes + 7u) & ~7u, table = 8u * v->n_steps;
    if (env.scratch && env.scratch_size >= need + table && table) {
        c.step_cycles = (uint32_t *)((uint8_t *)env.scratch + need);
        req->result[FW_NPUB_RES_STEP_TABLE] = (uint32_t)(uintptr_t)c.step_cycles;
    }
    req->result[FW_NPUB_RES_STEPS] = v->n_steps;
    uint32_t jobs0 = npurt_hal_read(NPURT_NPU_JOBS);
    uint64_t t0 = fw_host_cycles();
    int rc = npurt_run(v, &env, &err);
    uint64_t t1 = fw_host_cycles();
    req->result[FW_NPUB_RES_CYCLES_LO] = (uint32_t)(t1 - t0);
    req->result[FW_NPUB_RES_CYCLES_HI] = (uint32_t)((t1 - t0) >> 32);
    req->result[FW_NPUB_RES_JOBS] = npurt_hal_read(NPURT_NPU_JOBS) - jobs0;
    if (rc) {
        printf("npurt: %s\n", err.msg);
        req->result[FW_NPUB_RES_STEP] = err.offset;
        return req->result[FW_NPUB_RES_STATUS] = err.offset == NPUB_NONE ? FW_EXIT_NPUB_ENV : FW_EXIT_NPUB_STEP;
    }
    return FW_EXIT_OK;
}

static int run_request(volatile fw_request *req, fw_opened *o)
{
    switch (req->command) {
    case FW_CMD_SELFCHECK: return cmd_selfcheck(req);
    case FW_CMD_LOOP: return cmd_loop(req);
    case FW_CMD_LOAD: return cmd_load(req);
    case FW_CMD_STORE: return cmd_store(req);
    case FW_CMD_HANG:
        for (;;)
            __asm__ volatile("");
    case FW_CMD_NPU_KICK: return cmd_npu_kick(req);
    case FW_CMD_ILLEGAL: return cmd_illegal(req);
    case FW_CMD_EXIT: return cmd_exit(req);
    case FW_CMD_WFI: __asm__ volatile("wfi"); return FW_EXIT_OK;
    case FW_CMD_RUN_NPUB: return cmd_run_npub(req, o);
    default:
        fw_puts("fw: unknown command ");
        fw_put_u32(req->command);
        fw_putc('\n');
        return FW_EXIT_BAD_COMMAND;
    }
}

static void check_request(volatile fw_request *req)
{
    if (req->magic != FW_REQ_MAGIC || req->version != FW_REQ_VERSION) {
        fw_puts("fw: bad request block at ");
        fw_put_hex((uint32_t)(uintptr_t)req);
        fw_putc('\n');
        fw_exit(FW_EXIT_BAD_REQUEST);
    }
}

/* One request per boot, or, when the host asks to be served (FW_CTL_SERVE),
 * one after another until one fails: the host places the next request while
 * the firmware waits. A failure always ends the run with its exit code. */
int main(void)
{
    if (fw_ctl_read(FW_CTL_MAGIC) != FW_CTL_MAGIC_VALUE)
        fw_exit(FW_EXIT_NO_SIM);
    fw_opened opened = {0};
    for (;;) {
        volatile fw_request *req = fw_request_get();
        if (!req) {
            static fw_request dflt = {.magic = FW_REQ_MAGIC, .version = FW_REQ_VERSION, .command = FW_CMD_SELFCHECK};
            req = &dflt;
        }
        check_request(req);
        req->status = FW_REQ_ST_RUNNING;
        int rc = run_request(req, &opened);
        req->status = rc == FW_EXIT_OK ? FW_REQ_ST_DONE : FW_REQ_ST_FAILED;
        if (rc != FW_EXIT_OK || !fw_serving())
            fw_exit(rc);
        fw_wait_next();
    }
}
