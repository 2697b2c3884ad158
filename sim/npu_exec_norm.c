/* The row-wise vector instructions softmax and layernorm (docs/isa.md),
 * computed by the integer kernels of kernels/nk_norm.h on the SRAM operands:
 * the same code as npuref's npu.Softmax and npu.LayerNorm. Tables are
 * little-endian int32 in SRAM, copied out to host order first. */
#include "kernels/nk_norm.h"
#include "sim/npu_internal.h"

#define V(f) ((int32_t)x->d.v[TGT_F_##f])

static int32_t *table_copy(npu_model *m, int64_t at, size_t count)
{
    int32_t *t = npum_scratch(m, count * sizeof *t);
    const uint8_t *p = m->sram + at;
    for (size_t i = 0; t && i < count; i++, p += 4)
        t[i] = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    return t;
}

static npu_status done(npu_model *m, const npum_insn *x, nk_status s, const char *what, npu_err *err)
{
    if (s == NK_OK)
        return NPU_OK;
    return npum_fault(m, err, x->index, x->word, &x->d, "%s: the table or fields are outside the kernel's range", what);
}

npu_status npum_exec_softmax(npu_model *m, const npum_insn *x, npu_err *err)
{
    int32_t *t = table_copy(m, x->d.v[TGT_F_TABLE], 256);
    if (!t)
        return npu_fail(err, NPU_EINTERNAL, "npu: out of memory for kernel scratch");
    nk_qsoftmax_params p = {V(H), V(W), V(MULT), V(SHIFT), V(OUT_ZP), V(CLAMP_LO), V(CLAMP_HI)};
    return done(m, x, nk_qsoftmax(&p, t, (const int8_t *)m->sram + V(SRC), (int8_t *)m->sram + V(DST)), "softmax",
                err);
}

npu_status npum_exec_layernorm(npu_model *m, const npum_insn *x, npu_err *err)
{
    int32_t *t = table_copy(m, x->d.v[TGT_F_QTAB], 3 * (size_t)V(W));
    if (!t)
        return npu_fail(err, NPU_EINTERNAL, "npu: out of memory for kernel scratch");
    for (int32_t j = 0; j < V(W); j++)
        if (t[3 * j + 2] < 1 || t[3 * j + 2] > 62)
            return npum_fault(m, err, x->index, x->word, &x->d, "qtab column %d (SRAM 0x%llx): shift %d outside 1..62",
                              j, (unsigned long long)(x->d.v[TGT_F_QTAB] + 12 * j), t[3 * j + 2]);
    nk_qlayernorm_params p = {V(H), V(W), x->d.v[TGT_F_EPS], V(OUT_ZP), V(CLAMP_LO), V(CLAMP_HI)};
    return done(m, x, nk_qlayernorm(&p, t, (const int8_t *)m->sram + V(SRC), (int8_t *)m->sram + V(DST)),
                "layernorm", err);
}
