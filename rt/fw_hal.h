/* Firmware hardware-abstraction layer: MMIO access to the sim-control page
 * and the NPU register block of the simulated SoC (register map: rt/fw_abi.h,
 * docs/simulator.md). Target-only: everything here is for rv32 builds
 * (__riscv); the native libnpurt.a build sees only the declarations guard.
 * The register base addresses come from rt/fw.ld (__fw_ctl_base,
 * __fw_npu_base) so the memory map is written down once for the firmware. */
#ifndef FW_HAL_H
#define FW_HAL_H

#include <stdint.h>

#include "rt/fw_abi.h"
#include "rt/npurt_hal.h"

/* The public driver's register numbers are the contract's (one map, two headers). */
_Static_assert(NPURT_NPU_CMD_BASE == FW_NPU_CMD_BASE && NPURT_NPU_CMD_LEN == FW_NPU_CMD_LEN &&
                   NPURT_NPU_REGION0 == FW_NPU_REGION_BASE(0) && NPURT_NPU_REGION0 + 4 == FW_NPU_REGION_SIZE(0) &&
                   NPURT_NPU_DOORBELL == FW_NPU_DOORBELL && NPURT_NPU_STATUS == FW_NPU_STATUS &&
                   NPURT_NPU_CYCLES_LO == FW_NPU_CYCLES_LO && NPURT_NPU_CYCLES_HI == FW_NPU_CYCLES_HI &&
                   NPURT_NPU_JOBS == FW_NPU_JOBS && NPURT_NPU_ID == FW_NPU_ID &&
                   NPURT_NPU_ST_DONE == FW_NPU_ST_DONE && NPURT_NPU_ST_BUSY == FW_NPU_ST_BUSY &&
                   NPURT_NPU_REGION_FLASH == FW_NPU_REGION_FLASH,
               "rt/npurt_hal.h and rt/fw_abi.h describe the same register block");

#ifdef __riscv

extern volatile uint32_t __fw_ctl_base[];
extern volatile uint32_t __fw_npu_base[];

static inline uint32_t fw_ctl_read(uint32_t off) { return __fw_ctl_base[off / 4u]; }
static inline void fw_ctl_write(uint32_t off, uint32_t v) { __fw_ctl_base[off / 4u] = v; }

/* Console: one character per write; the simulator buffers and flushes.
 * stdout/stderr of picolibc are wired to it too (fw_hal.c), so printf works. */
static inline void fw_putc(char c) { fw_ctl_write(FW_CTL_PUTC, (uint8_t)c); }
void fw_puts(const char *s);
void fw_put_u32(uint32_t v);  /* decimal, no printf needed */
void fw_put_hex(uint32_t v);  /* 0x%08x */

/* Ends the run with this exit code (the simulator stops at once). */
_Noreturn void fw_exit(int code);

/* Whether the host asks to serve several requests in one boot (sim-control
 * version 2 and FW_CTL_SERVE set). */
int fw_serving(void);
/* Answered: pause until the host has placed the next request (a real SoC
 * would sleep until a host interrupt). */
void fw_wait_next(void);

/* Host time as the simulator accounts it (guest rdcycle/rdtime are unusable). */
uint64_t fw_host_cycles(void);
uint64_t fw_host_insns(void);

/* The request block the simulator placed in DRAM, or NULL if there is none. */
static inline volatile fw_request *fw_request_get(void)
{
    return (volatile fw_request *)(uintptr_t)fw_ctl_read(FW_CTL_REQ_ADDR);
}

/* NPU: the reference driver (rt/npurt_hal.h); fw_hal.c supplies its
 * register hooks at __fw_npu_base, as a board port would. */

#endif /* __riscv */
#endif
