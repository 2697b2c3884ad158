/* Internal to kernels/: the broadcast iterator shared by the elementwise and
 * shape families, and strided element copies for any element size. */
#ifndef NK_SHAPE_INTERNAL_H
#define NK_SHAPE_INTERNAL_H

#include <string.h>

#include "kernels/nk_common.h"

/* Up to three operands broadcast to one output, with size-1 dims dropped and
 * adjacent dims merged where every operand is contiguous across them, so the
 * innermost loop is as long as possible. Strides are in elements; the
 * innermost stride of an operand is 0 (broadcast) or 1. */
typedef struct nk_bc {
    int rank; /* >= 1 */
    int n;    /* operands */
    int64_t dims[NK_MAX_RANK];
    int64_t str[3][NK_MAX_RANK];
} nk_bc;

/* NK_EARG when an operand does not broadcast to out. */
nk_status nk_bc_init(nk_bc *bc, const nk_shape *out, int n, const nk_shape *const *in);

/* Position of one row (all dims but the innermost). */
typedef struct nk_bc_it {
    int64_t idx[NK_MAX_RANK];
    int64_t off[3];
} nk_bc_it;

static inline int64_t nk_bc_rows(const nk_bc *bc)
{
    int64_t r = 1;
    for (int d = 0; d + 1 < bc->rank; d++)
        r *= bc->dims[d];
    return bc->dims[bc->rank - 1] ? r : 0;
}

static inline void nk_bc_begin(nk_bc_it *it)
{
    memset(it, 0, sizeof *it);
}

/* Advances to the next row (odometer over dims rank-2 .. 0). */
static inline void nk_bc_next(const nk_bc *bc, nk_bc_it *it)
{
    for (int d = bc->rank - 2; d >= 0; d--) {
        for (int k = 0; k < bc->n; k++)
            it->off[k] += bc->str[k][d];
        if (++it->idx[d] < bc->dims[d])
            return;
        for (int k = 0; k < bc->n; k++)
            it->off[k] -= bc->str[k][d] * bc->dims[d];
        it->idx[d] = 0;
    }
}

/* dst[i] = src[i * stride] for n elements of es bytes. */
static inline void nk_copy_strided(void *dst, const void *src, int64_t n, int64_t stride, size_t es)
{
    if (stride == 1) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1:
        for (int64_t i = 0; i < n; i++)
            ((uint8_t *)dst)[i] = ((const uint8_t *)src)[i * stride];
        break;
    case 2:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = ((const uint16_t *)src)[i * stride];
        break;
    case 4:
        for (int64_t i = 0; i < n; i++)
            ((uint32_t *)dst)[i] = ((const uint32_t *)src)[i * stride];
        break;
    case 8:
        for (int64_t i = 0; i < n; i++)
            ((uint64_t *)dst)[i] = ((const uint64_t *)src)[i * stride];
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy((uint8_t *)dst + (size_t)i * es, (const uint8_t *)src + i * stride * (int64_t)es, es);
    }
}

/* n copies of the element at src. */
static inline void nk_splat(void *dst, const void *src, int64_t n, size_t es)
{
    nk_copy_strided(dst, src, n, 0, es);
}

static inline int nk_elem_size_ok(size_t es)
{
    return es == 1 || es == 2 || es == 4 || es == 8;
}

/* Checks rank and dims, returns the element count or -1. */
static inline int64_t nk_shape_check(const nk_shape *s)
{
    if (!s || s->rank < 0 || s->rank > NK_MAX_RANK)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0 || (s->dims[i] && n > INT64_MAX / s->dims[i]))
            return -1;
        n *= s->dims[i];
    }
    return n;
}

#endif
