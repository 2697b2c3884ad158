/* Unary float ops, integer Neg/Abs, Not. */
#include <math.h>

#include "kernels/nk_math.h"
#include "kernels/nk_elem.h"

static float sigmoid(float x)
{
    /* never divides inf by inf: for x < 0 use e^x / (1 + e^x) */
    if (x >= 0.0f)
        return 1.0f / (1.0f + nk_expf(-x));
    float e = nk_expf(x);
    return e / (1.0f + e);
}

/* ln(1 + e^x) as max(x, 0) + ln(1 + e^-|x|): e^x never overflows */
static float softplus(float x)
{
    return (x > 0.0f ? x : 0.0f) + nk_logf(1.0f + nk_expf(-fabsf(x)));
}

static float hard_sigmoid(float x, float alpha, float beta)
{
    float v = alpha * x + beta;
    return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

#define NK_MAP(EXPR)                                                                                           \
    for (int64_t i = 0; i < n; i++) {                                                                         \
        float x = xs[i];                                                                                      \
        y[i] = (EXPR);                                                                                        \
    }                                                                                                         \
    break

nk_status nk_unary_f32(const nk_unary_params *p, const float *xs, float *y, int64_t n)
{
    if (n < 0)
        return NK_EARG;
    float a = p->alpha, b = p->beta, lo = p->lo, hi = p->hi;
    switch (p->op) {
    case NK_UN_RELU: NK_MAP(nk_relu(x));
    case NK_UN_LEAKY_RELU: NK_MAP(nk_leaky_relu(x, a));
    case NK_UN_CLIP: NK_MAP(nk_clip(x, lo, hi));
    case NK_UN_SIGMOID: NK_MAP(sigmoid(x));
    case NK_UN_TANH: NK_MAP(nk_tanhf(x));
    case NK_UN_HARD_SIGMOID: NK_MAP(hard_sigmoid(x, a, b));
    case NK_UN_HARD_SWISH: NK_MAP(x * hard_sigmoid(x, 1.0f / 6.0f, 0.5f));
    case NK_UN_ERF: NK_MAP(nk_erff(x));
    case NK_UN_EXP: NK_MAP(nk_expf(x));
    case NK_UN_LOG: NK_MAP(nk_logf(x));
    case NK_UN_SQRT: NK_MAP(sqrtf(x));
    case NK_UN_RECIPROCAL: NK_MAP(1.0f / x);
    case NK_UN_NEG: NK_MAP(-x);
    case NK_UN_ABS: NK_MAP(fabsf(x));
    case NK_UN_SOFTPLUS: NK_MAP(softplus(x));
    default: return NK_EUNSUPPORTED;
    }
    return NK_OK;
}

#define NK_INT_UNARY(T, U)                                                                                     \
    if (n < 0)                                                                                                \
        return NK_EARG;                                                                                       \
    switch (op) {                                                                                             \
    case NK_UN_NEG:                                                                                           \
        for (int64_t i = 0; i < n; i++)                                                                       \
            y[i] = (T)(0u - (U)x[i]);                                                                         \
        break;                                                                                                \
    case NK_UN_ABS:                                                                                           \
        for (int64_t i = 0; i < n; i++)                                                                       \
            y[i] = x[i] < 0 ? (T)(0u - (U)x[i]) : x[i];                                                       \
        break;                                                                                                \
    default: return NK_EUNSUPPORTED;                                                                          \
    }                                                                                                         \
    return NK_OK

nk_status nk_unary_i32(nk_unop op, const int32_t *x, int32_t *y, int64_t n)
{
    NK_INT_UNARY(int32_t, uint32_t);
}

nk_status nk_unary_i64(nk_unop op, const int64_t *x, int64_t *y, int64_t n)
{
    NK_INT_UNARY(int64_t, uint64_t);
}

nk_status nk_not(const uint8_t *x, uint8_t *y, int64_t n)
{
    if (n < 0)
        return NK_EARG;
    for (int64_t i = 0; i < n; i++)
        y[i] = !x[i];
    return NK_OK;
}
