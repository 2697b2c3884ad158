/* Firmware HAL over the simulator's MMIO pages (see fw_hal.h). The whole file
 * is target-only: in the native libnpurt.a build it compiles to nothing. */
#include "rt/fw_hal.h"

#ifdef __riscv

#include <stdio.h>

void fw_puts(const char *s)
{
    while (*s)
        fw_putc(*s++);
}

void fw_put_u32(uint32_t v)
{
    char buf[10];
    int n = 0;
    do {
        buf[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v);
    while (n)
        fw_putc(buf[--n]);
}

void fw_put_hex(uint32_t v)
{
    fw_puts("0x");
    for (int sh = 28; sh >= 0; sh -= 4)
        fw_putc("0123456789abcdef"[(v >> sh) & 0xfu]);
}

_Noreturn void fw_exit(int code)
{
    fw_ctl_write(FW_CTL_EXIT, (uint32_t)code);
    for (;;) /* the simulator stops at the write; a real SoC would reset here */
        ;
}

int fw_serving(void)
{
    return fw_ctl_read(FW_CTL_VERSION) >= 2u && fw_ctl_read(FW_CTL_SERVE) != 0;
}

/* The simulator stops at the write but finishes the translation block, so
 * the wfi follows at once: nothing of the next request is read before the
 * host has written it. The run resumes after the wfi. */
void fw_wait_next(void)
{
    __asm__ volatile("sw %1, 0(%0)\n\twfi" : : "r"(&__fw_ctl_base[FW_CTL_WAIT / 4u]), "r"(1u) : "memory");
}

/* picolibc's exit()/abort() end in _exit: make them end the run too. */
_Noreturn void _exit(int code);
_Noreturn void _exit(int code)
{
    fw_exit(code);
}

/* Reading LO latches HI in the simulator, so LO then HI is one consistent value. */
uint64_t fw_host_cycles(void)
{
    uint32_t lo = fw_ctl_read(FW_CTL_CYCLES_LO);
    return (uint64_t)fw_ctl_read(FW_CTL_CYCLES_HI) << 32 | lo;
}

uint64_t fw_host_insns(void)
{
    uint32_t lo = fw_ctl_read(FW_CTL_INSNS_LO);
    return (uint64_t)fw_ctl_read(FW_CTL_INSNS_HI) << 32 | lo;
}

/* The reference driver's register hooks (rt/npurt_hal.h) at the base
 * rt/fw.ld gives: the board port of the simulated SoC. */
uint32_t npurt_hal_read(uint32_t off)
{
    return __fw_npu_base[off / 4u];
}

void npurt_hal_write(uint32_t off, uint32_t value)
{
    __fw_npu_base[off / 4u] = value;
}

/* ---- picolibc stdio on the console register ---------------------------- */
static int console_put(char c, FILE *f)
{
    (void)f;
    fw_putc(c);
    return (unsigned char)c;
}

static FILE fw_console = FDEV_SETUP_STREAM(console_put, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdin = &fw_console;
FILE *const stdout = &fw_console;
FILE *const stderr = &fw_console;

#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int fw_hal_native_empty;
#endif
