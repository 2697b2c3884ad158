/* The reference NPU driver (rt/npurt_hal.h). The hooks are weak so that a
 * board port's definitions replace them at link time. */
#include "rt/npurt_hal.h"

#define WEAK __attribute__((weak))

WEAK uint32_t npurt_hal_read(uint32_t off)
{
    return *(volatile uint32_t *)(uintptr_t)(NPURT_NPU_BASE + off);
}

WEAK void npurt_hal_write(uint32_t off, uint32_t value)
{
    *(volatile uint32_t *)(uintptr_t)(NPURT_NPU_BASE + off) = value;
}

WEAK uint32_t npurt_hal_bus_addr(const void *p)
{
    return (uint32_t)(uintptr_t)p;
}

WEAK uint32_t npurt_hal_wait(void)
{
    uint32_t st;
    do /* one read suffices on edge-v1 (the read waits); real hardware may loop */
        st = npurt_hal_read(NPURT_NPU_STATUS);
    while (st & NPURT_NPU_ST_BUSY);
    return st;
}

void npurt_npu_set_region(uint32_t region, uint32_t base, uint32_t size)
{
    npurt_hal_write(NPURT_NPU_REGION0 + 8u * region, base);
    npurt_hal_write(NPURT_NPU_REGION0 + 8u * region + 4u, size);
}

void npurt_npu_start(uint32_t cmd_base, uint32_t cmd_len, uint32_t doorbell)
{
    npurt_hal_write(NPURT_NPU_CMD_BASE, cmd_base);
    npurt_hal_write(NPURT_NPU_CMD_LEN, cmd_len);
    npurt_hal_write(NPURT_NPU_DOORBELL, doorbell);
}

uint64_t npurt_npu_last_cycles(void)
{
    uint32_t lo = npurt_hal_read(NPURT_NPU_CYCLES_LO);
    return (uint64_t)npurt_hal_read(NPURT_NPU_CYCLES_HI) << 32 | lo;
}

int npurt_npu_launch(void *ud, const npub_view *v, uint32_t first, uint32_t count, uint8_t *const region[4])
{
    (void)ud;
    uint32_t step = 0;
    while (step < v->n_steps && !(v->steps[step].kind == NPUB_STEP_NPU && v->steps[step].a == first))
        step++;
    for (uint32_t r = 0; r < NPUB_REGION_COUNT; r++)
        npurt_npu_set_region(r, npurt_hal_bus_addr(region[r]),
                             r == NPUB_REGION_CONST ? v->constants_size : v->memory->region_bytes[r]);
    /* the constants again, read from flash over its own bus even when region 0 is a DRAM copy */
    npurt_npu_set_region(NPURT_NPU_REGION_FLASH, npurt_hal_bus_addr(v->flash + (v->constants - v->base)),
                         v->constants_size);
    npurt_npu_start(npurt_hal_bus_addr(v->commands + first), count * 4u, step);
    uint32_t st = npurt_hal_wait();
    return st & NPURT_NPU_ST_DONE ? 0 : (int)(st | 0x100u);
}
