/* int8 conv2d on AVX-512 VNNI (x86-64 hosts that have it; chosen at run
 * time by nk_qconv2d_fast). Elsewhere, including the rv32 firmware, this
 * file compiles to nothing and the portable kernel runs.
 *
 * The GEMM out[oc][pixel] = sum_k w[oc][k] * (x[k][pixel] - zp) runs as
 * vpdpbusd (unsigned 8-bit x signed 8-bit, four products summed into int32):
 * x is stored biased as u = x + 128 (padding as zp + 128, i.e. real 0), so
 * sum w * (x - zp) = sum w * u - (zp + 128) * sum w. The int32 sums wrap
 * exactly as the portable kernel's (the checked bound on K keeps the true
 * sum inside int32), so the result is the same whatever the order.
 * Requantization is nk_requant_out's arithmetic, 16 lanes at a time
 * (kernels/nk_qx86.h). tests/unit/test_kernels_qfast.c compares both paths. */
#include "kernels/nk_qfast.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(NK_NO_CLONES)

#include <string.h>

#include "kernels/nk_qx86.h"

#define VNNI NK_VNNI

enum { MR = 12, NR = 32, NB_MAX = 256, B_BYTES = 131072 };

int nk_qfast_vnni(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

typedef struct geom {
    size_t K, K4, cin_g, cout_g, panels, P, hw, nb_max;
} geom;

static size_t al64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static geom geometry(const nk_qconv2d_params *p)
{
    geom g;
    g.cin_g = (size_t)(p->c_in / p->groups);
    g.cout_g = (size_t)(p->c_out / p->groups);
    g.K = g.cin_g * (size_t)p->k_h * (size_t)p->k_w;
    g.K4 = (g.K + 3) / 4;
    g.panels = (g.cout_g + MR - 1) / MR;
    g.P = (size_t)p->h_out * (size_t)p->w_out;
    g.hw = (size_t)p->h_in * (size_t)p->w_in;
    size_t nb = B_BYTES / (g.K4 * 4 * NR);
    nb = nb < 1 ? NR : (nb > NB_MAX / NR ? NB_MAX : nb * NR);
    size_t pr = (g.P + NR - 1) / NR * NR;
    g.nb_max = nb < pr ? nb : pr;
    return g;
}

/* wsum, packed weights, packed block of x, one tile. */
size_t nk_qfast_vnni_scratch(const nk_qconv2d_params *p)
{
    geom g = geometry(p);
    return al64(g.cout_g * 4) + al64(g.panels * MR * g.K4 * 4) + al64(g.nb_max * g.K4 * 4) + MR * NR * 4 + 64;
}

static int8_t wget(const nk_qconv2d_params *p, const void *w, size_t idx)
{
    return p->w_format == NK_W_I4 ? nk_int4_get(w, idx) : ((const int8_t *)w)[idx];
}

/* One int8 weight row into its panel (4-byte groups MR * 4 bytes apart),
 * 64 bytes a pass by a scatter; returns the row's sum (vpdpbusd with ones).
 * The NPU model packs each conv instruction's weights, so this is hot when
 * the pixels per instruction are few. */
VNNI static int32_t pack_row_i8(const int8_t *src, size_t K, int8_t *row)
{
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(MR * 4));
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i acc = _mm512_setzero_si512();
    size_t k = 0;
    for (; k + 64 <= K; k += 64) {
        __m512i v = _mm512_loadu_si512((const void *)(src + k));
        acc = _mm512_dpbusd_epi32(acc, ones, v);
        _mm512_i32scatter_epi32((void *)(row + k / 4 * MR * 4), idx, v, 1);
    }
    int32_t s = _mm512_reduce_add_epi32(acc);
    for (; k < K; k++) {
        row[(k / 4) * MR * 4 + k % 4] = src[k];
        s += src[k];
    }
    return s;
}

/* a[((panel * K4 + k / 4) * MR + row) * 4 + k % 4], zero rows and depth past the ends. */
VNNI static void pack_a(const nk_qconv2d_params *p, const geom *g, const void *w, size_t grp, int8_t *a, int32_t *wsum)
{
    memset(a, 0, g->panels * MR * g->K4 * 4);
    for (size_t o = 0; o < g->cout_g; o++) {
        size_t base = (grp * g->cout_g + o) * g->K;
        int8_t *row = a + (o / MR) * g->K4 * MR * 4 + (o % MR) * 4;
        int32_t s = 0;
        if (p->w_format == NK_W_I8) {
            s = pack_row_i8((const int8_t *)w + base, g->K, row);
        } else {
            for (size_t k = 0; k < g->K; k++) {
                int8_t v = wget(p, w, base + k);
                row[(k / 4) * MR * 4 + k % 4] = v;
                s += v;
            }
        }
        wsum[o] = s;
    }
}

/* Four channel rows of n bytes interleaved: dst[j * 4 + t] = src_t[j] ^ 0x80, 16 pixels a pass. */
VNNI static void interleave4(const uint8_t *s0, const uint8_t *s1, const uint8_t *s2, const uint8_t *s3, size_t n,
                             uint8_t *dst)
{
    const __m128i flip = _mm_set1_epi8((char)0x80);
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m128i a0 = _mm_loadu_si128((const void *)(s0 + j)), a1 = _mm_loadu_si128((const void *)(s1 + j));
        __m128i a2 = _mm_loadu_si128((const void *)(s2 + j)), a3 = _mm_loadu_si128((const void *)(s3 + j));
        __m128i lo01 = _mm_unpacklo_epi8(a0, a1), hi01 = _mm_unpackhi_epi8(a0, a1);
        __m128i lo23 = _mm_unpacklo_epi8(a2, a3), hi23 = _mm_unpackhi_epi8(a2, a3);
        _mm_storeu_si128((void *)(dst + 4 * j), _mm_xor_si128(_mm_unpacklo_epi16(lo01, lo23), flip));
        _mm_storeu_si128((void *)(dst + 4 * j + 16), _mm_xor_si128(_mm_unpackhi_epi16(lo01, lo23), flip));
        _mm_storeu_si128((void *)(dst + 4 * j + 32), _mm_xor_si128(_mm_unpacklo_epi16(hi01, hi23), flip));
        _mm_storeu_si128((void *)(dst + 4 * j + 48), _mm_xor_si128(_mm_unpackhi_epi16(hi01, hi23), flip));
    }
    for (; j < n; j++) {
        dst[4 * j] = s0[j] ^ 0x80u, dst[4 * j + 1] = s1[j] ^ 0x80u;
        dst[4 * j + 2] = s2[j] ^ 0x80u, dst[4 * j + 3] = s3[j] ^ 0x80u;
    }
}

/* b[(k / 4) * nb * 4 + j * 4 + k % 4] = x + 128 for pixels p0 + j of one group's channels. */
/* One depth of the im2col matrix: its input plane and tap offsets, or none
 * (depth past K: its weights are 0). */
typedef struct tap {
    const int8_t *plane;
    int64_t dy, dx;
} tap;

/* Tap t's n pixels of output row oy from column x0 on, as raw int8 (padding
 * as in_zp, real 0): a run of an input row, so the inside columns are one
 * copy at stride 1 with no bounds checks, or none at all when the whole run
 * is inside (the input row itself is returned). Else returns row. */
static const int8_t *im2col_run(const nk_qconv2d_params *p, const tap *t, size_t oy, size_t x0, size_t n,
                                int8_t *row)
{
    const int8_t zp = (int8_t)p->in_zp;
    int64_t iy = (int64_t)oy * p->stride_h - p->pad_top + t->dy;
    if (!t->plane || iy < 0 || iy >= p->h_in) {
        memset(row, zp, n);
        return row;
    }
    const int8_t *src = t->plane + (size_t)iy * (size_t)p->w_in;
    int64_t sw = p->stride_w, first = (int64_t)x0 * sw - p->pad_left + t->dx, w = p->w_in;
    /* pixels i with 0 <= first + i * sw < w_in */
    int64_t lo, hi;
    if (sw == 1) /* the common case, without divisions */
        lo = first >= 0 ? 0 : -first, hi = w - first;
    else
        lo = first >= 0 ? 0 : (-first + sw - 1) / sw, hi = first > w - 1 ? 0 : (w - 1 - first) / sw + 1;
    lo = lo < (int64_t)n ? lo : (int64_t)n;
    hi = hi < (int64_t)n ? hi : (int64_t)n;
    hi = hi > lo ? hi : lo;
    if (sw == 1 && lo == 0 && hi == (int64_t)n)
        return src + first;
    for (int64_t i = 0; i < lo; i++)
        row[i] = zp;
    if (sw == 1)
        memcpy(row + lo, src + (first + lo), (size_t)(hi - lo));
    else
        for (int64_t i = lo; i < hi; i++)
            row[i] = src[first + i * sw];
    for (int64_t i = hi; i < (int64_t)n; i++)
        row[i] = zp;
    return row;
}

VNNI static void pack_b(const nk_qconv2d_params *p, const geom *g, const int8_t *in, size_t p0, size_t nb,
                        uint8_t *b)
{
    const size_t valid = g->P - p0 < nb ? g->P - p0 : nb;
    const uint8_t pad = (uint8_t)(p->in_zp + 128);
    if (g->K % 4)
        memset(b + (g->K4 - 1) * nb * 4, 0, nb * 4);
    if (p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
        p->pad_left == 0 && p->h_out == p->h_in && p->w_out == p->w_in) {
        for (size_t k = 0; k + 4 <= g->K; k += 4) {
            const uint8_t *src = (const uint8_t *)in + k * g->hw + p0;
            uint8_t *dst = b + (k / 4) * nb * 4;
            interleave4(src, src + g->hw, src + 2 * g->hw, src + 3 * g->hw, valid, dst);
            for (size_t j = valid; j < nb; j++)
                memset(dst + 4 * j, pad, 4);
        }
        for (size_t k = g->K / 4 * 4; k < g->K; k++) {
            const uint8_t *src = (const uint8_t *)in + k * g->hw + p0;
            uint8_t *dst = b + (k / 4) * nb * 4 + k % 4;
            for (size_t j = 0; j < valid; j++)
                dst[j * 4] = src[j] ^ 0x80u;
            for (size_t j = valid; j < nb; j++)
                dst[j * 4] = pad;
        }
        return;
    }
    size_t ic = 0, ky = 0, kx = 0; /* depth k = (ic * k_h + ky) * k_w + kx, stepped without divisions */
    for (size_t k4 = 0; k4 < g->K4; k4++) {
        uint8_t *dst = b + k4 * nb * 4;
        tap t[4];
        for (size_t i = 0; i < 4; i++) {
            t[i] = 4 * k4 + i >= g->K ? (tap){NULL, 0, 0}
                                      : (tap){in + ic * g->hw, (int64_t)ky * p->dil_h, (int64_t)kx * p->dil_w};
            if (++kx == (size_t)p->k_w && (kx = 0, ++ky == (size_t)p->k_h))
                ky = 0, ic++;
        }
        /* Each tap's pixels gathered into one line first (padded to nb with
         * the zero point), then one interleave over the block: per output
         * row it would run on w_out pixels with a scalar tail each time. */
        int8_t line[4][NB_MAX];
        size_t oy = p0 / (size_t)p->w_out, x0 = p0 % (size_t)p->w_out;
        for (size_t j0 = 0; j0 < valid; oy++, x0 = 0) {
            size_t n = (size_t)p->w_out - x0 < valid - j0 ? (size_t)p->w_out - x0 : valid - j0;
            for (size_t i = 0; i < 4; i++) {
                const int8_t *r = im2col_run(p, &t[i], oy, x0, n, line[i] + j0);
                if (r != line[i] + j0)
                    memcpy(line[i] + j0, r, n);
            }
            j0 += n;
        }
        for (size_t i = 0; i < 4; i++)
            memset(line[i] + valid, p->in_zp, nb - valid);
        interleave4((const uint8_t *)line[0], (const uint8_t *)line[1], (const uint8_t *)line[2],
                    (const uint8_t *)line[3], nb, dst);
    }
}

/* MR x NR int32 sums of one weight panel against NR pixels. */
VNNI static void kernel(size_t K4, const int8_t *a, const uint8_t *b, size_t bstride, int32_t *c)
{
    __m512i acc[MR][2];
    for (int r = 0; r < MR; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_si512();
    for (size_t k = 0; k < K4; k++, a += MR * 4, b += bstride) {
        __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 64);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            int32_t wv;
            memcpy(&wv, a + r * 4, 4);
            __m512i av = _mm512_set1_epi32(wv);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], b0, av);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], b1, av);
        }
    }
    for (int r = 0; r < MR; r++) {
        _mm512_storeu_si512(c + r * NR, acc[r][0]);
        _mm512_storeu_si512(c + r * NR + 16, acc[r][1]);
    }
}

/* Rows [o0, o0 + rows) x pixels [px, px + n) of one tile: raw sums or requantized int8. */
typedef struct outp {
    const nk_qconv2d_params *p;
    const int32_t *bias, *wsum;
    int8_t *out;  /* this image and group: [cout_g][P] */
    int32_t *raw; /* or this */
    size_t P, oc0;
} outp;

VNNI static void epilogue(const outp *d, const int32_t *c, size_t o0, size_t rows, size_t px, size_t n)
{
    const nk_qconv2d_params *p = d->p;
    __mmask16 m0 = n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
    __mmask16 m1 = n >= 32 ? 0xFFFF : (n <= 16 ? 0 : (__mmask16)((1u << (n - 16)) - 1));
    for (size_t r = 0; r < rows; r++) {
        size_t o = o0 + r, oc = d->oc0 + o;
        /* (zp + 128) * wsum wraps like the sums: unsigned, then back */
        __m512i corr = _mm512_set1_epi32((int32_t)((uint32_t)(p->in_zp + 128) * (uint32_t)d->wsum[o]));
        __m512i s0 = _mm512_sub_epi32(_mm512_loadu_si512(c + r * NR), corr);
        __m512i s1 = _mm512_sub_epi32(_mm512_loadu_si512(c + r * NR + 16), corr);
        if (d->raw) {
            _mm512_mask_storeu_epi32(d->raw + o * d->P + px, m0, s0);
            _mm512_mask_storeu_epi32(d->raw + o * d->P + px + 16, m1, s1);
            continue;
        }
        size_t qi = p->q.n == 1 ? 0 : oc;
        nk_rq16 q = nk_rq16_make(d->bias ? d->bias[oc] : 0, p->q.mult[qi], p->q.shift[qi], p->out_zp, p->act_min,
                                 p->act_max);
        __m128i r0 = nk_rq16_apply(&q, s0), r1 = nk_rq16_apply(&q, s1);
        _mm_mask_storeu_epi8(d->out + o * d->P + px, m0, r0);
        _mm_mask_storeu_epi8(d->out + o * d->P + px + 16, m1, r1);
    }
}

/* nk_requant_out(nk_sat_add_i32(acc[i], bias), ...) for a row, 16 lanes at a time. */
VNNI static void requant_row_avx512(const int32_t *acc, size_t n, int32_t bias, int32_t mult, int32_t shift,
                                    int32_t zp, int32_t lo, int32_t hi, int8_t *out)
{
    nk_rq16 q = nk_rq16_make(bias, mult, shift, zp, lo, hi);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        _mm_mask_storeu_epi8(out + i, m, nk_rq16_apply(&q, _mm512_maskz_loadu_epi32(m, acc + i)));
    }
}

void nk_qfast_requant_row(const int32_t *acc, size_t n, int32_t bias, int32_t mult, int32_t shift, int32_t zp,
                          int32_t lo, int32_t hi, int8_t *out)
{
    if (nk_qfast_vnni()) {
        requant_row_avx512(acc, n, bias, mult, shift, zp, lo, hi, out);
        return;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = (int8_t)nk_requant_out(nk_sat_add_i32(acc[i], bias), mult, shift, zp, lo, hi);
}

typedef struct bufs {
    int32_t *wsum, *tile;
    int8_t *a;
    uint8_t *b;
} bufs;

static bufs carve(const geom *g, void *scratch)
{
    uint8_t *s = (uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    bufs u;
    u.wsum = (int32_t *)(void *)s;
    s += al64(g->cout_g * 4);
    u.a = (int8_t *)s;
    s += al64(g->panels * MR * g->K4 * 4);
    u.b = s;
    s += al64(g->nb_max * g->K4 * 4);
    u.tile = (int32_t *)(void *)s;
    return u;
}

/* Every pixel block of one image and group against every weight panel.
 * With packed, block i's im2col lies at packed + i * nb_max * K4 * 4,
 * written there unless reuse says it already is. */
static void conv_blocks(const nk_qconv2d_params *p, const geom *g, const bufs *u, const int8_t *gin, const outp *d,
                        uint8_t *packed, int reuse)
{
    for (size_t p0 = 0; p0 < g->P; p0 += g->nb_max) {
        size_t valid = g->P - p0 < g->nb_max ? g->P - p0 : g->nb_max;
        size_t nb = (valid + NR - 1) / NR * NR;
        uint8_t *b = packed ? packed + p0 / g->nb_max * g->nb_max * g->K4 * 4 : u->b;
        if (!packed || !reuse)
            pack_b(p, g, gin, p0, nb, b);
        for (size_t pa = 0; pa < g->panels; pa++) {
            size_t rows = g->cout_g - pa * MR < MR ? g->cout_g - pa * MR : MR;
            for (size_t j = 0; j < nb; j += NR) {
                kernel(g->K4, u->a + pa * MR * g->K4 * 4, b + j * 4, nb * 4, u->tile);
                size_t n = valid - j < NR ? valid - j : NR;
                epilogue(d, u->tile, pa * MR, rows, p0 + j, n);
            }
        }
    }
}

/* Shared among nk_parallel's parts in two phases: the im2col of every
 * block (one region of packed apiece), then every (block, weight panel)
 * pair, each part a contiguous range of them with its own tile of sums.
 * Each pair writes its own rows and pixels; the packed weights and their
 * sums are read only. */
typedef struct blocks_job {
    const nk_qconv2d_params *p;
    const geom *g;
    const bufs *u;
    const int8_t *gin;
    const outp *d;
    uint8_t *packed;
    size_t nblocks;
} blocks_job;

static void pack_part(void *ctx, int part, int parts)
{
    const blocks_job *j = ctx;
    const geom *g = j->g;
    for (size_t i = j->nblocks * (size_t)part / (size_t)parts; i < j->nblocks * (size_t)(part + 1) / (size_t)parts;
         i++) {
        size_t p0 = i * g->nb_max, valid = g->P - p0 < g->nb_max ? g->P - p0 : g->nb_max;
        pack_b(j->p, g, j->gin, p0, (valid + NR - 1) / NR * NR, j->packed + i * g->nb_max * g->K4 * 4);
    }
}

static void pairs_part(void *ctx, int part, int parts)
{
    const blocks_job *j = ctx;
    const geom *g = j->g;
    int32_t tile[MR * NR];
    size_t n = j->nblocks * g->panels;
    for (size_t i = n * (size_t)part / (size_t)parts; i < n * (size_t)(part + 1) / (size_t)parts; i++) {
        size_t blk = i / g->panels, pa = i % g->panels, p0 = blk * g->nb_max;
        size_t valid = g->P - p0 < g->nb_max ? g->P - p0 : g->nb_max, nb = (valid + NR - 1) / NR * NR;
        size_t rows = g->cout_g - pa * MR < MR ? g->cout_g - pa * MR : MR;
        const uint8_t *b = j->packed + blk * g->nb_max * g->K4 * 4;
        for (size_t c = 0; c < nb; c += NR) {
            kernel(g->K4, j->u->a + pa * MR * g->K4 * 4, b + c * 4, nb * 4, tile);
            epilogue(j->d, tile, pa * MR, rows, p0 + c, valid - c < NR ? valid - c : NR);
        }
    }
}

/* One image and group: every pixel block against every weight panel,
 * shared among par's parts where the im2col has a region per block. */
static void conv_group(const nk_qconv2d_params *p, const geom *g, const bufs *u, const int8_t *gin, const outp *d,
                       uint8_t *packed, int reuse, const nk_parallel *par)
{
    size_t nblocks = (g->P + g->nb_max - 1) / g->nb_max;
    if (par && par->parts > 1 && packed && nblocks * g->panels > 1 && g->P * g->cout_g * g->K >= par->min_macs) {
        blocks_job j = {p, g, u, gin, d, packed, nblocks};
        if (!reuse)
            par->run(par->ud, pack_part, &j);
        par->run(par->ud, pairs_part, &j);
        return;
    }
    conv_blocks(p, g, u, gin, d, packed, reuse);
}

size_t nk_qfast_vnni_packed_size(const nk_qconv2d_params *p)
{
    if (p->groups != 1 || p->n != 1)
        return 0;
    geom g = geometry(p);
    return (g.P + g.nb_max - 1) / g.nb_max * g.nb_max * g.K4 * 4;
}

void nk_qfast_vnni_conv(const nk_qconv2d_params *p, const int8_t *in, const void *w, const int32_t *bias,
                        int8_t *out, int32_t *raw, void *scratch, uint8_t *packed, int reuse, const nk_parallel *par)
{
    geom g = geometry(p);
    bufs u = carve(&g, scratch);
    for (size_t grp = 0; grp < (size_t)p->groups; grp++) {
        pack_a(p, &g, w, grp, u.a, u.wsum);
        for (size_t b = 0; b < (size_t)p->n; b++) {
            size_t oc0 = grp * g.cout_g, img = b * (size_t)p->c_out + oc0;
            outp d = {p, bias, u.wsum, out ? out + img * g.P : NULL, raw ? raw + img * g.P : NULL, g.P, oc0};
            const int8_t *gin = in + (b * (size_t)p->c_in + grp * g.cin_g) * g.hw;
            conv_group(p, &g, &u, gin, &d, packed, reuse, par);
        }
    }
}

#else

void nk_qfast_requant_row(const int32_t *acc, size_t n, int32_t bias, int32_t mult, int32_t shift, int32_t zp,
                          int32_t lo, int32_t hi, int8_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (int8_t)nk_requant_out(nk_sat_add_i32(acc[i], bias), mult, shift, zp, lo, hi);
}

int nk_qfast_vnni(void)
{
    return 0;
}

size_t nk_qfast_vnni_scratch(const nk_qconv2d_params *p)
{
    (void)p;
    return 0;
}

size_t nk_qfast_vnni_packed_size(const nk_qconv2d_params *p)
{
    (void)p;
    return 0;
}

void nk_qfast_vnni_conv(const nk_qconv2d_params *p, const int8_t *in, const void *w, const int32_t *bias,
                        int8_t *out, int32_t *raw, void *scratch, uint8_t *packed, int reuse, const nk_parallel *par)
{
    (void)p, (void)in, (void)w, (void)bias, (void)out, (void)raw, (void)scratch, (void)packed, (void)reuse, (void)par;
}

#endif
