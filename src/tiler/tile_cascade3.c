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
 * cascade against running the convs apart.
 *
 * When the expanded width does not fit (the SRAM, or a channel field: 256
 * on npu-v1-narrow), each band runs over chunks of the expanded channels:
 * expand chunk, depthwise chunk, and the projection accumulating over the
 * chunks in int32 partial sums (acc_out / acc_in). All weight blocks stay
 * resident, laid out in the constants in the order they sit in SRAM and
 * loaded by the first band in the order its computes need them (the first
 * chunk's expand and depthwise blocks, the projection, the other chunks), so
 * the first computes overlap the rest of the transfer.
 *
 * An npu.Lut after the expand or the depthwise conv (SiLU, h-swish) runs in
 * that conv's output stage (epi_lut, as tile_conv_lut does for one conv):
 * its table is loaded once with the first band and stays resident, so the
 * chain of EfficientNet's MBConv (expand, SiLU, depthwise, SiLU) keeps its
 * expansion in SRAM too.
 *
 * Without the expand (a depthwise conv, its projection and the eltwise after
 * it, three nodes) the depthwise conv reads the loaded input rows directly,
 * and its block and the projection's load as one group: the point is the
 * eltwise (vector unit) overlapping the next band's MAC work instead of
 * running after the pair as its own pass.
 *
 * A stem (a dense KxK conv, strided, padded) takes the expand's place: the
 * band's expanded rows with the depthwise halo need block input rows with
 * the stem's own halo, stride and pads (band_of). Before it may come the
 * model input's QuantizeLinear (a prologue, as in tile_conv_pool): each band
 * loads its float32 rows, the vector unit quantizes them into the int8 rows
 * the stem reads (CHAIN). MobileNetV2's stem output (401 KB on 224x224)
 * then never goes to DRAM. The block input rows a band shares with the band
 * before (the halos' overlap) are copied from that band's int8 rows rather
 * than loaded again as float32 (shared_rows). */
#include <string.h>

#include "numerics/numerics.h"
#include "tiler/tile_chain.h"

/* Planes of a prologue whose bands copy their shared rows (an RGB input's three, a few more). */
enum { MAX_SHARED_PLANES = 4 };

static bool is_pointwise(const tile_convinfo *ci)
{
    const nk_qconv2d_params *k = &ci->k;
    return ci->sem == TGT_SEM_CONV && k->n == 1 && k->groups == 1 && k->k_h == 1 && k->k_w == 1 &&
           k->stride_h == 1 && k->stride_w == 1 && !k->pad_top && !k->pad_left && !k->pad_bottom && !k->pad_right;
}

/* The expand: any dense conv of one group (a 1x1, or a stem's strided KxK with its pads). */
static bool is_dense(const tile_convinfo *ci)
{
    return ci->sem == TGT_SEM_CONV && ci->k.n == 1 && ci->k.groups == 1;
}

static bool is_eltwise(ir_op op)
{
    return op == IR_OP_ADD || op == IR_OP_SUB || op == IR_OP_MUL || op == IR_OP_MIN || op == IR_OP_MAX;
}





/* split_pool's block pool (docs/opt.md): an AveragePool whose window is its
 * stride, no padding, tiling the plane; the bands then hold whole blocks
 * (fields_ok), so each band's pool is a plain one and its rows are stored
 * with the band. */
static bool block_pool_ok(const tile_ctx *c, chain *q)
{
    nk_qpool_params k;
    npu_err e;
    if (q->gp->op != IR_OP_AVERAGE_POOL || ref_qpool_params(q->gp, &k, &e) != NPU_OK || k.n != 1 ||
        k.k_h != k.stride_h || k.k_w != k.stride_w || k.pad_top || k.pad_left || k.pad_bottom || k.pad_right ||
        k.h_in % k.k_h || k.w_in % k.k_w || k.h_out != k.h_in / k.k_h || k.w_out != k.w_in / k.k_w)
        return false;
    q->pkh = k.k_h, q->pkw = k.k_w;
    return tile_avgpool_ok((void *)c->t, k.k_h, k.k_w, k.stride_h, k.stride_w);
}

/* A pool on the depthwise output's tiles: the output, which a node after the
 * chain reads too (the excitation's Mul), is still stored. The squeeze's
 * global pool sums each band's channels into int32 partial sums and the last
 * band divides (pool acc_in/acc_out); a block pool pools each band apart.
 * With the prologue the vector unit quantizes band j + 1 before it pools
 * band j (tile_ctx.skew), its hand-overs from the MAC array on a token of
 * their own (CHAIN_VEC, a seventh token). */
static bool gp_ok(const tile_ctx *c, chain *q)
{
    const ir_tensor *x = q->gp->inputs[0], *y = q->gp->outputs[0];
    if (q->gp->n_inputs != 1 || x != dw_out(q) || x->rank != 4 || x->dtype != IR_I8 || y->dtype != IR_I8 ||
        (ir_use_count(c->g, x) < 2 && !(x->flags & IR_TENSOR_OUTPUT)) || tile_tokens(c->t) < (q->pre ? 7 : 5))
        return false;
    if (q->gp->op != IR_OP_GLOBAL_AVERAGE_POOL)
        return block_pool_ok(c, q);
    return tile_pool_acc_ok(c->t, x->dims[2] * x->dims[3]);
}

/* The chain's dimensions and columns; *ok false when its convs do not fit the shape. */
static npu_status shape(chain *q, bool *ok)
{
    const nk_qconv2d_params *kd = &q->cd.k, *ke = &q->ce.k;
    if ((q->e && !is_dense(&q->ce)) || q->cd.sem != TGT_SEM_DWCONV || kd->n != 1 || (q->p && !is_pointwise(&q->cp)))
        return NPU_OK;
    q->H = kd->h_in, q->W = kd->w_in, q->CE = kd->c_in;
    q->CI = q->e ? ke->c_in : q->CE, q->XH = q->e ? ke->h_in : q->H, q->XW = q->e ? ke->w_in : q->W;
    q->OH = kd->h_out, q->OW = kd->w_out, q->CO = q->p ? q->cp.k.c_out : q->CE;
    tile_axis ax = tile_axis_range(0, q->OW, q->W, kd->k_w, kd->stride_w, kd->dil_w, kd->pad_left);
    q->iwe = ax.i1 - ax.i0;
    q->ex = (tile_axis){0, q->iwe, 0, 0};
    if (q->e)
        q->ex = tile_axis_range(0, q->iwe, q->XW, ke->k_w, ke->stride_w, ke->dil_w, ke->pad_left);
    *ok = ax.i0 == 0 && q->iwe >= 1 && q->ex.i1 > q->ex.i0 && (!q->e || (ke->h_out == q->H && ke->w_out == q->W));
    return NPU_OK;
}

/* The structure of nd[0..len) as a chain; the conv parameters filled in.
 * A QuantizeLinear first (the model input's, only the expand reading it) is
 * the prologue: each band loads float32 rows and the vector unit quantizes
 * them into the slot the expand reads. */
static npu_status match(tile_ctx *c, const ir_node *const *nd, int len, chain *q, bool *ok)
{
    *ok = false;
    memset(q, 0, sizeof *q);
    if (len >= 3 && nd[0]->op == IR_OP_QUANTIZE_LINEAR) {
        if (!tile_conv_pre_ok(c, nd[0], nd[1]) || ir_attr_int(nd[1], "group", 1) != 1)
            return NPU_OK;
        q->pre = nd[0], nd++, len--;
    }
    if (len < 2 || len > 6 || nd[0]->op != IR_OP_CONV || nd[0]->n_inputs < 2 || nd[0]->inputs[1]->rank != 4)
        return NPU_OK;
    bool expand = ir_attr_int(nd[0], "group", 1) == 1;
    int k = 0;
    q->e = expand ? nd[k++] : NULL;
    if (q->e && k < len && tile_conv_lut_ok(c, q->e, nd[k]))
        q->le = nd[k++];
    q->d = k < len ? nd[k++] : NULL;
    if (q->d && k < len && tile_conv_lut_ok(c, q->d, nd[k]))
        q->ld = nd[k++];
    if (k < len && (nd[k]->op == IR_OP_GLOBAL_AVERAGE_POOL || nd[k]->op == IR_OP_AVERAGE_POOL))
        q->gp = nd[k++];
    q->p = k < len && !q->gp ? nd[k++] : NULL;
    q->a = k < len && !q->gp ? nd[k++] : NULL;
    /* without the expand (the first conv is grouped) only depthwise, projection, eltwise, or the depthwise and
     * its squeeze's pool: the pair alone is tile_dw_pw's */
    if (k != len || !q->d || (!expand && !q->gp && (!q->p || !q->a)) || (q->gp && !gp_ok(c, q)))
        return NPU_OK;
    if (q->d->op != IR_OP_CONV || (q->p && q->p->op != IR_OP_CONV) ||
        (q->a && (!is_eltwise(q->a->op) || q->a->n_inputs != 2 || q->a->n_outputs != 1)))
        return NPU_OK;
    if (chain_input(q)->rank != 4 ||
        (q->e && (q->d->inputs[0] != expand_out(q) || !tile_only_reader(c, expand_out(q), q->d))))
        return NPU_OK;
    if (q->p && (q->p->inputs[0] != dw_out(q) || q->p->n_inputs < 2 || q->p->inputs[1]->rank != 4 ||
                 !tile_only_reader(c, dw_out(q), q->p)))
        return NPU_OK;
    if (q->a) {
        const ir_tensor *y = q->p->outputs[0], *z = q->a->outputs[0];
        if ((q->a->inputs[0] == y) == (q->a->inputs[1] == y) || !tile_only_reader(c, y, q->a))
            return NPU_OK;
        const ir_tensor *o = other_operand(q);
        q->epi = tile_epi_elt_ok(c);
        if (!ir_shape_equal(o, z) || !ir_shape_equal(y, z) || !o->quant || o->quant->count != 1 ||
            o->dtype != IR_I8 || (!q->epi && (tile_tokens(c->t) < 5 || tile_insn(c, TGT_SEM_ELTWISE) < 0)))
            return NPU_OK;
    }
    npu_status st = q->e ? tile_conv_info(c, q->e, false, &q->ce) : NPU_OK;
    if (st == NPU_OK)
        st = tile_conv_info(c, q->d, false, &q->cd);
    if (st == NPU_OK && q->p)
        st = tile_conv_info(c, q->p, false, &q->cp);
    if (st != NPU_OK)
        return st;
    /* with a prologue the vector unit quantizes: an eltwise there too would need CHAIN_VEC and skew */
    if ((q->pre && q->a) || (st = shape(q, ok)) != NPU_OK || !*ok)
        return st;
    /* a band's shared rows cost a copy and a quantize per plane, not one quantize: few planes; skewed
     * (a pool on the tiles) a work has one prologue compute */
    q->reuse = q->pre && !q->gp && q->CI <= MAX_SHARED_PLANES && q->pre->outputs[0]->dtype == IR_I8 &&
               tile_fmax(c, TGT_SEM_REQUANT, TGT_F_COPY) >= 1;
    return NPU_OK;
}

/* Expanded rows and block input rows of a band of oht rows (the tallest). */
static void band_rows(const chain *q, int64_t oht, int64_t *ih, int64_t *eih)
{
    const nk_qconv2d_params *k = &q->cd.k, *ke = &q->ce.k;
    *ih = tile_min(q->H, tile_span(oht, k->k_h, k->stride_h, k->dil_h));
    *eih = q->e ? tile_min(q->XH, tile_span(*ih, ke->k_h, ke->stride_h, ke->dil_h)) : *ih;
}

/* The window of the pool on a band of oht rows: a block pool's blocks, or the global pool's whole band. */
static void pool_window(const chain *q, int64_t oht, int64_t *kh, int64_t *kw)
{
    *kh = q->pkh ? q->pkh : oht, *kw = q->pkw ? q->pkw : q->OW;
}

/* The store of a block pool's rows for a band of rows rows (none for the global pool). */
static int64_t pool_store_time(const tile_ctx *c, const chain *q, int64_t rows)
{
    return q->pkh ? tile_dma_time(c, q->CE, rows / q->pkh, q->OW / q->pkw, q->OW / q->pkw) : 0;
}

/* Do the fields of every instruction take a band of oht rows in chunks of ec? */
static bool fields_ok(const tile_ctx *c, const chain *q, int64_t ec, int64_t oht)
{
    int64_t ih, eih, eiw = q->ex.i1 - q->ex.i0;
    band_rows(q, oht, &ih, &eih);
    tgt_sem cv = TGT_SEM_CONV, dw = TGT_SEM_DWCONV;
    bool ok = (!q->e || (q->CI <= tile_fmax(c, cv, TGT_F_IC) && ec <= tile_fmax(c, cv, TGT_F_OC) &&
                         eih <= tile_fmax(c, cv, TGT_F_IH) && ih <= tile_fmax(c, cv, TGT_F_OH) &&
                         eiw <= tile_fmax(c, cv, TGT_F_IW) && q->iwe <= tile_fmax(c, cv, TGT_F_OW))) &&
              ec <= tile_fmax(c, dw, TGT_F_C) && ih <= tile_fmax(c, dw, TGT_F_IH) &&
              q->iwe <= tile_fmax(c, dw, TGT_F_IW) && oht <= tile_fmax(c, dw, TGT_F_OH) &&
              q->OW <= tile_fmax(c, dw, TGT_F_OW);
    if (ok && q->p)
        ok = ec <= tile_fmax(c, cv, TGT_F_IC) && q->CO <= tile_fmax(c, cv, TGT_F_OC) &&
             oht <= tile_fmax(c, cv, TGT_F_IH) && q->OW <= tile_fmax(c, cv, TGT_F_IW);
    if (ok && q->a) {
        tgt_sem el = TGT_SEM_ELTWISE;
        ok = q->CO <= tile_fmax(c, el, TGT_F_C) && oht <= tile_fmax(c, el, TGT_F_H) &&
             q->OW <= tile_fmax(c, el, TGT_F_W);
    }
    if (ok && q->pre)
        ok = q->CI * eih * eiw <= tile_fmax(c, TGT_SEM_QUANTIZE, TGT_F_LEN);
    if (ok && q->gp) { /* a block pool's bands hold whole blocks */
        tgt_sem po = TGT_SEM_POOL;
        int64_t kh, kw;
        pool_window(q, oht, &kh, &kw);
        ok = ec <= tile_fmax(c, po, TGT_F_C) && oht <= tile_fmax(c, po, TGT_F_IH) &&
             kh <= tile_fmax(c, po, TGT_F_KH) && q->OW <= tile_fmax(c, po, TGT_F_IW) &&
             kw <= tile_fmax(c, po, TGT_F_KW) && oht % kh == 0 && oht / kh <= tile_fmax(c, po, TGT_F_OH) &&
             q->OW / kw <= tile_fmax(c, po, TGT_F_OW);
    }
    return ok;
}


/* The weight blocks for chunks of ec: their total bytes (q->wbytes); q->cp
 * becomes the projection's chunked block. */
static npu_status weights_for(tile_ctx *c, chain *q, int64_t ec)
{
    q->ec = ec;
    q->n_chunks = tile_cdiv(q->CE, ec);
    q->wbytes = 0;
    tile_convinfo b;
    for (int64_t k = 0; k < q->n_chunks; k++) {
        if (k > 0 && k < q->n_chunks - 1) { /* the middle chunks are the size of the first */
            q->wbytes += q->wbytes / k;
            continue;
        }
        npu_status st = q->e ? tile_conv_block(c, q->e, k * ec, chunk_ch(q, k), 0, false, &b) : NPU_OK;
        int64_t e = q->e ? b.blk_bytes : 0;
        if (st == NPU_OK)
            st = tile_conv_block(c, q->d, k * ec, chunk_ch(q, k), 0, false, &b);
        if (st != NPU_OK)
            return st;
        q->wbytes += e + b.blk_bytes;
        if (k == 0)
            q->wfirst = q->wbytes, q->wexp = e;
    }
    if (q->p) {
        npu_status st = tile_conv_block(c, q->p, 0, 0, ec, false, &q->cp);
        if (st != NPU_OK)
            return st;
        q->wbytes += q->cp.blk_bytes;
    }
    q->wbytes += q->epi ? TGT_ETAB_BYTES : 0; /* the epilogue's block, after every weight block */
    return NPU_OK;
}


static int n_tables(const chain *q)
{
    return (q->le ? 1 : 0) + (q->ld ? 1 : 0);
}

static int n_buffers(const chain *q)
{
    return 5 + n_tables(q) + (q->gp && !q->pkh ? 2 : 0) + q->slots * (2 + (q->a ? 1 : 0) + (q->pkh ? 1 : 0));
}

/* The SRAM a plan sized with q->slots slots takes. */
static int64_t total_bytes(const chain *q)
{
    return 16 * n_buffers(q) + n_tables(q) * TILE_EPI_TABLE_BYTES + q->mid1 + q->mid2 + q->psum + q->wbytes +
           (q->gp && !q->pkh ? 5 * q->CE : 0) + q->slots * (q->in_slot + q->out_slot + q->res_slot + q->pool_slot);
}

/* Sizes of a plan of oht rows per band; false when they do not fit the SRAM. */
static bool sizes(const tile_ctx *c, chain *q, int64_t oht)
{
    q->oht = q->first = oht;
    band_rows(q, oht, &q->ih, &q->eih);
    q->n_tiles = (int)tile_cdiv(q->OH, oht);
    q->in_slot = q->CI * q->eih * (q->ex.i1 - q->ex.i0);
    q->in_f = 0;
    if (q->pre) /* the int8 rows, then the float32 ones */
        q->in_f = (q->in_slot + 15) & ~(int64_t)15, q->in_slot = q->in_f + 4 * q->in_slot;
    q->mid1 = q->e ? q->ec * q->ih * q->iwe : 0; /* without expand the depthwise reads the input slot */
    q->mid2 = q->p ? q->ec * oht * q->OW : 0;
    q->out_slot = q->CO * oht * q->OW;
    q->res_slot = q->a ? q->out_slot : 0;
    q->psum = q->p && q->n_chunks > 1 ? 4 * q->out_slot : 0;
    q->pool_slot = q->pkh ? q->CE * (oht / q->pkh) * (q->OW / q->pkw) : 0;
    /* with the squeeze's pool a band's output slot stays busy through its pools and store, and with a
     * prologue band j + 2's float32 load, behind store j, would hold up its quantize and the MAC array:
     * a third slot, where it fits, lets band j + 3's loads wait for store j, not band j + 2's */
    q->slots = 3;
    if ((q->gp || q->pre) && q->n_tiles > 2 && total_bytes(q) <= c->t->p[TGT_P_SRAM_BYTES])
        return true;
    q->slots = q->n_tiles > 1 ? 2 : 1;
    return total_bytes(q) <= c->t->p[TGT_P_SRAM_BYTES];
}

/* MAC cycles of one band's chunk of ec channels; *proj: the projection's part. */
static int64_t chunk_mac(const tile_ctx *c, const chain *q, int64_t ec, int64_t *proj)
{
    const nk_qconv2d_params *k = &q->cd.k;
    const nk_qconv2d_params *ke = &q->ce.k;
    int64_t ex[] = {TGT_F_IC, q->CI, TGT_F_OC, ec, TGT_F_KH, ke->k_h, TGT_F_KW, ke->k_w, TGT_F_OH, q->ih,
                    TGT_F_OW, q->iwe, TGT_F_W4, q->ce.w4};
    int64_t dw[] = {TGT_F_C, ec, TGT_F_KH, k->k_h, TGT_F_KW, k->k_w, TGT_F_OH, q->oht, TGT_F_OW, q->OW};
    int64_t pw[] = {TGT_F_IC, ec, TGT_F_OC, q->CO, TGT_F_KH, 1, TGT_F_KW, 1, TGT_F_OH, q->oht,
                    TGT_F_OW, q->OW, TGT_F_W4, q->cp.w4};
    int64_t p = q->p ? tile_timing(c, TGT_SEM_CONV, pw, 7) : 0;
    if (proj)
        *proj = p;
    return (q->e ? tile_timing(c, TGT_SEM_CONV, ex, 7) : 0) + tile_timing(c, TGT_SEM_DWCONV, dw, 5) + p;
}

/* The pool's vector cycles on one band of oht rows, every chunk. */
static int64_t pool_band(const tile_ctx *c, const chain *q)
{
    if (!q->gp)
        return 0;
    int64_t kh, kw;
    pool_window(q, q->oht, &kh, &kw);
    int64_t full[] = {TGT_F_C, q->ec, TGT_F_IH, q->oht, TGT_F_KH, kh, TGT_F_IW, q->OW, TGT_F_KW, kw,
                      TGT_F_OH, q->oht / kh, TGT_F_OW, q->OW / kw};
    int64_t last[] = {TGT_F_C, chunk_ch(q, q->n_chunks - 1), TGT_F_IH, q->oht, TGT_F_KH, kh, TGT_F_IW, q->OW,
                      TGT_F_KW, kw, TGT_F_OH, q->oht / kh, TGT_F_OW, q->OW / kw};
    return (q->n_chunks - 1) * tile_timing(c, TGT_SEM_POOL, full, 7) + tile_timing(c, TGT_SEM_POOL, last, 7);
}

/* Vector cycles of a band's prologue: one quantize of its eh rows, or per
 * plane a copy of the ov rows it shares and a quantize of the others. */
static int64_t prologue_time(const tile_ctx *c, const chain *q, int64_t eh, int64_t ov)
{
    int64_t eiw = q->ex.i1 - q->ex.i0, all[] = {TGT_F_LEN, q->CI * eh * eiw};
    int64_t copy[] = {TGT_F_LEN, ov * eiw, TGT_F_COPY, 1}, rest[] = {TGT_F_LEN, (eh - ov) * eiw};
    if (!ov)
        return tile_timing(c, TGT_SEM_QUANTIZE, all, 1);
    return q->CI * (tile_timing(c, TGT_SEM_REQUANT, copy, 2) + tile_timing(c, TGT_SEM_QUANTIZE, rest, 1));
}

/* Cycles of a plan with the quantize prologue: the bands through the load,
 * vector, MAC and store queues (band j+2 loads after store j), the float32
 * loads and the stores sharing the DRAM bus; every weight block loads with
 * the first band (one load group: the quantize, the first compute, waits for
 * it, so that LOADED keeps one consumer queue). A pool on the tiles runs on
 * the vector unit after the band's MAC work, its rows stored with the band
 * (taken in series with the next quantize: the skew only helps). */
static int64_t cost_pre(const tile_ctx *c, const chain *q)
{
    int64_t mac = (q->n_chunks - 1) * chunk_mac(c, q, q->ec, NULL) + chunk_mac(c, q, chunk_ch(q, q->n_chunks - 1), NULL);
    int64_t lat = c->t->p[TGT_P_DRAM_LATENCY], eiw = q->ex.i1 - q->ex.i0, wt = tile_dma_time(c, 1, 1, q->wbytes, 0);
    int64_t le = 0, ve = 0, me = 0, se = 0, bus = wt - lat, free_at[3] = {0, 0, 0}, pb = pool_band(c, q);
    for (int64_t j = 0; j < q->n_tiles; j++) {
        band b = band_of(q, j);
        int64_t eh = b.ey.i1 - b.ey.i0, ov = shared_rows(q, j), rows = b.y1 - b.y0;
        int64_t ld = tile_dma_time(c, q->CI, eh - ov, 4 * eiw, 4 * q->XW);
        int64_t st = tile_dma_time(c, q->CO, rows, q->OW, q->OW) + pool_store_time(c, q, rows);
        le = (le > free_at[j % q->slots] ? le : free_at[j % q->slots]) + ld + (j ? 0 : wt);
        ve = (ve > le ? ve : le) + prologue_time(c, q, eh, ov);
        me = (me > ve ? me : ve) + mac * rows / q->oht; /* a last band of fewer rows, fewer MACs */
        if (pb)
            ve = (ve > me ? ve : me) + pb;
        int64_t done = pb ? ve : me; /* the band's last compute, which its store waits for */
        se = (se > done ? se : done) + st;
        free_at[j % q->slots] = se;
        bus += ld + st - 2 * lat;
    }
    return se > bus + lat ? se : bus + lat;
}

/* Cycles of a plan: the MAC array's timeline, whose first band waits for
 * its load groups (the first chunk's expand and depthwise blocks with the
 * input, the projection, the other chunks), or the busiest DMA queue, plus
 * the last store that nothing hides. in_place: the SRAM-resident operands
 * read and written where they are, without DMA (a plan of whole planes). */
static int64_t cost(const tile_ctx *c, const chain *q, bool in_place)
{
    int64_t pw = 0, c0 = chunk_mac(c, q, q->ec, &pw); /* pw: the projection part of a chunk */
    int64_t mac = (q->n_chunks - 1) * c0 + chunk_mac(c, q, chunk_ch(q, q->n_chunks - 1), NULL);
    const ir_tensor *z = q->a ? q->a->outputs[0] : q->p ? q->p->outputs[0] : dw_out(q);
    bool in_res = in_place && tile_tensor_resident(c, chain_input(q)), out_res = in_place && tile_tensor_resident(c, z);
    bool res_res = in_place && q->a && tile_tensor_resident(c, other_operand(q));
    int64_t ld = in_res ? 0 : tile_dma_time(c, q->CI, q->eih, q->ex.i1 - q->ex.i0, q->XW);
    /* a short first band: its input loads sooner, its MACs scale with its expanded rows */
    band b0 = band_of(q, 0);
    int64_t e0 = b0.ey.i1 - b0.ey.i0, ld0 = in_res ? 0 : tile_dma_time(c, q->CI, e0, q->ex.i1 - q->ex.i0, q->XW);
    int64_t mac0 = mac * (b0.ay.i1 - b0.ay.i0) / q->ih, c00 = c0 * (b0.ay.i1 - b0.ay.i0) / q->ih;
    int64_t pw0 = pw * (b0.y1 - b0.y0) / q->oht;
    int64_t out = tile_dma_time(c, q->CO, q->oht, q->OW, q->OW);
    int64_t st = (out_res ? 0 : out) + pool_store_time(c, q, q->oht);
    int64_t res = q->a && !res_res ? out : 0, wp = q->p ? q->cp.blk_bytes : 0; /* the projection's block */
    int64_t t_proj = ld0 + tile_dma_time(c, 1, 1, q->wfirst + wp, 0);
    int64_t t_first = q->e ? ld0 + tile_dma_time(c, 1, 1, q->wfirst, 0) : t_proj; /* one group without expand */
    int64_t t_all = ld0 + tile_dma_time(c, 1, 1, q->wbytes, 0);
    /* the first chunk: expand and depthwise, then the projection once its block is in */
    int64_t t = t_first + (q->n_chunks > 1 ? c00 : mac0) - pw0;
    t = (t > t_proj ? t : t_proj) + pw0;
    if (q->n_chunks > 1) /* the other chunks once every block is in, then the other bands */
        t = (t > t_all ? t : t_all) + mac0 - c00;
    /* the second band's input loads after every weight block: a short first band leaves it exposed */
    int64_t t_second = t_all + ld;
    if (q->n_tiles > 1)
        t = t > t_second ? t : t_second;
    for (int64_t j = 1; j < q->n_tiles; j++) { /* each later band's MACs by its expanded rows (the last: fewer) */
        band bj = band_of(q, j);
        t += mac * (bj.ay.i1 - bj.ay.i0) / q->ih;
    }
    /* the squeeze's pools: band j's beside the MAC work of band j + 1, the last one's after it */
    int64_t pb = pool_band(c, q);
    t = (t > q->n_tiles * pb ? t : q->n_tiles * pb) + pb;
    int64_t dma = q->n_tiles * (ld + res) + (t_all - ld0);
    t = t > dma ? t : dma;
    t = t > q->n_tiles * st ? t : q->n_tiles * st;
    return t + st;
}

/* For each chunk width (all the channels, then halving in multiples of
 * mac.cols), the largest fitting band and halvings of it, by the cost
 * above; q is left with the best plan. */
static npu_status choose_once(tile_ctx *c, chain *q, bool whole, bool *found)
{
    *found = false;
    int64_t cols = c->t->p[TGT_P_MAC_COLS], best_ec = 0, best = 0, best_cost = INT64_MAX;
    int64_t ec = q->CE;
    while (ec > cols && !fields_ok(c, q, ec, 1))
        ec = ((ec / 2 + cols - 1) / cols) * cols;
    for (int n = 0; ec >= 1 && n < 6; n++) {
        npu_status st = weights_for(c, q, ec);
        if (st != NPU_OK)
            return st;
        int64_t hi = q->OH;
        while (hi > 0 && !(fields_ok(c, q, ec, hi) && sizes(c, q, hi)))
            hi = hi > 8 ? hi - hi / 8 : hi - 1;
        /* with a prologue (DMA-bound bands) also a few rows fewer than the largest: a short last band
         * leaves less MAC work after the last load */
        for (int64_t r = hi, k = 0; r >= 1 && k < (q->pre ? 10 : 6);
             r = q->pre && r > hi - 4 && r > 1 ? r - 1 : tile_cdiv(r, 2), k++) {
            if (whole && r != q->OH && !tile_plane_strides(c))
                break; /* SRAM-resident operands are read in place as whole planes (or bands, planes apart) */
            if (fields_ok(c, q, ec, r) && sizes(c, q, r)) {
                int64_t cst = q->pre ? cost_pre(c, q) : cost(c, q, whole);
                if (cst < best_cost)
                    best_ec = ec, best = r, best_cost = cst;
            }
            if (r == 1)
                break;
        }
        if (ec <= cols)
            break;
        ec = ((ec / 2 + cols - 1) / cols) * cols;
    }
    if (best == 0)
        return NPU_OK;
    int64_t best_first = best;
    if (!q->pre && best < q->OH) { /* a short first band: the rest of the plan as chosen */
        npu_status st = weights_for(c, q, best_ec);
        if (st != NPU_OK || !sizes(c, q, best))
            return st;
        for (int64_t f = best / 2; f >= 1; f /= 2) {
            if (q->pkh && f % q->pkh)
                continue;
            q->first = f, q->n_tiles = (int)(1 + tile_cdiv(q->OH - f, best));
            int64_t cst = cost(c, q, whole);
            if (cst < best_cost)
                best_first = f, best_cost = cst;
        }
    }
    /* deciding, the convs apart (their best plans, each through DRAM) must not be cheaper; without the
     * expand tile_cascades weighs the chain against the depthwise + 1x1 pair and the eltwise apart. A chain
     * the plan was made for lowers whatever its cost on the plan's resident operands (the planner's trials
     * weigh it against the convs apart). */
    if (q->e && !q->pre && c->deciding) { /* with a prologue tile_cascades weighs it (quant_pre_pays) */
        int64_t a1 = tile_conv_estimate(c, q->e, false), a2 = tile_conv_estimate(c, q->d, false);
        int64_t a3 = q->p ? tile_conv_estimate(c, q->p, false) : q->gp ? tile_pool_estimate(c, q->gp, false) : 0;
        if (a1 < INT64_MAX / 4 && a2 < INT64_MAX / 4 && a3 < INT64_MAX / 4 && best_cost >= a1 + a2 + a3)
            return NPU_OK;
    }
    npu_status st = weights_for(c, q, best_ec);
    *found = st == NPU_OK && sizes(c, q, best);
    if (*found && best_first < best)
        q->first = best_first, q->n_tiles = (int)(1 + tile_cdiv(q->OH - best_first, best));
    return st;
}

/* Whole planes (one band) first where an operand is SRAM-resident, so that
 * it is read in place; else any band (it then goes back to DRAM). Bands win
 * where their schedule, every operand through DMA, beats the whole planes
 * in place by 5% (the estimate's margin: zoo MobileNetV2's block 5 on
 * edge-v1 ran 4K cycles slower on bands that won by less): one band stores
 * its whole output after its last compute (EfficientNet-B0's block 3.1
 * chain on edge-v1: 23,620 cycles of store after it, its 31 KB input
 * resident; 11,860 on two bands), and the memory planner's trial then sends
 * the resident operand back to DRAM. */
static npu_status choose(tile_ctx *c, chain *q, bool *found)
{
    bool whole = (q->e && tile_resident_io(c, q->e)) || tile_resident_io(c, q->d) || (q->p && tile_resident_io(c, q->p)) ||
                 (q->a && tile_resident_io(c, q->a)) || (q->ld && tile_resident_io(c, q->ld)) ||
                 (q->gp && tile_resident_io(c, q->gp));
    *found = false;
    npu_status st = whole ? choose_once(c, q, true, found) : NPU_OK;
    if (st != NPU_OK || (*found && (q->pre || tile_plane_strides(c))))
        return st; /* with plane strides the bands in place were among its plans */
    chain in_place = *q;
    bool banded = false;
    st = choose_once(c, q, false, &banded);
    if (st == NPU_OK && *found && (!banded || cost(c, &in_place, true) * 19 <= cost(c, q, false) * 20))
        *q = in_place;
    *found |= banded;
    return st;
}

npu_status tile_chain_plan(tile_ctx *c, const ir_node *const *nd, int len, chain *q, bool *ok)
{
    npu_status st = match(c, nd, len, q, ok);
    if (st == NPU_OK && *ok)
        st = choose(c, q, ok);
    return st;
}
