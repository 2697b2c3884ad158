/* Firmware entry of the simulated SoC. picolibc's crt0 sets sp, gp, mstatus.FS,
 * copies .data and clears .bss, then calls main. main reads the request block
 * the simulator placed in DRAM (rt/fw_abi.h) and runs its command: the
 * self-check and a few diagnostics the simulator's tests use; libnpurt's
 * FW_CMD_RUN_NPUB joins here later. The run ends through FW_CTL_EXIT.
 * Target-only (a *_main.c file is not part of the native libnpurt.a). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "rt/fw_hal.h"

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
            fw_npu_set_region(i, t[i].base, t[i].size);
    }
    uint64_t t0 = fw_host_cycles();
    fw_npu_start(req->arg[0], req->arg[1], req->arg[3]);
    uint32_t st;
    if (req->arg[4] == 1) {
        __asm__ volatile("wfi");
        st = fw_npu_read(FW_NPU_STATUS);
    } else {
        st = fw_npu_wait();
    }
    uint64_t t1 = fw_host_cycles();
    req->result[0] = (uint32_t)t0;
    req->result[1] = (uint32_t)t1;
    req->result[2] = st;
    req->result[3] = (uint32_t)fw_npu_last_cycles();
    req->result[4] = fw_npu_read(FW_NPU_JOBS);
    return FW_EXIT_OK;
}

static int cmd_exit(volatile fw_request *req)
{
    const volatile char *text = (const volatile char *)(uintptr_t)req->arg[1];
    for (uint32_t i = 0; text && i < req->arg[0]; i++)
        fw_putc(text[i]);
    return (int)req->arg[2];
}

static int run_request(volatile fw_request *req)
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
    default:
        fw_puts("fw: unknown command ");
        fw_put_u32(req->command);
        fw_putc('\n');
        return FW_EXIT_BAD_COMMAND;
    }
}

int main(void)
{
    if (fw_ctl_read(FW_CTL_MAGIC) != FW_CTL_MAGIC_VALUE)
        fw_exit(FW_EXIT_NO_SIM);
    volatile fw_request *req = fw_request_get();
    if (!req) {
        static fw_request dflt = {.magic = FW_REQ_MAGIC, .version = FW_REQ_VERSION, .command = FW_CMD_SELFCHECK};
        req = &dflt;
    }
    if (req->magic != FW_REQ_MAGIC || req->version != FW_REQ_VERSION) {
        fw_puts("fw: bad request block at ");
        fw_put_hex((uint32_t)(uintptr_t)req);
        fw_putc('\n');
        fw_exit(FW_EXIT_BAD_REQUEST);
    }
    req->status = FW_REQ_ST_RUNNING;
    int rc = run_request(req);
    req->status = rc == FW_EXIT_OK ? FW_REQ_ST_DONE : FW_REQ_ST_FAILED;
    fw_exit(rc);
}
