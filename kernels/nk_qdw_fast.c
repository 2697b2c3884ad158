/* Depthwise int8 conv for the host tools (nk_qconv2d_fast): one input
 * channel per group. Each input plane is widened once to x - zp in int16
 * with its padding written out as 0 (real 0), its columns split by phase
 * (column mod stride_w), so that every tap adds a contiguous run of int16
 * to a row of int32 sums with no bounds checks; the compiler vectorizes it.
 * The sums are exact (|w * (x - zp)| <= 2^15, few taps), as the portable
 * direct loop's; the requantization is nk_qfast_requant_row. */
#include "kernels/nk_qfast.h"

#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE_SIZE__)
#pragma GCC optimize("O3")
#endif

typedef struct dw_geom {
    size_t hp, wq, sw; /* padded rows, columns per phase, phases */
} dw_geom;

static dw_geom dw_geometry(const nk_qconv2d_params *p)
{
    dw_geom g;
    size_t wp = (size_t)p->w_in + (size_t)p->pad_left + (size_t)p->pad_right;
    g.sw = (size_t)p->stride_w;
    g.hp = (size_t)p->h_in + (size_t)p->pad_top + (size_t)p->pad_bottom;
    g.wq = (wp + g.sw - 1) / g.sw;
    return g;
}

/* int32 sums of one output plane, then the phase-split padded plane. */
size_t nk_qfast_dw_scratch(const nk_qconv2d_params *p)
{
    dw_geom g = dw_geometry(p);
    size_t sums = (size_t)p->h_out * (size_t)p->w_out * sizeof(int32_t);
    return sums + g.hp * g.sw * g.wq * sizeof(int16_t) + 16;
}

/* buf[(row * sw + phase) * wq + i] = the padded plane at column i * sw + phase. */
NK_HOT_CLONES static void widen_plane(const nk_qconv2d_params *p, const dw_geom *g, const int8_t *plane,
                                      int16_t *buf)
{
    memset(buf, 0, g->hp * g->sw * g->wq * sizeof *buf);
    for (int32_t y = 0; y < p->h_in; y++) {
        const int8_t *row = plane + (size_t)y * (size_t)p->w_in;
        int16_t *dst = buf + ((size_t)(y + p->pad_top) * g->sw) * g->wq;
        for (int32_t x = 0; x < p->w_in; x++) {
            size_t c = (size_t)(x + p->pad_left);
            dst[(c % g->sw) * g->wq + c / g->sw] = (int16_t)(row[x] - p->in_zp);
        }
    }
}

NK_HOT_CLONES static void taps(const nk_qconv2d_params *p, const dw_geom *g, const int16_t *buf, const int8_t *wk,
                               int32_t *acc)
{
    const size_t ow = (size_t)p->w_out;
    memset(acc, 0, (size_t)p->h_out * ow * sizeof *acc);
    for (int32_t ky = 0; ky < p->k_h; ky++)
        for (int32_t kx = 0; kx < p->k_w; kx++) {
            int32_t wv = wk[ky * p->k_w + kx];
            size_t c = (size_t)kx * (size_t)p->dil_w, ph = c % g->sw, off = c / g->sw;
            for (int32_t oy = 0; oy < p->h_out; oy++) {
                size_t r = (size_t)oy * (size_t)p->stride_h + (size_t)ky * (size_t)p->dil_h;
                const int16_t *src = buf + (r * g->sw + ph) * g->wq + off;
                int32_t *a = acc + (size_t)oy * ow;
                for (size_t ox = 0; ox < ow; ox++)
                    a[ox] += wv * src[ox];
            }
        }
}

void nk_qfast_dw(const nk_qconv2d_params *p, const int8_t *in, const int8_t *w8, const int32_t *bias, int8_t *out,
                 void *scratch)
{
    dw_geom g = dw_geometry(p);
    const size_t P = (size_t)p->h_out * (size_t)p->w_out, hw = (size_t)p->h_in * (size_t)p->w_in;
    const size_t K = (size_t)p->k_h * (size_t)p->k_w;
    const int32_t mult_per_in = p->c_out / p->groups;
    int32_t *acc = scratch;
    int16_t *buf = (int16_t *)(void *)(acc + P);
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
