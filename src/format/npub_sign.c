/* fmt_npub_sign (format/npub_sign.h): the tags are computed from the
 * sections' contents, not their layout, so the file is assembled once,
 * with the MAC section filled in. */
#include "format/npub_sign.h"

#include <string.h>

#include "common/key.h"
#include "format/format.h"
#include "rt/npub.h"

npu_status fmt_npub_sign(void **bin, size_t *size, const void *key, size_t key_size, npu_alloc alloc, npu_err *err)
{
    npub_view v;
    npub_error ne;
    if (npub_open(*bin, *size, &v, &ne))
        return npu_fail(err, NPU_EINTERNAL, "sign: the binary does not validate: %s", ne.msg);
    npub_mac mac = {.algorithm = NPUB_MAC_HMAC_SHA256};
    npub_mac_compute(&v, key, key_size, NPUB_SEC_MEMORY, mac.device);
    npub_mac_compute(&v, key, key_size, NPUB_SEC_GRAPH, mac.full);
    fmt_section secs[NPUB_SEC_KIND_MAX];
    int n = 0;
    for (uint32_t i = 0; i < v.header->section_count && n < NPUB_SEC_KIND_MAX - 1; i++) {
        const npub_section *s = &v.sections[i];
        if (s->kind != NPUB_SEC_MAC)
            secs[n++] = (fmt_section){(npub_section_kind)s->kind, v.base + s->offset, s->size};
    }
    secs[n++] = (fmt_section){NPUB_SEC_MAC, &mac, sizeof mac};
    char name[FMT_TARGET_NAME_CAP];
    fmt_npub_target_name(&v, name);
    void *out = NULL;
    size_t out_size = 0;
    npu_status st = fmt_npub_assemble(name, v.header->target_hash, v.header->flags, secs, n, alloc, &out, &out_size,
                                       err);
    memset(&mac, 0, sizeof mac);
    if (st != NPU_OK)
        return st;
    npu_free(alloc, *bin, *size);
    *bin = out;
    *size = out_size;
    return NPU_OK;
}

npu_status fmt_npub_verify_key(const char *path, const npub_view *v, const char *key_path, npu_err *err)
{
    uint8_t key[NPU_KEY_MAX];
    size_t key_size = 0;
    npub_error ne;
    npu_status st = npu_read_key(key_path, key, &key_size, err);
    if (st == NPU_OK && npub_mac_verify(v, key, key_size, 1, &ne))
        st = npu_fail(err, NPU_EUSER, "%s: %s", path, ne.msg);
    memset(key, 0, sizeof key);
    return st;
}
