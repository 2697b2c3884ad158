/* Emitting the chain cascade that tile_cascade3.c planned: the buffers in
 * SRAM, the weight blocks in the order the bands need them, and per band
 * its loads (with the prologue's quantize), each chunk's expand, depthwise
 * and projection, the eltwise (on the vector unit, or in the projection's
 * output stage), the store. */
#include <string.h>

#include "tiler/tile_chain.h"

typedef struct bufs {
    int64_t in[3], out[3], res[3], mid1, mid2, psum, wt;
    int64_t wt2;          /* the weights from wsplit on: a buffer of their own where the first group goes early */
    int64_t wsplit;       /* the first load group's weights: the first expand's block (or both first blocks) */
    int64_t tab_e, tab_d; /* the epilogue tables (1024-aligned), when there are Luts */
    int64_t gsum, gout;   /* the squeeze pool's int32 channel sums and its int8 output */
    int64_t pout[3];      /* a block pool's output rows of a band, per slot */
    tile_convinfo *ce, *cd; /* per chunk, offsets relative to the first block */
    int64_t w0;             /* the first block's offset in the constants */
    int xr, zr, fr, gr;     /* the block input (a prologue's float32 one), the output, the eltwise's other operand,
                               the squeeze pool's output */
    int64_t xo, zo, fo, go;
    bool conv_is_a;           /* the projection's output is the eltwise's A */
    int64_t elt[TGT_F_COUNT]; /* the eltwise's fields */
    int64_t qv[TGT_F_COUNT];  /* the prologue's quantize fields */
    int64_t pv[TGT_F_COUNT];  /* the squeeze pool's fields */
} bufs;

/* SRAM of the weights' byte off (relative to the first block). */
static int64_t w_at(const bufs *b, int64_t off)
{
    return off < b->wsplit ? b->wt + off : b->wt2 + off - b->wsplit;
}

/* The first load group's weight bytes: the first expand's block alone where
 * the first work has loads to spare for a group more, else with the first
 * depthwise block (without an expand: with the projection, below). */
static int64_t first_group(const tile_ctx *c, const chain *q)
{
    if (!q->e || q->pre)
        return q->wfirst;
    tile_box bx[2];
    int64_t wp = q->p ? q->cp.blk_bytes : 0, part[] = {q->wexp, q->wfirst - q->wexp, wp, q->wbytes - q->wfirst - wp};
    int boxes = 1 + (q->le ? 1 : 0) + (q->ld ? 1 : 0) + (q->a ? 1 : 0); /* the input, the tables, the residual */
    for (int i = 0; i < 4; i++)
        boxes += part[i] > 0 ? tile_flat_boxes(c, TGT_SEM_DMA_LOAD, TGT_REGION_CONSTANTS, 0, 0, part[i], bx) : 0;
    return boxes <= TILE_MAX_LOADS ? q->wexp : q->wfirst;
}

/* The Luts' 256-byte tables into their slots, from the constants. */
static npu_status load_tables(tile_ctx *c, const chain *q, const bufs *b, tile_work *wk)
{
    const ir_node *lut[2] = {q->le, q->ld};
    const int64_t slot[2] = {b->tab_e, b->tab_d};
    for (int i = 0; i < 2; i++) {
        int tr;
        int64_t toff;
        npu_status st = lut[i] ? tile_tensor_addr(c, lut[i]->inputs[1], &tr, &toff) : NPU_OK;
        if (st != NPU_OK)
            return st;
        if (lut[i])
            tile_load(wk, tile_box_table(tr, toff, slot[i]));
    }
    return NPU_OK;
}

/* Band j's prologue when it shares its first ov rows with band j - 1: per
 * plane, a copy of them from band j - 1's int8 rows (the vector unit's queue
 * orders it after band j - 1's quantize and before the next writer of those
 * rows, band j - 1 + slots' prologue), then the quantize of the eh - ov rows
 * loaded as float32 (packed plane after plane) into the rows after them. The
 * first copy waits for the load, as the quantize would: band j's slot is then
 * free. */
static npu_status shared_prologue(tile_ctx *c, const chain *q, const bufs *b, int j, int64_t eh, int64_t ov,
                                  tile_work *wk)
{
    band pb = band_of(q, j - 1);
    int64_t eiw = q->ex.i1 - q->ex.i0, ph = pb.ey.i1 - pb.ey.i0, src = b->in[j % q->slots];
    int64_t prev = b->in[(j - 1) % q->slots];
    int insn = tile_insn(c, TGT_SEM_REQUANT);
    for (int64_t p = 0; p < q->CI; p++) {
        tile_comp *cc = tile_comp_new(c, wk, TGT_SEM_REQUANT);
        if (!cc)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        tgt_defaults(c->t->isa, insn, cc->v);
        cc->v[TGT_F_COPY] = 1, cc->v[TGT_F_MULT] = 0, cc->v[TGT_F_LEN] = ov * eiw;
        cc->v[TGT_F_SRC] = prev + (p * ph + ph - ov) * eiw, cc->v[TGT_F_DST] = src + p * eh * eiw;
    }
    for (int64_t p = 0; p < q->CI; p++) {
        tile_comp *cq = tile_comp_new(c, wk, TGT_SEM_QUANTIZE);
        if (!cq)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        memcpy(cq->v, b->qv, sizeof b->qv);
        cq->v[TGT_F_SRC] = src + q->in_f + 4 * p * (eh - ov) * eiw;
        cq->v[TGT_F_DST] = src + (p * eh + ov) * eiw, cq->v[TGT_F_LEN] = (eh - ov) * eiw;
    }
    return NPU_OK;
}

/* Band j's loads (its block input rows, the weights with the first band, the
 * eltwise's other operand) and, with a prologue, the quantize of its float32
 * rows into the int8 rows the expand reads. */
static npu_status band_loads(tile_ctx *c, const chain *q, const bufs *b, int j, const band *bd, tile_work *wk)
{
    int slots = q->slots;
    int64_t src = b->in[j % slots], eh = bd->ey.i1 - bd->ey.i0, eiw = q->ex.i1 - q->ex.i0, es = q->pre ? 4 : 1;
    int64_t ov = shared_rows(q, j), x0 = ((bd->ey.i0 + ov) * q->XW + q->ex.i0) * es;
    tile_load(wk, tile_box_chw(b->xr, b->xo + x0, q->XH, q->XW * es, src + q->in_f, q->CI, eh - ov, eiw * es));
    npu_status st = j == 0 ? load_tables(c, q, b, wk) : NPU_OK; /* resident, with the first group */
    if (st != NPU_OK)
        return st;
    if (j == 0 && q->pre) /* one load group: its one consumer, the quantize, waits for all of it */
        tile_load_flat(c, wk, TGT_REGION_CONSTANTS, b->w0, b->wt, q->wbytes);
    if (j == 0 && !q->pre) { /* the weight blocks stay resident; each group loads before the first compute that
                                needs it */
        int64_t eb = q->epi ? TGT_ETAB_BYTES : 0, wp = q->p ? q->cp.blk_bytes : 0, rest = q->wbytes - q->wfirst - wp;
        /* the epilogue's block (last in the constants) goes with the last group: the last projection needs it */
        if (rest == eb)
            rest = 0, wp += eb;
        /* without the expand the first group takes the projection too: both blocks are small, and a first
         * group alone goes out while the previous layer computes (emit_prefetch) */
        /* the first expand needs its own block alone: a smaller first group goes early where more would not
         * (MobileNetV2's block 14: 31 KB above block 13's 36 KB of room) */
        bool own = q->e && b->wsplit < q->wfirst;
        tile_load_flat(c, wk, TGT_REGION_CONSTANTS, b->w0, b->wt, own ? q->wexp : q->wfirst + (q->e ? 0 : wp));
        if (own) {
            tile_load_split(wk, 1); /* the first depthwise conv */
            tile_load_flat(c, wk, TGT_REGION_CONSTANTS, b->w0 + q->wexp, w_at(b, q->wexp), q->wfirst - q->wexp);
        }
        if (wp && q->e) {
            tile_load_split(wk, 2); /* the first projection */
            tile_load_flat(c, wk, TGT_REGION_CONSTANTS, b->w0 + q->wfirst, w_at(b, q->wfirst), wp);
        }
        if (rest) {
            tile_load_split(wk, (q->e ? 2 : 1) + (q->p || q->gp ? 1 : 0)); /* the second chunk's first compute */
            tile_load_flat(c, wk, TGT_REGION_CONSTANTS, b->w0 + q->wfirst + wp, w_at(b, q->wfirst + wp), rest);
        }
    }
    int64_t oh = bd->y1 - bd->y0;
    if (q->a) /* needed by the eltwise, after every load group */
        tile_load(wk, tile_box_chw(b->fr, b->fo + bd->y0 * q->OW, q->OH, q->OW, b->res[j % slots], q->CO, oh, q->OW));
    if (!q->pre)
        return NPU_OK;
    if (ov)
        return shared_prologue(c, q, b, j, eh, ov, wk);
    tile_comp *cq = tile_comp_new(c, wk, TGT_SEM_QUANTIZE); /* dense rows: the float32 box's order is C x H x W */
    if (!cq)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    memcpy(cq->v, b->qv, sizeof b->qv);
    cq->v[TGT_F_SRC] = src + q->in_f, cq->v[TGT_F_DST] = src, cq->v[TGT_F_LEN] = q->CI * eh * eiw;
    return NPU_OK;
}

/* Chunk ch of band j: the expand, the depthwise conv, the projection accumulating over the chunks. */
static npu_status band_chunk(tile_ctx *c, const chain *q, const bufs *b, int j, const band *bd, tile_work *wk,
                             int64_t ch)
{
    const nk_qconv2d_params *k = &q->cd.k;
    int slots = q->slots;
    int64_t src = b->in[j % slots], dst = b->out[j % slots], e0 = ch * q->ec, ec = chunk_ch(q, ch);
    int64_t ih = bd->ay.i1 - bd->ay.i0, oh = bd->y1 - bd->y0;
    tile_axis ax = tile_axis_range(0, q->OW, q->W, k->k_w, k->stride_w, k->dil_w, k->pad_left);
    tile_comp *ce = q->e ? tile_comp_new(c, wk, TGT_SEM_CONV) : NULL;
    tile_comp *cd = ce || !q->e ? tile_comp_new(c, wk, TGT_SEM_DWCONV) : NULL;
    tile_comp *cp = cd && q->p ? tile_comp_new(c, wk, TGT_SEM_CONV) : cd;
    if (!cp)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    cd = &c->comp[c->n_comp - (q->p ? 2 : 1)]; /* the array may have moved */
    int64_t *v;
    if (q->e) { /* the expand: the band's rows with their halo, the columns the depthwise reads */
        v = cd[-1].v;
        tile_conv_fields(v, &b->ce[ch], src, b->mid1, w_at(b, b->ce[ch].blk_off));
        v[TGT_F_IC] = q->CI, v[TGT_F_OC] = ec, v[TGT_F_IH] = bd->ey.i1 - bd->ey.i0, v[TGT_F_OH] = ih;
        v[TGT_F_IW] = q->ex.i1 - q->ex.i0, v[TGT_F_OW] = q->iwe;
        v[TGT_F_PT] = bd->ey.p0, v[TGT_F_PB] = bd->ey.p1, v[TGT_F_PL] = q->ex.p0, v[TGT_F_PR] = q->ex.p1;
        if (q->le)
            v[TGT_F_EPI_LUT] = 1, v[TGT_F_TABLE] = b->tab_e;
    }
    v = cd->v;
    int64_t dsrc = q->e ? b->mid1 : src + e0 * ih * q->iwe; /* without expand: the chunk's input planes */
    tile_conv_fields(v, &b->cd[ch], dsrc, q->p ? b->mid2 : dst + e0 * oh * q->OW, w_at(b, b->cd[ch].blk_off));
    v[TGT_F_C] = ec, v[TGT_F_IH] = ih, v[TGT_F_IW] = q->iwe, v[TGT_F_OH] = oh, v[TGT_F_OW] = q->OW;
    v[TGT_F_PT] = bd->ay.p0, v[TGT_F_PB] = bd->ay.p1, v[TGT_F_PL] = ax.p0, v[TGT_F_PR] = ax.p1;
    if (q->ld)
        v[TGT_F_EPI_LUT] = 1, v[TGT_F_TABLE] = b->tab_d;
    if (!q->p)
        return NPU_OK;
    v = cd[1].v; /* the projection of this chunk, accumulated over the chunks */
    tile_conv_fields(v, &q->cp, b->mid2, dst, w_at(b, q->cp.blk_off + ch * q->cp.chunk_bytes));
    v[TGT_F_QTAB] = w_at(b, q->cp.blk_off + q->cp.qtab_rel);
    v[TGT_F_IC] = ec, v[TGT_F_OC] = q->CO, v[TGT_F_IH] = v[TGT_F_OH] = oh, v[TGT_F_IW] = v[TGT_F_OW] = q->OW;
    if (q->n_chunks > 1) {
        v[TGT_F_PSUM] = b->psum;
        v[TGT_F_ACC_IN] = ch > 0;
        v[TGT_F_ACC_OUT] = ch < q->n_chunks - 1;
    }
    return NPU_OK;
}

/* The pool over chunk ch of band j's output tile, right after the chunk's
 * depthwise conv and a side branch of it (the vector unit pools chunk ch
 * while the MAC array runs chunk ch + 1). The squeeze's global pool carries
 * the channel sums in gsum from band to band, the last band's average into
 * gout; a block pool writes the band's block rows into its slot. */
static npu_status band_pool(tile_ctx *c, const chain *q, const bufs *b, int j, const band *bd, tile_work *wk,
                            int64_t ch)
{
    int64_t oh = bd->y1 - bd->y0, dst = b->out[j % q->slots], e0 = ch * q->ec;
    tile_comp *cp = tile_comp_new(c, wk, TGT_SEM_POOL);
    if (!cp)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    int64_t *v = cp->v;
    cp->side = true;
    memcpy(v, b->pv, sizeof b->pv);
    v[TGT_F_SRC] = dst + e0 * oh * q->OW, v[TGT_F_C] = chunk_ch(q, ch), v[TGT_F_IH] = oh, v[TGT_F_IW] = q->OW;
    v[TGT_F_PT] = v[TGT_F_PL] = v[TGT_F_PB] = v[TGT_F_PR] = 0;
    if (q->pkh) {
        int64_t pr = oh / q->pkh, pc = q->OW / q->pkw;
        v[TGT_F_DST] = b->pout[j % q->slots] + e0 * pr * pc, v[TGT_F_KH] = v[TGT_F_SH] = q->pkh;
        v[TGT_F_KW] = v[TGT_F_SW] = q->pkw, v[TGT_F_OH] = pr, v[TGT_F_OW] = pc;
        return NPU_OK;
    }
    v[TGT_F_DST] = b->gout + e0, v[TGT_F_KH] = oh, v[TGT_F_KW] = q->OW, v[TGT_F_OH] = v[TGT_F_OW] = 1;
    v[TGT_F_SH] = v[TGT_F_SW] = 1;
    v[TGT_F_PSUM] = b->gsum + 4 * e0, v[TGT_F_ACC_IN] = j > 0, v[TGT_F_ACC_OUT] = j < q->n_tiles - 1;
    v[TGT_F_DIVISOR] = q->OH * q->OW;
    return NPU_OK;
}

static npu_status emit_band(tile_ctx *c, const chain *q, const bufs *b, int j)
{
    int slots = q->slots;
    band bd = band_of(q, j);
    int64_t oh = bd.y1 - bd.y0, dst = b->out[j % slots];
    if (bd.ay.i1 <= bd.ay.i0 || bd.ey.i1 <= bd.ey.i0)
        return tile_fail(c, "a band whose window lies entirely in the padding");
    tile_work *wk = tile_work_new(c);
    if (!wk)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    npu_status st = band_loads(c, q, b, j, &bd, wk);
    /* the last band, whose store nothing after it hides, stores chunk by chunk (without a projection,
     * whose sums need every chunk): each group of chunks' channels once its last compute is done, the
     * groups few enough for the work's stores (two kept for the last group and the pool's output) */
    bool by_chunk = j == q->n_tiles - 1 && !q->p && q->n_chunks > 1;
    int64_t group = tile_cdiv(q->n_chunks, TILE_MAX_STORES - 2), e0 = 0; /* e0: channels not yet stored */
    for (int64_t ch = 0; ch < q->n_chunks && st == NPU_OK; ch++) {
        st = band_chunk(c, q, b, j, &bd, wk, ch);
        if (st == NPU_OK && q->gp)
            st = band_pool(c, q, b, j, &bd, wk, ch);
        if (st == NPU_OK && by_chunk && ch < q->n_chunks - 1 && (ch + 1) % group == 0) {
            int64_t e1 = (ch + 1) * q->ec;
            tile_store(wk, tile_box_chw(b->zr, b->zo + (e0 * q->OH + bd.y0) * q->OW, q->OH, q->OW,
                                        dst + e0 * oh * q->OW, e1 - e0, oh, q->OW));
            tile_store_split(wk, wk->n_comp - 1);
            e0 = e1;
        }
    }
    if (st == NPU_OK && q->epi) /* in the last projection's output stage, with the other operand's tile */
        tile_epi_set(c->comp[c->n_comp - 1].v, b->res[j % slots], 0, w_at(b, q->wbytes - TGT_ETAB_BYTES));
    else if (st == NPU_OK && q->a) { /* in place on the projection's tile */
        tile_comp *ca = tile_comp_new(c, wk, TGT_SEM_ELTWISE);
        if (!ca)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        int64_t *v = ca->v, res = b->res[j % slots];
        memcpy(v, b->elt, sizeof b->elt);
        v[TGT_F_A] = b->conv_is_a ? dst : res, v[TGT_F_B] = b->conv_is_a ? res : dst;
        v[TGT_F_DST] = dst, v[TGT_F_C] = q->CO, v[TGT_F_H] = oh, v[TGT_F_W] = q->OW;
    }
    if (st == NPU_OK) /* the channels from e0: all of them, or by chunk the last group's */
        tile_store(wk, tile_box_chw(b->zr, b->zo + (e0 * q->OH + bd.y0) * q->OW, q->OH, q->OW, dst + e0 * oh * q->OW,
                                    q->CO - e0, oh, q->OW));
    if (st == NPU_OK && q->pkh) { /* the block pool's rows of the band */
        int64_t pr = oh / q->pkh, pc = q->OW / q->pkw;
        tile_store(wk, tile_box_chw(b->gr, b->go + bd.y0 / q->pkh * pc, q->OH / q->pkh, pc, b->pout[j % slots], q->CE,
                                    pr, pc));
    } else if (st == NPU_OK && q->gp && j == q->n_tiles - 1) /* the squeeze's output, with the last band */
        tile_store_flat(c, wk, b->gr, b->go, b->gout, q->CE);
    return st;
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

/* The chain's tensors in the plan and its vector instructions' fields. */
static npu_status homes(tile_ctx *c, const chain *q, bufs *b)
{
    npu_status st = tile_tensor_addr(c, q->pre ? q->pre->inputs[0] : chain_input(q), &b->xr, &b->xo);
    if (st == NPU_OK)
        st = tile_tensor_addr(c, q->a ? q->a->outputs[0] : q->p ? q->p->outputs[0] : dw_out(q), &b->zr, &b->zo);
    if (st == NPU_OK && q->a)
        st = tile_tensor_addr(c, other_operand(q), &b->fr, &b->fo);
    b->conv_is_a = q->a && q->a->inputs[0] == q->p->outputs[0];
    if (st == NPU_OK && q->a)
        st = tile_eltwise_fields(c, q->a, b->elt);
    if (st == NPU_OK && q->pre)
        st = tile_quantize_fields(c, q->pre, b->qv);
    if (st == NPU_OK && q->gp)
        st = tile_tensor_addr(c, q->gp->outputs[0], &b->gr, &b->go);
    if (st == NPU_OK && q->gp)
        st = tile_pool_fields(c, q->gp, b->pv);
    return st;
}

/* The buffers in SRAM. With the prologue each slot's input and output on
 * banks of their own, the intermediates and weights on others: the MAC
 * array on band j, the vector unit quantizing band j+1 and the DMA then
 * touch no common bank (the NPU model's bank stalls; see tile_conv_pool). */
static int requests(const chain *q, bufs *b, tile_sram_req *rq, int *grp, bool *early, bool *fewer)
{
    int slots = q->slots, nr = 4;
    bool split = !q->pre && q->e;
    memset(early, 0, 16 * sizeof *early);
    memset(fewer, 0, 16 * sizeof *fewer);
    for (int i = 0; i < 4; i++)
        grp[i] = slots;
    rq[0] = (tile_sram_req){q->mid1, &b->mid1}, rq[1] = (tile_sram_req){split ? b->wsplit : q->wbytes, &b->wt};
    rq[2] = (tile_sram_req){q->mid2, &b->mid2}, rq[3] = (tile_sram_req){q->psum, &b->psum};
    /* early: the constants (weights, tables), clear of the layer before where only they fit so; where they
     * do not, the first group alone (the rest loads after the barrier anyway) */
    early[1] = fewer[1] = true;
    if (split)
        early[nr] = true, grp[nr] = slots, rq[nr++] = (tile_sram_req){q->wbytes - b->wsplit, &b->wt2};
    if (q->le)
        early[nr] = fewer[nr] = true, grp[nr] = slots, rq[nr++] = (tile_sram_req){TILE_EPI_TABLE_BYTES, &b->tab_e};
    if (q->ld)
        early[nr] = fewer[nr] = true, grp[nr] = slots, rq[nr++] = (tile_sram_req){TILE_EPI_TABLE_BYTES, &b->tab_d};
    if (q->gp && !q->pkh) {
        grp[nr] = slots, rq[nr++] = (tile_sram_req){4 * q->CE, &b->gsum};
        grp[nr] = slots, rq[nr++] = (tile_sram_req){q->CE, &b->gout};
    }
    for (int i = 0; i < slots; i++) {
        grp[nr] = i, rq[nr++] = (tile_sram_req){q->in_slot, &b->in[i]};
        grp[nr] = i, rq[nr++] = (tile_sram_req){q->out_slot, &b->out[i]};
        if (q->a)
            grp[nr] = i, rq[nr++] = (tile_sram_req){q->res_slot, &b->res[i]};
        if (q->pkh)
            grp[nr] = i, rq[nr++] = (tile_sram_req){q->pool_slot, &b->pout[i]};
    }
    return nr;
}

static npu_status place(tile_ctx *c, const chain *q, bufs *b)
{
    int slots = q->slots, grp[16];
    tile_sram_req rq[16];
    bool early[16], fewer[16];
    /* With the expand the weights load by group, the first group a buffer of its own, which can go early
     * where all of them cannot (MobileNetV2's block 13): the first chunk's expand and depthwise blocks, or
     * the expand's alone where only that fits (block 14) */
    bool split = !q->pre && q->e;
    b->wsplit = q->wfirst;
    int nr = requests(q, b, rq, grp, early, fewer);
    if (split && first_group(c, q) < q->wfirst && !tile_sram_early_fits(c, rq, nr, early) &&
        !tile_sram_early_fits(c, rq, nr, fewer)) {
        b->wsplit = q->wexp;
        nr = requests(q, b, rq, grp, early, fewer);
        if (!tile_sram_early_fits(c, rq, nr, fewer)) {
            b->wsplit = q->wfirst;
            nr = requests(q, b, rq, grp, early, fewer);
        }
    }
    const char *misfit = "tiler bug: the cascade's buffers exceed the SRAM";
    npu_status st = q->pre ? tile_sram_place_banked(c, rq, nr, grp, slots + 1, misfit)
                           : tile_sram_place_early2(c, rq, nr, early, split ? fewer : NULL, misfit);
    b->tab_e = tile_epi_table_at(b->tab_e);
    b->tab_d = tile_epi_table_at(b->tab_d);
    if (!split)
        b->wt2 = b->wt + b->wsplit;
    return st;
}

npu_status tile_chain(tile_ctx *c, const ir_node *const *nd, int len, bool *done)
{
    *done = false;
    chain q;
    bool ok;
    npu_status st = tile_chain_plan(c, nd, len, &q, &ok);
    if (st != NPU_OK || !ok)
        return st;
    *done = true;
    bufs b = {.in = {-1, -1, -1}, .out = {-1, -1, -1}, .res = {-1, -1, -1}, .pout = {-1, -1, -1}};
    size_t nb = sizeof(tile_convinfo) * (size_t)q.n_chunks;
    b.ce = npu_malloc(c->alloc, nb);
    b.cd = npu_malloc(c->alloc, nb);
    if (!b.ce || !b.cd)
        st = npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    if (st == NPU_OK)
        st = build_weights(c, &q, &b);
    if (st == NPU_OK)
        st = homes(c, &q, &b);
    if (st == NPU_OK)
        st = place(c, &q, &b);
    for (int j = 0; j < q.n_tiles && st == NPU_OK; j++)
        st = emit_band(c, &q, &b, j);
    npu_free(c->alloc, b.ce, nb);
    npu_free(c->alloc, b.cd, nb);
    c->depth = q.slots, c->skew = q.pre && q.gp; /* the vector unit at both ends of a band */
    return st == NPU_OK ? tile_pipeline(c) : st;
}
