/* Post-training quantization: calibration statistics (through the float
 * reference executor's observer hook) and the rewrite of a float graph into
 * the quantized graph of docs/numerics.md:
 *   - activations int8 asymmetric per tensor (scale, zero point);
 *   - Conv/Gemm weights int8 (or int4, packed) symmetric per output channel;
 *   - bias int32 at scale in_scale * w_scale[c];
 *   - ops with fixed output scales (Sigmoid, Tanh, ...) become npu.Lut;
 *   - ops needing equal in/out scales (pools, reshape, pad...) inherit them;
 *   - a concat input of another scale gets an npu.Requantize;
 *   - ops without an integer form stay float between DequantizeLinear and
 *     QuantizeLinear; graph inputs and outputs stay float. */
#ifndef NPU_QUANTIZE_H
#define NPU_QUANTIZE_H

#include "calib/calib.h"
#include "ir/ir.h"
#include "ref/ref.h"

typedef struct q_calib q_calib;

/* Statistics for every float activation of g (g must outlive it). */
q_calib *q_calib_new(const ir_graph *g, npu_alloc alloc, npu_err *err);
void q_calib_free(q_calib *c);
/* Runs one calibration sample (inputs as for ref_ctx_run) and records it. */
npu_status q_calib_run(q_calib *c, ref_ctx *ctx, const void *const *inputs, npu_err *err);
uint64_t q_calib_samples(const q_calib *c);
/* Ranges per tensor id (lo/hi arrays of g->n_tensors); tensors never seen
 * get [0, 0]. */
void q_calib_ranges(const q_calib *c, const cal_range_opts *o, float *lo, float *hi);

typedef struct q_layer_bits {
    const char *node; /* node name */
    int wbits;
} q_layer_bits;

typedef struct q_options {
    int wbits;        /* 8 or 4 */
    int abits;        /* 8 (4 is reserved for targets that declare int4 activations) */
    int n_layer_bits;
    const q_layer_bits *layer_bits;
    /* Whether the integer path can run a node (the target and the reference
     * decide); NULL: every op with an integer form. */
    bool (*int_supported)(void *ud, const ir_graph *g, const ir_node *n);
    void *ud;
} q_options;

/* Rewrites g in place. lo/hi are the ranges per tensor id from calibration
 * (ids as they are in g on entry). */
npu_status q_quantize(ir_graph *g, const float *lo, const float *hi, const q_options *o, npu_err *err);

/* The whole post-training quantization of a float graph: opens the
 * calibration set, runs the float reference over it (streaming statistics),
 * chooses the ranges and rewrites g in place. */
typedef struct q_ptq_options {
    const char *model;     /* for messages */
    const char *calib_dir;
    cal_range_opts range; /* method and percentile (bits follow q.abits) */
    q_options q;
} q_ptq_options;

npu_status q_ptq(ir_graph *g, const q_ptq_options *o, npu_err *err);

/* Asymmetric int8 parameters for a real range (contains 0 after nudging). */
void q_params_from_range(float lo, float hi, int bits, float *scale, int32_t *zero_point);

#endif
