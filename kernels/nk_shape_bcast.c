/* Broadcasting: the shared iterator, the broadcast shape, Expand. */
#include "kernels/nk_shape.h"
#include "kernels/nk_shape_internal.h"

nk_status nk_shape_broadcast(const nk_shape *a, const nk_shape *b, nk_shape *out)
{
    if (nk_shape_check(a) < 0 || nk_shape_check(b) < 0)
        return NK_EARG;
    int r = a->rank > b->rank ? a->rank : b->rank;
    nk_shape o = {.rank = r};
    for (int d = 0; d < r; d++) {
        int ia = d - (r - a->rank), ib = d - (r - b->rank);
        int32_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return NK_EARG;
        o.dims[d] = da == 1 ? db : da;
    }
    *out = o;
    return NK_OK;
}

nk_status nk_bc_init(nk_bc *bc, const nk_shape *out, int n, const nk_shape *const *in)
{
    int64_t numel = nk_shape_check(out);
    if (numel < 0 || n < 1 || n > 3)
        return NK_EARG;
    int r = out->rank;
    int64_t str[3][NK_MAX_RANK];
    for (int k = 0; k < n; k++) {
        const nk_shape *s = in[k];
        if (nk_shape_check(s) < 0 || s->rank > r)
            return NK_EARG;
        int64_t acc = 1;
        for (int d = r - 1; d >= 0; d--) {
            int i = d - (r - s->rank);
            int32_t dim = i >= 0 ? s->dims[i] : 1;
            if (dim != out->dims[d] && dim != 1)
                return NK_EARG;
            str[k][d] = dim == 1 ? 0 : acc;
            acc *= dim;
        }
    }
    bc->n = n;
    bc->rank = 0;
    if (numel == 0) {
        bc->rank = 1;
        bc->dims[0] = 0;
        for (int k = 0; k < n; k++)
            bc->str[k][0] = 0;
        return NK_OK;
    }
    for (int d = 0; d < r; d++) {
        if (out->dims[d] == 1)
            continue;
        int j = bc->rank - 1;
        int merge = j >= 0;
        for (int k = 0; k < n && merge; k++)
            merge = bc->str[k][j] == str[k][d] * out->dims[d];
        if (merge) {
            bc->dims[j] *= out->dims[d];
            for (int k = 0; k < n; k++)
                bc->str[k][j] = str[k][d];
            continue;
        }
        bc->dims[bc->rank] = out->dims[d];
        for (int k = 0; k < n; k++)
            bc->str[k][bc->rank] = str[k][d];
        bc->rank++;
    }
    if (bc->rank == 0) {
        bc->rank = 1;
        bc->dims[0] = 1;
        for (int k = 0; k < n; k++)
            bc->str[k][0] = 0;
    }
    return NK_OK;
}

nk_status nk_expand(size_t elem_size, const nk_shape *in_shape, const void *in, const nk_shape *out_shape,
                    void *out)
{
    if (!nk_elem_size_ok(elem_size))
        return NK_EARG;
    nk_bc bc;
    nk_status st = nk_bc_init(&bc, out_shape, 1, &in_shape);
    if (st != NK_OK)
        return st;
    int64_t rows = nk_bc_rows(&bc), len = bc.dims[bc.rank - 1], s = bc.str[0][bc.rank - 1];
    nk_bc_it it;
    nk_bc_begin(&it);
    uint8_t *y = out;
    for (int64_t r = 0; r < rows; r++, y += (size_t)len * elem_size) {
        nk_copy_strided(y, (const uint8_t *)in + (size_t)it.off[0] * elem_size, len, s, elem_size);
        nk_bc_next(&bc, &it);
    }
    return NK_OK;
}
