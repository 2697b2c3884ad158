/* MaxPool, AveragePool (1-D to 3-D, as 3-D with leading unit dims),
 * GlobalAveragePool, GlobalMaxPool, BatchNormalization (inference). */
#include <math.h>
#include <string.h>

#include "kernels/nk_nn_internal.h"

/* FLT_MAX without <float.h> (kernels use four headers only). */
#define NK_FLT_MAX 3.40282347e+38f

/* The pool geometry as 3-D (d, h, w) with unit dims in front. */
typedef struct pool3 {
    int32_t in[3], out[3], k[3], s[3], dil[3], pb[3], pe[3];
} pool3;

static int pool_setup(const nk_pool_params *p, pool3 *g)
{
    if (p->rank < 1 || p->rank > NK_POOL_MAX_DIMS || p->n < 0 || p->c < 0)
        return 0;
    int lead = NK_POOL_MAX_DIMS - p->rank;
    for (int i = 0; i < NK_POOL_MAX_DIMS; i++) {
        int src = i - lead;
        g->in[i] = src >= 0 ? p->in[src] : 1;
        g->out[i] = src >= 0 ? p->out[src] : 1;
        g->k[i] = src >= 0 ? p->kernel[src] : 1;
        g->s[i] = src >= 0 ? p->stride[src] : 1;
        g->dil[i] = src >= 0 ? p->dilation[src] : 1;
        g->pb[i] = src >= 0 ? p->pad_begin[src] : 0;
        g->pe[i] = src >= 0 ? p->pad_end[src] : 0;
        if (g->in[i] < 1 || g->out[i] < 1 || g->k[i] < 1 || g->s[i] < 1 || g->dil[i] < 1 || g->pb[i] < 0 ||
            g->pe[i] < 0)
            return 0;
        /* out between the floor and the ceil output size */
        int64_t ek = (int64_t)(g->k[i] - 1) * g->dil[i] + 1, span = (int64_t)g->in[i] + g->pb[i] + g->pe[i] - ek;
        if (span < 0 || g->out[i] < span / g->s[i] + 1 || g->out[i] > (span + g->s[i] - 1) / g->s[i] + 1)
            return 0;
    }
    return (int64_t)g->in[0] * g->in[1] * g->in[2] <= INT32_MAX && (int64_t)g->out[0] * g->out[1] * g->out[2] <= INT32_MAX;
}

/* The kernel taps [*k0, *k1) of output position o that fall inside [lo, hi). */
static void taps(const pool3 *g, int dim, int32_t o, int32_t lo, int32_t hi, int32_t *k0, int32_t *k1)
{
    int32_t start = o * g->s[dim] - g->pb[dim], d = g->dil[dim];
    int32_t a = start >= lo ? 0 : (lo - start + d - 1) / d;
    int32_t b = start >= hi ? 0 : (hi - start + d - 1) / d;
    if (b > g->k[dim])
        b = g->k[dim];
    *k0 = a;
    *k1 = b > a ? b : a;
}

/* 2-D max pooling without indices or dilation, a row of outputs at a
 * time: each kernel tap is one pass over the row's interior outputs (those
 * whose whole window lies inside), which the compiler vectorizes; the
 * border outputs take the general loop's taps. Maxima are exact and the
 * NaN rule (a NaN never wins) is order-free: the same outputs. */
/* Border outputs [o0, o1) of one input row: only their taps inside it. */
static void border_max(const pool3 *g, const float *row, int32_t o0, int32_t o1, float *yr)
{
    for (int32_t o = o0; o < o1; o++) {
        int32_t w0, w1;
        taps(g, 2, o, 0, g->in[2], &w0, &w1);
        for (int32_t k = w0; k < w1; k++) {
            float v = row[o * g->s[2] - g->pb[2] + k];
            yr[o] = v > yr[o] ? v : yr[o];
        }
    }
}

NK_HOT_VEC static void maxpool_rows(const pool3 *g, const float *xp, float *yp)
{
    const int32_t sw = g->s[2], kw = g->k[2], pl = g->pb[2], iw = g->in[2], ow = g->out[2];
    /* interior: ow * sw - pl >= 0 and ow * sw - pl + kw - 1 < iw */
    int32_t lo = (pl + sw - 1) / sw, hi = iw - kw + pl >= 0 ? (iw - kw + pl) / sw + 1 : 0;
    lo = lo < ow ? lo : ow;
    hi = hi < lo ? lo : hi < ow ? hi : ow;
    for (int32_t oh = 0; oh < g->out[1]; oh++) {
        int32_t h0, h1;
        taps(g, 1, oh, 0, g->in[1], &h0, &h1);
        float *yr = yp + (ptrdiff_t)oh * ow;
        for (int32_t o = 0; o < ow; o++)
            yr[o] = -NK_FLT_MAX;
        for (int32_t kh = h0; kh < h1; kh++) {
            const float *row = xp + (ptrdiff_t)(oh * g->s[1] - g->pb[1] + kh) * iw;
            for (int32_t k = 0; k < kw; k++) {
                const float *r = row + k - pl;
                for (int32_t o = lo; o < hi; o++) {
                    float v = r[(ptrdiff_t)o * sw];
                    yr[o] = v > yr[o] ? v : yr[o];
                }
            }
            border_max(g, row, 0, lo, yr);
            border_max(g, row, hi, ow, yr);
        }
    }
}

nk_status nk_maxpool(const nk_pool_params *p, const float *x, float *y, int64_t *indices)
{
    pool3 g;
    if (!pool_setup(p, &g) || (indices && p->storage_order && p->rank != 2))
        return NK_EARG;
    int64_t planes = (int64_t)p->n * p->c;
    if (planes && (!x || !y))
        return NK_EARG;
    if (!indices && g.in[0] == 1 && g.out[0] == 1 && g.k[0] == 1 && g.dil[1] == 1 && g.dil[2] == 1) {
        const int32_t opl = g.out[1] * g.out[2];
        for (int64_t pl = 0; pl < planes; pl++)
            maxpool_rows(&g, x + pl * g.in[1] * g.in[2], y + pl * opl);
        return NK_OK;
    }
    const int32_t ipl = g.in[0] * g.in[1] * g.in[2];
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * ipl;
        for (int32_t od = 0; od < g.out[0]; od++) {
            int32_t d0, d1;
            taps(&g, 0, od, 0, g.in[0], &d0, &d1);
            for (int32_t oh = 0; oh < g.out[1]; oh++) {
                int32_t h0, h1;
                taps(&g, 1, oh, 0, g.in[1], &h0, &h1);
                for (int32_t ow = 0; ow < g.out[2]; ow++) {
                    int32_t w0, w1;
                    taps(&g, 2, ow, 0, g.in[2], &w0, &w1);
                    float best = -NK_FLT_MAX;
                    int64_t at = -1;
                    for (int32_t kd = d0; kd < d1; kd++) {
                        int32_t id = od * g.s[0] - g.pb[0] + kd * g.dil[0];
                        for (int32_t kh = h0; kh < h1; kh++) {
                            int32_t ih = oh * g.s[1] - g.pb[1] + kh * g.dil[1];
                            const float *row = xp + ((ptrdiff_t)id * g.in[1] + ih) * g.in[2];
                            if (!indices) { /* a select, not a branch: maxima are unpredictable */
                                for (int32_t kw = w0; kw < w1; kw++) {
                                    float v = row[ow * g.s[2] - g.pb[2] + kw * g.dil[2]];
                                    best = v > best ? v : best;
                                }
                                continue;
                            }
                            for (int32_t kw = w0; kw < w1; kw++) {
                                int32_t iw = ow * g.s[2] - g.pb[2] + kw * g.dil[2];
                                if (at < 0 || row[iw] > best) { /* first maximum wins, as in onnxruntime */
                                    best = row[iw];
                                    at = p->storage_order ? (int64_t)iw * g.in[1] + ih
                                                          : ((int64_t)id * g.in[1] + ih) * g.in[2] + iw;
                                }
                            }
                        }
                    }
                    int64_t o = ((pl * g.out[0] + od) * g.out[1] + oh) * g.out[2] + ow;
                    y[o] = best;
                    if (indices)
                        indices[o] = at < 0 ? -1 : pl * ipl + at;
                }
            }
        }
    }
    return NK_OK;
}

nk_status nk_avgpool(const nk_pool_params *p, const float *x, float *y)
{
    pool3 g;
    if (!pool_setup(p, &g))
        return NK_EARG;
    int64_t planes = (int64_t)p->n * p->c;
    if (planes && (!x || !y))
        return NK_EARG;
    const int32_t ipl = g.in[0] * g.in[1] * g.in[2];
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * ipl;
        for (int32_t od = 0; od < g.out[0]; od++) {
            int32_t d0, d1, pd0, pd1;
            taps(&g, 0, od, 0, g.in[0], &d0, &d1);
            taps(&g, 0, od, -g.pb[0], g.in[0] + g.pe[0], &pd0, &pd1);
            for (int32_t oh = 0; oh < g.out[1]; oh++) {
                int32_t h0, h1, ph0, ph1;
                taps(&g, 1, oh, 0, g.in[1], &h0, &h1);
                taps(&g, 1, oh, -g.pb[1], g.in[1] + g.pe[1], &ph0, &ph1);
                for (int32_t ow = 0; ow < g.out[2]; ow++) {
                    int32_t w0, w1, pw0, pw1;
                    taps(&g, 2, ow, 0, g.in[2], &w0, &w1);
                    taps(&g, 2, ow, -g.pb[2], g.in[2] + g.pe[2], &pw0, &pw1);
                    float sum = 0.0f;
                    for (int32_t kd = d0; kd < d1; kd++) {
                        int32_t id = od * g.s[0] - g.pb[0] + kd * g.dil[0];
                        for (int32_t kh = h0; kh < h1; kh++) {
                            int32_t ih = oh * g.s[1] - g.pb[1] + kh * g.dil[1];
                            const float *row = xp + ((ptrdiff_t)id * g.in[1] + ih) * g.in[2];
                            for (int32_t kw = w0; kw < w1; kw++)
                                sum += row[ow * g.s[2] - g.pb[2] + kw * g.dil[2]];
                        }
                    }
                    /* The divisor counts the window clipped to the input, or with
                     * count_include_pad to the padded input (ceil_mode windows that
                     * run past the end padding do not count the overhang). */
                    int64_t cnt = p->count_include_pad ? (int64_t)(pd1 - pd0) * (ph1 - ph0) * (pw1 - pw0)
                                                       : (int64_t)(d1 - d0) * (h1 - h0) * (w1 - w0);
                    int64_t o = ((pl * g.out[0] + od) * g.out[1] + oh) * g.out[2] + ow;
                    y[o] = cnt ? sum / (float)cnt : 0.0f;
                }
            }
        }
    }
    return NK_OK;
}

static int global_valid(const nk_global_pool_params *p, const float *x, const float *y)
{
    return p->n >= 0 && p->c >= 0 && p->spatial >= 1 && (!(p->n && p->c) || (x && y));
}

nk_status nk_global_avgpool(const nk_global_pool_params *p, const float *x, float *y)
{
    if (!global_valid(p, x, y))
        return NK_EARG;
    int64_t planes = (int64_t)p->n * p->c;
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * p->spatial;
        double sum = 0.0; /* large planes: double keeps the mean exact to float precision */
        for (int64_t i = 0; i < p->spatial; i++)
            sum += xp[i];
        y[pl] = (float)(sum / (double)p->spatial);
    }
    return NK_OK;
}

nk_status nk_global_maxpool(const nk_global_pool_params *p, const float *x, float *y)
{
    if (!global_valid(p, x, y))
        return NK_EARG;
    int64_t planes = (int64_t)p->n * p->c;
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * p->spatial;
        float best = xp[0];
        for (int64_t i = 1; i < p->spatial; i++)
            best = xp[i] > best ? xp[i] : best;
        y[pl] = best;
    }
    return NK_OK;
}

nk_status nk_batchnorm(const nk_batchnorm_params *p, const float *x, const float *scale, const float *bias,
                       const float *mean, const float *var, float *y)
{
    if (p->n < 0 || p->c < 0 || p->spatial < 0 || !(p->epsilon >= 0.0f))
        return NK_EARG;
    if ((int64_t)p->n * p->c * p->spatial == 0)
        return NK_OK;
    if (!x || !scale || !bias || !mean || !var || !y)
        return NK_EARG;
    for (int32_t n = 0; n < p->n; n++)
        for (int32_t c = 0; c < p->c; c++) {
            /* y = x * s + t with s, t folded per channel, as onnxruntime computes it */
            float s = scale[c] / sqrtf(var[c] + p->epsilon), t = bias[c] - mean[c] * s;
            ptrdiff_t off = ((ptrdiff_t)n * p->c + c) * p->spatial;
            const float *xp = x + off;
            float *yp = y + off;
            for (int64_t i = 0; i < p->spatial; i++)
                yp[i] = xp[i] * s + t;
            nk_nn_act_inplace(yp, p->spatial, p->act);
        }
    return NK_OK;
}
