/* Whole-file I/O. Inputs are opened through one checked open: a regular
 * file only, unless the caller allows others (a FIFO, a device: read to its
 * end), and never more than a size cap, so /dev/zero or a FIFO nobody
 * writes cannot hang a tool (docs/cli.md, "Input limits"). Outputs are
 * written atomically (temp file + rename), so a failed run never leaves a
 * partial file behind. */
#ifndef NPU_FILE_H
#define NPU_FILE_H

#include <stdbool.h>
#include <stdio.h>

#include "common/alloc.h"
#include "common/status.h"

/* The default read-size cap: 2 GiB (protobuf's own limit for a model). */
#define NPU_READ_MAX_DEFAULT ((size_t)2 << 30)

typedef struct npu_read_opts {
    size_t max_bytes;   /* 0: NPU_READ_MAX_DEFAULT */
    bool allow_special; /* FIFOs, devices, sockets: read to the end, at most max_bytes (--allow-special-files) */
    bool regular_only;  /* the read has no --allow-special-files: its refusal does not suggest the option */
} npu_read_opts;

/* Opens path for reading without blocking on a FIFO; refuses a directory,
 * and anything but a regular file unless o->allow_special; *size is the
 * regular file's size (checked against the cap), or 0 for others. o may be
 * NULL (the defaults, for a read no option governs: the refusal then does not
 * suggest --allow-special-files). */
npu_status npu_open_read(const char *path, const npu_read_opts *o, FILE **f, size_t *size, npu_err *err);
/* The cap o gives (NPU_READ_MAX_DEFAULT for NULL or 0). */
size_t npu_read_cap(const npu_read_opts *o);

/* Reads the whole file into a new buffer (NUL after the end) through npu_open_read. */
npu_status npu_read_file_ex(const char *path, const npu_read_opts *o, npu_alloc alloc, void **data, size_t *size,
                            npu_err *err);
/* npu_read_file_ex with the defaults. */
npu_status npu_read_file(const char *path, npu_alloc alloc, void **data, size_t *size, npu_err *err);
void npu_free_file(npu_alloc alloc, void *data, size_t size);
/* Writes path.tmp.PID, then renames it over path. */
npu_status npu_write_file_atomic(const char *path, const void *data, size_t size, npu_err *err);

#endif
