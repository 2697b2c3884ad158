/* Stride-1 Conv without im2col (host builds). The input group is copied
 * once, zero-padded, into scratch. On that padded plane (wp columns a row)
 * the input of output (oy, ox) at tap (ky, kx) lies at
 * (oy + ky * dil_h) * wp + ox + kx * dil_w, so when the outputs are laid
 * out on the padded width too (wp columns an output row, the last wp - ow
 * of them discarded) every depth row of the GEMM's B is one contiguous run
 * of the padded plane, and a 16-column panel row is one 64-byte copy instead
 * of im2col's bounds checks and short runs. The GEMM writes into scratch and
 * the valid columns are copied out. Each output is the same sum of the same
 * products in the same order as by im2col (its padding entries are the same
 * zeros), so the two routes give the same bits (tests/unit/test_kernels_nn_part.c). */
#include <string.h>

#include "kernels/nk_nn_internal.h"

#define min32 nk_nn_min32

#if defined(__x86_64__) || defined(__aarch64__)

#define SHIFT_ALIGN 64

/* Stride 2 reads the padded plane's phases (nk_nn_phase.c): a tap's run
 * for output (oy, ox) starts at oy * phase_w + ox in its phase, as on the
 * plain padded plane for stride 1 (one phase). */

/* Padded rows that output rows [oy0, oy1) read. */
static int32_t in_rows(const nk_conv_params *p, int32_t oy0, int32_t oy1)
{
    return (oy1 - oy0 - 1) * p->stride_h + (p->kh - 1) * p->dil_h + 1;
}

/* Grid columns of output rows [oy0, oy1): the last row stops at ow. */
static int64_t grid_cols(const nk_conv_params *p, int32_t oy0, int32_t oy1)
{
    return (int64_t)(oy1 - oy0 - 1) * nk_nn_phase_w(p) + p->ow;
}

static float *align_up(void *q)
{
    uintptr_t u = (uintptr_t)q;
    return (float *)((u + SHIFT_ALIGN - 1) & ~(uintptr_t)(SHIFT_ALIGN - 1));
}

size_t nk_nn_conv_shift_scratch(const nk_conv_params *p)
{
    if (!nk_nn_conv_valid(p) || p->stride_h > 2 || p->stride_w > 2 || p->kh * p->kw < 2 || p->c == p->group)
        return 0;
    int64_t wq = nk_nn_phase_w(p), hp = (int64_t)p->h + p->pad_top + p->pad_bottom;
    /* the discarded columns are computed too: not worth it on narrow planes */
    if (2 * (wq - p->ow) > p->ow)
        return 0;
    int64_t plane = (int64_t)p->stride_h * p->stride_w * ((hp + p->stride_h - 1) / p->stride_h) * wq;
    int64_t cg = p->c / p->group, mg = p->m / p->group, kg = cg * p->kh * p->kw, cols = grid_cols(p, 0, p->oh);
    if (cols > INT32_MAX || cg * plane > INT32_MAX || mg * cols > INT32_MAX)
        return 0;
    size_t floats = (size_t)(cg * plane) + (size_t)(mg * cols);
    return floats * sizeof(float) + 2 * SHIFT_ALIGN + nk_nn_gemm_scratch((int32_t)mg, (int32_t)cols, (int32_t)kg);
}

/* Padded rows [r0, r0 + rows) of each channel of one group (r0 a multiple
 * of stride_h), into the phases: hq rows each, every channel a block of
 * stride_h * stride_w phases. */
static void pad_rows(const nk_conv_params *p, const float *xg, int32_t r0, int32_t rows, int32_t hq, float *dst)
{
    const ptrdiff_t plane = (ptrdiff_t)p->stride_h * p->stride_w * hq * nk_nn_phase_w(p);
    for (int32_t c = 0; c < p->c / p->group; c++, dst += plane) {
        memset(dst, 0, sizeof(float) * (size_t)plane);
        nk_nn_phase_rows(p, xg + (ptrdiff_t)c * p->h * p->w, r0, rows, hq, dst);
    }
}

typedef struct shift_src {
    const nk_conv_params *p;
    const float *xp;  /* the padded phases of channel 0 */
    ptrdiff_t plane;  /* floats a padded channel (all its phases) */
    int32_t hq;       /* rows a phase */
} shift_src;

/* nk_pack_b_fn over the padded plane: depth row k = (c, ky, kx) is the run
 * starting at the tap's offset in channel c's plane. Panel by panel, so
 * that the writes are sequential (row by row they stride by a panel). */
static void pack_shift(const void *ctx, int32_t p0, int32_t kc, int32_t j0, int32_t nc, float *dst)
{
    const shift_src *s = ctx;
    const nk_conv_params *p = s->p;
    const int32_t khw = p->kh * p->kw;
    ptrdiff_t off[NK_KC];
    for (int32_t q = 0; q < kc; q++) {
        int32_t k = p0 + q, ch = k / khw, r = k % khw, ky = r / p->kw, kx = r % p->kw;
        off[q] = ch * s->plane + nk_nn_phase_at(p, s->hq, ky * p->dil_h, kx * p->dil_w) + j0;
    }
    int32_t b = 0;
    for (; b + NK_NR <= nc; b += NK_NR)
        for (int32_t q = 0; q < kc; q++, dst += NK_NR)
            memcpy(dst, s->xp + off[q] + b, sizeof(float) * NK_NR);
    if (b < nc)
        for (int32_t q = 0; q < kc; q++, dst += NK_NR) {
            memcpy(dst, s->xp + off[q] + b, sizeof(float) * (size_t)(nc - b));
            memset(dst + (nc - b), 0, sizeof(float) * (size_t)(NK_NR - (nc - b)));
        }
}

void nk_nn_conv_shift_gemm(const nk_conv_params *p, const float *x, const float *w, const float *wpack,
                           const float *bias, float *y, void *scratch, int32_t n, int32_t g, int32_t r0, int32_t r1,
                           int32_t j0, int32_t j1)
{
    if (r1 <= r0 || j1 <= j0)
        return;
    const int32_t cg = p->c / p->group, mg = p->m / p->group, ow = p->ow, wq = nk_nn_phase_w(p);
    const int32_t cols = p->oh * ow, oy0 = j0 / ow, oy1 = (j1 - 1) / ow + 1;
    const int32_t rows = in_rows(p, oy0, oy1), hq = nk_nn_phase_h(p, rows), ncols = (int32_t)grid_cols(p, oy0, oy1);
    const ptrdiff_t plane = (ptrdiff_t)p->stride_h * p->stride_w * hq * wq;
    const float *xg = x + ((ptrdiff_t)n * p->c + (ptrdiff_t)g * cg) * p->h * p->w;
    float *xp = align_up(scratch);
    pad_rows(p, xg, oy0 * p->stride_h, rows, hq, xp);
    float *cb = align_up(xp + (ptrdiff_t)cg * plane);
    shift_src src = {p, xp, plane, hq};
    nk_mat_src as;
    nk_gemm_core core;
    nk_nn_conv_core_a(p, w, wpack, bias, g, r0, r1, &as, &core);
    core.n = ncols;
    core.pack_b = pack_shift;
    core.b_ctx = &src;
    core.c = cb;
    core.ldc = ncols;
    nk_nn_gemm_run(&core, cb + (ptrdiff_t)(r1 - r0) * ncols);
    /* the valid columns of [j0, j1) out of the padded grid */
    for (int32_t i = 0; i < r1 - r0; i++) {
        float *yrow = y + ((ptrdiff_t)n * p->m + (ptrdiff_t)g * mg + r0 + i) * cols;
        for (int32_t oy = oy0; oy < oy1; oy++) {
            int32_t a = j0 - oy * ow, b = j1 - oy * ow;
            a = a < 0 ? 0 : a;
            b = min32(b, ow);
            memcpy(yrow + (ptrdiff_t)oy * ow + a, cb + (ptrdiff_t)i * ncols + (ptrdiff_t)(oy - oy0) * wq + a,
                   sizeof(float) * (size_t)(b - a));
        }
    }
}

#else /* the firmware keeps im2col and its small scratch */

size_t nk_nn_conv_shift_scratch(const nk_conv_params *p)
{
    (void)p;
    return 0;
}

void nk_nn_conv_shift_gemm(const nk_conv_params *p, const float *x, const float *w, const float *wpack,
                           const float *bias, float *y, void *scratch, int32_t n, int32_t g, int32_t r0, int32_t r1,
                           int32_t j0, int32_t j1)
{
    (void)p, (void)x, (void)w, (void)wpack, (void)bias, (void)y, (void)scratch;
    (void)n, (void)g, (void)r0, (void)r1, (void)j0, (void)j1;
}

#endif
