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
 * Without the expand (a depthwise conv, its projection and the eltwise after
 * it, three nodes) the depthwise conv reads the loaded input rows directly,
 * and its block and the projection's load as one group: the point is the
 * eltwise (vector unit) overlapping the next band's MAC work instead of
 * running after the pair as its own pass. */
#include <string.h>

#include "tiler/tile_internal.h"

typedef struct chain {
    const ir_node *e, *d, *p, *a; /* expand or NULL, depthwise, projection or NULL, eltwise or NULL */
    tile_convinfo ce, cd, cp;
    int64_t CI, H, W, CE, OH, OW, CO; /* CO: channels stored (the projection's, or CE); CI == CE without expand */
    int64_t iwe;                      /* columns of the expand the depthwise reads */
    int64_t ec, n_chunks;             /* expanded channels per chunk (the last may be fewer), chunks */
    int64_t wbytes;                   /* every weight block, resident (build_weights has their order) */
    int64_t wfirst;                   /* of them, the first chunk's expand and depthwise blocks */
    int64_t oht, ih;                  /* rows per band, expanded rows of the tallest band */
    int n_tiles;
    int64_t in_slot, mid1, mid2, out_slot, res_slot, psum;
    bool epi; /* the eltwise runs in the last projection's output stage (epi_elt), not on the vector unit */
} chain;

static bool is_pointwise(const tile_convinfo *ci)
{
    const nk_qconv2d_params *k = &ci->k;
    return ci->sem == TGT_SEM_CONV && k->n == 1 && k->groups == 1 && k->k_h == 1 && k->k_w == 1 &&
           k->stride_h == 1 && k->stride_w == 1 && !k->pad_top && !k->pad_left && !k->pad_bottom && !k->pad_right;
}

bool tile_only_reader(const tile_ctx *c, const ir_tensor *y, const ir_node *m)
{
    bool reads = false;
    for (int j = 0; j < m->n_inputs; j++)
        reads |= m->inputs[j] == y;
    for (int i = 0; i < c->g->n_outputs; i++)
        reads &= c->g->outputs[i] != y;
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

/* The block's input: the expand's, or the depthwise conv's without one. */
static const ir_tensor *chain_input(const chain *q)
{
    return (q->e ? q->e : q->d)->inputs[0];
}

/* The structure of nd[0..len) as a chain; the conv parameters filled in. */
static npu_status match(tile_ctx *c, const ir_node *const *nd, int len, chain *q, bool *ok)
{
    *ok = false;
    memset(q, 0, sizeof *q);
    if (len < 2 || len > 4 || nd[0]->op != IR_OP_CONV || nd[0]->n_inputs < 2 || nd[0]->inputs[1]->rank != 4)
        return NPU_OK;
    /* without the expand (the first conv is grouped) only depthwise, projection, eltwise: the pair alone is
     * tile_dw_pw's */
    bool expand = ir_attr_int(nd[0], "group", 1) == 1;
    if (!expand && len != 3)
        return NPU_OK;
    int k = expand ? 1 : 0;
    q->e = expand ? nd[0] : NULL, q->d = nd[k], q->p = len > k + 1 ? nd[k + 1] : NULL;
    q->a = len > k + 2 ? nd[k + 2] : NULL;
    if (q->d->op != IR_OP_CONV || (q->p && q->p->op != IR_OP_CONV) ||
        (q->a && (!is_eltwise(q->a->op) || q->a->n_inputs != 2 || q->a->n_outputs != 1)))
        return NPU_OK;
    if (chain_input(q)->rank != 4 ||
        (q->e && (q->d->inputs[0] != q->e->outputs[0] || !tile_only_reader(c, q->e->outputs[0], q->d))))
        return NPU_OK;
    if (q->p && (q->p->inputs[0] != q->d->outputs[0] || q->p->n_inputs < 2 || q->p->inputs[1]->rank != 4 ||
                 !tile_only_reader(c, q->d->outputs[0], q->p)))
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
    const nk_qconv2d_params *kd = &q->cd.k;
    if ((q->e && !is_pointwise(&q->ce)) || q->cd.sem != TGT_SEM_DWCONV || kd->n != 1 ||
        (q->p && !is_pointwise(&q->cp)))
        return NPU_OK;
    q->CI = q->e ? q->ce.k.c_in : kd->c_in, q->H = kd->h_in, q->W = kd->w_in, q->CE = kd->c_in;
    q->OH = kd->h_out, q->OW = kd->w_out, q->CO = q->p ? q->cp.k.c_out : q->CE;
    tile_axis ax = tile_axis_range(0, q->OW, q->W, kd->k_w, kd->stride_w, kd->dil_w, kd->pad_left);
    q->iwe = ax.i1 - ax.i0;
    *ok = ax.i0 == 0 && q->iwe >= 1;
    return NPU_OK;
}

/* Do the fields of every instruction take a band of oht rows in chunks of ec? */
static bool fields_ok(const tile_ctx *c, const chain *q, int64_t ec, int64_t oht)
{
    const nk_qconv2d_params *k = &q->cd.k;
    int64_t ih = tile_min(q->H, tile_span(oht, k->k_h, k->stride_h, k->dil_h));
    tgt_sem cv = TGT_SEM_CONV, dw = TGT_SEM_DWCONV;
    bool ok = (!q->e || (q->CI <= tile_fmax(c, cv, TGT_F_IC) && ec <= tile_fmax(c, cv, TGT_F_OC) &&
                         ih <= tile_fmax(c, cv, TGT_F_IH) && ih <= tile_fmax(c, cv, TGT_F_OH) &&
                         q->iwe <= tile_fmax(c, cv, TGT_F_IW) && q->iwe <= tile_fmax(c, cv, TGT_F_OW))) &&
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
    return ok;
}

/* Channels of chunk k. */
static int64_t chunk_ch(const chain *q, int64_t k)
{
    return tile_min(q->ec, q->CE - k * q->ec);
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
            q->wfirst = q->wbytes;
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

static int n_buffers(const chain *q)
{
    int slots = q->n_tiles > 1 ? 2 : 1;
    return 5 + slots * (2 + (q->a ? 1 : 0));
}

/* Sizes of a plan of oht rows per band; false when they do not fit the SRAM. */
static bool sizes(const tile_ctx *c, chain *q, int64_t oht)
{
    const nk_qconv2d_params *k = &q->cd.k;
    q->oht = oht;
    q->ih = tile_min(q->H, tile_span(oht, k->k_h, k->stride_h, k->dil_h));
    q->n_tiles = (int)tile_cdiv(q->OH, oht);
    q->in_slot = q->CI * q->ih * q->iwe;
    q->mid1 = q->e ? q->ec * q->ih * q->iwe : 0; /* without expand the depthwise reads the input slot */
    q->mid2 = q->p ? q->ec * oht * q->OW : 0;
    q->out_slot = q->CO * oht * q->OW;
    q->res_slot = q->a ? q->out_slot : 0;
    q->psum = q->p && q->n_chunks > 1 ? 4 * q->out_slot : 0;
    int slots = q->n_tiles > 1 ? 2 : 1;
    int64_t total = 16 * n_buffers(q) + q->mid1 + q->mid2 + q->psum + q->wbytes +
                    slots * (q->in_slot + q->out_slot + q->res_slot);
    return total <= c->t->p[TGT_P_SRAM_BYTES];
}

int64_t tile_timing(const tile_ctx *c, tgt_sem sem, const int64_t *set, int n)
{
    int64_t v[TGT_F_COUNT], cyc = 0;
    int i = tile_insn(c, sem);
    npu_err e;
    tgt_defaults(c->t->isa, i, v);
    for (int k = 0; k < n; k++)
        v[set[2 * k]] = set[2 * k + 1];
    return tgt_timing(c->t, i, v, &cyc, &e) == NPU_OK ? cyc : INT64_MAX / 16;
}

int64_t tile_dma_time(const tile_ctx *c, int64_t ch, int64_t h, int64_t w, int64_t dram_hs)
{
    int64_t set[] = {TGT_F_C, ch, TGT_F_H, h, TGT_F_W, w, TGT_F_DRAM_HS, dram_hs, TGT_F_SRAM_HS, w};
    return tile_timing(c, TGT_SEM_DMA_LOAD, set, 5);
}

/* MAC cycles of one band's chunk of ec channels; *proj: the projection's part. */
static int64_t chunk_mac(const tile_ctx *c, const chain *q, int64_t ec, int64_t *proj)
{
    const nk_qconv2d_params *k = &q->cd.k;
    int64_t ex[] = {TGT_F_IC, q->CI, TGT_F_OC, ec, TGT_F_KH, 1, TGT_F_KW, 1, TGT_F_OH, q->ih,
                    TGT_F_OW, q->iwe, TGT_F_W4, q->ce.w4};
    int64_t dw[] = {TGT_F_C, ec, TGT_F_KH, k->k_h, TGT_F_KW, k->k_w, TGT_F_OH, q->oht, TGT_F_OW, q->OW};
    int64_t pw[] = {TGT_F_IC, ec, TGT_F_OC, q->CO, TGT_F_KH, 1, TGT_F_KW, 1, TGT_F_OH, q->oht,
                    TGT_F_OW, q->OW, TGT_F_W4, q->cp.w4};
    int64_t p = q->p ? tile_timing(c, TGT_SEM_CONV, pw, 7) : 0;
    if (proj)
        *proj = p;
    return (q->e ? tile_timing(c, TGT_SEM_CONV, ex, 7) : 0) + tile_timing(c, TGT_SEM_DWCONV, dw, 5) + p;
}

/* Cycles of a plan: the MAC array's timeline, whose first band waits for
 * its load groups (the first chunk's expand and depthwise blocks with the
 * input, the projection, the other chunks), or the busiest DMA queue, plus
 * the last store that nothing hides. */
static int64_t cost(const tile_ctx *c, const chain *q)
{
    int64_t pw = 0, c0 = chunk_mac(c, q, q->ec, &pw); /* pw: the projection part of a chunk */
    int64_t mac = (q->n_chunks - 1) * c0 + chunk_mac(c, q, chunk_ch(q, q->n_chunks - 1), NULL);
    int64_t ld = tile_dma_time(c, q->CI, q->ih, q->iwe, q->W), st = tile_dma_time(c, q->CO, q->oht, q->OW, q->OW);
    int64_t res = q->a ? st : 0, wp = q->p ? q->cp.blk_bytes : 0; /* the projection's block */
    int64_t t_proj = ld + tile_dma_time(c, 1, 1, q->wfirst + wp, 0);
    int64_t t_first = q->e ? ld + tile_dma_time(c, 1, 1, q->wfirst, 0) : t_proj; /* one group without expand */
    int64_t t_all = ld + tile_dma_time(c, 1, 1, q->wbytes, 0);
    /* the first chunk: expand and depthwise, then the projection once its block is in */
    int64_t t = t_first + (q->n_chunks > 1 ? c0 : mac) - pw;
    t = (t > t_proj ? t : t_proj) + pw;
    if (q->n_chunks > 1) /* the other chunks once every block is in, then the other bands */
        t = (t > t_all ? t : t_all) + mac - c0;
    t += (q->n_tiles - 1) * mac;
    int64_t dma = q->n_tiles * (ld + res) + (t_all - ld);
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
        for (int64_t r = hi, k = 0; r >= 1 && k < 6; r = tile_cdiv(r, 2), k++) {
            if (whole && r != q->OH)
                break; /* SRAM-resident operands are read in place as whole planes */
            if (fields_ok(c, q, ec, r) && sizes(c, q, r)) {
                int64_t cst = cost(c, q);
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
    /* the convs apart (their best plans, each through DRAM) must not be cheaper; without the expand
     * tile_cascades weighs the chain against the depthwise + 1x1 pair and the eltwise apart */
    if (q->e) {
        int64_t a1 = tile_conv_estimate(c, q->e, false), a2 = tile_conv_estimate(c, q->d, false);
        int64_t a3 = q->p ? tile_conv_estimate(c, q->p, false) : 0;
        if (a1 < INT64_MAX / 4 && a2 < INT64_MAX / 4 && a3 < INT64_MAX / 4 && best_cost >= a1 + a2 + a3)
            return NPU_OK;
    }
    npu_status st = weights_for(c, q, best_ec);
    *found = st == NPU_OK && sizes(c, q, best);
    return st;
}

/* Whole planes (one band) first where an operand is SRAM-resident, so that
 * it is read in place; else any band (it then goes back to DRAM). */
static npu_status choose(tile_ctx *c, chain *q, bool *found)
{
    bool whole = (q->e && tile_resident_io(c, q->e)) || tile_resident_io(c, q->d) || (q->p && tile_resident_io(c, q->p)) ||
                 (q->a && tile_resident_io(c, q->a));
    *found = false;
    npu_status st = whole ? choose_once(c, q, true, found) : NPU_OK;
    if (st == NPU_OK && !*found)
        st = choose_once(c, q, false, found);
    return st;
}

void tile_conv_fields(int64_t *v, const tile_convinfo *ci, int64_t src, int64_t dst, int64_t wgt)
{
    const nk_qconv2d_params *k = &ci->k;
    v[TGT_F_SRC] = src, v[TGT_F_DST] = dst, v[TGT_F_WGT] = wgt, v[TGT_F_QTAB] = wgt + ci->qtab_rel;
    v[TGT_F_KH] = k->k_h, v[TGT_F_KW] = k->k_w, v[TGT_F_SH] = k->stride_h, v[TGT_F_SW] = k->stride_w;
    v[TGT_F_DH] = k->dil_h, v[TGT_F_DW] = k->dil_w;
    v[TGT_F_IN_ZP] = k->in_zp, v[TGT_F_OUT_ZP] = k->out_zp, v[TGT_F_W4] = ci->w4;
    v[TGT_F_CLAMP_LO] = k->act_min, v[TGT_F_CLAMP_HI] = k->act_max;
}

typedef struct bufs {
    int64_t in[2], out[2], res[2], mid1, mid2, psum, wt;
    tile_convinfo *ce, *cd; /* per chunk, offsets relative to the first block */
    int64_t w0;             /* the first block's offset in the constants */
} bufs;

static npu_status emit_band(tile_ctx *c, const chain *q, const bufs *b, int j, const int64_t *elt, bool conv_is_a)
{
    const nk_qconv2d_params *k = &q->cd.k;
    int slots = q->n_tiles > 1 ? 2 : 1;
    int xr, zr, fr = 0;
    int64_t xo, zo, fo = 0;
    npu_status st = tile_tensor_addr(c, chain_input(q), &xr, &xo);
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
    if (j == 0) { /* the weight blocks stay resident; each group loads before the first compute that needs it */
        int64_t eb = q->epi ? TGT_ETAB_BYTES : 0, wp = q->p ? q->cp.blk_bytes : 0, rest = q->wbytes - q->wfirst - wp;
        /* the epilogue's block (last in the constants) goes with the last group: the last projection needs it */
        if (rest == eb)
            rest = 0, wp += eb;
        /* without the expand the first group takes the projection too: both blocks are small, and a first
         * group alone goes out while the previous layer computes (emit_prefetch) */
        tile_load_flat(c, wk, TGT_REGION_CONSTANTS, b->w0, b->wt, q->wfirst + (q->e ? 0 : wp));
        if (wp && q->e) {
            tile_load_split(wk, q->e ? 2 : 1); /* the first projection */
            tile_load_flat(c, wk, TGT_REGION_CONSTANTS, b->w0 + q->wfirst, b->wt + q->wfirst, wp);
        }
        if (rest) {
            tile_load_split(wk, (q->e ? 2 : 1) + (q->p ? 1 : 0)); /* the second chunk's first compute */
            tile_load_flat(c, wk, TGT_REGION_CONSTANTS, b->w0 + q->wfirst + wp, b->wt + q->wfirst + wp, rest);
        }
    }
    if (q->a) /* needed by the eltwise, after every load group */
        tile_load(wk, tile_box_chw(fr, fo + y0 * q->OW, q->OH, q->OW, b->res[j % slots], q->CO, oh, q->OW));
    for (int64_t ch = 0; ch < q->n_chunks; ch++) {
        int64_t e0 = ch * q->ec, ec = chunk_ch(q, ch);
        tile_comp *ce = q->e ? tile_comp_new(c, wk, TGT_SEM_CONV) : NULL;
        tile_comp *cd = ce || !q->e ? tile_comp_new(c, wk, TGT_SEM_DWCONV) : NULL;
        tile_comp *cp = cd && q->p ? tile_comp_new(c, wk, TGT_SEM_CONV) : cd;
        if (!cp)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        cd = &c->comp[c->n_comp - (q->p ? 2 : 1)]; /* the array may have moved */
        int64_t *v;
        if (q->e) { /* the expand: the band's rows with their halo, the columns the depthwise reads */
            v = cd[-1].v;
            tile_conv_fields(v, &b->ce[ch], src, b->mid1, b->wt + b->ce[ch].blk_off);
            v[TGT_F_IC] = q->CI, v[TGT_F_OC] = ec, v[TGT_F_IH] = v[TGT_F_OH] = ih, v[TGT_F_IW] = v[TGT_F_OW] = q->iwe;
        }
        v = cd->v;
        int64_t dsrc = q->e ? b->mid1 : src + e0 * ih * q->iwe; /* without expand: the chunk's input planes */
        tile_conv_fields(v, &b->cd[ch], dsrc, q->p ? b->mid2 : dst + e0 * oh * q->OW, b->wt + b->cd[ch].blk_off);
        v[TGT_F_C] = ec, v[TGT_F_IH] = ih, v[TGT_F_IW] = q->iwe, v[TGT_F_OH] = oh, v[TGT_F_OW] = q->OW;
        v[TGT_F_PT] = ay.p0, v[TGT_F_PB] = ay.p1, v[TGT_F_PL] = ax.p0, v[TGT_F_PR] = ax.p1;
        if (!q->p)
            continue;
        v = cd[1].v; /* the projection of this chunk, accumulated over the chunks */
        tile_conv_fields(v, &q->cp, b->mid2, dst, b->wt + q->cp.blk_off + ch * q->cp.chunk_bytes);
        v[TGT_F_QTAB] = b->wt + q->cp.blk_off + q->cp.qtab_rel;
        v[TGT_F_IC] = ec, v[TGT_F_OC] = q->CO, v[TGT_F_IH] = v[TGT_F_OH] = oh, v[TGT_F_IW] = v[TGT_F_OW] = q->OW;
        if (q->n_chunks > 1) {
            v[TGT_F_PSUM] = b->psum;
            v[TGT_F_ACC_IN] = ch > 0;
            v[TGT_F_ACC_OUT] = ch < q->n_chunks - 1;
        }
    }
    if (q->epi) /* in the last projection's output stage, with the other operand's tile */
        tile_epi_set(c->comp[c->n_comp - 1].v, b->res[j % slots], 0, b->wt + q->wbytes - TGT_ETAB_BYTES);
    else if (q->a) { /* in place on the projection's tile */
        tile_comp *ca = tile_comp_new(c, wk, TGT_SEM_ELTWISE);
        if (!ca)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        int64_t *v = ca->v;
        memcpy(v, elt, sizeof(int64_t) * TGT_F_COUNT);
        v[TGT_F_A] = conv_is_a ? dst : b->res[j % slots], v[TGT_F_B] = conv_is_a ? b->res[j % slots] : dst;
        v[TGT_F_DST] = dst, v[TGT_F_C] = q->CO, v[TGT_F_H] = oh, v[TGT_F_W] = q->OW;
    }
    tile_store(wk, tile_box_chw(zr, zo + y0 * q->OW, q->OH, q->OW, dst, q->CO, oh, q->OW));
    return NPU_OK;
}

/* Builds every weight block into the constants, back to back in their SRAM
 * order (16-byte sizes, so one contiguous range): the first chunk's expand
 * and depthwise blocks, the projection's, the other chunks' expand blocks,
 * their depthwise blocks; offsets made relative. */
static npu_status build_weights(tile_ctx *c, chain *q, bufs *b)
{
    int64_t at = -1;
    npu_status st = NPU_OK;
    for (int pass = 0; pass < 5 && st == NPU_OK; pass++) {
        int64_t k0 = pass == 3 || pass == 4 ? 1 : 0, k1 = pass < 2 ? 1 : pass == 2 ? (q->p ? 1 : 0) : q->n_chunks;
        bool expand = pass == 0 || pass == 3, proj = pass == 2;
        if (expand && !q->e)
            continue;
        for (int64_t k = k0; k < k1 && st == NPU_OK; k++) {
            tile_convinfo *ci = proj ? &q->cp : expand ? &b->ce[k] : &b->cd[k];
            const ir_node *n = proj ? q->p : expand ? q->e : q->d;
            st = proj ? tile_conv_block(c, n, 0, 0, q->ec, true, ci)
                      : tile_conv_block(c, n, k * q->ec, chunk_ch(q, k), 0, true, ci);
            if (st != NPU_OK)
                break;
            if (at < 0)
                b->w0 = at = ci->blk_off;
            if (ci->blk_off != at)
                return tile_fail(c, "tiler bug: the cascade's weight blocks are not contiguous");
            at += ci->blk_bytes;
            ci->blk_off -= b->w0;
        }
    }
    if (st == NPU_OK && q->epi) {
        int64_t off;
        bool conv_is_a = q->a->inputs[0] == q->p->outputs[0];
        if ((st = tile_epi_block(c, q->a, conv_is_a, &off)) == NPU_OK && off != at)
            return tile_fail(c, "tiler bug: the epilogue's block does not follow the cascade's weights");
        at += TGT_ETAB_BYTES;
    }
    if (st == NPU_OK && at - b->w0 != q->wbytes)
        return tile_fail(c, "tiler bug: the cascade's weights take %lld bytes, not %lld", (long long)(at - b->w0),
                         (long long)q->wbytes);
    return st;
}

npu_status tile_chain(tile_ctx *c, const ir_node *const *nd, int len, bool *done)
{
    *done = false;
    chain q;
    bool ok;
    npu_status st = match(c, nd, len, &q, &ok);
    if (st == NPU_OK && ok)
        st = choose(c, &q, &ok);
    if (st != NPU_OK || !ok)
        return st;
    *done = true;
    int64_t elt[TGT_F_COUNT];
    bool conv_is_a = q.a && q.a->inputs[0] == q.p->outputs[0];
    if (q.a && (st = tile_eltwise_fields(c, q.a, elt)) != NPU_OK)
        return st;
    bufs b = {.in = {-1, -1}, .out = {-1, -1}, .res = {-1, -1}};
    size_t nb = sizeof(tile_convinfo) * (size_t)q.n_chunks;
    b.ce = npu_malloc(c->alloc, nb);
    b.cd = npu_malloc(c->alloc, nb);
    if (!b.ce || !b.cd)
        st = npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    if (st == NPU_OK)
        st = build_weights(c, &q, &b);
    int slots = q.n_tiles > 1 ? 2 : 1;
    tile_sram_req rq[16] = {{q.mid1, &b.mid1}, {q.wbytes, &b.wt}, {q.mid2, &b.mid2}, {q.psum, &b.psum}};
    int nr = 4;
    for (int i = 0; i < slots; i++) {
        rq[nr++] = (tile_sram_req){q.in_slot, &b.in[i]};
        rq[nr++] = (tile_sram_req){q.out_slot, &b.out[i]};
        if (q.a)
            rq[nr++] = (tile_sram_req){q.res_slot, &b.res[i]};
    }
    if (st == NPU_OK)
        st = tile_sram_place(c, rq, nr, "tiler bug: the cascade's buffers exceed the SRAM");
    for (int j = 0; j < q.n_tiles && st == NPU_OK; j++)
        st = emit_band(c, &q, &b, j, elt, conv_is_a);
    npu_free(c->alloc, b.ce, nb);
    npu_free(c->alloc, b.cd, nb);
    return st == NPU_OK ? tile_pipeline(c) : st;
}
