#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "calib/calib.h"

static uint64_t total(const cal_hist *h)
{
    uint64_t t = 0;
    for (int i = 0; i < CAL_BINS; i++)
        t += h->bins[i];
    return t;
}

/* deterministic pseudo-random floats in [0, 1) */
static float rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.0f;
}

Test(calib_hist, counts_are_kept_as_the_range_grows)
{
    cal_hist *h = malloc(sizeof *h);
    cal_hist_init(h);
    uint32_t s = 1;
    float x[1000];
    for (int round = 0; round < 20; round++) {
        float scale = powf(2.0f, (float)round - 5.0f);
        for (int i = 0; i < 1000; i++)
            x[i] = (rnd(&s) * 2.0f - 0.5f) * scale;
        cal_hist_add(h, x, 1000);
    }
    cr_assert_eq(h->count, 20000);
    cr_assert_eq(total(h), 20000);
    /* every bin edge stays a multiple of the width: zero is a bin edge */
    cr_assert_leq((double)h->origin * h->width, 0.0);
    cr_assert_geq((double)(h->origin + CAL_BINS) * h->width, h->max);
    cr_assert_leq((double)h->origin * h->width, h->min);
    free(h);
}

Test(calib_hist, zeros_before_values_land_in_the_zero_bin)
{
    cal_hist *h = malloc(sizeof *h);
    cal_hist_init(h);
    float z[10] = {0}, v[2] = {1.0f, -1.0f};
    cal_hist_add(h, z, 10);
    cr_assert_eq(h->count, 10);
    cal_hist_add(h, v, 2);
    cr_assert_eq(total(h), 12);
    cr_assert_eq(h->bins[-h->origin], 10 + 0, "zeros in the bin starting at 0 (1.0 lies in a higher bin)");
    free(h);
}

Test(calib_hist, merge_equals_adding_everything_to_one)
{
    cal_hist *a = malloc(sizeof *a), *b = malloc(sizeof *b), *all = malloc(sizeof *all);
    cal_hist_init(a);
    cal_hist_init(b);
    cal_hist_init(all);
    uint32_t s = 7;
    float x[500];
    for (int i = 0; i < 500; i++)
        x[i] = rnd(&s) * 3.0f;
    cal_hist_add(a, x, 500);
    cal_hist_add(all, x, 500);
    for (int i = 0; i < 500; i++)
        x[i] = -rnd(&s) * 40.0f;
    cal_hist_add(b, x, 500);
    cal_hist_add(all, x, 500);
    cal_hist_merge(a, b);
    cr_assert_eq(a->count, 1000);
    cr_assert_eq(total(a), 1000);
    cr_assert_float_eq(a->min, all->min, 0);
    cr_assert_float_eq(a->max, all->max, 0);
    free(a);
    free(b);
    free(all);
}

Test(calib_range, minmax_includes_zero_and_extremes)
{
    cal_hist *h = malloc(sizeof *h);
    cal_hist_init(h);
    float x[3] = {0.5f, 2.0f, 1.0f};
    cal_hist_add(h, x, 3);
    float lo, hi;
    cal_range_opts o = {CAL_MINMAX, 0, 8};
    cal_choose_range(h, &o, &lo, &hi);
    cr_assert_float_eq(lo, 0.0f, 0);
    cr_assert_float_eq(hi, 2.0f, 0);
    free(h);
}

Test(calib_range, percentile_and_kl_and_mse_clip_outliers)
{
    cal_hist *h = malloc(sizeof *h);
    cal_hist_init(h);
    uint32_t s = 3;
    static float x[100000];
    /* a Gaussian-ish bulk in [-1, 1] plus one far outlier */
    for (int i = 0; i < 100000; i++)
        x[i] = (rnd(&s) + rnd(&s) + rnd(&s) - 1.5f) / 1.5f;
    x[0] = 20.0f;
    cal_hist_add(h, x, 100000);
    float lo, hi;
    cal_range_opts mm = {CAL_MINMAX, 0, 8};
    cal_choose_range(h, &mm, &lo, &hi);
    cr_assert_float_eq(hi, 20.0f, 0);
    /* at 8 bits one outlier costs MSE less than the rounding it would save, at 4 bits it does not */
    cal_range_opts methods[3] = {{CAL_PERCENTILE, 99.9, 8}, {CAL_KL, 0, 8}, {CAL_MSE, 0, 4}};
    for (int m = 0; m < 3; m++) {
        cal_choose_range(h, &methods[m], &lo, &hi);
        cr_assert_lt(hi, 10.0f, "method %d kept the outlier: hi=%g", m, (double)hi);
        cr_assert_gt(hi, 0.5f, "method %d clipped the bulk: hi=%g", m, (double)hi);
        cr_assert_lt(lo, -0.5f, "method %d: lo=%g", m, (double)lo);
    }
    free(h);
}

Test(calib_range, empty_and_constant_tensors_give_nonempty_ranges)
{
    cal_hist *h = malloc(sizeof *h);
    cal_hist_init(h);
    float lo, hi;
    cal_range_opts o = {CAL_KL, 0, 8};
    cal_choose_range(h, &o, &lo, &hi);
    cr_assert_lt(lo, hi);
    float z[4] = {0};
    cal_hist_add(h, z, 4);
    cal_choose_range(h, &o, &lo, &hi);
    cr_assert_lt(lo, hi);
    cr_assert_leq(lo, 0.0f);
    free(h);
}
