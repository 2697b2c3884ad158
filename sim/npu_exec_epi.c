/* The eltwise epilogue of conv and dwconv (epi_elt, docs/isa.md "Eltwise
 * epilogue"): the MAC array's output stage combines each int8 result with
 * the operand at b, by the parameter block at etab, in exactly the eltwise
 * instruction's semantics: the same nk_qbinary call on the same fields. The
 * operand is read before the conv writes dst (it may be dst itself: the
 * residual add over its own input), the block checked before anything is
 * written, so a bad block faults with SRAM untouched. */
#include <string.h>

#include "sim/npu_internal.h"

#define V(f) (x->d.v[TGT_F_##f])

static int32_t word(const npu_model *m, const npum_insn *x, int k)
{
    const uint8_t *p = m->sram + V(ETAB) + 4 * k;
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static int64_t channels(const npu_model *m, const npum_insn *x)
{
    return m->isa->insns[x->d.insn].sem == TGT_SEM_DWCONV ? V(C) : V(OC);
}

static nk_shape chw(const npum_insn *x, int64_t c, int64_t bc)
{
    return (nk_shape){3, {bc & TGT_BC_C ? 1 : c, bc & TGT_BC_H ? 1 : V(OH), bc & TGT_BC_W ? 1 : V(OW)}};
}

/* The parameters of the block at etab, with the eltwise's shapes: the conv's c x oh x ow, the operand's
 * broadcast per b_bc (a 1 x 1 x 1 shape for a check of the block alone). */
static nk_qbinary_params block(const npu_model *m, const npum_insn *x, bool one)
{
    bool swap = word(m, x, TGT_ETAB_FLAGS) & TGT_ETAB_SWAP;
    int64_t c = one ? 1 : channels(m, x), bc = one ? TGT_BC_C | TGT_BC_H | TGT_BC_W : 0;
    return (nk_qbinary_params){.op = npum_elt_op(word(m, x, TGT_ETAB_OP)), .out_shape = chw(x, c, bc),
                               .a_shape = chw(x, c, swap ? V(B_BC) | bc : bc),
                               .b_shape = chw(x, c, swap ? bc : V(B_BC) | bc),
                               .a_mult = word(m, x, TGT_ETAB_A_MULT), .a_shift = word(m, x, TGT_ETAB_A_SHIFT),
                               .b_mult = word(m, x, TGT_ETAB_B_MULT), .b_shift = word(m, x, TGT_ETAB_B_SHIFT),
                               .out_mult = word(m, x, TGT_ETAB_OUT_MULT), .out_shift = word(m, x, TGT_ETAB_OUT_SHIFT),
                               .a_zp = word(m, x, TGT_ETAB_A_ZP), .b_zp = word(m, x, TGT_ETAB_B_ZP),
                               .out_zp = word(m, x, TGT_ETAB_OUT_ZP), .act_min = word(m, x, TGT_ETAB_CLAMP_LO),
                               .act_max = word(m, x, TGT_ETAB_CLAMP_HI)};
}

static npu_status refused(npu_model *m, const npum_insn *x, npu_err *err)
{
    return npum_fault(m, err, x->index, x->word, &x->d, "epi_elt: nk_qbinary refuses the block at etab "
                      "(multipliers, shifts, zero points or clamp out of range)");
}

npu_status npum_epi_elt_read(npu_model *m, const npum_insn *x, const int8_t **b, npu_err *err)
{
    int32_t op = word(m, x, TGT_ETAB_OP), flags = word(m, x, TGT_ETAB_FLAGS);
    if (op < 0 || op >= TGT_ELT_COUNT || (flags & ~TGT_ETAB_SWAP))
        return npum_fault(m, err, x->index, x->word, &x->d, "epi_elt: the block at etab has op %d, flags 0x%x "
                          "(op 0..%d, flags only bit 0)", op, (unsigned)flags, TGT_ELT_COUNT - 1);
    for (int k = TGT_ETAB_CLAMP_HI + 1; k < TGT_ETAB_WORDS; k++)
        if (word(m, x, k))
            return npum_fault(m, err, x->index, x->word, &x->d, "epi_elt: reserved word %d of the block at etab "
                              "is not 0", k);
    nk_qbinary_params one = block(m, x, true);
    int8_t probe[3] = {0};
    if (nk_qbinary(&one, probe, probe + 1, probe + 2) != NK_OK) /* the kernel's own checks, before the conv */
        return refused(m, x, err);
    nk_shape s = chw(x, channels(m, x), V(B_BC));
    size_t n = (size_t)(s.dims[0] * s.dims[1] * s.dims[2]);
    int8_t *copy = npum_grow(m, m->epi_b, &m->epi_b_cap, 1, n, 4096);
    if (!copy)
        return npu_fail(err, NPU_EINTERNAL, "npu: out of memory for the epilogue's operand");
    m->epi_b = copy;
    int64_t plane = s.dims[1] * s.dims[2]; /* planes b_cs apart (0: dense) */
    npum_planes_copy(copy, m->sram + V(B), s.dims[0], plane, V(B_CS) ? V(B_CS) : plane, false);
    *b = copy;
    return NPU_OK;
}

npu_status npum_epi_elt_apply(npu_model *m, const npum_insn *x, const int8_t *b, npu_err *err)
{
    bool swap = word(m, x, TGT_ETAB_FLAGS) & TGT_ETAB_SWAP;
    nk_qbinary_params p = block(m, x, false);
    int8_t *out = m->dst_view; /* the conv's output, dense (npu_exec.c set_views) */
    return nk_qbinary(&p, swap ? b : out, swap ? out : b, out) == NK_OK ? NPU_OK : refused(m, x, err);
}
