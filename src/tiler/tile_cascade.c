/* Cascading: a depthwise conv followed by the 1x1 conv that alone reads its
 * output (the MobileNet pair) runs as one pipeline over output row tiles.
 * Each tile loads the depthwise input rows (all channels, with their halo),
 * the dwconv writes the intermediate tile into SRAM, the 1x1 conv reads it
 * from there and the tile is stored; both weight blocks stay resident. Both
 * run on the MAC array, whose queue orders them, so no extra token is needed.
 * The intermediate never goes to DRAM. */
#include <string.h>

#include "tiler/tile_internal.h"

typedef struct cascade {
    tile_convinfo d, p; /* the depthwise and the pointwise conv */
    int64_t C, H, W, OH, OW, OC;
    int64_t oht;
    int64_t in_slot, mid, out_slot;
    int n_tiles;
} cascade;

/* Do the fields of both instructions take a tile of oht rows? */
static bool fields_ok(const tile_ctx *c, const cascade *q, int64_t oht)
{
    const nk_qconv2d_params *k = &q->d.k;
    int64_t ih = tile_min(q->H, tile_span(oht, k->k_h, k->stride_h, k->dil_h));
    tgt_sem d = TGT_SEM_DWCONV, p = TGT_SEM_CONV;
    return q->C <= tile_fmax(c, d, TGT_F_C) && ih <= tile_fmax(c, d, TGT_F_IH) && q->W <= tile_fmax(c, d, TGT_F_IW) &&
           oht <= tile_fmax(c, d, TGT_F_OH) && q->OW <= tile_fmax(c, d, TGT_F_OW) && q->C <= tile_fmax(c, p, TGT_F_IC) &&
           q->OC <= tile_fmax(c, p, TGT_F_OC) && oht <= tile_fmax(c, p, TGT_F_IH) &&
           oht <= tile_fmax(c, p, TGT_F_OH) && q->OW <= tile_fmax(c, p, TGT_F_IW) && q->OW <= tile_fmax(c, p, TGT_F_OW);
}

static bool sizes(const tile_ctx *c, cascade *q, int64_t oht)
{
    const nk_qconv2d_params *k = &q->d.k;
    int64_t ih = tile_min(q->H, tile_span(oht, k->k_h, k->stride_h, k->dil_h));
    q->oht = oht;
    q->n_tiles = (int)tile_cdiv(q->OH, oht);
    q->in_slot = q->C * ih * q->W;
    q->mid = q->C * oht * q->OW;
    q->out_slot = q->OC * oht * q->OW;
    int slots = q->n_tiles > 1 ? 2 : 1;
    int64_t total = 7 * 16 + slots * (q->in_slot + q->out_slot) + q->mid + q->d.blk_bytes + q->p.blk_bytes;
    return total <= c->t->p[TGT_P_SRAM_BYTES];
}

/* Cycles of a plan: the busiest queue plus the first load and the last store. */
static int64_t cost(const tile_ctx *c, const cascade *q)
{
    int64_t v[TGT_F_COUNT], dw = 0, pw = 0, ld = 0, st = 0;
    npu_err e;
    tgt_defaults(c->t->isa, tile_insn(c, TGT_SEM_DWCONV), v);
    v[TGT_F_C] = q->C, v[TGT_F_KH] = q->d.k.k_h, v[TGT_F_KW] = q->d.k.k_w, v[TGT_F_OH] = q->oht, v[TGT_F_OW] = q->OW;
    if (tgt_timing(c->t, tile_insn(c, TGT_SEM_DWCONV), v, &dw, &e) != NPU_OK)
        return INT64_MAX;
    tgt_defaults(c->t->isa, tile_insn(c, TGT_SEM_CONV), v);
    v[TGT_F_IC] = q->C, v[TGT_F_OC] = q->OC, v[TGT_F_KH] = v[TGT_F_KW] = 1, v[TGT_F_OH] = q->oht, v[TGT_F_OW] = q->OW;
    v[TGT_F_W4] = q->p.w4;
    if (tgt_timing(c->t, tile_insn(c, TGT_SEM_CONV), v, &pw, &e) != NPU_OK)
        return INT64_MAX;
    int di = tile_insn(c, TGT_SEM_DMA_LOAD);
    tgt_defaults(c->t->isa, di, v);
    v[TGT_F_C] = 1, v[TGT_F_H] = 1, v[TGT_F_W] = q->in_slot, v[TGT_F_DRAM_HS] = v[TGT_F_SRAM_HS] = q->in_slot;
    if (tgt_timing(c->t, di, v, &ld, &e) != NPU_OK)
        return INT64_MAX;
    v[TGT_F_W] = q->out_slot, v[TGT_F_DRAM_HS] = v[TGT_F_SRAM_HS] = q->out_slot;
    if (tgt_timing(c->t, di, v, &st, &e) != NPU_OK)
        return INT64_MAX;
    int64_t busy = q->n_tiles * (dw + pw);
    busy = busy > q->n_tiles * ld ? busy : q->n_tiles * ld;
    busy = busy > q->n_tiles * st ? busy : q->n_tiles * st;
    return busy + ld + st;
}

/* Largest fitting rows, and halvings of it, by the cost above. */
static bool choose(const tile_ctx *c, cascade *q, bool whole)
{
    int64_t best = 0, best_cost = INT64_MAX;
    int64_t hi = q->OH;
    while (hi > 0 && !(fields_ok(c, q, hi) && sizes(c, q, hi)))
        hi = hi > 8 ? hi - hi / 8 : hi - 1;
    for (int64_t r = hi, k = 0; r >= 1 && k < 6; r = tile_cdiv(r, 2), k++) {
        if (whole && r != q->OH)
            break; /* SRAM-resident operands are read in place as whole planes */
        if (fields_ok(c, q, r) && sizes(c, q, r)) {
            int64_t cst = cost(c, q);
            if (cst < best_cost)
                best = r, best_cost = cst;
        }
        if (r == 1)
            break;
    }
    return best > 0 && sizes(c, q, best);
}

npu_status tile_dw_pw(tile_ctx *c, const ir_node *n, const ir_node *m, bool *done)
{
    *done = false;
    cascade q;
    memset(&q, 0, sizeof q);
    npu_status st = tile_conv_info(c, n, false, &q.d);
    if (st == NPU_OK)
        st = tile_conv_info(c, m, false, &q.p);
    if (st != NPU_OK)
        return st;
    const nk_qconv2d_params *k = &q.d.k, *k2 = &q.p.k;
    if (q.d.sem != TGT_SEM_DWCONV || q.p.sem != TGT_SEM_CONV || k->n != 1)
        return NPU_OK;
    q.C = k->c_in, q.H = k->h_in, q.W = k->w_in, q.OH = k->h_out, q.OW = k->w_out, q.OC = k2->c_out;
    if (!choose(c, &q, tile_resident_io(c, n) || tile_resident_io(c, m)) && !choose(c, &q, false))
        return NPU_OK; /* the caller lowers the two apart */
    *done = true;
    if ((st = tile_conv_info(c, n, true, &q.d)) != NPU_OK || (st = tile_conv_info(c, m, true, &q.p)) != NPU_OK)
        return st;
    int xr, zr;
    int64_t xo, zo;
    if ((st = tile_tensor_addr(c, n->inputs[0], &xr, &xo)) != NPU_OK ||
        (st = tile_tensor_addr(c, m->outputs[0], &zr, &zo)) != NPU_OK)
        return st;
    int slots = q.n_tiles > 1 ? 2 : 1;
    int64_t in_s[2], out_s[2], mid, wd, wp;
    tile_sram_req rq[7] = {{q.mid, &mid}, {q.d.blk_bytes, &wd}, {q.p.blk_bytes, &wp}};
    int nr = 3;
    for (int i = 0; i < slots; i++)
        rq[nr++] = (tile_sram_req){q.in_slot, &in_s[i]}, rq[nr++] = (tile_sram_req){q.out_slot, &out_s[i]};
    const bool early[7] = {false, true, true}; /* the weights: clear of the layer before where only they fit so */
    if ((st = tile_sram_place_early(c, rq, nr, early, "tiler bug: the cascade's buffers exceed the SRAM")) != NPU_OK)
        return st;
    for (int j = 0; j < q.n_tiles; j++) {
        int64_t y0 = j * q.oht, y1 = tile_min(q.OH, y0 + q.oht), oh = y1 - y0;
        tile_axis ay = tile_axis_range(y0, y1, q.H, k->k_h, k->stride_h, k->dil_h, k->pad_top);
        tile_axis ax = tile_axis_range(0, q.OW, q.W, k->k_w, k->stride_w, k->dil_w, k->pad_left);
        int64_t ih = ay.i1 - ay.i0, iw = ax.i1 - ax.i0;
        tile_work *wk = tile_work_new(c);
        if (!wk)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        int64_t src = in_s[j % slots], dst = out_s[j % slots];
        tile_load(wk, tile_box_chw(xr, xo + ay.i0 * q.W + ax.i0, q.H, q.W, src, q.C, ih, iw));
        if (j == 0) { /* both weight blocks stay resident */
            tile_load_flat(c, wk, TGT_REGION_CONSTANTS, q.d.blk_off, wd, q.d.blk_bytes);
            tile_load_flat(c, wk, TGT_REGION_CONSTANTS, q.p.blk_off, wp, q.p.blk_bytes);
        }
        tile_comp *a = tile_comp_new(c, wk, TGT_SEM_DWCONV);
        tile_comp *b = a ? tile_comp_new(c, wk, TGT_SEM_CONV) : NULL;
        if (!b)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        a = b - 1;
        int64_t *v = a->v;
        v[TGT_F_SRC] = src, v[TGT_F_DST] = mid, v[TGT_F_WGT] = wd, v[TGT_F_QTAB] = wd + q.d.qtab_rel;
        v[TGT_F_C] = q.C, v[TGT_F_IH] = ih, v[TGT_F_IW] = iw, v[TGT_F_OH] = oh, v[TGT_F_OW] = q.OW;
        v[TGT_F_KH] = k->k_h, v[TGT_F_KW] = k->k_w, v[TGT_F_SH] = k->stride_h, v[TGT_F_SW] = k->stride_w;
        v[TGT_F_DH] = k->dil_h, v[TGT_F_DW] = k->dil_w;
        v[TGT_F_PT] = ay.p0, v[TGT_F_PB] = ay.p1, v[TGT_F_PL] = ax.p0, v[TGT_F_PR] = ax.p1;
        v[TGT_F_IN_ZP] = k->in_zp, v[TGT_F_OUT_ZP] = k->out_zp, v[TGT_F_W4] = q.d.w4;
        v[TGT_F_CLAMP_LO] = k->act_min, v[TGT_F_CLAMP_HI] = k->act_max;
        v = b->v;
        v[TGT_F_SRC] = mid, v[TGT_F_DST] = dst, v[TGT_F_WGT] = wp, v[TGT_F_QTAB] = wp + q.p.qtab_rel;
        v[TGT_F_IC] = q.C, v[TGT_F_OC] = q.OC, v[TGT_F_IH] = oh, v[TGT_F_IW] = q.OW, v[TGT_F_OH] = oh;
        v[TGT_F_OW] = q.OW, v[TGT_F_KH] = v[TGT_F_KW] = 1;
        v[TGT_F_IN_ZP] = k2->in_zp, v[TGT_F_OUT_ZP] = k2->out_zp, v[TGT_F_W4] = q.p.w4;
        v[TGT_F_CLAMP_LO] = k2->act_min, v[TGT_F_CLAMP_HI] = k2->act_max;
        tile_store(wk, tile_box_chw(zr, zo + y0 * q.OW, q.OH, q.OW, dst, q.OC, oh, q.OW));
    }
    return tile_pipeline(c);
}
