/* The eltwise epilogue (docs/isa.md conv "Eltwise epilogue"): where the
 * ISA's conv and dwconv have epi_elt, an eltwise that alone reads a conv's
 * output runs in that conv's output stage instead of as a vector-unit pass
 * over the conv's tile. Its parameters are the eltwise instruction's own
 * (tile_eltwise_fields, from ref_qbinary_params), written into a block in
 * the constants that the layer loads once with its weights: bit-exact by
 * construction, as the vector-unit eltwise is. */
#include <string.h>

#include "tiler/tile_internal.h"

bool tile_epi_elt_ok(const tile_ctx *c)
{
    for (int s = 0; s < 2; s++) {
        int i = tile_insn(c, s ? TGT_SEM_DWCONV : TGT_SEM_CONV);
        const tgt_isa *isa = c->t->isa;
        if (i < 0 || !tgt_insn_field(isa, i, TGT_F_EPI_ELT) || !tgt_insn_field(isa, i, TGT_F_B) ||
            !tgt_insn_field(isa, i, TGT_F_B_BC) || !tgt_insn_field(isa, i, TGT_F_ETAB))
            return false;
    }
    return true;
}

npu_status tile_epi_block(tile_ctx *c, const ir_node *m, bool conv_is_a, int64_t *off)
{
    int64_t e[TGT_F_COUNT];
    npu_status st = tile_eltwise_fields(c, m, e);
    if (st != NPU_OK)
        return st;
    if (e[TGT_F_A16])
        return tile_fail(c, "an int16 eltwise has no epilogue form");
    /* the block names the eltwise's own a and b: with the conv's result as b, the operand is a (swap) */
    int32_t w[TGT_ETAB_WORDS] = {
        [TGT_ETAB_OP] = (int32_t)e[TGT_F_OP], [TGT_ETAB_FLAGS] = conv_is_a ? 0 : TGT_ETAB_SWAP,
        [TGT_ETAB_A_MULT] = (int32_t)e[TGT_F_A_MULT], [TGT_ETAB_A_SHIFT] = (int32_t)e[TGT_F_A_SHIFT],
        [TGT_ETAB_B_MULT] = (int32_t)e[TGT_F_B_MULT], [TGT_ETAB_B_SHIFT] = (int32_t)e[TGT_F_B_SHIFT],
        [TGT_ETAB_OUT_MULT] = (int32_t)e[TGT_F_OUT_MULT], [TGT_ETAB_OUT_SHIFT] = (int32_t)e[TGT_F_OUT_SHIFT],
        [TGT_ETAB_A_ZP] = (int32_t)e[TGT_F_A_ZP], [TGT_ETAB_B_ZP] = (int32_t)e[TGT_F_B_ZP],
        [TGT_ETAB_OUT_ZP] = (int32_t)e[TGT_F_OUT_ZP], [TGT_ETAB_CLAMP_LO] = (int32_t)e[TGT_F_CLAMP_LO],
        [TGT_ETAB_CLAMP_HI] = (int32_t)e[TGT_F_CLAMP_HI]};
    uint8_t b[TGT_ETAB_BYTES];
    for (int k = 0; k < TGT_ETAB_WORDS; k++)
        for (int i = 0; i < 4; i++)
            b[4 * k + i] = (uint8_t)((uint32_t)w[k] >> (8 * i));
    return tile_const_add(c, b, sizeof b, off);
}

void tile_epi_set(int64_t *v, int64_t operand, int64_t bc, int64_t etab)
{
    v[TGT_F_EPI_ELT] = 1, v[TGT_F_B] = operand, v[TGT_F_B_BC] = bc, v[TGT_F_ETAB] = etab;
}
