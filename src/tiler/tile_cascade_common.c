/* Helpers the cascades share (tile_cascade.c, tile_cascade3.c,
 * tile_cascade_pool.c): who reads a tensor, the timing of an instruction
 * for the cost models, the conv fields that do not depend on the tile. */
#include "tiler/tile_internal.h"

bool tile_only_reader(const tile_ctx *c, const ir_tensor *y, const ir_node *m)
{
    bool reads = false;
    for (int j = 0; j < m->n_inputs; j++)
        reads |= m->inputs[j] == y;
    for (int i = 0; i < c->g->n_outputs; i++)
        reads &= c->g->outputs[i] != y;
    return reads && ir_use_count(c->g, y) == 1 && !(y->flags & IR_TENSOR_OUTPUT);
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

void tile_conv_fields(int64_t *v, const tile_convinfo *ci, int64_t src, int64_t dst, int64_t wgt)
{
    const nk_qconv2d_params *k = &ci->k;
    v[TGT_F_SRC] = src, v[TGT_F_DST] = dst, v[TGT_F_WGT] = wgt, v[TGT_F_QTAB] = wgt + ci->qtab_rel;
    v[TGT_F_KH] = k->k_h, v[TGT_F_KW] = k->k_w, v[TGT_F_SH] = k->stride_h, v[TGT_F_SW] = k->stride_w;
    v[TGT_F_DH] = k->dil_h, v[TGT_F_DW] = k->dil_w;
    v[TGT_F_IN_ZP] = k->in_zp, v[TGT_F_OUT_ZP] = k->out_zp, v[TGT_F_W4] = ci->w4;
    v[TGT_F_CLAMP_LO] = k->act_min, v[TGT_F_CLAMP_HI] = k->act_max;
}
