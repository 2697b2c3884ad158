/* Deterministic exp, log, tanh, erf, pow (see nk_math.h). Range reduction
 * and polynomials in double; no libm call, no fused multiply-add (C11 mode
 * keeps -ffp-contract off), so the result depends only on the input. */
#include "kernels/nk_math.h"

#include <stdint.h>
#include <string.h>

static const double LN2_HI = 6.93147180369123816490e-01, LN2_LO = 1.90821492927058770002e-10;
static const double INV_LN2 = 1.44269504088896338700e+00;

static double from_bits(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static uint64_t to_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

static int is_nan(double x)
{
    return x != x;
}

/* 2^k for k in [-1022, 1023]. */
static double pow2i(int k)
{
    return from_bits((uint64_t)(k + 1023) << 52);
}

double nk_exp_d(double x)
{
    if (is_nan(x))
        return x;
    if (x > 709.0)
        return from_bits(0x7ff0000000000000ull); /* +inf */
    if (x < -745.0)
        return 0.0;
    /* x = k ln2 + r, |r| <= ln2/2; nearest k by truncation of x/ln2 +- 0.5 */
    double t = x * INV_LN2;
    int k = (int)(t < 0 ? t - 0.5 : t + 0.5);
    double r = (x - k * LN2_HI) - k * LN2_LO;
    /* Taylor to r^13: |r| < 0.35, the remainder is below 2^-60 relative */
    double p = 1.0 / 6227020800.0;
    static const double inv_fact[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                                      1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
                                      1.0 / 24.0,        1.0 / 6.0,        0.5,             1.0,
                                      1.0};
    for (unsigned i = 0; i < sizeof inv_fact / sizeof inv_fact[0]; i++)
        p = p * r + inv_fact[i];
    /* scale in two steps so that subnormal results and k = 1024 work */
    if (k > 1000)
        return p * pow2i(1000) * pow2i(k - 1000);
    if (k < -1000)
        return p * pow2i(-1000) * pow2i(k + 1000);
    return p * pow2i(k);
}

double nk_log_d(double x)
{
    if (is_nan(x) || x < 0)
        return from_bits(0x7ff8000000000000ull);
    if (x == 0)
        return -from_bits(0x7ff0000000000000ull);
    if (x == from_bits(0x7ff0000000000000ull))
        return x;
    int e = 0;
    if (x < 2.2250738585072014e-308) { /* subnormal: normalize first */
        x *= pow2i(54);
        e = -54;
    }
    uint64_t b = to_bits(x);
    e += (int)((b >> 52) & 0x7ff) - 1023;
    double m = from_bits((b & 0x000fffffffffffffull) | 0x3ff0000000000000ull); /* [1, 2) */
    if (m > 1.41421356237309504880) {
        m *= 0.5;
        e++;
    }
    /* log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.1716; series to s^23 */
    double s = (m - 1.0) / (m + 1.0), s2 = s * s, sum = 0.0;
    for (int n = 23; n >= 1; n -= 2)
        sum = sum * s2 + 1.0 / n;
    return 2.0 * s * sum + e * LN2_LO + e * LN2_HI;
}

float nk_expf(float x)
{
    return (float)nk_exp_d(x);
}

float nk_logf(float x)
{
    return (float)nk_log_d(x);
}

float nk_tanhf(float x)
{
    double d = x, a = d < 0 ? -d : d;
    if (is_nan(d))
        return x;
    if (a > 20.0)
        return d < 0 ? -1.0f : 1.0f;
    if (a < 1e-4) /* tanh x = x - x^3/3 + ...: exact to double here */
        return (float)(d - d * d * d / 3.0);
    double t = nk_exp_d(2.0 * a), r = (t - 1.0) / (t + 1.0);
    return (float)(d < 0 ? -r : r);
}

float nk_erff(float x)
{
    double d = x, a = d < 0 ? -d : d;
    if (is_nan(d))
        return x;
    if (a >= 4.0) /* erfc(4) < 2^-25: rounds to +-1 in float */
        return d < 0 ? -1.0f : 1.0f;
    /* erf x = 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1)); the terms peak
     * near 1e6 at |x| = 4, so double keeps about 10 significant digits. */
    double x2 = a * a, term = a, sum = a;
    for (int n = 1; n < 100; n++) {
        term *= -x2 / n;
        double add = term / (2 * n + 1);
        sum += add;
        if ((add < 0 ? -add : add) < 1e-17 * sum)
            break;
    }
    double r = 1.12837916709551257390 * sum;
    return (float)(d < 0 ? -r : r);
}

/* An integer exponent by squaring, exactly as the reals would round it
 * once: double keeps float^k exact enough for float results. */
static double powi(double x, int64_t k)
{
    int neg = k < 0;
    uint64_t u = neg ? (uint64_t)(-k) : (uint64_t)k;
    double r = 1.0;
    for (; u; u >>= 1, x *= x)
        if (u & 1)
            r *= x;
    return neg ? 1.0 / r : r;
}

float nk_powf(float x, float y)
{
    double dx = x, dy = y;
    if (dy == 0)
        return 1.0f;
    if (is_nan(dx) || is_nan(dy))
        return from_bits(0x7ff8000000000000ull);
    int integral = dy >= -9.2e18 && dy <= 9.2e18 && (double)(int64_t)dy == dy;
    if (integral && dy >= -64 && dy <= 64)
        return (float)powi(dx, (int64_t)dy);
    if (dx == 0)
        return dy < 0 ? from_bits(0x7ff0000000000000ull) : 0.0f;
    if (dx < 0) {
        if (!integral)
            return from_bits(0x7ff8000000000000ull);
        double r = nk_exp_d(dy * nk_log_d(-dx));
        return (float)(((int64_t)dy & 1) ? -r : r);
    }
    return (float)nk_exp_d(dy * nk_log_d(dx));
}
