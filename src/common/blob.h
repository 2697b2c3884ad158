/* A growable byte buffer with aligned appends: the constants section
 * (weights, bias, requant tables, LUTs) that the tiler and the emitter fill. */
#ifndef NPU_COMMON_BLOB_H
#define NPU_COMMON_BLOB_H

#include <stdbool.h>
#include <stdint.h>

#include "common/alloc.h"
#include "common/status.h"

typedef struct emit_blob {
    npu_alloc alloc;
    uint8_t *data;
    size_t size, cap;
    bool measure; /* offsets and size only, no bytes kept (a throw-away build's constants) */
} emit_blob;

void emit_blob_init(emit_blob *b, npu_alloc alloc);
/* A blob that only measures: every add gets the offset it would get in a
 * blob that keeps the bytes, and nothing is allocated or copied. */
void emit_blob_init_measure(emit_blob *b, npu_alloc alloc);
void emit_blob_free(emit_blob *b);
/* Appends size bytes (data may be NULL: zeros) at the next multiple of
 * align; *offset receives where. */
npu_status emit_blob_add(emit_blob *b, const void *data, size_t size, size_t align, size_t *offset, npu_err *err);

#endif
