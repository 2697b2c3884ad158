/* Float32 "neural network" kernels, NCHW: SGEMM, Gemm, MatMul, Conv,
 * ConvTranspose, BatchNormalization, pools and Resize, with ONNX semantics.
 *
 * Every kernel takes a parameter struct that fully describes the shapes (the
 * caller's buffers must match them), checks it (NK_EARG for inconsistent
 * parameters, NK_EUNSUPPORTED for a combination it does not do), and uses
 * only caller-owned scratch: nk_X_scratch_size(p) bytes, any alignment. The
 * size functions return 0 for invalid parameters (the kernel then reports
 * the error). Convolutions and matrix products share one register-tiled,
 * cache-blocked SGEMM that accumulates in float; results do not depend on
 * the SIMD width the build chose: a fixed summation order, and the GEMM
 * multiply-adds are explicit fmaf (exactly rounded on every target) with no
 * other contraction. */
#ifndef NK_NN_H
#define NK_NN_H

#include "kernels/nk_common.h"

/* ---- SGEMM: C = alpha * op(A) op(B) (+ C when accumulate) ---------------- */
typedef struct nk_sgemm_params {
    int32_t m, n, k;
    int trans_a, trans_b;   /* op(A) is m x k: A is m x k (lda >= k) or, transposed, k x m (lda >= m) */
    int32_t lda, ldb, ldc;  /* row strides in elements */
    float alpha;
    int accumulate;         /* 0: C is overwritten, 1: added to */
} nk_sgemm_params;

size_t nk_sgemm_scratch_size(const nk_sgemm_params *p);
nk_status nk_sgemm(const nk_sgemm_params *p, const float *a, const float *b, float *c, void *scratch);

/* ---- Gemm (ONNX): Y = act(alpha * op(A) op(B) + beta * C) ----------------- */
typedef struct nk_gemm_params {
    int32_t m, n, k;
    int trans_a, trans_b;  /* A is m x k or k x m; B is k x n or n x k; dense */
    float alpha, beta;
    /* C's shape after right-aligning it to (m, n): c_rows in {1, m}, c_cols in
     * {1, n} (1 broadcasts). Ignored when c is NULL. */
    int32_t c_rows, c_cols;
    nk_act act;
} nk_gemm_params;

size_t nk_gemm_scratch_size(const nk_gemm_params *p);
nk_status nk_gemm(const nk_gemm_params *p, const float *a, const float *b, const float *c, float *y, void *scratch);
/* Part `part` of `parts` (0 <= part < parts) of nk_gemm's outputs: the parts
 * together write every output once, each bit for bit as nk_gemm does, so
 * that threads can take one each (src/ref). Each needs its own scratch. */
nk_status nk_gemm_part(const nk_gemm_params *p, const float *a, const float *b, const float *c, float *y,
                       void *scratch, int part, int parts);

/* ---- MatMul (numpy): batch dims broadcast, rank >= 2 ----------------------- */
/* 1-D operands are the caller's business: (K) becomes (1, K) for A, (K, 1)
 * for B. Y has shape broadcast(a.batch, b.batch) + (M, N), dense. */
typedef struct nk_matmul_params {
    nk_shape a, b;
} nk_matmul_params;

size_t nk_matmul_scratch_size(const nk_matmul_params *p);
nk_status nk_matmul(const nk_matmul_params *p, const float *a, const float *b, float *y, void *scratch);

/* ---- Conv and ConvTranspose, 2-D (1-D as h = kh = 1) ----------------------- */
typedef struct nk_conv_params {
    int32_t n, c, h, w;    /* input */
    int32_t m, oh, ow;     /* output channels and size (checked against the others) */
    int32_t kh, kw;
    int32_t group;         /* c and m divisible by it; depthwise is group == c */
    int32_t stride_h, stride_w, dil_h, dil_w;
    int32_t pad_top, pad_left, pad_bottom, pad_right;
    int32_t out_pad_h, out_pad_w; /* ConvTranspose output_padding; 0 for Conv */
    nk_act act;
} nk_conv_params;

/* Conv: x (n, c, h, w), w (m, c/group, kh, kw), bias (m) or NULL. Pads >= 0,
 * oh = (h + pad_top + pad_bottom - ((kh - 1) * dil_h + 1)) / stride_h + 1. */
size_t nk_conv_scratch_size(const nk_conv_params *p);
nk_status nk_conv(const nk_conv_params *p, const float *x, const float *w, const float *bias, float *y,
                  void *scratch);
/* Part `part` of `parts` of nk_conv's outputs, as nk_gemm_part. wpack:
 * NULL, or w packed ahead by nk_conv_wpack (then the weights are not
 * repacked on every call; the outputs are the same bits either way). */
nk_status nk_conv_part(const nk_conv_params *p, const float *x, const float *w, const float *wpack,
                       const float *bias, float *y, void *scratch, int part, int parts);
/* The same outputs, bit for bit, faster on host builds: stride-1 convs
 * with more than one tap run without im2col (nk_nn_conv_shift.c) when
 * scratch holds nk_conv_fast_scratch_size bytes (>= nk_conv_scratch_size;
 * the firmware keeps the smaller scratch and im2col). */
size_t nk_conv_fast_scratch_size(const nk_conv_params *p);
nk_status nk_conv_part_fast(const nk_conv_params *p, const float *x, const float *w, const float *wpack,
                            const float *bias, float *y, void *scratch, int part, int parts);
/* Bytes of w packed ahead (0: the layer does not use it, e.g. depthwise). */
size_t nk_conv_wpack_size(const nk_conv_params *p);
void nk_conv_wpack(const nk_conv_params *p, const float *w, float *dst);

/* ConvTranspose: x (n, c, h, w), w (c, m/group, kh, kw), bias (m) or NULL.
 * oh = stride_h * (h - 1) + out_pad_h + ((kh - 1) * dil_h + 1) - pad_top - pad_bottom
 * (pads may be negative, which is how an output_shape larger than the
 * natural size arrives). */
size_t nk_conv_transpose_scratch_size(const nk_conv_params *p);
nk_status nk_conv_transpose(const nk_conv_params *p, const float *x, const float *w, const float *bias,
                            float *y, void *scratch);

/* ---- BatchNormalization (inference) ---------------------------------------- */
/* y = act((x - mean) / sqrt(var + epsilon) * scale + bias) per channel;
 * x is (n, c, spatial...) with spatial elements per channel plane. */
typedef struct nk_batchnorm_params {
    int32_t n, c;
    int64_t spatial;
    float epsilon;
    nk_act act;
} nk_batchnorm_params;

nk_status nk_batchnorm(const nk_batchnorm_params *p, const float *x, const float *scale, const float *bias,
                       const float *mean, const float *var, float *y);

/* ---- MaxPool, AveragePool: 1-D to 3-D spatial ------------------------------ */
#define NK_POOL_MAX_DIMS 3
typedef struct nk_pool_params {
    int32_t n, c;
    int rank;  /* spatial rank, 1..3 */
    int32_t in[NK_POOL_MAX_DIMS], out[NK_POOL_MAX_DIMS];
    int32_t kernel[NK_POOL_MAX_DIMS], stride[NK_POOL_MAX_DIMS], dilation[NK_POOL_MAX_DIMS];
    int32_t pad_begin[NK_POOL_MAX_DIMS], pad_end[NK_POOL_MAX_DIMS];
    /* The output size decides ceil_mode; a window must start inside the
     * input or its begin padding. */
    int count_include_pad; /* AveragePool: divide by the window clipped to the padded input */
    int storage_order;     /* MaxPool Indices: 0 row major, 1 column major (2-D only) */
} nk_pool_params;

/* indices (int64, same shape as y) may be NULL; positions are flat over
 * (n, c, spatial) of x, as ONNX defines them. */
nk_status nk_maxpool(const nk_pool_params *p, const float *x, float *y, int64_t *indices);
nk_status nk_avgpool(const nk_pool_params *p, const float *x, float *y);

/* GlobalAveragePool / GlobalMaxPool: y[nc] over spatial elements each. */
typedef struct nk_global_pool_params {
    int32_t n, c;
    int64_t spatial;
} nk_global_pool_params;

nk_status nk_global_avgpool(const nk_global_pool_params *p, const float *x, float *y);
nk_status nk_global_maxpool(const nk_global_pool_params *p, const float *x, float *y);

/* ---- Resize (ONNX opset 11-17) and Upsample ------------------------------- */
typedef enum nk_resize_mode { NK_RESIZE_NEAREST, NK_RESIZE_LINEAR, NK_RESIZE_CUBIC } nk_resize_mode;

typedef enum nk_resize_coord {
    NK_COORD_HALF_PIXEL,
    NK_COORD_PYTORCH_HALF_PIXEL,
    NK_COORD_ALIGN_CORNERS,
    NK_COORD_ASYMMETRIC,
    NK_COORD_TF_HALF_PIXEL_FOR_NN,
    NK_COORD_TF_CROP_AND_RESIZE,
} nk_resize_coord;

typedef enum nk_resize_nearest {
    NK_NEAREST_ROUND_PREFER_FLOOR,
    NK_NEAREST_ROUND_PREFER_CEIL,
    NK_NEAREST_FLOOR,
    NK_NEAREST_CEIL,
    NK_NEAREST_SIMPLE, /* Upsample: floor when scale >= 1, ceil when downsampling */
} nk_resize_nearest;

typedef struct nk_resize_params {
    int rank;
    int32_t in[NK_MAX_RANK], out[NK_MAX_RANK];
    /* Per dimension: the scale of the coordinate transform, > 0 as given
     * by the scales input, or 0 for out / in exactly (sizes were given). */
    float scale[NK_MAX_RANK];
    float roi_start[NK_MAX_RANK], roi_end[NK_MAX_RANK]; /* tf_crop_and_resize only, normalized */
    nk_resize_mode mode;
    nk_resize_coord coord;
    nk_resize_nearest nearest;
    float cubic_a;             /* cubic_coeff_a, ONNX default -0.75 */
    int exclude_outside;
    float extrapolation_value; /* tf_crop_and_resize outside the input */
} nk_resize_params;

size_t nk_resize_scratch_size(const nk_resize_params *p);
nk_status nk_resize(const nk_resize_params *p, const float *x, float *y, void *scratch);

#endif
