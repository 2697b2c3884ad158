/* Concat, Split, Slice, Transpose: block copies. */
#include "kernels/nk_shape.h"
#include "kernels/nk_shape_internal.h"

/* outer = prod(dims[:axis]), inner = prod(dims[axis+1:]). */
static void split_at(const nk_shape *s, int axis, int64_t *outer, int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < axis; d++)
        *outer *= s->dims[d];
    for (int d = axis + 1; d < s->rank; d++)
        *inner *= s->dims[d];
}

/* parts[i] agree with whole except along axis, and their dims[axis] add up. */
static nk_status check_parts(const nk_shape *whole, int axis, int n, const nk_shape *parts, size_t es)
{
    if (nk_shape_check(whole) < 0 || axis < 0 || axis >= whole->rank || n < 1 || !nk_elem_size_ok(es))
        return NK_EARG;
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        if (nk_shape_check(&parts[i]) < 0 || parts[i].rank != whole->rank)
            return NK_EARG;
        for (int d = 0; d < whole->rank; d++)
            if (d != axis && parts[i].dims[d] != whole->dims[d])
                return NK_EARG;
        sum += parts[i].dims[axis];
    }
    return sum == whole->dims[axis] ? NK_OK : NK_EARG;
}

nk_status nk_concat(const nk_concat_params *p, const nk_shape *in_shapes, const void *const *in,
                    const nk_shape *out_shape, void *out)
{
    nk_status st = check_parts(out_shape, p->axis, p->n_inputs, in_shapes, p->elem_size);
    if (st != NK_OK)
        return st;
    int64_t outer, inner;
    split_at(out_shape, p->axis, &outer, &inner);
    uint8_t *y = out;
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < p->n_inputs; i++) {
            size_t chunk = (size_t)(in_shapes[i].dims[p->axis] * inner) * p->elem_size;
            memcpy(y, (const uint8_t *)in[i] + (size_t)o * chunk, chunk);
            y += chunk;
        }
    return NK_OK;
}

nk_status nk_split(const nk_split_params *p, const nk_shape *in_shape, const void *in,
                   const nk_shape *out_shapes, void *const *out)
{
    nk_status st = check_parts(in_shape, p->axis, p->n_outputs, out_shapes, p->elem_size);
    if (st != NK_OK)
        return st;
    int64_t outer, inner;
    split_at(in_shape, p->axis, &outer, &inner);
    const uint8_t *x = in;
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < p->n_outputs; i++) {
            size_t chunk = (size_t)(out_shapes[i].dims[p->axis] * inner) * p->elem_size;
            if (out[i])
                memcpy((uint8_t *)out[i] + (size_t)o * chunk, x, chunk);
            x += chunk;
        }
    return NK_OK;
}

nk_status nk_slice(const nk_slice_params *p, const nk_shape *in_shape, const void *in, const nk_shape *out_shape,
                   void *out)
{
    size_t es = p->elem_size;
    int64_t n_out = nk_shape_check(out_shape);
    if (nk_shape_check(in_shape) < 0 || n_out < 0 || in_shape->rank != out_shape->rank || !nk_elem_size_ok(es))
        return NK_EARG;
    int r = in_shape->rank;
    int64_t idim[NK_MAX_RANK], odim[NK_MAX_RANK], start[NK_MAX_RANK], step[NK_MAX_RANK];
    for (int d = 0; d < r; d++) {
        idim[d] = in_shape->dims[d];
        odim[d] = out_shape->dims[d];
        start[d] = p->start[d];
        step[d] = odim[d] > 1 ? p->step[d] : 1; /* one element: the step does not matter */
        if (p->step[d] == 0 || (odim[d] > 1 && (step[d] > idim[d] || step[d] < -idim[d])))
            return NK_EARG; /* (a larger step could only read past the end, and overflow) */
        int64_t last = start[d] + (odim[d] - 1) * step[d];
        if (odim[d] > 0 && (start[d] < 0 || start[d] >= idim[d] || last < 0 || last >= idim[d]))
            return NK_EARG;
    }
    if (n_out == 0)
        return NK_OK;
    if (r == 0) {
        memcpy(out, in, es);
        return NK_OK;
    }
    /* a full, unit-step innermost dim folds into the one before it */
    while (r >= 2 && step[r - 1] == 1 && odim[r - 1] == idim[r - 1] && step[r - 2] == 1) {
        start[r - 2] *= idim[r - 1];
        idim[r - 2] *= idim[r - 1];
        odim[r - 2] *= idim[r - 1];
        r--;
    }
    int64_t istr[NK_MAX_RANK], base = 0, acc = 1;
    for (int d = r - 1; d >= 0; d--) {
        istr[d] = acc;
        acc *= idim[d];
        base += start[d] * istr[d];
    }
    int64_t rows = 1, len = odim[r - 1];
    for (int d = 0; d + 1 < r; d++)
        rows *= odim[d];
    int64_t idx[NK_MAX_RANK] = {0}, off = base;
    uint8_t *y = out;
    for (int64_t row = 0; row < rows; row++, y += (size_t)len * es) {
        nk_copy_strided(y, (const uint8_t *)in + off * (int64_t)es, len, step[r - 1], es);
        for (int d = r - 2; d >= 0; d--) {
            off += step[d] * istr[d];
            if (++idx[d] < odim[d])
                break;
            off -= step[d] * istr[d] * odim[d];
            idx[d] = 0;
        }
    }
    return NK_OK;
}

/* The last two output dims (A x B) in tiles, so that both the reads (stride
 * sA, sB) and the writes stay within a few cache lines. */
#define NK_TILE 32
#define NK_TRANSPOSE_2D(T)                                                                                     \
    for (int64_t a0 = 0; a0 < A; a0 += NK_TILE)                                                               \
        for (int64_t b0 = 0; b0 < B; b0 += NK_TILE) {                                                         \
            int64_t a1 = a0 + NK_TILE < A ? a0 + NK_TILE : A, b1 = b0 + NK_TILE < B ? b0 + NK_TILE : B;        \
            for (int64_t a = a0; a < a1; a++)                                                                 \
                for (int64_t b = b0; b < b1; b++)                                                             \
                    ((T *)y)[a * B + b] = ((const T *)x)[a * sA + b * sB];                                    \
        }                                                                                                     \
    break

nk_status nk_transpose(const nk_transpose_params *p, const nk_shape *in_shape, const void *in, void *out)
{
    size_t es = p->elem_size;
    int64_t n = nk_shape_check(in_shape);
    int r = in_shape->rank;
    if (n < 0 || !nk_elem_size_ok(es))
        return NK_EARG;
    unsigned seen = 0;
    for (int d = 0; d < r; d++) {
        if (p->perm[d] < 0 || p->perm[d] >= r || (seen & (1u << p->perm[d])))
            return NK_EARG;
        seen |= 1u << p->perm[d];
    }
    if (n == 0)
        return NK_OK;
    /* drop size-1 dims, then merge runs of output dims that read consecutive
     * input axes: NCHW -> NHWC becomes a batch of [C, HW] -> [HW, C] */
    int map[NK_MAX_RANK], perm[NK_MAX_RANK], m = 0, k = 0;
    int64_t dims[NK_MAX_RANK];
    for (int d = 0; d < r; d++) {
        map[d] = in_shape->dims[d] != 1 ? k : -1;
        if (map[d] >= 0)
            dims[k++] = in_shape->dims[d];
    }
    for (int d = 0; d < r; d++)
        if (map[p->perm[d]] >= 0)
            perm[m++] = map[p->perm[d]];
    int gfirst[NK_MAX_RANK], gcount[NK_MAX_RANK], ng = 0;
    for (int j = 0; j < m; j++) {
        if (j > 0 && perm[j] == perm[j - 1] + 1) {
            gcount[ng - 1]++;
        } else {
            gfirst[ng] = perm[j];
            gcount[ng++] = 1;
        }
    }
    int gperm[NK_MAX_RANK];
    int64_t gdims[NK_MAX_RANK], istr[NK_MAX_RANK], odims[NK_MAX_RANK];
    for (int g = 0; g < ng; g++) {
        int pos = 0;
        for (int h = 0; h < ng; h++)
            pos += gfirst[h] < gfirst[g];
        gperm[g] = pos;
        gdims[pos] = 1;
        for (int i = 0; i < gcount[g]; i++)
            gdims[pos] *= dims[gfirst[g] + i];
    }
    for (int d = ng - 1; d >= 0; d--)
        istr[d] = d == ng - 1 ? 1 : istr[d + 1] * gdims[d + 1];
    for (int g = 0; g < ng; g++)
        odims[g] = gdims[gperm[g]];
    if (ng <= 1) { /* the identity after merging */
        memcpy(out, in, (size_t)n * es);
        return NK_OK;
    }
    /* inner = the output dims handled by one call below */
    int inner_dims = gperm[ng - 1] == ng - 1 ? 1 : 2;
    int64_t rows = 1, idx[NK_MAX_RANK] = {0}, off = 0;
    for (int g = 0; g < ng - inner_dims; g++)
        rows *= odims[g];
    int64_t A = odims[ng - 2], B = odims[ng - 1], sA = istr[gperm[ng - 2]], sB = istr[gperm[ng - 1]];
    int64_t block = inner_dims == 1 ? B : A * B;
    uint8_t *y = out;
    for (int64_t row = 0; row < rows; row++, y += (size_t)block * es) {
        const uint8_t *x = (const uint8_t *)in + off * (int64_t)es;
        if (inner_dims == 1) {
            memcpy(y, x, (size_t)B * es); /* the innermost dim stays innermost */
        } else {
            switch (es) {
            case 1: NK_TRANSPOSE_2D(uint8_t);
            case 2: NK_TRANSPOSE_2D(uint16_t);
            case 4: NK_TRANSPOSE_2D(uint32_t);
            default: NK_TRANSPOSE_2D(uint64_t);
            }
        }
        for (int g = ng - inner_dims - 1; g >= 0; g--) {
            off += istr[gperm[g]];
            if (++idx[g] < odims[g])
                break;
            off -= istr[gperm[g]] * odims[g];
            idx[g] = 0;
        }
    }
    return NK_OK;
}
