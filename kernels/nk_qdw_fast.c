/* Depthwise int8 conv for the host tools (nk_qconv2d_fast): one input
 * channel per group. Each input plane is widened once to x - zp in int16
 * with its padding written out as 0 (real 0), its columns split by phase
 * and row, so that every tap adds one contiguous run of int16 to the int32
 * sums with no bounds checks; the compiler vectorizes it.
 * The sums are exact (|w * (x - zp)| <= 2^15, few taps), as the portable
 * direct loop's; the requantization is nk_qfast_requant_row. */
#include "kernels/nk_qfast.h"

#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE_SIZE__)
#pragma GCC optimize("O3")
#endif

/* The padded plane split by row phase (row mod stride_h) and column phase:
 * plane (rph, cph) holds padded rows ri * sh + rph, columns ci * sw + cph,
 * hq x wq of them. A tap then reads one plane from (ky*dh / sh, kx*dw / sw)
 * with the row stride wq for consecutive output rows, so the sums live in
 * h_out rows of wq (the columns past w_out are discarded) and each tap is
 * one contiguous run of h_out * wq. */
typedef struct dw_geom {
    size_t sh, sw, hq, wq, planes_len; /* planes_len: all planes plus one row of slack */
} dw_geom;

static dw_geom dw_geometry(const nk_qconv2d_params *p)
{
    dw_geom g;
    size_t wp = (size_t)p->w_in + (size_t)p->pad_left + (size_t)p->pad_right;
    size_t hp = (size_t)p->h_in + (size_t)p->pad_top + (size_t)p->pad_bottom;
    g.sh = (size_t)p->stride_h, g.sw = (size_t)p->stride_w;
    g.hq = (hp + g.sh - 1) / g.sh, g.wq = (wp + g.sw - 1) / g.sw;
    g.planes_len = g.sh * g.sw * g.hq * g.wq + g.wq;
    return g;
}

/* int32 sums (h_out rows of wq), then the planes. */
size_t nk_qfast_dw_scratch(const nk_qconv2d_params *p)
{
    dw_geom g = dw_geometry(p);
    return (size_t)p->h_out * g.wq * sizeof(int32_t) + g.planes_len * sizeof(int16_t) + 16;
}

NK_HOT_CLONES static void widen_plane(const nk_qconv2d_params *p, const dw_geom *g, const int8_t *plane,
                                      int16_t *buf)
{
    memset(buf, 0, g->planes_len * sizeof *buf);
    for (int32_t y = 0; y < p->h_in; y++) {
        const int8_t *row = plane + (size_t)y * (size_t)p->w_in;
        size_t r = (size_t)(y + p->pad_top);
        for (size_t ph = 0; ph < g->sw; ph++) {
            int16_t *dst = buf + (((r % g->sh) * g->sw + ph) * g->hq + r / g->sh) * g->wq;
            /* column ci holds input column x = ci * sw + ph - pad_left */
            int64_t first = (int64_t)ph - p->pad_left;
            size_t i0 = first >= 0 ? 0 : (size_t)((-first + (int64_t)g->sw - 1) / (int64_t)g->sw);
            for (size_t i = i0; i < g->wq; i++) {
                int64_t x = (int64_t)(i * g->sw) + first;
                if (x >= p->w_in)
                    break;
                dst[i] = (int16_t)(row[x] - p->in_zp);
            }
        }
    }
}

NK_HOT_CLONES static void taps(const nk_qconv2d_params *p, const dw_geom *g, const int16_t *buf, const int8_t *wk,
                               int32_t *restrict acc)
{
    const size_t len = (size_t)p->h_out * g->wq;
    memset(acc, 0, len * sizeof *acc);
    for (int32_t ky = 0; ky < p->k_h; ky++)
        for (int32_t kx = 0; kx < p->k_w; kx++) {
            int32_t wv = wk[ky * p->k_w + kx];
            size_t ry = (size_t)ky * (size_t)p->dil_h, cx = (size_t)kx * (size_t)p->dil_w;
            const int16_t *restrict src =
                buf + (((ry % g->sh) * g->sw + cx % g->sw) * g->hq + ry / g->sh) * g->wq + cx / g->sw;
            for (size_t i = 0; i < len; i++)
                acc[i] += wv * src[i];
        }
    /* the rows packed to w_out for one requantization pass (forward moves: memmove) */
    for (int32_t oy = 1; oy < p->h_out; oy++)
        memmove(acc + (size_t)oy * (size_t)p->w_out, acc + (size_t)oy * g->wq, (size_t)p->w_out * sizeof *acc);
}

void nk_qfast_dw(const nk_qconv2d_params *p, const int8_t *in, const int8_t *w8, const int32_t *bias, int8_t *out,
                 void *scratch)
{
    dw_geom g = dw_geometry(p);
    const size_t P = (size_t)p->h_out * (size_t)p->w_out, hw = (size_t)p->h_in * (size_t)p->w_in;
    const size_t K = (size_t)p->k_h * (size_t)p->k_w;
    const int32_t mult_per_in = p->c_out / p->groups;
    int32_t *acc = scratch;
    int16_t *buf = (int16_t *)(void *)(acc + (size_t)p->h_out * g.wq);
    for (int32_t b = 0; b < p->n; b++)
        for (int32_t oc = 0; oc < p->c_out; oc++) {
            int32_t ic = oc / mult_per_in;
            if (oc % mult_per_in == 0)
                widen_plane(p, &g, in + ((size_t)b * (size_t)p->c_in + (size_t)ic) * hw, buf);
            taps(p, &g, buf, w8 + (size_t)oc * K, acc);
            int32_t qi = p->q.n == 1 ? 0 : oc;
            nk_qfast_requant_row(acc, P, bias ? bias[oc] : 0, p->q.mult[qi], p->q.shift[qi], p->out_zp, p->act_min,
                                 p->act_max, out + ((size_t)b * (size_t)p->c_out + (size_t)oc) * P);
        }
}
