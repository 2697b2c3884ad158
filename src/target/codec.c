/* The table-driven encoder and decoder, the disassembler, and the timing
 * and constraint checks the tiler and the simulator call per instruction. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "target/tgt_internal.h"

int tgt_insn_find(const tgt_isa *isa, const char *name)
{
    for (int i = 0; i < isa->ninsns; i++)
        if (strcmp(isa->insns[i].name, name) == 0)
            return i;
    return -1;
}

int tgt_insn_for_sem(const tgt_isa *isa, tgt_sem s)
{
    for (int i = 0; i < isa->ninsns; i++)
        if (isa->insns[i].sem == s)
            return i;
    return -1;
}

const tgt_field *tgt_insn_field(const tgt_isa *isa, int insn, tgt_fid f)
{
    if (insn < 0 || insn >= isa->ninsns || (unsigned)f >= TGT_F_COUNT)
        return NULL;
    const tgt_insn *in = &isa->insns[insn];
    return in->slot[f] >= 0 ? &in->fields[in->slot[f]] : NULL;
}

int64_t tgt_field_min(const tgt_isa *isa, int insn, tgt_fid f)
{
    const tgt_field *fd = tgt_insn_field(isa, insn, f);
    return fd ? fd->lo : (insn >= 0 && insn < isa->ninsns && (unsigned)f < TGT_F_COUNT)
                             ? isa->insns[insn].defaults[f] : 0;
}

int64_t tgt_field_max(const tgt_isa *isa, int insn, tgt_fid f)
{
    const tgt_field *fd = tgt_insn_field(isa, insn, f);
    return fd ? fd->hi : (insn >= 0 && insn < isa->ninsns && (unsigned)f < TGT_F_COUNT)
                             ? isa->insns[insn].defaults[f] : 0;
}

void tgt_defaults(const tgt_isa *isa, int insn, int64_t v[TGT_F_COUNT])
{
    memcpy(v, isa->insns[insn].defaults, sizeof isa->insns[insn].defaults);
}

static uint32_t low_mask(int width)
{
    return width >= 32 ? 0xffffffffu : (1u << width) - 1u;
}

static npu_status check_fields(const tgt_isa *isa, const tgt_insn *in, const int64_t *v, npu_err *err)
{
    for (int i = 0; i < in->nfields; i++) {
        const tgt_field *f = &in->fields[i];
        int64_t x = v[f->fid];
        if (x < f->lo || x > f->hi)
            return npu_fail(err, NPU_EUSER, "ISA %s: %s.%s = %lld does not fit; expected %lld..%lld (%d bits%s%s)",
                            isa->name, in->name, f->name, (long long)x, (long long)f->lo, (long long)f->hi,
                            f->width, f->is_signed ? " signed" : "", f->offset ? ", offset" : "");
        if (f->scale != 1 && (x - f->offset) % f->scale)
            return npu_fail(err, NPU_EUSER, "ISA %s: %s.%s = %lld does not fit; expected a multiple of %lld%s",
                            isa->name, in->name, f->name, (long long)x, (long long)f->scale,
                            f->offset ? " after the offset" : "");
    }
    for (int fid = 0; fid < TGT_F_COUNT; fid++)
        if (in->slot[fid] < 0 && v[fid] != in->defaults[fid])
            return npu_fail(err, NPU_EUSER, "ISA %s: %s has no field '%s', so it can only be %lld; got %lld",
                            isa->name, in->name, tgt_fid_name((tgt_fid)fid), (long long)in->defaults[fid],
                            (long long)v[fid]);
    return NPU_OK;
}

npu_status tgt_encode(const tgt_isa *isa, int insn, const int64_t v[TGT_F_COUNT], uint32_t *words, size_t cap,
                      size_t *nwords, npu_err *err)
{
    if (insn < 0 || insn >= isa->ninsns)
        return npu_fail(err, NPU_EINTERNAL, "ISA %s: no instruction %d", isa->name, insn);
    const tgt_insn *in = &isa->insns[insn];
    if (cap < (size_t)in->nwords)
        return npu_fail(err, NPU_EINTERNAL, "ISA %s: %s needs %d words, room for %zu", isa->name, in->name,
                        in->nwords, cap);
    npu_status st = check_fields(isa, in, v, err);
    if (st)
        return st;
    memset(words, 0, sizeof *words * (size_t)in->nwords);
    words[0] = in->opcode << isa->opcode_lsb;
    for (int i = 0; i < in->nfields; i++) {
        const tgt_field *f = &in->fields[i];
        int64_t raw = (v[f->fid] - f->offset) / f->scale;
        words[f->word] |= ((uint32_t)(uint64_t)raw & low_mask(f->width)) << f->lsb;
    }
    if (nwords)
        *nwords = (size_t)in->nwords;
    return NPU_OK;
}

npu_status tgt_encode_named(const tgt_isa *isa, const char *insn, const tgt_kv *kv, size_t nkv, uint32_t *words,
                            size_t cap, size_t *nwords, npu_err *err)
{
    int i = tgt_insn_find(isa, insn);
    if (i < 0)
        return npu_fail(err, NPU_EUSER, "ISA %s: no instruction '%s'", isa->name, insn);
    int64_t v[TGT_F_COUNT];
    tgt_defaults(isa, i, v);
    for (size_t k = 0; k < nkv; k++) {
        tgt_fid f = tgt_fid_from_name(kv[k].name);
        if (f == TGT_F_COUNT)
            return npu_fail(err, NPU_EUSER, "ISA %s: %s: unknown field '%s'", isa->name, insn, kv[k].name);
        v[f] = kv[k].value;
    }
    return tgt_encode(isa, i, v, words, cap, nwords, err);
}

npu_status tgt_decode(const tgt_isa *isa, const uint32_t *words, size_t n, size_t off, tgt_decoded *d,
                      npu_err *err)
{
    if (off >= n)
        return npu_fail(err, NPU_EUSER, "word offset %zu: expected an instruction, got the end of the stream", off);
    const uint32_t *w = words + off;
    uint32_t op = (w[0] >> isa->opcode_lsb) & low_mask(isa->opcode_width);
    int idx = isa->by_opcode[op];
    if (idx < 0)
        return npu_fail(err, NPU_EUSER, "word offset %zu: unknown opcode 0x%x (word 0x%08" PRIx32 ") in ISA %s",
                        off, op, w[0], isa->name);
    const tgt_insn *in = &isa->insns[idx];
    if ((size_t)in->nwords > n - off)
        return npu_fail(err, NPU_EUSER, "word offset %zu: %s needs %d words, the stream has %zu left", off,
                        in->name, in->nwords, n - off);
    for (int i = 0; i < in->nwords; i++)
        if (w[i] & ~in->used[i])
            return npu_fail(err, NPU_EUSER, "word offset %zu: %s has reserved bits 0x%08" PRIx32 " set in its "
                            "word %d (built for another ISA?)", off, in->name, w[i] & ~in->used[i], i);
    d->insn = idx;
    d->nwords = in->nwords;
    memcpy(d->v, in->defaults, sizeof d->v);
    for (int i = 0; i < in->nfields; i++) {
        const tgt_field *f = &in->fields[i];
        uint32_t raw = (w[f->word] >> f->lsb) & low_mask(f->width);
        int64_t r = raw;
        if (f->is_signed && (raw >> (f->width - 1)) & 1u)
            r -= (int64_t)1 << f->width;
        int64_t x = r * f->scale + f->offset;
        if (x < f->lo || x > f->hi)
            return npu_fail(err, NPU_EUSER, "word offset %zu: %s.%s = %lld is outside its range %lld..%lld", off,
                            in->name, f->name, (long long)x, (long long)f->lo, (long long)f->hi);
        d->v[f->fid] = x;
    }
    return NPU_OK;
}

size_t tgt_format(const tgt_isa *isa, const tgt_decoded *d, char *buf, size_t cap)
{
    const tgt_insn *in = &isa->insns[d->insn];
    size_t used = 0;
    char tmp[96];
#define PUT(...)                                                                                             \
    do {                                                                                                     \
        int k_ = snprintf(tmp, sizeof tmp, __VA_ARGS__);                                                     \
        if (k_ > 0) {                                                                                        \
            if (used + 1 < cap)                                                                              \
                snprintf(buf + used, cap - used, "%s", tmp);                                                 \
            used += (size_t)k_;                                                                              \
        }                                                                                                    \
    } while (0)
    if (cap)
        buf[0] = '\0';
    PUT("%s", in->name);
    /* vocabulary order, so that a program reads the same under every ISA */
    for (int fid = 0; fid < TGT_F_COUNT; fid++) {
        if (in->slot[fid] < 0)
            continue;
        const tgt_field *f = &in->fields[in->slot[fid]];
        int64_t x = d->v[f->fid];
        tgt_kind k = tgt_fid_kind(f->fid);
        const char *en = tgt_enum_name(f->fid, x);
        if (en)
            PUT(" %s=%s", f->name, en);
        else if (k == TGT_K_MASK || k == TGT_K_ADDR || k == TGT_K_DRAM)
            PUT(" %s=0x%llx", f->name, (unsigned long long)x);
        else
            PUT(" %s=%lld", f->name, (long long)x);
    }
#undef PUT
    return used;
}

npu_status tgt_disasm(const tgt_isa *isa, const uint32_t *words, size_t n, FILE *out, tgt_label_fn label,
                      void *ud, npu_err *err)
{
    char line[2048];
    for (size_t off = 0; off < n;) {
        const char *l = label ? label(ud, off) : NULL;
        if (l)
            fprintf(out, "; %s\n", l);
        tgt_decoded d;
        npu_status st = tgt_decode(isa, words, n, off, &d, err);
        if (st)
            return st;
        tgt_format(isa, &d, line, sizeof line);
        fprintf(out, "%6zu: %s\n", off, line);
        off += (size_t)d.nwords;
    }
    return NPU_OK;
}

npu_status tgt_timing(const tgt_target *t, int insn, const int64_t v[TGT_F_COUNT], int64_t *cycles, npu_err *err)
{
    xrat r;
    if (!xeval(t->timing[insn], v, t->p, &r))
        return npu_fail(err, NPU_EUSER, "target %s: timing of %s divides by zero or overflows (%s)", t->name,
                        t->isa->insns[insn].name, t->isa->insns[insn].timing_src);
    *cycles = xrat_ceil(r);
    if (*cycles < 0)
        return npu_fail(err, NPU_EUSER, "target %s: timing of %s is negative (%lld): %s", t->name,
                        t->isa->insns[insn].name, (long long)*cycles, t->isa->insns[insn].timing_src);
    return NPU_OK;
}

npu_status tgt_check(const tgt_target *t, int insn, const int64_t v[TGT_F_COUNT], npu_err *err)
{
    const tgt_insn *in = &t->isa->insns[insn];
    npu_status st = check_fields(t->isa, in, v, err);
    if (st || (st = tgt_sem_check(t->isa, insn, v, err)))
        return st;
    tgt_operand ops[TGT_MAX_OPERANDS];
    int nops = tgt_operands(t->isa, insn, v, ops);
    for (int i = 0; i < nops; i++)
        if (!ops[i].dram && v[ops[i].addr] + ops[i].bytes > t->p[TGT_P_SRAM_BYTES])
            return npu_fail(err, NPU_EUSER, "target %s: %s.%s 0x%llx + %lld bytes runs past the end of the "
                            "%lld-byte SRAM", t->name, in->name, tgt_fid_name(ops[i].addr),
                            (unsigned long long)v[ops[i].addr], (long long)ops[i].bytes,
                            (long long)t->p[TGT_P_SRAM_BYTES]);
    for (int i = 0; i < t->nconstraints; i++) {
        const tgt_constraint *c = &t->constraints[i];
        if (c->insn != insn)
            continue;
        xrat r;
        bool ok = xeval(c->expr, v, t->p, &r);
        if (!ok || r.n == 0)
            return npu_fail(err, NPU_EUSER, "%s: target %s: %s %s '%s'%s%s", c->where, t->name, in->name,
                            ok ? "violates" : "cannot evaluate (division by zero or overflow)", c->src,
                            c->why ? ": " : "", c->why ? c->why : "");
    }
    return NPU_OK;
}
