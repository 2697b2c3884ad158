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

/* Bump on any change of a record layout or of a kernel's meaning. */
#define NPURT_REC_VERSION 1u
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

/* The tensor slots of a record (after its header). */
static inline const uint32_t *npurt_rec_tensors(const void *rec)
{
    return (const uint32_t *)((const uint8_t *)rec + sizeof(npurt_rec_header));
}

#endif
