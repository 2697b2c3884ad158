/* int8 fully connected (weights [out][in], Gemm transB=1) and batched matmul
 * of two int8 activations.
 *
 * Overflow: fully connected folds the input zero point out like conv, so
 * int32 holds it for in_features <= 65536; the bias add saturates. The batched
 * matmul multiplies two zero-point-shifted values (|product| <= 255 * 255), so
 * k <= 32768. Both are checked (NK_EUNSUPPORTED beyond). */
#include "kernels/nk_quant.h"

#include <string.h>

/* The reference build is -O2; these loops need the vectorizer. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE_SIZE__)
#pragma GCC optimize("O3")
#endif

enum { QFC_MAX_K = 65536, QBMM_MAX_K = 32768 };

static int i8_range(int32_t v)
{
    return v >= -128 && v <= 127;
}

static int mults_ok(const nk_qmults *q, int32_t channels)
{
    if ((q->n != 1 && q->n != channels) || !q->mult || !q->shift)
        return 0;
    for (int32_t i = 0; i < q->n; i++)
        if (q->mult[i] < 0 || q->shift[i] < NK_SHIFT_MIN || q->shift[i] > NK_SHIFT_MAX)
            return 0;
    return 1;
}

static nk_status fc_check(const nk_qfc_params *p)
{
    if (!p || p->batch <= 0 || p->in_features <= 0 || p->out_features <= 0 || !i8_range(p->in_zp) ||
        !i8_range(p->out_zp) || !i8_range(p->act_min) || !i8_range(p->act_max) || p->act_min > p->act_max ||
        (p->w_format != NK_W_I8 && p->w_format != NK_W_I4) || !mults_ok(&p->q, p->out_features))
        return NK_EARG;
    if (p->in_features > QFC_MAX_K)
        return NK_EUNSUPPORTED;
    return NK_OK;
}

size_t nk_qfc_scratch_size(const nk_qfc_params *p)
{
    if (fc_check(p) != NK_OK || p->w_format != NK_W_I4)
        return 0;
    return (size_t)p->in_features * (size_t)p->out_features;
}

/* Exact int32 sums, so any order gives the same result. Host builds sum
 * 32 lanes at a time so that the loop vectorizes (GCC's -O2 cost model
 * leaves a loop with a remainder scalar); the firmware keeps the plain
 * loop and its simulated cycles. */
#if defined(__x86_64__) || defined(__aarch64__)
NK_HOT_CLONES static int32_t dot_i8(const int8_t *a, const int8_t *b, size_t k)
{
    int32_t lane[32] = {0}, acc = 0;
    size_t i = 0;
    for (; i + 32 <= k; i += 32)
        for (int j = 0; j < 32; j++)
            lane[j] += (int32_t)a[i + j] * (int32_t)b[i + j];
    for (int j = 0; j < 32; j++)
        acc += lane[j];
    for (; i < k; i++)
        acc += (int32_t)a[i] * (int32_t)b[i];
    return acc;
}
/* sum (a[i] - zp) * w[i], wrapping as dot_i8 - zp * wsum_i8 does: one pass over
 * the weights instead of two (the 1.8 M CNN's FC reads 400 K of them per
 * inference); each product fits int16, so it vectorizes as vpmaddwd. */
NK_HOT_CLONES static int32_t dot_zp_i8(const int8_t *a, int32_t zp, const int8_t *w, size_t k)
{
    int32_t lane[32] = {0}, acc = 0;
    size_t i = 0;
    for (; i + 32 <= k; i += 32)
        for (int j = 0; j < 32; j++)
            lane[j] += (int32_t)(int16_t)(a[i + j] - zp) * (int32_t)(int16_t)w[i + j];
    for (int j = 0; j < 32; j++)
        acc = (int32_t)((uint32_t)acc + (uint32_t)lane[j]);
    for (; i < k; i++)
        acc = (int32_t)((uint32_t)acc + (uint32_t)((a[i] - zp) * w[i]));
    return acc;
}
#define NK_QFC_FUSED 1
NK_HOT_CLONES static int32_t wsum_i8(const int8_t *w, size_t k)
{
    int32_t lane[32] = {0}, sum = 0;
    size_t i = 0;
    for (; i + 32 <= k; i += 32)
        for (int j = 0; j < 32; j++)
            lane[j] += w[i + j];
    for (int j = 0; j < 32; j++)
        sum += lane[j];
    for (; i < k; i++)
        sum += w[i];
    return sum;
}
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(NK_NO_CLONES)
#include "kernels/nk_qfast.h"
#include "kernels/nk_qx86.h"

/* dot_zp_i8 on AVX-512 VNNI, 64 a pass: vpdpbusd of (a + 128) as unsigned
 * with w, and of ones with w (the weight sum), then minus (zp + 128) times
 * that sum, wrapping to the same exact int32. Masked at the end (a lane
 * past k multiplies a zero weight). */
NK_VNNI static int32_t dot_zp_vnni(const int8_t *a, int32_t zp, const int8_t *w, size_t k)
{
    const __m512i flip = _mm512_set1_epi8((char)0x80), ones = _mm512_set1_epi8(1);
    __m512i s = _mm512_setzero_si512(), ws = _mm512_setzero_si512();
    for (size_t i = 0; i < k; i += 64) {
        __mmask64 m = k - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (k - i)) - 1);
        __m512i wv = _mm512_maskz_loadu_epi8(m, w + i);
        s = _mm512_dpbusd_epi32(s, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, a + i), flip), wv);
        ws = _mm512_dpbusd_epi32(ws, ones, wv);
    }
    uint32_t s1 = (uint32_t)_mm512_reduce_add_epi32(s), s2 = (uint32_t)_mm512_reduce_add_epi32(ws);
    return (int32_t)(s1 - (uint32_t)(zp + 128) * s2);
}

static int fc_vnni(void)
{
    return nk_qfast_vnni();
}
#else
static int32_t dot_zp_vnni(const int8_t *a, int32_t zp, const int8_t *w, size_t k)
{
    return dot_zp_i8(a, zp, w, k);
}

static int fc_vnni(void)
{
    return 0;
}
#endif
#else
#define NK_QFC_FUSED 0
static int32_t wsum_i8(const int8_t *w, size_t k)
{
    int32_t sum = 0;
    for (size_t i = 0; i < k; i++)
        sum += w[i];
    return sum;
}

static int32_t dot_i8(const int8_t *a, const int8_t *b, size_t k)
{
    int32_t acc = 0;
    for (size_t i = 0; i < k; i++)
        acc += (int32_t)a[i] * (int32_t)b[i];
    return acc;
}
#endif

nk_status nk_qfc(const nk_qfc_params *p, const int8_t *in, const void *w, const int32_t *bias, int8_t *out,
                 void *scratch)
{
    nk_status st = fc_check(p);
    if (st != NK_OK)
        return st;
    if (!in || !w || !out || (p->w_format == NK_W_I4 && !scratch))
        return NK_EARG;
    const size_t K = (size_t)p->in_features, N = (size_t)p->out_features;
    const int8_t *w8 = w;
    if (p->w_format == NK_W_I4) {
        nk_int4_unpack(w, scratch, K * N);
        w8 = scratch;
    }
#if NK_QFC_FUSED
    const int vnni = fc_vnni();
#endif
    for (size_t o = 0; o < N; o++) {
        const int8_t *wr = w8 + o * K;
#if NK_QFC_FUSED /* host builds; the firmware keeps its loop and its simulated cycles */
        if (p->batch == 1) {
            size_t q1 = p->q.n == 1 ? 0 : o;
            int32_t d = vnni ? dot_zp_vnni(in, p->in_zp, wr, K) : dot_zp_i8(in, p->in_zp, wr, K);
            int32_t a1 = nk_sat_add_i32(d, bias ? bias[o] : 0);
            out[o] = (int8_t)nk_requant_out(a1, p->q.mult[q1], p->q.shift[q1], p->out_zp, p->act_min, p->act_max);
            continue;
        }
#endif
        int32_t zpw = p->in_zp ? p->in_zp * wsum_i8(wr, K) : 0, bv = bias ? bias[o] : 0;
        size_t qi = p->q.n == 1 ? 0 : o;
        int32_t m = p->q.mult[qi], s = p->q.shift[qi];
        for (int32_t b = 0; b < p->batch; b++) {
            int32_t acc = nk_sat_add_i32(dot_i8(in + (size_t)b * K, wr, K) - zpw, bv);
            out[(size_t)b * N + o] = (int8_t)nk_requant_out(acc, m, s, p->out_zp, p->act_min, p->act_max);
        }
    }
    return NK_OK;
}

static nk_status bmm_check(const nk_qbmm_params *p)
{
    if (!p || p->batch <= 0 || (p->a_batch != p->batch && p->a_batch != 1) ||
        (p->b_batch != p->batch && p->b_batch != 1) || p->m <= 0 || p->k <= 0 || p->n <= 0 ||
        !i8_range(p->a_zp) || !i8_range(p->b_zp) || !i8_range(p->out_zp) || !i8_range(p->act_min) ||
        !i8_range(p->act_max) || p->act_min > p->act_max || p->mult < 0 || p->shift < NK_SHIFT_MIN ||
        p->shift > NK_SHIFT_MAX)
        return NK_EARG;
    if (p->k > QBMM_MAX_K)
        return NK_EUNSUPPORTED;
    return NK_OK;
}

size_t nk_qbmm_scratch_size(const nk_qbmm_params *p)
{
    if (bmm_check(p) != NK_OK)
        return 0;
    return (size_t)p->n * sizeof(int32_t) + (size_t)p->k * (size_t)p->n * sizeof(int16_t);
}

nk_status nk_qbmm(const nk_qbmm_params *p, const int8_t *a, const int8_t *b, int8_t *out, void *scratch)
{
    nk_status st = bmm_check(p);
    if (st != NK_OK)
        return st;
    if (!a || !b || !out || !scratch)
        return NK_EARG;
    const size_t M = (size_t)p->m, K = (size_t)p->k, N = (size_t)p->n;
    int32_t *acc = scratch; /* first, for alignment */
    int16_t *bs = (int16_t *)(acc + N);
    for (int32_t i = 0; i < p->batch; i++) {
        const int8_t *ai = a + (p->a_batch == 1 ? 0 : (size_t)i * M * K);
        if (i == 0 || p->b_batch != 1) {
            const int8_t *bi = b + (size_t)i * K * N * (p->b_batch == 1 ? 0 : 1);
            for (size_t j = 0; j < K * N; j++)
                bs[j] = (int16_t)(bi[j] - p->b_zp);
        }
        int8_t *oi = out + (size_t)i * M * N;
        for (size_t r = 0; r < M; r++) {
            memset(acc, 0, N * sizeof *acc);
            for (size_t k = 0; k < K; k++) {
                int32_t av = (int32_t)ai[r * K + k] - p->a_zp;
                const int16_t *brow = bs + k * N;
                for (size_t c = 0; c < N; c++)
                    acc[c] += av * brow[c];
            }
            for (size_t c = 0; c < N; c++)
                oi[r * N + c] =
                    (int8_t)nk_requant_out(acc[c], p->mult, p->shift, p->out_zp, p->act_min, p->act_max);
        }
    }
    return NK_OK;
}
