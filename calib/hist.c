#include "calib/calib.h"

#include "kernels/nk_common.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

void cal_hist_init(cal_hist *h)
{
    /* the bins are cleared when the width is set (hist_cover): minmax
     * calibration never touches them, and clearing 16 KB per tensor of a
     * 100k-node graph cost seconds */
    memset(h, 0, offsetof(cal_hist, bins));
    h->min = INFINITY;
    h->max = -INFINITY;
}

/* Doubles the bin width: bins 2k and 2k+1 (by absolute index) merge. */
static void hist_coarsen(cal_hist *h)
{
    uint64_t nb[CAL_BINS];
    memset(nb, 0, sizeof nb);
    /* floor division keeps absolute bin boundaries aligned */
    int64_t norigin = h->origin >= 0 ? h->origin / 2 : -((-h->origin + 1) / 2);
    for (int i = 0; i < CAL_BINS; i++) {
        int64_t abs_idx = h->origin + i;
        int64_t nabs = abs_idx >= 0 ? abs_idx / 2 : -((-abs_idx + 1) / 2);
        nb[nabs - norigin] += h->bins[i];
    }
    memcpy(h->bins, nb, sizeof nb);
    h->origin = norigin;
    h->width *= 2.0;
}

static void occupied(const cal_hist *h, int *first, int *last)
{
    *first = 0;
    *last = CAL_BINS - 1;
    while (*first < CAL_BINS && !h->bins[*first])
        (*first)++;
    while (*last >= 0 && !h->bins[*last])
        (*last)--;
}

/* Makes [lo, hi] fit: shift the window where the counts allow, else coarsen. */
static void hist_cover(cal_hist *h, double lo, double hi)
{
    /* zero stays inside the window: quantized ranges always contain it */
    lo = fmin(lo, 0.0);
    hi = fmax(hi, 0.0);
    if (h->width == 0.0) {
        /* start with the window centred on zero, covering the first values
         * with room to grow 2x before re-binning */
        double span = fmax(fabs(lo), fabs(hi));
        h->width = exp2(ceil(log2(span * 2.0 / (CAL_BINS / 2))));
        h->origin = -CAL_BINS / 2;
        memset(h->bins, 0, sizeof h->bins);
        h->bins[CAL_BINS / 2] += h->pending_zeros;
        h->pending_zeros = 0;
    }
    for (;;) {
        int64_t need_lo = (int64_t)floor(lo / h->width), need_hi = (int64_t)floor(hi / h->width);
        if (need_lo >= h->origin && need_hi < h->origin + CAL_BINS)
            return;
        /* occupied span after including the new values */
        int first, last;
        occupied(h, &first, &last);
        int64_t span_lo = need_lo, span_hi = need_hi;
        if (first <= last) {
            span_lo = span_lo < h->origin + first ? span_lo : h->origin + first;
            span_hi = span_hi > h->origin + last ? span_hi : h->origin + last;
        }
        if (span_hi - span_lo < CAL_BINS) {
            /* slide the window: counts move, width stays */
            int64_t norigin = span_lo - (CAL_BINS - (span_hi - span_lo + 1)) / 2;
            uint64_t nb[CAL_BINS];
            memset(nb, 0, sizeof nb);
            for (int i = first; i <= last && first <= last; i++)
                nb[h->origin + i - norigin] = h->bins[i];
            memcpy(h->bins, nb, sizeof nb);
            h->origin = norigin;
            return;
        }
        hist_coarsen(h);
    }
}

/* Min, max and count of the finite values: it sees every activation of
 * every calibration sample, so it runs in 16 lanes of constant length
 * (vector compares and blends; finite = exponent not all ones) and folds
 * the lanes at the end. */
NK_HOT_CLONES static size_t finite_range(const float *x, size_t n, float *plo, float *phi)
{
    enum { L = 16 };
    float lo[L], hi[L];
    uint32_t cnt[L];
    for (int j = 0; j < L; j++) {
        lo[j] = INFINITY;
        hi[j] = -INFINITY;
        cnt[j] = 0;
    }
    size_t finite = 0, i = 0;
    while (i + L <= n) {
        /* blocks of at most 2^20 values: the lane counts cannot overflow */
        size_t left = n - i, stop = i + (left < ((size_t)1 << 20) ? left : ((size_t)1 << 20)) / L * L;
        for (; i < stop; i += L)
            for (int j = 0; j < L; j++) {
                float v = x[i + j];
                uint32_t b;
                memcpy(&b, &v, sizeof b);
                uint32_t fin = (b & 0x7f800000u) != 0x7f800000u;
                /* a value that is not finite compares as the lane's identity: selects of
                 * the value, then plain minima and maxima, which GCC keeps in registers
                 * (with the test inside the compare it wrote the lanes to the stack at
                 * every step: 1.5x slower with AVX-512, 3.8x without AVX) */
                float vl = fin ? v : INFINITY, vh = fin ? v : -INFINITY;
                lo[j] = vl < lo[j] ? vl : lo[j];
                hi[j] = vh > hi[j] ? vh : hi[j];
                cnt[j] += fin;
            }
        for (int j = 0; j < L; j++) {
            finite += cnt[j];
            cnt[j] = 0;
        }
    }
    float l = INFINITY, h = -INFINITY;
    for (int j = 0; j < L; j++) {
        l = lo[j] < l ? lo[j] : l;
        h = hi[j] > h ? hi[j] : h;
    }
    for (; i < n; i++) {
        float v = x[i];
        if (!isfinite(v))
            continue;
        finite++;
        l = v < l ? v : l;
        h = v > h ? v : h;
    }
    *plo = l;
    *phi = h;
    return finite;
}

void cal_hist_add_range(cal_hist *h, const float *x, size_t n)
{
    float lo, hi;
    size_t finite = finite_range(x, n, &lo, &hi);
    if (lo > hi)
        return;
    h->min = lo < h->min ? lo : h->min;
    h->max = hi > h->max ? hi : h->max;
    h->count += finite;
}

void cal_hist_merge_range(cal_hist *a, const cal_hist *b)
{
    if (!b->count)
        return;
    a->min = b->min < a->min ? b->min : a->min;
    a->max = b->max > a->max ? b->max : a->max;
    a->count += b->count;
}

void cal_hist_add(cal_hist *h, const float *x, size_t n)
{
    float lo, hi;
    size_t finite = finite_range(x, n, &lo, &hi);
    if (lo > hi)
        return;
    if (lo == 0.0f && hi == 0.0f && h->width == 0.0) {
        /* all zeros so far: no scale to set the bin width from yet */
        h->pending_zeros += finite;
        h->count += finite;
        h->min = fminf(h->min, 0.0f);
        h->max = fmaxf(h->max, 0.0f);
        return;
    }
    h->min = lo < h->min ? lo : h->min;
    h->max = hi > h->max ? hi : h->max;
    hist_cover(h, lo, hi);
    /* the bin of v is floor(v / width) - origin; every v is inside the window
     * now, so the position is >= 0 (up to rounding) and truncation is the
     * floor (no libm call in the loop that sees every activation) */
    double inv = 1.0 / h->width, off = -(double)h->origin;
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        if (!isfinite(v))
            continue;
        double pos = (double)v * inv + off;
        int64_t k = pos > 0.0 ? (int64_t)pos : 0; /* rounding at the very edge */
        if (k >= CAL_BINS)
            k = CAL_BINS - 1;
        h->bins[k]++;
    }
    h->count += finite;
}

void cal_hist_merge(cal_hist *a, const cal_hist *b)
{
    if (!b->count)
        return;
    if (!a->count) {
        *a = *b;
        return;
    }
    if (b->width == 0.0 || a->width == 0.0) {
        /* one side has only zeros so far */
        const cal_hist *zeros = b->width == 0.0 ? b : a;
        cal_hist nz = b->width == 0.0 ? *a : *b;
        if (nz.width == 0.0) {
            a->pending_zeros += b->pending_zeros;
            a->count += b->count;
            return;
        }
        nz.bins[-nz.origin] += zeros->pending_zeros;
        nz.count += zeros->count;
        nz.min = fminf(nz.min, zeros->min);
        nz.max = fmaxf(nz.max, zeros->max);
        *a = nz;
        return;
    }
    cal_hist tmp = *b;
    for (;;) {
        while (tmp.width < a->width)
            hist_coarsen(&tmp);
        while (a->width < tmp.width)
            hist_coarsen(a);
        int first, last;
        occupied(&tmp, &first, &last);
        hist_cover(a, (double)(tmp.origin + first) * tmp.width, ((double)(tmp.origin + last) + 0.5) * tmp.width);
        if (a->width == tmp.width)
            break;
    }
    for (int i = 0; i < CAL_BINS; i++)
        if (tmp.bins[i])
            a->bins[tmp.origin + i - a->origin] += tmp.bins[i];
    a->count += tmp.count;
    a->min = fminf(a->min, tmp.min);
    a->max = fmaxf(a->max, tmp.max);
}
