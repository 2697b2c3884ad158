/* Gather by constant indices on int8 data (a ViT's q, k, v = qkv[0..2], its
 * class token x[:, 0]) as strided copies: output = data[..., idx_j, ...]
 * for each index j, i.e. outer rows of inner bytes read at row stride
 * dims[axis] * inner and written at stride count * inner. Runs of
 * consecutive indices move as one copy. */
#include "tiler/tile_internal.h"

static int gather_axis(const ir_node *n)
{
    int r = n->inputs[0]->rank;
    int64_t a = ir_attr_int(n, "axis", 0);
    return a < -r || a >= r ? -1 : (int)(a < 0 ? a + r : a);
}

bool tile_gather_indices(const ir_node *n, int64_t *idx, int64_t *count)
{
    const ir_tensor *x = n->inputs[0], *ind = n->n_inputs > 1 ? n->inputs[1] : NULL;
    int axis = gather_axis(n);
    if (!ind || !ind->data || (ind->dtype != IR_I64 && ind->dtype != IR_I32) || axis < 0)
        return false;
    *count = ir_tensor_numel(ind);
    if (*count < 1 || *count > TILE_GATHER_MAX)
        return false;
    int64_t d = x->dims[axis];
    for (int64_t j = 0; j < *count; j++) {
        int64_t v = ind->dtype == IR_I64 ? ((const int64_t *)ind->data)[j] : ((const int32_t *)ind->data)[j];
        if (v < -d || v >= d)
            return false;
        idx[j] = v < 0 ? v + d : v;
    }
    return true;
}

npu_status tile_gather(tile_ctx *c, const ir_node *n)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int64_t idx[TILE_GATHER_MAX], count;
    if (ir_tensor_bytes(x) != (size_t)ir_tensor_numel(x) || !tile_gather_indices(n, idx, &count))
        return tile_fail(c, "a gather of other than bytes by constant in-range indices");
    int axis = gather_axis(n), xr, yr;
    int64_t xo, yo, outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        inner *= x->dims[i];
    npu_status st = tile_tensor_addr(c, x, &xr, &xo);
    if (st == NPU_OK)
        st = tile_tensor_addr(c, y, &yr, &yo);
    int64_t d = x->dims[axis];
    for (int64_t j = 0; j < count && st == NPU_OK && outer * inner > 0;) {
        int64_t run = 1;
        while (j + run < count && idx[j + run] == idx[j] + run)
            run++;
        st = tile_copy_rows(c, xr, xo + idx[j] * inner, d * inner, yr, yo + j * inner, count * inner, outer,
                            run * inner);
        j += run;
    }
    return st;
}
