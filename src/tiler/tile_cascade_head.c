/* Cascading a model's head: a conv (its Lut in the output stage) whose
 * output only a GlobalAveragePool reads, that pool, a flattening view and
 * the classifier Gemm (batch 1) that alone reads it, as one pipeline over
 * chunks of the conv's output channels. Per chunk k the conv's weight block
 * and the classifier's weights for inputs k (its K chunk: every output)
 * load; the conv (MAC array) writes the chunk's planes into SRAM, the pool
 * (vector unit) their means, the classifier (MAC array) adds the chunk's
 * products to int32 partial sums (matmul acc_in / acc_out), and the last
 * chunk requantizes and stores the classifier's output.
 *
 * Why: apart, the classifier's weights (1.28 MB in MobileNetV2 and
 * EfficientNet-B0) stream behind nothing, 160,000 cycles on edge-v1 for
 * 5,000 of MACs, after the conv before it ran with its DMA a third idle.
 * Here the two weight streams share the bus while the MAC array runs the
 * conv. The conv's input (whole planes) loads once, with the first chunk.
 *
 * The vector unit sits between two MAC instructions of a chunk, so the
 * conv of chunk k + 1 goes out before the classifier's chunk k
 * (tile_ctx.skew) and the hand-overs take CHAIN and CHAIN_VEC (seven
 * tokens). Only the last work stores (tile_pipeline lets the last work
 * alone store). Numerics are the nodes' own: the conv's blocks and qtab
 * (tile_conv_block), the pool's fields (tile_pool_fields), the classifier's
 * chunks and qtab (tile_fc_chunks), partial sums exact in int32. */
#include <string.h>

#include "numerics/numerics.h"
#include "tiler/tile_internal.h"

enum { MAX_SLOTS = 3 };

typedef struct head {
    const ir_node *n, *lut, *gp, *fc;
    tile_convinfo cv;
    ref_qfc_setup fs;
    int64_t C, H, W, OC, CH, CW, N;
    tile_axis ay, ax;         /* the conv's input rows and columns, whole planes */
    int64_t ct, n_ct;         /* conv output channels (classifier inputs) per chunk, chunks */
    int64_t wblk;             /* a full chunk's conv block */
    int64_t fchunk, fbytes;   /* a full chunk of the classifier's weights; all of them with the qtab */
    int64_t qtab;             /* the classifier's qtab bytes (16-aligned) */
    int64_t flash;            /* of a full chunk's classifier weights, the tail loaded over the flash bus */
    int slots;
    int pre;                  /* chunks before the last whose classifier weights load during the layers before */
} head;

typedef struct hbufs {
    int64_t in, tab, qtab, psum, out;
    int64_t pre_at;           /* the preloaded classifier chunks, below preload_top */
    int64_t w[MAX_SLOTS], f[MAX_SLOTS], mid[MAX_SLOTS], g[MAX_SLOTS];
    int xr, yr, tr;
    int64_t xo, yo, to, f0; /* the conv input, the classifier output, the Lut's table, the classifier's weights */
    int64_t pv[TGT_F_COUNT];
} hbufs;

static int64_t al16(int64_t v)
{
    return (v + 15) & ~(int64_t)15;
}

static int64_t chunk_ch(const head *h, int64_t k)
{
    return tile_min(h->ct, h->OC - k * h->ct);
}

/* The chain's nodes: conv, [Lut], GlobalAveragePool, [view], Gemm, each the only reader of the one before. */
static bool match_nodes(const tile_ctx *c, const ir_node *const *nd, int len, head *h)
{
    int k = 0;
    h->n = nd[k++];
    h->lut = k < len && tile_conv_lut_ok(c, h->n, nd[k]) ? nd[k++] : NULL;
    if (k >= len || nd[k]->op != IR_OP_GLOBAL_AVERAGE_POOL)
        return false;
    h->gp = nd[k++];
    const ir_node *view = k < len && ir_op_is_view(nd[k]->op) ? nd[k++] : NULL;
    if (k != len - 1 || nd[k]->op != IR_OP_GEMM)
        return false;
    h->fc = nd[k];
    const ir_tensor *y = (h->lut ? h->lut : h->n)->outputs[0], *p = h->gp->outputs[0];
    const ir_tensor *a = view ? view->outputs[0] : p, *wt = h->fc->inputs[1];
    return h->n->op == IR_OP_CONV && ir_attr_int(h->n, "group", 1) == 1 && h->n->inputs[0]->rank == 4 &&
           h->gp->n_inputs == 1 && h->gp->inputs[0] == y && tile_only_reader(c, y, h->gp) &&
           (!view || (view->inputs[0] == p && tile_only_reader(c, p, view))) && h->fc->inputs[0] == a &&
           tile_only_reader(c, a, h->fc) && wt && wt->data && wt->dtype == IR_I8 && p->dtype == IR_I8 &&
           h->fc->outputs[0]->dtype == IR_I8 && !ir_attr_int(h->fc, "transA", 0);
}

/* The structure and parameters; *ok false when it does not apply. */
static npu_status match(tile_ctx *c, const ir_node *const *nd, int len, head *h, bool *ok)
{
    *ok = false;
    memset(h, 0, sizeof *h);
    if (len < 3 || tile_tokens(c->t) < 7 || tile_insn(c, TGT_SEM_POOL) < 0 || tile_insn(c, TGT_SEM_MATMUL) < 0 ||
        !match_nodes(c, nd, len, h))
        return NPU_OK;
    npu_status st = tile_conv_info(c, h->n, false, &h->cv);
    if (st == NPU_OK)
        st = ref_qfc_params(h->fc, &h->fs, c->err);
    if (st == NPU_EUSER) { /* a node the reference refuses runs apart, and says why there */
        npu_err_clear(c->err);
        return NPU_OK;
    }
    const nk_qconv2d_params *k = &h->cv.k;
    if (st != NPU_OK || h->cv.sem != TGT_SEM_CONV || k->n != 1 || h->cv.w4)
        return st;
    h->C = k->c_in, h->H = k->h_in, h->W = k->w_in, h->OC = k->c_out, h->CH = k->h_out, h->CW = k->w_out;
    h->N = h->fs.p.out_features;
    h->ay = tile_axis_range(0, h->CH, h->H, k->k_h, k->stride_h, k->dil_h, k->pad_top);
    h->ax = tile_axis_range(0, h->CW, h->W, k->k_w, k->stride_w, k->dil_w, k->pad_left);
    *ok = h->fs.p.batch == 1 && h->fs.p.in_features == h->OC && h->ay.i0 == 0 && h->ax.i0 == 0 &&
          h->ay.i1 == h->H && h->ax.i1 == h->W && tile_avgpool_ok((void *)c->t, h->CH, h->CW, 1, 1);
    return NPU_OK;
}

static bool fields_ok(const tile_ctx *c, const head *h)
{
    tgt_sem cv = TGT_SEM_CONV, po = TGT_SEM_POOL, mm = TGT_SEM_MATMUL;
    return h->C <= tile_fmax(c, cv, TGT_F_IC) && h->ct <= tile_fmax(c, cv, TGT_F_OC) &&
           h->H <= tile_fmax(c, cv, TGT_F_IH) && h->W <= tile_fmax(c, cv, TGT_F_IW) &&
           h->CH <= tile_fmax(c, cv, TGT_F_OH) && h->CW <= tile_fmax(c, cv, TGT_F_OW) &&
           h->ct <= tile_fmax(c, po, TGT_F_C) && h->CH <= tile_fmax(c, po, TGT_F_IH) &&
           h->CW <= tile_fmax(c, po, TGT_F_IW) && h->CH <= tile_fmax(c, po, TGT_F_KH) &&
           h->CW <= tile_fmax(c, po, TGT_F_KW) && h->ct <= tile_fmax(c, mm, TGT_F_K) &&
           h->N <= tile_fmax(c, mm, TGT_F_N);
}

static int n_buffers(const head *h)
{
    return 4 + (h->lut ? 1 : 0) + 3 * h->slots;
}

/* A slot of the conv's output chunk, and after it the chunk's pooled means (the classifier's input). */
static int64_t mid_bytes(const head *h)
{
    return al16(h->ct * h->CH * h->CW) + h->ct;
}

static int64_t total_bytes(const head *h)
{
    return 16 * n_buffers(h) + h->C * h->H * h->W + (h->lut ? TILE_EPI_TABLE_BYTES : 0) + h->qtab + 4 * h->N + h->N +
           h->slots * (h->wblk + h->fchunk + mid_bytes(h));
}

/* A chunk's weight loads on the DRAM bus (its conv block, the classifier's
 * weights but the flash tail) and on the flash bus. */
static int64_t dram_time(const tile_ctx *c, const head *h, int64_t flash)
{
    return tile_flat_time(c, TGT_REGION_CONSTANTS, h->wblk) +
           tile_flat_time(c, TGT_REGION_CONSTANTS, al16(h->N * h->ct) - flash);
}

/* Chunk k's flash tail: its share of a full chunk's, whole 16-byte lines,
 * at least one. The first chunk takes none: its DRAM loads go out before
 * the barrier (emit_prefetch, tile_retro), a flash load could not (channel 1
 * holds the layer before's stores) and would hold the first matmul from the
 * barrier on; the next chunks' tails load while it computes. MobileNetV2 on
 * edge-v1: 1,429,034 cycles with a tail in every chunk, 1,424,948 with none
 * in the first three, 1,421,786 with none in the first alone. */
static int64_t chunk_flash(const head *h, int64_t k)
{
    if (!h->flash || k == 0)
        return 0;
    int64_t f = (h->flash * chunk_ch(h, k) / h->ct) & ~(int64_t)15;
    return f < 16 ? 16 : f;
}

/* Sizes of chunks of ct channels (three slots where they fit, else two); false when they do not fit. */
static npu_status sizes(tile_ctx *c, head *h, int64_t ct, bool *fit)
{
    h->ct = ct, h->n_ct = tile_cdiv(h->OC, ct);
    tile_convinfo b;
    int64_t off = 0;
    npu_status st = tile_conv_block(c, h->n, 0, ct, 0, false, &b);
    if (st == NPU_OK)
        st = tile_fc_chunks(c, h->fc, ct, false, &off, &h->fchunk, &h->fbytes);
    h->wblk = b.blk_bytes, h->qtab = al16(12 * h->N);
    /* edge-v1's flash carries about a fifth of the bytes at a quarter of the DRAM's rate */
    h->flash = st == NPU_OK ? tile_flash_tail(c, tile_flat_time(c, TGT_REGION_CONSTANTS, h->wblk), al16(h->N * ct)) : 0;
    *fit = false;
    for (h->slots = MAX_SLOTS; st == NPU_OK && h->slots >= 2; h->slots--)
        if ((*fit = fields_ok(c, h) && n_buffers(h) <= TILE_MAX_BUFFERS &&
                    total_bytes(h) <= c->t->p[TGT_P_SRAM_BYTES]))
            break;
    return st;
}

/* Cycles: the first chunk's loads (with the input and qtab), then per chunk the busiest of its two weight
 * loads on the bus, its MAC work and its pool (three slots), then the last chunk's pool and classifier
 * and the store. */
static int64_t cost(const tile_ctx *c, const head *h)
{
    const nk_qconv2d_params *k = &h->cv.k;
    int64_t cv[] = {TGT_F_IC, h->C, TGT_F_OC, h->ct, TGT_F_KH, k->k_h, TGT_F_KW, k->k_w, TGT_F_OH, h->CH,
                    TGT_F_OW, h->CW};
    int64_t po[] = {TGT_F_C, h->ct, TGT_F_IH, h->CH, TGT_F_IW, h->CW, TGT_F_KH, h->CH, TGT_F_KW, h->CW};
    int64_t mm[] = {TGT_F_M, 1, TGT_F_K, h->ct, TGT_F_N, h->N};
    int64_t mac = tile_timing(c, TGT_SEM_CONV, cv, 6) + tile_timing(c, TGT_SEM_MATMUL, mm, 3);
    int64_t pool = tile_timing(c, TGT_SEM_POOL, po, 5), dma = dram_time(c, h, h->flash);
    int64_t fl = h->flash ? tile_flat_time(c, TGT_REGION_FLASH, h->flash) : 0;
    dma = dma > fl ? dma : fl;
    /* with two slots chunk k + 2's loads wait for chunk k's classifier, queued behind chunk k + 1's conv,
     * which waits for its own loads: loads and MACs in series */
    int64_t per = h->slots < 3 ? mac + dma : mac > dma ? mac : dma;
    per = per > pool ? per : pool;
    int64_t first = tile_dma_time(c, 1, 1, h->C * h->H * h->W + h->qtab, 0);
    return first + h->n_ct * per + pool + tile_timing(c, TGT_SEM_MATMUL, mm, 3) + tile_dma_time(c, 1, 1, h->N, 0);
}

/* The cheapest chunk width, multiples of the array's columns; *found false when none fits. */
static npu_status choose(tile_ctx *c, head *h, bool *found)
{
    int64_t cols = c->t->p[TGT_P_MAC_COLS], best = 0, best_cost = INT64_MAX;
    *found = false;
    for (int64_t ct = cols; ct <= h->OC; ct *= 2) {
        bool fit = false;
        npu_status st = sizes(c, h, ct, &fit);
        if (st != NPU_OK)
            return st;
        int64_t cst = fit ? cost(c, h) : INT64_MAX;
        if (cst < best_cost)
            best = ct, best_cost = cst;
    }
    if (!best)
        return NPU_OK;
    return sizes(c, h, best, found);
}

/* Is chunk k's classifier one of the preloaded ones, just before the last chunk? */
static bool preloaded(const head *h, int64_t k)
{
    return k >= h->n_ct - 1 - h->pre && k < h->n_ct - 1;
}

/* Where the preloaded chunks end: below the resident tensors of the head
 * and of the pipelines before it (tile_retro_flash loads them then). */
static int64_t preload_top(const tile_ctx *c)
{
    int64_t top = c->t->p[TGT_P_SRAM_BYTES];
    for (int k = 0; k < c->n_hist; k++)
        top = tile_min(top, c->hist[k].cap);
    return top & ~(int64_t)15;
}

/* Where p preloaded classifier chunks begin: below preload_top. */
static int64_t preload_base(const tile_ctx *c, const head *h, int p)
{
    return (preload_top(c) - p * al16(h->fchunk)) & ~(int64_t)15;
}

/* The head's buffers into rq, ranked for tile_sram_pack: 1 those loads
 * fill, 0 the rest (the input is the layer before's output: its load waits
 * for the barrier). The loads are ranked alike, so that the most bytes load
 * before the barrier (the head is bound by its buses): with the first
 * chunk's first, MobileNetV2's first conv waited 1.5K cycles less for the
 * qtab, but a second chunk's block waited for the barrier, +2.6K cycles. */
static int requests(const head *h, hbufs *b, tile_sram_req *rq, int *rank)
{
    int n = 0;
    rq[n] = (tile_sram_req){h->C * h->H * h->W, &b->in}, rank[n++] = 0;
    rq[n] = (tile_sram_req){h->qtab, &b->qtab}, rank[n++] = 1;
    rq[n] = (tile_sram_req){4 * h->N, &b->psum}, rank[n++] = 0;
    rq[n] = (tile_sram_req){h->N, &b->out}, rank[n++] = 0;
    if (h->lut)
        rq[n] = (tile_sram_req){TILE_EPI_TABLE_BYTES, &b->tab}, rank[n++] = 1;
    for (int i = 0; i < h->slots; i++) {
        rq[n] = (tile_sram_req){h->wblk, &b->w[i]}, rank[n++] = 1;
        rq[n] = (tile_sram_req){h->fchunk, &b->f[i]}, rank[n++] = 1;
        rq[n] = (tile_sram_req){mid_bytes(h), &b->mid[i]}, rank[n++] = 0;
    }
    return n;
}

/* How many classifier chunks, those just before the last, load over the
 * flash bus during the layers before (tile_retro_flash), in buffers of
 * their own below the resident tensors of those layers (preload_top), the
 * head's other buffers packed around them (tile_sram_pack): those chunks
 * then load only their conv blocks, and the head, bound by both buses, ends
 * sooner by a tenth of a cycle a byte. MobileNetV2 on edge-v1: blocks 15 to
 * 17 leave the flash bus idle, and three chunks (192 KB) fit between their
 * tiles (below 208 KB) and their resident tensors (from 422 KB). Not the
 * first chunks: preloaded into the rotating slots, the fourth chunk waits
 * for the first one's classifier with both buses idle (5.3K cycles); nor
 * the last: its conv would then trail the buses. */
static int preloads(tile_ctx *c, const head *h)
{
    if (!h->flash || tile_tokens(c->t) < 8 || c->serial || c->deciding || h->n_ct <= h->slots + 1)
        return 0;
    int64_t top = preload_top(c);
    hbufs b;
    tile_sram_req rq[TILE_MAX_BUFFERS];
    int rank[TILE_MAX_BUFFERS];
    int n = requests(h, &b, rq, rank);
    for (int p = (int)(h->n_ct - h->slots - 1); p > 0; p--) {
        int64_t lo = preload_base(c, h, p);
        if (tile_sram_pack(c, rq, rank, n, c->t->p[TGT_P_SRAM_BYTES], lo, top, false) &&
            tile_flash_room(c, lo, top) >= p * al16(h->fchunk))
            return p;
    }
    return 0;
}

/* The plan's buffers, homes and the classifier's weights in the constants. */
static npu_status prepare(tile_ctx *c, const head *h, hbufs *b)
{
    int64_t chunk = 0, bytes = 0;
    npu_status st = tile_fc_chunks(c, h->fc, h->ct, true, &b->f0, &chunk, &bytes);
    if (st == NPU_OK)
        st = tile_tensor_addr(c, h->n->inputs[0], &b->xr, &b->xo);
    if (st == NPU_OK)
        st = tile_tensor_addr(c, h->fc->outputs[0], &b->yr, &b->yo);
    if (st == NPU_OK)
        st = tile_pool_fields(c, h->gp, b->pv);
    if (st == NPU_OK && h->lut)
        st = tile_tensor_addr(c, h->lut->inputs[1], &b->tr, &b->to);
    if (st != NPU_OK)
        return st;
    tile_sram_req rq[TILE_MAX_BUFFERS];
    int rank[TILE_MAX_BUFFERS];
    int n = requests(h, b, rq, rank);
    int64_t top = preload_top(c);
    b->pre_at = preload_base(c, h, h->pre);
    /* with preloaded chunks by hand around them (tile_sram_pack, as preloads found they fit), else in one
     * placement, the first chunk's slots and the shared buffers early: clear of the layer before where only
     * they fit so */
    if (h->pre && !tile_sram_pack(c, rq, rank, n, c->t->p[TGT_P_SRAM_BYTES], b->pre_at, top, true)) {
        st = tile_fail(c, "tiler bug: the head's buffers do not fit around its preloaded chunks");
    } else if (!h->pre) {
        bool early[TILE_MAX_BUFFERS] = {0};
        for (int i = 0; i < (h->lut ? 5 : 4) + 3; i++)
            early[i] = true;
        st = tile_sram_place_early(c, rq, n, early, "tiler bug: the head cascade's buffers exceed the SRAM");
    }
    for (int i = 0; i < h->slots; i++)
        b->g[i] = b->mid[i] + al16(h->ct * h->CH * h->CW);
    b->tab = tile_epi_table_at(b->tab);
    return st;
}

/* Chunk k's loads (with the first: the input, the table, the classifier's qtab) and computes. */
static npu_status emit_chunk(tile_ctx *c, const head *h, const hbufs *b, int64_t k)
{
    tile_work *wk = tile_work_new(c);
    if (!wk)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    int s = (int)(k % h->slots);
    int64_t ct = chunk_ch(h, k);
    if (k == 0) {
        tile_load(wk, tile_box_chw(b->xr, b->xo, h->H, h->W, b->in, h->C, h->H, h->W));
        if (h->lut)
            tile_load(wk, tile_box_table(b->tr, b->to, b->tab));
        tile_load_flat(c, wk, TGT_REGION_CONSTANTS, b->f0 + h->fbytes - h->qtab, b->qtab, h->qtab);
    }
    tile_convinfo cb;
    npu_status st = tile_conv_block(c, h->n, k * h->ct, ct, 0, true, &cb);
    if (st != NPU_OK)
        return st;
    tile_load_flat(c, wk, TGT_REGION_CONSTANTS, cb.blk_off, b->w[s], cb.blk_bytes);
    int64_t fbytes = al16(h->N * ct), fl = chunk_flash(h, k), fw = b->f[s];
    if (preloaded(h, k)) { /* all over flash, all but its last bytes during the layers before */
        fw = b->pre_at + (k - (h->n_ct - 1 - h->pre)) * al16(h->fchunk);
        tile_load_flash(c, wk, b->f0 + k * h->fchunk, fw, fbytes, 2);
        wk->flash_pre = true;
    } else {
        if (k == h->n_ct - 1 && h->n_ct > 1) /* the last conv need not wait for the classifier's weights */
            tile_load_split(wk, 2);
        tile_load_flat(c, wk, TGT_REGION_CONSTANTS, b->f0 + k * h->fchunk, fw, fbytes - fl);
        if (fl) /* the classifier (compute 2) waits for it */
            tile_load_flash(c, wk, b->f0 + k * h->fchunk + fbytes - fl, fw + fbytes - fl, fl, 2);
    }
    tile_comp *cv = tile_comp_new(c, wk, TGT_SEM_CONV);
    tile_comp *po = cv ? tile_comp_new(c, wk, TGT_SEM_POOL) : NULL;
    tile_comp *mm = po ? tile_comp_new(c, wk, TGT_SEM_MATMUL) : NULL;
    if (!mm)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    cv = mm - 2, po = mm - 1; /* the array may have moved */
    int64_t *v = cv->v;
    tile_conv_fields(v, &cb, b->in, b->mid[s], b->w[s]);
    v[TGT_F_IC] = h->C, v[TGT_F_OC] = ct, v[TGT_F_IH] = h->H, v[TGT_F_IW] = h->W, v[TGT_F_OH] = h->CH;
    v[TGT_F_OW] = h->CW, v[TGT_F_PT] = h->ay.p0, v[TGT_F_PB] = h->ay.p1, v[TGT_F_PL] = h->ax.p0;
    v[TGT_F_PR] = h->ax.p1;
    if (h->lut)
        v[TGT_F_EPI_LUT] = 1, v[TGT_F_TABLE] = b->tab;
    v = po->v;
    memcpy(v, b->pv, sizeof b->pv);
    v[TGT_F_SRC] = b->mid[s], v[TGT_F_DST] = b->g[s], v[TGT_F_C] = ct, v[TGT_F_IH] = v[TGT_F_KH] = h->CH;
    v[TGT_F_IW] = v[TGT_F_KW] = h->CW, v[TGT_F_OH] = v[TGT_F_OW] = 1, v[TGT_F_SH] = v[TGT_F_SW] = 1;
    v[TGT_F_PT] = v[TGT_F_PL] = v[TGT_F_PB] = v[TGT_F_PR] = 0;
    v = mm->v;
    const nk_qfc_params *f = &h->fs.p;
    v[TGT_F_SRC] = b->g[s], v[TGT_F_DST] = b->out, v[TGT_F_WGT] = fw, v[TGT_F_QTAB] = b->qtab;
    v[TGT_F_M] = 1, v[TGT_F_K] = ct, v[TGT_F_N] = h->N, v[TGT_F_IN_ZP] = f->in_zp, v[TGT_F_OUT_ZP] = f->out_zp;
    v[TGT_F_CLAMP_LO] = f->act_min, v[TGT_F_CLAMP_HI] = f->act_max;
    if (h->n_ct > 1)
        v[TGT_F_PSUM] = b->psum, v[TGT_F_ACC_IN] = k > 0, v[TGT_F_ACC_OUT] = k < h->n_ct - 1;
    if (k == h->n_ct - 1)
        tile_store_flat(c, wk, b->yr, b->yo, b->out, h->N);
    return NPU_OK;
}

/* The head, its c->t's SRAM raised (tile_head). */
static npu_status lower_head(tile_ctx *c, head *h, bool *done)
{
    bool ok = false;
    npu_status st = choose(c, h, &ok);
    if (st != NPU_OK || !ok)
        return st;
    *done = true;
    h->pre = preloads(c, h);
    hbufs b;
    memset(&b, 0, sizeof b);
    st = prepare(c, h, &b);
    for (int64_t k = 0; k < h->n_ct && st == NPU_OK; k++)
        st = emit_chunk(c, h, &b, k);
    c->depth = h->slots, c->skew = h->n_ct > 1; /* the conv of chunk k + 1 before the classifier's chunk k */
    return st == NPU_OK ? tile_pipeline(c) : st;
}

/* The head's own buffers may use the SRAM up to its resident tensors
 * (tile_lay_cap) rather than the SRAM level's base: c->t's SRAM is raised
 * to it while the head lowers, and set back after. */
npu_status tile_head(tile_ctx *c, const ir_node *const *nd, int len, bool *done)
{
    *done = false;
    head h;
    bool ok = false;
    npu_status st = match(c, nd, len, &h, &ok);
    if (st != NPU_OK || !ok)
        return st;
    int64_t level = c->t->p[TGT_P_SRAM_BYTES];
    bool raise = c->below && tile_lay_cap(c) > level;
    if (raise)
        c->below->p[TGT_P_SRAM_BYTES] = tile_lay_cap(c) & ~(int64_t)15;
    st = lower_head(c, &h, done);
    if (raise)
        c->below->p[TGT_P_SRAM_BYTES] = level;
    return st;
}
