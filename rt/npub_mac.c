/* Keyed tags of a .npub (rt/npub.h, docs/npub.md): computed by npucc
 * --sign-key, checked by the tools' --verify-key and by firmware through
 * npurt_verify_mac. */
#include "rt/npub.h"

#include <string.h>

#include "rt/npu_sha256.h"

void npub_mac_compute(const npub_view *v, const void *key, size_t key_size, uint32_t last_kind,
                      uint8_t out[NPUB_MAC_BYTES])
{
    npu_hmac_sha256_ctx c;
    npu_hmac_sha256_init(&c, key, key_size);
    npu_hmac_sha256_update(&c, "NPUBMAC1", 8);
    npu_hmac_sha256_update(&c, &v->header->target_hash, sizeof v->header->target_hash);
    npu_hmac_sha256_update(&c, v->header->target, sizeof v->header->target);
    for (uint32_t k = 1; k <= last_kind && k < NPUB_SEC_MAC; k++) {
        const npub_section *s = v->sec[k];
        if (!s)
            continue;
        uint32_t rec[2] = {k, s->size};
        npu_hmac_sha256_update(&c, rec, sizeof rec);
        npu_hmac_sha256_update(&c, v->base + s->offset, s->size);
    }
    npu_hmac_sha256_final(&c, out);
}

static int mac_fail(npub_error *err, uint32_t offset, const char *msg)
{
    if (err) {
        static const char pre[] = "byte ";
        char num[12];
        int n = 0;
        uint32_t u = offset;
        do
            num[n++] = (char)('0' + u % 10);
        while ((u /= 10) && n < 10);
        size_t o = 0, cap = sizeof err->msg - 1;
        for (size_t i = 0; pre[i] && o < cap; i++)
            err->msg[o++] = pre[i];
        while (n && o < cap)
            err->msg[o++] = num[--n];
        for (size_t i = 0; msg[i] && o < cap; i++)
            err->msg[o++] = msg[i];
        err->msg[o] = '\0';
        err->offset = offset;
    }
    return -1;
}

int npub_mac_verify(const npub_view *v, const void *key, size_t key_size, int full, npub_error *err)
{
    if (!v->mac)
        return mac_fail(err, 0, ": the binary is not signed (no mac section; compile with --sign-key)");
    if (full && !v->sec[NPUB_SEC_GRAPH] && !v->sec[NPUB_SEC_DEBUG])
        full = 0; /* a stripped copy: the device tag is all there is to check */
    uint8_t tag[NPUB_MAC_BYTES];
    npub_mac_compute(v, key, key_size, full ? NPUB_SEC_GRAPH : NPUB_SEC_MEMORY, tag);
    const uint8_t *want = full ? v->mac->full : v->mac->device;
    int ok = npu_bytes_equal_ct(tag, want, NPUB_MAC_BYTES);
    memset(tag, 0, sizeof tag);
    uint32_t at = v->sec[NPUB_SEC_MAC]->offset + (uint32_t)(want - (const uint8_t *)v->mac);
    return ok ? 0 : mac_fail(err, at, ": the keyed tag does not match (another key, or the file was changed)");
}
