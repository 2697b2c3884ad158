/* Shared helpers of shape inference (src/ir/shape*.c); not for other modules.
 * Every helper that can fail fills the error with "node 'NAME' (Op): ...". */
#ifndef NPU_IR_SHAPE_INTERNAL_H
#define NPU_IR_SHAPE_INTERNAL_H

#include "ir/ir.h"

/* Largest element count of any tensor: keeps byte sizes far from overflow. */
#define SHAPE_MAX_NUMEL ((int64_t)1 << 40)
/* Longest constant vector read as a parameter (shapes, axes, pads, ...). */
#define SHAPE_MAX_PARAMS 64

typedef struct sctx {
    ir_graph *g;
    ir_node *n;
    npu_err *err;
} sctx;

npu_status sh_fail(sctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "[1,3,224,224]" into buf. */
const char *sh_fmt(char *buf, size_t size, int rank, const int64_t *dims);

/* Input i or NULL (omitted, or past the end). */
ir_tensor *sh_in(const ir_node *n, int i);
/* A present input with a known shape, or an error naming what is missing. */
npu_status sh_need(sctx *c, int i, ir_tensor **out);
/* Sets output i (when present) after checking rank, dims and size. */
npu_status sh_set(sctx *c, int i, ir_dtype dt, int rank, const int64_t *dims);
npu_status sh_same_dtype(sctx *c, const ir_tensor *a, const ir_tensor *b);
/* Normalizes an axis in [-rank, rank) (or [-rank, rank] when inclusive). */
npu_status sh_axis(sctx *c, const char *what, int64_t axis, int rank, bool inclusive, int64_t *out);

/* Integer values of a constant input (i64 or i32, at most one dimension). */
npu_status sh_const_ints(sctx *c, const ir_tensor *t, const char *what, int64_t *out, int max, int *count);
/* Float values of a constant input (f32 or f16). */
npu_status sh_const_floats(sctx *c, const ir_tensor *t, const char *what, float *out, int max, int *count);
/* A parameter given as attribute `attr` or else as constant input `idx`.
 * *count is -1 when neither is given (an empty input counts as absent). */
npu_status sh_ints_param(sctx *c, const char *attr, int idx, int64_t *out, int max, int *count);

/* Numpy (multidirectional) broadcast of two shapes into out. */
npu_status sh_broadcast(sctx *c, int ra, const int64_t *a, int rb, const int64_t *b, int *rank, int64_t *out);

/* Data movement and shape ops (src/ir/shape_data.c). */
npu_status sh_infer_data(sctx *c, bool *handled);

#endif
