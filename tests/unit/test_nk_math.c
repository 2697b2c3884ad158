/* kernels/nk_math: our own transcendental functions agree with the C
 * library to within one float ulp over their ranges (and their special
 * values), so that replacing libm changed no result that matters. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/nk_math.h"

/* Distance in float ulps (as ordered integers). */
static int64_t ulps(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    if (ia < 0)
        ia = INT32_MIN - ia;
    if (ib < 0)
        ib = INT32_MIN - ib;
    return llabs((long long)ia - (long long)ib);
}

typedef float (*f1)(float);

static void sweep(const char *name, f1 ours, double (*ref)(double), float lo, float hi, int n)
{
    int64_t worst = 0;
    float at = lo;
    for (int i = 0; i <= n; i++) {
        float x = lo + (hi - lo) * (float)i / (float)n;
        float want = (float)ref(x); /* libm in double, rounded once: the true value to float */
        int64_t d = ulps(ours(x), want);
        if (d > worst)
            worst = d, at = x;
    }
    cr_expect(worst <= 1, "%s: %lld ulps at %.9g", name, (long long)worst, (double)at);
}

Test(nk_math, exp_log_tanh_erf_within_one_ulp)
{
    sweep("exp", nk_expf, exp, -87.0f, 88.0f, 200000);
    sweep("exp small", nk_expf, exp, -1e-3f, 1e-3f, 20000);
    sweep("log", nk_logf, log, 1e-30f, 1e30f, 200000);
    sweep("log near 1", nk_logf, log, 0.9f, 1.1f, 200000);
    sweep("tanh", nk_tanhf, tanh, -12.0f, 12.0f, 200000);
    sweep("tanh small", nk_tanhf, tanh, -1e-3f, 1e-3f, 20000);
    sweep("erf", nk_erff, erf, -5.0f, 5.0f, 200000);
}

Test(nk_math, special_values)
{
    cr_expect(isinf(nk_expf(100.0f)) && nk_expf(-200.0f) == 0.0f);
    cr_expect(isnan(nk_expf(NAN)) && isnan(nk_logf(-1.0f)) && isnan(nk_tanhf(NAN)) && isnan(nk_erff(NAN)));
    cr_expect(isinf(nk_logf(0.0f)) && nk_logf(0.0f) < 0 && isinf(nk_logf(INFINITY)));
    cr_expect(nk_logf(1.0f) == 0.0f && nk_expf(0.0f) == 1.0f);
    cr_expect(ulps(nk_logf(1e-40f), (float)log(1e-40)) <= 1, "subnormal log");
    cr_expect(nk_tanhf(30.0f) == 1.0f && nk_tanhf(-30.0f) == -1.0f && nk_erff(-6.0f) == -1.0f);
}

Test(nk_math, pow)
{
    cr_expect(nk_powf(2.0f, 10.0f) == 1024.0f && nk_powf(-2.0f, 3.0f) == -8.0f && nk_powf(5.0f, 0.0f) == 1.0f);
    cr_expect(isnan(nk_powf(-2.0f, 0.5f)) && isinf(nk_powf(0.0f, -1.0f)) && nk_powf(0.0f, 2.5f) == 0.0f);
    int64_t worst = 0;
    for (int i = 1; i < 2000; i++) {
        float x = (float)i * 0.0137f, y = (float)(i % 37) * 0.173f - 3.1f;
        int64_t d = ulps(nk_powf(x, y), (float)pow(x, y));
        worst = d > worst ? d : worst;
    }
    cr_expect(worst <= 1, "pow: %lld ulps", (long long)worst);
}
