/* Host-step records: what the PARAMS section of a .npub holds for each
 * NPUB_STEP_HOST step, shared by the compiler (src/emit/hostops.c writes
 * them) and the runtime (rt/npurt*.c checks and runs them). Freestanding,
 * and every field is a 32-bit int32/uint32/float, so a record has the same
 * bytes on the 64-bit build machine and on the rv32 host CPU.
 *
 * A record is, in this order (all little-endian 32-bit words):
 *   npurt_rec_header
 *   uint32 tensor[n_inputs + n_outputs]   npub tensor-table indices, inputs
 *                                         then outputs; NPUB_NONE for an
 *                                         omitted optional input (a bias)
 *   the kernel's parameter block          npurt_p_* below, then its arrays
 * The step's `op` repeats the kernel id and its params range is exactly
 * the record. docs/runtime.md describes every kernel. */
#ifndef NPURT_OPS_H
#define NPURT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "rt/npub.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bump on any change of a record layout or of a kernel's meaning. */
#define NPURT_REC_VERSION 2u
#define NPURT_REC_MAX_RANK 8 /* dims arrays (= NK_MAX_RANK) */
#define NPURT_REC_MAX_IO 64  /* tensors of one record */

typedef enum npurt_kernel {
    NPURT_K_QUANTIZE = 1,   /* f32 -> i8/u8, per tensor or per axis */
    NPURT_K_DEQUANTIZE = 2, /* i8/u8/i32 -> f32, per tensor or per axis */
    NPURT_K_QCONV = 3,      /* int8 conv2d, any groups, int8/int4 weights */
    NPURT_K_QFC = 4,        /* fully connected by constant weights ([N,K] or transposed [K,N]) */
    NPURT_K_QBMM = 5,       /* batched matmul of two int8 activations */
    NPURT_K_QMAXPOOL = 6,
    NPURT_K_QAVGPOOL = 7,
    NPURT_K_QGLOBALAVGPOOL = 8,
    NPURT_K_QBINARY = 9,     /* int8 add/sub/mul/min/max with broadcast */
    NPURT_K_QREQUANT = 10,   /* int8 -> int8 change of scale */
    NPURT_K_QLUT = 11,       /* int8 table lookup (a 256-entry constant tensor) */
    NPURT_K_QCONCAT = 12,    /* int8 concat, requantizing inputs whose scale differs */
    NPURT_K_COPY = 13,       /* byte copy: a reshape/view the memory plan did not alias */
    NPURT_K_SOFTMAX = 14,    /* f32 softmax / log-softmax */
    NPURT_K_UNARY_F32 = 15,  /* f32 nk_unary_f32 (sigmoid, tanh, relu, exp, ...) */
    NPURT_K_BINARY_F32 = 16, /* f32 nk_binary_f32 (add, sub, mul, div, max, min, pow, prelu) */
    NPURT_K_TRANSPOSE = 17,  /* any whole-byte dtype: nk_transpose */
    NPURT_K_REDUCE_F32 = 18, /* f32 reduce-sum/mean/max/min over an axes mask */
    NPURT_K_NODE = 19,       /* any other op npuref runs: npurt_p_node (below) */
    NPURT_K_COUNT
} npurt_kernel;

/* Tensor dtype codes of the .npub (ir_dtype's order, src/ir/ir.h). */
enum npurt_dtype {
    NPURT_DT_F32 = 0,
    NPURT_DT_F16 = 1,
    NPURT_DT_I64 = 2,
    NPURT_DT_I32 = 3,
    NPURT_DT_I16 = 4,
    NPURT_DT_I8 = 5,
    NPURT_DT_U8 = 6,
    NPURT_DT_I4 = 7,
    NPURT_DT_U4 = 8,
    NPURT_DT_BOOL = 9,
};

typedef struct npurt_rec_header {
    uint32_t version; /* NPURT_REC_VERSION */
    uint32_t kernel;  /* npurt_kernel */
    uint32_t size;    /* bytes of the whole record, header included */
    uint32_t n_inputs;
    uint32_t n_outputs;
} npurt_rec_header;

/* A dense C-order shape of up to NPURT_REC_MAX_RANK dims. */
typedef struct npurt_p_shape {
    int32_t rank;
    int32_t dims[NPURT_REC_MAX_RANK];
} npurt_p_shape;

/* A fused float activation (nk_act). */
typedef struct npurt_p_act {
    int32_t kind; /* nk_act_kind */
    float lo, hi, alpha;
} npurt_p_act;

/* QUANTIZE (in f32 -> out i8/u8) and DEQUANTIZE (in i8/u8/i32 -> out f32):
 * element i uses scale[(i / inner) % n_scales]; then float scale[n_scales],
 * int32 zero_point[n_scales]. Per tensor: n_scales = 1, inner = count. */
typedef struct npurt_p_qdq {
    uint32_t count;
    uint32_t n_scales;
    uint32_t inner;
} npurt_p_qdq;

/* QCONV: inputs x i8, w i8/i4 (w_format), bias i32 or NPUB_NONE; output i8.
 * Every field of nk_qconv2d_params, then int32 mult[n_mults], shift[n_mults]
 * (n_mults 1 or c_out). */
typedef struct npurt_p_qconv {
    int32_t n, c_in, h_in, w_in;
    int32_t c_out, h_out, w_out;
    int32_t k_h, k_w;
    int32_t stride_h, stride_w;
    int32_t dil_h, dil_w;
    int32_t pad_top, pad_left, pad_bottom, pad_right;
    int32_t groups;
    int32_t in_zp, out_zp;
    int32_t act_min, act_max;
    int32_t w_format; /* nk_wformat */
    int32_t n_mults;
} npurt_p_qconv;

/* QFC: inputs x i8 [batch, K], w, bias i32 or NPUB_NONE; output i8 [batch, N].
 * transpose 0: w is [N, K] in w_format; 1: w is [K, N] (i4 when w_i4), which
 * the runtime transposes into scratch as int8 (w_format is then NK_W_I8).
 * Then int32 mult[n_mults], shift[n_mults] (n_mults 1 or N). */
typedef struct npurt_p_qfc {
    int32_t batch, in_features, out_features;
    int32_t in_zp, out_zp;
    int32_t act_min, act_max;
    int32_t w_format;
    int32_t transpose;
    int32_t w_i4;
    int32_t n_mults;
} npurt_p_qfc;

/* QBMM: inputs a i8, b i8; output i8. nk_qbmm_params. */
typedef struct npurt_p_qbmm {
    int32_t batch, a_batch, b_batch;
    int32_t m, k, n;
    int32_t a_zp, b_zp, out_zp;
    int32_t act_min, act_max;
    int32_t mult, shift;
} npurt_p_qbmm;

/* QMAXPOOL, QAVGPOOL, QGLOBALAVGPOOL: input i8, output i8. nk_qpool_params. */
typedef struct npurt_p_qpool {
    int32_t n, c, h_in, w_in, h_out, w_out;
    int32_t k_h, k_w;
    int32_t stride_h, stride_w;
    int32_t dil_h, dil_w;
    int32_t pad_top, pad_left, pad_bottom, pad_right;
    int32_t count_include_pad;
    int32_t in_zp, out_zp;
    int32_t mult, shift;
    int32_t act_min, act_max;
} npurt_p_qpool;

/* QBINARY: inputs a i8, b i8; output i8. nk_qbinary_params. */
typedef struct npurt_p_qbinary {
    int32_t op; /* nk_qbin_op */
    npurt_p_shape a_shape, b_shape, out_shape;
    int32_t a_zp, b_zp, out_zp;
    int32_t left_shift;
    int32_t a_mult, a_shift, b_mult, b_shift;
    int32_t out_mult, out_shift;
    int32_t act_min, act_max;
} npurt_p_qbinary;

/* QREQUANT: input i8, output i8, count elements. nk_qrequant_params. */
typedef struct npurt_p_qrequant {
    int32_t count;
    int32_t in_zp, out_zp;
    int32_t mult, shift;
    int32_t act_min, act_max;
} npurt_p_qrequant;

/* QLUT: inputs x i8, table i8[256]; output i8. */
typedef struct npurt_p_qlut {
    int32_t count;
} npurt_p_qlut;

/* QCONCAT: n_inputs i8 inputs, one i8 output. The output is `outer` rows of
 * `row` elements; input i contributes `chunk` elements to each row, copied
 * when `same`, else requantized. Then npurt_p_qconcat_in[n_inputs]. */
typedef struct npurt_p_qconcat {
    int32_t outer;
    int32_t row;
} npurt_p_qconcat;

typedef struct npurt_p_qconcat_in {
    int32_t chunk;
    int32_t same;
    int32_t in_zp, out_zp;
    int32_t mult, shift;
    int32_t act_min, act_max;
} npurt_p_qconcat_in;

/* COPY: one input, one output of the same dtype and bytes. */
typedef struct npurt_p_copy {
    uint32_t bytes;
} npurt_p_copy;

/* SOFTMAX: f32 [outer, len, inner], normalized along len. */
typedef struct npurt_p_softmax {
    int32_t outer, len, inner;
    int32_t log;
} npurt_p_softmax;

/* UNARY_F32: y = act(op(x)) over count f32 elements. */
typedef struct npurt_p_unary {
    int32_t op; /* nk_unop */
    int32_t count;
    float alpha, beta, lo, hi;
    npurt_p_act act;
} npurt_p_unary;

/* BINARY_F32: y = a op b with broadcasting, fused activation. */
typedef struct npurt_p_binary {
    int32_t op; /* nk_binop */
    npurt_p_shape a_shape, b_shape, out_shape;
    npurt_p_act act;
} npurt_p_binary;

/* TRANSPOSE: out dims[d] = in dims[perm[d]], elements of elem_size bytes
 * (1, 2, 4 or 8; input and output of one dtype). */
typedef struct npurt_p_transpose {
    int32_t elem_size;
    npurt_p_shape in_shape;
    int32_t perm[NPURT_REC_MAX_RANK];
} npurt_p_transpose;

/* REDUCE_F32: y = act(reduce(x)) over the axes whose bit is set in
 * axes_mask; y holds out_count values (the kept dims, C order). */
typedef struct npurt_p_reduce {
    int32_t op; /* nk_reduce_op */
    npurt_p_shape x_shape;
    uint32_t axes_mask;
    int32_t out_count;
    npurt_p_act act;
} npurt_p_reduce;

/* NODE: one record kind for every op npuref runs that has no dedicated record
 * (float nn ops, data movement of any dtype, compares, casts, integer
 * elementwise ops), each dispatched to the kernels/ function the reference
 * executor calls for it. After the tensor slots:
 *   npurt_p_node                 op and the number of parameter words
 *   npurt_p_tshape[n_in + n_out] every slot's dtype and shape (an empty
 *                                slot: dtype -1), checked against the tensor table
 *   int32 words[n_words]         the op's parameters: npurt_p_n_* below
 * Shapes in the record are what the kernel indexes, so tying each one to
 * its tensor's size (npurt_rec_check_tensors) and the parameters to the
 * shapes (npurt_rec_check) keeps every access inside the tensors. */
typedef enum npurt_nop {
    NPURT_N_CONV = 1,      /* x, w, bias? -> y f32: npurt_p_n_conv */
    NPURT_N_CONV_T,        /* ConvTranspose, as CONV */
    NPURT_N_GEMM,          /* a, b, c? -> y f32: npurt_p_n_gemm */
    NPURT_N_MATMUL,        /* a, b -> y f32, batched/broadcast: npurt_p_n_matmul */
    NPURT_N_BATCHNORM,     /* x, scale, bias, mean, var -> y f32: npurt_p_n_bn */
    NPURT_N_MAXPOOL,       /* x -> y f32: npurt_p_n_pool */
    NPURT_N_AVGPOOL,       /* x -> y f32: npurt_p_n_pool */
    NPURT_N_GAVGPOOL,      /* x -> y f32, no parameters */
    NPURT_N_GMAXPOOL,      /* x -> y f32, no parameters */
    NPURT_N_RESIZE,        /* x -> y f32: npurt_p_n_resize */
    NPURT_N_SLICE,         /* x -> y any dtype: npurt_p_n_slice */
    NPURT_N_CONCAT,        /* n x -> y any dtype: {axis} */
    NPURT_N_SPLIT,         /* x -> n y any dtype: {axis} */
    NPURT_N_PAD,           /* x -> y any dtype: npurt_p_n_pad */
    NPURT_N_GATHER,        /* data, indices i32/i64 -> y: {axis} */
    NPURT_N_EXPAND,        /* x -> y any dtype, no parameters */
    NPURT_N_TILE,          /* x -> y any dtype, no parameters */
    NPURT_N_WHERE,         /* cond bool, a, b -> y: no parameters */
    NPURT_N_COMPARE,       /* a, b -> y bool: {nk_cmpop} */
    NPURT_N_CAST,          /* x -> y of another dtype, no parameters */
    NPURT_N_NOT,           /* bool -> bool */
    NPURT_N_BINARY,        /* a, b -> y f32 or integer: {nk_binop, npurt_p_act} */
    NPURT_N_UNARY_INT,     /* i32/i64 -> same: {nk_unop: Neg, Abs} */
    NPURT_N_DROPOUT,       /* x, ratio? f32, training_mode? bool -> y (copy), mask? bool (all true) */
    NPURT_N_VARIADIC,      /* n inputs -> y: Max/Min of 1 or 3+ inputs, pairwise: npurt_p_n_binary */
    NPURT_N_CLIP,          /* x, min?, max? (one value each, x's dtype) -> y: npurt_p_n_clip */
    NPURT_N_LAYERNORM,     /* x, scale, bias? -> y, mean?, inv_std? f32: npurt_p_n_layernorm */
    NPURT_N_GELU,          /* x -> y f32: {tanh_form} */
    NPURT_N_QDQ,           /* x, scale f32, zero_point? -> y: Quantize/DequantizeLinear with scales given at
                            * run time (graph inputs): npurt_p_n_qdq */
    NPURT_N_COUNT
} npurt_nop;

typedef struct npurt_p_node {
    int32_t op; /* npurt_nop */
    int32_t n_words;
} npurt_p_node;

typedef struct npurt_p_tshape {
    int32_t dtype; /* npurt_dtype; -1 for an empty (NPUB_NONE) slot */
    npurt_p_shape shape;
} npurt_p_tshape;

/* CONV / CONV_T: nk_conv_params (2-D; 1-D as h = kh = 1). */
typedef struct npurt_p_n_conv {
    int32_t n, c, h, w, m, oh, ow, kh, kw, group;
    int32_t stride_h, stride_w, dil_h, dil_w;
    int32_t pad_top, pad_left, pad_bottom, pad_right, out_pad_h, out_pad_w;
    npurt_p_act act;
} npurt_p_n_conv;

/* GEMM: nk_gemm_params. */
typedef struct npurt_p_n_gemm {
    int32_t m, n, k, trans_a, trans_b;
    float alpha, beta;
    int32_t c_rows, c_cols;
    npurt_p_act act;
} npurt_p_n_gemm;

/* MATMUL: nk_matmul_params (1-D operands already made 2-D), then act. */
typedef struct npurt_p_n_matmul {
    npurt_p_shape a, b;
    npurt_p_act act;
} npurt_p_n_matmul;

typedef struct npurt_p_n_bn {
    float epsilon;
    npurt_p_act act;
} npurt_p_n_bn;

/* LAYERNORM: rows are the dims from axis on (nk_layernorm_params). */
typedef struct npurt_p_n_layernorm {
    int32_t axis; /* 0..rank-1 of x */
    float epsilon;
} npurt_p_n_layernorm;

/* QDQ: quantize (f32 -> i8/u8) or dequantize (i8/u8/i32 -> f32); with n
 * scales (1, or x's dim at axis) element i uses scale (i / inner) % n. */
typedef struct npurt_p_n_qdq {
    int32_t quantize; /* 1: QuantizeLinear, 0: DequantizeLinear */
    int32_t axis;     /* 0..rank-1 of x (used when n > 1) */
} npurt_p_n_qdq;

/* MAXPOOL / AVGPOOL: nk_pool_params (n, c, in, out from the slot shapes). */
typedef struct npurt_p_n_pool {
    int32_t rank;
    int32_t kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
    int32_t count_include_pad;
} npurt_p_n_pool;

/* RESIZE: nk_resize_params (in, out from the slot shapes). */
typedef struct npurt_p_n_resize {
    float scale[NPURT_REC_MAX_RANK], roi_start[NPURT_REC_MAX_RANK], roi_end[NPURT_REC_MAX_RANK];
    int32_t mode, coord, nearest;
    float cubic_a;
    int32_t exclude_outside;
    float extrapolation_value;
} npurt_p_n_resize;

/* SLICE: output index o of axis d reads start[d] + o * step[d]. */
typedef struct npurt_p_n_slice {
    int32_t start[NPURT_REC_MAX_RANK], step[NPURT_REC_MAX_RANK];
} npurt_p_n_slice;

/* PAD: nk_pad_params; value holds one element (up to 8 bytes), unless the
 * optional input slot 1 (one element of x's dtype) gives it at run time. */
typedef struct npurt_p_n_pad {
    int32_t mode;
    int32_t begin[NPURT_REC_MAX_RANK], end[NPURT_REC_MAX_RANK];
    uint32_t value[2];
} npurt_p_n_pad;

/* CLIP: bounds when the min/max slots are empty (f32 only; integers
 * without a slot are not clipped on that side), and a fused activation. */
typedef struct npurt_p_n_clip {
    float lo, hi;
    npurt_p_act act;
} npurt_p_n_clip;

typedef struct npurt_p_n_binary {
    int32_t op; /* nk_binop */
    npurt_p_act act;
} npurt_p_n_binary;

/* ---- shared by the compiler and the runtime -------------------------------- */

/* Name of a kernel id ("QCONV"), "?" when unknown. */
const char *npurt_kernel_name(uint32_t kernel);

/* A problem found in a record: a message with up to two %u/%d numbers and
 * the byte offset inside the record of what is wrong. */
typedef struct npurt_fault {
    const char *msg;
    int32_t a, b;
    uint32_t at;
} npurt_fault;

/* Checks a record on its own (no tensor table): version, kernel id, size,
 * tensor counts, array lengths, parameter ranges. 0, or -1 with f filled.
 * On success *scratch receives the host scratch bytes the kernel needs. */
int npurt_rec_check(const void *rec, uint32_t size, uint32_t *scratch, npurt_fault *f);

/* Checks a record that passed npurt_rec_check against a .npub's tensor table:
 * indices in range, dtypes, and every tensor's size equal to what the
 * kernel reads or writes. 0, or -1 with f filled. */
int npurt_rec_check_tensors(const npub_view *v, const void *rec, npurt_fault *f);

/* Runs a checked record on tensor data: data[i] and dtypes[i] for tensor
 * slot i (inputs then outputs; data NULL for NPUB_NONE); scratch holds at
 * least what npurt_rec_check said. 0, or -1 with f filled. */
int npurt_rec_run(const void *rec, void *const *data, const uint8_t *dtypes, void *scratch, npurt_fault *f);

/* The same two checks without NODE records (a NODE record fails them), so
 * that a firmware whose model has no NODE step links none of their code. */
int npurt_rec_check_fixed(const void *rec, uint32_t size, uint32_t *scratch, npurt_fault *f);
int npurt_rec_check_tensors_fixed(const npub_view *v, const void *rec, npurt_fault *f);

/* One host kernel as an op table holds it (the op resolver): its record
 * checks and its run. A model's table (npucc --emit c: NAME_ops) lists only
 * the kernels its host steps use, so the linker (-ffunction-sections,
 * --gc-sections) drops every other kernel; npurt_open_ops and npurt_run_ops
 * refuse a host step whose kernel is not in the table. */
typedef struct npurt_op {
    uint32_t kernel; /* npurt_kernel; 0: any kernel (npurt_op_any) */
    int (*check)(const void *rec, uint32_t size, uint32_t *scratch, npurt_fault *f);
    int (*check_tensors)(const npub_view *v, const void *rec, npurt_fault *f);
    int (*run)(const void *rec, void *const *data, const uint8_t *dtypes, void *scratch, npurt_fault *f);
} npurt_op;

/* One per kernel id: npurt_op_<lowercase kernel name> (rt/npurt_ops_run.c). */
extern const npurt_op npurt_op_quantize, npurt_op_dequantize, npurt_op_qconv, npurt_op_qfc, npurt_op_qbmm,
    npurt_op_qmaxpool, npurt_op_qavgpool, npurt_op_qglobalavgpool, npurt_op_qbinary, npurt_op_qrequant,
    npurt_op_qlut, npurt_op_qconcat, npurt_op_copy, npurt_op_softmax, npurt_op_unary_f32, npurt_op_binary_f32,
    npurt_op_transpose, npurt_op_reduce_f32, npurt_op_node;
/* Every kernel (npurt_rec_check, npurt_rec_check_tensors, npurt_rec_run). */
extern const npurt_op npurt_op_any;
/* A NULL-terminated table of npurt_op_any: what npurt_open and npurt_run use. */
extern const npurt_op *const npurt_ops_all[];

/* The entry of a table for a kernel id, NULL when the table lacks it. */
const npurt_op *npurt_ops_find(const npurt_op *const *ops, uint32_t kernel);

/* NODE records (rt/npurt_node.c), called by the three above. */
int npurt_node_check(const void *rec, uint32_t size, uint32_t *scratch, npurt_fault *f);
int npurt_node_check_tensors(const npub_view *v, const void *rec, npurt_fault *f);
int npurt_node_run(const void *rec, void *const *data, void *scratch, npurt_fault *f);
/* Name of a NODE op ("CONV"), "?" when unknown. */
const char *npurt_node_op_name(int32_t op);

/* The tensor slots of a record (after its header). */
static inline const uint32_t *npurt_rec_tensors(const void *rec)
{
    return (const uint32_t *)((const uint8_t *)rec + sizeof(npurt_rec_header));
}

#ifdef __cplusplus
}
#endif

#endif
