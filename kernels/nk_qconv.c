/* int8 conv2d, NCHW, per-channel requantization.
 *
 * General path: im2col of a block of output pixels into scratch as rows of
 * K = c_in/groups * k_h * k_w int8 values (padding filled with in_zp), then a
 * contiguous int8 dot product per (output channel, pixel). The input zero
 * point is folded out: sum w * (x - zp) = sum w * x - zp * sum w.
 * Depthwise-like groups (one input channel per group) run directly.
 *
 * Overflow: |w * x| <= 2^14 and |zp * sum w| <= 2^14 * K, so int32 holds the
 * accumulator for K <= 65536 (checked); the bias add saturates. */
#include "kernels/nk_quant.h"

#include <string.h>

enum { QCONV_BLOCK = 32, QCONV_MAX_K = 65536 };

static int i8_range(int32_t v)
{
    return v >= -128 && v <= 127;
}

static int64_t out_size(int32_t in, int32_t pad0, int32_t pad1, int32_t k, int32_t dil, int32_t stride)
{
    int64_t span = (int64_t)dil * (k - 1) + 1;
    int64_t padded = (int64_t)in + pad0 + pad1;
    return padded < span ? 0 : (padded - span) / stride + 1;
}

static nk_status check(const nk_qconv2d_params *p)
{
    if (!p || p->n <= 0 || p->c_in <= 0 || p->h_in <= 0 || p->w_in <= 0 || p->c_out <= 0 || p->k_h <= 0 ||
        p->k_w <= 0 || p->stride_h <= 0 || p->stride_w <= 0 || p->dil_h <= 0 || p->dil_w <= 0 ||
        p->pad_top < 0 || p->pad_left < 0 || p->pad_bottom < 0 || p->pad_right < 0 || p->groups <= 0 ||
        p->c_in % p->groups || p->c_out % p->groups)
        return NK_EARG;
    if (p->h_out != out_size(p->h_in, p->pad_top, p->pad_bottom, p->k_h, p->dil_h, p->stride_h) ||
        p->w_out != out_size(p->w_in, p->pad_left, p->pad_right, p->k_w, p->dil_w, p->stride_w) || p->h_out <= 0 ||
        p->w_out <= 0)
        return NK_EARG;
    if (!i8_range(p->in_zp) || !i8_range(p->out_zp) || !i8_range(p->act_min) || !i8_range(p->act_max) ||
        p->act_min > p->act_max || (p->w_format != NK_W_I8 && p->w_format != NK_W_I4))
        return NK_EARG;
    if ((p->q.n != 1 && p->q.n != p->c_out) || !p->q.mult || !p->q.shift)
        return NK_EARG;
    for (int32_t i = 0; i < p->q.n; i++)
        if (p->q.mult[i] < 0 || p->q.shift[i] < NK_SHIFT_MIN || p->q.shift[i] > NK_SHIFT_MAX)
            return NK_EARG;
    if ((int64_t)(p->c_in / p->groups) * p->k_h * p->k_w > QCONV_MAX_K)
        return NK_EUNSUPPORTED;
    return NK_OK;
}

static size_t kdim(const nk_qconv2d_params *p)
{
    return (size_t)(p->c_in / p->groups) * (size_t)p->k_h * (size_t)p->k_w;
}

static size_t weights_count(const nk_qconv2d_params *p)
{
    return (size_t)p->c_out * kdim(p);
}

static size_t pixels(const nk_qconv2d_params *p)
{
    return (size_t)p->h_out * (size_t)p->w_out;
}

static int direct(const nk_qconv2d_params *p)
{
    return p->c_in == p->groups;
}

size_t nk_qconv2d_scratch_size(const nk_qconv2d_params *p)
{
    if (check(p) != NK_OK)
        return 0;
    size_t s = p->w_format == NK_W_I4 ? weights_count(p) : 0;
    if (!direct(p)) {
        size_t blk = pixels(p) < QCONV_BLOCK ? pixels(p) : QCONV_BLOCK;
        s += blk * kdim(p);
    }
    return s;
}

/* Rows of K values for pixels [p0, p0 + np) of one group's input channels. */
static void im2col(const nk_qconv2d_params *p, const int8_t *in, size_t p0, size_t np, int8_t *col)
{
    const int32_t cin_g = p->c_in / p->groups;
    const size_t hw = (size_t)p->h_in * (size_t)p->w_in;
    for (size_t j = 0; j < np; j++) {
        int32_t oy = (int32_t)((p0 + j) / (size_t)p->w_out), ox = (int32_t)((p0 + j) % (size_t)p->w_out);
        int32_t iy0 = oy * p->stride_h - p->pad_top, ix0 = ox * p->stride_w - p->pad_left;
        int8_t *c = col;
        for (int32_t ic = 0; ic < cin_g; ic++) {
            const int8_t *plane = in + (size_t)ic * hw;
            for (int32_t ky = 0; ky < p->k_h; ky++) {
                int32_t iy = iy0 + ky * p->dil_h;
                if (iy < 0 || iy >= p->h_in) {
                    memset(c, p->in_zp, (size_t)p->k_w);
                    c += p->k_w;
                    continue;
                }
                const int8_t *row = plane + (size_t)iy * (size_t)p->w_in;
                for (int32_t kx = 0; kx < p->k_w; kx++) {
                    int32_t ix = ix0 + kx * p->dil_w;
                    *c++ = (ix >= 0 && ix < p->w_in) ? row[ix] : (int8_t)p->in_zp;
                }
            }
        }
        col += kdim(p);
    }
}

static int32_t dot_i8(const int8_t *a, const int8_t *b, size_t k)
{
    int32_t acc = 0;
    for (size_t i = 0; i < k; i++)
        acc += (int32_t)a[i] * (int32_t)b[i];
    return acc;
}

static int32_t sum_i8(const int8_t *a, size_t k)
{
    int32_t s = 0;
    for (size_t i = 0; i < k; i++)
        s += a[i];
    return s;
}

static void conv_im2col(const nk_qconv2d_params *p, const int8_t *in, const int8_t *w, const int32_t *bias,
                        int8_t *out, int8_t *col)
{
    const size_t K = kdim(p), P = pixels(p);
    const int32_t cin_g = p->c_in / p->groups, cout_g = p->c_out / p->groups;
    const size_t in_plane = (size_t)p->h_in * (size_t)p->w_in;
    for (int32_t b = 0; b < p->n; b++) {
        for (int32_t g = 0; g < p->groups; g++) {
            const int8_t *gin = in + ((size_t)b * (size_t)p->c_in + (size_t)g * (size_t)cin_g) * in_plane;
            for (size_t p0 = 0; p0 < P; p0 += QCONV_BLOCK) {
                size_t np = P - p0 < QCONV_BLOCK ? P - p0 : QCONV_BLOCK;
                im2col(p, gin, p0, np, col);
                for (int32_t o = 0; o < cout_g; o++) {
                    int32_t oc = g * cout_g + o;
                    const int8_t *wr = w + (size_t)oc * K;
                    int32_t zpw = p->in_zp * sum_i8(wr, K), bv = bias ? bias[oc] : 0;
                    int32_t qi = p->q.n == 1 ? 0 : oc;
                    int32_t m = p->q.mult[qi], s = p->q.shift[qi];
                    int8_t *o_row = out + ((size_t)b * (size_t)p->c_out + (size_t)oc) * P + p0;
                    for (size_t j = 0; j < np; j++) {
                        int32_t acc = nk_sat_add_i32(dot_i8(wr, col + j * K, K) - zpw, bv);
                        o_row[j] = (int8_t)nk_requant_out(acc, m, s, p->out_zp, p->act_min, p->act_max);
                    }
                }
            }
        }
    }
}

/* One input channel per group: direct loops, padding contributes nothing. */
static void conv_direct(const nk_qconv2d_params *p, const int8_t *in, const int8_t *w, const int32_t *bias,
                        int8_t *out)
{
    const int32_t cout_g = p->c_out / p->groups;
    const size_t in_plane = (size_t)p->h_in * (size_t)p->w_in, K = kdim(p);
    for (int32_t b = 0; b < p->n; b++) {
        for (int32_t oc = 0; oc < p->c_out; oc++) {
            const int8_t *plane = in + ((size_t)b * (size_t)p->c_in + (size_t)(oc / cout_g)) * in_plane;
            const int8_t *wk = w + (size_t)oc * K;
            int32_t bv = bias ? bias[oc] : 0;
            int32_t qi = p->q.n == 1 ? 0 : oc;
            int32_t m = p->q.mult[qi], s = p->q.shift[qi];
            int8_t *o = out + ((size_t)b * (size_t)p->c_out + (size_t)oc) * pixels(p);
            for (int32_t oy = 0; oy < p->h_out; oy++) {
                int32_t iy0 = oy * p->stride_h - p->pad_top;
                for (int32_t ox = 0; ox < p->w_out; ox++) {
                    int32_t ix0 = ox * p->stride_w - p->pad_left;
                    int32_t acc = 0;
                    for (int32_t ky = 0; ky < p->k_h; ky++) {
                        int32_t iy = iy0 + ky * p->dil_h;
                        if (iy < 0 || iy >= p->h_in)
                            continue;
                        const int8_t *row = plane + (size_t)iy * (size_t)p->w_in;
                        const int8_t *wr = wk + (size_t)ky * (size_t)p->k_w;
                        for (int32_t kx = 0; kx < p->k_w; kx++) {
                            int32_t ix = ix0 + kx * p->dil_w;
                            if (ix >= 0 && ix < p->w_in)
                                acc += (int32_t)wr[kx] * ((int32_t)row[ix] - p->in_zp);
                        }
                    }
                    *o++ = (int8_t)nk_requant_out(nk_sat_add_i32(acc, bv), m, s, p->out_zp, p->act_min,
                                                  p->act_max);
                }
            }
        }
    }
}

nk_status nk_qconv2d(const nk_qconv2d_params *p, const int8_t *in, const void *w, const int32_t *bias,
                     int8_t *out, void *scratch)
{
    nk_status st = check(p);
    if (st != NK_OK)
        return st;
    if (!in || !w || !out || (nk_qconv2d_scratch_size(p) && !scratch))
        return NK_EARG;
    int8_t *sc = scratch;
    const int8_t *w8 = w;
    if (p->w_format == NK_W_I4) {
        nk_int4_unpack(w, sc, weights_count(p));
        w8 = sc;
        sc += weights_count(p);
    }
    if (direct(p))
        conv_direct(p, in, w8, bias, out);
    else
        conv_im2col(p, in, w8, bias, out, sc);
    return NK_OK;
}
