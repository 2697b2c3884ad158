/* kernels: elementwise family. Binary ops broadcast like numpy (the output
 * shape is the caller's and must be the broadcast of the inputs); unary ops
 * work on n elements; softmax and reductions along axes. Float32 unless the
 * name says otherwise. Input and output may be the same buffer only when
 * their shapes are equal. */
#ifndef NK_ELEM_H
#define NK_ELEM_H
#include "kernels/nk_common.h"

/* Element types of Cast (and of the dtype-generic helpers). */
typedef enum nk_dtype {
    NK_DT_F32,
    NK_DT_F16, /* IEEE binary16, stored as uint16_t */
    NK_DT_I64,
    NK_DT_I32,
    NK_DT_I16,
    NK_DT_I8,
    NK_DT_U8,
    NK_DT_BOOL, /* one byte, 0 or 1 */
    NK_DT_COUNT
} nk_dtype;

size_t nk_dtype_size(nk_dtype dt);

typedef enum nk_binop {
    NK_BIN_ADD,
    NK_BIN_SUB,
    NK_BIN_MUL,
    NK_BIN_DIV,   /* integers: truncates toward zero; a zero divisor is NK_EARG */
    NK_BIN_POW,
    NK_BIN_MAX,   /* float: NaN propagates */
    NK_BIN_MIN,
    NK_BIN_PRELU, /* float only: a < 0 ? b * a : a (b is the slope) */
} nk_binop;

typedef struct nk_binary_params {
    nk_binop op;
    nk_act act; /* fused activation (float only) */
} nk_binary_params;

/* y = a op b with broadcasting. */
nk_status nk_binary_f32(const nk_binary_params *p, const nk_shape *a_shape, const float *a,
                        const nk_shape *b_shape, const float *b, const nk_shape *y_shape, float *y);
/* Integers (dt: I64, I32, I16, I8, U8; a, b and y of that type) wrap in
 * two's complement instead of overflowing; Pow is exact (by squaring; a
 * negative exponent truncates toward zero). No PRelu, no fused activation. */
nk_status nk_binary_int(const nk_binary_params *p, nk_dtype dt, const nk_shape *a_shape, const void *a,
                        const nk_shape *b_shape, const void *b, const nk_shape *y_shape, void *y);

typedef enum nk_cmpop { NK_CMP_EQUAL, NK_CMP_LESS, NK_CMP_GREATER } nk_cmpop;

/* y = a cmp b (0 or 1) with broadcasting; dt: F32, I64, I32, I8, U8 or BOOL. */
nk_status nk_compare(nk_cmpop op, nk_dtype dt, const nk_shape *a_shape, const void *a, const nk_shape *b_shape,
                     const void *b, const nk_shape *y_shape, uint8_t *y);

/* y = cond ? a : b, all three broadcast to y_shape; any element size. */
nk_status nk_where(size_t elem_size, const nk_shape *c_shape, const uint8_t *cond, const nk_shape *a_shape,
                   const void *a, const nk_shape *b_shape, const void *b, const nk_shape *y_shape, void *y);

typedef enum nk_unop {
    NK_UN_RELU,
    NK_UN_LEAKY_RELU,   /* alpha */
    NK_UN_CLIP,         /* lo, hi */
    NK_UN_SIGMOID,
    NK_UN_TANH,
    NK_UN_HARD_SIGMOID, /* max(0, min(1, alpha * x + beta)) */
    NK_UN_HARD_SWISH,   /* x * hard_sigmoid(x) with alpha 1/6, beta 0.5 */
    NK_UN_ERF,
    NK_UN_EXP,
    NK_UN_LOG,
    NK_UN_SQRT,
    NK_UN_RECIPROCAL,
    NK_UN_NEG,
    NK_UN_ABS,
    NK_UN_SOFTPLUS, /* ln(1 + e^x) */
    NK_UN_COUNT /* not an op: the number of them (the runtime checks records against it) */
} nk_unop;

typedef struct nk_unary_params {
    nk_unop op;
    float alpha, beta; /* LeakyRelu, HardSigmoid */
    float lo, hi;      /* Clip */
} nk_unary_params;

nk_status nk_unary_f32(const nk_unary_params *p, const float *x, float *y, int64_t n);
/* Neg and Abs only (wrapping: -INT_MIN stays INT_MIN). */
nk_status nk_unary_i32(nk_unop op, const int32_t *x, int32_t *y, int64_t n);
nk_status nk_unary_i64(nk_unop op, const int64_t *x, int64_t *y, int64_t n);
/* Logical not of bools. */
nk_status nk_not(const uint8_t *x, uint8_t *y, int64_t n);

/* ONNX Cast with onnxruntime's (x86-64) results: float to integer truncates
 * toward zero through int64 (to I64) or int32 (to narrower types), a value out
 * of that range or NaN becomes its minimum, and narrow types keep the low
 * bits; integers narrow by wrapping; to bool is x != 0; f16 rounds to nearest
 * even. x and y must not overlap unless dtypes are equal. */
nk_status nk_cast(nk_dtype from, const void *x, nk_dtype to, void *y, int64_t n);
uint16_t nk_f32_to_f16(float f);
float nk_f16_to_f32(uint16_t h);

/* Softmax over a [outer, len, inner] view: normalized along the middle axis.
 * Opset-13 Softmax(axis) is outer = prod(dims[:axis]), len = dims[axis],
 * inner = prod(dims[axis+1:]); the older flatten-to-2D form is
 * len = prod(dims[axis:]), inner = 1. */
typedef struct nk_softmax_params {
    int64_t outer, len, inner;
    int log; /* LogSoftmax */
} nk_softmax_params;
nk_status nk_softmax_f32(const nk_softmax_params *p, const float *x, float *y);

typedef enum nk_reduce_op { NK_RED_SUM, NK_RED_MEAN, NK_RED_MAX, NK_RED_MIN } nk_reduce_op;

/* Reduces x over the axes whose bit is set in axes_mask; y holds the result
 * in C order of the kept dims (keepdims does not change the layout). An empty
 * reduction gives 0 (sum), NaN (mean), -inf (max), +inf (min). */
nk_status nk_reduce_f32(nk_reduce_op op, const nk_shape *x_shape, const float *x, uint32_t axes_mask, float *y);

#endif
