/* A16W8 semantics (docs/isa.md "16-bit activations"): the a16 forms of
 * conv, dwconv, pool, eltwise, lut and requant, computed by the int16
 * kernels of kernels/nk_q16.h on the SRAM operands (int16 little-endian,
 * 2-byte aligned: tgt_sem_check), so npusim stays bit-exact with npuref.
 * Partial sums (acc_in / acc_out) have no int16 form: the tiler keeps a
 * 16-bit reduction in one instruction. */
#include <string.h>

#include "kernels/nk_q16.h"
#include "sim/npu_internal.h"

#define V(f) ((int32_t)x->d.v[TGT_F_##f])
#define S16(f) ((int16_t *)(void *)(m->sram + x->d.v[TGT_F_##f]))

static npu_status done(npu_model *m, const npum_insn *x, nk_status s, const char *kernel, npu_err *err)
{
    if (s == NK_OK)
        return NPU_OK;
    return npum_fault(m, err, x->index, x->word, &x->d, "%s refuses these parameters (%s)", kernel,
                      s == NK_EUNSUPPORTED ? "unsupported" : "invalid");
}

static npu_status conv16(npu_model *m, const npum_insn *x, bool depthwise, npu_err *err)
{
    if (!depthwise && (V(ACC_IN) || V(ACC_OUT)))
        return npum_fault(m, err, x->index, x->word, &x->d, "a16 conv has no partial-sum form (acc_in/acc_out)");
    int32_t cin = depthwise ? V(C) : V(IC), cout = depthwise ? V(C) : V(OC);
    qtab q = {0};
    npu_status st = npum_load_qtab(m, x, cout, 0, true, &q, err);
    if (st)
        return st;
    nk_qconv2d_params p = {
        .n = 1, .c_in = cin, .h_in = V(IH), .w_in = V(IW), .c_out = cout, .h_out = V(OH), .w_out = V(OW),
        .k_h = V(KH), .k_w = V(KW), .stride_h = V(SH), .stride_w = V(SW), .dil_h = V(DH), .dil_w = V(DW),
        .pad_top = V(PT), .pad_left = V(PL), .pad_bottom = V(PB), .pad_right = V(PR),
        .groups = depthwise ? cin : 1, .act_min = V(CLAMP16_LO), .act_max = V(CLAMP16_HI),
        .w_format = V(W4) ? NK_W_I4 : NK_W_I8, .q = {cout, q.mult, q.shift}};
    return done(m, x, nk_qconv2d_a16(&p, S16(SRC), m->sram + V(WGT), q.bias, S16(DST)), "nk_qconv2d_a16", err);
}

static npu_status matmul16(npu_model *m, const npum_insn *x, npu_err *err)
{
    if (V(ACC_IN) || V(ACC_OUT) || V(BT) || V(W_ZP))
        return npum_fault(m, err, x->index, x->word, &x->d, "a16 matmul takes no partial sums, bt or w_zp");
    qtab q = {0};
    npu_status st = npum_load_qtab(m, x, V(N), 0, true, &q, err);
    if (st)
        return st;
    nk_qfc_params p = {.batch = V(M), .in_features = V(K), .out_features = V(N), .act_min = V(CLAMP16_LO),
                       .act_max = V(CLAMP16_HI), .w_format = V(W4) ? NK_W_I4 : NK_W_I8, .q = {V(N), q.mult, q.shift}};
    return done(m, x, nk_qfc_a16(&p, S16(SRC), m->sram + V(WGT), q.bias, S16(DST)), "nk_qfc_a16", err);
}

static npu_status pool16(npu_model *m, const npum_insn *x, npu_err *err)
{
    nk_qpool_params p = {.n = 1, .c = V(C), .h_in = V(IH), .w_in = V(IW), .h_out = V(OH), .w_out = V(OW),
                         .k_h = V(KH), .k_w = V(KW), .stride_h = V(SH), .stride_w = V(SW), .dil_h = 1, .dil_w = 1,
                         .pad_top = V(PT), .pad_left = V(PL), .pad_bottom = V(PB), .pad_right = V(PR),
                         .count_include_pad = V(COUNT_PAD), .mult = V(MULT), .shift = V(SHIFT),
                         .act_min = V(CLAMP16_LO), .act_max = V(CLAMP16_HI)};
    bool avg = V(MODE) == TGT_POOL_AVG;
    nk_status s = avg ? nk_qavgpool_a16(&p, S16(SRC), S16(DST)) : nk_qmaxpool_a16(&p, S16(SRC), S16(DST));
    return done(m, x, s, avg ? "nk_qavgpool_a16" : "nk_qmaxpool_a16", err);
}

static nk_shape chw(const npum_insn *x, int32_t bc)
{
    return (nk_shape){3, {bc & TGT_BC_C ? 1 : V(C), bc & TGT_BC_H ? 1 : V(H), bc & TGT_BC_W ? 1 : V(W)}};
}

static npu_status eltwise16(npu_model *m, const npum_insn *x, npu_err *err)
{
    static const nk_qbin_op ops[TGT_ELT_COUNT] = {
        [TGT_ELT_ADD] = NK_QADD, [TGT_ELT_SUB] = NK_QSUB, [TGT_ELT_MUL] = NK_QMUL,
        [TGT_ELT_MIN] = NK_QMIN, [TGT_ELT_MAX] = NK_QMAX,
    };
    nk_qbinary_params p = {.op = ops[V(OP)], .a_shape = chw(x, V(A_BC)), .b_shape = chw(x, V(B_BC)),
                           .out_shape = chw(x, 0), .a_mult = V(A_MULT), .a_shift = V(A_SHIFT),
                           .b_mult = V(B_MULT), .b_shift = V(B_SHIFT), .out_mult = V(OUT_MULT),
                           .out_shift = V(OUT_SHIFT), .act_min = V(CLAMP16_LO), .act_max = V(CLAMP16_HI)};
    return done(m, x, nk_qbinary_a16(&p, S16(A), S16(B), S16(DST)), "nk_qbinary_a16", err);
}

static npu_status requant16(npu_model *m, const npum_insn *x, npu_err *err)
{
    bool o16 = V(A16);
    nk_qrequant_params p = {.in_zp = V(IN_ZP), .out_zp = V(OUT_ZP), .mult = V(MULT), .shift = V(SHIFT),
                            .act_min = o16 ? V(CLAMP16_LO) : V(CLAMP_LO),
                            .act_max = o16 ? V(CLAMP16_HI) : V(CLAMP_HI)};
    nk_status s = nk_qrequant_x(&p, m->sram + V(SRC), V(IN16) ? 2 : 1, m->sram + V(DST), o16 ? 2 : 1, (size_t)V(LEN));
    return done(m, x, s, "nk_qrequant_x", err);
}

static npu_status quantize16(npu_model *m, const npum_insn *x, npu_err *err)
{
    uint32_t bits = (uint32_t)V(FSCALE);
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    const float *in = (const float *)(void *)(m->sram + x->d.v[TGT_F_SRC]); /* 4-aligned: tgt_sem_check */
    return done(m, x, nk_quantize_f32_i16(in, S16(DST), (size_t)V(LEN), scale, 0), "nk_quantize_f32_i16", err);
}

npu_status npum_exec_a16(npu_model *m, const npum_insn *x, npu_err *err)
{
    switch (m->isa->insns[x->d.insn].sem) {
    case TGT_SEM_CONV: return conv16(m, x, false, err);
    case TGT_SEM_DWCONV: return conv16(m, x, true, err);
    case TGT_SEM_MATMUL: return matmul16(m, x, err);
    case TGT_SEM_POOL: return pool16(m, x, err);
    case TGT_SEM_ELTWISE: return eltwise16(m, x, err);
    case TGT_SEM_LUT: nk_lut_apply_i16(S16(TABLE), S16(SRC), S16(DST), (size_t)V(LEN)); return NPU_OK;
    case TGT_SEM_REQUANT: return requant16(m, x, err);
    case TGT_SEM_QUANTIZE: return quantize16(m, x, err);
    default:
        return npum_fault(m, err, x->index, x->word, &x->d, "%s has no int16 form (a16)",
                          m->isa->insns[x->d.insn].name);
    }
}
