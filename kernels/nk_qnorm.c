/* Integer row-wise Softmax and LayerNorm (nk_norm.h, docs/numerics.md):
 * exact integer definitions that one vector instruction each computes. */
#include <math.h>

#include "kernels/nk_math.h"
#include "kernels/nk_norm.h"
#include "kernels/nk_quant.h"

uint64_t nk_isqrt_u64(uint64_t v)
{
    uint64_t r = 0, bit = (uint64_t)1 << 62;
    while (bit > v)
        bit >>= 2;
    while (bit) { /* digit by digit: exact, no float */
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

static int8_t clamp_out(int64_t v, int32_t lo, int32_t hi)
{
    return (int8_t)(v < lo ? lo : (v > hi ? hi : v));
}

static int row_args_ok(int32_t rows, int32_t len, int32_t out_zp, int32_t lo, int32_t hi)
{
    return rows >= 0 && len >= 1 && len <= NK_QROW_MAX_LEN && lo <= hi && lo >= -128 && hi <= 127 &&
           out_zp >= -128 && out_zp <= 127;
}

/* ---- softmax ---- */

nk_status nk_qsoftmax_table(float in_scale, int32_t table[256])
{
    if (!(in_scale > 0.0f) || !isfinite(in_scale))
        return NK_EARG;
    for (int d = 0; d < 256; d++) /* nk_exp_d: the same bits on every host */
        table[d] = (int32_t)floor(nk_exp_d(-(double)in_scale * d) * NK_QSOFTMAX_ONE + 0.5);
    return NK_OK;
}

nk_status nk_qsoftmax(const nk_qsoftmax_params *p, const int32_t *table, const int8_t *in, int8_t *out)
{
    if (!row_args_ok(p->rows, p->len, p->out_zp, p->act_min, p->act_max) || p->mult < 0 ||
        p->shift < NK_SHIFT_MIN || p->shift > NK_SHIFT_MAX)
        return NK_EARG;
    for (int d = 0; d < 256; d++)
        if (table[d] < 0 || table[d] > NK_QSOFTMAX_ONE)
            return NK_EARG;
    int32_t len = p->len;
    for (int32_t r = 0; r < p->rows; r++) {
        const int8_t *x = in + (size_t)r * (size_t)len;
        int8_t *y = out + (size_t)r * (size_t)len;
        int mx = -128;
        for (int32_t j = 0; j < len; j++)
            mx = x[j] > mx ? x[j] : mx;
        int32_t sum = 0; /* <= 65535 * 2^15: no overflow */
        for (int32_t j = 0; j < len; j++)
            sum += table[mx - x[j]];
        for (int32_t j = 0; j < len; j++) {
            int64_t q = sum ? nk_requantize_div(table[mx - x[j]], p->mult, p->shift, sum) : 0;
            y[j] = clamp_out(p->out_zp + q, p->act_min, p->act_max);
        }
    }
    return NK_OK;
}

/* ---- layernorm ---- */

int64_t nk_qlayernorm_eps(float epsilon, float in_scale, int32_t len)
{
    double e = (double)len * len * (double)epsilon / ((double)in_scale * in_scale);
    return !(e > 0.0) ? 0 : e >= (double)INT32_MAX ? INT32_MAX : (int64_t)floor(e + 0.5);
}

nk_status nk_qlayernorm_cols(const float *gamma, const float *beta, int32_t len, float out_scale, int32_t *cols)
{
    if (!(out_scale > 0.0f) || !isfinite(out_scale) || len < 1)
        return NK_EARG;
    const double lim = (double)(1 << 30);
    for (int32_t j = 0; j < len; j++) {
        double m = (double)gamma[j] / out_scale, b = beta ? (double)beta[j] / out_scale : 0.0;
        if (!isfinite(m) || !isfinite(b))
            return NK_EARG;
        int s = 62;
        while (s > 1 && (fabs(m) * ldexp(1.0, s - 12) >= lim || fabs(b) * ldexp(1.0, s) >= lim))
            s--;
        double mm = nearbyint(m * ldexp(1.0, s - 12)), bb = nearbyint(b * ldexp(1.0, s));
        if (fabs(mm) >= 2 * lim || fabs(bb) >= 2 * lim)
            return NK_EARG; /* |gamma| or |beta| beyond 2^30 output steps */
        cols[3 * j] = (int32_t)bb, cols[3 * j + 1] = (int32_t)mm, cols[3 * j + 2] = s;
    }
    return NK_OK;
}

nk_status nk_qlayernorm(const nk_qlayernorm_params *p, const int32_t *cols, const int8_t *in, int8_t *out)
{
    if (!row_args_ok(p->rows, p->len, p->out_zp, p->act_min, p->act_max) || p->eps < 0 || p->eps > INT32_MAX)
        return NK_EARG;
    int64_t n = p->len;
    for (int64_t j = 0; j < n; j++)
        if (cols[3 * j + 2] < 1 || cols[3 * j + 2] > 62)
            return NK_EARG;
    for (int32_t r = 0; r < p->rows; r++) {
        const int8_t *x = in + (size_t)r * (size_t)n;
        int8_t *y = out + (size_t)r * (size_t)n;
        int64_t s = 0, q = 0;
        for (int64_t j = 0; j < n; j++) {
            s += x[j];
            q += (int64_t)x[j] * x[j];
        }
        /* |N x - S| <= sqrt(N V), so |(N x - S) R| <= sqrt(N) 2^31 < 2^39 */
        uint64_t d = (uint64_t)(n * q - s * s) + (uint64_t)p->eps;
        int64_t rs = d ? (int64_t)nk_isqrt_u64(((uint64_t)1 << 62) / d) : 0;
        for (int64_t j = 0; j < n; j++) {
            int64_t z = nk_round_shift_even((n * x[j] - s) * rs, 19, 0);
            int64_t acc = z * cols[3 * j + 1] + cols[3 * j];
            y[j] = clamp_out(p->out_zp + nk_round_shift_even(acc, cols[3 * j + 2], 0), p->act_min, p->act_max);
        }
    }
    return NK_OK;
}
