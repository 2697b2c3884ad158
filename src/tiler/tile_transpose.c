/* Transpose of int8 data (attention's head split and K^T, ShuffleNet's
 * channel shuffle) as DMA only: each work loads a box of the input with the
 * permuted strides into SRAM, dense in the output's order, and stores it
 * contiguously. The permutation is first reduced: size-1 axes dropped, runs
 * of input axes that stay adjacent merged, so the head split [1,16,4,8]
 * perm [0,2,1,3] is [16,4,8] perm [1,0,2] and K^T [1,16,4,8] perm [0,2,3,1]
 * a 2-D transpose [16,32]. When the innermost axis stays innermost, a box row
 * is that axis (contiguous bytes on both sides); otherwise rows of one byte
 * (the DMA moves about a byte per cycle then). The box covers the output's
 * two or three innermost axes; the outer ones are looped over, the box's
 * planes (and rows) split to fit the SRAM. */
#include "tiler/tile_internal.h"

bool tile_transpose_shape(const ir_node *n, perm_shape *ps)
{
    const ir_tensor *x = n->inputs[0];
    int r = x->rank;
    int64_t perm[IR_MAX_RANK];
    int k = ir_attr_ints(n, "perm", perm, IR_MAX_RANK);
    if (r < 1 || r > IR_MAX_RANK || (k >= 0 && k != r))
        return false;
    bool seen[IR_MAX_RANK] = {0};
    for (int i = 0; i < r; i++) {
        int64_t p = k >= 0 ? perm[i] : r - 1 - i;
        if (p < 0 || p >= r || seen[p])
            return false;
        seen[p] = true;
        perm[i] = p;
    }
    /* output axes in order, size-1 ones dropped, merged while consecutive in the input */
    int out_ax[IR_MAX_RANK], n_out = 0;
    int64_t out_d[IR_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int a = (int)perm[i];
        if (x->dims[a] == 1)
            continue;
        if (n_out && out_ax[n_out - 1] + 1 == a) {
            out_d[n_out - 1] *= x->dims[a];
            out_ax[n_out - 1] = a; /* the run's last input axis */
            continue;
        }
        out_ax[n_out] = a, out_d[n_out++] = x->dims[a];
    }
    /* input order of the merged groups: rank each group by its last input axis */
    ps->rank = n_out;
    for (int i = 0; i < n_out; i++) {
        int rank = 0;
        for (int j = 0; j < n_out; j++)
            rank += out_ax[j] < out_ax[i];
        ps->perm[i] = rank;
        ps->xd[rank] = out_d[i];
    }
    return true;
}

static npu_status transpose_box(tile_ctx *c, const perm_shape *ps, int xr, int64_t xo, int yr, int64_t yo)
{
    int r = ps->rank;
    int64_t xs[IR_MAX_RANK], yd[IR_MAX_RANK];
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        xs[i] = s;
        s *= ps->xd[i];
    }
    for (int i = 0; i < r; i++)
        yd[i] = ps->xd[ps->perm[i]];
    bool rows = ps->perm[r - 1] == r - 1; /* innermost axis unmoved: contiguous rows */
    int inner = tile_min(rows ? 3 : 2, r); /* output axes the box covers */
    int64_t w = rows ? yd[r - 1] : 1;
    int ha = rows ? r - 2 : r - 1, ca = ha - 1; /* the output axes of the box's rows and planes, -1 none */
    int64_t h = ha >= 0 ? yd[ha] : 1, hs = ha >= 0 && h > 1 ? xs[ps->perm[ha]] : w;
    int64_t cn = ca >= 0 ? yd[ca] : 1, cs = ca >= 0 && cn > 1 ? xs[ps->perm[ca]] : h * hs;
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
            src += (rem % yd[i]) * xs[ps->perm[i]];
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
    perm_shape ps;
    if (ir_tensor_bytes(x) != (size_t)ir_tensor_numel(x) || !tile_transpose_shape(n, &ps))
        return tile_fail(c, "a transpose of other than bytes, or perm is not a permutation");
    int xr, yr;
    int64_t xo, yo;
    npu_status st = tile_tensor_addr(c, x, &xr, &xo);
    if (st == NPU_OK)
        st = tile_tensor_addr(c, y, &yr, &yo);
    if (st != NPU_OK || ir_tensor_numel(x) == 0)
        return st;
    if (ps.rank == 0) { /* every axis of size 1: one byte */
        ps.rank = 1;
        ps.xd[0] = 1, ps.perm[0] = 0;
    }
    return transpose_box(c, &ps, xr, xo, yr, yo);
}
