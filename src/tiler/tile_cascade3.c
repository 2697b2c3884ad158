/* Cascading the inverted-residual block: an expand 1x1 conv, the depthwise
 * conv that alone reads its output, optionally the 1x1 projection that alone
 * reads the depthwise output and the eltwise (the residual add) that alone
 * reads the projection's, run as one pipeline over output row bands of the
 * depthwise conv. Per band: load the block input rows the band needs (its
 * rows plus the kernel halo, all channels), the expand conv writes them into
 * SRAM, the dwconv reads them from there, the projection (and the eltwise,
 * with the other operand's tile) follow, and the band is stored. The
 * intermediates never go to DRAM.
 *
 * The halo (kh - stride rows shared with the previous band) is recomputed,
 * not kept resident: every compute operand is a dense CHW box, so the rows a
 * band keeps would have to move to the front of each channel plane of the
 * next band's buffer, and the ISA has no SRAM-to-SRAM strided move (DMA
 * runs between DRAM and SRAM; a per-channel requant copy is C instructions
 * per band on the vector unit, plus a token npu-v1-narrow lacks). The
 * recomputed rows cost (kh - sh) / (band rows * sh) of the expand's MACs,
 * which the cost model below weighs against the bands' sizes, and the whole
 * cascade against running the convs apart. */
#include <string.h>

#include "tiler/tile_internal.h"

typedef struct chain {
    const ir_node *e, *d, *p, *a; /* expand, depthwise, projection or NULL, eltwise or NULL */
    tile_convinfo ce, cd, cp;
    int64_t CI, H, W, CE, OH, OW, CO; /* CO: channels stored (the projection's, or CE) */
    int64_t iwe;                      /* columns of the expand the depthwise reads */
    int64_t oht, ih;                  /* rows per band, expanded rows of the tallest band */
    int n_tiles;
    int64_t in_slot, mid1, mid2, out_slot, res_slot;
} chain;

static bool is_pointwise(const tile_convinfo *ci)
{
    const nk_qconv2d_params *k = &ci->k;
    return ci->sem == TGT_SEM_CONV && k->n == 1 && k->groups == 1 && k->k_h == 1 && k->k_w == 1 &&
           k->stride_h == 1 && k->stride_w == 1 && !k->pad_top && !k->pad_left && !k->pad_bottom && !k->pad_right;
}

/* Is y read only by node m (and not a graph output)? */
static bool only_reader(const tile_ctx *c, const ir_tensor *y, const ir_node *m)
{
    bool reads = false;
    for (int j = 0; j < m->n_inputs; j++)
        reads |= m->inputs[j] == y;
    return reads && ir_use_count(c->g, y) == 1 && !(y->flags & IR_TENSOR_OUTPUT);
}

static bool is_eltwise(ir_op op)
{
    return op == IR_OP_ADD || op == IR_OP_SUB || op == IR_OP_MUL || op == IR_OP_MIN || op == IR_OP_MAX;
}

/* The eltwise's operand other than the projection's output. */
static const ir_tensor *other_operand(const chain *q)
{
    return q->a->inputs[q->a->inputs[0] == q->p->outputs[0] ? 1 : 0];
}

/* The structure of nd[0..len) as a chain; the conv parameters filled in. */
static npu_status match(tile_ctx *c, const ir_node *const *nd, int len, chain *q, bool *ok)
{
    *ok = false;
    memset(q, 0, sizeof *q);
    if (len < 2 || len > 4)
        return NPU_OK;
    q->e = nd[0], q->d = nd[1], q->p = len > 2 ? nd[2] : NULL, q->a = len > 3 ? nd[3] : NULL;
    if (q->e->op != IR_OP_CONV || q->d->op != IR_OP_CONV || (q->p && q->p->op != IR_OP_CONV) ||
        (q->a && (!is_eltwise(q->a->op) || q->a->n_inputs != 2 || q->a->n_outputs != 1)))
        return NPU_OK;
    if (q->e->inputs[0]->rank != 4 || q->e->n_inputs < 2 || q->e->inputs[1]->rank != 4 ||
        q->d->inputs[0] != q->e->outputs[0] || !only_reader(c, q->e->outputs[0], q->d))
        return NPU_OK;
    if (q->p && (q->p->inputs[0] != q->d->outputs[0] || q->p->n_inputs < 2 || q->p->inputs[1]->rank != 4 ||
                 !only_reader(c, q->d->outputs[0], q->p)))
        return NPU_OK;
    if (q->a) {
        const ir_tensor *y = q->p->outputs[0], *z = q->a->outputs[0];
        if ((q->a->inputs[0] == y) == (q->a->inputs[1] == y) || !only_reader(c, y, q->a))
            return NPU_OK;
        const ir_tensor *o = other_operand(q);
        if (!ir_shape_equal(o, z) || !ir_shape_equal(y, z) || !o->quant || o->quant->count != 1 ||
            o->dtype != IR_I8 || tile_tokens(c->t) < 5 || tile_insn(c, TGT_SEM_ELTWISE) < 0)
            return NPU_OK;
    }
    npu_status st = tile_conv_info(c, q->e, false, &q->ce);
    if (st == NPU_OK)
        st = tile_conv_info(c, q->d, false, &q->cd);
    if (st == NPU_OK && q->p)
        st = tile_conv_info(c, q->p, false, &q->cp);
    if (st != NPU_OK)
        return st;
    const nk_qconv2d_params *ke = &q->ce.k, *kd = &q->cd.k;
    if (!is_pointwise(&q->ce) || q->cd.sem != TGT_SEM_DWCONV || kd->n != 1 || (q->p && !is_pointwise(&q->cp)))
        return NPU_OK;
    q->CI = ke->c_in, q->H = ke->h_in, q->W = ke->w_in, q->CE = ke->c_out;
    q->OH = kd->h_out, q->OW = kd->w_out, q->CO = q->p ? q->cp.k.c_out : q->CE;
    tile_axis ax = tile_axis_range(0, q->OW, q->W, kd->k_w, kd->stride_w, kd->dil_w, kd->pad_left);
    q->iwe = ax.i1 - ax.i0;
    *ok = ax.i0 == 0 && q->iwe >= 1;
    return NPU_OK;
}

static int64_t span(int64_t o, int64_t k, int64_t s, int64_t d)
{
    return (o - 1) * s + d * (k - 1) + 1;
}

/* Do the fields of every instruction take a band of oht rows? */
static bool fields_ok(const tile_ctx *c, const chain *q, int64_t oht)
{
    const nk_qconv2d_params *k = &q->cd.k;
    int64_t ih = tile_min(q->H, span(oht, k->k_h, k->stride_h, k->dil_h));
    tgt_sem cv = TGT_SEM_CONV, dw = TGT_SEM_DWCONV;
    bool ok = q->CI <= tile_fmax(c, cv, TGT_F_IC) && q->CE <= tile_fmax(c, cv, TGT_F_OC) &&
              ih <= tile_fmax(c, cv, TGT_F_IH) && ih <= tile_fmax(c, cv, TGT_F_OH) &&
              q->iwe <= tile_fmax(c, cv, TGT_F_IW) && q->iwe <= tile_fmax(c, cv, TGT_F_OW) &&
              q->CE <= tile_fmax(c, dw, TGT_F_C) && ih <= tile_fmax(c, dw, TGT_F_IH) &&
              q->iwe <= tile_fmax(c, dw, TGT_F_IW) && oht <= tile_fmax(c, dw, TGT_F_OH) &&
              q->OW <= tile_fmax(c, dw, TGT_F_OW);
    if (ok && q->p)
        ok = q->CE <= tile_fmax(c, cv, TGT_F_IC) && q->CO <= tile_fmax(c, cv, TGT_F_OC) &&
             oht <= tile_fmax(c, cv, TGT_F_IH) && q->OW <= tile_fmax(c, cv, TGT_F_IW);
    if (ok && q->a) {
        tgt_sem el = TGT_SEM_ELTWISE;
        ok = q->CO <= tile_fmax(c, el, TGT_F_C) && oht <= tile_fmax(c, el, TGT_F_H) && q->OW <= tile_fmax(c, el, TGT_F_W);
    }
    return ok;
}

static int n_buffers(const chain *q)
{
    int slots = q->n_tiles > 1 ? 2 : 1;
    return 3 + (q->p ? 2 : 0) + slots * (2 + (q->a ? 1 : 0));
}

/* Sizes of a plan of oht rows per band; false when they do not fit the SRAM. */
static bool sizes(const tile_ctx *c, chain *q, int64_t oht)
{
    const nk_qconv2d_params *k = &q->cd.k;
    q->oht = oht;
    q->ih = tile_min(q->H, span(oht, k->k_h, k->stride_h, k->dil_h));
    q->n_tiles = (int)tile_cdiv(q->OH, oht);
    q->in_slot = q->CI * q->ih * q->iwe;
    q->mid1 = q->CE * q->ih * q->iwe;
    q->mid2 = q->p ? q->CE * oht * q->OW : 0;
    q->out_slot = q->CO * oht * q->OW;
    q->res_slot = q->a ? q->out_slot : 0;
    int slots = q->n_tiles > 1 ? 2 : 1;
    int64_t total = 16 * n_buffers(q) + q->mid1 + q->mid2 + slots * (q->in_slot + q->out_slot + q->res_slot) +
                    q->ce.blk_bytes + q->cd.blk_bytes + q->cp.blk_bytes;
    return total <= c->t->p[TGT_P_SRAM_BYTES];
}

static int64_t timing(const tile_ctx *c, tgt_sem sem, const int64_t *set, int n)
{
    int64_t v[TGT_F_COUNT], cyc = 0;
    int i = tile_insn(c, sem);
    npu_err e;
    tgt_defaults(c->t->isa, i, v);
    for (int k = 0; k < n; k++)
        v[set[2 * k]] = set[2 * k + 1];
    return tgt_timing(c->t, i, v, &cyc, &e) == NPU_OK ? cyc : INT64_MAX / 16;
}

static int64_t dma_time(const tile_ctx *c, int64_t ch, int64_t h, int64_t w, int64_t dram_hs)
{
    int64_t set[] = {TGT_F_C, ch, TGT_F_H, h, TGT_F_W, w, TGT_F_DRAM_HS, dram_hs, TGT_F_SRAM_HS, w};
    return timing(c, TGT_SEM_DMA_LOAD, set, 5);
}

/* Cycles of a plan: the busiest queue over the bands, plus the weights, the
 * first load and the last store that nothing hides. */
static int64_t cost(const tile_ctx *c, const chain *q)
{
    const nk_qconv2d_params *k = &q->cd.k;
    int64_t ex[] = {TGT_F_IC, q->CI, TGT_F_OC, q->CE, TGT_F_KH, 1, TGT_F_KW, 1, TGT_F_OH, q->ih,
                    TGT_F_OW, q->iwe, TGT_F_W4, q->ce.w4};
    int64_t dw[] = {TGT_F_C, q->CE, TGT_F_KH, k->k_h, TGT_F_KW, k->k_w, TGT_F_OH, q->oht, TGT_F_OW, q->OW};
    int64_t pw[] = {TGT_F_IC, q->CE, TGT_F_OC, q->CO, TGT_F_KH, 1, TGT_F_KW, 1, TGT_F_OH, q->oht,
                    TGT_F_OW, q->OW, TGT_F_W4, q->cp.w4};
    int64_t mac = timing(c, TGT_SEM_CONV, ex, 7) + timing(c, TGT_SEM_DWCONV, dw, 5) +
                  (q->p ? timing(c, TGT_SEM_CONV, pw, 7) : 0);
    int64_t ld = dma_time(c, q->CI, q->ih, q->iwe, q->W), st = dma_time(c, q->CO, q->oht, q->OW, q->OW);
    int64_t res = q->a ? st : 0;
    int64_t wl = dma_time(c, 1, 1, q->ce.blk_bytes + q->cd.blk_bytes + q->cp.blk_bytes, 0);
    int64_t n = q->n_tiles, busy = n * mac;
    busy = busy > n * (ld + res) ? busy : n * (ld + res);
    busy = busy > n * st ? busy : n * st;
    return busy + ld + wl + st;
}

/* Largest fitting band, and halvings of it, by the cost above. */
static bool choose(const tile_ctx *c, chain *q)
{
    int64_t best = 0, best_cost = INT64_MAX;
    int64_t hi = q->OH;
    while (hi > 0 && !(fields_ok(c, q, hi) && sizes(c, q, hi)))
        hi = hi > 8 ? hi - hi / 8 : hi - 1;
    for (int64_t r = hi, k = 0; r >= 1 && k < 6; r = tile_cdiv(r, 2), k++) {
        if (fields_ok(c, q, r) && sizes(c, q, r)) {
            int64_t cst = cost(c, q);
            if (cst < best_cost)
                best = r, best_cost = cst;
        }
        if (r == 1)
            break;
    }
    if (best == 0)
        return false;
    /* the convs apart (their best plans, each through DRAM) must not be cheaper */
    int64_t apart = tile_conv_estimate((tile_ctx *)c, q->e), a2 = tile_conv_estimate((tile_ctx *)c, q->d);
    int64_t a3 = q->p ? tile_conv_estimate((tile_ctx *)c, q->p) : 0;
    if (apart < INT64_MAX / 4 && a2 < INT64_MAX / 4 && a3 < INT64_MAX / 4 && best_cost >= apart + a2 + a3)
        return false;
    return sizes(c, q, best);
}

static void conv_fields(int64_t *v, const tile_convinfo *ci, int64_t src, int64_t dst, int64_t wgt)
{
    const nk_qconv2d_params *k = &ci->k;
    v[TGT_F_SRC] = src, v[TGT_F_DST] = dst, v[TGT_F_WGT] = wgt, v[TGT_F_QTAB] = wgt + ci->qtab_rel;
    v[TGT_F_KH] = k->k_h, v[TGT_F_KW] = k->k_w, v[TGT_F_SH] = k->stride_h, v[TGT_F_SW] = k->stride_w;
    v[TGT_F_DH] = k->dil_h, v[TGT_F_DW] = k->dil_w;
    v[TGT_F_IN_ZP] = k->in_zp, v[TGT_F_OUT_ZP] = k->out_zp, v[TGT_F_W4] = ci->w4;
    v[TGT_F_CLAMP_LO] = k->act_min, v[TGT_F_CLAMP_HI] = k->act_max;
}

typedef struct bufs {
    int64_t in[2], out[2], res[2], mid1, mid2, we, wd, wp;
} bufs;

static npu_status emit_band(tile_ctx *c, const chain *q, const bufs *b, int j, const int64_t *elt, bool conv_is_a)
{
    const nk_qconv2d_params *k = &q->cd.k;
    int slots = q->n_tiles > 1 ? 2 : 1;
    int xr, zr, fr = 0;
    int64_t xo, zo, fo = 0;
    npu_status st = tile_tensor_addr(c, q->e->inputs[0], &xr, &xo);
    if (st == NPU_OK)
        st = tile_tensor_addr(c, (q->a ? q->a : q->p ? q->p : q->d)->outputs[0], &zr, &zo);
    if (st == NPU_OK && q->a)
        st = tile_tensor_addr(c, other_operand(q), &fr, &fo);
    if (st != NPU_OK)
        return st;
    int64_t y0 = j * q->oht, y1 = tile_min(q->OH, y0 + q->oht), oh = y1 - y0;
    tile_axis ay = tile_axis_range(y0, y1, q->H, k->k_h, k->stride_h, k->dil_h, k->pad_top);
    tile_axis ax = tile_axis_range(0, q->OW, q->W, k->k_w, k->stride_w, k->dil_w, k->pad_left);
    int64_t ih = ay.i1 - ay.i0;
    if (ih < 1)
        return tile_fail(c, "a band whose window lies entirely in the padding");
    tile_work *wk = tile_work_new(c);
    if (!wk)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    int64_t src = b->in[j % slots], dst = b->out[j % slots];
    tile_load(wk, tile_box_chw(xr, xo + ay.i0 * q->W, q->H, q->W, src, q->CI, ih, q->iwe));
    if (j == 0) { /* the weight blocks stay resident */
        tile_load_flat(c, wk, TGT_REGION_CONSTANTS, q->ce.blk_off, b->we, q->ce.blk_bytes);
        tile_load_flat(c, wk, TGT_REGION_CONSTANTS, q->cd.blk_off, b->wd, q->cd.blk_bytes);
        if (q->p)
            tile_load_flat(c, wk, TGT_REGION_CONSTANTS, q->cp.blk_off, b->wp, q->cp.blk_bytes);
    }
    if (q->a)
        tile_load(wk, tile_box_chw(fr, fo + y0 * q->OW, q->OH, q->OW, b->res[j % slots], q->CO, oh, q->OW));
    tile_comp *ce = tile_comp_new(c, wk, TGT_SEM_CONV);
    tile_comp *cd = ce ? tile_comp_new(c, wk, TGT_SEM_DWCONV) : NULL;
    tile_comp *cp = cd && q->p ? tile_comp_new(c, wk, TGT_SEM_CONV) : cd;
    tile_comp *ca = cp && q->a ? tile_comp_new(c, wk, TGT_SEM_ELTWISE) : cp;
    if (!ca)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    ce = &c->comp[wk->first_comp], cd = ce + 1; /* the array may have moved */
    int64_t *v = ce->v; /* the expand: the band's rows with their halo, the columns the depthwise reads */
    conv_fields(v, &q->ce, src, b->mid1, b->we);
    v[TGT_F_IC] = q->CI, v[TGT_F_OC] = q->CE, v[TGT_F_IH] = v[TGT_F_OH] = ih, v[TGT_F_IW] = v[TGT_F_OW] = q->iwe;
    v = cd->v;
    conv_fields(v, &q->cd, b->mid1, q->p ? b->mid2 : dst, b->wd);
    v[TGT_F_C] = q->CE, v[TGT_F_IH] = ih, v[TGT_F_IW] = q->iwe, v[TGT_F_OH] = oh, v[TGT_F_OW] = q->OW;
    v[TGT_F_PT] = ay.p0, v[TGT_F_PB] = ay.p1, v[TGT_F_PL] = ax.p0, v[TGT_F_PR] = ax.p1;
    if (q->p) {
        v = cd[1].v;
        conv_fields(v, &q->cp, b->mid2, dst, b->wp);
        v[TGT_F_IC] = q->CE, v[TGT_F_OC] = q->CO, v[TGT_F_IH] = v[TGT_F_OH] = oh, v[TGT_F_IW] = v[TGT_F_OW] = q->OW;
    }
    if (q->a) { /* in place on the projection's tile */
        v = cd[2].v;
        memcpy(v, elt, sizeof(int64_t) * TGT_F_COUNT);
        v[TGT_F_A] = conv_is_a ? dst : b->res[j % slots], v[TGT_F_B] = conv_is_a ? b->res[j % slots] : dst;
        v[TGT_F_DST] = dst, v[TGT_F_C] = q->CO, v[TGT_F_H] = oh, v[TGT_F_W] = q->OW;
    }
    tile_store(wk, tile_box_chw(zr, zo + y0 * q->OW, q->OH, q->OW, dst, q->CO, oh, q->OW));
    return NPU_OK;
}

npu_status tile_chain(tile_ctx *c, const ir_node *const *nd, int len, bool *done)
{
    *done = false;
    chain q;
    bool ok;
    npu_status st = match(c, nd, len, &q, &ok);
    if (st != NPU_OK || !ok || !choose(c, &q))
        return st;
    *done = true;
    if ((st = tile_conv_info(c, q.e, true, &q.ce)) != NPU_OK || (st = tile_conv_info(c, q.d, true, &q.cd)) != NPU_OK ||
        (q.p && (st = tile_conv_info(c, q.p, true, &q.cp)) != NPU_OK))
        return st;
    int64_t elt[TGT_F_COUNT];
    bool conv_is_a = q.a && q.a->inputs[0] == q.p->outputs[0];
    if (q.a && (st = tile_eltwise_fields(c, q.a, elt)) != NPU_OK)
        return st;
    int slots = q.n_tiles > 1 ? 2 : 1;
    bufs b = {.in = {-1, -1}, .out = {-1, -1}, .res = {-1, -1}};
    tile_sram_req rq[16] = {{q.mid1, &b.mid1}, {q.ce.blk_bytes, &b.we}, {q.cd.blk_bytes, &b.wd}};
    int nr = 3;
    if (q.p) {
        rq[nr++] = (tile_sram_req){q.mid2, &b.mid2};
        rq[nr++] = (tile_sram_req){q.cp.blk_bytes, &b.wp};
    }
    for (int i = 0; i < slots; i++) {
        rq[nr++] = (tile_sram_req){q.in_slot, &b.in[i]};
        rq[nr++] = (tile_sram_req){q.out_slot, &b.out[i]};
        if (q.a)
            rq[nr++] = (tile_sram_req){q.res_slot, &b.res[i]};
    }
    if ((st = tile_sram_place(c, rq, nr, "tiler bug: the cascade's buffers exceed the SRAM")) != NPU_OK)
        return st;
    for (int j = 0; j < q.n_tiles && st == NPU_OK; j++)
        st = emit_band(c, &q, &b, j, elt, conv_is_a);
    return st == NPU_OK ? tile_pipeline(c) : st;
}
