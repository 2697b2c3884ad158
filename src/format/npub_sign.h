/* Signing a .npub: the MAC section (rt/npub.h npub_mac) with HMAC-SHA256
 * tags under a key (npucc --sign-key FILE; docs/npub.md). */
#ifndef NPU_FORMAT_NPUB_SIGN_H
#define NPU_FORMAT_NPUB_SIGN_H

#include "common/alloc.h"
#include "common/status.h"

/* Replaces *bin (a complete file of *size bytes, freed with alloc) by the
 * same file with a MAC section (an older one is replaced). */
npu_status fmt_npub_sign(void **bin, size_t *size, const void *key, size_t key_size, npu_alloc alloc, npu_err *err);

/* --verify-key FILE: the full tag of the view (every section, the debug and
 * graph sections included) must hold under the key in key_path; errors
 * name path and the byte of the tag. */
struct npub_view;
npu_status fmt_npub_verify_key(const char *path, const struct npub_view *v, const char *key_path, npu_err *err);

#endif
