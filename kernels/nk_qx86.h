/* Internal to the AVX-512 files of kernels/ (nk_qconv_x86.c, nk_qdw_x86.c):
 * nk_requant_out(nk_sat_add_i32(acc, bias), mult, shift, zp, lo, hi) on 16
 * int32 lanes, bit for bit. The bias is added in 32-bit lanes with the
 * overflow found from the signs (saturating as nk_sat_add_i32); the product
 * is exact in 64-bit lanes (even and odd lanes, one vpmuldq each); half to
 * even is floor((p + 2^(e-1) - 1 + bit e of p) / 2^e), one add, one masked
 * add and one shift (|p| <= 2^62, so the adds cannot overflow); zero point
 * and clamp in 64-bit lanes, then the low bytes (the clamped value lies in
 * [lo, hi], as nk_requant_out's). Include only under x86-64 GCC. */
#ifndef NK_QX86_H
#define NK_QX86_H

#include <immintrin.h>
#include <stdint.h>

#define NK_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define NK_VNNI_INLINE NK_VNNI static inline __attribute__((always_inline))

typedef struct nk_rq16 {
    __m512i bias;            /* 16 x int32 */
    __m512i mult, c, bit, e; /* 8 x int64: mult, 2^(e-1) - 1, 2^e, e = 31 - shift */
    __m512i zp, lo, hi;      /* 8 x int64 */
    int add_bias;            /* bias != 0 */
} nk_rq16;

NK_VNNI_INLINE nk_rq16 nk_rq16_make(int32_t bias, int32_t mult, int32_t shift, int32_t zp, int32_t lo, int32_t hi)
{
    int e = 31 - shift; /* [1, 62] */
    return (nk_rq16){.bias = _mm512_set1_epi32(bias), .mult = _mm512_set1_epi64(mult),
                     .c = _mm512_set1_epi64(((int64_t)1 << (e - 1)) - 1), .bit = _mm512_set1_epi64((int64_t)1 << e),
                     .e = _mm512_set1_epi64(e), .zp = _mm512_set1_epi64(zp), .lo = _mm512_set1_epi64(lo),
                     .hi = _mm512_set1_epi64(hi), .add_bias = bias != 0};
}

/* The rounded, shifted, offset and clamped product p of 8 lanes. */
NK_VNNI_INLINE __m512i nk_rq16_round(const nk_rq16 *q, __m512i p)
{
    __m512i a = _mm512_add_epi64(p, q->c);
    a = _mm512_mask_add_epi64(a, _mm512_test_epi64_mask(p, q->bit), a, _mm512_set1_epi64(1));
    a = _mm512_add_epi64(_mm512_srav_epi64(a, q->e), q->zp);
    return _mm512_min_epi64(_mm512_max_epi64(a, q->lo), q->hi);
}

/* 16 int32 sums to 16 int8 outputs. */
NK_VNNI_INLINE __m128i nk_rq16_apply(const nk_rq16 *q, __m512i s)
{
    if (q->add_bias) {
        /* overflow: s and bias of one sign, the wrapped sum of the other ((s ^ t) & (b ^ t): 0x42) */
        __m512i t = _mm512_add_epi32(s, q->bias);
        __mmask16 ov = _mm512_movepi32_mask(_mm512_ternarylogic_epi32(s, q->bias, t, 0x42));
        s = _mm512_mask_mov_epi32(t, ov, _mm512_xor_si512(_mm512_srai_epi32(s, 31), _mm512_set1_epi32(INT32_MAX)));
    }
    __m512i even = nk_rq16_round(q, _mm512_mul_epi32(s, q->mult));
    __m512i odd = nk_rq16_round(q, _mm512_mul_epi32(_mm512_srli_epi64(s, 32), q->mult));
    const __m512i idx = _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    return _mm512_cvtepi32_epi8(_mm512_permutex2var_epi32(even, idx, odd));
}

#endif
