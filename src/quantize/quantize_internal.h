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
    Q_KIND_ROWNORM,   /* Softmax, LayerNormalization over the last axis: npu.Softmax, npu.LayerNorm */
} q_kind;

typedef struct q_ctx {
    ir_graph *g;
    const q_options *opts;
    npu_err *err;
    const float *lo, *hi; /* ranges per original tensor id */
    int n_ranges;
    int n_orig_tensors;
    ir_tensor **qver;     /* per original tensor id: its integer version */
    bool *a16;            /* per original tensor id: its integer version is int16 (A16W8) */
    ir_tensor **qalt;     /* per original tensor id: its version of the other width (npu.Requantize) */
} q_ctx;

q_kind q_classify(const ir_node *n);
/* The activation bits of the integer version of float tensor y: opts->abits,
 * but 8 for a graph input or output unless opts->int4_io. */
int q_act_bits(const q_ctx *c, const ir_tensor *y);
ir_quant *q_quant_new(ir_graph *g, int axis, int count);
ir_quant *q_quant_tensor(ir_graph *g, float scale, int32_t zp);
bool q_same_quant(const ir_quant *a, const ir_quant *b);

/* rewrite.c: boundaries between the float and the integer graph */
npu_status q_new_int_tensor(q_ctx *c, const ir_tensor *like, ir_quant *q, ir_tensor **out);
/* The same with the bits given (16: IR_I16, 4: int4 codes, else int8). */
npu_status q_new_int_tensor_bits(q_ctx *c, const ir_tensor *like, ir_quant *q, int bits, ir_tensor **out);
/* a16.c: activation widths of A16W8 (docs/numerics.md) */
/* Which original tensors get int16 versions: c->a16 from the nodes' widths. */
npu_status q_a16_plan(q_ctx *c);
/* The activations' bits node n runs at: 16 or 8 (abits 4 keeps its own rule). */
int q_node_abits(const q_ctx *c, const ir_node *n);
/* xq (the integer version of float x) as a tensor of node n's width: itself,
 * or an npu.Requantize of it into the other width (one per tensor). */
npu_status q_width_version(q_ctx *c, const ir_node *n, ir_tensor *x, ir_tensor *xq, ir_tensor **out);
npu_status q_int_version(q_ctx *c, ir_tensor *x, ir_unit unit, ir_tensor **out);
npu_status q_float_version(q_ctx *c, ir_tensor *x, ir_unit unit);
npu_status q_make_float_island(q_ctx *c, ir_node *n);
npu_status q_concat_inputs(q_ctx *c, ir_node *n);
npu_status q_binary_consts(q_ctx *c, ir_node *n);
/* qmove.c: data movement on codes */
bool q_pad_movable(const ir_node *n);
/* The code of a Pad's value on q (0 for reflect/edge); false when inexact. */
bool q_pad_code(const ir_node *n, const ir_quant *q, int32_t *code);
/* Input 2 becomes the int8 scalar code (constant mode only). */
npu_status q_pad_set_code(ir_graph *g, ir_node *n, int32_t code, npu_err *err);
npu_status q_inherit_outputs(q_ctx *c, ir_node *n);
/* weights.c */
npu_status q_weighted(q_ctx *c, ir_node *n);
/* lut.c: y is the node's original float output (for its name in messages) */
npu_status q_lut(q_ctx *c, ir_node *n, const ir_tensor *y);
/* rownorm.c: Softmax / LayerNormalization over the last axis */
bool q_rownorm_ok(const ir_node *n);
npu_status q_rownorm(q_ctx *c, ir_node *n, const ir_tensor *y);

/* lstats.c: input patch statistics of every Conv/Gemm of a float graph,
 * fed by the calibration observer (q_lstats_observe is a ref_observer_fn). */
typedef struct q_lstats q_lstats;
/* gram: second moments (GPTQ, adaptive rounding); means: the mean patches
 * (bias correction; left 0 without); n_samples: the calibration set's size
 * (0: unknown), no second moment where it would be rank-deficient. */
q_lstats *q_lstats_new(const ir_graph *g, bool gram, bool means, int64_t n_samples, npu_alloc alloc, npu_err *err);
void q_lstats_observe(void *ud, const ir_node *n, const ir_tensor *t, const void *data);
void q_lstats_finish(q_lstats *s);
int q_lstats_count(const q_lstats *s);
const q_layer_stats *q_lstats_items(const q_lstats *s);
void q_lstats_free(q_lstats *s);
/* The upper triangle of gram (k x k, row-major) += P^T P (= when !add) for
 * the nb rows of P (stride ld >= k rounded up to Q_GRAM_PAD, the padding
 * zero); entries below the diagonal may be written too. */
enum { Q_GRAM_PAD = 16 };
void q_gram_add(double *gram, int64_t k, const float *p, int64_t ld, int nb, bool add);

/* cle.c: cross-layer equalization of Conv -> Conv pairs of a float graph.
 * chan_max[tensor id] (NULL entries allowed) holds the per-channel maximum
 * of clipped conv outputs on the calibration data, which bounds the
 * scaling a Relu6 allows. Returns the number of pairs equalized. */
int q_cle_apply(ir_graph *g, float *const *chan_max, int rounds);

/* gptq.c: GPTQ rounding of the channels of one group, all weighed by the
 * same k x k metric H (factored once per group). */
enum { Q_GPTQ_COLS = 32 }; /* channels x trial scales walked together */
typedef struct q_gptq {
    npu_alloc alloc;
    int64_t k;
    bool ready;     /* m holds the factor of the current H */
    double *m;      /* k x k, lower triangle: H + damp I = M^T M */
    double *d;      /* scratch, k x Q_GPTQ_COLS: the weight errors so far */
    int8_t *codes;  /* scratch, Q_GPTQ_COLS x k: the codes of each trial */
    float *w;       /* scratch: the weights of a block of channels */
} q_gptq;
npu_status q_gptq_init(q_gptq *gq, int64_t k, npu_alloc alloc, npu_err *err);
void q_gptq_free(q_gptq *gq);
/* Factors h (k x k, symmetric PSD); false when it cannot (no signal): round to nearest then. */
bool q_gptq_factor(q_gptq *gq, const double *h);
/* Codes (n x k) and per-channel scales of the weights w (n x k, one row per
 * output channel, real values) of a group whose metric is factored (ready). */
void q_gptq_round(q_gptq *gq, const float *w, int64_t n, int qmax, int8_t *codes, float *scales);

/* weights.c: the per-channel weight rounding (nearest, adaptive or gptq) */
typedef struct q_round_in {
    const float *w;      /* one output channel's real weights (alpha applied), k of them */
    int64_t k;
    int qmax;
    const double *metric; /* k x k output-error metric: E[p p^T] of the input patches (its covariance
                           * when bias correction follows), or NULL: nearest */
    const double *mean;   /* k E[p], or NULL */
    q_rounding rounding;
    npu_alloc alloc;      /* scratch of the adaptive rounding; {0}: the default */
} q_round_in;
/* Codes (k) and the scale; returns the mean output error sum_j (s*q_j - w_j) mean_j (0 without means).
 * Q_ROUND_GPTQ is per group (q_gptq_round): here it rounds to nearest. */
double q_round_channel(const q_round_in *in, int8_t *codes, float *scale);

/* report.c: compares the two graphs on samples of ds; layers: per-layer SQNR too. */
npu_status q_compare(const ir_graph *fg, const ir_graph *qg, cal_dataset *ds, int64_t max_samples, bool layers,
                     npu_alloc alloc, q_report **out, npu_err *err);

/* mixed.c: which layers keep 8-bit weights under --accuracy-budget */
typedef struct q_mixed_in {
    const void *float_ser;   /* the float graph, serialized (copies to quantize) */
    size_t float_size;
    const ir_graph *float_g; /* the same graph (reference outputs; ranges by its tensor ids) */
    const float *lo, *hi;
    int n_ranges;
    const q_options *base;   /* wbits 4, repairs, the user's --layer-bits */
    cal_dataset *ds;
    double budget_db;
} q_mixed_in;
typedef struct q_mixed_out {
    int n, cap;
    q_layer_bits *bits;      /* the layers kept at 8 bits (names from float_g) */
    char **why;
    double sqnr_all4, sqnr;  /* output SQNR with every candidate at 4 bits, and with the choice */
} q_mixed_out;
npu_status q_mixed_search(const q_mixed_in *in, npu_alloc alloc, q_mixed_out *out, npu_err *err);
void q_mixed_free(q_mixed_out *out, npu_alloc alloc);

/* trial.c: a copy of in->float_ser quantized with in's ranges and qo */
npu_status q_quantize_copy(const q_mixed_in *in, const q_options *qo, npu_alloc alloc, ir_graph **out, npu_err *err);

/* precision.c: --precision auto, each layer's weight and activation bits
 * under a cycle budget or an SQNR target */
enum { Q_PREC_MAX_OPTS = 4 };
typedef struct q_prec_opt {
    int wbits, abits;
} q_prec_opt;
typedef struct q_prec_in {
    q_mixed_in m;            /* graph, ranges, base options (all-int8 plus repairs), calibration set */
    /* the tiler's estimate of one quantized node; NPU_EUSER: not an NPU node
     * (no cycles); another status: a failure of the estimate, in err */
    npu_status (*cycles)(void *ud, const ir_graph *g, const ir_node *n, int64_t *cycles, npu_err *err);
    void *ud;
    int64_t budget_cycles;   /* > 0: the budget */
    double budget_ratio;     /* > 0: the budget relative to all-int8's estimate */
    double target_sqnr_db;   /* without a budget: the fewest cycles with at least this output SQNR */
    int n_abits;
    const int *abits;        /* the activation bits to choose from, the first the default */
} q_prec_in;
typedef struct q_prec_layer {
    const char *node;
    int chosen;                          /* index into q_prec_out.opt */
    double gain_db[Q_PREC_MAX_OPTS];     /* per option: output SQNR with this layer alone so, the others at
                                          * the base option, minus the all-base SQNR */
    int64_t dcycles[Q_PREC_MAX_OPTS];    /* per option: the estimate's cycles, minus the all-base cycles */
} q_prec_layer;
typedef struct q_prec_out {
    int n, n_opt;
    q_prec_opt opt[Q_PREC_MAX_OPTS]; /* the options, the first all-int8's */
    int base;                /* the option every single-layer trial starts from (w8 a16 when offered) */
    double sqnr_base;        /* with every candidate at the base option */
    int64_t cycles_base;
    q_prec_layer *layers;    /* per candidate layer, its choice */
    q_layer_bits *bits;      /* the same as --layer-bits */
    int64_t budget, cycles, cycles_int8;
    double target_db;        /* without a budget: the SQNR target */
    double sqnr, sqnr_int8;  /* output SQNR of the choice and of all-int8 (calibration set) */
    int evaluated;           /* whole configurations quantized and costed after the trials */
    bool met;                /* the budget or target is met */
} q_prec_out;
npu_status q_precision_search(const q_prec_in *in, npu_alloc alloc, q_prec_out *out, npu_err *err);
void q_prec_free(q_prec_out *out, npu_alloc alloc);

/* ptq_prec.c: --precision auto inside q_ptq */
npu_status q_ptq_precision_check(const q_ptq_options *o, const char *model, npu_err *err);
npu_status q_ptq_precision(const q_mixed_in *mi, const q_ptq_options *o, q_prec_out *out, npu_err *err);
/* Each chosen layer's row gets its choice, the report the totals. */
npu_status q_prec_annotate(ir_graph *g, const q_prec_out *p, q_report *r, npu_err *err);

/* calib_par.c: calibration's float pass on contexts side by side, where the
 * statistics merge exactly; the same statistics as one context in order. */
typedef void (*q_calib_progress_fn)(void *ud, int64_t done, int64_t total);
bool q_calib_par_fits(const ir_graph *g, const q_calib *qc, int threads, int64_t samples);
npu_status q_calib_par_pass(const ir_graph *g, cal_dataset *ds, q_calib *qc, int threads, q_calib_progress_fn fn,
                            void *ud, npu_err *err);

#endif
