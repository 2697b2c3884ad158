/* Internal to the nn kernel family (kernels/nk_nn*.c): the blocked SGEMM
 * core with pluggable packing, so that Conv can pack its im2col matrix
 * straight from the image into the GEMM's panels. */
#ifndef NK_NN_INTERNAL_H
#define NK_NN_INTERNAL_H

#include <stddef.h>

#include "kernels/nk_nn.h"

/* Register tile and cache blocks. The tile is plain C that the compiler
 * vectorizes; on x86-64 it is 6 x 32 (6 rows of two AVX-512 or four AVX2
 * registers), on aarch64 12 x 16, elsewhere smaller so that it fits the
 * FPU's register file. KC x NR floats of B stay in L1, MC x KC of A in L2. */
/* The rv32 firmware's tile. A host build sizes scratch for it too
 * (nk_nn_gemm_scratch): the compiler states a host step's scratch in the
 * .npub from its own build, and the firmware checks it against its own
 * need (x86's 6-row panels round 18 rows to 18, the firmware's 4-row ones
 * to 20: a ConvTranspose's .npub gave 8 bytes too few). */
#define NK_FW_MR 4
#define NK_FW_NR 4
#define NK_FW_KC 128
#define NK_FW_MC 32
#define NK_FW_NC 128
#if defined(__x86_64__)
/* 6 x 32 (two AVX-512 registers per row): 12 accumulators that take 2 B
 * loads and 6 broadcasts per step, where 12 x 16 took 1 and 12; on Zen 5
 * ResNet-18's convolutions run 5-7% faster, with the same sums */
#define NK_MR 6
#define NK_NR 32
#define NK_KC 256
#define NK_MC 120
#define NK_NC 1024
#elif defined(__aarch64__)
#define NK_MR 12
#define NK_NR 16
#define NK_KC 256
#define NK_MC 120
#define NK_NC 1024
#else
#define NK_MR NK_FW_MR
#define NK_NR NK_FW_NR
#define NK_KC NK_FW_KC
#define NK_MC NK_FW_MC
#define NK_NC NK_FW_NC
#endif


/* Packs rows [i0, i0 + mc) x depth [p0, p0 + kc) of op(A) into MR-row panels:
 * dst[(i / MR) * kc * MR + p * MR + i % MR], zero-filled past mc. */
typedef void (*nk_pack_a_fn)(const void *ctx, int32_t i0, int32_t mc, int32_t p0, int32_t kc, float *dst);
/* Packs depth [p0, p0 + kc) x columns [j0, j0 + nc) of op(B) into NR-column
 * panels: dst[(j / NR) * kc * NR + p * NR + j % NR], zero-filled past nc. */
typedef void (*nk_pack_b_fn)(const void *ctx, int32_t p0, int32_t kc, int32_t j0, int32_t nc, float *dst);

typedef struct nk_gemm_core {
    int32_t m, n, k;
    nk_pack_a_fn pack_a;
    const void *a_ctx;
    /* op(A) packed ahead (nk_nn_prepack_a of a matrix with a_rows_up rows
     * rounded up to MR), this GEMM's row 0 at its row a_row0; or NULL */
    const float *a_packed;
    int32_t a_rows_up, a_row0;
    nk_pack_b_fn pack_b;
    const void *b_ctx;
    int32_t j_off;           /* column j of C is column j_off + j of op(B) for pack_b */
    const float *b_direct;   /* op(B) as a plain k x n matrix to read in place, or NULL */
    ptrdiff_t ldb_direct;
    float *c;
    ptrdiff_t ldc;
    float alpha;
    int accumulate;          /* add to C instead of overwriting it */
    const float *row_bias;   /* added per row of C after the sum, or NULL */
    nk_act act;              /* applied last */
} nk_gemm_core;

/* A dense matrix (or its transpose) as a packing source. */
typedef struct nk_mat_src {
    const float *p;
    ptrdiff_t ld;
    int trans;
} nk_mat_src;

void nk_nn_pack_a_mat(const void *ctx, int32_t i0, int32_t mc, int32_t p0, int32_t kc, float *dst);
void nk_nn_pack_b_mat(const void *ctx, int32_t p0, int32_t kc, int32_t j0, int32_t nc, float *dst);

size_t nk_nn_gemm_scratch(int32_t m, int32_t n, int32_t k);
/* Floats of an m x k op(A) packed ahead: every depth block's MR-row panels
 * as nk_nn_gemm_run would pack them, block after block. */
size_t nk_nn_prepack_a_floats(int32_t m, int32_t k);
void nk_nn_prepack_a(nk_pack_a_fn pack_a, const void *ctx, int32_t m, int32_t k, float *dst);
void nk_nn_gemm_run(const nk_gemm_core *g, void *scratch);

/* Applies act to n floats in place. */
void nk_nn_act_inplace(float *v, ptrdiff_t n, nk_act act);

/* Depthwise Conv (c == group), parameters already checked (nk_nn_dwconv.c):
 * the (image, group) pairs u = n * group + g in [u0, u1). */
size_t nk_nn_dw_scratch(const nk_conv_params *p);
void nk_nn_conv_depthwise(const nk_conv_params *p, const float *x, const float *w, const float *bias, float *y,
                          void *scratch, int64_t u0, int64_t u1);

/* Conv internals shared by nk_nn_conv.c and nk_nn_conv_shift.c. */
int nk_nn_conv_valid(const nk_conv_params *p);
void nk_nn_conv_core_a(const nk_conv_params *p, const float *w, const float *wpack, const float *bias, int32_t g,
                       int32_t r0, int32_t r1, nk_mat_src *as, nk_gemm_core *core);
/* Scratch bytes of the im2col-free route, 0 where it does not apply. */
size_t nk_nn_conv_shift_scratch(const nk_conv_params *p);
void nk_nn_conv_shift_gemm(const nk_conv_params *p, const float *x, const float *w, const float *wpack,
                           const float *bias, float *y, void *scratch, int32_t n, int32_t g, int32_t r0, int32_t r1,
                           int32_t j0, int32_t j1);

/* A half-open range of rows or columns. */
typedef struct nk_range {
    int32_t lo, hi;
} nk_range;

/* Part `part` of `parts` of an m x n output: a band of columns (whole
 * NR-column panels) when there are enough of them, else of rows (whole
 * MR-row tiles); parts beyond the panels or tiles get an empty range. */
void nk_nn_split(int32_t m, int32_t n, int part, int parts, nk_range *rows, nk_range *cols);

/* ---- a padded plane's stride phases (nk_nn_phase.c) ----
 * Strides 1 and 2 only (the callers' limit): a remainder and a quotient by
 * the stride are then a mask and a shift, not divisions (a division per
 * plane row cost 20% of a 7x7 depthwise plane). */

/* Columns of a phase: the padded width over stride_w, rounded up. */
static inline int32_t nk_nn_phase_w(const nk_conv_params *p)
{
    return (p->w + p->pad_left + p->pad_right + p->stride_w - 1) >> (p->stride_w - 1);
}

/* Rows of a phase holding `rows` padded rows. */
static inline int32_t nk_nn_phase_h(const nk_conv_params *p, int32_t rows)
{
    return (rows + p->stride_h - 1) >> (p->stride_h - 1);
}

/* Where padded (r, c) lies among one channel's phases of hq rows each. */
static inline ptrdiff_t nk_nn_phase_at(const nk_conv_params *p, int32_t hq, int32_t r, int32_t c)
{
    const int32_t sh = p->stride_h, sw = p->stride_w, wq = nk_nn_phase_w(p);
    return ((ptrdiff_t)(r & (sh - 1)) * sw + (c & (sw - 1))) * hq * wq + (ptrdiff_t)(r >> (sh - 1)) * wq +
           (c >> (sw - 1));
}

/* Columns 0, 2, ... of a row of ne + no floats to even, 1, 3, ... to odd
 * (ne = no or no + 1). */
void nk_nn_split_row(const float *restrict s, float *restrict even, float *restrict odd, int32_t ne, int32_t no);

/* The input rows of one channel's plane that fall in padded rows
 * [r0, r0 + rows) (r0 a multiple of stride_h) into its phases at dst; the
 * border is the caller's to zero. */
void nk_nn_phase_rows(const nk_conv_params *p, const float *plane, int32_t r0, int32_t rows, int32_t hq, float *dst);

static inline int32_t nk_nn_min32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

/* ceil(a / b) for b > 0 and any a. */
static inline int32_t nk_nn_ceil_div(int32_t a, int32_t b)
{
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

#endif
