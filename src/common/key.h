/* A secret key in a file, for the keyed check of a .npub (npucc --sign-key,
 * npusim/npuref --verify-key; docs/npub.md). */
#ifndef NPU_KEY_H
#define NPU_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

/* The file's bytes, 1 to NPU_KEY_MAX of them (a binary key or a passphrase;
 * a trailing newline is part of it). Regular files only. Callers clear the
 * buffer after use. */
enum { NPU_KEY_MAX = 4096 };
npu_status npu_read_key(const char *path, uint8_t key[NPU_KEY_MAX], size_t *key_size, npu_err *err);

#endif
