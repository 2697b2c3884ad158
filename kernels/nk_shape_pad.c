/* Pad, Tile, Gather, ConstantOfShape's fill, Range. */
#include <math.h>

#include "kernels/nk_shape.h"
#include "kernels/nk_shape_internal.h"

/* The input index output index o of a dim reads (i = o - begin), or -1 for
 * the constant. n > 0 for reflect and edge. */
static int64_t pad_src(nk_pad_mode mode, int64_t i, int64_t n)
{
    if (i >= 0 && i < n)
        return i;
    if (mode == NK_PAD_CONSTANT)
        return -1;
    if (mode == NK_PAD_EDGE || n == 1)
        return i < 0 ? 0 : n - 1;
    int64_t period = 2 * (n - 1);
    i %= period;
    if (i < 0)
        i += period;
    return i < n ? i : period - i;
}

nk_status nk_pad(const nk_pad_params *p, const nk_shape *in_shape, const void *in, const nk_shape *out_shape,
                 void *out)
{
    size_t es = p->elem_size;
    int64_t n_out = nk_shape_check(out_shape);
    int r = in_shape->rank;
    if (nk_shape_check(in_shape) < 0 || n_out < 0 || out_shape->rank != r || !nk_elem_size_ok(es) ||
        (p->mode == NK_PAD_CONSTANT && !p->value) || (unsigned)p->mode > NK_PAD_EDGE)
        return NK_EARG;
    for (int d = 0; d < r; d++) {
        int64_t n = in_shape->dims[d];
        if (p->begin[d] + n + p->end[d] != out_shape->dims[d])
            return NK_EARG;
        if (p->mode != NK_PAD_CONSTANT && n == 0 && out_shape->dims[d] > 0)
            return NK_EARG; /* nothing to reflect or repeat */
    }
    if (n_out == 0)
        return NK_OK;
    if (r == 0) {
        memcpy(out, in, es);
        return NK_OK;
    }
    int64_t istr[NK_MAX_RANK], acc = 1;
    for (int d = r - 1; d >= 0; d--) {
        istr[d] = acc;
        acc *= in_shape->dims[d];
    }
    int64_t len = out_shape->dims[r - 1], n_in = in_shape->dims[r - 1], b = p->begin[r - 1];
    int64_t mid0 = b > 0 ? b : 0, mid1 = b + n_in < len ? b + n_in : len; /* the in-range part of a row */
    int64_t rows = n_out / len, idx[NK_MAX_RANK] = {0};
    const uint8_t *x = in;
    uint8_t *y = out;
    for (int64_t row = 0; row < rows; row++, y += (size_t)len * es) {
        int64_t off = 0;
        int constant = 0;
        for (int d = 0; d + 1 < r && !constant; d++) {
            int64_t s = pad_src(p->mode, idx[d] - p->begin[d], in_shape->dims[d]);
            constant = s < 0;
            off += s * istr[d];
        }
        if (constant) {
            nk_splat(y, p->value, len, es);
        } else {
            const uint8_t *xr = x + (size_t)off * es;
            if (mid1 > mid0)
                memcpy(y + (size_t)mid0 * es, xr + (size_t)(mid0 - b) * es, (size_t)(mid1 - mid0) * es);
            for (int64_t o = 0; o < len; o++) {
                if (o == mid0 && mid1 > mid0)
                    o = mid1;
                if (o >= len)
                    break;
                int64_t s = pad_src(p->mode, o - b, n_in);
                memcpy(y + (size_t)o * es, s < 0 ? (const uint8_t *)p->value : xr + (size_t)s * es, es);
            }
        }
        for (int d = r - 2; d >= 0; d--) {
            if (++idx[d] < out_shape->dims[d])
                break;
            idx[d] = 0;
        }
    }
    return NK_OK;
}

nk_status nk_tile(size_t elem_size, const nk_shape *in_shape, const void *in, const nk_shape *out_shape,
                  void *out)
{
    size_t es = elem_size;
    int64_t n_out = nk_shape_check(out_shape);
    int r = in_shape->rank;
    if (nk_shape_check(in_shape) < 0 || n_out < 0 || out_shape->rank != r || !nk_elem_size_ok(es))
        return NK_EARG;
    for (int d = 0; d < r; d++) {
        int64_t i = in_shape->dims[d], o = out_shape->dims[d];
        if (i == 0 ? o != 0 : o % i != 0)
            return NK_EARG;
    }
    if (n_out == 0)
        return NK_OK;
    if (r == 0) {
        memcpy(out, in, es);
        return NK_OK;
    }
    int64_t istr[NK_MAX_RANK], acc = 1;
    for (int d = r - 1; d >= 0; d--) {
        istr[d] = acc;
        acc *= in_shape->dims[d];
    }
    int64_t len = out_shape->dims[r - 1], n_in = in_shape->dims[r - 1];
    size_t row_bytes = (size_t)n_in * es;
    int64_t rows = n_out / len, idx[NK_MAX_RANK] = {0};
    uint8_t *y = out;
    for (int64_t row = 0; row < rows; row++) {
        int64_t off = 0;
        for (int d = 0; d + 1 < r; d++)
            off += (idx[d] % in_shape->dims[d]) * istr[d];
        for (int64_t k = 0; k < len / n_in; k++, y += row_bytes)
            memcpy(y, (const uint8_t *)in + (size_t)off * es, row_bytes);
        for (int d = r - 2; d >= 0; d--) {
            if (++idx[d] < out_shape->dims[d])
                break;
            idx[d] = 0;
        }
    }
    return NK_OK;
}

nk_status nk_gather(const nk_gather_params *p, const nk_shape *data_shape, const void *data, const void *indices,
                    int64_t n_indices, void *out, int64_t *bad_index)
{
    size_t es = p->elem_size;
    int axis = p->axis;
    if (nk_shape_check(data_shape) < 0 || axis < 0 || axis >= data_shape->rank || !nk_elem_size_ok(es) ||
        n_indices < 0)
        return NK_EARG;
    int64_t outer = 1, inner = 1, n = data_shape->dims[axis];
    for (int d = 0; d < axis; d++)
        outer *= data_shape->dims[d];
    for (int d = axis + 1; d < data_shape->rank; d++)
        inner *= data_shape->dims[d];
    /* check every index before writing anything */
    for (int64_t k = 0; k < n_indices; k++) {
        int64_t i = p->indices_64 ? ((const int64_t *)indices)[k] : ((const int32_t *)indices)[k];
        if (i < -n || i >= n) {
            if (bad_index)
                *bad_index = i;
            return NK_EARG;
        }
    }
    size_t chunk = (size_t)inner * es;
    uint8_t *y = out;
    for (int64_t o = 0; o < outer; o++) {
        const uint8_t *x = (const uint8_t *)data + (size_t)(o * n) * chunk;
        for (int64_t k = 0; k < n_indices; k++, y += chunk) {
            int64_t i = p->indices_64 ? ((const int64_t *)indices)[k] : ((const int32_t *)indices)[k];
            if (i < 0)
                i += n;
            memcpy(y, x + (size_t)i * chunk, chunk);
        }
    }
    return NK_OK;
}

nk_status nk_fill(size_t elem_size, const void *value, int64_t n, void *out)
{
    if (!nk_elem_size_ok(elem_size) || n < 0)
        return NK_EARG;
    nk_splat(out, value, n, elem_size);
    return NK_OK;
}

nk_status nk_range_f32(float start, float delta, int64_t n, float *out)
{
    if (n < 0)
        return NK_EARG;
    for (int64_t i = 0; i < n; i++)
        out[i] = start + (float)i * delta;
    return NK_OK;
}

/* integers wrap instead of overflowing */
nk_status nk_range_i32(int32_t start, int32_t delta, int64_t n, int32_t *out)
{
    if (n < 0)
        return NK_EARG;
    for (int64_t i = 0; i < n; i++)
        out[i] = (int32_t)((uint32_t)start + (uint32_t)i * (uint32_t)delta);
    return NK_OK;
}

nk_status nk_range_i64(int64_t start, int64_t delta, int64_t n, int64_t *out)
{
    if (n < 0)
        return NK_EARG;
    for (int64_t i = 0; i < n; i++)
        out[i] = (int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)delta);
    return NK_OK;
}

int64_t nk_range_count_f32(float start, float limit, float delta)
{
    if (delta == 0.0f || delta != delta)
        return -1;
    /* as onnxruntime: the difference in float, the quotient in double */
    double q = ceil((double)(limit - start) / (double)delta);
    if (q != q || q > 9.0e18)
        return -1;
    return q > 0.0 ? (int64_t)q : 0;
}

int64_t nk_range_count_i64(int64_t start, int64_t limit, int64_t delta)
{
    if (delta == 0)
        return -1;
    uint64_t diff, d;
    if (delta > 0) {
        if (limit <= start)
            return 0;
        diff = (uint64_t)limit - (uint64_t)start;
        d = (uint64_t)delta;
    } else {
        if (limit >= start)
            return 0;
        diff = (uint64_t)start - (uint64_t)limit;
        d = 0u - (uint64_t)delta;
    }
    uint64_t q = diff / d + (diff % d != 0);
    return q > (uint64_t)INT64_MAX ? -1 : (int64_t)q;
}
