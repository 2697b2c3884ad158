/* Types shared by every kernel family. */
#ifndef NK_COMMON_H
#define NK_COMMON_H

#include <stddef.h>
#include <stdint.h>

typedef enum nk_status {
    NK_OK = 0,
    NK_EARG = 1,         /* inconsistent parameters */
    NK_EUNSUPPORTED = 2, /* a parameter combination the kernel does not do */
} nk_status;

#define NK_MAX_RANK 8

/* A dense C-order shape. */
typedef struct nk_shape {
    int rank;
    int32_t dims[NK_MAX_RANK];
} nk_shape;

/* Fused activation applied to a float result (mirrors ir_act). */
typedef enum nk_act_kind { NK_ACT_NONE, NK_ACT_RELU, NK_ACT_CLIP, NK_ACT_LEAKY_RELU } nk_act_kind;
typedef struct nk_act {
    nk_act_kind kind;
    float lo, hi, alpha;
} nk_act;

/* The activations' formulas, their one home: nk_act_apply and the float
 * kernels' own loops (the GEMM tile's epilogue, the depthwise blocks, the
 * dense binary ops, the Clip op) all use these, so every path gives the
 * same bits. Clip is ONNX's min(max(x, lo), hi), as numpy's clip and
 * onnxruntime: hi everywhere when lo > hi; a NaN stays NaN. Its two selects
 * in this order compile to max and min instructions (a nested select to
 * masked moves: the depthwise blocks ran 2.7% slower). */
static inline float nk_relu(float x)
{
    return x > 0.0f ? x : 0.0f;
}

static inline float nk_clip(float x, float lo, float hi)
{
    float v = x < lo ? lo : x;
    return v > hi ? hi : v;
}

static inline float nk_leaky_relu(float x, float slope)
{
    return x < 0.0f ? slope * x : x;
}

static inline float nk_act_apply(nk_act a, float x)
{
    switch (a.kind) {
    case NK_ACT_RELU: return nk_relu(x);
    case NK_ACT_CLIP: return nk_clip(x, a.lo, a.hi);
    case NK_ACT_LEAKY_RELU: return nk_leaky_relu(x, a.alpha);
    default: return x;
    }
}

static inline int64_t nk_shape_numel(const nk_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->dims[i];
    return n;
}

/* On x86-64 Linux with GCC the hot loops (the float kernels' register
 * tile and depthwise rows, the quantizer's GPTQ and second moments) are
 * compiled three times (AVX-512, AVX2, baseline SSE2) and picked at load
 * time. The build is ISO C (-std=c11), where GCC does not contract
 * a*b+c into FMA, so every clone rounds exactly like the baseline: the
 * SIMD width changes speed only. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(NK_NO_CLONES)
#define NK_HOT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
/* and at -O3 where -O2's cheap vectorizer leaves a loop scalar (stride-2
 * reads, selects); the firmware keeps its -Os code and simulated cycles */
#define NK_HOT_VEC NK_HOT_CLONES __attribute__((optimize("O3")))
#else
#define NK_HOT_CLONES
#define NK_HOT_VEC
#endif

#endif
