/* Assembles .npub files from section payloads (the layout of rt/npub.h). */
#ifndef NPU_EMIT_NPUB_WRITE_H
#define NPU_EMIT_NPUB_WRITE_H

#include <stdint.h>

#include "common/alloc.h"
#include "common/status.h"
#include "rt/npub.h"

typedef struct emit_section {
    npub_section_kind kind;
    const void *data;
    size_t size;
} emit_section;

/* A complete file in a new buffer (free with npu_free(alloc, buf, size)). */
npu_status emit_npub_assemble(const char *target, uint64_t target_hash, uint32_t flags, const emit_section *secs,
                              int n_secs, npu_alloc alloc, void **out, size_t *out_size, npu_err *err);

#endif
