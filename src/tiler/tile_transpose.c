/* Strided views of int8 data as DMA only: Transpose (attention's head split
 * and K^T, ShuffleNet's channel shuffle) and Slice (ShuffleNet's channel
 * split, any forward steps). Each is an output (dense) whose axis i reads the
 * input at stride[i]; reduced (size-1 axes dropped, an axis merged into the
 * next where it steps over exactly it), so the head split [1,16,4,8] perm
 * [0,2,1,3] reads dims [4,16,8] at strides [8,32,1] and K^T a 2-D transpose.
 * Each work loads a box with those strides into SRAM, dense in the output's
 * order, and stores it contiguously. When the innermost axis has stride 1, a
 * box row is that axis (contiguous bytes on both sides); otherwise rows of
 * one byte (the DMA moves about a byte per cycle then). The box covers the
 * output's two or three innermost axes; the outer ones are looped over, the
 * box's planes (and rows) split to fit the SRAM. */
#include "tiler/tile_internal.h"

/* Size-1 axes dropped, axis i merged into i+1 where it steps over exactly
 * that axis (stride[i] == stride[i+1] * dims[i+1]). */
void tile_strided_reduce(int r, const int64_t *dims, const int64_t *stride, tile_strided *o)
{
    o->rank = 0;
    for (int i = 0; i < r; i++) {
        if (dims[i] == 1)
            continue;
        o->dims[o->rank] = dims[i], o->stride[o->rank++] = stride[i];
    }
    for (int i = o->rank - 2; i >= 0; i--)
        if (o->stride[i] == o->stride[i + 1] * o->dims[i + 1]) {
            o->dims[i] *= o->dims[i + 1], o->stride[i] = o->stride[i + 1];
            for (int j = i + 1; j < o->rank - 1; j++)
                o->dims[j] = o->dims[j + 1], o->stride[j] = o->stride[j + 1];
            o->rank--;
        }
    if (o->rank == 0) /* one element */
        o->rank = 1, o->dims[0] = 1, o->stride[0] = 1;
}

/* Output axis i of a Transpose reads input axis perm[i]: its dims and strides. */
static bool transpose_strides(const ir_node *n, int64_t *yd, int64_t *stride)
{
    const ir_tensor *x = n->inputs[0];
    int r = x->rank;
    int64_t perm[IR_MAX_RANK], xs[IR_MAX_RANK], s = 1;
    int k = ir_attr_ints(n, "perm", perm, IR_MAX_RANK);
    if (r < 1 || r > IR_MAX_RANK || (k >= 0 && k != r))
        return false;
    for (int i = r - 1; i >= 0; i--)
        xs[i] = s, s *= x->dims[i];
    bool seen[IR_MAX_RANK] = {0};
    for (int i = 0; i < r; i++) {
        int64_t p = k >= 0 ? perm[i] : r - 1 - i;
        if (p < 0 || p >= r || seen[p])
            return false;
        seen[p] = true;
        yd[i] = x->dims[p], stride[i] = xs[p];
    }
    return true;
}

bool tile_transpose_ok(const ir_node *n)
{
    int64_t yd[IR_MAX_RANK], st[IR_MAX_RANK];
    return transpose_strides(n, yd, st);
}

/* The bytes of a strided view (ps: output dims, input strides, reduced) from
 * xo into the dense output at yo. */
static npu_status strided_copy(tile_ctx *c, const tile_strided *ps, int xr, int64_t xo, int yr, int64_t yo)
{
    int r = ps->rank;
    const int64_t *yd = ps->dims, *xs = ps->stride;
    bool rows = xs[r - 1] == 1;            /* the innermost axis is contiguous: whole rows */
    int inner = tile_min(rows ? 3 : 2, r); /* output axes the box covers */
    int64_t w = rows ? yd[r - 1] : 1;
    int ha = rows ? r - 2 : r - 1, ca = ha - 1; /* the output axes of the box's rows and planes, -1 none */
    int64_t h = ha >= 0 ? yd[ha] : 1, hs = ha >= 0 && h > 1 ? xs[ha] : w;
    int64_t cn = ca >= 0 ? yd[ca] : 1, cs = ca >= 0 && cn > 1 ? xs[ca] : h * hs;
    int64_t outer = 1;
    for (int i = 0; i < r - inner; i++)
        outer *= yd[i];
    int64_t budget = c->t->p[TGT_P_SRAM_BYTES] / 2 - 64, total = outer * cn * h * w;
    int64_t want = tile_min(budget, total / 4 > 4096 ? total / 4 : 4096);
    int64_t hh = h * w <= want ? h : (want / w > 0 ? want / w : 1), cc = hh < h ? 1 : tile_min(cn, want / (h * w));
    if (hh * w > budget)
        return tile_fail(c, "a transpose row of %lld bytes exceeds the SRAM", (long long)(hh * w));
    int64_t slot[2];
    tile_sram_req rq[2] = {{cc * hh * w, &slot[0]}, {cc * hh * w, &slot[1]}};
    npu_status st = tile_sram_place(c, rq, 2, "no transpose tile fits the SRAM");
    int j = 0;
    for (int64_t o = 0; o < outer && st == NPU_OK; o++) {
        int64_t src = xo, rem = o;
        for (int i = r - inner - 1; i >= 0; i--) { /* the outer output index -> input offset */
            src += (rem % yd[i]) * xs[i];
            rem /= yd[i];
        }
        for (int64_t c0 = 0; c0 < cn; c0 += cc)
            for (int64_t h0 = 0; h0 < h; h0 += hh, j++) {
                int64_t nc = tile_min(cc, cn - c0), nh = tile_min(hh, h - h0), s = slot[j % 2];
                tile_work *wk = tile_work_new(c);
                if (!wk)
                    return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
                tile_load(wk, (tile_box){xr, src + c0 * cs + h0 * hs, s, nc, nh, w, hs, cs, w, nh * w});
                tile_store_flat(c, wk, yr, yo + ((o * cn + c0) * h + h0) * w, s, nc * nh * w);
            }
    }
    return st == NPU_OK ? tile_pipeline(c) : st;
}

npu_status tile_transpose(tile_ctx *c, const ir_node *n)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int64_t yd[IR_MAX_RANK], st[IR_MAX_RANK];
    if (ir_tensor_bytes(x) != (size_t)ir_tensor_numel(x) || !transpose_strides(n, yd, st))
        return tile_fail(c, "a transpose of other than bytes, or perm is not a permutation");
    tile_strided ps;
    tile_strided_reduce(x->rank, yd, st, &ps);
    int xr, yr;
    int64_t xo, yo;
    npu_status st2 = tile_tensor_addr(c, x, &xr, &xo);
    if (st2 == NPU_OK)
        st2 = tile_tensor_addr(c, y, &yr, &yo);
    if (st2 != NPU_OK || ir_tensor_numel(x) == 0)
        return st2;
    return strided_copy(c, &ps, xr, xo, yr, yo);
}

/* A Slice as the importer normalizes it (starts/ends/axes/steps over every
 * axis): output axis d reads input axis d from starts[d] at steps[d]; only
 * forward steps (a DMA stride is unsigned). */
static bool slice_strides(const ir_node *n, int64_t *yd, int64_t *stride, int64_t *base)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int r = x->rank;
    int64_t st[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK], xs[IR_MAX_RANK], s = 1;
    if (r < 1 || r > IR_MAX_RANK || !y || y->rank != r || ir_attr_ints(n, "starts", st, r) != r ||
        ir_attr_ints(n, "axes", ax, r) != r || ir_attr_ints(n, "steps", sp, r) != r)
        return false;
    for (int i = r - 1; i >= 0; i--)
        xs[i] = s, s *= x->dims[i];
    *base = 0;
    for (int d = 0; d < r; d++) {
        if (ax[d] != d || sp[d] < 1 || st[d] < 0 || (y->dims[d] > 0 && st[d] + (y->dims[d] - 1) * sp[d] >= x->dims[d]))
            return false;
        yd[d] = y->dims[d], stride[d] = xs[d] * sp[d], *base += st[d] * xs[d];
    }
    return true;
}

bool tile_slice_ok(const ir_node *n)
{
    int64_t yd[IR_MAX_RANK], st[IR_MAX_RANK], base;
    return slice_strides(n, yd, st, &base);
}

/* Nothing when the planner put the output on its bytes of the input (a
 * one-range slice read in place), else the strided copy. */
npu_status tile_slice(tile_ctx *c, const ir_node *n)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int64_t yd[IR_MAX_RANK], st[IR_MAX_RANK], base;
    if (ir_tensor_bytes(x) != (size_t)ir_tensor_numel(x) || !slice_strides(n, yd, st, &base))
        return tile_fail(c, "a slice of other than bytes, or not forward within its input");
    int xr, yr;
    int64_t xo, yo;
    npu_status s2 = tile_tensor_addr(c, x, &xr, &xo);
    if (s2 == NPU_OK)
        s2 = tile_tensor_addr(c, y, &yr, &yo);
    if (s2 != NPU_OK || ir_tensor_numel(y) == 0 || (xr == yr && xo + base == yo))
        return s2;
    tile_strided ps;
    tile_strided_reduce(x->rank, yd, st, &ps);
    return strided_copy(c, &ps, xr, xo + base, yr, yo);
}
