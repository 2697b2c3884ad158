/* Range choosers over a calibration histogram: minmax, percentile,
 * KL divergence (TensorRT's entropy calibration) and MSE. */
#include "calib/calib.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

static double bin_lo(const cal_hist *h, int i)
{
    return (double)(h->origin + i) * h->width;
}

static void include_zero(float *lo, float *hi)
{
    if (*lo > 0.0f)
        *lo = 0.0f;
    if (*hi < 0.0f)
        *hi = 0.0f;
    if (*lo == *hi) /* an all-zero tensor: any nonempty range represents it */
        *hi = *lo + 1e-6f;
}

static void range_percentile(const cal_hist *h, double pct, float *lo, float *hi)
{
    double tail = (100.0 - pct) / 100.0 * (double)h->count;
    double acc = 0;
    int i = 0;
    for (; i < CAL_BINS; i++) {
        acc += (double)h->bins[i];
        if (acc > tail)
            break;
    }
    double l = bin_lo(h, i < CAL_BINS ? i : CAL_BINS - 1);
    acc = 0;
    int j = CAL_BINS - 1;
    for (; j >= 0; j--) {
        acc += (double)h->bins[j];
        if (acc > tail)
            break;
    }
    double u = bin_lo(h, j >= 0 ? j : 0) + h->width;
    *lo = (float)fmax(l, (double)h->min);
    *hi = (float)fmin(u, (double)h->max);
}

/* Makes a distribution strictly positive where it is zero, taking the mass
 * from the nonzero bins (as MXNet/TensorRT do), so KL stays finite. */
static bool smooth(double *d, int n)
{
    const double eps = 1e-4;
    int zeros = 0;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        zeros += d[i] == 0;
        sum += d[i];
    }
    if (zeros == n || sum <= 0)
        return false;
    double take = eps * zeros / (n - zeros);
    for (int i = 0; i < n; i++)
        d[i] = d[i] == 0 ? eps : d[i] - take;
    return true;
}

/* KL(P || Q) over n bins (both unnormalized). */
static double kl_divergence(const double *p, const double *q, int n)
{
    double sp = 0, sq = 0;
    for (int i = 0; i < n; i++) {
        sp += p[i];
        sq += q[i];
    }
    double d = 0;
    for (int i = 0; i < n; i++)
        if (p[i] > 0 && q[i] > 0)
            d += p[i] / sp * log((p[i] / sp) / (q[i] / sq));
    return d;
}

/* The divergence of clipping at bin i (TensorRT's procedure); keeps the best. */
static void kl_try(const double *hist, int last, int levels, int i, double *best, int *best_i)
{
    double p[CAL_BINS], q[CAL_BINS];
    memcpy(p, hist, sizeof(double) * (size_t)i);
    for (int k = i; k <= last; k++)
        p[i - 1] += hist[k];
    /* quantize hist[0..i) into `levels` buckets, expand each back evenly
     * over the bins where p is nonzero */
    memset(q, 0, sizeof(double) * (size_t)i);
    for (int b = 0; b < levels; b++) {
        int start = (int)((long long)b * i / levels), stop = (int)((long long)(b + 1) * i / levels);
        double sum = 0;
        int nonzero = 0;
        for (int k = start; k < stop; k++) {
            sum += hist[k];
            nonzero += p[k] != 0;
        }
        for (int k = start; k < stop; k++)
            if (p[k] != 0)
                q[k] = sum / nonzero;
    }
    if (!smooth(p, i) || !smooth(q, i))
        return;
    double d = kl_divergence(p, q, i);
    if (d < *best) {
        *best = d;
        *best_i = i;
    }
}

/* TensorRT-style threshold on a one-sided histogram |x| (bins from zero):
 * the clip point whose `levels`-bucket quantization of the clipped
 * distribution diverges least from it. */
static double kl_threshold(const double *hist, int nbins, int levels, double width)
{
    int last = nbins - 1;
    while (last > 0 && hist[last] == 0)
        last--;
    /* Clip points from `levels` bins on, as TensorRT at 8 bits. With fewer
     * levels (4 bits) a clip at `levels` bins maps each bin to its own
     * bucket, diverges by nothing and would always win (clipping away all
     * but 1/300 of the range): the search starts no lower than at 8 bits. */
    enum { KL_MIN_BINS = 127 };
    int first = levels > KL_MIN_BINS ? levels : KL_MIN_BINS;
    if (last + 1 <= first)
        return (last + 1) * width;
    double best = INFINITY;
    int best_i = last + 1;
    /* coarse candidates every KL_STEP bins, then every bin around the best:
     * the divergence varies slowly with the clip point, and this is 10x
     * cheaper than trying all of them */
    enum { KL_STEP = 16 };
    for (int i = first; i <= last + 1; i += KL_STEP)
        kl_try(hist, last, levels, i, &best, &best_i);
    kl_try(hist, last, levels, last + 1, &best, &best_i);
    int from = best_i - KL_STEP > first ? best_i - KL_STEP : first;
    int to = best_i + KL_STEP < last + 1 ? best_i + KL_STEP : last + 1;
    for (int i = from; i <= to; i++)
        kl_try(hist, last, levels, i, &best, &best_i);
    return (best_i + 0.5) * width;
}

static void range_kl(const cal_hist *h, int bits, float *lo, float *hi)
{
    /* fold the signed histogram onto |x|: bin k >= 0 covers [k*w, (k+1)*w) */
    double folded[CAL_BINS];
    memset(folded, 0, sizeof folded);
    for (int i = 0; i < CAL_BINS; i++) {
        int64_t k = h->origin + i;
        int64_t a = k >= 0 ? k : -k - 1;
        if (a < CAL_BINS)
            folded[a] += (double)h->bins[i];
        else
            folded[CAL_BINS - 1] += (double)h->bins[i];
    }
    bool one_sided = h->min >= 0.0f || h->max <= 0.0f;
    int levels = one_sided ? (1 << bits) - 1 : (1 << (bits - 1)) - 1;
    double t = kl_threshold(folded, CAL_BINS, levels, h->width);
    *lo = (float)fmax((double)h->min, -t);
    *hi = (float)fmin((double)h->max, t);
}

/* Expected squared error of quantizing the histogram to [a, b]. */
static double quant_mse(const cal_hist *h, double a, double b, int bits)
{
    double step = (b - a) / ((1 << bits) - 1);
    double err = 0;
    for (int i = 0; i < CAL_BINS; i++) {
        if (!h->bins[i])
            continue;
        double v = bin_lo(h, i) + 0.5 * h->width;
        double e;
        if (v < a)
            e = (a - v) * (a - v);
        else if (v > b)
            e = (v - b) * (v - b);
        else
            e = step * step / 12.0;
        err += e * (double)h->bins[i];
    }
    return err;
}

/* Coordinate search: the upper clip on a grid with the lower fixed, then
 * the lower, twice; each side shrinks independently (activations are
 * rarely symmetric). */
static void range_mse(const cal_hist *h, int bits, float *lo, float *hi)
{
    double a0 = fmin((double)h->min, 0.0), b0 = fmax((double)h->max, 0.0);
    double a = a0, b = b0;
    for (int round = 0; round < 2; round++) {
        double best = quant_mse(h, a, b, bits), bb = b;
        for (int k = 99; k >= 5; k--) {
            double e = quant_mse(h, a, b0 * k / 100.0, bits);
            if (e < best) {
                best = e;
                bb = b0 * k / 100.0;
            }
        }
        b = bb;
        double ba = a;
        for (int k = 99; k >= 5; k--) {
            double e = quant_mse(h, a0 * k / 100.0, b, bits);
            if (e < best) {
                best = e;
                ba = a0 * k / 100.0;
            }
        }
        a = ba;
    }
    *lo = (float)a;
    *hi = (float)b;
}

void cal_choose_range(const cal_hist *h, const cal_range_opts *o, float *lo, float *hi)
{
    if (!h->count || h->width == 0.0) {
        *lo = h->count ? h->min : 0.0f;
        *hi = h->count ? h->max : 0.0f;
        include_zero(lo, hi);
        return;
    }
    int bits = o->bits == 4 ? 4 : 8;
    switch (o->method) {
    case CAL_PERCENTILE: range_percentile(h, o->percentile > 50.0 ? o->percentile : 99.99, lo, hi); break;
    case CAL_KL: range_kl(h, bits, lo, hi); break;
    case CAL_MSE: range_mse(h, bits, lo, hi); break;
    default:
        *lo = h->min;
        *hi = h->max;
        break;
    }
    include_zero(lo, hi);
}
