/* Cascading a conv into the pool after it: a conv (dense or depthwise, its
 * Relu/Clip in its clamp) whose output only a MaxPool or AveragePool reads
 * runs with it as one pipeline. Each work is a row band of the pool's output
 * (all channels) or, on whole planes, a chunk of its channels: it loads the
 * conv input rows the work needs (a chunked work: the first one loads them
 * all), the conv (MAC array) writes the rows the pool window reads into an
 * SRAM slot, the pool (vector unit) reads them there after CHAIN and writes
 * the work's output tile, which is stored. The MAC array computes work j+1
 * while the vector unit pools work j, so the pool's time is no longer in
 * series with the conv's, and the conv's output never goes to DRAM.
 *
 * Consecutive bands share the pool's kh - sh conv rows; they are
 * recomputed, as tile_cascade3.c recomputes its halo (no SRAM-to-SRAM
 * move), and the cost model weighs them. Bands keep the conv's one weight
 * block resident; channel chunks load each its own block with its work
 * (so the first conv waits for one block, not all), through the work's
 * slots. Numerics: the conv's blocks and qtab from tile_conv_block, the
 * pool's fields from tile_pool_fields (ref_qconv_params, ref_qpool_params).
 *
 * With a quantize prologue (the model input's QuantizeLinear, which only
 * the conv reads) each band loads its rows as float32 and the vector unit
 * quantizes them (tile_quantize_fields, as the quantize's own pass) before
 * the conv: vector, MAC, vector. The vector unit's queue is in order, so
 * band j+1's quantize goes out before band j's pool (tile_ctx.skew):
 * otherwise every conv would wait for the previous band's pool. */
#include <string.h>

#include "numerics/numerics.h"
#include "tiler/tile_internal.h"

typedef struct cpool {
    const ir_node *n, *m; /* the conv, the pool */
    const ir_node *pre;   /* the quantize prologue, or NULL */
    tile_convinfo cv;     /* the conv as one block (geometry, datapath) */
    nk_qpool_params pk;
    int64_t C, H, W, OC, CH, CW, OH, OW; /* conv input, conv output (the pool's input), pool output */
    tile_axis px, cx; /* columns: the conv outputs the pool reads, the conv inputs those read */
    /* the plan */
    int64_t oht, n_bands; /* pool output rows per band */
    int64_t ct, n_ct;     /* output channels per work: all, or chunks when n_bands is 1 */
    int64_t ihx, ihm;     /* the tallest band's conv input rows and conv output rows */
    int64_t in_slot, mid_slot, out_slot;
    int64_t in_f; /* a prologue: the float32 rows' offset in the input slot (after the int8 rows) */
    int64_t wblk, wlast; /* weight block of a chunk, of the last chunk (bands: the one block) */
    int slots;           /* mid and output slots (and weight slots of chunks), work j+slots reusing work j's */
    bool res_in, res_out; /* the input or output SRAM-resident: read or written in place, no DMA */
} cpool;

/* Rows of band j: pool outputs [y0, y1) read conv outputs py (with the
 * pool's pads at the borders), which read conv inputs cy. */
typedef struct band {
    int64_t y0, y1;
    tile_axis py, cy;
} band;

static band band_of(const cpool *q, int64_t j)
{
    const nk_qconv2d_params *k = &q->cv.k;
    band b;
    b.y0 = j * q->oht, b.y1 = tile_min(q->OH, b.y0 + q->oht);
    b.py = tile_axis_range(b.y0, b.y1, q->CH, q->pk.k_h, q->pk.stride_h, 1, q->pk.pad_top);
    b.cy = tile_axis_range(b.py.i0, b.py.i1, q->H, k->k_h, k->stride_h, k->dil_h, k->pad_top);
    return b;
}

static int64_t chunk_ch(const cpool *q, int64_t k)
{
    return tile_min(q->ct, q->OC - k * q->ct);
}

/* The pair's structure and parameters; *ok false when it does not apply. */
static npu_status match(tile_ctx *c, const ir_node *pre, const ir_node *n, const ir_node *m, cpool *q, bool *ok)
{
    *ok = false;
    memset(q, 0, sizeof *q);
    q->n = n, q->m = m, q->pre = pre;
    if (pre && (pre->op != IR_OP_QUANTIZE_LINEAR || !tile_conv_pre_ok(c, pre, n) || tile_tokens(c->t) < 7))
        return NPU_OK; /* vector, MAC, vector: a CHAIN into each unit */
    bool pool = m->op == IR_OP_MAX_POOL || m->op == IR_OP_AVERAGE_POOL || m->op == IR_OP_GLOBAL_MAX_POOL ||
                m->op == IR_OP_GLOBAL_AVERAGE_POOL;
    if (n->op != IR_OP_CONV || !pool || m->n_inputs != 1 ||
        m->inputs[0] != n->outputs[0] || n->n_inputs < 2 || !n->inputs[1] || n->inputs[1]->rank != 4 ||
        n->inputs[0]->rank != 4 || !tile_only_reader(c, n->outputs[0], m) || tile_tokens(c->t) < 5 ||
        tile_insn(c, TGT_SEM_POOL) < 0)
        return NPU_OK;
    int64_t g = ir_attr_int(n, "group", 1), cin = n->inputs[0]->dims[1];
    if (g != 1 && !(g == cin && n->outputs[0]->dims[1] == cin))
        return NPU_OK; /* grouped: one conv per group, no single block */
    npu_status st = tile_conv_info(c, n, false, &q->cv);
    if (st == NPU_OK)
        st = ref_qpool_params(m, &q->pk, c->err);
    if (st == NPU_EUSER) { /* a depthwise conv its datapath does not take, a pool the reference refuses */
        npu_err_clear(c->err);
        return NPU_OK;
    }
    if (st != NPU_OK)
        return st;
    const nk_qconv2d_params *k = &q->cv.k;
    if (k->n != 1 || q->pk.n != 1 || q->pk.dil_h != 1 || q->pk.dil_w != 1)
        return NPU_OK;
    q->C = k->c_in, q->H = k->h_in, q->W = k->w_in, q->OC = k->c_out, q->CH = k->h_out, q->CW = k->w_out;
    q->OH = q->pk.h_out, q->OW = q->pk.w_out;
    q->px = tile_axis_range(0, q->OW, q->CW, q->pk.k_w, q->pk.stride_w, 1, q->pk.pad_left);
    q->cx = tile_axis_range(q->px.i0, q->px.i1, q->W, k->k_w, k->stride_w, k->dil_w, k->pad_left);
    *ok = q->px.i1 > q->px.i0 && q->cx.i1 > q->cx.i0;
    return NPU_OK;
}

/* The weight blocks of chunks of ct channels: a full chunk's and the last one's bytes. */
static npu_status weights_for(tile_ctx *c, cpool *q)
{
    tile_convinfo b;
    npu_status st = tile_conv_block(c, q->n, 0, q->ct, 0, false, &b);
    q->wblk = b.blk_bytes;
    if (st == NPU_OK)
        st = tile_conv_block(c, q->n, (q->n_ct - 1) * q->ct, chunk_ch(q, q->n_ct - 1), 0, false, &b);
    q->wlast = b.blk_bytes;
    return st;
}

/* Weight slots: the one block, resident; chunks stream theirs through the work's slots. */
static int w_slots(const cpool *q)
{
    return q->n_ct > 1 ? q->slots : 1;
}

/* Sizes of the plan (oht, ct, slots); false when the SRAM or a field cannot take it. */
static bool sizes(const tile_ctx *c, cpool *q)
{
    q->n_bands = tile_cdiv(q->OH, q->oht);
    q->ihx = q->ihm = 0;
    for (int64_t j = 0; j < q->n_bands; j++) {
        band b = band_of(q, j);
        if (b.py.i1 <= b.py.i0 || b.cy.i1 <= b.cy.i0)
            return false; /* a band whose window lies entirely in the padding */
        q->ihm = b.py.i1 - b.py.i0 > q->ihm ? b.py.i1 - b.py.i0 : q->ihm;
        q->ihx = b.cy.i1 - b.cy.i0 > q->ihx ? b.cy.i1 - b.cy.i0 : q->ihx;
    }
    int64_t iw = q->cx.i1 - q->cx.i0, cw = q->px.i1 - q->px.i0;
    tgt_sem s = q->cv.sem, p = TGT_SEM_POOL;
    int64_t cin = s == TGT_SEM_CONV ? q->C : q->ct;
    bool f = q->ihx <= tile_fmax(c, s, TGT_F_IH) && iw <= tile_fmax(c, s, TGT_F_IW) &&
             q->ihm <= tile_fmax(c, s, TGT_F_OH) && cw <= tile_fmax(c, s, TGT_F_OW) &&
             q->ct <= tile_fmax(c, p, TGT_F_C) && q->ihm <= tile_fmax(c, p, TGT_F_IH) &&
             cw <= tile_fmax(c, p, TGT_F_IW) && q->oht <= tile_fmax(c, p, TGT_F_OH) &&
             q->OW <= tile_fmax(c, p, TGT_F_OW);
    f = f && (s == TGT_SEM_CONV ? cin <= tile_fmax(c, s, TGT_F_IC) && q->ct <= tile_fmax(c, s, TGT_F_OC)
                                : q->ct <= tile_fmax(c, s, TGT_F_C));
    q->in_slot = q->C * q->ihx * iw;
    if (q->pre) { /* the int8 rows, then the float32 ones */
        q->in_f = (q->in_slot + 15) & ~(int64_t)15;
        f = f && q->in_slot <= tile_fmax(c, TGT_SEM_QUANTIZE, TGT_F_LEN);
        q->in_slot = q->in_f + 4 * q->in_slot;
    }
    q->mid_slot = q->ct * q->ihm * cw;
    q->out_slot = q->ct * q->oht * q->OW;
    int in_slots = q->n_bands > 1 ? q->slots : 1, nbuf = w_slots(q) + in_slots + 2 * q->slots;
    int64_t total = 16 * nbuf + w_slots(q) * q->wblk + in_slots * q->in_slot + q->slots * (q->mid_slot + q->out_slot);
    return f && total <= c->t->p[TGT_P_SRAM_BYTES];
}

/* DMA cycles of work i's loads: its input rows (float32 with a prologue),
 * its weight block (the first work, or every chunk). */
static int64_t load_time(const tile_ctx *c, const cpool *q, int64_t i)
{
    band b = band_of(q, i / q->n_ct);
    int64_t ih = b.cy.i1 - b.cy.i0, iw = q->cx.i1 - q->cx.i0, es = q->pre ? 4 : 1;
    int64_t wb = i % q->n_ct == q->n_ct - 1 ? q->wlast : q->wblk;
    int64_t ld = (q->n_ct == 1 || i == 0) && !q->res_in ? tile_dma_time(c, q->C, ih, iw * es, q->W * es) : 0;
    return ld + (q->n_ct > 1 || i == 0 ? tile_dma_time(c, 1, 1, wb, 0) : 0);
}

/* Vector cycles of band j's quantize prologue. */
static int64_t quant_time(const tile_ctx *c, const cpool *q, int64_t j)
{
    band b = band_of(q, j);
    int64_t set[] = {TGT_F_LEN, q->C * (b.cy.i1 - b.cy.i0) * (q->cx.i1 - q->cx.i0)};
    return tile_timing(c, TGT_SEM_QUANTIZE, set, 1);
}

/* Cycles of the plan: the works through the pipeline's four queues (load,
 * MAC, vector, store), work j+slots waiting for store j, the DMA channels
 * sharing the bus; the conv cost model's terms, from tgt_timing. With a
 * prologue the vector queue runs quantize j+1 before pool j (skew). */
static int64_t cost(const tile_ctx *c, const cpool *q)
{
    const nk_qconv2d_params *k = &q->cv.k;
    int64_t cw = q->px.i1 - q->px.i0, lat = c->t->p[TGT_P_DRAM_LATENCY], n = q->n_bands * q->n_ct;
    int64_t le = 0, me = 0, ve = 0, se = 0, qe = 0, bus = 0, free_at[3] = {0, 0, 0};
    if (q->pre) {
        le = load_time(c, q, 0), qe = ve = le + quant_time(c, q, 0);
        bus += le > lat ? le - lat : 0;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t ch = chunk_ch(q, i % q->n_ct);
        band b = band_of(q, i / q->n_ct);
        int64_t mh = b.py.i1 - b.py.i0, oh = b.y1 - b.y0;
        int64_t cin = q->cv.sem == TGT_SEM_CONV ? q->C : ch;
        int64_t mset[] = {TGT_F_IC, cin, TGT_F_OC, ch, TGT_F_C, ch, TGT_F_KH, k->k_h, TGT_F_KW, k->k_w,
                          TGT_F_OH, mh, TGT_F_OW, cw, TGT_F_W4, q->cv.w4};
        int64_t pset[] = {TGT_F_C, ch, TGT_F_KH, q->pk.k_h, TGT_F_KW, q->pk.k_w, TGT_F_OH, oh, TGT_F_OW, q->OW};
        int64_t mac = tile_timing(c, q->cv.sem, mset, 8), vec = tile_timing(c, TGT_SEM_POOL, pset, 5);
        int64_t st = q->res_out ? 0 : tile_dma_time(c, ch, oh, q->OW, q->OW);
        if (q->pre) { /* loads and quantize of band i+1 go ahead of pool i */
            me = (me > qe ? me : qe) + mac;
            if (i + 1 < n) {
                int64_t ld = load_time(c, q, i + 1), fr = i + 1 >= q->slots ? free_at[(i + 1) % q->slots] : 0;
                le = (le > fr ? le : fr) + ld;
                qe = ve = (ve > le ? ve : le) + quant_time(c, q, i + 1);
                bus += ld > lat ? ld - lat : 0;
            }
        } else {
            int64_t ld = load_time(c, q, i), fr = i >= q->slots ? free_at[i % q->slots] : 0;
            le = (ld ? (le > fr ? le : fr) : le) + ld;
            me = (me > le ? me : le) > fr ? (me > le ? me : le) : fr;
            me += mac;
            bus += ld > lat ? ld - lat : 0;
        }
        ve = (ve > me ? ve : me) + vec;
        se = (se > ve ? se : ve) + st;
        free_at[i % q->slots] = se;
        bus += st > lat ? st - lat : 0;
    }
    return se > bus + lat ? se : bus + lat;
}

/* Keeps in *best the cheaper of *best and the plan (oht, ct, slots). */
static npu_status try_plan(tile_ctx *c, cpool *q, int64_t oht, int64_t ct, int slots, cpool *best, int64_t *best_cost)
{
    q->oht = oht, q->ct = ct, q->n_ct = tile_cdiv(q->OC, ct), q->slots = slots;
    npu_status st = weights_for(c, q);
    if (st != NPU_OK || !sizes(c, q))
        return st;
    int64_t cst = cost(c, q);
    if (cst < *best_cost)
        *best = *q, *best_cost = cst;
    return NPU_OK;
}

/* The cheapest plan into *q (*cst, INT64_MAX when none fits): row bands of
 * all channels (the largest that fits and halvings of it), or one band of
 * whole planes in channel chunks (all, then halving in multiples of
 * mac.cols); two or three slots. whole: only whole planes (an SRAM-resident
 * operand is read in place). */
static npu_status search(tile_ctx *c, cpool *q, bool whole, int64_t *cst)
{
    cpool best = *q;
    int64_t cols = c->t->p[TGT_P_MAC_COLS];
    npu_status st = NPU_OK;
    *cst = INT64_MAX;
    for (int slots = 3; slots >= 2 && st == NPU_OK; slots--) {
        int64_t hi = q->OH;
        q->ct = q->OC, q->n_ct = 1, q->slots = slots;
        if ((st = weights_for(c, q)) != NPU_OK)
            return st;
        for (; hi > 0; hi = hi > 8 ? hi - hi / 8 : hi - 1) {
            q->oht = hi;
            if (sizes(c, q))
                break;
        }
        for (int64_t r = hi, k = 0; !whole && r >= 1 && k < 6 && st == NPU_OK; r = tile_cdiv(r, 2), k++) {
            st = try_plan(c, q, r, q->OC, slots, &best, cst);
            if (r == 1)
                break;
        }
        /* chunks of a prologue: only the first would load (and quantize) the input, and the
         * other works' first compute would be the conv: two LOADED consumers */
        for (int64_t ct = q->OC; ct >= 1 && !q->pre && st == NPU_OK; ct = ct > cols ? ((ct / 2 + cols - 1) / cols) * cols : 0)
            st = try_plan(c, q, q->OH, ct, slots, &best, cst);
    }
    *q = best;
    return st;
}

/* The plan into *q; *found false when none fits. In tile_cascades
 * (c->deciding) also false when the pair apart is not slower through DRAM
 * (the scratch plan), or when whole planes fit and, the pair's input and
 * output SRAM-resident (the conv and the pool apart then move nothing but
 * their weights), the cascade would be more than 1% slower: one chunk
 * overlaps nothing, and the memory plan is not known yet. With a prologue
 * tile_cascades weighs the three nodes against the alternatives itself. A
 * plan made for the cascade always lowers. */
static npu_status choose(tile_ctx *c, cpool *q, bool whole, bool *found)
{
    int64_t cst = INT64_MAX;
    npu_status st = search(c, q, whole, &cst);
    *found = st == NPU_OK && cst < INT64_MAX;
    if (!*found || !c->deciding || q->pre)
        return st;
    int64_t a1 = tile_conv_estimate(c, q->n, false), a2 = tile_pool_estimate(c, q->m, false);
    *found = a1 >= INT64_MAX / 4 || a2 >= INT64_MAX / 4 || cst < a1 + a2;
    cpool r = *q;
    r.res_in = r.res_out = true;
    if (*found && (st = search(c, &r, true, &cst)) == NPU_OK && cst < INT64_MAX) {
        a1 = tile_conv_estimate(c, q->n, true), a2 = tile_pool_estimate(c, q->m, true);
        *found = a1 >= INT64_MAX / 4 || a2 >= INT64_MAX / 4 || cst * 100 <= (a1 + a2) * 101;
    }
    return st;
}

typedef struct bufs {
    int xr, zr;
    int64_t xo, zo; /* with a prologue x is the quantize's float32 input */
    int64_t in[3], mid[3], out[3], wt[3];
    tile_convinfo *cb; /* per chunk: its weight block in the constants */
    int64_t pv[TGT_F_COUNT];
    int64_t qv[TGT_F_COUNT]; /* the prologue's quantize */
} bufs;

/* Work i: band i / n_ct, channel chunk i % n_ct. */
static npu_status emit_work(tile_ctx *c, const cpool *q, const bufs *b, int64_t i)
{
    int64_t k = i % q->n_ct, o0 = k * q->ct, ch = chunk_ch(q, k), s = i % q->slots;
    band bd = band_of(q, i / q->n_ct);
    int64_t ih = bd.cy.i1 - bd.cy.i0, iw = q->cx.i1 - q->cx.i0, mh = bd.py.i1 - bd.py.i0, cw = q->px.i1 - q->px.i0;
    int64_t oh = bd.y1 - bd.y0, in = b->in[q->n_ct > 1 ? 0 : i % q->slots];
    tile_work *wk = tile_work_new(c);
    if (!wk)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    int64_t es = q->pre ? 4 : 1;
    if (q->n_ct == 1 || i == 0)
        tile_load(wk, tile_box_chw(b->xr, b->xo + (bd.cy.i0 * q->W + q->cx.i0) * es, q->H, q->W * es, in + q->in_f,
                                   q->C, ih, iw * es));
    const tile_convinfo *cb = &b->cb[k];
    int64_t wt = b->wt[q->n_ct > 1 ? s : 0];
    if (q->n_ct > 1 || i == 0) /* the one block stays resident; chunks stream theirs */
        tile_load_flat(c, wk, TGT_REGION_CONSTANTS, cb->blk_off, wt, cb->blk_bytes);
    if (q->pre) { /* dense rows: the float32 tile's flat order is the conv input's C x H x W */
        tile_comp *cq = tile_comp_new(c, wk, TGT_SEM_QUANTIZE);
        if (!cq)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        memcpy(cq->v, b->qv, sizeof b->qv);
        cq->v[TGT_F_SRC] = in + q->in_f, cq->v[TGT_F_DST] = in, cq->v[TGT_F_LEN] = q->C * ih * iw;
    }
    tile_comp *cc = tile_comp_new(c, wk, q->cv.sem);
    tile_comp *cp = cc ? tile_comp_new(c, wk, TGT_SEM_POOL) : NULL;
    if (!cp)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    cc = cp - 1;
    int64_t *v = cc->v;
    bool dw = q->cv.sem == TGT_SEM_DWCONV; /* reads its own channels of the input */
    tile_conv_fields(v, cb, in + (dw ? o0 * ih * iw : 0), b->mid[s], wt);
    if (dw)
        v[TGT_F_C] = ch;
    else
        v[TGT_F_IC] = q->C, v[TGT_F_OC] = ch;
    v[TGT_F_IH] = ih, v[TGT_F_IW] = iw, v[TGT_F_OH] = mh, v[TGT_F_OW] = cw;
    v[TGT_F_PT] = bd.cy.p0, v[TGT_F_PB] = bd.cy.p1, v[TGT_F_PL] = q->cx.p0, v[TGT_F_PR] = q->cx.p1;
    v = cp->v;
    memcpy(v, b->pv, sizeof b->pv);
    v[TGT_F_SRC] = b->mid[s], v[TGT_F_DST] = b->out[s], v[TGT_F_C] = ch;
    v[TGT_F_IH] = mh, v[TGT_F_IW] = cw, v[TGT_F_OH] = oh, v[TGT_F_OW] = q->OW;
    v[TGT_F_PT] = bd.py.p0, v[TGT_F_PB] = bd.py.p1, v[TGT_F_PL] = q->px.p0, v[TGT_F_PR] = q->px.p1;
    tile_store(wk, tile_box_chw(b->zr, b->zo + (o0 * q->OH + bd.y0) * q->OW, q->OH, q->OW, b->out[s], ch, oh, q->OW));
    return NPU_OK;
}

npu_status tile_conv_pool(tile_ctx *c, const ir_node *pre, const ir_node *n, const ir_node *m, bool *done)
{
    *done = false;
    cpool q;
    bool ok;
    npu_status st = match(c, pre, n, m, &q, &ok);
    if (st == NPU_OK && ok) {
        /* a prologue's input (the model input, float32) is in DRAM; its int8 tensor has no home */
        bool whole = (!pre && tile_resident_io(c, n)) || tile_resident_io(c, m);
        q.res_in = !pre && tile_tensor_resident(c, n->inputs[0]), q.res_out = tile_tensor_resident(c, m->outputs[0]);
        st = choose(c, &q, whole, &ok);
        if (st == NPU_OK && !ok && whole) { /* none of whole planes: any band (the operand goes back to DRAM) */
            q.res_in = q.res_out = false;
            st = choose(c, &q, false, &ok);
        }
    }
    if (st != NPU_OK || !ok)
        return st;
    *done = true;
    bufs b;
    memset(&b, 0, sizeof b);
    size_t nb = sizeof(tile_convinfo) * (size_t)q.n_ct;
    b.cb = npu_malloc(c->alloc, nb);
    if (!b.cb)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    for (int64_t k = 0; k < q.n_ct && st == NPU_OK; k++)
        st = tile_conv_block(c, n, k * q.ct, chunk_ch(&q, k), 0, true, &b.cb[k]);
    if (st == NPU_OK)
        st = tile_pool_fields(c, m, b.pv);
    if (st == NPU_OK && pre)
        st = tile_quantize_fields(c, pre, b.qv);
    if (st == NPU_OK && (st = tile_tensor_addr(c, pre ? pre->inputs[0] : n->inputs[0], &b.xr, &b.xo)) == NPU_OK)
        st = tile_tensor_addr(c, m->outputs[0], &b.zr, &b.zo);
    /* With a prologue or a global pool, work j's slots on banks of their
     * own, the one weight block on others: the conv of work j, the pool of
     * work j-1 and the quantize of work j+1 then touch no common bank (the
     * NPU model's bank stalls took the static schedule's 28,634 cycles to
     * 41,814 on a stem in tests/unit/test_tiler_qpool.c). Not for the
     * window pools: the span the banks take kept the next layer's prefetch
     * out of the SRAM (fmnist cnn on edge-v1: 106,620 -> 126,359 cycles). */
    int in_slots = q.n_bands > 1 ? q.slots : 1, nr = 0, grp[12], wg = w_slots(&q) == 1 ? q.slots : -1;
    tile_sram_req rq[12];
    bool early[12] = {0}; /* the first weight slot: clear of the layer before where only it fits so */
    for (int i = 0; i < w_slots(&q); i++)
        early[nr] = i == 0, grp[nr] = wg >= 0 ? wg : i, rq[nr++] = (tile_sram_req){q.wblk, &b.wt[i]};
    for (int i = 0; i < in_slots; i++)
        grp[nr] = i, rq[nr++] = (tile_sram_req){q.in_slot, &b.in[i]};
    for (int i = 0; i < q.slots; i++) {
        grp[nr] = i, rq[nr++] = (tile_sram_req){q.mid_slot, &b.mid[i]};
        grp[nr] = i, rq[nr++] = (tile_sram_req){q.out_slot, &b.out[i]};
    }
    bool global = m->op == IR_OP_GLOBAL_AVERAGE_POOL || m->op == IR_OP_GLOBAL_MAX_POOL;
    if (st == NPU_OK && (pre || global))
        st = tile_sram_place_banked(c, rq, nr, grp, q.slots + (wg >= 0), "tiler bug: the cascade's buffers exceed "
                                                                         "the SRAM");
    else if (st == NPU_OK)
        st = tile_sram_place_early(c, rq, nr, early, "tiler bug: the cascade's buffers exceed the SRAM");
    for (int64_t i = 0; i < q.n_bands * q.n_ct && st == NPU_OK; i++)
        st = emit_work(c, &q, &b, i);
    npu_free(c->alloc, b.cb, nb);
    c->depth = q.slots, c->skew = pre != NULL;
    return st == NPU_OK ? tile_pipeline(c) : st;
}
