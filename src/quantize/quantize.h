/* Post-training quantization: calibration statistics (through the float
 * reference executor's observer hook) and the rewrite of a float graph into
 * the quantized graph of docs/numerics.md:
 *   - activations int8 asymmetric per tensor (scale, zero point), or with
 *     --abits 4 int4 codes -8..7 held one per byte (IR_TENSOR_INT4_CODES);
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
#include "calib/dataset.h"
#include "ir/ir.h"
#include "ref/ref.h"

typedef struct q_calib q_calib;

/* Statistics for every float activation of g (g must outlive it). */
q_calib *q_calib_new(const ir_graph *g, npu_alloc alloc, npu_err *err);
void q_calib_free(q_calib *c);
/* Runs one calibration sample (inputs as for ref_ctx_run) and records it. */
npu_status q_calib_run(q_calib *c, ref_ctx *ctx, const void *const *inputs, npu_err *err);
/* q_calib_run with the outputs' buffers given (no allocation: it may run
 * on a worker thread). */
npu_status q_calib_run_into(q_calib *c, ref_ctx *ctx, const void *const *inputs, void *const *outputs,
                            npu_err *err);
/* Whether statistics gathered apart merge exactly (minmax ranges, no tap). */
bool q_calib_mergeable(const q_calib *c);
/* Adds src's statistics to dst's, src's samples taken as after dst's. */
void q_calib_merge(q_calib *dst, const q_calib *src);
uint64_t q_calib_samples(const q_calib *c);
/* Also calls fn for every observed float activation (graph inputs included). */
void q_calib_set_tap(q_calib *c, ref_observer_fn fn, void *ud);
/* Keep only each tensor's count, min and max, no histogram: for minmax
 * ranges, which read nothing else (the same ranges, less work). */
void q_calib_set_range_only(q_calib *c, bool range_only);
/* Ranges per tensor id (lo/hi arrays of g->n_tensors); tensors never seen
 * get [0, 0]. */
void q_calib_ranges(const q_calib *c, const cal_range_opts *o, float *lo, float *hi);
/* The range of one tensor id. */
void q_calib_range(const q_calib *c, int id, const cal_range_opts *o, float *lo, float *hi);

/* A per-layer override (--layer-bits NAME=8|4|a16|w4a16 ...): wbits of the
 * node's weights, abits of its activations (16: the node runs A16W8, its
 * inputs requantized to int16 where they are int8). 0 leaves a width to the
 * global --wbits / --abits; the first entry naming a node with a width set wins. */
typedef struct q_layer_bits {
    const char *node; /* node name */
    int wbits;        /* 8, 4, or 0 */
    int abits;        /* 8, 16, or 0 */
} q_layer_bits;

typedef enum q_rounding {
    Q_ROUND_NEAREST,
    Q_ROUND_ADAPTIVE, /* per-channel scale and up/down flips of single codes minimizing the output MSE */
    Q_ROUND_GPTQ,     /* inputs in turn, each one's error spread onto the rest (src/quantize/gptq.c) */
} q_rounding;

/* Float statistics of the input patches of one Conv/Gemm (calibration):
 * per group, the mean patch and (when small enough) its second moment. */
typedef struct q_layer_stats {
    const char *node;  /* node name */
    int groups;
    int64_t k;         /* patch length of one group (c_in/groups * k_h * k_w, or K) */
    uint64_t n;        /* patches seen per group */
    uint64_t n_gram;   /* of which in the second moment (a subsample of positions) */
    double *mean;      /* [groups][k]: sums until q_lstats_finish, then means */
    double *gram;      /* [groups][k][k] E[p p^T], or NULL (too large) */
} q_layer_stats;

/* --w4-min-fanin's default: 3x3 and 5x5 depthwise convs and stems of up to
 * two channels keep 8-bit weights under --wbits 4 (measured: docs/numerics.md). */
enum { Q_W4_MIN_FANIN_DEFAULT = 32 };

typedef struct q_options {
    int wbits;        /* 8 or 4 */
    int abits;        /* 8, or 4: int4 activations (codes -8..7 held one per byte), on targets that declare them,
                       * or 16: int16 activations (A16W8, symmetric; ops without an int16 form stay int8) */
    const char *target_file; /* the target's file, for messages */
    bool target_int4_acts;   /* the target declares int4 activations (dtypes.activations) */
    bool int4_io;            /* with abits 4: the graph inputs' and outputs' integer versions hold int4 codes
                              * too (false: int8, the measured default: docs/numerics.md) */
    int w4_min_fanin;        /* with wbits 4: a Conv/Gemm whose output channels each sum fewer weights keeps
                              * 8-bit ones (0: none); --layer-bits entries win */
    int n_layer_bits;
    const q_layer_bits *layer_bits;
    /* Whether the integer path can run a node (the target and the reference
     * decide); NULL: every op with an integer form. */
    bool (*int_supported)(void *ud, const ir_graph *g, const ir_node *n);
    void *ud;
    /* Weight repairs, which need the calibration statistics of each layer's input. */
    bool bias_correction;
    q_rounding int4_rounding; /* of 4-bit weights */
    q_rounding int8_rounding; /* of 8-bit weights */
    int n_stats;
    const q_layer_stats *stats;
} q_options;

/* Whether o's bit widths are supported (wbits 8|4, abits 8|4, abits 4 only
 * where the target declares int4 activations); the error names the target file. */
npu_status q_check_bits(const q_options *o, npu_err *err);

/* Rewrites g in place. lo/hi are the ranges per tensor id from calibration
 * (ids as they are in g on entry). */
npu_status q_quantize(ir_graph *g, const float *lo, const float *hi, const q_options *o, npu_err *err);

/* The whole post-training quantization of a float graph: opens the
 * calibration set, runs the float reference over it (streaming statistics),
 * optionally repairs (cross-layer equalization, bias correction, adaptive
 * int4 rounding, mixed precision), chooses the ranges and rewrites g in
 * place. docs/numerics.md ("Post-training quantization") has the measured
 * effect of each option. */
typedef struct q_ptq_options {
    const char *model;      /* for messages */
    const char *calib_dir;
    cal_read_opts read;     /* preprocessing of the calibration files */
    cal_range_opts range;   /* method and percentile (bits follow q.abits) */
    q_options q;            /* wbits, abits, per-layer bits */
    bool cle;               /* cross-layer equalization of depthwise -> pointwise pairs */
    bool bias_correction;
    q_rounding int4_rounding;
    q_rounding int8_rounding;
    double accuracy_budget_db; /* > 0 (with wbits 4): keep layers at 8 bits until the output SQNR meets it */
    /* --precision auto (precision.c): per layer weight bits 4/8 and activation
     * bits under budget_cycles, or budget_ratio times all-int8's cycles, or
     * the fewest cycles reaching target_sqnr_db; cycles: the tiler's estimate
     * of a quantized node (NPU_EUSER: not an NPU node; another failure, in
     * err, fails the compile) */
    bool precision_auto;
    int64_t budget_cycles;
    double budget_ratio, target_sqnr_db;
    npu_status (*cycles)(void *ud, const ir_graph *g, const ir_node *n, int64_t *cycles, npu_err *err);
    void *cycles_ud;
    bool report;            /* fill q_ptq_result.report */
    FILE *progress;         /* a progress bar (a terminal), or NULL */
} q_ptq_options;

typedef struct q_report q_report;

typedef struct q_ptq_result {
    int64_t samples;        /* calibration samples */
    double calib_seconds;   /* the statistics pass (float reference + observers) */
    q_report *report;       /* with o->report: q_report_print, q_report_free */
} q_ptq_result;

/* result may be NULL. */
npu_status q_ptq(ir_graph *g, const q_ptq_options *o, q_ptq_result *result, npu_err *err);

/* ---- pre-quantized (QDQ) models: src/quantize/qdq_import.c ---- */

/* Whether g carries its own quantization (QuantizeLinear/DequantizeLinear
 * nodes, or QLinear ops). */
bool q_graph_is_qdq(const ir_graph *g);
/* Rewrites a QDQ graph in place into the quantized graph with the model's
 * scales and zero points (no calibration): DQ -> op -> Q chains become the
 * integer op, int8 weights and int32 biases behind DQ become quantized
 * constants; Q of graph inputs and DQ of graph outputs stay as boundaries.
 * What does not map is an error naming the node. */
npu_status q_from_qdq(ir_graph *g, npu_err *err);

/* ---- the --report: float reference vs quantized reference ---- */

typedef struct q_layer_sqnr {
    const char *node;       /* node name (quantized graph) */
    const char *op;
    const char *tensor;     /* its float output */
    int wbits;              /* weights' bits, 0 for ops without weights */
    double sqnr_db;
    const char *why8;       /* mixed precision: why the layer stayed at 8 bits, or NULL */
} q_layer_sqnr;

struct q_report {
    npu_alloc alloc;
    int64_t samples;
    double out_cosine, out_sqnr_db; /* over every graph output value of every sample */
    double budget_db;               /* 0: no mixed precision */
    const char *note;               /* --precision auto: the budget and the choice's totals, or NULL */
    int n_layers;
    q_layer_sqnr *layers;
    size_t rows_cap;                /* allocated rows */
};

/* SQNR in dB of a signal and its approximation from their accumulated
 * energies: 10 log10(sum s^2 / sum (s - q)^2); +inf for an exact copy. */
double q_sqnr_db(double signal_energy, double noise_energy);

/* Runs float_g and quant_g (the same model before and after q_quantize) on
 * the first max_samples samples of ds (0: all) and compares every quantized
 * activation with its float original. */
npu_status q_report_compute(const ir_graph *float_g, const ir_graph *quant_g, cal_dataset *ds, int64_t max_samples,
                            npu_alloc alloc, q_report **out, npu_err *err);
void q_report_print(const q_report *r, FILE *out);
void q_report_free(q_report *r);

/* Whether the quantizer turns this float node into an npu.Lut (a unary op
 * whose other inputs are constant): the tiler judges such a node by it. */
bool q_becomes_lut(const ir_node *n);
/* A MatMul of two activations whose shapes the integer batched kernel takes
 * (each operand's batch the output's or 1): quantized, it runs as nk_qbmm. */
bool q_bmm_shapes(const ir_node *n);

/* Asymmetric int8 parameters for a real range (contains 0 after nudging). */
void q_params_from_range(float lo, float hi, int bits, float *scale, int32_t *zero_point);

#endif
