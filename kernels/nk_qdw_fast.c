/* Depthwise int8 conv for the host tools (nk_qconv2d_fast): one input
 * channel per group. Each input plane is widened once to x - zp in int16
 * with its padding written out as 0 (real 0), its columns split by phase
 * and row, so that every tap adds one contiguous run of int16 to the int32
 * sums with no bounds checks; the compiler vectorizes it. On AVX-512 VNNI
 * hosts the widening and the taps are explicit (widen_run_avx512,
 * taps_avx512), the rest is shared. The sums are exact (|w * (x - zp)| <= 2^15, few taps), as the portable
 * direct loop's; the requantization is nk_qfast_requant_row. */
#include "kernels/nk_qfast.h"

#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE_SIZE__)
#pragma GCC optimize("O3", "no-loop-unroll-and-jam", "no-loop-interchange")
#endif

/* Outputs per block: the sums of a block stay in registers over all taps
 * (two 512-bit or four 256-bit vectors), so each tap costs a load of its
 * int16 run and a multiply-add, not a load and store of the sums. The sums
 * are computed in whole blocks; those past h_out x wq read the zero slack
 * and are discarded. */
enum { DW_BLOCK = 32, DW_MAX_TAPS = 64 };

/* The padded plane split by row phase (row mod stride_h) and column phase:
 * plane (rph, cph) holds padded rows ri * sh + rph, columns ci * sw + cph,
 * hq x wq of them. A tap then reads one plane from (ky*dh / sh, kx*dw / sw)
 * with the row stride wq for consecutive output rows, so the sums live in
 * h_out rows of wq (the columns past w_out are discarded) and each tap is
 * one contiguous run of h_out * wq. */
typedef struct dw_geom {
    size_t sh, sw, hq, wq, planes_len; /* planes_len: all planes plus one row and a block of slack */
    size_t len;                        /* sums computed: h_out rows of wq, rounded up to whole blocks */
    size_t n_taps, toff[DW_MAX_TAPS];  /* where each tap's run starts in the planes (the first DW_MAX_TAPS) */
} dw_geom;

/* The start of tap t's run in the planes. */
static size_t tap_off(const nk_qconv2d_params *p, const dw_geom *g, size_t t)
{
    size_t ry = t / (size_t)p->k_w * (size_t)p->dil_h, cx = t % (size_t)p->k_w * (size_t)p->dil_w;
    return (((ry % g->sh) * g->sw + cx % g->sw) * g->hq + ry / g->sh) * g->wq + cx / g->sw;
}

/* Once per layer: per channel, its divisions cost as much as the taps of a 7x7 plane. */
static dw_geom dw_geometry(const nk_qconv2d_params *p)
{
    dw_geom g;
    size_t wp = (size_t)p->w_in + (size_t)p->pad_left + (size_t)p->pad_right;
    size_t hp = (size_t)p->h_in + (size_t)p->pad_top + (size_t)p->pad_bottom;
    g.sh = (size_t)p->stride_h, g.sw = (size_t)p->stride_w;
    g.hq = (hp + g.sh - 1) / g.sh, g.wq = (wp + g.sw - 1) / g.sw;
    g.planes_len = g.sh * g.sw * g.hq * g.wq + g.wq + DW_BLOCK;
    g.len = ((size_t)p->h_out * g.wq + DW_BLOCK - 1) / DW_BLOCK * DW_BLOCK;
    g.n_taps = (size_t)p->k_h * (size_t)p->k_w;
    for (size_t t = 0; t < g.n_taps && t < DW_MAX_TAPS; t++)
        g.toff[t] = tap_off(p, &g, t);
    return g;
}

/* int32 sums (h_out rows of wq), then the planes. */
size_t nk_qfast_dw_scratch(const nk_qconv2d_params *p)
{
    dw_geom g = dw_geometry(p);
    return g.len * sizeof(int32_t) + g.planes_len * sizeof(int16_t) + 16;
}

/* Input columns [i0, i1) of phase ph's plane row are inside: column i holds
 * input column i * sw + first. */
typedef struct dw_phase {
    int64_t first;
    size_t i0, i1;
} dw_phase;

enum { DW_MAX_STRIDE = 16 };

static dw_phase phase_of(const nk_qconv2d_params *p, const dw_geom *g, size_t c)
{
    /* a phase whose first column lies past the input has none: C's division truncates toward 0, so
     * (w_in - 1 - first) / sw is 0, not negative, for first up to w_in - 1 + sw - 1 (a column past the
     * row was read: a 1-column input, pads 1 and 1, stride 3) */
    int64_t first = (int64_t)c - p->pad_left, span = (int64_t)p->w_in - 1 - first;
    size_t i0 = first >= 0 ? 0 : (size_t)((-first + (int64_t)g->sw - 1) / (int64_t)g->sw);
    size_t i1 = span < 0 ? 0 : (size_t)(span / (int64_t)g->sw) + 1;
    return (dw_phase){first, i0, i1 < g->wq ? i1 : g->wq};
}

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(NK_NO_CLONES)
#include "kernels/nk_qx86.h"

/* d[j] = src[j * sw] - zp for j < n, sw 1 or 2, 32 or 16 outputs a pass
 * (masked at the end, so nothing past the run is read): the rows are
 * 7-112 columns, too short for the compiler's vector loop to pay off. */
NK_VNNI static void widen_run_avx512(const int8_t *src, size_t n, size_t sw, int16_t zp, int16_t *d)
{
    const __m512i z = _mm512_set1_epi16(zp);
    if (sw == 1) {
        for (size_t j = 0; j < n; j += 32) {
            __mmask32 m = n - j >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << (n - j)) - 1);
            __m512i v = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, src + j));
            _mm512_mask_storeu_epi16(d + j, m, _mm512_sub_epi16(v, z));
        }
        return;
    }
    for (size_t j = 0; j < n; j += 16) { /* 2 (n - j) - 1 bytes hold the run's rest */
        size_t k = n - j >= 16 ? 16 : n - j, nb = 2 * k - 1;
        __mmask32 m = nb >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << nb) - 1);
        /* the even bytes as int16: the low halves of the sign-extended pairs */
        __m256i v = _mm512_cvtepi32_epi16(_mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, src + 2 * j)));
        _mm256_mask_storeu_epi16(d + j, (__mmask16)((1u << k) - 1), _mm256_sub_epi16(v, _mm512_castsi512_si256(z)));
    }
}

/* taps_block's sums by vpdpwssd: the int16 run against (w, 0) pairs gives
 * the even outputs, against (0, w) the odd ones, exact in int32 as the
 * portable loop's; interleaved back once per block. */
NK_VNNI static void taps_avx512(size_t n_taps, const int16_t *const *src, const int32_t *wv, size_t len,
                                int32_t *acc)
{
    int32_t we[DW_MAX_TAPS], wo[DW_MAX_TAPS];
    for (size_t t = 0; t < n_taps; t++)
        we[t] = (int32_t)(uint16_t)wv[t], wo[t] = (int32_t)((uint32_t)wv[t] << 16);
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    for (size_t at = 0; at < len; at += DW_BLOCK) {
        __m512i e = _mm512_setzero_si512(), o = _mm512_setzero_si512();
        for (size_t t = 0; t < n_taps; t++) {
            __m512i v = _mm512_loadu_si512((const void *)(src[t] + at));
            e = _mm512_dpwssd_epi32(e, v, _mm512_set1_epi32(we[t]));
            o = _mm512_dpwssd_epi32(o, v, _mm512_set1_epi32(wo[t]));
        }
        _mm512_storeu_si512(acc + at, _mm512_permutex2var_epi32(e, lo, o));
        _mm512_storeu_si512(acc + at + 16, _mm512_permutex2var_epi32(e, hi, o));
    }
}

/* taps' row packing (rows of 7-56 sums: a call of memmove each cost more than the move); forward, each
 * piece loaded before it is stored, as memmove's: the destination never passes the source */
NK_VNNI static void pack_rows_avx512(int32_t *acc, size_t rows, size_t w, size_t wq)
{
    for (size_t oy = 1; oy < rows; oy++)
        for (size_t j = 0; j < w; j += 16) {
            __mmask16 m = w - j >= 16 ? 0xFFFF : (__mmask16)((1u << (w - j)) - 1);
            _mm512_mask_storeu_epi32(acc + oy * w + j, m, _mm512_maskz_loadu_epi32(m, acc + oy * wq + j));
        }
}
#define DW_AVX512 1
#else
#define DW_AVX512 0
static void widen_run_avx512(const int8_t *src, size_t n, size_t sw, int16_t zp, int16_t *d)
{
    (void)src, (void)n, (void)sw, (void)zp, (void)d;
}

static void taps_avx512(size_t n_taps, const int16_t *const *src, const int32_t *wv, size_t len, int32_t *acc)
{
    (void)n_taps, (void)src, (void)wv, (void)len, (void)acc;
}

static void pack_rows_avx512(int32_t *acc, size_t rows, size_t w, size_t wq)
{
    (void)acc, (void)rows, (void)w, (void)wq;
}
#endif

NK_HOT_CLONES static void widen_plane(const nk_qconv2d_params *p, const dw_geom *g, const int8_t *plane,
                                      int16_t *buf, int avx512)
{
    memset(buf, 0, g->planes_len * sizeof *buf);
    const int16_t zp = (int16_t)p->in_zp;
    dw_phase ph[DW_MAX_STRIDE];
    const size_t nph = g->sw < DW_MAX_STRIDE ? g->sw : DW_MAX_STRIDE;
    for (size_t c = 0; c < nph; c++) /* the same for every row: computed once */
        ph[c] = phase_of(p, g, c);
    size_t rph = (size_t)p->pad_top % g->sh, rq = (size_t)p->pad_top / g->sh; /* padded row y + pad_top */
    for (int32_t y = 0; y < p->h_in; y++, rph = rph + 1 == g->sh ? (rq++, 0) : rph + 1) {
        const int8_t *row = plane + (size_t)y * (size_t)p->w_in;
        for (size_t c = 0; c < g->sw; c++) {
            dw_phase f = c < nph ? ph[c] : phase_of(p, g, c);
            if (f.i0 >= f.i1)
                continue;
            int16_t *d = buf + ((rph * g->sw + c) * g->hq + rq) * g->wq + f.i0;
            const int8_t *src = row + ((int64_t)(f.i0 * g->sw) + f.first); /* column i0 + j reads src[j * sw] */
            size_t n = f.i1 - f.i0;
            if (avx512 && g->sw <= 2)
                widen_run_avx512(src, n, g->sw, zp, d);
            else if (g->sw == 1)
                for (size_t j = 0; j < n; j++)
                    d[j] = (int16_t)(src[j] - zp);
            else if (g->sw == 2) /* a constant stride, which vectorizes */
                for (size_t j = 0; j < n; j++)
                    d[j] = (int16_t)(src[2 * j] - zp);
            else
                for (size_t j = 0; j < n; j++)
                    d[j] = (int16_t)(src[j * g->sw] - zp);
        }
    }
}

static inline void taps_block(size_t n_taps, const int16_t *const *src, const int32_t *wv, size_t at,
                              int32_t *restrict acc)
{
    int32_t a[DW_BLOCK] = {0};
    for (size_t t = 0; t < n_taps; t++) {
        const int16_t *restrict s = src[t] + at;
        int32_t w = wv[t];
        for (size_t i = 0; i < DW_BLOCK; i++)
            a[i] += w * s[i];
    }
    memcpy(acc + at, a, sizeof a);
}

NK_HOT_CLONES static void taps(const nk_qconv2d_params *p, const dw_geom *g, const int16_t *buf, const int8_t *wk,
                               int32_t *restrict acc, int avx512)
{
    const size_t n_taps = g->n_taps;
    if (n_taps <= DW_MAX_TAPS) {
        const int16_t *src[DW_MAX_TAPS];
        int32_t wv[DW_MAX_TAPS];
        for (size_t t = 0; t < n_taps; t++)
            src[t] = buf + g->toff[t], wv[t] = wk[t];
        if (avx512)
            taps_avx512(n_taps, src, wv, g->len, acc);
        else
            for (size_t at = 0; at < g->len; at += DW_BLOCK)
                taps_block(n_taps, src, wv, at, acc);
    } else { /* a window this wide: one pass over the sums per tap */
        memset(acc, 0, g->len * sizeof *acc);
        for (size_t t = 0; t < n_taps; t++) {
            const int16_t *restrict s = buf + tap_off(p, g, t);
            int32_t w = wk[t];
            for (size_t i = 0; i < g->len; i++)
                acc[i] += w * s[i];
        }
    }
    /* the rows packed to w_out for one requantization pass (forward moves: memmove) */
    if (avx512) {
        pack_rows_avx512(acc, (size_t)p->h_out, (size_t)p->w_out, g->wq);
        return;
    }
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
    const int avx512 = DW_AVX512 && nk_qfast_vnni();
    int16_t *buf = (int16_t *)(void *)(acc + g.len);
    for (int32_t b = 0; b < p->n; b++)
        for (int32_t oc = 0; oc < p->c_out; oc++) {
            int32_t ic = oc / mult_per_in;
            if (oc % mult_per_in == 0)
                widen_plane(p, &g, in + ((size_t)b * (size_t)p->c_in + (size_t)ic) * hw, buf, avx512);
            taps(p, &g, buf, w8 + (size_t)oc * K, acc, avx512);
            int32_t qi = p->q.n == 1 ? 0 : oc;
            nk_qfast_requant_row(acc, P, bias ? bias[oc] : 0, p->q.mult[qi], p->q.shift[qi], p->out_zp, p->act_min,
                                 p->act_max, out + ((size_t)b * (size_t)p->c_out + (size_t)oc) * P);
        }
}
