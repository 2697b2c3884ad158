/* What each semantics reads and writes (docs/isa.md, "Semantics"), and the
 * consistency rules between its fields. Shared by the tiler (to size and
 * verify tiles) and the simulator (bounds faults, traffic statistics). */
#include <stdio.h>

#include "target/tgt_internal.h"

static void add(tgt_operand *o, int *n, tgt_fid addr, bool dram, bool write, int64_t bytes)
{
    o[*n] = (tgt_operand){addr, dram, write, bytes, 0, 0, 0};
    (*n)++;
}

/* An SRAM operand of c planes of `plane` bytes, cs apart (0: dense). */
static void add_planes(tgt_operand *o, int *n, tgt_fid addr, bool write, int64_t c, int64_t plane, int64_t cs)
{
    bool apart = cs && c > 1 && cs != plane;
    o[*n] = (tgt_operand){addr, false, write, apart ? (c - 1) * cs + plane : c * plane, apart ? c : 0, plane,
                          apart ? cs : 0};
    (*n)++;
}

static int64_t wbytes(int64_t count, int64_t w4)
{
    return w4 ? (count + 1) / 2 : count;
}

/* Elements of a c x h x w operand broadcast along the dims set in bc. */
static int64_t bc_elems(int64_t bc, int64_t c, int64_t h, int64_t w)
{
    return (bc & TGT_BC_C ? 1 : c) * (bc & TGT_BC_H ? 1 : h) * (bc & TGT_BC_W ? 1 : w);
}

/* The eltwise epilogue of a conv or dwconv with ch output channels: its operand and parameter block. */
static void epi_elt(tgt_operand *o, int *n, const int64_t v[TGT_F_COUNT], int64_t ch)
{
    int64_t bc = v[TGT_F_B_BC], c = bc & TGT_BC_C ? 1 : ch;
    add_planes(o, n, TGT_F_B, false, c, bc_elems(bc, 1, v[TGT_F_OH], v[TGT_F_OW]), v[TGT_F_B_CS]);
    add(o, n, TGT_F_ETAB, false, false, TGT_ETAB_BYTES);
}

int tgt_operands(const tgt_isa *isa, int insn, const int64_t v[TGT_F_COUNT], tgt_operand out[TGT_MAX_OPERANDS])
{
    int n = 0;
    const tgt_sem s = isa->insns[insn].sem;
#define V(f) v[TGT_F_##f]
    /* bytes per activation element: 2 with a16 (requant: in16 for its input) */
    const int64_t es = V(A16) ? 2 : 1, es_in = s == TGT_SEM_REQUANT ? (V(IN16) ? 2 : 1) : es;
    switch (s) {
    case TGT_SEM_DMA_LOAD:
    case TGT_SEM_DMA_STORE: {
        int64_t d = (V(C) - 1) * V(DRAM_CS) + (V(H) - 1) * V(DRAM_HS) + V(W);
        int64_t m = (V(C) - 1) * V(SRAM_CS) + (V(H) - 1) * V(SRAM_HS) + V(W);
        bool load = s == TGT_SEM_DMA_LOAD;
        add(out, &n, TGT_F_DRAM, true, !load, d);
        add(out, &n, TGT_F_SRAM, false, load, m);
        break;
    }
    case TGT_SEM_CONV:
    case TGT_SEM_MATMUL: {
        bool conv = s == TGT_SEM_CONV;
        int64_t rows = conv ? V(OC) : V(N);
        if (conv)
            add_planes(out, &n, TGT_F_SRC, false, V(IC), es * V(IH) * V(IW), V(SRC_CS));
        else
            add(out, &n, TGT_F_SRC, false, false, es * V(M) * V(K));
        add(out, &n, TGT_F_WGT, false, false, wbytes(conv ? V(OC) * V(IC) * V(KH) * V(KW) : V(N) * V(K), V(W4)));
        if (!(V(ACC_IN) && V(ACC_OUT))) /* bias or requantization */
            add(out, &n, TGT_F_QTAB, false, false, 12 * rows);
        int64_t outs = conv ? V(OC) * V(OH) * V(OW) : V(M) * V(N);
        if (V(ACC_IN))
            add(out, &n, TGT_F_PSUM, false, false, 4 * outs);
        if (V(ACC_OUT))
            add(out, &n, TGT_F_PSUM, false, true, 4 * outs);
        else if (conv)
            add_planes(out, &n, TGT_F_DST, true, V(OC), es * V(OH) * V(OW), V(DST_CS));
        else
            add(out, &n, TGT_F_DST, false, true, es * outs);
        if (conv && V(EPI_LUT) && !V(ACC_OUT))
            add(out, &n, TGT_F_TABLE, false, false, 256);
        if (conv && V(EPI_ELT) && !V(ACC_OUT))
            epi_elt(out, &n, v, V(OC));
        break;
    }
    case TGT_SEM_DWCONV:
        add_planes(out, &n, TGT_F_SRC, false, V(C), es * V(IH) * V(IW), V(SRC_CS));
        add(out, &n, TGT_F_WGT, false, false, wbytes(V(C) * V(KH) * V(KW), V(W4)));
        add(out, &n, TGT_F_QTAB, false, false, 12 * V(C));
        add_planes(out, &n, TGT_F_DST, true, V(C), es * V(OH) * V(OW), V(DST_CS));
        if (V(EPI_LUT))
            add(out, &n, TGT_F_TABLE, false, false, 256);
        if (V(EPI_ELT))
            epi_elt(out, &n, v, V(C));
        break;
    case TGT_SEM_POOL: /* an accumulating global pool: one int32 sum per channel */
        add(out, &n, TGT_F_SRC, false, false, es * V(C) * V(IH) * V(IW));
        if (V(ACC_IN))
            add(out, &n, TGT_F_PSUM, false, false, 4 * V(C));
        if (V(ACC_OUT))
            add(out, &n, TGT_F_PSUM, false, true, 4 * V(C));
        else
            add(out, &n, TGT_F_DST, false, true, es * V(C) * V(OH) * V(OW));
        break;
    case TGT_SEM_ELTWISE: {
        add(out, &n, TGT_F_A, false, false, es * bc_elems(V(A_BC), V(C), V(H), V(W)));
        add(out, &n, TGT_F_B, false, false, es * bc_elems(V(B_BC), V(C), V(H), V(W)));
        add(out, &n, TGT_F_DST, false, true, es * V(C) * V(H) * V(W));
        break;
    }
    case TGT_SEM_LUT:
        add(out, &n, TGT_F_SRC, false, false, es * V(LEN));
        add(out, &n, TGT_F_TABLE, false, false, es == 2 ? 2 * 513 : 256); /* int16: the interpolated table */
        add(out, &n, TGT_F_DST, false, true, es * V(LEN));
        break;
    case TGT_SEM_REQUANT:
        add(out, &n, TGT_F_SRC, false, false, es_in * V(LEN));
        add(out, &n, TGT_F_DST, false, true, es * V(LEN));
        break;
    case TGT_SEM_SOFTMAX:
    case TGT_SEM_LAYERNORM:
        add(out, &n, TGT_F_SRC, false, false, V(H) * V(W));
        if (s == TGT_SEM_SOFTMAX)
            add(out, &n, TGT_F_TABLE, false, false, 4 * 256);
        else
            add(out, &n, TGT_F_QTAB, false, false, 12 * V(W));
        add(out, &n, TGT_F_DST, false, true, V(H) * V(W));
        break;
    case TGT_SEM_QUANTIZE: /* float32 in, int8 (a16: int16) out */
        add(out, &n, TGT_F_SRC, false, false, 4 * V(LEN));
        add(out, &n, TGT_F_DST, false, true, es * V(LEN));
        break;
    default: break;
    }
    return n;
}

/* floor((in + pads - dil*(k-1) - 1) / stride) + 1, or 0 when the window does not fit */
static int64_t out_size(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t dil, int64_t stride)
{
    int64_t span = in + p0 + p1 - dil * (k - 1) - 1;
    return span < 0 || stride < 1 ? 0 : span / stride + 1;
}

/* The eltwise epilogue: int8 only; its operand either exactly the output
 * (each element read before it is written) or clear of it, since the output
 * stage streams; the block in words. */
static npu_status epi_elt_check(const tgt_insn *in, const int64_t v[TGT_F_COUNT], npu_err *err)
{
    if (V(A16))
        return npu_fail(err, NPU_EUSER, "%s: epi_elt has no int16 form (a16)", in->name);
    if (V(ETAB) % 4)
        return npu_fail(err, NPU_EUSER, "%s: etab 0x%llx is not 4-byte aligned", in->name, (unsigned long long)V(ETAB));
    int64_t ch = in->sem == TGT_SEM_DWCONV ? V(C) : V(OC), outs = ch * V(OH) * V(OW);
    int64_t nb = bc_elems(V(B_BC), ch, V(OH), V(OW));
    bool same = V(B) == V(DST) && nb == outs, clear = V(B) + nb <= V(DST) || V(DST) + outs <= V(B);
    if (!same && !clear && !(in->sem == TGT_SEM_CONV && V(ACC_OUT)))
        return npu_fail(err, NPU_EUSER, "%s: the epilogue's operand b 0x%llx (%lld bytes) overlaps dst 0x%llx "
                        "(%lld bytes) other than exactly", in->name, (unsigned long long)V(B), (long long)nb,
                        (unsigned long long)V(DST), (long long)outs);
    return NPU_OK;
}

/* A pool accumulating over instructions: an int8 average over the whole
 * tile (one window, no padding) whose int32 sums carry in psum. */
static npu_status pool_acc_check(const tgt_insn *in, const int64_t v[TGT_F_COUNT], npu_err *err)
{
    if (V(MODE) != TGT_POOL_AVG || V(A16) || V(KH) != V(IH) || V(KW) != V(IW) || V(PT) || V(PL) || V(PB) || V(PR))
        return npu_fail(err, NPU_EUSER, "%s: acc_in/acc_out take an int8 average over the whole tile (kh = ih, "
                        "kw = iw, no padding)", in->name);
    if (V(PSUM) % 4 || V(DIVISOR) < 1)
        return npu_fail(err, NPU_EUSER, "%s: psum 0x%llx is not 4-byte aligned or divisor %lld is below 1", in->name,
                        (unsigned long long)V(PSUM), (long long)V(DIVISOR));
    return NPU_OK;
}

/* Plane strides of conv and dwconv: 0 (dense) or at least a plane, so that planes never overlap; int8 only. */
static npu_status planes_check(const tgt_insn *in, const int64_t v[TGT_F_COUNT], npu_err *err)
{
    bool dw = in->sem == TGT_SEM_DWCONV;
    int64_t cs[] = {V(SRC_CS), V(DST_CS), V(B_CS)};
    int64_t plane[] = {V(IH) * V(IW), V(OH) * V(OW), bc_elems(V(B_BC), 1, V(OH), V(OW))};
    static const char *const name[] = {"src_cs", "dst_cs", "b_cs"};
    for (int i = 0; i < 3; i++) {
        if (!cs[i])
            continue;
        if (cs[i] < plane[i] || V(A16) || (i == 1 && !dw && V(ACC_OUT)) || (i == 2 && (V(B_BC) & TGT_BC_C)))
            return npu_fail(err, NPU_EUSER, "%s: %s %lld: a plane stride is 0 or at least a plane (%lld bytes), "
                            "on int8 operands, not on partial sums or a b broadcast over channels", in->name, name[i],
                            (long long)cs[i], (long long)plane[i]);
    }
    return NPU_OK;
}

npu_status tgt_sem_check(const tgt_isa *isa, int insn, const int64_t v[TGT_F_COUNT], npu_err *err)
{
    const tgt_insn *in = &isa->insns[insn];
    npu_status st;
    switch (in->sem) {
    case TGT_SEM_CONV:
    case TGT_SEM_DWCONV:
    case TGT_SEM_POOL: {
        /* pool has no dilation fields: its window is undilated (their default 0 is "not read") */
        int64_t dh = in->sem == TGT_SEM_POOL ? 1 : V(DH), dw = in->sem == TGT_SEM_POOL ? 1 : V(DW);
        int64_t oh = out_size(V(IH), V(PT), V(PB), V(KH), dh, V(SH));
        int64_t ow = out_size(V(IW), V(PL), V(PR), V(KW), dw, V(SW));
        if (oh != V(OH) || ow != V(OW))
            return npu_fail(err, NPU_EUSER, "%s: output %lldx%lld does not match its window: a %lldx%lld input "
                            "with this kernel, stride, dilation and padding gives %lldx%lld", in->name,
                            (long long)V(OH), (long long)V(OW), (long long)V(IH), (long long)V(IW),
                            (long long)oh, (long long)ow);
        if (V(PT) >= V(KH) * dh || V(PB) >= V(KH) * dh || V(PL) >= V(KW) * dw || V(PR) >= V(KW) * dw)
            return npu_fail(err, NPU_EUSER, "%s: padding must be smaller than the kernel's extent", in->name);
        if (in->sem != TGT_SEM_POOL && (st = planes_check(in, v, err)) != NPU_OK)
            return st;
        if (V(EPI_ELT))
            return epi_elt_check(in, v, err);
        if (in->sem == TGT_SEM_POOL && (V(ACC_IN) || V(ACC_OUT)))
            return pool_acc_check(in, v, err);
        break;
    }
    case TGT_SEM_QUANTIZE: {
        uint32_t e = ((uint32_t)V(FSCALE) >> 23) & 0x1ffu; /* sign and exponent: a positive normal float */
        if (e == 0 || e >= 0xff || V(OUT_ZP) < -128 || V(OUT_ZP) > 127 || V(SRC) % 4)
            return npu_fail(err, NPU_EUSER, "%s: fscale 0x%08llx is no positive normal float, out_zp %lld is no int8 "
                            "or src 0x%llx is not 4-byte aligned", in->name, (unsigned long long)(uint32_t)V(FSCALE),
                            (long long)V(OUT_ZP), (unsigned long long)V(SRC));
        break;
    }
    default: break;
    }
    if (V(A16) && V(CLAMP16_LO) > V(CLAMP16_HI))
        return npu_fail(err, NPU_EUSER, "%s: clamp16_lo %lld > clamp16_hi %lld", in->name, (long long)V(CLAMP16_LO),
                        (long long)V(CLAMP16_HI));
    bool in16 = in->sem == TGT_SEM_REQUANT ? V(IN16) : V(A16), out16 = V(A16);
    if ((in16 && (V(IN_ZP) || V(A_ZP) || V(B_ZP) || V(SRC) % 2 || V(A) % 2 || V(B) % 2)) ||
        (out16 && (V(OUT_ZP) || V(DST) % 2)))
        return npu_fail(err, NPU_EUSER, "%s: int16 activations need zero points 0 and 2-byte aligned operands",
                        in->name);
    if (V(CLAMP_LO) > V(CLAMP_HI))
        return npu_fail(err, NPU_EUSER, "%s: clamp_lo %lld > clamp_hi %lld", in->name, (long long)V(CLAMP_LO),
                        (long long)V(CLAMP_HI));
#undef V
    return NPU_OK;
}
