/* The int16 (A16W8) forms of npu.Requantize (between int8 and int16, or
 * int16 to int16) and npu.Lut (the 513-entry interpolated table) as flat
 * chunks on the vector unit: elements per tile from the SRAM, each side's
 * bytes by its width. */
#include "numerics/numerics.h"
#include "tiler/tile_internal.h"

npu_status tile_unary_a16(tile_ctx *c, const ir_node *n, int xr, int64_t xo, int yr, int64_t yo)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    bool lut = n->op == IR_OP_LUT;
    int64_t ei = ref_is_a16(x) ? 2 : 1, eo = ref_is_a16(y) ? 2 : 1, L = ir_tensor_numel(y);
    nk_qrequant_params q = {0};
    const ir_tensor *tab = lut && n->n_inputs > 1 ? n->inputs[1] : NULL;
    int tr = 0;
    int64_t to = 0, tbytes = 0;
    npu_status st;
    if (lut) {
        if (!tab || !tab->data || tab->dtype != IR_I16 || ir_tensor_numel(tab) != NK_LUT16_SIZE || ei != 2 || eo != 2)
            return tile_fail(c, "an int16 npu.Lut needs int16 data and a constant int16 table of 513 entries");
        tbytes = 2 * NK_LUT16_SIZE;
        if ((st = tile_tensor_addr(c, tab, &tr, &to)) != NPU_OK)
            return st;
    } else if ((st = ref_qrequant_params(n, x, y, &q, c->err)) != NPU_OK) {
        return npu_err_prefix(c->err, "node '%s'", n->name);
    }
    tgt_sem sem = lut ? TGT_SEM_LUT : TGT_SEM_REQUANT;
    /* two slots per side, double buffered: elements that fit, at most what the len field takes */
    int64_t room = (c->t->p[TGT_P_SRAM_BYTES] - tbytes - 16 * 6) / (2 * (ei + eo));
    int64_t T = tile_min(tile_min(room, L), tile_fmax(c, sem, TGT_F_LEN)) & ~(int64_t)15;
    T = T > 0 ? T : tile_min(L, 16);
    int64_t s[2][2], table = 0;
    tile_sram_req rq[5] = {{T * ei, &s[0][0]}, {T * eo, &s[0][1]}, {T * ei, &s[1][0]}, {T * eo, &s[1][1]},
                           {tbytes, &table}};
    if ((st = tile_sram_place(c, rq, lut ? 5 : 4, "no int16 lut/requant tile fits the SRAM")) != NPU_OK)
        return st;
    int j = 0;
    for (int64_t e0 = 0; e0 < L; e0 += T, j++) {
        int64_t cnt = tile_min(T, L - e0);
        tile_work *wk = tile_work_new(c);
        tile_comp *cp = wk ? tile_comp_new(c, wk, sem) : NULL;
        if (!cp)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        if (lut && j == 0) /* the table stays resident for the layer */
            tile_load_flat(c, wk, tr, to, table, tbytes);
        tile_load_flat(c, wk, xr, xo + e0 * ei, s[j % 2][0], cnt * ei);
        int64_t *v = cp->v;
        v[TGT_F_SRC] = s[j % 2][0], v[TGT_F_DST] = s[j % 2][1], v[TGT_F_LEN] = cnt;
        v[TGT_F_A16] = eo == 2;
        if (lut) {
            v[TGT_F_TABLE] = table;
        } else {
            v[TGT_F_IN16] = ei == 2;
            v[TGT_F_MULT] = q.mult, v[TGT_F_SHIFT] = q.shift, v[TGT_F_IN_ZP] = q.in_zp, v[TGT_F_OUT_ZP] = q.out_zp;
            if (eo == 2)
                v[TGT_F_CLAMP16_LO] = q.act_min, v[TGT_F_CLAMP16_HI] = q.act_max;
            else
                v[TGT_F_CLAMP_LO] = q.act_min, v[TGT_F_CLAMP_HI] = q.act_max;
        }
        tile_store_flat(c, wk, yr, yo + e0 * eo, s[j % 2][1], cnt * eo);
    }
    return tile_pipeline(c);
}
