/* A small, strict ELF32 loader for the firmware: little-endian RISC-V
 * executables, PT_LOAD segments loaded at their physical (load) address as a
 * boot ROM image would be. Every field that is an offset or a size is checked
 * against the file before use; a message names the file and the byte offset
 * of the field that is wrong. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "sim/sim_internal.h"

enum {
    EHDR_SIZE = 52,
    PHDR_SIZE = 32,
    SHDR_SIZE = 40,
    ET_EXEC = 2,
    EM_RISCV = 243,
    PT_LOAD = 1,
    PT_DYNAMIC = 2,
    PT_INTERP = 3,
    PF_X = 1,
    PF_W = 2,
    EF_RISCV_RVC = 0x1,
    EF_RISCV_FLOAT_ABI = 0x6,
    EF_RISCV_FLOAT_ABI_DOUBLE = 0x4,
    EF_RISCV_RVE = 0x8,
    MAX_PHNUM = 64,
};

typedef struct phdr {
    uint32_t type, offset, vaddr, paddr, filesz, memsz, flags, align;
    size_t at; /* file offset of this program header */
} phdr;

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

#define FAIL(off, ...) elf_fail(err, name, (size_t)(off), __VA_ARGS__)
static npu_status elf_fail(npu_err *err, const char *name, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static npu_status elf_fail(npu_err *err, const char *name, size_t off, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return npu_fail(err, NPU_EUSER, "%s: byte %zu: %s", name, off, what);
}

/* The RAM-backed region holding all of [a, a+n), or -1; *touch names a
 * region the range overlaps at all (for the message). */
static int region_of(const sim_memmap *m, uint32_t a, uint32_t n, const char **touch)
{
    const sim_region r[5] = {m->rom, m->flash, m->dram, m->npu, m->ctl};
    static const char *const names[5] = {"ROM", "flash", "DRAM", "the NPU register block", "the sim-control page"};
    uint64_t lo = a, hi = (uint64_t)a + n;
    *touch = NULL;
    for (int i = 0; i < 5; i++) {
        uint64_t b = r[i].base, e = (uint64_t)r[i].base + r[i].size;
        if (i < 3 && lo >= b && hi <= e)
            return i;
        if (lo < e && b < hi && !*touch)
            *touch = names[i];
    }
    return -1;
}

static npu_status check_range(const sim_memmap *m, const phdr *p, int i, uint32_t a, const char *which,
                              const char *name, npu_err *err, int *where)
{
    const char *touch;
    *where = region_of(m, a, p->memsz, &touch);
    if (*where >= 0)
        return NPU_OK;
    size_t field = p->at + (which[0] == 'v' ? 8 : 12);
    if (touch)
        return FAIL(field, "segment %d %s range [0x%08x, 0x%08llx) is not inside one memory (it overlaps %s)", i,
                    which, a, (unsigned long long)a + p->memsz, touch);
    return FAIL(field, "segment %d %s range [0x%08x, 0x%08llx) is outside the memory map", i, which, a,
                (unsigned long long)a + p->memsz);
}

static int overlaps(uint32_t a, uint32_t an, uint32_t b, uint32_t bn)
{
    return an && bn && (uint64_t)a < (uint64_t)b + bn && (uint64_t)b < (uint64_t)a + an;
}

static npu_status check_header(const uint8_t *d, size_t len, const char *name, npu_err *err)
{
    if (len < 4 || memcmp(d, "\x7f" "ELF", 4) != 0)
        return FAIL(0, "not an ELF file (bad magic)");
    if (len < EHDR_SIZE)
        return FAIL(len, "truncated ELF header: the file has %zu bytes, the header needs %d", len, EHDR_SIZE);
    if (d[4] != 1)
        return FAIL(4, "ELF class %u, expected 1 (ELF32): the host CPU is rv32", d[4]);
    if (d[5] != 1)
        return FAIL(5, "data encoding %u, expected 1 (little-endian)", d[5]);
    if (d[6] != 1)
        return FAIL(6, "ELF version %u, expected 1", d[6]);
    if (rd16(d + 16) != ET_EXEC)
        return FAIL(16, "e_type %u, expected 2 (ET_EXEC): link the firmware as a static executable", rd16(d + 16));
    if (rd16(d + 18) != EM_RISCV)
        return FAIL(18, "e_machine %u, expected 243 (RISC-V)", rd16(d + 18));
    if (rd32(d + 20) != 1)
        return FAIL(20, "e_version %u, expected 1", rd32(d + 20));
    uint32_t flags = rd32(d + 36);
    if (flags & EF_RISCV_RVE)
        return FAIL(36, "e_flags 0x%x: RV32E code, the host CPU is rv32imafc", flags);
    if ((flags & EF_RISCV_FLOAT_ABI) >= EF_RISCV_FLOAT_ABI_DOUBLE)
        return FAIL(36, "e_flags 0x%x: double/quad float ABI needs the D/Q extension, the host CPU is rv32imafc",
                    flags);
    if (rd16(d + 40) != EHDR_SIZE)
        return FAIL(40, "e_ehsize %u, expected %d", rd16(d + 40), EHDR_SIZE);
    return NPU_OK;
}

/* Section headers are not used, but their table must lie inside the file. */
static npu_status check_shdrs(const uint8_t *d, size_t len, const char *name, npu_err *err)
{
    uint32_t shoff = rd32(d + 32);
    uint16_t shentsize = rd16(d + 46), shnum = rd16(d + 48), shstrndx = rd16(d + 50);
    if (shoff == 0 || shnum == 0)
        return NPU_OK;
    if (shentsize != SHDR_SIZE)
        return FAIL(46, "e_shentsize %u, expected %d", shentsize, SHDR_SIZE);
    if (shoff > len || (uint64_t)shnum * SHDR_SIZE > len - shoff)
        return FAIL(32, "section header table [%u, %llu) runs past the end of the file (%zu bytes)", shoff,
                    (unsigned long long)shoff + (uint64_t)shnum * SHDR_SIZE, len);
    if (shstrndx != 0 && shstrndx >= shnum)
        return FAIL(50, "e_shstrndx %u is not below e_shnum %u", shstrndx, shnum);
    return NPU_OK;
}

static npu_status read_phdrs(const uint8_t *d, size_t len, const char *name, phdr *ph, unsigned *n, npu_err *err)
{
    uint32_t phoff = rd32(d + 28);
    uint16_t phentsize = rd16(d + 42), phnum = rd16(d + 44);
    if (phnum == 0)
        return FAIL(44, "e_phnum 0: no program headers, nothing to load");
    if (phnum > MAX_PHNUM)
        return FAIL(44, "e_phnum %u: more than %d program headers", phnum, MAX_PHNUM);
    if (phentsize != PHDR_SIZE)
        return FAIL(42, "e_phentsize %u, expected %d", phentsize, PHDR_SIZE);
    if (phoff < EHDR_SIZE || phoff > len || (uint64_t)phnum * PHDR_SIZE > len - phoff)
        return FAIL(28, "program header table [%u, %llu) is not inside the file (%zu bytes)", phoff,
                    (unsigned long long)phoff + (uint64_t)phnum * PHDR_SIZE, len);
    for (unsigned i = 0; i < phnum; i++) {
        const uint8_t *q = d + phoff + (size_t)i * PHDR_SIZE;
        ph[i] = (phdr){rd32(q), rd32(q + 4), rd32(q + 8), rd32(q + 12), rd32(q + 16),
                       rd32(q + 20), rd32(q + 24), rd32(q + 28), phoff + (size_t)i * PHDR_SIZE};
    }
    *n = phnum;
    return NPU_OK;
}

static npu_status check_segment(const sim_memmap *m, const phdr *p, int i, size_t len, const char *name,
                                npu_err *err)
{
    if (p->type == PT_DYNAMIC || p->type == PT_INTERP)
        return FAIL(p->at, "segment %d is %s: the firmware must be linked statically", i,
                    p->type == PT_DYNAMIC ? "PT_DYNAMIC" : "PT_INTERP");
    if (p->type != PT_LOAD)
        return NPU_OK;
    if (p->offset > len || p->filesz > len - p->offset)
        return FAIL(p->at + 4, "segment %d file range [%u, %llu) runs past the end of the file (%zu bytes)", i,
                    p->offset, (unsigned long long)p->offset + p->filesz, len);
    if (p->filesz > p->memsz)
        return FAIL(p->at + 16, "segment %d p_filesz %u is larger than p_memsz %u", i, p->filesz, p->memsz);
    if (p->align > 1 && (p->align & (p->align - 1)))
        return FAIL(p->at + 28, "segment %d p_align %u is not a power of two", i, p->align);
    if (p->memsz == 0)
        return NPU_OK;
    int wv, wp;
    npu_status st = check_range(m, p, i, p->vaddr, "vaddr", name, err, &wv);
    if (st == NPU_OK)
        st = check_range(m, p, i, p->paddr, "paddr", name, err, &wp);
    if (st != NPU_OK)
        return st;
    if ((p->flags & PF_X) && wv != SIM_MEM_ROM)
        return FAIL(p->at + 24, "segment %d is executable but runs at 0x%08x outside ROM, the only executable "
                    "memory", i, p->vaddr);
    if ((p->flags & PF_W) && wv != SIM_MEM_DRAM)
        return FAIL(p->at + 24, "segment %d is writable but runs at 0x%08x outside DRAM", i, p->vaddr);
    return NPU_OK;
}

npu_status sim_elf_check(const uint8_t *d, size_t len, const char *name, const sim_memmap *m, sim_fw_info *info,
                         npu_err *err)
{
    phdr ph[MAX_PHNUM];
    unsigned n = 0;
    npu_status st = check_header(d, len, name, err);
    if (st == NPU_OK)
        st = check_shdrs(d, len, name, err);
    if (st == NPU_OK)
        st = read_phdrs(d, len, name, ph, &n, err);
    if (st != NPU_OK)
        return st;
    sim_fw_info fi = {.entry = rd32(d + 24), .ram_end = m->dram.base, .rom_end = m->rom.base};
    int entry_ok = 0;
    for (unsigned i = 0; i < n; i++) {
        const phdr *p = &ph[i];
        if ((st = check_segment(m, p, (int)i, len, name, err)) != NPU_OK)
            return st;
        if (p->type != PT_LOAD || p->memsz == 0)
            continue;
        fi.nload++;
        for (unsigned j = 0; j < i; j++) {
            const phdr *q = &ph[j];
            if (q->type != PT_LOAD)
                continue;
            if (overlaps(p->paddr, p->memsz, q->paddr, q->memsz))
                return FAIL(p->at + 12, "segment %u paddr range [0x%08x, 0x%08llx) overlaps segment %u", i,
                            p->paddr, (unsigned long long)p->paddr + p->memsz, j);
            if (overlaps(p->vaddr, p->memsz, q->vaddr, q->memsz))
                return FAIL(p->at + 8, "segment %u vaddr range [0x%08x, 0x%08llx) overlaps segment %u", i,
                            p->vaddr, (unsigned long long)p->vaddr + p->memsz, j);
        }
        if ((p->flags & PF_X) && fi.entry >= p->vaddr && fi.entry - p->vaddr < p->filesz)
            entry_ok = 1;
        uint64_t vend = (uint64_t)p->vaddr + p->memsz, pend = (uint64_t)p->paddr + p->filesz;
        if (p->vaddr >= m->dram.base && vend > fi.ram_end)
            fi.ram_end = (uint32_t)vend;
        if (p->paddr >= m->rom.base && pend <= (uint64_t)m->rom.base + m->rom.size && pend > fi.rom_end)
            fi.rom_end = (uint32_t)pend;
    }
    if (fi.nload == 0)
        return FAIL(44, "no PT_LOAD segment with contents");
    if (!entry_ok)
        return FAIL(24, "e_entry 0x%08x is not inside the file contents of an executable segment", fi.entry);
    if (fi.entry % 2)
        return FAIL(24, "e_entry 0x%08x is not 2-byte aligned", fi.entry);
    if (info)
        *info = fi;
    return NPU_OK;
}

npu_status sim_load_elf(sim_ctx *s, const uint8_t *d, size_t len, const char *name, npu_err *err)
{
    if (s->placed)
        return npu_fail(err, NPU_EUSAGE, "%s: load the firmware before placing data", name);
    sim_fw_info fi;
    npu_status st = sim_elf_check(d, len, name, &s->cfg.map, &fi, err);
    if (st != NPU_OK)
        return st;
    uint32_t phoff = rd32(d + 28);
    for (unsigned i = 0; i < rd16(d + 44); i++) {
        const uint8_t *q = d + phoff + (size_t)i * PHDR_SIZE;
        uint32_t type = rd32(q), off = rd32(q + 4), paddr = rd32(q + 12), filesz = rd32(q + 16),
                 memsz = rd32(q + 20);
        if (type != PT_LOAD || memsz == 0)
            continue;
        /* checked above: the whole range lies in one RAM-backed region */
        uint8_t *dst = sim_mem_ptr(s, paddr, memsz, 0);
        if (!dst)
            return npu_fail(err, NPU_EINTERNAL, "%s: segment %u: load address not mapped", name, i);
        memcpy(dst, d + off, filesz);
        memset(dst + filesz, 0, memsz - filesz);
    }
    s->fw = fi;
    s->have_fw = 1;
    s->dram_next = s->dram_floor = fi.ram_end;
    s->bc_used = 0; /* new code: the instruction counts of old blocks are stale */
    if (s->bc)
        memset(s->bc, 0, s->bc_cap * sizeof *s->bc);
    /* No block translated from the old code may run. (Not UC_CTL_TB_FLUSH: in
     * Unicorn 2.0.1 it touches the whole 1 GiB translation buffer.) */
    if (s->ran)
        uc_ctl_remove_cache(s->uc, s->cfg.map.rom.base, (uint64_t)s->cfg.map.rom.base + s->cfg.map.rom.size);
    return NPU_OK;
}

npu_status sim_load_elf_file(sim_ctx *s, const char *path, npu_err *err)
{
    FILE *f;
    size_t regular;
    npu_status ost = npu_open_read(path, NULL, &f, &regular, err); /* a regular file, not a FIFO */
    if (ost != NPU_OK)
        return ost;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    /* a firmware image bigger than ROM + DRAM cannot be meant for this map */
    uint64_t cap = (uint64_t)s->cfg.map.rom.size + s->cfg.map.dram.size;
    npu_status st = NPU_OK;
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0)
        st = npu_fail(err, NPU_EUSER, "%s: cannot determine the file size", path);
    else if ((uint64_t)size > cap)
        st = npu_fail(err, NPU_EUSER, "%s: %ld bytes, larger than ROM and DRAM together", path, size);
    uint8_t *buf = NULL;
    if (st == NPU_OK && size > 0 && !(buf = npu_malloc(s->cfg.alloc, (size_t)size)))
        st = npu_fail(err, NPU_EINTERNAL, "%s: out of memory", path);
    if (st == NPU_OK && size > 0 && fread(buf, 1, (size_t)size, f) != (size_t)size)
        st = npu_fail(err, NPU_EUSER, "%s: read error", path);
    fclose(f);
    if (st == NPU_OK)
        st = sim_load_elf(s, buf ? buf : (const uint8_t *)"", buf ? (size_t)size : 0, path, err);
    npu_free(s->cfg.alloc, buf, buf ? (size_t)size : 0);
    return st;
}

const sim_fw_info *sim_fw(const sim_ctx *s)
{
    return s->have_fw ? &s->fw : NULL;
}
