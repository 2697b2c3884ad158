/* A16W8 kernels (kernels/nk_q16.h): int16 activations, int8/int4 weights,
 * int64 sums rescaled once by nk_requantize64. Plain loops: these are the
 * reference and host forms; the NPU model calls the same functions. */
#include "kernels/nk_q16.h"

#include <math.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE_SIZE__)
#pragma GCC optimize("O3")
#endif

enum { Q16_MAX_K = 1 << 20, Q16_MAX_WINDOW = 65535 };

static int i16_range(int32_t v)
{
    return v >= -32768 && v <= 32767;
}

static int clamp_ok(int32_t lo, int32_t hi)
{
    return i16_range(lo) && i16_range(hi) && lo <= hi;
}

static int mults_ok(const nk_qmults *q, int32_t c)
{
    if ((q->n != 1 && q->n != c) || !q->mult || !q->shift)
        return 0;
    for (int32_t i = 0; i < q->n; i++)
        if (q->mult[i] < 0 || q->shift[i] < NK_SHIFT_MIN || q->shift[i] > NK_SHIFT_MAX)
            return 0;
    return 1;
}

static int16_t out16(int64_t acc, int32_t m, int32_t s, int32_t lo, int32_t hi)
{
    return (int16_t)nk_clamp_i32(nk_requantize64(acc, m, s), lo, hi);
}

static int32_t weight(const void *w, nk_wformat f, size_t i)
{
    return f == NK_W_I4 ? nk_int4_get(w, i) : ((const int8_t *)w)[i];
}

/* ---- conv ------------------------------------------------------------------ */

static int64_t conv_out(int32_t in, int32_t p0, int32_t p1, int32_t k, int32_t d, int32_t s)
{
    int64_t span = (int64_t)d * (k - 1) + 1, padded = (int64_t)in + p0 + p1;
    return padded < span ? 0 : (padded - span) / s + 1;
}

static nk_status conv_check(const nk_qconv2d_params *p)
{
    if (!p || p->n <= 0 || p->c_in <= 0 || p->h_in <= 0 || p->w_in <= 0 || p->c_out <= 0 || p->k_h <= 0 ||
        p->k_w <= 0 || p->stride_h <= 0 || p->stride_w <= 0 || p->dil_h <= 0 || p->dil_w <= 0 || p->pad_top < 0 ||
        p->pad_left < 0 || p->pad_bottom < 0 || p->pad_right < 0 || p->groups <= 0 || p->c_in % p->groups ||
        p->c_out % p->groups || p->in_zp != 0 || p->out_zp != 0 || !clamp_ok(p->act_min, p->act_max) ||
        (p->w_format != NK_W_I8 && p->w_format != NK_W_I4) || !mults_ok(&p->q, p->c_out))
        return NK_EARG;
    if (p->h_out != conv_out(p->h_in, p->pad_top, p->pad_bottom, p->k_h, p->dil_h, p->stride_h) ||
        p->w_out != conv_out(p->w_in, p->pad_left, p->pad_right, p->k_w, p->dil_w, p->stride_w) || p->h_out <= 0 ||
        p->w_out <= 0)
        return NK_EARG;
    if ((int64_t)(p->c_in / p->groups) * p->k_h * p->k_w > Q16_MAX_K)
        return NK_EUNSUPPORTED;
    return NK_OK;
}

/* The sum of one output pixel over its group's input channels and taps. */
static int64_t conv_dot(const nk_qconv2d_params *p, const int16_t *in, const void *w, size_t wbase, int32_t ic0,
                        int32_t cin_g, int32_t oy, int32_t ox)
{
    int64_t acc = 0;
    const size_t plane = (size_t)p->h_in * (size_t)p->w_in;
    for (int32_t ic = 0; ic < cin_g; ic++) {
        const int16_t *src = in + (size_t)(ic0 + ic) * plane;
        for (int32_t ky = 0; ky < p->k_h; ky++) {
            int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
            if (iy < 0 || iy >= p->h_in)
                continue;
            size_t wrow = wbase + ((size_t)ic * (size_t)p->k_h + (size_t)ky) * (size_t)p->k_w;
            for (int32_t kx = 0; kx < p->k_w; kx++) {
                int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
                if (ix >= 0 && ix < p->w_in)
                    acc += (int64_t)weight(w, p->w_format, wrow + (size_t)kx) * src[(size_t)iy * p->w_in + ix];
            }
        }
    }
    return acc;
}

nk_status nk_qconv2d_a16(const nk_qconv2d_params *p, const int16_t *in, const void *w, const int32_t *bias,
                         int16_t *out)
{
    nk_status st = conv_check(p);
    if (st != NK_OK)
        return st;
    if (!in || !w || !out)
        return NK_EARG;
    const int32_t cin_g = p->c_in / p->groups, cout_g = p->c_out / p->groups;
    const size_t K = (size_t)cin_g * (size_t)p->k_h * (size_t)p->k_w;
    const size_t in_img = (size_t)p->c_in * p->h_in * p->w_in;
    for (int32_t b = 0; b < p->n; b++)
        for (int32_t oc = 0; oc < p->c_out; oc++) {
            int32_t qi = p->q.n == 1 ? 0 : oc, m = p->q.mult[qi], s = p->q.shift[qi];
            int64_t bv = bias ? bias[oc] : 0;
            for (int32_t oy = 0; oy < p->h_out; oy++)
                for (int32_t ox = 0; ox < p->w_out; ox++) {
                    int64_t acc = conv_dot(p, in + (size_t)b * in_img, w, (size_t)oc * K, (oc / cout_g) * cin_g,
                                           cin_g, oy, ox);
                    *out++ = out16(acc + bv, m, s, p->act_min, p->act_max);
                }
        }
    return NK_OK;
}

nk_status nk_qfc_a16(const nk_qfc_params *p, const int16_t *in, const void *w, const int32_t *bias, int16_t *out)
{
    if (!p || p->batch <= 0 || p->in_features <= 0 || p->out_features <= 0 || p->in_zp != 0 || p->out_zp != 0 ||
        !clamp_ok(p->act_min, p->act_max) || (p->w_format != NK_W_I8 && p->w_format != NK_W_I4) ||
        !mults_ok(&p->q, p->out_features))
        return NK_EARG;
    if (p->in_features > Q16_MAX_K)
        return NK_EUNSUPPORTED;
    if (!in || !w || !out)
        return NK_EARG;
    const size_t K = (size_t)p->in_features, N = (size_t)p->out_features;
    for (int32_t b = 0; b < p->batch; b++)
        for (size_t o = 0; o < N; o++) {
            int64_t acc = bias ? bias[o] : 0;
            const int16_t *x = in + (size_t)b * K;
            if (p->w_format == NK_W_I8) {
                const int8_t *wr = (const int8_t *)w + o * K;
                for (size_t k = 0; k < K; k++)
                    acc += (int64_t)(wr[k] * (int32_t)x[k]);
            } else {
                for (size_t k = 0; k < K; k++)
                    acc += (int64_t)nk_int4_get(w, o * K + k) * x[k];
            }
            size_t qi = p->q.n == 1 ? 0 : o;
            out[(size_t)b * N + o] = out16(acc, p->q.mult[qi], p->q.shift[qi], p->act_min, p->act_max);
        }
    return NK_OK;
}

/* ---- pools ----------------------------------------------------------------- */

static int pool_size_ok(int32_t in, int32_t out, int32_t p0, int32_t p1, int32_t k, int32_t d, int32_t s)
{
    int64_t span = (int64_t)d * (k - 1) + 1, room = (int64_t)in + p0 + p1 - span;
    if (room < 0 || out <= 0)
        return 0;
    int64_t fl = room / s + 1, cl = (room + s - 1) / s + 1;
    if (out == cl && cl != fl && (int64_t)(cl - 1) * s >= (int64_t)in + p0)
        return 0;
    return out == fl || out == cl;
}

static nk_status pool_check(const nk_qpool_params *p, int global)
{
    if (!p || p->n <= 0 || p->c <= 0 || p->h_in <= 0 || p->w_in <= 0 || p->in_zp != 0 || p->out_zp != 0 ||
        p->mult < 0 || p->shift < NK_SHIFT_MIN || p->shift > NK_SHIFT_MAX || !clamp_ok(p->act_min, p->act_max))
        return NK_EARG;
    if (global)
        return (int64_t)p->h_in * p->w_in > Q16_MAX_WINDOW ? NK_EUNSUPPORTED : NK_OK;
    if (p->k_h <= 0 || p->k_w <= 0 || p->stride_h <= 0 || p->stride_w <= 0 || p->dil_h <= 0 || p->dil_w <= 0 ||
        p->pad_top < 0 || p->pad_left < 0 || p->pad_bottom < 0 || p->pad_right < 0 ||
        !pool_size_ok(p->h_in, p->h_out, p->pad_top, p->pad_bottom, p->k_h, p->dil_h, p->stride_h) ||
        !pool_size_ok(p->w_in, p->w_out, p->pad_left, p->pad_right, p->k_w, p->dil_w, p->stride_w))
        return NK_EARG;
    return (int64_t)p->k_h * p->k_w > Q16_MAX_WINDOW ? NK_EUNSUPPORTED : NK_OK;
}

/* One window: max (or INT32_MIN when empty) or the sum and the count of
 * covered elements (with count_include_pad: of the window clipped to the
 * padded input, onnxruntime's rule). */
static void window16(const nk_qpool_params *p, const int16_t *src, int32_t oy, int32_t ox, int32_t *mx,
                     int32_t *sum, int32_t *count)
{
    int32_t iy0 = oy * p->stride_h - p->pad_top, ix0 = ox * p->stride_w - p->pad_left, m = INT32_MIN, s = 0, k = 0;
    int32_t padded = 0;
    for (int32_t ky = 0; ky < p->k_h; ky++) {
        int32_t iy = iy0 + ky * p->dil_h;
        for (int32_t kx = 0; kx < p->k_w; kx++) {
            int32_t ix = ix0 + kx * p->dil_w;
            if (iy >= -p->pad_top && iy < p->h_in + p->pad_bottom && ix >= -p->pad_left &&
                ix < p->w_in + p->pad_right)
                padded++;
            if (iy < 0 || iy >= p->h_in || ix < 0 || ix >= p->w_in)
                continue;
            int32_t v = src[(size_t)iy * p->w_in + ix];
            m = v > m ? v : m;
            s += v;
            k++;
        }
    }
    *mx = m;
    *sum = s;
    *count = p->count_include_pad ? padded : k;
}

static nk_status pool16(const nk_qpool_params *p, const int16_t *in, int16_t *out, int avg)
{
    nk_status st = pool_check(p, 0);
    if (st != NK_OK)
        return st;
    if (!in || !out || (avg && (p->dil_h != 1 || p->dil_w != 1)))
        return NK_EARG;
    const size_t plane = (size_t)p->h_in * (size_t)p->w_in;
    for (int64_t nc = 0; nc < (int64_t)p->n * p->c; nc++)
        for (int32_t oy = 0; oy < p->h_out; oy++)
            for (int32_t ox = 0; ox < p->w_out; ox++) {
                int32_t m, s, k, v;
                window16(p, in + (size_t)nc * plane, oy, ox, &m, &s, &k);
                if (avg)
                    v = k ? nk_requantize_div(s, p->mult, p->shift, k) : 0;
                else
                    v = m == INT32_MIN ? 0 : nk_requantize(m, p->mult, p->shift);
                *out++ = (int16_t)nk_clamp_i32(v, p->act_min, p->act_max);
            }
    return NK_OK;
}

nk_status nk_qmaxpool_a16(const nk_qpool_params *p, const int16_t *in, int16_t *out)
{
    return pool16(p, in, out, 0);
}

nk_status nk_qavgpool_a16(const nk_qpool_params *p, const int16_t *in, int16_t *out)
{
    return pool16(p, in, out, 1);
}

nk_status nk_qglobal_avgpool_a16(const nk_qpool_params *p, const int16_t *in, int16_t *out)
{
    nk_status st = pool_check(p, 1);
    if (st != NK_OK)
        return st;
    if (!in || !out)
        return NK_EARG;
    const size_t plane = (size_t)p->h_in * (size_t)p->w_in;
    for (int64_t nc = 0; nc < (int64_t)p->n * p->c; nc++) {
        int32_t s = 0;
        for (size_t i = 0; i < plane; i++)
            s += in[(size_t)nc * plane + i];
        int32_t v = nk_requantize_div(s, p->mult, p->shift, (int32_t)plane);
        out[nc] = (int16_t)nk_clamp_i32(v, p->act_min, p->act_max);
    }
    return NK_OK;
}
