/* int8 conv2d, NCHW, per-channel requantization.
 *
 * General path: im2col of a block of output pixels into scratch as rows of
 * K = c_in/groups * k_h * k_w int16 values x - in_zp (padding is then 0), the
 * group's weights widened to int16 once, and contiguous int16 dot products,
 * four pixels per pass over a weight row. int16 operands let the compiler use
 * the 16-bit multiply-add of the host's SIMD unit (pmaddwd on x86); that is
 * where the simulator's speed on whole models comes from.
 * One input channel per group (depthwise): per-tap row updates of an int32
 * row accumulator, contiguous for stride 1.
 *
 * Overflow: |w * (x - zp)| <= 128 * 255, so int32 holds the sum for
 * K <= 65536 (checked, NK_EUNSUPPORTED beyond); the bias add saturates. */
#include "kernels/nk_qfast.h"

#include <string.h>

/* The reference build is -O2; these loops need the vectorizer (3-4x). */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE_SIZE__)
#pragma GCC optimize("O3")
#endif

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

static size_t out_block(const nk_qconv2d_params *p)
{
    return pixels(p) < QCONV_BLOCK ? pixels(p) : QCONV_BLOCK;
}

/* Layout (int32 first for alignment): general path: int16 weights of one
 * group, then the im2col block; direct path: an int32 row accumulator, then
 * int4 weights unpacked to int8. */
size_t nk_qconv2d_scratch_size(const nk_qconv2d_params *p)
{
    if (check(p) != NK_OK)
        return 0;
    if (direct(p))
        return (size_t)p->w_out * sizeof(int32_t) + (p->w_format == NK_W_I4 ? weights_count(p) : 0);
    size_t cout_g = (size_t)(p->c_out / p->groups);
    return (cout_g + out_block(p)) * kdim(p) * sizeof(int16_t);
}

/* Rows of K values x - zp for pixels [p0, p0 + np) of one group's input channels. */
static void im2col(const nk_qconv2d_params *p, const int8_t *in, size_t p0, size_t np, int16_t *col)
{
    const int32_t cin_g = p->c_in / p->groups, zp = p->in_zp;
    const size_t hw = (size_t)p->h_in * (size_t)p->w_in;
    for (size_t j = 0; j < np; j++) {
        int32_t oy = (int32_t)((p0 + j) / (size_t)p->w_out), ox = (int32_t)((p0 + j) % (size_t)p->w_out);
        int32_t iy0 = oy * p->stride_h - p->pad_top, ix0 = ox * p->stride_w - p->pad_left;
        int16_t *c = col + j * kdim(p);
        for (int32_t ic = 0; ic < cin_g; ic++) {
            const int8_t *plane = in + (size_t)ic * hw;
            for (int32_t ky = 0; ky < p->k_h; ky++) {
                int32_t iy = iy0 + ky * p->dil_h;
                if (iy < 0 || iy >= p->h_in) {
                    memset(c, 0, (size_t)p->k_w * sizeof *c);
                    c += p->k_w;
                    continue;
                }
                const int8_t *row = plane + (size_t)iy * (size_t)p->w_in;
                for (int32_t kx = 0; kx < p->k_w; kx++) {
                    int32_t ix = ix0 + kx * p->dil_w;
                    *c++ = (ix >= 0 && ix < p->w_in) ? (int16_t)(row[ix] - zp) : 0;
                }
            }
        }
    }
}

static int32_t dot_i16(const int16_t *a, const int16_t *b, size_t k)
{
    int32_t acc = 0;
    for (size_t i = 0; i < k; i++)
        acc += (int32_t)a[i] * b[i];
    return acc;
}

/* One weight row against four consecutive im2col rows. */
static void dot4_i16(const int16_t *w, const int16_t *c, size_t k, int32_t *acc)
{
    const int16_t *c1 = c + k, *c2 = c1 + k, *c3 = c2 + k;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (size_t i = 0; i < k; i++) {
        int32_t wv = w[i];
        a0 += wv * c[i];
        a1 += wv * c1[i];
        a2 += wv * c2[i];
        a3 += wv * c3[i];
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}

static void widen_weights(const nk_qconv2d_params *p, const void *w, size_t first, size_t count, int16_t *dst)
{
    if (p->w_format == NK_W_I4) {
        for (size_t i = 0; i < count; i++)
            dst[i] = nk_int4_get(w, first + i);
    } else {
        const int8_t *w8 = (const int8_t *)w + first;
        for (size_t i = 0; i < count; i++)
            dst[i] = w8[i];
    }
}

/* raw non-NULL: the int32 sums instead of out (nk_qconv2d_fast). */
NK_HOT_CLONES static void conv_im2col(const nk_qconv2d_params *p, const int8_t *in, const void *w,
                                      const int32_t *bias, int8_t *out, int32_t *raw, void *scratch)
{
    const size_t K = kdim(p), P = pixels(p);
    const int32_t cin_g = p->c_in / p->groups, cout_g = p->c_out / p->groups;
    const size_t in_plane = (size_t)p->h_in * (size_t)p->w_in;
    int16_t *wg = scratch, *col = wg + (size_t)cout_g * K;
    for (int32_t g = 0; g < p->groups; g++) {
        widen_weights(p, w, (size_t)g * (size_t)cout_g * K, (size_t)cout_g * K, wg);
        for (int32_t b = 0; b < p->n; b++) {
            const int8_t *gin = in + ((size_t)b * (size_t)p->c_in + (size_t)g * (size_t)cin_g) * in_plane;
            for (size_t p0 = 0; p0 < P; p0 += QCONV_BLOCK) {
                size_t np = P - p0 < QCONV_BLOCK ? P - p0 : QCONV_BLOCK;
                im2col(p, gin, p0, np, col);
                for (int32_t o = 0; o < cout_g; o++) {
                    int32_t oc = g * cout_g + o, bv = bias ? bias[oc] : 0;
                    int32_t qi = p->q.n == 1 ? 0 : oc;
                    int32_t m = p->q.mult[qi], s = p->q.shift[qi];
                    const int16_t *wr = wg + (size_t)o * K;
                    size_t row = ((size_t)b * (size_t)p->c_out + (size_t)oc) * P + p0;
                    int32_t acc[4];
                    size_t j = 0;
                    if (raw) {
                        for (; j + 4 <= np; j += 4)
                            dot4_i16(wr, col + j * K, K, raw + row + j);
                        for (; j < np; j++)
                            raw[row + j] = dot_i16(wr, col + j * K, K);
                        continue;
                    }
                    int8_t *o_row = out + row;
                    for (; j + 4 <= np; j += 4) {
                        dot4_i16(wr, col + j * K, K, acc);
                        for (int t = 0; t < 4; t++)
                            o_row[j + (size_t)t] = (int8_t)nk_requant_out(nk_sat_add_i32(acc[t], bv), m, s,
                                                                          p->out_zp, p->act_min, p->act_max);
                    }
                    for (; j < np; j++)
                        o_row[j] = (int8_t)nk_requant_out(nk_sat_add_i32(dot_i16(wr, col + j * K, K), bv), m, s,
                                                          p->out_zp, p->act_min, p->act_max);
                }
            }
        }
    }
}

/* First and one-past-last output index whose input ix = o * stride + off lies in [0, n). */
static void valid_range(int32_t off, int32_t stride, int32_t n, int32_t out_n, int32_t *lo, int32_t *hi)
{
    int32_t a = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int32_t b = n - 1 - off < 0 ? 0 : (n - 1 - off) / stride + 1;
    *lo = a < out_n ? a : out_n;
    *hi = b < out_n ? b : out_n;
    if (*hi < *lo)
        *hi = *lo;
}

/* One input channel per group: each tap updates a row of int32 accumulators;
 * out-of-range taps are skipped (padding is x - zp = 0). */
NK_HOT_CLONES static void conv_direct(const nk_qconv2d_params *p, const int8_t *in, const int8_t *w, const int32_t *bias,
                        int8_t *out, int32_t *acc)
{
    const int32_t cout_g = p->c_out / p->groups, sw = p->stride_w, zp = p->in_zp;
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
                memset(acc, 0, (size_t)p->w_out * sizeof *acc);
                for (int32_t ky = 0; ky < p->k_h; ky++) {
                    int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
                    if (iy < 0 || iy >= p->h_in)
                        continue;
                    const int8_t *row = plane + (size_t)iy * (size_t)p->w_in;
                    for (int32_t kx = 0; kx < p->k_w; kx++) {
                        int32_t off = kx * p->dil_w - p->pad_left, lo, hi;
                        int32_t wv = wk[(size_t)ky * (size_t)p->k_w + (size_t)kx];
                        valid_range(off, sw, p->w_in, p->w_out, &lo, &hi);
                        if (lo == hi)
                            continue;
                        const int8_t *src = row + ((ptrdiff_t)lo * sw + off); /* the input of output lo */
                        int32_t *a = acc + lo, cnt = hi - lo;
                        if (sw == 1)
                            for (int32_t i = 0; i < cnt; i++)
                                a[i] += wv * (src[i] - zp);
                        else
                            for (int32_t i = 0; i < cnt; i++)
                                a[i] += wv * (src[(ptrdiff_t)i * sw] - zp);
                    }
                }
                for (int32_t ox = 0; ox < p->w_out; ox++)
                    *o++ = (int8_t)nk_requant_out(nk_sat_add_i32(acc[ox], bv), m, s, p->out_zp, p->act_min,
                                                  p->act_max);
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
    if (!in || !w || !out || !scratch)
        return NK_EARG;
    if (!direct(p)) {
        conv_im2col(p, in, w, bias, out, NULL, scratch);
        return NK_OK;
    }
    int32_t *acc = scratch;
    const int8_t *w8 = w;
    if (p->w_format == NK_W_I4) {
        int8_t *unpacked = (int8_t *)(acc + p->w_out);
        nk_int4_unpack(w, unpacked, weights_count(p));
        w8 = unpacked;
    }
    conv_direct(p, in, w8, bias, out, acc);
    return NK_OK;
}

/* Direct (depthwise): int4 weights unpacked to int8, then nk_qfast_dw's scratch. */
size_t nk_qconv2d_fast_scratch_size(const nk_qconv2d_params *p)
{
    size_t portable = nk_qconv2d_scratch_size(p);
    if (portable == 0)
        return 0;
    size_t fast = direct(p) ? ((p->w_format == NK_W_I4 ? weights_count(p) : 0) + 3) / 4 * 4 + nk_qfast_dw_scratch(p)
                            : nk_qfast_vnni_scratch(p);
    return fast > portable ? fast : portable;
}

static void conv_direct_fast(const nk_qconv2d_params *p, const int8_t *in, const void *w, const int32_t *bias,
                             int8_t *out, void *scratch)
{
    const int8_t *w8 = w;
    size_t skip = 0;
    if (p->w_format == NK_W_I4) {
        nk_int4_unpack(w, scratch, weights_count(p));
        w8 = scratch;
        skip = (weights_count(p) + 3) / 4 * 4;
    }
    nk_qfast_dw(p, in, w8, bias, out, (char *)scratch + skip);
}

size_t nk_qconv2d_fast_packed_size(const nk_qconv2d_params *p)
{
    return check(p) == NK_OK && !direct(p) && nk_qfast_vnni() ? nk_qfast_vnni_packed_size(p) : 0;
}

nk_status nk_qconv2d_fast_packed(const nk_qconv2d_params *p, const int8_t *in, const void *w, const int32_t *bias,
                                 int8_t *out, int32_t *raw, void *scratch, void *packed, int reuse,
                                 const nk_parallel *par)
{
    if (!packed || nk_qconv2d_fast_packed_size(p) == 0)
        return nk_qconv2d_fast(p, in, w, bias, out, raw, scratch);
    if (!in || !w || !scratch || (!raw && !out))
        return NK_EARG;
    nk_qfast_vnni_conv(p, in, w, bias, raw ? NULL : out, raw, scratch, packed, reuse, par);
    return NK_OK;
}

nk_status nk_qconv2d_fast(const nk_qconv2d_params *p, const int8_t *in, const void *w, const int32_t *bias,
                          int8_t *out, int32_t *raw, void *scratch)
{
    nk_status st = check(p);
    if (st != NK_OK)
        return st;
    if (raw && direct(p))
        return NK_EUNSUPPORTED;
    if (!in || !w || !scratch || (!raw && !out))
        return NK_EARG;
    if (direct(p))
        conv_direct_fast(p, in, w, bias, out, scratch);
    else if (nk_qfast_vnni())
        nk_qfast_vnni_conv(p, in, w, bias, raw ? NULL : out, raw, scratch, NULL, 0, NULL);
    else
        conv_im2col(p, in, w, bias, out, raw, scratch);
    return NK_OK;
}
