/* int8 max, average and global average pooling with an optional change of
 * scale. Window sums of x - zp (|.| <= 255 * 2^23) fit int32 for windows up to
 * 2^23 elements (checked); the rescale saturates. */
#include "kernels/nk_quant.h"

#include <string.h>

/* The reference build is -O2; these loops need the vectorizer. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE_SIZE__)
#pragma GCC optimize("O3")
#endif

enum { QPOOL_MAX_WINDOW = 1 << 23 };

static int i8_range(int32_t v)
{
    return v >= -128 && v <= 127;
}

/* out may be the floor (ONNX default) or the ceil (ceil_mode) size. */
int nk_qpool_size_ok(int32_t in, int32_t out, int32_t pad0, int32_t pad1, int32_t k, int32_t dil, int32_t stride)
{
    int64_t span = (int64_t)dil * (k - 1) + 1, room = (int64_t)in + pad0 + pad1 - span;
    if (room < 0 || out <= 0)
        return 0;
    int64_t fl = room / stride + 1, cl = (room + stride - 1) / stride + 1;
    /* ceil mode never starts a window in the trailing padding */
    if (out == cl && cl != fl && (int64_t)(cl - 1) * stride >= (int64_t)in + pad0)
        return 0;
    return out == fl || out == cl;
}

static int quant_ok(const nk_qpool_params *p)
{
    return i8_range(p->in_zp) && i8_range(p->out_zp) && p->mult >= 0 && p->shift >= NK_SHIFT_MIN &&
           p->shift <= NK_SHIFT_MAX && i8_range(p->act_min) && i8_range(p->act_max) && p->act_min <= p->act_max;
}

static nk_status check(const nk_qpool_params *p)
{
    if (!p || p->n <= 0 || p->c <= 0 || p->h_in <= 0 || p->w_in <= 0 || p->k_h <= 0 || p->k_w <= 0 ||
        p->stride_h <= 0 || p->stride_w <= 0 || p->dil_h <= 0 || p->dil_w <= 0 || p->pad_top < 0 ||
        p->pad_left < 0 || p->pad_bottom < 0 || p->pad_right < 0 || !quant_ok(p))
        return NK_EARG;
    if (!nk_qpool_size_ok(p->h_in, p->h_out, p->pad_top, p->pad_bottom, p->k_h, p->dil_h, p->stride_h) ||
        !nk_qpool_size_ok(p->w_in, p->w_out, p->pad_left, p->pad_right, p->k_w, p->dil_w, p->stride_w))
        return NK_EARG;
    if ((int64_t)p->k_h * p->k_w > QPOOL_MAX_WINDOW)
        return NK_EUNSUPPORTED;
    return NK_OK;
}

static int8_t maxpool_out(const nk_qpool_params *p, int32_t m)
{
    return (int8_t)nk_clamp_i32(nk_requant_out(m - p->in_zp, p->mult, p->shift, p->out_zp, -128, 127), p->act_min,
                                p->act_max);
}

/* The output code of window maximum m, from the table when there is one. */
static int8_t max_code(const nk_qpool_params *p, const int8_t *table, int32_t m)
{
    return table ? table[m + 128] : maxpool_out(p, m);
}

#ifndef __riscv
enum { QPOOL_ROW_MAX = 1024 };

/* One output row whose windows lie wholly inside vertically (host builds
 * only: the firmware keeps the one loop below and its simulated cycles).
 * The column maxima over the window's rows first, a vectorizable pass over
 * the input row, then the maxima across each window's columns: the same
 * maxima, so the same outputs. Returns 0 (row not handled) when the row is
 * too wide for the buffer. */
static int max_row_inside(const nk_qpool_params *p, const int8_t *table, const int8_t *src, int32_t iy0,
                          int8_t *out)
{
    if (p->w_in > QPOOL_ROW_MAX)
        return 0;
    int8_t colmax[QPOOL_ROW_MAX];
    const int8_t *r0 = src + (size_t)iy0 * (size_t)p->w_in;
    memcpy(colmax, r0, (size_t)p->w_in);
    for (int32_t ky = 1; ky < p->k_h; ky++) {
        const int8_t *r = r0 + (size_t)ky * (size_t)p->dil_h * (size_t)p->w_in;
        for (int32_t x = 0; x < p->w_in; x++)
            colmax[x] = r[x] > colmax[x] ? r[x] : colmax[x];
    }
    /* the window maxima across columns for every start x whose window is
     * inside, again a contiguous pass; the rest (padding) tap by tap */
    int32_t inner = p->w_in - (p->k_w - 1) * p->dil_w;
    int8_t winmax[QPOOL_ROW_MAX];
    if (inner > 0) {
        memcpy(winmax, colmax, (size_t)inner);
        for (int32_t kx = 1; kx < p->k_w; kx++) {
            const int8_t *c = colmax + kx * p->dil_w;
            for (int32_t x = 0; x < inner; x++)
                winmax[x] = c[x] > winmax[x] ? c[x] : winmax[x];
        }
    }
    for (int32_t ox = 0; ox < p->w_out; ox++) {
        int32_t ix0 = ox * p->stride_w - p->pad_left, m = -129; /* -129: a window wholly in padding */
        if (ix0 >= 0 && ix0 < inner) {
            out[ox] = max_code(p, table, winmax[ix0]);
            continue;
        }
        for (int32_t kx = 0; kx < p->k_w; kx++) {
            int32_t ix = ix0 + kx * p->dil_w;
            if (ix >= 0 && ix < p->w_in && colmax[ix] > m)
                m = colmax[ix];
        }
        out[ox] = m == -129 ? (int8_t)nk_clamp_i32(p->out_zp, p->act_min, p->act_max) : max_code(p, table, m);
    }
    return 1;
}
#endif

nk_status nk_qmaxpool(const nk_qpool_params *p, const int8_t *in, int8_t *out)
{
    nk_status st = check(p);
    if (st != NK_OK)
        return st;
    if (!in || !out)
        return NK_EARG;
    const size_t plane = (size_t)p->h_in * (size_t)p->w_in;
    /* The maximum is one of 256 codes: requantize each once (the same
     * function, so the same outputs) and look the windows' maxima up. */
    int8_t codes[256];
    const int8_t *table = NULL; /* below 1024 outputs (tiles) building it costs more */
    if ((int64_t)p->n * p->c * p->h_out * p->w_out >= 1024) {
        for (int32_t v = -128; v < 128; v++)
            codes[v + 128] = maxpool_out(p, v);
        table = codes;
    }
    for (int64_t nc = 0; nc < (int64_t)p->n * p->c; nc++) {
        const int8_t *src = in + (size_t)nc * plane;
        for (int32_t oy = 0; oy < p->h_out; oy++) {
            int32_t iy0 = oy * p->stride_h - p->pad_top;
#ifndef __riscv
            if (iy0 >= 0 && iy0 + (p->k_h - 1) * p->dil_h < p->h_in && max_row_inside(p, table, src, iy0, out)) {
                out += p->w_out;
                continue;
            }
#endif
            for (int32_t ox = 0; ox < p->w_out; ox++) {
                int32_t ix0 = ox * p->stride_w - p->pad_left;
                int32_t m = -129; /* below every int8: marks an empty window */
                if (iy0 >= 0 && iy0 + (p->k_h - 1) * p->dil_h < p->h_in && ix0 >= 0 &&
                    ix0 + (p->k_w - 1) * p->dil_w < p->w_in) { /* inside: no bounds to check */
                    const int8_t *win = src + (size_t)iy0 * (size_t)p->w_in + ix0;
                    for (int32_t ky = 0; ky < p->k_h; ky++, win += (size_t)p->dil_h * (size_t)p->w_in)
                        for (int32_t kx = 0; kx < p->k_w; kx++)
                            m = win[kx * p->dil_w] > m ? win[kx * p->dil_w] : m;
                    *out++ = max_code(p, table, m);
                    continue;
                }
                for (int32_t ky = 0; ky < p->k_h; ky++) {
                    int32_t iy = iy0 + ky * p->dil_h;
                    if (iy < 0 || iy >= p->h_in)
                        continue;
                    const int8_t *row = src + (size_t)iy * (size_t)p->w_in;
                    for (int32_t kx = 0; kx < p->k_w; kx++) {
                        int32_t ix = ix0 + kx * p->dil_w;
                        if (ix >= 0 && ix < p->w_in && row[ix] > m)
                            m = row[ix];
                    }
                }
                /* a window wholly in padding (dilation): real 0 */
                *out++ = m == -129 ? (int8_t)nk_clamp_i32(p->out_zp, p->act_min, p->act_max) : max_code(p, table, m);
            }
        }
    }
    return NK_OK;
}

/* out_zp + round_half_even(s * M / count) in one rounding (exact for any
 * valid multiplier), clamped; count 0 gives out_zp. */
static int32_t average(const nk_qpool_params *p, int32_t s, int32_t count)
{
    if (count <= 0)
        return nk_clamp_i32(p->out_zp, p->act_min, p->act_max);
    int64_t v = (int64_t)p->out_zp + nk_requantize_div(s, p->mult, p->shift, count);
    return v < p->act_min ? p->act_min : (v > p->act_max ? p->act_max : (int32_t)v);
}

int32_t nk_qavg_code(const nk_qpool_params *p, int32_t sum, int32_t count)
{
    return average(p, sum, count);
}

static int32_t min32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

static int32_t max32(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

nk_status nk_qavgpool(const nk_qpool_params *p, const int8_t *in, int8_t *out)
{
    nk_status st = check(p);
    if (st != NK_OK)
        return st;
    if (!in || !out || p->dil_h != 1 || p->dil_w != 1)
        return NK_EARG;
    const size_t plane = (size_t)p->h_in * (size_t)p->w_in;
    for (int64_t nc = 0; nc < (int64_t)p->n * p->c; nc++) {
        const int8_t *src = in + (size_t)nc * plane;
        for (int32_t oy = 0; oy < p->h_out; oy++) {
            /* as onnxruntime: the window clipped to the padded input, then to the input */
            int32_t ys = oy * p->stride_h - p->pad_top, ye = min32(ys + p->k_h, p->h_in + p->pad_bottom);
            int32_t y0 = max32(ys, 0), y1 = min32(ye, p->h_in);
            for (int32_t ox = 0; ox < p->w_out; ox++) {
                int32_t xs = ox * p->stride_w - p->pad_left, xe = min32(xs + p->k_w, p->w_in + p->pad_right);
                int32_t x0 = max32(xs, 0), x1 = min32(xe, p->w_in);
                int32_t sum = 0;
                for (int32_t y = y0; y < y1; y++) {
                    const int8_t *row = src + (size_t)y * (size_t)p->w_in;
                    for (int32_t x = x0; x < x1; x++)
                        sum += row[x];
                }
                int32_t valid = max32(y1 - y0, 0) * max32(x1 - x0, 0);
                int32_t count = p->count_include_pad ? (ye - ys) * (xe - xs) : valid;
                *out++ = (int8_t)average(p, sum - valid * p->in_zp, count);
            }
        }
    }
    return NK_OK;
}

nk_status nk_qglobal_avgpool(const nk_qpool_params *p, const int8_t *in, int8_t *out)
{
    if (!p || p->n <= 0 || p->c <= 0 || p->h_in <= 0 || p->w_in <= 0 || !quant_ok(p) || !in || !out)
        return NK_EARG;
    int64_t hw64 = (int64_t)p->h_in * p->w_in;
    if (hw64 > QPOOL_MAX_WINDOW)
        return NK_EUNSUPPORTED;
    const int32_t hw = (int32_t)hw64;
    for (int64_t nc = 0; nc < (int64_t)p->n * p->c; nc++) {
        const int8_t *src = in + (size_t)nc * (size_t)hw;
        int32_t sum = 0;
        for (int32_t i = 0; i < hw; i++)
            sum += src[i];
        out[nc] = (int8_t)average(p, sum - hw * p->in_zp, hw);
    }
    return NK_OK;
}
