/* Vector-unit ops and data movement: eltwise (flat chunks, or C x H x W
 * tiles with broadcast operands reloaded per tile), lut and requant (flat
 * chunks), concat slices and view copies (strided DMA, requant when the
 * scales differ). */
#include <string.h>

#include "numerics/numerics.h"
#include "tiler/tile_internal.h"

/* n equal slots of bytes each, placed together. */
static npu_status slots_place(tile_ctx *c, int64_t *off, int n, int64_t bytes, const char *misfit)
{
    tile_sram_req rq[6];
    for (int i = 0; i < n; i++)
        rq[i] = (tile_sram_req){bytes, &off[i]};
    return tile_sram_place(c, rq, n, misfit);
}

static npu_status oom(tile_ctx *c)
{
    return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
}

/* Elements per flat tile: what fits `bufs` equal buffers (two slots each),
 * at least a quarter of the tensor so that DMA overlaps compute, at most
 * what the length field takes. */
static int64_t flat_tile(const tile_ctx *c, int64_t total, int bufs, int64_t reserve, int64_t lenmax)
{
    int64_t budget = (c->t->p[TGT_P_SRAM_BYTES] - reserve - 16 * 2 * bufs) / (2 * bufs);
    int64_t want = tile_cdiv(total, 4) > 4096 ? tile_cdiv(total, 4) : 4096;
    int64_t t = tile_min(tile_min(budget, want), lenmax);
    return t & ~(int64_t)15 ? t & ~(int64_t)15 : t;
}

/* ---- eltwise ---- */

typedef struct operand {
    int region;
    int64_t off;
    int64_t d[4]; /* N, C, H, W of the operand (1 where broadcast) */
} operand;

static npu_status operand_of(tile_ctx *c, const ir_tensor *t, int out_rank, operand *o)
{
    npu_status st = tile_tensor_addr(c, t, &o->region, &o->off);
    if (st != NPU_OK)
        return st;
    int64_t d[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < t->rank; i++)
        d[out_rank - t->rank + i] = t->dims[i];
    /* right-aligned into 4 dims: leading extra dims fold into N */
    for (int i = 0; i < 4; i++)
        o->d[i] = 1;
    for (int i = 0; i < out_rank; i++) {
        int k = i - (out_rank - 4);
        o->d[k < 0 ? 0 : k] *= d[i];
    }
    return NPU_OK;
}

static int bc_bits(const operand *o, const int64_t *od)
{
    return (o->d[1] == 1 && od[1] > 1 ? TGT_BC_C : 0) | (o->d[2] == 1 && od[2] > 1 ? TGT_BC_H : 0) |
           (o->d[3] == 1 && od[3] > 1 ? TGT_BC_W : 0);
}

static tile_box operand_box(const operand *o, int64_t b, int64_t c0, int64_t ct, int64_t y0, int64_t ht, int64_t W,
                            int64_t sram)
{
    int64_t C = o->d[1], H = o->d[2], Wo = o->d[3];
    int64_t cc = C == 1 ? 1 : ct, hh = H == 1 ? 1 : ht, ww = Wo == 1 ? 1 : W;
    int64_t dram = o->off + (((o->d[0] == 1 ? 0 : b) * C + (C == 1 ? 0 : c0)) * H + (H == 1 ? 0 : y0)) * Wo;
    return tile_box_chw(o->region, dram, H, Wo, sram, cc, hh, ww);
}

npu_status tile_eltwise_fields(tile_ctx *c, const ir_node *n, int64_t base[TGT_F_COUNT])
{
    nk_qbinary_params p;
    npu_status st = ref_qbinary_params(n, &p, c->err);
    if (st != NPU_OK)
        return npu_err_prefix(c->err, "node '%s'", n->name);
    static const int ops[] = {[NK_QADD] = TGT_ELT_ADD, [NK_QSUB] = TGT_ELT_SUB, [NK_QMUL] = TGT_ELT_MUL,
                              [NK_QMIN] = TGT_ELT_MIN, [NK_QMAX] = TGT_ELT_MAX};
    bool minmax = p.op == NK_QMIN || p.op == NK_QMAX;
    tgt_defaults(c->t->isa, tile_insn(c, TGT_SEM_ELTWISE), base);
    base[TGT_F_OP] = ops[p.op];
    base[TGT_F_A_MULT] = p.a_mult, base[TGT_F_A_SHIFT] = p.a_shift;
    base[TGT_F_B_MULT] = p.b_mult, base[TGT_F_B_SHIFT] = p.b_shift;
    /* min/max compare in the output scale already: the output stage is the identity */
    base[TGT_F_OUT_MULT] = minmax ? 1 << 30 : p.out_mult, base[TGT_F_OUT_SHIFT] = minmax ? 1 : p.out_shift;
    base[TGT_F_A_ZP] = p.a_zp, base[TGT_F_B_ZP] = p.b_zp, base[TGT_F_OUT_ZP] = p.out_zp;
    base[TGT_F_CLAMP_LO] = p.act_min, base[TGT_F_CLAMP_HI] = p.act_max;
    if (ref_is_a16(n->outputs[0])) /* int16 bounds in their own word */
        base[TGT_F_A16] = 1, base[TGT_F_CLAMP16_LO] = p.act_min, base[TGT_F_CLAMP16_HI] = p.act_max,
        base[TGT_F_CLAMP_LO] = -128, base[TGT_F_CLAMP_HI] = 127;
    return NPU_OK;
}

npu_status tile_eltwise(tile_ctx *c, const ir_node *n)
{
    int64_t base[TGT_F_COUNT];
    npu_status st = tile_eltwise_fields(c, n, base);
    if (st != NPU_OK)
        return st;
    const ir_tensor *y = n->outputs[0];
    operand a, b, o;
    if ((st = operand_of(c, n->inputs[0], y->rank, &a)) != NPU_OK ||
        (st = operand_of(c, n->inputs[1], y->rank, &b)) != NPU_OK || (st = operand_of(c, y, y->rank, &o)) != NPU_OK)
        return st;
    int abc = bc_bits(&a, o.d), bbc = bc_bits(&b, o.d);
    bool flat = !abc && !bbc && a.d[0] == o.d[0] && b.d[0] == o.d[0];
    int64_t es = base[TGT_F_A16] ? 2 : 1; /* bytes per element */
    if (es == 2 && !flat)
        return tile_fail(c, "a broadcast int16 eltwise has no NPU lowering");
    int64_t N = o.d[0], C = o.d[1], H = o.d[2], W = o.d[3];
    int64_t cmax = tile_fmax(c, TGT_SEM_ELTWISE, TGT_F_C), hmax = tile_fmax(c, TGT_SEM_ELTWISE, TGT_F_H);
    int64_t wmax = tile_fmax(c, TGT_SEM_ELTWISE, TGT_F_W);
    if (flat) { /* tiles of whole rows of R elements; a shorter tail as its own tile */
        int64_t L = N * C * H * W, R = tile_min(L, wmax);
        int64_t T = flat_tile(c, L, 3 * (int)es, 0, R * hmax);
        int64_t rows = T / R ? T / R : 1;
        int64_t ts = rows * R;
        int64_t s[2][3];
        npu_status sp = slots_place(c, &s[0][0], 6, ts * es, "no eltwise tile fits the SRAM");
        if (sp != NPU_OK)
            return sp;
        int j = 0;
        for (int64_t e0 = 0; e0 < L; j++) {
            int64_t cnt = L - e0 >= ts ? ts : (L - e0 >= R ? (L - e0) / R * R : L - e0);
            int64_t hh = cnt >= R ? cnt / R : 1, ww = cnt >= R ? R : cnt;
            tile_work *wk = tile_work_new(c);
            tile_comp *cp = wk ? tile_comp_new(c, wk, TGT_SEM_ELTWISE) : NULL;
            if (!cp)
                return oom(c);
            tile_load_flat(c, wk, a.region, a.off + e0 * es, s[j % 2][0], cnt * es);
            tile_load_flat(c, wk, b.region, b.off + e0 * es, s[j % 2][1], cnt * es);
            memcpy(cp->v, base, sizeof base);
            cp->v[TGT_F_A] = s[j % 2][0], cp->v[TGT_F_B] = s[j % 2][1], cp->v[TGT_F_DST] = s[j % 2][2];
            cp->v[TGT_F_C] = 1, cp->v[TGT_F_H] = hh, cp->v[TGT_F_W] = ww;
            tile_store_flat(c, wk, o.region, o.off + e0 * es, s[j % 2][2], cnt * es);
            e0 += cnt;
        }
        return tile_pipeline(c);
    }
    if (W > wmax)
        return tile_fail(c, "broadcast eltwise rows of %lld exceed the w field (max %lld)", (long long)W,
                         (long long)wmax);
    /* channel and row tiles; a broadcast operand's tile is its own (smaller) shape */
    int64_t budget = (c->t->p[TGT_P_SRAM_BYTES] - 6 * 16) / 2;
    int64_t ht = tile_min(H, hmax), ct = tile_min(C, cmax);
    while (ct > 1 && 3 * ct * ht * W > budget)
        ct = tile_cdiv(ct, 2);
    while (ht > 1 && 3 * ct * ht * W > budget)
        ht = tile_cdiv(ht, 2);
    if (3 * ct * ht * W > budget)
        return tile_fail(c, "no eltwise tile fits the SRAM");
    int64_t s[2][3];
    npu_status sp = slots_place(c, &s[0][0], 6, ct * ht * W, "no eltwise tile fits the SRAM");
    if (sp != NPU_OK)
        return sp;
    int j = 0;
    for (int64_t bi = 0; bi < N; bi++)
        for (int64_t c0 = 0; c0 < C; c0 += ct)
            for (int64_t y0 = 0; y0 < H; y0 += ht, j++) {
                int64_t cc = tile_min(ct, C - c0), hh = tile_min(ht, H - y0);
                tile_work *wk = tile_work_new(c);
                tile_comp *cp = wk ? tile_comp_new(c, wk, TGT_SEM_ELTWISE) : NULL;
                if (!cp)
                    return oom(c);
                tile_load(wk, operand_box(&a, bi, c0, cc, y0, hh, W, s[j % 2][0]));
                tile_load(wk, operand_box(&b, bi, c0, cc, y0, hh, W, s[j % 2][1]));
                memcpy(cp->v, base, sizeof base);
                cp->v[TGT_F_A] = s[j % 2][0], cp->v[TGT_F_B] = s[j % 2][1], cp->v[TGT_F_DST] = s[j % 2][2];
                cp->v[TGT_F_C] = cc, cp->v[TGT_F_H] = hh, cp->v[TGT_F_W] = W;
                cp->v[TGT_F_A_BC] = abc, cp->v[TGT_F_B_BC] = bbc;
                tile_store(wk, operand_box(&o, bi, c0, cc, y0, hh, W, s[j % 2][2]));
            }
    return tile_pipeline(c);
}

/* ---- flat copies, lut, requant ---- */

/* rows x row_bytes from (src region, offset, stride) to (dst ...), through SRAM,
 * requantized on the way when rq is set. */
static npu_status copy2d(tile_ctx *c, int sr, int64_t so, int64_t ss, int dr, int64_t dof, int64_t ds, int64_t rows,
                         int64_t rb, const nk_qrequant_params *rq)
{
    int bufs = rq ? 2 : 1;
    int64_t T = flat_tile(c, rows * rb, bufs, 0, tile_fmax(c, TGT_SEM_REQUANT, TGT_F_LEN));
    int64_t s[2][2], o[4];
    /* bufs slots per double-buffer half, placed in one call (tile_sram_place) */
    npu_status sp = slots_place(c, o, 2 * bufs, T, "no copy tile fits the SRAM");
    if (sp != NPU_OK)
        return sp;
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < bufs; k++)
            s[i][k] = o[i * bufs + k];
    int j = 0;
    int64_t per = rb <= T ? tile_min(rows, T / rb) : 1; /* whole rows per tile, or pieces of one row */
    for (int64_t r = 0; r < rows; r += per) {
        int64_t nr = tile_min(per, rows - r);
        for (int64_t x = 0; x < rb; j++) {
            int64_t w = rb <= T ? rb : tile_min(T, rb - x);
            tile_work *wk = tile_work_new(c);
            if (!wk)
                return oom(c);
            int64_t in = s[j % 2][0], out = rq ? s[j % 2][1] : in;
            tile_load(wk, (tile_box){sr, so + r * ss + x, in, 1, nr, w, ss, 0, w, 0});
            if (rq) {
                tile_comp *cp = tile_comp_new(c, wk, TGT_SEM_REQUANT);
                if (!cp)
                    return oom(c);
                cp->v[TGT_F_SRC] = in, cp->v[TGT_F_DST] = out, cp->v[TGT_F_LEN] = nr * w;
                cp->v[TGT_F_MULT] = rq->mult, cp->v[TGT_F_SHIFT] = rq->shift;
                cp->v[TGT_F_IN_ZP] = rq->in_zp, cp->v[TGT_F_OUT_ZP] = rq->out_zp;
                cp->v[TGT_F_CLAMP_LO] = rq->act_min, cp->v[TGT_F_CLAMP_HI] = rq->act_max;
            }
            tile_store(wk, (tile_box){dr, dof + r * ds + x, out, 1, nr, w, ds, 0, w, 0});
            x += w;
        }
    }
    return tile_pipeline(c);
}

/* The DRAM homes of a one-input op's input and output, of equal sizes. */
static npu_status unary_homes(tile_ctx *c, const ir_node *n, int *xr, int64_t *xo, int *yr, int64_t *yo)
{
    npu_status st = tile_tensor_addr(c, n->inputs[0], xr, xo);
    if (st == NPU_OK)
        st = tile_tensor_addr(c, n->outputs[0], yr, yo);
    if (st == NPU_OK && ir_tensor_numel(n->inputs[0]) != ir_tensor_numel(n->outputs[0]))
        st = tile_fail(c, "input and output sizes differ");
    return st;
}

npu_status tile_unary(tile_ctx *c, const ir_node *n)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int xr, yr;
    int64_t xo, yo, L = ir_tensor_numel(y);
    npu_status st = unary_homes(c, n, &xr, &xo, &yr, &yo);
    if (st != NPU_OK)
        return st;
    if (tile_node_a16(n))
        return tile_unary_a16(c, n, xr, xo, yr, yo);
    if (n->op == IR_OP_REQUANTIZE) {
        nk_qrequant_params q;
        if ((st = ref_qrequant_params(n, x, y, &q, c->err)) != NPU_OK)
            return npu_err_prefix(c->err, "node '%s'", n->name);
        return copy2d(c, xr, xo, L, yr, yo, L, 1, L, &q);
    }
    const ir_tensor *tab = n->n_inputs > 1 ? n->inputs[1] : NULL;
    if (!tab || !tab->data || ir_tensor_numel(tab) != 256 || tab->dtype != IR_I8)
        return tile_fail(c, "npu.Lut needs a constant int8 table of 256 entries");
    int tr;
    int64_t to;
    if ((st = tile_tensor_addr(c, tab, &tr, &to)) != NPU_OK)
        return st;
    int64_t T = flat_tile(c, L, 2, 256 + 16, tile_fmax(c, TGT_SEM_LUT, TGT_F_LEN));
    int64_t s[2][2], table;
    tile_sram_req rq[5] = {{256, &table}, {T, &s[0][0]}, {T, &s[0][1]}, {T, &s[1][0]}, {T, &s[1][1]}};
    npu_status sp = tile_sram_place(c, rq, 5, "no lut tile fits the SRAM");
    if (sp != NPU_OK)
        return sp;
    int j = 0;
    for (int64_t e0 = 0; e0 < L; e0 += T, j++) {
        int64_t cnt = tile_min(T, L - e0);
        tile_work *wk = tile_work_new(c);
        tile_comp *cp = wk ? tile_comp_new(c, wk, TGT_SEM_LUT) : NULL;
        if (!cp)
            return oom(c);
        if (j == 0) /* the table stays resident for the layer */
            tile_load(wk, tile_box_table(tr, to, table));
        tile_load_flat(c, wk, xr, xo + e0, s[j % 2][0], cnt);
        cp->v[TGT_F_SRC] = s[j % 2][0], cp->v[TGT_F_DST] = s[j % 2][1], cp->v[TGT_F_TABLE] = table;
        cp->v[TGT_F_LEN] = cnt;
        tile_store_flat(c, wk, yr, yo + e0, s[j % 2][1], cnt);
    }
    return tile_pipeline(c);
}

npu_status tile_quantize_fields(tile_ctx *c, const ir_node *n, int64_t v[TGT_F_COUNT])
{
    const ir_tensor *y = n->outputs[0];
    if (!y->quant || y->quant->count != 1)
        return tile_fail(c, "quantize: to int8 per tensor only");
    uint32_t bits;
    memcpy(&bits, &y->quant->scale[0], sizeof bits);
    tgt_defaults(c->t->isa, tile_insn(c, TGT_SEM_QUANTIZE), v);
    v[TGT_F_FSCALE] = (int32_t)bits, v[TGT_F_OUT_ZP] = y->quant->zero_point[0];
    v[TGT_F_A16] = y->dtype == IR_I16; /* int16 output (A16W8) */
    return NPU_OK;
}

/* float32 -> int8 in flat chunks: 4 bytes in, 1 out per element. */
npu_status tile_quantize(tile_ctx *c, const ir_node *n)
{
    const ir_tensor *y = n->outputs[0];
    int xr, yr;
    int64_t xo, yo, L = ir_tensor_numel(y), qv[TGT_F_COUNT];
    npu_status st = unary_homes(c, n, &xr, &xo, &yr, &yo);
    if (st != NPU_OK || (st = tile_quantize_fields(c, n, qv)) != NPU_OK)
        return st;
    int64_t es = qv[TGT_F_A16] ? 2 : 1;
    int64_t T = flat_tile(c, L, 4 + (int)es, 0, tile_fmax(c, TGT_SEM_QUANTIZE, TGT_F_LEN)) & ~(int64_t)3;
    if (T < 1)
        return tile_fail(c, "no quantize tile fits the SRAM");
    int64_t s[2][2];
    tile_sram_req rq[4] = {{4 * T, &s[0][0]}, {es * T, &s[0][1]}, {4 * T, &s[1][0]}, {es * T, &s[1][1]}};
    if ((st = tile_sram_place(c, rq, 4, "no quantize tile fits the SRAM")) != NPU_OK)
        return st;
    int j = 0;
    for (int64_t e0 = 0; e0 < L; e0 += T, j++) {
        int64_t cnt = tile_min(T, L - e0);
        tile_work *wk = tile_work_new(c);
        tile_comp *cp = wk ? tile_comp_new(c, wk, TGT_SEM_QUANTIZE) : NULL;
        if (!cp)
            return oom(c);
        tile_load_flat(c, wk, xr, xo + 4 * e0, s[j % 2][0], 4 * cnt);
        memcpy(cp->v, qv, sizeof qv);
        cp->v[TGT_F_SRC] = s[j % 2][0], cp->v[TGT_F_DST] = s[j % 2][1], cp->v[TGT_F_LEN] = cnt;
        tile_store_flat(c, wk, yr, yo + e0 * es, s[j % 2][1], cnt * es);
    }
    return tile_pipeline(c);
}

static bool same_quant(const ir_tensor *a, const ir_tensor *b)
{
    return a->quant && b->quant && a->quant->count == 1 && b->quant->count == 1 &&
           a->quant->scale[0] == b->quant->scale[0] && a->quant->zero_point[0] == b->quant->zero_point[0];
}

npu_status tile_concat(tile_ctx *c, const ir_node *n)
{
    const ir_tensor *y = n->outputs[0];
    int64_t axis = ir_attr_int(n, "axis", 0);
    axis += axis < 0 ? y->rank : 0;
    if (axis < 0 || axis >= y->rank)
        return tile_fail(c, "Concat axis out of range");
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= y->dims[i];
    for (int i = (int)axis + 1; i < y->rank; i++)
        inner *= y->dims[i];
    int yr;
    int64_t yo, at = 0, row = y->dims[axis] * inner;
    npu_status st = tile_tensor_addr(c, y, &yr, &yo);
    for (int i = 0; i < n->n_inputs && st == NPU_OK; i++) {
        const ir_tensor *x = n->inputs[i];
        int xr;
        int64_t xo, chunk = x->dims[axis] * inner;
        if ((st = tile_tensor_addr(c, x, &xr, &xo)) != NPU_OK)
            break;
        bool same = same_quant(x, y) && n->act.kind == IR_ACT_NONE;
        if (!(same && xr == yr && xo == yo + at && outer == 1)) { /* not already in its slice */
            nk_qrequant_params q;
            if (!same && (st = ref_qrequant_params(n, x, y, &q, c->err)) != NPU_OK)
                return npu_err_prefix(c->err, "node '%s'", n->name);
            tile_layer_begin(c);
            st = copy2d(c, xr, xo, chunk, yr, yo + at, row, outer, chunk, same ? NULL : &q);
        }
        at += chunk;
    }
    return st;
}

npu_status tile_view(tile_ctx *c, const ir_node *n)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int xr, yr;
    int64_t xo, yo;
    npu_status st = tile_tensor_addr(c, x, &xr, &xo);
    if (st == NPU_OK)
        st = tile_tensor_addr(c, y, &yr, &yo);
    if (st != NPU_OK || (xr == yr && xo == yo))
        return st; /* aliased by the planner: nothing moves */
    int64_t bytes = (int64_t)ir_tensor_bytes(y);
    return copy2d(c, xr, xo, bytes, yr, yo, bytes, 1, bytes, NULL);
}

npu_status tile_copy_rows(tile_ctx *c, int sr, int64_t so, int64_t ss, int dr, int64_t dof, int64_t ds, int64_t rows,
                          int64_t rb)
{
    return copy2d(c, sr, so, ss, dr, dof, ds, rows, rb, NULL);
}
