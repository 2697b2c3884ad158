/* Depthwise Conv (one input channel per group), direct: per output row,
 * the taps inside the input are listed once, then blocks of 16 or 8
 * interior outputs are summed in registers and the borders one by one.
 * For stride 2 each input plane is first split into even and odd columns
 * (in scratch) so that every tap reads contiguous memory. For stride 1
 * the plane is copied zero-padded into scratch instead and summed as one
 * run (dw_plane_pad): narrow planes (7 to 28 columns) have too few interior
 * outputs for the blocks otherwise.
 * Every output sums bias, then the taps in order of ky then kx, in every
 * path; taps outside the input are skipped, or on the padded copy add
 * w * 0, which leaves every sum the same up to the sign of an exact zero
 * (weights that are not finite take the skipping path). */
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
    nk_act act; /* applied by the blocks (the padded path), or NONE */
    /* for the checked path: the plain input row and kx of each tap */
    const float *plain[DW_MAX_TAPS];
    int32_t kx[DW_MAX_TAPS];
} dw_taps;

/* A block's NB sums out, through the padded path's activation (NONE on
 * the others, which apply it to the whole plane). */
#define NK_DW_OUT(NB)                                                                                    \
    static inline void dw_block_out##NB(const dw_taps *t, float *acc, float *restrict out)              \
    {                                                                                                    \
        const float lo = t->act.lo, hi = t->act.hi, slope = t->act.alpha;                               \
        switch (t->act.kind) {                                                                           \
        case NK_ACT_CLIP:                                                                                \
            for (int j = 0; j < NB; j++)                                                                 \
                acc[j] = nk_clip(acc[j], lo, hi);                                                        \
            break;                                                                                       \
        case NK_ACT_RELU:                                                                                \
            for (int j = 0; j < NB; j++)                                                                 \
                acc[j] = nk_relu(acc[j]);                                                                \
            break;                                                                                       \
        case NK_ACT_LEAKY_RELU:                                                                          \
            for (int j = 0; j < NB; j++)                                                                 \
                acc[j] = nk_leaky_relu(acc[j], slope);                                                   \
            break;                                                                                       \
        default: break;                                                                                  \
        }                                                                                                \
        for (int j = 0; j < NB; j++)                                                                     \
            out[j] = acc[j];                                                                             \
    }
NK_DW_OUT(16)
NK_DW_OUT(8)
#undef NK_DW_OUT

/* NB interior outputs from ox0: acc[j] = b + sum over taps of w * row[off + ox0 + j]. */
#define NK_DW_BLOCK(name, NB)                                                                        \
    NK_HOT_VEC static void name(const dw_taps *t, int32_t ox0, float b, float *restrict out)         \
    {                                                                                               \
        float acc[NB];                                                                              \
        for (int j = 0; j < NB; j++)                                                                \
            acc[j] = b;                                                                             \
        for (int q = 0; q < t->n; q++) {                                                            \
            const float wv = t->w[q], *s = t->row[q] + (t->off[q] + ox0);                           \
            for (int j = 0; j < NB; j++)                                                            \
                acc[j] += wv * s[j];                                                                \
        }                                                                                           \
        dw_block_out##NB(t, acc, out);                                                              \
    }
NK_DW_BLOCK(dw_block16, 16)
NK_DW_BLOCK(dw_block8, 8)
#undef NK_DW_BLOCK

#if defined(__x86_64__) || defined(__aarch64__)
/* Four blocks of 16 side by side, the same sums as four dw_block16 (a
 * multiply, then an add, per tap in order): four independent chains of adds
 * where one waits on each add's latency. GCC's vector type says what its
 * vectorizer did not find in the plain loops (it left 48 of the 64 lanes
 * scalar). Host builds: the firmware keeps its blocks and cycles. */
typedef float dw_v16 __attribute__((vector_size(64)));

NK_HOT_CLONES static void dw_block64(const dw_taps *t, int32_t ox0, float b, float *restrict out)
{
    dw_v16 a0 = {0}, a1, a2, a3, w;
    a0 += b;
    a1 = a2 = a3 = a0;
    for (int q = 0; q < t->n; q++) {
        const float *s = t->row[q] + (t->off[q] + ox0);
        dw_v16 x0, x1, x2, x3;
        memcpy(&x0, s, sizeof x0), memcpy(&x1, s + 16, sizeof x1);
        memcpy(&x2, s + 32, sizeof x2), memcpy(&x3, s + 48, sizeof x3);
        w = (dw_v16){0} + t->w[q];
        a0 += w * x0, a1 += w * x1, a2 += w * x2, a3 += w * x3;
    }
    float acc[4][16];
    memcpy(acc[0], &a0, sizeof a0), memcpy(acc[1], &a1, sizeof a1);
    memcpy(acc[2], &a2, sizeof a2), memcpy(acc[3], &a3, sizeof a3);
    for (int i = 0; i < 4; i++)
        dw_block_out16(t, acc[i], out + 16 * i);
}
#define DW_BLOCK64 1
#else
#define DW_BLOCK64 0
#endif

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

/* Outputs [lo, hi) in blocks of 64, then 16 or 8; the last block is
 * shifted back to end at hi: it recomputes a few outputs bit for bit
 * instead of leaving a scalar remainder. 0: fewer than 8 outputs, none
 * done. A block of 64 is four independent sums a tap, where one waits on
 * the latency of its adds (MobileNetV2's 112x112 planes: 9 -> 11 GMAC/s). */
static int dw_blocks(const dw_taps *t, int32_t lo, int32_t hi, float b, float *out)
{
    int32_t nb = hi - lo >= 16 ? 16 : hi - lo >= 8 ? 8 : 0, o = lo;
#if DW_BLOCK64
    for (; o + 64 <= hi; o += 64)
        dw_block64(t, o, b, out + o);
#endif
    for (; nb && o < hi; o += nb) {
        if (o + nb > hi)
            o = hi - nb;
        if (nb == 16)
            dw_block16(t, o, b, out + o);
        else
            dw_block8(t, o, b, out + o);
    }
    return nb != 0;
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
    if (!dw_blocks(t, lo, hi, b, orow))
        for (int32_t ox = lo; ox < hi; ox++)
            orow[ox] = dw_one(p, t, ox, b);
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

/* Host builds only: the firmware keeps its smaller scratch and its
 * simulated cycles (the blocks are sized for hosts too, nk_nn_internal.h). */
static int use_pad(const nk_conv_params *p)
{
#if defined(__x86_64__) || defined(__aarch64__)
    return p->stride_w <= 2 && p->stride_h <= 2 && p->kh * p->kw <= DW_MAX_TAPS;
#else
    (void)p;
    return 0;
#endif
}

/* The padded plane split into its stride phases (nk_nn_phase.c), each
 * phase hq x wq: every tap reads one contiguous run, output (oy, ox) at
 * oy * wq + ox, for stride 2 as for stride 1, where stride 2 took rows of
 * 7 to 56 outputs, too short for the blocks (a 14x14 plane at stride 2 ran
 * at 0.9 GMAC/s). */
static int32_t pad_h(const nk_conv_params *p)
{
    return p->h + p->pad_top + p->pad_bottom;
}

static size_t pad_plane(const nk_conv_params *p)
{
    return (size_t)p->stride_h * (size_t)p->stride_w * (size_t)nk_nn_phase_h(p, pad_h(p)) * (size_t)nk_nn_phase_w(p);
}

static size_t pad_run(const nk_conv_params *p)
{
    return (size_t)(p->oh - 1) * (size_t)nk_nn_phase_w(p) + (size_t)p->ow;
}

size_t nk_nn_dw_scratch(const nk_conv_params *p)
{
    if (use_pad(p)) /* also holds split_plane's copy, for weights that are not finite */
        return (pad_plane(p) + pad_run(p)) * sizeof(float);
    return use_split(p) ? (size_t)p->h * (size_t)p->w * sizeof(float) : 0;
}

/* The input plane into the phases; the border stays zero from the first. */
static void pad_copy(const nk_conv_params *p, const float *xin, float *dst, int first)
{
    if (first)
        memset(dst, 0, pad_plane(p) * sizeof(float));
    nk_nn_phase_rows(p, xin, 0, pad_h(p), nk_nn_phase_h(p, pad_h(p)), dst);
}

static int finite_taps(const nk_conv_params *p, const float *wk)
{
    for (int32_t i = 0; i < p->kh * p->kw; i++)
        if (!(wk[i] - wk[i] == 0.0f)) /* false for inf and NaN */
            return 0;
    return 1;
}

/* Outputs [0, len) of the run, in blocks or one by one. */
static void dw_run(const dw_taps *t, int32_t len, float b, float *run)
{
    if (dw_blocks(t, 0, len, b, run))
        return;
    for (int32_t o = 0; o < len; o++) {
        float acc = b;
        for (int q = 0; q < t->n; q++)
            acc += t->w[q] * t->row[q][t->off[q] + o];
        run[o] = acc;
    }
    nk_nn_act_inplace(run, len, t->act);
}

/* The taps' offsets in the phases, the same for every plane. */
static void pad_taps(const nk_conv_params *p, const float *padded, dw_taps *t)
{
    t->n = 0;
    for (int32_t ky = 0; ky < p->kh; ky++)
        for (int32_t kx = 0; kx < p->kw; kx++, t->n++) {
            t->row[t->n] = padded;
            t->off[t->n] = (int32_t)nk_nn_phase_at(p, nk_nn_phase_h(p, pad_h(p)), ky * p->dil_h, kx * p->dil_w);
        }
    t->act = p->act;
}

/* On the padded phases (t from pad_taps): every output is interior. */
static void dw_plane_pad(const nk_conv_params *p, dw_taps *t, const float *wk, float b, float *yo, float *run)
{
    const int32_t wq = nk_nn_phase_w(p);
    for (int q = 0; q < t->n; q++)
        t->w[q] = wk[q];
    dw_run(t, (int32_t)pad_run(p), b, run);
    for (int32_t oy = 0; oy < p->oh; oy++)
        memcpy(yo + (ptrdiff_t)oy * p->ow, run + (ptrdiff_t)oy * wq, sizeof(float) * (size_t)p->ow);
}

static void split_plane(const nk_conv_params *p, const float *xin, float *dst)
{
    const int32_t ne = (p->w + 1) / 2;
    for (int32_t iy = 0; iy < p->h; iy++) {
        float *d = dst + (ptrdiff_t)iy * p->w;
        nk_nn_split_row(xin + (ptrdiff_t)iy * p->w, d, d + ne, ne, p->w - ne);
    }
}

static void dw_plane(const nk_conv_params *p, const float *xin, const float *wk, float b, float *yo,
                     const float *half);

/* The activation goes over whole planes once they are done (rows are too
 * short, 7 to 112, for its vector loop); the padded path's blocks apply it
 * in registers instead (a pass less: 2.5% of MobileNetV2's inference). */
void nk_nn_conv_depthwise(const nk_conv_params *p, const float *x, const float *w, const float *bias, float *y,
                          void *scratch, int64_t u0, int64_t u1)
{
    const int32_t mg = p->m / p->group;
    const ptrdiff_t iplane = (ptrdiff_t)p->h * p->w, oplane = (ptrdiff_t)p->oh * p->ow;
    float *half = scratch;
    /* the padded phases where every filter of the slice is finite (its taps
     * on the border add w * 0), else the checked paths */
    int pad = use_pad(p);
    for (int64_t u = u0; pad && u < u1; u++)
        for (int32_t oc = (int32_t)(u % p->group) * mg; pad && oc < (int32_t)(u % p->group + 1) * mg; oc++)
            pad = finite_taps(p, w + (ptrdiff_t)oc * p->kh * p->kw);
    dw_taps taps;
    if (pad)
        pad_taps(p, half, &taps);
    for (int64_t u = u0; u < u1; u++) {
        const int32_t n = (int32_t)(u / p->group), g = (int32_t)(u % p->group);
        const float *xin = x + ((ptrdiff_t)n * p->c + g) * iplane;
        if (pad) /* once per input channel */
            pad_copy(p, xin, half, u == u0);
        else if (use_split(p))
            split_plane(p, xin, half);
        for (int32_t oc = g * mg; oc < (g + 1) * mg; oc++) {
            const float *wk = w + (ptrdiff_t)oc * p->kh * p->kw;
            float *yo = y + ((ptrdiff_t)n * p->m + oc) * oplane;
            float b = bias ? bias[oc] : 0.0f;
            if (pad) {
                dw_plane_pad(p, &taps, wk, b, yo, half + pad_plane(p));
                continue;
            }
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
    t.act = (nk_act){.kind = NK_ACT_NONE}; /* the whole plane's pass does it */
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
