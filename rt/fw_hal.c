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

void fw_npu_set_region(unsigned region, uint32_t base, uint32_t size)
{
    fw_npu_write(FW_NPU_REGION_BASE(region), base);
    fw_npu_write(FW_NPU_REGION_SIZE(region), size);
}

void fw_npu_start(uint32_t cmd_base, uint32_t cmd_len, uint32_t doorbell)
{
    fw_npu_write(FW_NPU_CMD_BASE, cmd_base);
    fw_npu_write(FW_NPU_CMD_LEN, cmd_len);
    fw_npu_write(FW_NPU_DOORBELL, doorbell);
}

uint32_t fw_npu_wait(void)
{
    uint32_t st;
    do /* one read suffices in the simulator; the loop is what hardware needs */
        st = fw_npu_read(FW_NPU_STATUS);
    while (st & FW_NPU_ST_BUSY);
    return st;
}

uint64_t fw_npu_last_cycles(void)
{
    uint32_t lo = fw_npu_read(FW_NPU_CYCLES_LO);
    return (uint64_t)fw_npu_read(FW_NPU_CYCLES_HI) << 32 | lo;
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
