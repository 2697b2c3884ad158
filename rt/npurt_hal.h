/* The reference NPU driver: the register interface of docs/simulator.md
 * ("NPU register block": region registers, command pointer, doorbell,
 * status) and a launch for npurt_env.npu_launch / npurt_model.
 *
 * A board port replaces only what differs. The hooks below are weak
 * symbols: define one of the same name in the firmware and the linker takes
 * it instead (a register block elsewhere, an address translation between the
 * CPU's and the NPU's view of memory, an interrupt instead of the STATUS
 * read). Without a port the block is at NPURT_NPU_BASE (edge-v1: 0x40000000;
 * -DNPURT_NPU_BASE=... when the library is built to move it). */
#ifndef NPURT_HAL_H
#define NPURT_HAL_H

#include <stdint.h>

#include "rt/npub.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef NPURT_NPU_BASE
#define NPURT_NPU_BASE 0x40000000u
#endif

/* Register offsets (the same numbers as rt/fw_abi.h's FW_NPU_*). */
enum {
    NPURT_NPU_ID = 0x000u,        /* RO 0x3155504E ("NPU1") */
    NPURT_NPU_VERSION = 0x004u,   /* RO 1 */
    NPURT_NPU_CMD_BASE = 0x010u,  /* RW bus address of the command words */
    NPURT_NPU_CMD_LEN = 0x014u,   /* RW their length in bytes */
    NPURT_NPU_REGION0 = 0x040u,   /* RW REGION_BASE(i) = 0x040 + 8i, REGION_SIZE(i) = 0x044 + 8i */
    NPURT_NPU_DOORBELL = 0x080u,  /* WO starts a job; the value is passed to the NPU (the step index) */
    NPURT_NPU_STATUS = 0x084u,    /* RO bit 0 BUSY, bit 1 DONE */
    NPURT_NPU_CYCLES_LO = 0x090u, /* RO NPU cycles of the last job; LO latches HI */
    NPURT_NPU_CYCLES_HI = 0x094u,
    NPURT_NPU_JOBS = 0x0A0u,      /* RO jobs started */
};
#define NPURT_NPU_ST_BUSY 0x1u
#define NPURT_NPU_ST_DONE 0x2u
/* region 4 (0-3 are npub_region's): the constants section in flash, at region 0's offsets */
#define NPURT_NPU_REGION_FLASH 4u

/* ---- hooks (weak; a board port overrides what differs) ------------------ */

/* 32-bit access to the register at byte offset off. */
uint32_t npurt_hal_read(uint32_t off);
void npurt_hal_write(uint32_t off, uint32_t value);
/* The NPU's bus address of a CPU pointer (identity by default). */
uint32_t npurt_hal_bus_addr(const void *p);
/* Waits for the job started last and returns STATUS. The default polls
 * STATUS until BUSY clears (on edge-v1 the read itself waits). */
uint32_t npurt_hal_wait(void);

/* ---- the driver ------------------------------------------------------------ */

void npurt_npu_set_region(uint32_t region, uint32_t base, uint32_t size);
/* Programs CMD_BASE and CMD_LEN and rings the doorbell. */
void npurt_npu_start(uint32_t cmd_base, uint32_t cmd_len, uint32_t doorbell);
uint64_t npurt_npu_last_cycles(void);

/* One NPU step of a binary, as npurt_env.npu_launch (ud unused): regions
 * 0-3 from region[] with the binary's sizes, region 4 the constants section
 * of the blob's flash image (v->flash), the command words [first, first +
 * count) of its COMMANDS section, the doorbell = the step's index; 0 when
 * STATUS says DONE, else 0x100 | STATUS. */
int npurt_npu_launch(void *ud, const npub_view *v, uint32_t first, uint32_t count, uint8_t *const region[4]);

#ifdef __cplusplus
}
#endif
#endif
