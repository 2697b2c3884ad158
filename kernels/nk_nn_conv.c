/* Conv and ConvTranspose. Conv is a GEMM per (image, group):
 * Y[m][oh*ow] = W[m][cg*kh*kw] x im2col(X)[cg*kh*kw][oh*ow], with the im2col
 * matrix packed block by block straight from the image into the GEMM's
 * panels (no full im2col buffer), a plain matrix for 1x1 stride-1 layers,
 * and direct loops for depthwise layers (nk_nn_dwconv.c).
 * ConvTranspose is the GEMM W^T x X into a column buffer, then col2im. */
#include <string.h>

#include "kernels/nk_nn_internal.h"

#define min32 nk_nn_min32
#define conv_valid nk_nn_conv_valid
#define ceil_div nk_nn_ceil_div

/* Shared checks; on success *cg, *mg, *kg hold the per-group sizes. */
static int conv_common_valid(const nk_conv_params *p)
{
    if (p->n < 0 || p->c < 1 || p->h < 1 || p->w < 1 || p->m < 1 || p->oh < 1 || p->ow < 1 || p->kh < 1 ||
        p->kw < 1 || p->group < 1 || p->stride_h < 1 || p->stride_w < 1 || p->dil_h < 1 || p->dil_w < 1)
        return 0;
    if (p->c % p->group || p->m % p->group)
        return 0;
    /* every per-image plane and matrix dimension must fit the int32 GEMM */
    int64_t kg = (int64_t)(p->c / p->group) * p->kh * p->kw, kt = (int64_t)(p->m / p->group) * p->kh * p->kw;
    return kg <= INT32_MAX && kt <= INT32_MAX && (int64_t)p->oh * p->ow <= INT32_MAX &&
           (int64_t)p->h * p->w <= INT32_MAX;
}

int nk_nn_conv_valid(const nk_conv_params *p)
{
    if (!conv_common_valid(p) || p->pad_top < 0 || p->pad_left < 0 || p->pad_bottom < 0 || p->pad_right < 0)
        return 0;
    int64_t ekh = (int64_t)(p->kh - 1) * p->dil_h + 1, ekw = (int64_t)(p->kw - 1) * p->dil_w + 1;
    int64_t ph = (int64_t)p->h + p->pad_top + p->pad_bottom, pw = (int64_t)p->w + p->pad_left + p->pad_right;
    return ph >= ekh && pw >= ekw && p->oh == (ph - ekh) / p->stride_h + 1 && p->ow == (pw - ekw) / p->stride_w + 1;
}

static int is_depthwise(const nk_conv_params *p)
{
    return p->c == p->group;
}

static int is_pointwise(const nk_conv_params *p)
{
    return p->kh == 1 && p->kw == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
           p->pad_left == 0 && p->pad_bottom == 0 && p->pad_right == 0;
}

size_t nk_conv_scratch_size(const nk_conv_params *p)
{
    if (!conv_valid(p))
        return 0;
    if (is_depthwise(p))
        return nk_nn_dw_scratch(p);
    return nk_nn_gemm_scratch(p->m / p->group, p->oh * p->ow, (p->c / p->group) * p->kh * p->kw);
}

/* ---- im2col packing ------------------------------------------------------- */

typedef struct im2col_src {
    const float *x; /* first channel of the group, this image */
    const nk_conv_params *p;
} im2col_src;

/* A write cursor over NR-column panels for one depth row. On hosts the row
 * is built whole in a line (CUR_LANES unbounded: one copy per input row
 * run, not one per 16 columns) and then cut into the panels with copies of
 * constant size; the rv32 firmware writes the panels directly, as before
 * (its stack is small and its simulated cycles stay as they were). */
#if defined(__x86_64__) || defined(__aarch64__)
#define IM2COL_LINE 1
#define CUR_LANES INT32_MAX
#else
#define IM2COL_LINE 0
#define CUR_LANES NK_NR
#endif

typedef struct panel_cursor {
    float *d;
    int32_t lane;
    ptrdiff_t step; /* kc * NR: from one panel to the next */
} panel_cursor;

static void put_zeros(panel_cursor *c, int32_t n)
{
    while (n > 0) {
        int32_t k = min32(n, CUR_LANES - c->lane);
        memset(c->d + c->lane, 0, sizeof(float) * (size_t)k);
        n -= k;
        if ((c->lane += k) == CUR_LANES) {
            c->lane = 0;
            c->d += c->step;
        }
    }
}

static void put_run(panel_cursor *c, const float *src, int32_t n, int32_t stride)
{
    while (n > 0) {
        int32_t k = min32(n, CUR_LANES - c->lane);
        float *d = c->d + c->lane;
        if (stride == 1)
            memcpy(d, src, sizeof(float) * (size_t)k);
        else
            for (int32_t t = 0; t < k; t++)
                d[t] = src[(ptrdiff_t)t * stride];
        src += (ptrdiff_t)k * stride;
        n -= k;
        if ((c->lane += k) == CUR_LANES) {
            c->lane = 0;
            c->d += c->step;
        }
    }
}

static void pack_im2col_cols(const void *ctx, int32_t p0, int32_t kc, int32_t j0, int32_t nc, float *dst);

/* Columns [j0, j0 + nc) of depth rows [p0, p0 + kc) into NR-column panels
 * (the line holds at most NK_NC columns: wider ranges go in pieces). */
static void pack_im2col(const void *ctx, int32_t p0, int32_t kc, int32_t j0, int32_t nc, float *dst)
{
    for (int32_t j = 0; j < nc; j += NK_NC)
        pack_im2col_cols(ctx, p0, kc, j0 + j, min32(nc - j, NK_NC), dst + (ptrdiff_t)(j / NK_NR) * kc * NK_NR);
}

static void pack_im2col_cols(const void *ctx, int32_t p0, int32_t kc, int32_t j0, int32_t nc, float *dst)
{
#if IM2COL_LINE
    float line[NK_NC + NK_NR];
#endif
    const im2col_src *s = ctx;
    const nk_conv_params *p = s->p;
    const int32_t khw = p->kh * p->kw, ow = p->ow;
    const int32_t tail = (NK_NR - nc % NK_NR) % NK_NR; /* zero lanes of the last panel */
    for (int32_t q = 0; q < kc; q++) {
        int32_t k = p0 + q, ch = k / khw, r = k % khw, ky = r / p->kw, kx = r % p->kw;
        const float *plane = s->x + (ptrdiff_t)ch * p->h * p->w;
        int32_t yoff = ky * p->dil_h - p->pad_top, xoff = kx * p->dil_w - p->pad_left;
        /* output columns ox whose input column ix = ox * sw + xoff lies in [0, w) */
        int32_t lo = xoff >= 0 ? 0 : ceil_div(-xoff, p->stride_w);
        int32_t hi = ceil_div(p->w - xoff, p->stride_w);
        lo = min32(lo, ow);
        hi = hi < lo ? lo : min32(hi, ow);
#if IM2COL_LINE
        panel_cursor cur = {line, 0, 0};
#else
        panel_cursor cur = {dst + (ptrdiff_t)q * NK_NR, 0, (ptrdiff_t)kc * NK_NR};
#endif
        int32_t j = j0, end = j0 + nc;
        while (j < end) {
            int32_t oy = j / ow, ox = j % ow, seg_end = min32(ow, ox + (end - j));
            int32_t iy = oy * p->stride_h + yoff;
            if (iy < 0 || iy >= p->h) {
                put_zeros(&cur, seg_end - ox);
            } else {
                const float *row = plane + (ptrdiff_t)iy * p->w;
                int32_t a = ox < lo ? min32(lo, seg_end) : ox, b = hi < a ? a : min32(hi, seg_end);
                put_zeros(&cur, a - ox);
                if (b > a)
                    put_run(&cur, row + (ptrdiff_t)a * p->stride_w + xoff, b - a, p->stride_w);
                put_zeros(&cur, seg_end - b);
            }
            j += seg_end - ox;
        }
        put_zeros(&cur, tail);
#if IM2COL_LINE
        for (int32_t b = 0; b * NK_NR < nc; b++)
            memcpy(dst + ((ptrdiff_t)b * kc + q) * NK_NR, line + (ptrdiff_t)b * NK_NR, sizeof(float) * NK_NR);
#endif
    }
}

/* The A side (weights, bias, activation) of rows [r0, r1) of group g's GEMM;
 * the caller sets the columns and C. as must outlive the core. */
void nk_nn_conv_core_a(const nk_conv_params *p, const float *w, const float *wpack, const float *bias, int32_t g,
                       int32_t r0, int32_t r1, nk_mat_src *as, nk_gemm_core *core)
{
    const int32_t mg = p->m / p->group, kg = (p->c / p->group) * p->kh * p->kw;
    *as = (nk_mat_src){w + ((ptrdiff_t)g * mg + r0) * kg, kg, 0};
    *core = (nk_gemm_core){.m = r1 - r0, .k = kg, .pack_a = nk_nn_pack_a_mat, .a_ctx = as, .alpha = 1.0f,
                           .row_bias = bias ? bias + (ptrdiff_t)g * mg + r0 : NULL, .act = p->act};
    if (wpack) {
        core->a_rows_up = (int32_t)(nk_nn_prepack_a_floats(mg, kg) / (size_t)kg);
        core->a_packed = wpack + (size_t)g * nk_nn_prepack_a_floats(mg, kg);
        core->a_row0 = r0;
    }
}

/* Rows [r0, r1) x columns [j0, j1) of the GEMM of one (image, group). */
static void conv_gemm(const nk_conv_params *p, const float *x, const float *w, const float *wpack,
                      const float *bias, float *y, void *scratch, int32_t n, int32_t g, int32_t r0, int32_t r1,
                      int32_t j0, int32_t j1)
{
    const int32_t cg = p->c / p->group, mg = p->m / p->group;
    const int32_t cols = p->oh * p->ow;
    const ptrdiff_t iplane = (ptrdiff_t)p->h * p->w;
    if (r1 <= r0 || j1 <= j0)
        return;
    const float *xg = x + ((ptrdiff_t)n * p->c + (ptrdiff_t)g * cg) * iplane;
    nk_mat_src as, bs = {xg, cols, 0};
    im2col_src is = {xg, p};
    nk_gemm_core core;
    nk_nn_conv_core_a(p, w, wpack, bias, g, r0, r1, &as, &core);
    core.n = j1 - j0;
    core.j_off = j0;
    core.c = y + ((ptrdiff_t)n * p->m + (ptrdiff_t)g * mg + r0) * cols + j0;
    core.ldc = cols;
    if (is_pointwise(p)) {
        core.pack_b = nk_nn_pack_b_mat;
        core.b_ctx = &bs;
        core.b_direct = xg + j0;
        core.ldb_direct = cols;
    } else {
        core.pack_b = pack_im2col;
        core.b_ctx = &is;
    }
    nk_nn_gemm_run(&core, scratch);
}

nk_status nk_conv(const nk_conv_params *p, const float *x, const float *w, const float *bias, float *y,
                  void *scratch)
{
    return nk_conv_part(p, x, w, NULL, bias, y, scratch, 0, 1);
}

size_t nk_conv_wpack_size(const nk_conv_params *p)
{
    if (!conv_valid(p) || is_depthwise(p))
        return 0;
    return (size_t)p->group * nk_nn_prepack_a_floats(p->m / p->group, (p->c / p->group) * p->kh * p->kw) *
           sizeof(float);
}

void nk_conv_wpack(const nk_conv_params *p, const float *w, float *dst)
{
    if (!nk_conv_wpack_size(p))
        return;
    const int32_t mg = p->m / p->group, kg = (p->c / p->group) * p->kh * p->kw;
    for (int32_t g = 0; g < p->group; g++) {
        nk_mat_src as = {w + (ptrdiff_t)g * mg * kg, kg, 0};
        nk_nn_prepack_a(nk_nn_pack_a_mat, &as, mg, kg, dst + (size_t)g * nk_nn_prepack_a_floats(mg, kg));
    }
}

/* Part `part` of `parts`, each GEMM by im2col or, with shift, by the
 * padded-plane route of nk_nn_conv_shift.c. */
static nk_status conv_part_run(const nk_conv_params *p, const float *x, const float *w, const float *wpack,
                               const float *bias, float *y, void *scratch, int part, int parts, int shift)
{
    if (!conv_valid(p) || parts < 1 || part < 0 || part >= parts)
        return NK_EARG;
    if (p->n == 0)
        return NK_OK;
    if (!x || !w || !y || (!scratch && nk_conv_scratch_size(p)))
        return NK_EARG;
    const int64_t jobs = (int64_t)p->n * p->group;
    if (is_depthwise(p)) { /* whole channels: a slice of the (image, group) pairs */
        nk_nn_conv_depthwise(p, x, w, bias, y, scratch, jobs * part / parts, jobs * (part + 1) / parts);
        return NK_OK;
    }
    const int32_t mg = p->m / p->group, cols = p->oh * p->ow;
    int64_t q0 = 0, q1 = jobs;
    nk_range rows = {0, mg}, cr = {0, cols};
    if (parts > 1 && jobs >= 2 * parts) { /* many GEMMs: whole ones */
        q0 = jobs * part / parts;
        q1 = jobs * (part + 1) / parts;
    } else if (parts > 1) { /* few large GEMMs: a slice of each */
        nk_nn_split(mg, cols, part, parts, &rows, &cr);
    }
    for (int64_t q = q0; q < q1; q++) {
        int32_t n = (int32_t)(q / p->group), g = (int32_t)(q % p->group);
        if (shift)
            nk_nn_conv_shift_gemm(p, x, w, wpack, bias, y, scratch, n, g, rows.lo, rows.hi, cr.lo, cr.hi);
        else
            conv_gemm(p, x, w, wpack, bias, y, scratch, n, g, rows.lo, rows.hi, cr.lo, cr.hi);
    }
    return NK_OK;
}

nk_status nk_conv_part(const nk_conv_params *p, const float *x, const float *w, const float *wpack,
                       const float *bias, float *y, void *scratch, int part, int parts)
{
    return conv_part_run(p, x, w, wpack, bias, y, scratch, part, parts, 0);
}

size_t nk_conv_fast_scratch_size(const nk_conv_params *p)
{
    size_t im2col = nk_conv_scratch_size(p), shift = nk_nn_conv_shift_scratch(p);
    return shift > im2col ? shift : im2col;
}

nk_status nk_conv_part_fast(const nk_conv_params *p, const float *x, const float *w, const float *wpack,
                            const float *bias, float *y, void *scratch, int part, int parts)
{
    return conv_part_run(p, x, w, wpack, bias, y, scratch, part, parts, nk_nn_conv_shift_scratch(p) > 0);
}

/* ---- ConvTranspose -------------------------------------------------------------- */

static int conv_transpose_valid(const nk_conv_params *p)
{
    if (!conv_common_valid(p) || p->out_pad_h < 0 || p->out_pad_w < 0)
        return 0;
    int64_t ekh = (int64_t)(p->kh - 1) * p->dil_h + 1, ekw = (int64_t)(p->kw - 1) * p->dil_w + 1;
    int64_t oh = (int64_t)p->stride_h * (p->h - 1) + p->out_pad_h + ekh - p->pad_top - p->pad_bottom;
    int64_t ow = (int64_t)p->stride_w * (p->w - 1) + p->out_pad_w + ekw - p->pad_left - p->pad_right;
    return oh == p->oh && ow == p->ow;
}

/* The GEMM output is (mg*kh*kw) x chunk columns of the input plane; chunks
 * keep that buffer near 1M floats however large the image. */
enum { CT_COL_BUDGET = 1 << 20 };

static int32_t ct_chunk(const nk_conv_params *p)
{
    int64_t rows = (int64_t)(p->m / p->group) * p->kh * p->kw, plane = (int64_t)p->h * p->w;
    int64_t chunk = CT_COL_BUDGET / rows;
    if (chunk < NK_NR)
        chunk = NK_NR;
    return (int32_t)(chunk < plane ? chunk : plane);
}

size_t nk_conv_transpose_scratch_size(const nk_conv_params *p)
{
    if (!conv_transpose_valid(p))
        return 0;
    int32_t rows = (p->m / p->group) * p->kh * p->kw, chunk = ct_chunk(p);
    return (size_t)rows * (size_t)chunk * sizeof(float) + nk_nn_gemm_scratch(rows, chunk, p->c / p->group) + 64;
}

/* Adds col[r][j] (r = (out channel, ky, kx), j = input pixel jc + j) to the
 * output pixels they land on. */
static void col2im(const nk_conv_params *p, const float *col, int32_t rows, int32_t jc, int32_t nj, float *yg)
{
    const int32_t khw = p->kh * p->kw;
    const ptrdiff_t oplane = (ptrdiff_t)p->oh * p->ow;
    for (int32_t r = 0; r < rows; r++) {
        int32_t mo = r / khw, ky = (r % khw) / p->kw, kx = r % p->kw;
        float *yo = yg + mo * oplane;
        const float *cr = col + (ptrdiff_t)r * nj;
        int32_t yoff = ky * p->dil_h - p->pad_top, xoff = kx * p->dil_w - p->pad_left;
        /* input columns ix with ox = ix * sw + xoff in [0, ow) */
        int32_t lo = xoff >= 0 ? 0 : ceil_div(-xoff, p->stride_w);
        int32_t hi = ceil_div(p->ow - xoff, p->stride_w);
        for (int32_t j = jc, end = jc + nj; j < end;) {
            int32_t iy = j / p->w, ix = j % p->w, seg_end = min32(p->w, ix + (end - j));
            int32_t oy = iy * p->stride_h + yoff;
            if (oy >= 0 && oy < p->oh) {
                float *orow = yo + (ptrdiff_t)oy * p->ow;
                const float *src = cr + (j - jc); /* input column ix */
                int32_t a = ix > lo ? ix : lo, b = hi < seg_end ? hi : seg_end;
                for (int32_t t = a; t < b; t++)
                    orow[(ptrdiff_t)t * p->stride_w + xoff] += src[t - ix];
            }
            j += seg_end - ix;
        }
    }
}

nk_status nk_conv_transpose(const nk_conv_params *p, const float *x, const float *w, const float *bias,
                            float *y, void *scratch)
{
    if (!conv_transpose_valid(p))
        return NK_EARG;
    if (p->n == 0)
        return NK_OK;
    if (!x || !w || !y || !scratch)
        return NK_EARG;
    const int32_t cg = p->c / p->group, mg = p->m / p->group, rows = mg * p->kh * p->kw;
    const int32_t plane = p->h * p->w, chunk = ct_chunk(p);
    const ptrdiff_t oplane = (ptrdiff_t)p->oh * p->ow;
    float *col = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    void *gscratch = col + (size_t)rows * (size_t)chunk;
    for (int32_t n = 0; n < p->n; n++) {
        float *yn = y + (ptrdiff_t)n * p->m * oplane;
        for (int32_t oc = 0; oc < p->m; oc++) {
            float b = bias ? bias[oc] : 0.0f;
            for (ptrdiff_t i = 0; i < oplane; i++)
                yn[oc * oplane + i] = b;
        }
        for (int32_t g = 0; g < p->group; g++) {
            const float *xg = x + ((ptrdiff_t)n * p->c + (ptrdiff_t)g * cg) * plane;
            nk_mat_src as = {w + (ptrdiff_t)g * cg * rows, rows, 1};
            for (int32_t jc = 0; jc < plane; jc += chunk) {
                int32_t nj = min32(chunk, plane - jc);
                nk_mat_src bs = {xg + jc, plane, 0};
                nk_gemm_core core = {.m = rows, .n = nj, .k = cg, .pack_a = nk_nn_pack_a_mat, .a_ctx = &as,
                                     .pack_b = nk_nn_pack_b_mat, .b_ctx = &bs, .c = col, .ldc = nj,
                                     .alpha = 1.0f};
                nk_nn_gemm_run(&core, gscratch);
                col2im(p, col, rows, jc, nj, yn + (ptrdiff_t)g * mg * oplane);
            }
        }
        nk_nn_act_inplace(yn, (ptrdiff_t)p->m * oplane, p->act);
    }
    return NK_OK;
}
