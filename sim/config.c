/* The bridge from a loaded target description (src/target) to the
 * simulator's configuration: memory map, clocks, CPI. */
#include <string.h>

#include "sim/sim_internal.h"
#include "target/target.h"

npu_status sim_config_from_target(const tgt_target *t, sim_config *c, npu_err *err)
{
    if (strncmp(t->host_isa ? t->host_isa : "", "rv32", 4) != 0)
        return npu_fail(err, NPU_EUSER, "%s: host isa '%s': the simulator's host CPU is RV32", t->file,
                        t->host_isa ? t->host_isa : "");
    sim_region *dst[TGT_MEM_COUNT];
    dst[TGT_MEM_ROM] = &c->map.rom;
    dst[TGT_MEM_FLASH] = &c->map.flash;
    dst[TGT_MEM_DRAM] = &c->map.dram;
    dst[TGT_MEM_NPU_REGS] = &c->map.npu;
    dst[TGT_MEM_SIM_CTRL] = &c->map.ctl;
    for (int m = 0; m < TGT_MEM_COUNT; m++) {
        tgt_region r = t->mem[m];
        if (r.base > UINT32_MAX || r.size > UINT32_MAX || r.base + r.size > (1ull << 32))
            return npu_fail(err, NPU_EUSER, "%s: memory_map.%s [0x%llx, 0x%llx) does not fit 32-bit addresses",
                            t->file, tgt_mem_name((tgt_mem)m), (unsigned long long)r.base,
                            (unsigned long long)(r.base + r.size));
        *dst[m] = (sim_region){(uint32_t)r.base, (uint32_t)r.size};
    }
    c->host_hz = t->host_clock_mhz * 1e6;
    c->host_cpi = t->host_cpi;
    c->npu_hz = t->npu_clock_mhz * 1e6;
    npu_status st = sim_memmap_check(&c->map, err);
    return st == NPU_OK ? NPU_OK : npu_err_prefix(err, "%s", t->file);
}
