#include "format/format.h"

#include <string.h>

static size_t align_up(size_t v)
{
    return (v + NPUB_ALIGN - 1) & ~(size_t)(NPUB_ALIGN - 1);
}

npu_status fmt_npub_assemble(const char *target, uint64_t target_hash, uint32_t flags, const fmt_section *secs,
                              int n_secs, npu_alloc alloc, void **out, size_t *out_size, npu_err *err)
{
    npub_header h;
    memset(&h, 0, sizeof h);
    if (strlen(target) >= sizeof h.target)
        return npu_fail(err, NPU_EUSER, "target name '%s' longer than %zu characters", target,
                        sizeof h.target - 1);
    size_t table = align_up(sizeof h);
    size_t pos = align_up(table + sizeof(npub_section) * (size_t)n_secs);
    for (int i = 0; i < n_secs; i++)
        pos = align_up(pos + secs[i].size);
    if (pos > 0xffffffffu)
        return npu_fail(err, NPU_EUSER, "binary of %zu bytes exceeds the 4 GiB format limit", pos);
    unsigned char *buf = npu_malloc(alloc, pos);
    if (!buf)
        return npu_fail(err, NPU_EINTERNAL, "out of memory for a %zu-byte binary", pos);
    memset(buf, 0, pos);
    npub_section *st = (npub_section *)(buf + table);
    size_t at = align_up(table + sizeof(npub_section) * (size_t)n_secs);
    for (int i = 0; i < n_secs; i++) {
        st[i].kind = secs[i].kind;
        st[i].offset = (uint32_t)at;
        st[i].size = (uint32_t)secs[i].size;
        if (secs[i].size)
            memcpy(buf + at, secs[i].data, secs[i].size);
        st[i].crc = npub_crc32(0, buf + at, secs[i].size);
        at = align_up(at + secs[i].size);
    }
    h.magic = NPUB_MAGIC;
    h.version = NPUB_VERSION;
    h.header_size = sizeof h;
    h.file_size = (uint32_t)pos;
    h.flags = flags;
    h.target_hash = target_hash;
    memcpy(h.target, target, strlen(target));
    h.section_count = (uint32_t)n_secs;
    h.section_table = (uint32_t)table;
    h.header_crc = npub_crc32(0, &h, sizeof h);
    memcpy(buf, &h, sizeof h);
    *out = buf;
    *out_size = pos;
    return NPU_OK;
}
