/* Memory map: validation, the host buffers behind ROM/flash/DRAM, guest
 * memory access for the NPU model, and blob placement. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "sim/sim_internal.h"

void sim_memmap_default(sim_memmap *m)
{
    m->rom = (sim_region){0x00000000u, 256u << 10};
    m->flash = (sim_region){0x20000000u, 16u << 20};
    m->dram = (sim_region){0x80000000u, 64u << 20};
    m->npu = (sim_region){0x40000000u, SIM_PAGE};
    m->ctl = (sim_region){0x40001000u, SIM_PAGE};
}

static const char *const region_names[5] = {"ROM", "flash", "DRAM", "NPU registers", "sim-control page"};

static void regions_of(const sim_memmap *m, sim_region out[5])
{
    out[0] = m->rom;
    out[1] = m->flash;
    out[2] = m->dram;
    out[3] = m->npu;
    out[4] = m->ctl;
}

npu_status sim_memmap_check(const sim_memmap *m, npu_err *err)
{
    sim_region r[5];
    regions_of(m, r);
    for (int i = 0; i < 5; i++) {
        if (r[i].size == 0 || r[i].base % SIM_PAGE || r[i].size % SIM_PAGE)
            return npu_fail(err, NPU_EUSER,
                            "memory map: %s at 0x%08x size 0x%x: base and size must be non-zero "
                            "multiples of %u",
                            region_names[i], r[i].base, r[i].size, SIM_PAGE);
        if ((uint64_t)r[i].base + r[i].size > (1ull << 32))
            return npu_fail(err, NPU_EUSER, "memory map: %s at 0x%08x size 0x%x runs past 4 GiB",
                            region_names[i], r[i].base, r[i].size);
        for (int j = 0; j < i; j++)
            if ((uint64_t)r[i].base < (uint64_t)r[j].base + r[j].size &&
                (uint64_t)r[j].base < (uint64_t)r[i].base + r[i].size)
                return npu_fail(err, NPU_EUSER, "memory map: %s [0x%08x, 0x%08llx) overlaps %s",
                                region_names[i], r[i].base,
                                (unsigned long long)r[i].base + r[i].size, region_names[j]);
    }
    return NPU_OK;
}

/* Guest RAM is mmap'ed rather than taken from npu_alloc: 81 MiB per context
 * that must read as zero, and anonymous pages stay free until touched, which
 * keeps parallel sweeps of many simulators cheap. */
npu_status sim_mem_setup(sim_ctx *s, npu_err *err)
{
    const sim_memmap *m = &s->cfg.map;
    s->mem[SIM_MEM_ROM] = (sim_mem){"ROM", m->rom, NULL, 0, UC_PROT_READ | UC_PROT_EXEC};
    s->mem[SIM_MEM_FLASH] = (sim_mem){"flash", m->flash, NULL, 0, UC_PROT_READ};
    s->mem[SIM_MEM_DRAM] = (sim_mem){"DRAM", m->dram, NULL, 1, UC_PROT_READ | UC_PROT_WRITE};
    for (int i = 0; i < SIM_NMEM; i++) {
        sim_mem *g = &s->mem[i];
        void *p = mmap(NULL, g->r.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return npu_fail(err, NPU_EINTERNAL, "sim: cannot allocate %u bytes of %s", g->r.size, g->name);
        g->host = p;
        uc_err ue = uc_mem_map_ptr(s->uc, g->r.base, g->r.size, g->prot, g->host);
        if (ue != UC_ERR_OK)
            return npu_fail(err, NPU_EINTERNAL, "sim: mapping %s at 0x%08x: %s", g->name, g->r.base,
                            uc_strerror(ue));
    }
    s->flash_next = m->flash.base;
    s->dram_next = s->dram_floor = m->dram.base;
    return NPU_OK;
}

void sim_mem_teardown(sim_ctx *s)
{
    for (int i = 0; i < SIM_NMEM; i++)
        if (s->mem[i].host) {
            munmap(s->mem[i].host, s->mem[i].r.size);
            s->mem[i].host = NULL;
        }
}

sim_mem *sim_mem_find(sim_ctx *s, uint32_t addr, size_t len)
{
    for (int i = 0; i < SIM_NMEM; i++) {
        sim_mem *g = &s->mem[i];
        if (g->host && addr >= g->r.base && addr - g->r.base <= g->r.size &&
            len <= g->r.size - (addr - g->r.base))
            return g;
    }
    return NULL;
}

uint8_t *sim_mem_ptr(sim_ctx *s, uint32_t addr, size_t len, int writable)
{
    sim_mem *g = sim_mem_find(s, addr, len);
    if (!g || (writable && !g->writable))
        return NULL;
    return g->host + (addr - g->r.base);
}

static npu_status range_fail(sim_ctx *s, uint32_t addr, size_t len, int write, npu_err *err)
{
    sim_mem *g = sim_mem_find(s, addr, len);
    if (g && write)
        return npu_fail(err, NPU_EUSER, "sim: write of %zu bytes at 0x%08x: %s is read-only", len, addr,
                        g->name);
    return npu_fail(err, NPU_EUSER, "sim: %s of %zu bytes at 0x%08x is outside ROM, flash and DRAM",
                    write ? "write" : "read", len, addr);
}

npu_status sim_mem_read(sim_ctx *s, uint32_t addr, void *dst, size_t len, npu_err *err)
{
    const uint8_t *p = sim_mem_ptr(s, addr, len, 0);
    if (!p)
        return range_fail(s, addr, len, 0, err);
    memcpy(dst, p, len);
    return NPU_OK;
}

npu_status sim_mem_write(sim_ctx *s, uint32_t addr, const void *src, size_t len, npu_err *err)
{
    uint8_t *p = sim_mem_ptr(s, addr, len, 1);
    if (!p)
        return range_fail(s, addr, len, 1, err);
    memcpy(p, src, len);
    return NPU_OK;
}

/* Bump allocation inside one region; the host side may write read-only
 * regions (that is how flash gets its contents). */
static npu_status place(sim_ctx *s, sim_mem *g, uint32_t *next, const void *data, size_t len, uint32_t align,
                        uint32_t *addr, npu_err *err)
{
    if (align == 0)
        align = 16;
    if (align & (align - 1))
        return npu_fail(err, NPU_EUSAGE, "sim: placement alignment %u is not a power of two", align);
    uint64_t at = ((uint64_t)*next + align - 1) & ~(uint64_t)(align - 1);
    uint64_t end = (uint64_t)g->r.base + g->r.size;
    if (at > end || len > end - at)
        return npu_fail(err, NPU_EUSER, "sim: %zu bytes do not fit in %s (%llu bytes free)", len, g->name,
                        (unsigned long long)(end > *next ? end - *next : 0));
    uint8_t *p = g->host + (at - g->r.base);
    if (data)
        memcpy(p, data, len);
    else
        memset(p, 0, len);
    *addr = (uint32_t)at;
    *next = (uint32_t)(at + len);
    s->placed = 1;
    return NPU_OK;
}

npu_status sim_place_flash(sim_ctx *s, const void *data, size_t len, uint32_t align, uint32_t *addr,
                           npu_err *err)
{
    return place(s, &s->mem[SIM_MEM_FLASH], &s->flash_next, data, len, align, addr, err);
}

npu_status sim_place_dram(sim_ctx *s, const void *data, size_t len, uint32_t align, uint32_t *addr,
                          npu_err *err)
{
    return place(s, &s->mem[SIM_MEM_DRAM], &s->dram_next, data, len, align, addr, err);
}

npu_status sim_place_request(sim_ctx *s, const fw_request *req, uint32_t *addr, npu_err *err)
{
    uint32_t at;
    npu_status st = sim_place_dram(s, req, sizeof *req, 64, &at, err);
    if (st != NPU_OK)
        return st;
    s->req_addr = at;
    if (addr)
        *addr = at;
    return NPU_OK;
}

void sim_set_request_addr(sim_ctx *s, uint32_t addr)
{
    s->req_addr = addr;
}
