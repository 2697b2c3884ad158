/* NumPy .npy files: format versions 1.0, 2.0 and 3.0, little-endian, C order.
 * The header (a Python dict literal with exactly 'descr', 'fortran_order'
 * and 'shape') is parsed strictly; every error names the file and the byte
 * offset. Writing is atomic: a temporary file in the same directory is
 * renamed over the target, so a failed write never leaves a partial file. */
#ifndef NPU_NPY_H
#define NPU_NPY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/alloc.h"
#include "common/file.h"
#include "common/status.h"

#define NPY_MAX_RANK 32

typedef enum npy_dtype {
    NPY_F32,  /* '<f4' */
    NPY_F64,  /* '<f8' (read for convenience; callers convert) */
    NPY_F16,  /* '<f2' */
    NPY_I64,  /* '<i8' */
    NPY_I32,  /* '<i4' */
    NPY_I16,  /* '<i2' */
    NPY_I8,   /* '|i1' */
    NPY_U8,   /* '|u1' */
    NPY_BOOL, /* '|b1' */
    NPY_DTYPE_COUNT
} npy_dtype;

/* The descr string ('<f4', ...) and element size of a dtype. */
const char *npy_dtype_descr(npy_dtype dt);
size_t npy_dtype_size(npy_dtype dt);

typedef struct npy_array {
    npy_dtype dtype;
    int rank;
    int64_t dims[NPY_MAX_RANK];
    size_t nbytes; /* element count * element size */
    void *data;    /* owned (never NULL after a successful read): npy_free */
} npy_array;

int64_t npy_numel(const npy_array *a);

/* Parses a whole .npy image in memory; name is used in messages only. */
npu_status npy_parse(const void *buf, size_t size, const char *name, npu_alloc alloc, npy_array *out,
                     npu_err *err);
/* Reads a file through npu_open_read (common/file.h): a regular file, or
 * with o->allow_special a FIFO or device, at most the read cap. o may be NULL. */
npu_status npy_read_ex(const char *path, const npu_read_opts *o, npu_alloc alloc, npy_array *out, npu_err *err);
npu_status npy_read(const char *path, npu_alloc alloc, npy_array *out, npu_err *err);
void npy_free(npu_alloc alloc, npy_array *a);

/* The NaN and infinite elements of a float array (f32, f64, f16; 0 for
 * other dtypes); *first is the flat index of the first, *first_value it. */
int64_t npy_count_nonfinite(const npy_array *a, int64_t *first, double *first_value);
/* "x.npy: 3 non-finite values (element 12 is nan)" into buf; false when there are none. */
bool npy_nonfinite_message(const npy_array *a, const char *name, char *buf, size_t cap);

/* The header numpy writes for (dt, dims): the 10- or 12-byte preamble and
 * the padded dict, a multiple of 64 bytes. Returns its length, or 0 when it
 * does not fit in cap (256 bytes always suffice for rank <= 8). */
size_t npy_header(npy_dtype dt, int rank, const int64_t *dims, char *buf, size_t cap);

/* A file written but not yet in place: npy_stage writes path's temporary,
 * npy_commit renames it over path, npy_discard deletes it. Staging every
 * output before committing any keeps a failed run from leaving some files. */
typedef struct npy_pending {
    char path[4096];
    char tmp[4096 + 16];
    bool active;
} npy_pending;

npu_status npy_stage(const char *path, npy_dtype dt, int rank, const int64_t *dims, const void *data,
                     npy_pending *p, npu_err *err);
npu_status npy_commit(npy_pending *p, npu_err *err);
void npy_discard(npy_pending *p);

/* Stage + commit. */
npu_status npy_write(const char *path, npy_dtype dt, int rank, const int64_t *dims, const void *data,
                     npu_err *err);

#endif
