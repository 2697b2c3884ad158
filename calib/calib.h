/* Calibration: streaming statistics of activations and the range choosers
 * built on them. Memory per observed tensor is constant (a fixed histogram
 * that re-bins as the range grows), whatever the number of samples. */
#ifndef NPU_CALIB_H
#define NPU_CALIB_H

#include <stddef.h>
#include <stdint.h>

#include "common/alloc.h"
#include "common/status.h"

enum { CAL_BINS = 2048 };

/* Histogram over [origin*width, (origin+CAL_BINS)*width): edges stay on
 * multiples of width, and growing the range doubles width by merging bin
 * pairs, so merging never smears counts across zero. */
typedef struct cal_hist {
    float min, max;     /* exact extremes seen */
    uint64_t count;     /* finite values seen */
    double width;       /* 0 until the first nonzero value */
    int64_t origin;     /* index of the first bin, in units of width */
    uint64_t pending_zeros; /* zeros seen before any nonzero value fixed width */
    uint64_t bins[CAL_BINS]; /* valid once width is nonzero */
} cal_hist;

void cal_hist_init(cal_hist *h);
void cal_hist_add(cal_hist *h, const float *x, size_t n);
/* Only the count, min and max (no bins): all that minmax calibration reads
 * (cal_choose_range gives the same range as after cal_hist_add). */
void cal_hist_add_range(cal_hist *h, const float *x, size_t n);
/* Adds b's count, min and max to a's as if b's values came after a's
 * (cal_hist_add_range's compares): merged range-only statistics are those
 * of one pass in order. */
void cal_hist_merge_range(cal_hist *a, const cal_hist *b);
/* Adds b's counts into a (both keep their own widths: a re-bins to cover b). */
void cal_hist_merge(cal_hist *a, const cal_hist *b);

typedef enum cal_method { CAL_MINMAX, CAL_PERCENTILE, CAL_KL, CAL_MSE } cal_method;

typedef struct cal_range_opts {
    cal_method method;
    double percentile; /* CAL_PERCENTILE: e.g. 99.99 keeps 99.99% of values on each side */
    int bits;          /* quantization bits the range is chosen for (8 or 4) */
} cal_range_opts;

/* The real range [*lo, *hi] to quantize to; always contains 0 (so zero is
 * exactly representable) and is never empty. */
void cal_choose_range(const cal_hist *h, const cal_range_opts *o, float *lo, float *hi);

#endif
