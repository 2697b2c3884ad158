/* Whole-file I/O. Outputs are written atomically (temp file + rename), so
 * a failed run never leaves a partial file behind. */
#ifndef NPU_FILE_H
#define NPU_FILE_H

#include "common/alloc.h"
#include "common/status.h"

/* Reads the whole file into a new buffer (16-byte aligned, NUL after the end). */
npu_status npu_read_file(const char *path, npu_alloc alloc, void **data, size_t *size, npu_err *err);
void npu_free_file(npu_alloc alloc, void *data, size_t size);
/* Writes path.tmp.PID, then renames it over path. */
npu_status npu_write_file_atomic(const char *path, const void *data, size_t size, npu_err *err);

#endif
