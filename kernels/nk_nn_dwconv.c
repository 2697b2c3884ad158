/* Depthwise Conv (one input channel per group), direct: per output row,
 * the taps inside the input are listed once, then blocks of 16 or 8
 * interior outputs are summed in registers and the borders one by one.
 * For stride 2 each input plane is first split into even and odd columns
 * (in scratch) so that every tap reads contiguous memory.
 * Every output sums bias, then the taps in order of ky then kx (taps
 * outside the input skipped), in every path. */
#include <string.h>

#include "kernels/nk_nn_internal.h"

#define min32 nk_nn_min32
#define ceil_div nk_nn_ceil_div

enum { DW_MAX_TAPS = 64 };

typedef struct dw_taps {
    int n;
    const float *row[DW_MAX_TAPS]; /* the tap's input row (plain, or one half of a split row) */
    int32_t off[DW_MAX_TAPS];      /* its element for output 0, relative to row */
    float w[DW_MAX_TAPS];
    /* for the checked path: the plain input row and kx of each tap */
    const float *plain[DW_MAX_TAPS];
    int32_t kx[DW_MAX_TAPS];
} dw_taps;

/* NB interior outputs from ox0: acc[j] = b + sum over taps of w * row[off + ox0 + j]. */
#define NK_DW_BLOCK(name, NB)                                                                        \
    NK_HOT_CLONES static void name(const dw_taps *t, int32_t ox0, float b, float *restrict out)     \
    {                                                                                               \
        float acc[NB];                                                                              \
        for (int j = 0; j < NB; j++)                                                                \
            acc[j] = b;                                                                             \
        for (int q = 0; q < t->n; q++) {                                                            \
            const float wv = t->w[q], *s = t->row[q] + (t->off[q] + ox0);                           \
            for (int j = 0; j < NB; j++)                                                            \
                acc[j] += wv * s[j];                                                                \
        }                                                                                           \
        for (int j = 0; j < NB; j++)                                                                \
            out[j] = acc[j];                                                                        \
    }
NK_DW_BLOCK(dw_block16, 16)
NK_DW_BLOCK(dw_block8, 8)
#undef NK_DW_BLOCK

/* One output with bounds checks (borders, narrow rows, strides above 2). */
static float dw_one(const nk_conv_params *p, const dw_taps *t, int32_t ox, float b)
{
    float acc = b;
    for (int q = 0; q < t->n; q++) {
        int32_t ix = ox * p->stride_w - p->pad_left + t->kx[q] * p->dil_w;
        if (ix >= 0 && ix < p->w)
            acc += t->w[q] * t->plain[q][ix];
    }
    return acc;
}

static void dw_row(const nk_conv_params *p, const dw_taps *t, float b, float *orow)
{
    const int32_t sw = p->stride_w, pl = p->pad_left, span = (p->kw - 1) * p->dil_w;
    /* outputs whose whole window lies in [0, w): ox*sw - pl >= 0 and ox*sw - pl + span < w */
    int32_t lo = min32(ceil_div(pl, sw), p->ow);
    int32_t last = p->w - 1 - span + pl, hi = last < 0 ? 0 : min32(last / sw + 1, p->ow);
    if (hi < lo || sw > 2)
        hi = lo;
    for (int32_t ox = 0; ox < lo; ox++)
        orow[ox] = dw_one(p, t, ox, b);
    int32_t nb = hi - lo >= 16 ? 16 : hi - lo >= 8 ? 8 : 0;
    if (nb) {
        /* the last block is shifted back to end at hi: it recomputes a few
         * outputs bit for bit instead of leaving a scalar remainder */
        for (int32_t ox = lo;; ox += nb) {
            if (ox + nb > hi)
                ox = hi - nb;
            if (nb == 16)
                dw_block16(t, ox, b, orow + ox);
            else
                dw_block8(t, ox, b, orow + ox);
            if (ox + nb >= hi)
                break;
        }
    } else {
        for (int32_t ox = lo; ox < hi; ox++)
            orow[ox] = dw_one(p, t, ox, b);
    }
    for (int32_t ox = hi; ox < p->ow; ox++)
        orow[ox] = dw_one(p, t, ox, b);
}

/* Kernels with more than DW_MAX_TAPS taps: plain loops, same order. */
static void dw_plane_big(const nk_conv_params *p, const float *xin, const float *wk, float b, float *yo)
{
    for (int32_t oy = 0; oy < p->oh; oy++) {
        float *orow = yo + (ptrdiff_t)oy * p->ow;
        for (int32_t ox = 0; ox < p->ow; ox++) {
            float acc = b;
            for (int32_t ky = 0; ky < p->kh; ky++) {
                int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
                if (iy < 0 || iy >= p->h)
                    continue;
                for (int32_t kx = 0; kx < p->kw; kx++) {
                    int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
                    if (ix >= 0 && ix < p->w)
                        acc += wk[ky * p->kw + kx] * xin[(ptrdiff_t)iy * p->w + ix];
                }
            }
            orow[ox] = acc;
        }
    }
}

static int use_split(const nk_conv_params *p)
{
    return p->stride_w == 2 && p->kh * p->kw <= DW_MAX_TAPS;
}

size_t nk_nn_dw_scratch(const nk_conv_params *p)
{
    return use_split(p) ? (size_t)p->h * (size_t)p->w * sizeof(float) : 0;
}

/* Each row becomes its even columns, then its odd columns. */
static void split_plane(const nk_conv_params *p, const float *xin, float *dst)
{
    const int32_t ne = (p->w + 1) / 2;
    for (int32_t iy = 0; iy < p->h; iy++) {
        const float *s = xin + (ptrdiff_t)iy * p->w;
        float *d = dst + (ptrdiff_t)iy * p->w;
        for (int32_t i = 0; i < ne; i++)
            d[i] = s[2 * i];
        for (int32_t i = 0; i + ne < p->w; i++)
            d[ne + i] = s[2 * i + 1];
    }
}

static void dw_plane(const nk_conv_params *p, const float *xin, const float *wk, float b, float *yo,
                     const float *half);

/* The activation goes over whole planes once they are done: rows are too
 * short (7 to 112) for its vector loop. */
void nk_nn_conv_depthwise(const nk_conv_params *p, const float *x, const float *w, const float *bias, float *y,
                          void *scratch, int64_t u0, int64_t u1)
{
    const int32_t mg = p->m / p->group;
    const ptrdiff_t iplane = (ptrdiff_t)p->h * p->w, oplane = (ptrdiff_t)p->oh * p->ow;
    float *half = scratch;
    for (int64_t u = u0; u < u1; u++) {
        const int32_t n = (int32_t)(u / p->group), g = (int32_t)(u % p->group);
        const float *xin = x + ((ptrdiff_t)n * p->c + g) * iplane;
        if (use_split(p)) /* once per input channel */
            split_plane(p, xin, half);
        for (int32_t oc = g * mg; oc < (g + 1) * mg; oc++) {
            const float *wk = w + (ptrdiff_t)oc * p->kh * p->kw;
            float *yo = y + ((ptrdiff_t)n * p->m + oc) * oplane;
            float b = bias ? bias[oc] : 0.0f;
            if (p->kh * p->kw > DW_MAX_TAPS)
                dw_plane_big(p, xin, wk, b, yo);
            else
                dw_plane(p, xin, wk, b, yo, half);
            nk_nn_act_inplace(yo, oplane, p->act);
        }
    }
}

/* One output plane from one input plane (half: its split copy, for stride 2). */
static void dw_plane(const nk_conv_params *p, const float *xin, const float *wk, float b, float *yo,
                     const float *half)
{
    const int32_t ne = (p->w + 1) / 2;
    const int split = use_split(p);
    dw_taps t;
    int32_t ky0 = -1, ky1 = -1; /* the taps' ky range, valid for the previous row */
    for (int32_t oy = 0; oy < p->oh; oy++) {
        int32_t top = oy * p->stride_h - p->pad_top, a = 0, e = p->kh;
        while (a < e && top + a * p->dil_h < 0)
            a++;
        while (e > a && top + (e - 1) * p->dil_h >= p->h)
            e--;
        if (a == ky0 && e == ky1) { /* same taps one output row down */
            ptrdiff_t step = (ptrdiff_t)p->stride_h * p->w;
            for (int q = 0; q < t.n; q++) {
                t.row[q] += step;
                t.plain[q] += step;
            }
            dw_row(p, &t, b, yo + (ptrdiff_t)oy * p->ow);
            continue;
        }
        ky0 = a;
        ky1 = e;
        t.n = 0;
        for (int32_t ky = a; ky < e; ky++) {
            int32_t iy = top + ky * p->dil_h;
            for (int32_t kx = 0; kx < p->kw; kx++) {
                int32_t ix0 = kx * p->dil_w - p->pad_left; /* input column of output 0 */
                t.plain[t.n] = xin + (ptrdiff_t)iy * p->w;
                t.kx[t.n] = kx;
                t.w[t.n] = wk[ky * p->kw + kx];
                if (split) {
                    int32_t odd = ix0 & 1; /* two's complement: also right for negative ix0 */
                    t.row[t.n] = half + (ptrdiff_t)iy * p->w + (odd ? ne : 0);
                    t.off[t.n] = (ix0 - odd) / 2;
                } else {
                    t.row[t.n] = t.plain[t.n];
                    t.off[t.n] = ix0;
                }
                t.n++;
            }
        }
        dw_row(p, &t, b, yo + (ptrdiff_t)oy * p->ow);
    }
}
