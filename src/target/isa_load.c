/* Loading and validating an ISA description (schema: docs/isa.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "target/tgt_internal.h"

static const char *const top_keys[] = {"isa", "description", "opcode", "constants", "formats", "instructions",
                                       NULL};
static const char *const opcode_keys[] = {"word", "bits", NULL};
static const char *const insn_keys[] = {"opcode", "unit", "semantics", "words", "formats", "fields", "timing",
                                        "doc", NULL};
static const char *const field_keys[] = {"word", "bits", "signed", "scale", "offset", "range", "doc", NULL};

enum { MAX_WORDS = 16, MAX_FIELDS = 64, MAX_CONSTS = 64 };

typedef struct isa_ld {
    ydoc y;
    npu_arena *a;
    tgt_isa *isa;
    yaml_node_t *formats;
    const char *cnames[MAX_CONSTS];
    int64_t cvals[MAX_CONSTS];
    int nconst;
    yaml_node_t **insn_nodes; /* instruction i's mapping, for messages after sorting */
} isa_ld;

static bool is_ident(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

/* bits: [msb, lsb] or a single bit */
static npu_status parse_bits(isa_ld *L, yaml_node_t *n, const char *what, int *lsb, int *width)
{
    ydoc *y = &L->y;
    int64_t hi, lo;
    npu_status st;
    if (n->type == YAML_SEQUENCE_NODE) {
        yaml_node_item_t *it = n->data.sequence.items.start;
        if (n->data.sequence.items.top - it != 2)
            return yfail(y, n, "expected bits of %s as [msb, lsb] or one bit number", what);
        if ((st = yint(y, ynode(y, it[0]), what, &hi)) || (st = yint(y, ynode(y, it[1]), what, &lo)))
            return st;
    } else {
        if ((st = yint(y, n, what, &hi)))
            return st;
        lo = hi;
    }
    if (hi < lo)
        return yfail(y, n, "bit range [%lld:%lld] of %s is reversed; expected [msb, lsb] with msb >= lsb",
                     (long long)hi, (long long)lo, what);
    if (lo < 0 || hi > 31)
        return yfail(y, n, "bit range [%lld:%lld] of %s is outside the 32-bit word; expected bits within 31..0",
                     (long long)hi, (long long)lo, what);
    *lsb = (int)lo;
    *width = (int)(hi - lo + 1);
    return NPU_OK;
}

static uint32_t bit_mask(int lsb, int width)
{
    return (width >= 32 ? 0xffffffffu : ((1u << width) - 1u)) << lsb;
}

static const char *kind_word(tgt_kind k)
{
    switch (k) {
    case TGT_K_MASK: return "a token mask";
    case TGT_K_ADDR: return "an SRAM address";
    case TGT_K_DRAM: return "a DRAM offset";
    case TGT_K_SIZE: return "a size";
    case TGT_K_STRIDE: return "a stride";
    case TGT_K_FLAG: return "a flag";
    case TGT_K_ENUM: return "an enum";
    default: return "an integer";
    }
}

/* One field spec (n) named name, of instruction iname with nwords words. */
static npu_status parse_field(isa_ld *L, yaml_node_t *key, yaml_node_t *n, const char *iname, int nwords,
                              tgt_field *f)
{
    ydoc *y = &L->y;
    char what[160];
    const char *name = (const char *)key->data.scalar.value;
    snprintf(what, sizeof what, "field %s.%s", iname, name);
    npu_status st = ymap(y, n, what, field_keys);
    if (st)
        return st;
    memset(f, 0, sizeof *f);
    f->fid = tgt_fid_from_name(name);
    if (f->fid == TGT_F_COUNT)
        return yfail(y, key, "unknown field name '%s' in instruction '%s'; expected a name from the field "
                     "vocabulary (docs/isa.md, src/target/fields.def)", name, iname);
    f->name = tgt_fid_name(f->fid);
    yaml_node_t *v;
    int64_t word;
    if ((st = yreq(y, n, "word", what, &v)) || (st = yint(y, v, what, &word)))
        return st;
    if (word < 0 || word >= nwords)
        return yfail(y, v, "%s is in word %lld but instruction '%s' has %d word%s (0..%d); expected a word "
                     "inside the instruction", what, (long long)word, iname, nwords, nwords > 1 ? "s" : "",
                     nwords - 1);
    f->word = (int)word;
    if ((st = yreq(y, n, "bits", what, &v)) || (st = parse_bits(L, v, what, &f->lsb, &f->width)))
        return st;
    f->scale = 1;
    if ((v = yget(y, n, "signed")) && (st = ybool(y, v, what, &f->is_signed)))
        return st;
    if ((v = yget(y, n, "scale")) && (st = yint_range(y, v, "the scale", 1, 1 << 20, &f->scale)))
        return st;
    if ((v = yget(y, n, "offset")) &&
        (st = yint_range(y, v, "the offset", -(1ll << 40), 1ll << 40, &f->offset)))
        return st;
    if ((v = yget(y, n, "doc")) && (st = ystr(y, v, what, L->a, &f->doc)))
        return st;
    int64_t rlo = f->is_signed ? -(1ll << (f->width - 1)) : 0;
    int64_t rhi = f->is_signed ? (1ll << (f->width - 1)) - 1 : (1ll << f->width) - 1;
    f->lo = rlo * f->scale + f->offset;
    f->hi = rhi * f->scale + f->offset;
    tgt_kind k = tgt_fid_kind(f->fid);
    if (k != TGT_K_INT && f->is_signed)
        return yfail(y, ykey(y, n, "signed"), "%s is %s; expected it unsigned", what, kind_word(k));
    if (k == TGT_K_MASK && (f->scale != 1 || f->offset != 0 || f->width > 32))
        return yfail(y, n, "%s is a token mask; expected no scale or offset", what);
    yaml_node_t *rn = yget(y, n, "range");
    if (rn) {
        if (rn->type != YAML_SEQUENCE_NODE || rn->data.sequence.items.top - rn->data.sequence.items.start != 2)
            return yfail(y, rn, "expected the range of %s as [lo, hi]", what);
        int64_t lo, hi;
        if ((st = yint(y, ynode(y, rn->data.sequence.items.start[0]), what, &lo)) ||
            (st = yint(y, ynode(y, rn->data.sequence.items.start[1]), what, &hi)))
            return st;
        if (lo > hi)
            return yfail(y, rn, "range [%lld, %lld] of %s is empty; expected lo <= hi", (long long)lo,
                         (long long)hi, what);
        if (lo < f->lo || hi > f->hi)
            return yfail(y, rn, "%s is too narrow for its declared range [%lld, %lld]: %d bits %s%s hold "
                         "%lld..%lld; expected a wider field or a smaller range", what, (long long)lo,
                         (long long)hi, f->width, f->is_signed ? "signed" : "unsigned",
                         f->scale != 1 || f->offset ? " with scale and offset" : "", (long long)f->lo,
                         (long long)f->hi);
        f->lo = lo;
        f->hi = hi;
    }
    if (k == TGT_K_FLAG) {
        if (f->lo > 0 || f->hi < 1)
            return yfail(y, n, "%s is a flag; expected it to hold 0 and 1", what);
        f->lo = 0;
        f->hi = 1;
    }
    if (k == TGT_K_ENUM) {
        int64_t count = tgt_enum_count(f->fid);
        if (!rn && (f->lo > 0 || f->hi < count - 1))
            return yfail(y, n, "%s (%d bits) is too narrow for the %lld values of '%s' (%s..%s); expected "
                         "more bits or a declared range", what, f->width, (long long)count, f->name,
                         tgt_enum_name(f->fid, 0), tgt_enum_name(f->fid, count - 1));
        if (f->lo < 0)
            f->lo = 0;
        if (f->hi > count - 1)
            f->hi = count - 1;
    }
    return NPU_OK;
}

/* Adds the fields of a fields mapping to the instruction under construction. */
static npu_status add_fields(isa_ld *L, yaml_node_t *map, const char *iname, tgt_insn *in, tgt_field *fields,
                             yaml_node_t **fnodes, const tgt_sem_info *si)
{
    ydoc *y = &L->y;
    char what[128];
    snprintf(what, sizeof what, "the fields of '%s'", iname);
    npu_status st = ymap(y, map, what, NULL);
    if (st)
        return st;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = ynode(y, p->key), *v = ynode(y, p->value);
        if (in->nfields == MAX_FIELDS)
            return yfail(y, k, "instruction '%s' has too many fields; expected at most %d", iname, MAX_FIELDS);
        tgt_field *f = &fields[in->nfields];
        if ((st = parse_field(L, k, v, iname, in->nwords, f)))
            return st;
        int s = 0;
        while (s < si->nfields && si->fields[s].fid != f->fid)
            s++;
        if (s == si->nfields)
            return yfail(y, k, "field '%s' is not read by semantics '%s'; expected one of the fields listed for "
                         "it in docs/isa.md", f->name, si->name);
        if (in->slot[f->fid] >= 0) {
            char at[32];
            ywhere(y, fnodes[in->slot[f->fid]], at, sizeof at);
            return yfail(y, k, "instruction '%s' has field '%s' twice (first at %s); expected it once", iname,
                         f->name, at);
        }
        uint32_t m = bit_mask(f->lsb, f->width);
        if (f->word == L->isa->opcode_word &&
            (m & bit_mask(L->isa->opcode_lsb, L->isa->opcode_width)))
            return yfail(y, k, "field %s.%s bits [%d:%d] overlap the opcode bits [%d:%d]; decoding would be "
                         "ambiguous; expected disjoint bit ranges", iname, f->name, f->lsb + f->width - 1,
                         f->lsb, L->isa->opcode_lsb + L->isa->opcode_width - 1, L->isa->opcode_lsb);
        for (int j = 0; j < in->nfields; j++) {
            const tgt_field *g = &fields[j];
            if (g->word == f->word && (bit_mask(g->lsb, g->width) & m)) {
                char at[32];
                ywhere(y, fnodes[j], at, sizeof at);
                return yfail(y, k, "field %s.%s bits [%d:%d] of word %d overlap field '%s' [%d:%d] (at %s); "
                             "expected disjoint bit ranges", iname, f->name, f->lsb + f->width - 1, f->lsb,
                             f->word, g->name, g->lsb + g->width - 1, g->lsb, at);
            }
        }
        fnodes[in->nfields] = k;
        in->slot[f->fid] = (int16_t)in->nfields++;
    }
    return NPU_OK;
}

xref_kind tgt_insn_resolve(void *ud, const char *name, int64_t *out)
{
    const insn_scope *sc = ud;
    tgt_fid f = tgt_fid_from_name(name);
    if (f != TGT_F_COUNT && sc->insn->slot[f] >= 0) {
        *out = f;
        return XREF_FIELD;
    }
    const char *dot = strchr(name, '.');
    if (dot) {
        char fname[64];
        size_t n = (size_t)(dot - name);
        if (n < sizeof fname) {
            memcpy(fname, name, n);
            fname[n] = '\0';
            tgt_fid ef = tgt_fid_from_name(fname);
            if (ef != TGT_F_COUNT && tgt_fid_kind(ef) == TGT_K_ENUM)
                for (int v = 0; v < tgt_enum_count(ef); v++)
                    if (strcmp(tgt_enum_name(ef, v), dot + 1) == 0) {
                        *out = v;
                        return XREF_CONST;
                    }
        }
    }
    tgt_param p = tgt_param_from_name(name);
    if (p != TGT_P_COUNT) {
        *out = p;
        return XREF_PARAM;
    }
    for (int i = 0; i < sc->nconst; i++)
        if (strcmp(sc->cnames[i], name) == 0) {
            *out = sc->cvals[i];
            return XREF_CONST;
        }
    return XREF_NONE;
}

static npu_status parse_timing(isa_ld *L, yaml_node_t *n, tgt_insn *in)
{
    ydoc *y = &L->y;
    char what[128];
    snprintf(what, sizeof what, "the timing of '%s'", in->name);
    npu_status st = ystr(y, n, what, L->a, &in->timing_src);
    if (st)
        return st;
    insn_scope sc = {in, L->cnames, L->cvals, L->nconst};
    xnode *root;
    size_t pos;
    char msg[512];
    if ((st = xparse(L->a, in->timing_src, tgt_insn_resolve, &sc, &root, &pos, msg, sizeof msg)))
        return st == NPU_EINTERNAL ? npu_fail(y->err, st, "%s: out of memory", y->file)
                                   : yfail_at(y, n, pos, "in %s: %s", what, msg);
    if (!(in->timing = xcompile(L->a, root, NULL)))
        return npu_fail(y->err, NPU_EINTERNAL, "%s: out of memory", y->file);
    return NPU_OK;
}

/* 'semantics': one the simulator implements, else the list of those. */
static npu_status parse_semantics(isa_ld *L, yaml_node_t *n, const char *what, tgt_insn *in)
{
    ydoc *y = &L->y;
    yaml_node_t *v;
    npu_status st = yreq(y, n, "semantics", what, &v);
    if (st)
        return st;
    in->sem = v->type == YAML_SCALAR_NODE ? tgt_sem_from_name((const char *)v->data.scalar.value) : TGT_SEM_COUNT;
    if (in->sem != TGT_SEM_COUNT)
        return NPU_OK;
    char names[300] = "";
    size_t u = 0;
    for (int s = 0; s < TGT_SEM_COUNT; s++)
        u += (size_t)snprintf(names + u, sizeof names - u, "%s%s", s ? ", " : "", tgt_sem_name((tgt_sem)s));
    return yfail(y, v, "unknown semantics %s%s%s for %s; expected one the simulator implements: %s",
                 v->type == YAML_SCALAR_NODE ? "'" : "",
                 v->type == YAML_SCALAR_NODE ? (const char *)v->data.scalar.value : "(not a name)",
                 v->type == YAML_SCALAR_NODE ? "'" : "", what, names);
}

/* 'unit': a known one, and one the semantics may issue to. */
static npu_status parse_unit(isa_ld *L, yaml_node_t *n, const char *what, const tgt_sem_info *si, tgt_insn *in)
{
    ydoc *y = &L->y;
    yaml_node_t *v;
    npu_status st = yreq(y, n, "unit", what, &v);
    if (st)
        return st;
    int u = 0;
    while (u < TGT_UNIT_COUNT && !yscalar_is(v, tgt_unit_name((tgt_unit)u)))
        u++;
    if (u == TGT_UNIT_COUNT)
        return yfail(y, v, "unknown unit for %s; expected dma, mac, vector or ctrl", what);
    if (!(si->units & (1u << u))) {
        char ok[64] = "";
        size_t used = 0;
        for (int k = 0; k < TGT_UNIT_COUNT; k++)
            if (si->units & (1u << k))
                used += (size_t)snprintf(ok + used, sizeof ok - used, "%s%s", used ? " or " : "",
                                         tgt_unit_name((tgt_unit)k));
        return yfail(y, v, "semantics '%s' cannot issue to unit '%s'; expected %s", si->name,
                     tgt_unit_name((tgt_unit)u), ok);
    }
    in->unit = (tgt_unit)u;
    return NPU_OK;
}

/* The fields of the named 'formats' (one name or a list), then the
 * instruction's own 'fields'; every field the semantics requires must be
 * among them, the others get the semantics' defaults. Then the bits each
 * word uses (decoding rejects words with other bits set). */
static npu_status parse_fields(isa_ld *L, yaml_node_t *key, yaml_node_t *n, const char *what, const tgt_sem_info *si,
                               tgt_insn *in)
{
    ydoc *y = &L->y;
    const char *iname = (const char *)key->data.scalar.value;
    npu_status st;
    yaml_node_t *v;
    tgt_field fields[MAX_FIELDS];
    yaml_node_t *fnodes[MAX_FIELDS];
    in->nfields = 0;
    if ((v = yget(y, n, "formats"))) {
        yaml_node_item_t one = 0, *it, *end;
        if (v->type == YAML_SCALAR_NODE) {
            one = (yaml_node_item_t)(v - y->doc.nodes.start) + 1;
            it = &one;
            end = it + 1;
        } else if ((st = yseq(y, v, "formats"))) {
            return st;
        } else {
            it = v->data.sequence.items.start;
            end = v->data.sequence.items.top;
        }
        for (; it < end; it++) {
            yaml_node_t *fn = ynode(y, *it);
            yaml_node_t *fmt = fn->type == YAML_SCALAR_NODE
                                   ? yget(y, L->formats, (const char *)fn->data.scalar.value) : NULL;
            if (!fmt)
                return yfail(y, fn, "unknown format for %s; expected a name defined under 'formats'", what);
            if ((st = add_fields(L, fmt, iname, in, fields, fnodes, si)))
                return st;
        }
    }
    if ((v = yget(y, n, "fields")) && (st = add_fields(L, v, iname, in, fields, fnodes, si)))
        return st;
    for (int s = 0; s < si->nfields; s++) {
        const tgt_sem_field *sf = &si->fields[s];
        if (sf->required && in->slot[sf->fid] < 0)
            return yfail(y, key, "instruction '%s' lacks field '%s' that semantics '%s' needs; expected it "
                         "under 'fields' or in one of its formats", iname, tgt_fid_name(sf->fid), si->name);
        if (!sf->required)
            in->defaults[sf->fid] = sf->def;
    }
    tgt_field *fa = npu_arena_alloc(L->a, sizeof *fa * (size_t)(in->nfields ? in->nfields : 1));
    uint32_t *used = npu_arena_alloc(L->a, sizeof *used * (size_t)in->nwords);
    if (!fa || !used || !in->name)
        return npu_fail(y->err, NPU_EINTERNAL, "%s: out of memory", y->file);
    memcpy(fa, fields, sizeof *fa * (size_t)in->nfields);
    used[0] = bit_mask(L->isa->opcode_lsb, L->isa->opcode_width);
    for (int i = 0; i < in->nfields; i++)
        used[fa[i].word] |= bit_mask(fa[i].lsb, fa[i].width);
    in->fields = fa;
    in->used = used;
    return NPU_OK;
}

static npu_status parse_insn(isa_ld *L, yaml_node_t *key, yaml_node_t *n, tgt_insn *in)
{
    ydoc *y = &L->y;
    const char *iname = (const char *)key->data.scalar.value;
    char what[128];
    snprintf(what, sizeof what, "instruction '%s'", iname);
    npu_status st = ymap(y, n, what, insn_keys);
    if (st)
        return st;
    in->name = npu_arena_strdup(L->a, iname);
    for (int f = 0; f < TGT_F_COUNT; f++)
        in->slot[f] = -1;
    yaml_node_t *v;
    int64_t iv;
    if ((st = yreq(y, n, "opcode", what, &v)) ||
        (st = yint_range(y, v, "the opcode", 0, (1ll << L->isa->opcode_width) - 1, &iv)))
        return st;
    in->opcode = (uint32_t)iv;
    if ((st = parse_semantics(L, n, what, in)))
        return st;
    const tgt_sem_info *si = tgt_sem_get(in->sem);
    if ((st = parse_unit(L, n, what, si, in)))
        return st;
    if ((st = yreq(y, n, "words", what, &v)) || (st = yint_range(y, v, "words", 1, MAX_WORDS, &iv)))
        return st;
    in->nwords = (int)iv;
    if ((v = yget(y, n, "doc")) && (st = ystr(y, v, what, L->a, &in->doc)))
        return st;
    if ((st = parse_fields(L, key, n, what, si, in)))
        return st;
    if ((st = yreq(y, n, "timing", what, &v)))
        return st;
    return parse_timing(L, v, in);
}

static npu_status parse_constants(isa_ld *L, yaml_node_t *n)
{
    ydoc *y = &L->y;
    npu_status st = ymap(y, n, "constants", NULL);
    if (st)
        return st;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = ynode(y, p->key);
        const char *name = (const char *)k->data.scalar.value;
        if (!is_ident(name) || tgt_fid_from_name(name) != TGT_F_COUNT)
            return yfail(y, k, "constant name '%s' is %s; expected an identifier that is not a field name", name,
                         is_ident(name) ? "a field name" : "not an identifier");
        if (L->nconst == MAX_CONSTS)
            return yfail(y, k, "too many constants; expected at most %d", MAX_CONSTS);
        if ((st = yint(y, ynode(y, p->value), name, &L->cvals[L->nconst])))
            return st;
        L->cnames[L->nconst++] = name;
    }
    return NPU_OK;
}

static int cmp_opcode(const void *a, const void *b)
{
    const tgt_insn *x = a, *y = b;
    return (x->opcode > y->opcode) - (x->opcode < y->opcode);
}

/* Everything that changes what a stream means or costs; not names, docs,
 * comments, order or spelling (docs/isa.md, "The hash"). */
static uint64_t isa_hash(const tgt_isa *isa)
{
    hsh h;
    hsh_init(&h);
    hsh_printf(&h, "npu-isa/1 opcode %d:%d:%d\n", isa->opcode_word, isa->opcode_lsb, isa->opcode_width);
    for (int i = 0; i < isa->ninsns; i++) {
        const tgt_insn *in = &isa->insns[i];
        hsh_printf(&h, "insn %u %s %s %d\n", in->opcode, tgt_sem_name(in->sem), tgt_unit_name(in->unit),
                   in->nwords);
        /* fields in bit order; an instruction has at most 64 of them */
        int order[MAX_FIELDS];
        for (int j = 0; j < in->nfields; j++) {
            int k = j;
            const tgt_field *f = &in->fields[j];
            while (k > 0) {
                const tgt_field *g = &in->fields[order[k - 1]];
                if (g->word < f->word || (g->word == f->word && g->lsb < f->lsb))
                    break;
                order[k] = order[k - 1];
                k--;
            }
            order[k] = j;
        }
        for (int j = 0; j < in->nfields; j++) {
            const tgt_field *f = &in->fields[order[j]];
            hsh_printf(&h, " %d:%d:%d %s %d %lld %lld %lld %lld\n", f->word, f->lsb, f->width, f->name,
                       f->is_signed, (long long)f->scale, (long long)f->offset, (long long)f->lo,
                       (long long)f->hi);
        }
        hsh_printf(&h, " timing ");
        xcanon(xexpr_root(in->timing), &tgt_canon_names, &h);
        hsh_printf(&h, "\n");
    }
    return h.h;
}

static npu_status load(isa_ld *L)
{
    ydoc *y = &L->y;
    npu_status st;
    yaml_node_t *root = ydoc_root(y), *v;
    if ((st = ymap(y, root, "the ISA", top_keys)))
        return st;
    tgt_isa *isa = L->isa;
    if ((st = yreq(y, root, "isa", "the ISA", &v)) || (st = ystr(y, v, "the ISA name", L->a, &isa->name)))
        return st;
    if ((v = yget(y, root, "description")) && (st = ystr(y, v, "description", L->a, &isa->description)))
        return st;
    yaml_node_t *op;
    if ((st = yreq(y, root, "opcode", "the ISA", &op)) || (st = ymap(y, op, "opcode", opcode_keys)))
        return st;
    int64_t w;
    if ((st = yreq(y, op, "word", "opcode", &v)) || (st = yint(y, v, "the opcode word", &w)))
        return st;
    if (w != 0)
        return yfail(y, v, "the opcode is in word %lld; expected word 0 (the decoder reads it first)",
                     (long long)w);
    if ((st = yreq(y, op, "bits", "opcode", &v)) ||
        (st = parse_bits(L, v, "the opcode", &isa->opcode_lsb, &isa->opcode_width)))
        return st;
    if (isa->opcode_width > 16)
        return yfail(y, v, "the opcode has %d bits; expected at most 16", isa->opcode_width);
    if ((v = yget(y, root, "constants")) && (st = parse_constants(L, v)))
        return st;
    L->formats = yget(y, root, "formats");
    if (L->formats && (st = ymap(y, L->formats, "formats", NULL)))
        return st;
    yaml_node_t *insns;
    if ((st = yreq(y, root, "instructions", "the ISA", &insns)) || (st = ymap(y, insns, "instructions", NULL)))
        return st;
    int n = (int)(insns->data.mapping.pairs.top - insns->data.mapping.pairs.start);
    if (n == 0)
        return yfail(y, insns, "expected at least one instruction");
    tgt_insn *ia = npu_arena_alloc(L->a, sizeof *ia * (size_t)n);
    L->insn_nodes = npu_arena_alloc(L->a, sizeof *L->insn_nodes * (size_t)n);
    if (!ia || !L->insn_nodes)
        return npu_fail(y->err, NPU_EINTERNAL, "%s: out of memory", y->file);
    bool has_end = false;
    for (int i = 0; i < n; i++) {
        yaml_node_pair_t *p = &insns->data.mapping.pairs.start[i];
        yaml_node_t *k = ynode(y, p->key);
        if ((st = parse_insn(L, k, ynode(y, p->value), &ia[i])))
            return st;
        L->insn_nodes[i] = ynode(y, p->value);
        for (int j = 0; j < i; j++)
            if (ia[j].opcode == ia[i].opcode) {
                char at[32];
                ywhere(y, yget(y, L->insn_nodes[j], "opcode"), at, sizeof at);
                return yfail(y, yget(y, L->insn_nodes[i], "opcode"),
                             "opcode 0x%x of '%s' is also that of '%s' (at %s); decoding would be ambiguous; "
                             "expected distinct opcodes", ia[i].opcode, ia[i].name, ia[j].name, at);
            }
        has_end |= ia[i].sem == TGT_SEM_END;
        if (ia[i].nwords > isa->max_words)
            isa->max_words = ia[i].nwords;
    }
    if (!has_end)
        return yfail(y, insns, "expected an instruction with semantics 'end' (a stream must be able to stop)");
    qsort(ia, (size_t)n, sizeof *ia, cmp_opcode);
    int16_t *by = npu_arena_alloc(L->a, sizeof *by << isa->opcode_width);
    if (!by)
        return npu_fail(y->err, NPU_EINTERNAL, "%s: out of memory", y->file);
    for (int i = 0; i < (1 << isa->opcode_width); i++)
        by[i] = -1;
    for (int i = 0; i < n; i++)
        by[ia[i].opcode] = (int16_t)i;
    isa->insns = ia;
    isa->ninsns = n;
    isa->by_opcode = by;
    isa->hash = isa_hash(isa);
    return NPU_OK;
}

npu_status tgt_isa_parse_in(npu_arena *a, npu_alloc alloc, const char *file, const char *text, size_t len,
                            tgt_isa **out, npu_err *err)
{
    isa_ld L = {.a = a};
    L.isa = npu_arena_alloc(a, sizeof *L.isa);
    const char *fname = npu_arena_strdup(a, file);
    if (!L.isa || !fname)
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", file);
    L.isa->file = fname;
    L.isa->alloc = alloc;
    npu_status st = ydoc_load(&L.y, fname, text, len, err);
    if (!st)
        st = load(&L);
    ydoc_free(&L.y);
    if (!st)
        *out = L.isa;
    return st;
}

static npu_alloc opts_alloc(const tgt_opts *o)
{
    return o && o->alloc.fn ? o->alloc : npu_alloc_default();
}

npu_status tgt_isa_parse(const char *file, const char *text, size_t len, const tgt_opts *opts, tgt_isa **out,
                         npu_err *err)
{
    *out = NULL;
    npu_alloc al = opts_alloc(opts);
    npu_arena *a = npu_arena_new(al);
    if (!a)
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", file);
    tgt_isa *isa;
    npu_status st = tgt_isa_parse_in(a, al, file, text, len, &isa, err);
    if (st) {
        npu_arena_free(a);
        return st;
    }
    isa->arena = a;
    *out = isa;
    return NPU_OK;
}

npu_status tgt_isa_load(const char *name_or_path, const tgt_opts *opts, tgt_isa **out, npu_err *err)
{
    *out = NULL;
    char path[4096];
    npu_status st = tgt_search(name_or_path, "isa", NULL, opts, path, sizeof path, err);
    if (st)
        return st;
    npu_alloc al = opts_alloc(opts);
    npu_arena *a = npu_arena_new(al);
    if (!a)
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", path);
    char *text;
    size_t len;
    tgt_isa *isa;
    if ((st = tgt_read_file(a, path, &text, &len, err)) ||
        (st = tgt_isa_parse_in(a, al, path, text, len, &isa, err))) {
        npu_arena_free(a);
        return st;
    }
    isa->arena = a;
    *out = isa;
    return NPU_OK;
}

void tgt_isa_free(tgt_isa *isa)
{
    /* an ISA owned by a target has no arena of its own: tgt_free frees it */
    if (isa && isa->arena)
        npu_arena_free(isa->arena);
}
