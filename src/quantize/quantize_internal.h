/* Shared state of the quantize rewrite (src/quantize only). */
#ifndef NPU_QUANTIZE_INTERNAL_H
#define NPU_QUANTIZE_INTERNAL_H

#include "quantize/quantize.h"

typedef enum q_kind {
    Q_KIND_FLOAT,     /* no integer form here: runs in float between DQ and Q */
    Q_KIND_WEIGHTED,  /* Conv, Gemm, MatMul by a constant: per-channel weights, int32 bias */
    Q_KIND_BINARY,    /* Add/Sub/Mul/Min/Max: per-input requantization */
    Q_KIND_INHERIT,   /* MaxPool, reshapes: output keeps the input's parameters */
    Q_KIND_OWN_RANGE, /* average pools: output from its calibrated range */
    Q_KIND_CONCAT,    /* own range; inputs of other scales are requantized */
    Q_KIND_LUT,       /* any unary function of one int8 input: a 256-entry table */
} q_kind;

typedef struct q_ctx {
    ir_graph *g;
    const q_options *opts;
    npu_err *err;
    const float *lo, *hi; /* ranges per original tensor id */
    int n_ranges;
    int n_orig_tensors;
    ir_tensor **qver;     /* per original tensor id: its integer version */
} q_ctx;

q_kind q_classify(const ir_node *n);
ir_quant *q_quant_new(ir_graph *g, int axis, int count);
ir_quant *q_quant_tensor(ir_graph *g, float scale, int32_t zp);
bool q_same_quant(const ir_quant *a, const ir_quant *b);

/* rewrite.c: boundaries between the float and the integer graph */
npu_status q_new_int_tensor(q_ctx *c, const ir_tensor *like, ir_quant *q, ir_tensor **out);
npu_status q_int_version(q_ctx *c, ir_tensor *x, ir_unit unit, ir_tensor **out);
npu_status q_float_version(q_ctx *c, ir_tensor *x, ir_unit unit);
npu_status q_make_float_island(q_ctx *c, ir_node *n);
npu_status q_concat_inputs(q_ctx *c, ir_node *n);
npu_status q_binary_consts(q_ctx *c, ir_node *n);
/* weights.c */
npu_status q_weighted(q_ctx *c, ir_node *n);
/* lut.c: y is the node's original float output (for its name in messages) */
npu_status q_lut(q_ctx *c, ir_node *n, const ir_tensor *y);

#endif
