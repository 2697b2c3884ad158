#include "common/blob.h"

#include <string.h>

void emit_blob_init(emit_blob *b, npu_alloc alloc)
{
    memset(b, 0, sizeof *b);
    b->alloc = alloc;
}

void emit_blob_init_measure(emit_blob *b, npu_alloc alloc)
{
    emit_blob_init(b, alloc);
    b->measure = true;
}

void emit_blob_free(emit_blob *b)
{
    npu_free(b->alloc, b->data, b->cap);
    b->data = NULL;
    b->size = b->cap = 0;
}

npu_status emit_blob_add(emit_blob *b, const void *data, size_t size, size_t align, size_t *offset, npu_err *err)
{
    if (align == 0)
        align = 1;
    size_t at = (b->size + align - 1) / align * align;
    if (at + size < at)
        return npu_fail(err, NPU_EINTERNAL, "constant blob overflow");
    if (!b->measure && at + size > b->cap) {
        size_t ncap = b->cap ? b->cap : 4096;
        while (ncap < at + size)
            ncap *= 2;
        uint8_t *nd = npu_realloc(b->alloc, b->data, b->cap, ncap);
        if (!nd)
            return npu_fail(err, NPU_EINTERNAL, "out of memory for %zu bytes of constants", ncap);
        memset(nd + b->cap, 0, ncap - b->cap);
        b->data = nd;
        b->cap = ncap;
    }
    if (data && size && !b->measure)
        memcpy(b->data + at, data, size);
    b->size = at + size;
    *offset = at;
    return NPU_OK;
}
