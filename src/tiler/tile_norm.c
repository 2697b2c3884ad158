/* npu.Softmax and npu.LayerNorm: row-wise instructions of the vector unit.
 * A tile is a band of whole rows (a row never splits: its reduction needs
 * all of it), double-buffered in and out; the node's table (softmax's exp
 * table, layernorm's per-column qtab) is loaded once and stays resident. */
#include <string.h>

#include "kernels/nk_norm.h"
#include "numerics/numerics.h"
#include "tiler/tile_internal.h"

typedef struct rows {
    tgt_sem sem;
    int32_t rows, len, out_zp, lo, hi, mult, shift;
    int64_t eps;
    int64_t table_bytes;
} rows;

static npu_status row_params(tile_ctx *c, const ir_node *n, rows *r)
{
    npu_status st;
    if (n->op == IR_OP_QSOFTMAX) {
        nk_qsoftmax_params p;
        st = ref_qsoftmax_params(n, &p, c->err);
        *r = (rows){TGT_SEM_SOFTMAX, p.rows, p.len, p.out_zp, p.act_min, p.act_max, p.mult, p.shift, 0, 4 * 256};
    } else {
        nk_qlayernorm_params p;
        st = ref_qlayernorm_params(n, &p, c->err);
        *r = (rows){TGT_SEM_LAYERNORM, p.rows, p.len, p.out_zp, p.act_min, p.act_max, 0, 0, p.eps, 12 * (int64_t)p.len};
    }
    return st == NPU_OK ? NPU_OK : npu_err_prefix(c->err, "node '%s'", n->name);
}

/* Rows per tile: what four buffers (two in, two out) take beside the
 * table, at most a quarter of the rows so that DMA overlaps compute. */
static int64_t band_rows(const tile_ctx *c, const rows *r)
{
    int64_t budget = (c->t->p[TGT_P_SRAM_BYTES] - r->table_bytes - 5 * 16) / 4;
    int64_t per = budget / r->len, want = tile_cdiv(r->rows, 4);
    int64_t hmax = tile_fmax(c, r->sem, TGT_F_H);
    if (want * r->len < 4096) /* small bands cost more in per-instruction overhead than they overlap */
        want = tile_cdiv(4096, r->len);
    return tile_min(tile_min(per, want), tile_min(hmax, r->rows));
}

npu_status tile_rownorm(tile_ctx *c, const ir_node *n)
{
    rows r;
    npu_status st = row_params(c, n, &r);
    if (st != NPU_OK)
        return st;
    if (tile_insn(c, r.sem) < 0)
        return tile_fail(c, "the ISA has no %s instruction", tgt_sem_name(r.sem));
    if (r.len > tile_fmax(c, r.sem, TGT_F_W))
        return tile_fail(c, "rows of %d exceed the %s w field (max %lld)", r.len, tgt_sem_name(r.sem),
                         (long long)tile_fmax(c, r.sem, TGT_F_W));
    int xr, yr, tr;
    int64_t xo, yo, to;
    if ((st = tile_tensor_addr(c, n->inputs[0], &xr, &xo)) != NPU_OK ||
        (st = tile_tensor_addr(c, n->outputs[0], &yr, &yo)) != NPU_OK ||
        (st = tile_tensor_addr(c, n->inputs[1], &tr, &to)) != NPU_OK)
        return st;
    int64_t band = band_rows(c, &r);
    if (band < 1)
        return tile_fail(c, "no %s tile of one %d-element row fits the SRAM", tgt_sem_name(r.sem), r.len);
    int64_t T = band * r.len, s[2][2], table;
    tile_sram_req rq[5] = {{r.table_bytes, &table}, {T, &s[0][0]}, {T, &s[0][1]}, {T, &s[1][0]}, {T, &s[1][1]}};
    if ((st = tile_sram_place(c, rq, 5, "no row tile fits the SRAM")) != NPU_OK)
        return st;
    int j = 0;
    for (int64_t r0 = 0; r0 < r.rows; r0 += band, j++) {
        int64_t h = tile_min(band, r.rows - r0), bytes = h * r.len;
        tile_work *wk = tile_work_new(c);
        tile_comp *cp = wk ? tile_comp_new(c, wk, r.sem) : NULL;
        if (!cp)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        if (j == 0) /* the table stays resident for the layer */
            tile_load_flat(c, wk, tr, to, table, r.table_bytes);
        tile_load_flat(c, wk, xr, xo + r0 * r.len, s[j % 2][0], bytes);
        cp->v[TGT_F_SRC] = s[j % 2][0], cp->v[TGT_F_DST] = s[j % 2][1];
        cp->v[r.sem == TGT_SEM_SOFTMAX ? TGT_F_TABLE : TGT_F_QTAB] = table;
        cp->v[TGT_F_H] = h, cp->v[TGT_F_W] = r.len;
        cp->v[TGT_F_OUT_ZP] = r.out_zp, cp->v[TGT_F_CLAMP_LO] = r.lo, cp->v[TGT_F_CLAMP_HI] = r.hi;
        if (r.sem == TGT_SEM_LAYERNORM)
            cp->v[TGT_F_EPS] = r.eps;
        else
            cp->v[TGT_F_MULT] = r.mult, cp->v[TGT_F_SHIFT] = r.shift;
        tile_store_flat(c, wk, yr, yo + r0 * r.len, s[j % 2][1], bytes);
    }
    return tile_pipeline(c);
}
