/* Softmax, LogSoftmax and the reductions. */
#include <math.h>

#include "kernels/nk_math.h"
#include "kernels/nk_elem.h"
#include "kernels/nk_shape_internal.h"

nk_status nk_softmax_f32(const nk_softmax_params *p, const float *x, float *y)
{
    int64_t outer = p->outer, len = p->len, inner = p->inner;
    if (outer < 0 || len < 0 || inner < 0)
        return NK_EARG;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < inner; j++) {
            const float *xr = x + o * len * inner + j;
            float *yr = y + o * len * inner + j;
            /* subtracting the max keeps every exp <= 1: no overflow */
            float m = -INFINITY;
            for (int64_t k = 0; k < len; k++)
                if (xr[k * inner] > m)
                    m = xr[k * inner];
            float sum = 0.0f;
            if (p->log) {
                for (int64_t k = 0; k < len; k++)
                    sum += nk_expf(xr[k * inner] - m);
                float ls = nk_logf(sum);
                for (int64_t k = 0; k < len; k++)
                    yr[k * inner] = xr[k * inner] - m - ls;
            } else {
                for (int64_t k = 0; k < len; k++) {
                    float e = nk_expf(xr[k * inner] - m);
                    yr[k * inner] = e;
                    sum += e;
                }
                float inv = 1.0f / sum;
                for (int64_t k = 0; k < len; k++)
                    yr[k * inner] *= inv;
            }
        }
    }
    return NK_OK;
}

#define NK_RED_LOOP(COMBINE)                                                                                   \
    for (int64_t r = 0; r < rows; r++) {                                                                      \
        const float *xr = x + it.off[0];                                                                      \
        float *yr = y + it.off[1];                                                                            \
        if (sy == 0) {                                                                                        \
            float acc = yr[0];                                                                                \
            for (int64_t i = 0; i < len; i++) {                                                               \
                float v = xr[i];                                                                              \
                acc = (COMBINE(acc, v));                                                                      \
            }                                                                                                 \
            yr[0] = acc;                                                                                      \
        } else {                                                                                              \
            for (int64_t i = 0; i < len; i++) {                                                               \
                float acc = yr[i], v = xr[i];                                                                 \
                yr[i] = (COMBINE(acc, v));                                                                    \
            }                                                                                                 \
        }                                                                                                     \
        nk_bc_next(&bc, &it);                                                                                 \
    }

#define NK_SUM(a, v) (a) + (v)
#define NK_MAXF(a, v) ((v) > (a) || (v) != (v)) ? (v) : (a)
#define NK_MINF(a, v) ((v) < (a) || (v) != (v)) ? (v) : (a)

nk_status nk_reduce_f32(nk_reduce_op op, const nk_shape *x_shape, const float *x, uint32_t axes_mask, float *y)
{
    int64_t nx = nk_shape_check(x_shape);
    if (nx < 0 || (axes_mask >> x_shape->rank) != 0)
        return NK_EARG;
    /* y as a keepdims shape broadcasts onto x: reduced dims get stride 0 */
    nk_shape ys = *x_shape;
    for (int d = 0; d < ys.rank; d++)
        if (axes_mask & (1u << d))
            ys.dims[d] = 1;
    int64_t ny = nk_shape_numel(&ys);
    float init = op == NK_RED_MAX ? -INFINITY : (op == NK_RED_MIN ? INFINITY : 0.0f);
    for (int64_t i = 0; i < ny; i++)
        y[i] = init;
    nk_bc bc;
    const nk_shape *in[2] = {x_shape, &ys};
    nk_status st = nk_bc_init(&bc, x_shape, 2, in);
    if (st != NK_OK)
        return st;
    int64_t rows = nk_bc_rows(&bc), len = bc.dims[bc.rank - 1], sy = bc.str[1][bc.rank - 1];
    nk_bc_it it;
    nk_bc_begin(&it);
    switch (op) {
    case NK_RED_SUM:
    case NK_RED_MEAN: NK_RED_LOOP(NK_SUM) break;
    case NK_RED_MAX: NK_RED_LOOP(NK_MAXF) break;
    case NK_RED_MIN: NK_RED_LOOP(NK_MINF) break;
    default: return NK_EUNSUPPORTED;
    }
    if (op == NK_RED_MEAN) {
        float count = ny ? (float)(nx / ny) : 1.0f; /* 0 for an empty reduction: NaN like numpy */
        for (int64_t i = 0; i < ny; i++)
            y[i] = y[i] / count;
    }
    return NK_OK;
}
