/* Loading and validating a target description, binding its ISA. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/stats.h"
#include "target/tgt_internal.h"

static const char *const top_keys[] = {"target", "description", "isa", "npu", "host", "memory_map", "dtypes",
                                       "constraints", NULL};
static const char *const host_keys[] = {"isa", "clock_mhz", "cpi", NULL};
static const char *const region_keys[] = {"base", "size", NULL};
static const char *const dtype_keys[] = {"activations", "weights", NULL};
static const char *const constraint_keys[] = {"check", "why", NULL};
static const char *const mem_keys[] = {"rom", "flash", "dram", "npu_regs", "sim_ctrl", NULL};

enum { MAX_CONSTRAINTS = 256, PAGE = 4096 };

typedef struct tgt_ld {
    ydoc y;
    npu_arena *a;
    tgt_target *t;
    yaml_node_t *param_node[TGT_P_COUNT];
} tgt_ld;

static npu_status oom(tgt_ld *L)
{
    return npu_fail(L->y.err, NPU_EINTERNAL, "%s: out of memory", L->y.file);
}

/* The group of a parameter: "mac" of "mac.rows", the name itself without a dot. */
static size_t group_len(const char *name)
{
    const char *dot = strchr(name, '.');
    return dot ? (size_t)(dot - name) : strlen(name);
}

/* One parameter's value: an integer in range, or for an enum one of its names. */
static npu_status param_value(tgt_ld *L, yaml_node_t *v, tgt_param p, const char *what)
{
    ydoc *y = &L->y;
    const char *names = tgt_param_enum_names(p);
    if (names && v->type == YAML_SCALAR_NODE) {
        int64_t i = tgt_param_enum_value(p, (const char *)v->data.scalar.value);
        if (i >= 0) {
            L->t->p[p] = i;
            return NPU_OK;
        }
        if (!strspn((const char *)v->data.scalar.value, "0123456789"))
            return yfail(y, v, "unknown %s '%s'; expected one of %s", what, (const char *)v->data.scalar.value,
                         names);
    }
    int64_t hi = 1ll << 40;
    if (names) { /* the last index */
        hi = 0;
        for (const char *c = names; *c; c++)
            hi += *c == '|';
    }
    return yint_range(y, v, what, tgt_param_min(p), hi, &L->t->p[p]);
}

/* One bus's bandwidth and latency from whichever of each pair is given:
 * kb_per_s is what the timing uses, so a bus given in bytes per second keeps
 * its speed when the NPU clock changes. */
static npu_status derive_bus(tgt_ld *L, const char *bus, int bpc, int mbps, int kbps, int lat, int ns)
{
    ydoc *y = &L->y;
    int64_t *p = L->t->p, khz = p[TGT_P_CLOCK_KHZ];
    if (!p[bpc] && !p[mbps])
        return yfail(y, L->param_node[bpc], "npu.%s has no bandwidth; expected bytes_per_cycle or mb_per_s", bus);
    p[kbps] = p[mbps] ? p[mbps] * 1000 : p[bpc] * khz;
    if (p[bpc] && p[mbps] && p[bpc] * khz != p[kbps])
        return yfail(y, L->param_node[bpc], "npu.%s.bytes_per_cycle %lld and mb_per_s %lld disagree at %g MHz "
                     "(%.3f bytes per cycle); expected one of them", bus, (long long)p[bpc], (long long)p[mbps],
                     L->t->npu_clock_mhz, (double)p[kbps] / (double)khz);
    if (!p[bpc]) /* the integer approximation C code may read; the timing uses kb_per_s */
        p[bpc] = p[kbps] / khz > 0 ? p[kbps] / khz : 1;
    if (p[lat] < 0 && p[ns] < 0)
        return yfail(y, L->param_node[lat], "npu.%s has no latency; expected latency or latency_ns", bus);
    int64_t from_ns = p[ns] >= 0 ? (p[ns] * khz + 999999) / 1000000 : -1;
    if (p[lat] >= 0 && from_ns >= 0 && p[lat] != from_ns)
        return yfail(y, L->param_node[lat], "npu.%s.latency %lld cycles and latency_ns %lld (%lld cycles at %g MHz) "
                     "disagree; expected one of them", bus, (long long)p[lat], (long long)p[ns], (long long)from_ns,
                     L->t->npu_clock_mhz);
    if (p[lat] < 0)
        p[lat] = from_ns;
    return NPU_OK;
}

static npu_status derive_buses(tgt_ld *L)
{
    L->t->p[TGT_P_CLOCK_KHZ] = (int64_t)(L->t->npu_clock_mhz * 1000.0 + 0.5);
    if (L->t->p[TGT_P_CLOCK_KHZ] < 1)
        return yfail(&L->y, L->param_node[TGT_P_CLOCK_KHZ], "npu.clock_mhz %g is below 1 kHz",
                     L->t->npu_clock_mhz);
    npu_status st = derive_bus(L, "dram", TGT_P_DRAM_BYTES_PER_CYCLE, TGT_P_DRAM_MB_PER_S, TGT_P_DRAM_KB_PER_S,
                               TGT_P_DRAM_LATENCY, TGT_P_DRAM_LATENCY_NS);
    return st ? st : derive_bus(L, "flash", TGT_P_FLASH_BYTES_PER_CYCLE, TGT_P_FLASH_MB_PER_S,
                                TGT_P_FLASH_KB_PER_S, TGT_P_FLASH_LATENCY, TGT_P_FLASH_LATENCY_NS);
}

/* Whether parameter p is a YAML key and whether its group may be absent. */
static bool is_key(int p)
{
    return tgt_param_kind_of((tgt_param)p) != TGT_PK_DERIVED;
}

/* A group is optional when every key of it is, except the buses: a target
 * says what its memories are. */
static bool group_optional(const char *group, size_t gl)
{
    if ((gl == 4 && strncmp(group, "dram", 4) == 0) || (gl == 5 && strncmp(group, "flash", 5) == 0))
        return false;
    for (int p = 0; p < TGT_P_COUNT; p++) {
        const char *name = tgt_param_name((tgt_param)p);
        if (is_key(p) && group_len(name) == gl && strncmp(name, group, gl) == 0 &&
            tgt_param_kind_of((tgt_param)p) == TGT_PK_REQUIRED)
            return false;
    }
    return true;
}

/* The parameters of one group ("mac", or a dotless name): its mapping's keys. */
static npu_status parse_group(tgt_ld *L, yaml_node_t *n, const char *group)
{
    ydoc *y = &L->y;
    size_t gl = strlen(group);
    const char *sub[TGT_P_COUNT + 1];
    int ns = 0;
    for (int p = 0; p < TGT_P_COUNT; p++) {
        const char *name = tgt_param_name((tgt_param)p);
        if (is_key(p) && strncmp(name, group, gl) == 0 && name[gl] == '.')
            sub[ns++] = name + gl + 1;
    }
    sub[ns] = NULL;
    char what[64];
    snprintf(what, sizeof what, "npu.%s", group);
    yaml_node_t *g = yget(y, n, group);
    npu_status st;
    if (!g && !group_optional(group, gl))
        return yreq(y, n, group, "npu", &g);
    if (g && ns && (st = ymap(y, g, what, sub)))
        return st;
    for (int p = 0; p < TGT_P_COUNT; p++) {
        const char *name = tgt_param_name((tgt_param)p);
        if (!is_key(p) || group_len(name) != gl || strncmp(name, group, gl) != 0)
            continue;
        snprintf(what, sizeof what, "npu.%s", name);
        yaml_node_t *v = g && ns ? yget(y, g, name + gl + 1) : g;
        L->t->p[p] = tgt_param_default((tgt_param)p);
        if (!v && tgt_param_kind_of((tgt_param)p) == TGT_PK_REQUIRED)
            return yreq(y, g, name + gl + 1, what, &v);
        if (v && (st = param_value(L, v, (tgt_param)p, what)))
            return st;
        L->param_node[p] = v ? v : g ? g : n;
    }
    return NPU_OK;
}

/* The `npu:` section: clock_mhz, then every key of params.def, the dotted
 * ones as keys of their group's mapping. */
static npu_status parse_npu(tgt_ld *L, yaml_node_t *n)
{
    ydoc *y = &L->y;
    const char *keys[TGT_P_COUNT + 2];
    int nk = 0;
    keys[nk++] = "clock_mhz";
    for (int p = 0; p < TGT_P_COUNT; p++) {
        const char *name = tgt_param_name((tgt_param)p);
        size_t gl = group_len(name);
        bool seen = !is_key(p);
        for (int k = 1; k < nk; k++)
            seen |= strlen(keys[k]) == gl && strncmp(keys[k], name, gl) == 0;
        if (!seen && !(keys[nk++] = npu_arena_strndup(L->a, name, gl)))
            return oom(L);
    }
    keys[nk] = NULL;
    npu_status st = ymap(y, n, "npu", keys);
    if (st)
        return st;
    yaml_node_t *v;
    if ((st = yreq(y, n, "clock_mhz", "npu", &v)) || (st = ynum(y, v, "npu.clock_mhz", &L->t->npu_clock_mhz)))
        return st;
    if (L->t->npu_clock_mhz <= 0 || L->t->npu_clock_mhz > 1e6)
        return yfail(y, v, "expected a positive npu.clock_mhz up to 10^6");
    L->param_node[TGT_P_CLOCK_KHZ] = v;
    for (int k = 1; k < nk; k++)
        if ((st = parse_group(L, n, keys[k])))
            return st;
    const int64_t *p = L->t->p;
    if (p[TGT_P_SRAM_BYTES] % p[TGT_P_SRAM_BANKS])
        return yfail(y, L->param_node[TGT_P_SRAM_BANKS], "sram.bytes (%lld) is not a multiple of sram.banks "
                     "(%lld); expected equal banks", (long long)p[TGT_P_SRAM_BYTES],
                     (long long)p[TGT_P_SRAM_BANKS]);
    if (p[TGT_P_SRAM_BANKS] > 64)
        return yfail(y, L->param_node[TGT_P_SRAM_BANKS], "sram.banks %lld; expected at most 64",
                     (long long)p[TGT_P_SRAM_BANKS]);
    return derive_buses(L);
}

static npu_status parse_host(tgt_ld *L, yaml_node_t *n)
{
    ydoc *y = &L->y;
    npu_status st = ymap(y, n, "host", host_keys);
    yaml_node_t *v;
    if (st || (st = yreq(y, n, "isa", "host", &v)) || (st = ystr(y, v, "host.isa", L->a, &L->t->host_isa)))
        return st;
    const char *s = L->t->host_isa;
    if (strncmp(s, "rv32i", 5) != 0 || strspn(s + 5, "mafdc") != strlen(s + 5))
        return yfail(y, v, "host.isa '%s' is not one the simulator runs; expected rv32i with extensions from "
                     "m, a, f, d, c (e.g. rv32imafc)", s);
    if ((st = yreq(y, n, "clock_mhz", "host", &v)) || (st = ynum(y, v, "host.clock_mhz", &L->t->host_clock_mhz)))
        return st;
    if (L->t->host_clock_mhz <= 0)
        return yfail(y, v, "expected a positive host.clock_mhz");
    if ((st = yreq(y, n, "cpi", "host", &v)) || (st = ynum(y, v, "host.cpi", &L->t->host_cpi)))
        return st;
    if (L->t->host_cpi <= 0)
        return yfail(y, v, "expected a positive host.cpi");
    return NPU_OK;
}

static npu_status parse_memmap(tgt_ld *L, yaml_node_t *n)
{
    ydoc *y = &L->y;
    npu_status st = ymap(y, n, "memory_map", mem_keys);
    if (st)
        return st;
    for (int m = 0; m < TGT_MEM_COUNT; m++) {
        const char *mn = tgt_mem_name((tgt_mem)m);
        char what[64];
        snprintf(what, sizeof what, "memory_map.%s", mn);
        yaml_node_t *r, *v;
        if ((st = yreq(y, n, mn, "memory_map", &r)) || (st = ymap(y, r, what, region_keys)))
            return st;
        int64_t base, size;
        snprintf(what, sizeof what, "memory_map.%s.base", mn);
        if ((st = yreq(y, r, "base", what, &v)) || (st = yint_range(y, v, what, 0, 0xffffffffll, &base)))
            return st;
        if (base % PAGE)
            return yfail(y, v, "%s 0x%llx is not page aligned; expected a multiple of 4096", what,
                         (unsigned long long)base);
        snprintf(what, sizeof what, "memory_map.%s.size", mn);
        if ((st = yreq(y, r, "size", what, &v)) || (st = yint_range(y, v, what, PAGE, 1ll << 32, &size)))
            return st;
        if (size % PAGE)
            return yfail(y, v, "%s %lld is not a whole number of pages; expected a multiple of 4096", what,
                         (long long)size);
        if (base + size > (1ll << 32))
            return yfail(y, r, "memory_map.%s ends past 4 GiB; expected it inside the 32-bit address space", mn);
        L->t->mem[m] = (tgt_region){(uint64_t)base, (uint64_t)size};
        for (int j = 0; j < m; j++) {
            const tgt_region *a = &L->t->mem[j], *b = &L->t->mem[m];
            if (a->base < b->base + b->size && b->base < a->base + a->size)
                return yfail(y, r, "memory_map.%s [0x%llx, 0x%llx) overlaps memory_map.%s [0x%llx, 0x%llx); "
                             "expected disjoint regions", mn, (unsigned long long)b->base,
                             (unsigned long long)(b->base + b->size), tgt_mem_name((tgt_mem)j),
                             (unsigned long long)a->base, (unsigned long long)(a->base + a->size));
        }
    }
    return NPU_OK;
}

static npu_status parse_dtype_list(tgt_ld *L, yaml_node_t *n, const char *what, unsigned *out)
{
    ydoc *y = &L->y;
    npu_status st = yseq(y, n, what);
    if (st)
        return st;
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"int4", TGT_DT_INT4}, {"int8", TGT_DT_INT8}, {"int16", TGT_DT_INT16}};
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *v = ynode(y, *it);
        size_t i = 0;
        while (i < 3 && !yscalar_is(v, names[i].name))
            i++;
        if (i == 3)
            return yfail(y, v, "unknown dtype in %s; expected int4, int8 or int16", what);
        *out |= names[i].bit;
    }
    return NPU_OK;
}

static npu_status parse_dtypes(tgt_ld *L, yaml_node_t *n)
{
    ydoc *y = &L->y;
    npu_status st = ymap(y, n, "dtypes", dtype_keys);
    yaml_node_t *v;
    if (st || (st = yreq(y, n, "activations", "dtypes", &v)) ||
        (st = parse_dtype_list(L, v, "dtypes.activations", &L->t->act_dtypes)))
        return st;
    if (!(L->t->act_dtypes & TGT_DT_INT8))
        return yfail(y, v, "expected dtypes.activations to include int8");
    if ((st = yreq(y, n, "weights", "dtypes", &v)) ||
        (st = parse_dtype_list(L, v, "dtypes.weights", &L->t->weight_dtypes)))
        return st;
    if (!(L->t->weight_dtypes & TGT_DT_INT8))
        return yfail(y, v, "expected dtypes.weights to include int8");
    if (L->t->weight_dtypes & TGT_DT_INT4) {
        bool any = false;
        for (int i = 0; i < L->t->isa->ninsns; i++)
            any |= L->t->isa->insns[i].slot[TGT_F_W4] >= 0;
        if (!any)
            return yfail(y, v, "dtypes.weights lists int4 but ISA '%s' has no instruction with field 'w4'; "
                         "expected int8 only", L->t->isa->name);
    }
    return NPU_OK;
}

static npu_status parse_constraints(tgt_ld *L, yaml_node_t *n, xnode **roots)
{
    ydoc *y = &L->y;
    const tgt_isa *isa = L->t->isa;
    npu_status st = ymap(y, n, "constraints", NULL);
    if (st)
        return st;
    tgt_constraint *cs = npu_arena_alloc(L->a, sizeof *cs * MAX_CONSTRAINTS);
    if (!cs)
        return oom(L);
    int nc = 0;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = ynode(y, p->key), *list = ynode(y, p->value);
        int insn = tgt_insn_find(isa, (const char *)k->data.scalar.value);
        if (insn < 0)
            return yfail(y, k, "constraints name instruction '%s' that ISA '%s' lacks; expected one of its "
                         "instructions", (const char *)k->data.scalar.value, isa->name);
        char what[128];
        snprintf(what, sizeof what, "constraints.%s", isa->insns[insn].name);
        if ((st = yseq(y, list, what)))
            return st;
        for (yaml_node_item_t *it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
            yaml_node_t *c = ynode(y, *it), *v;
            if (nc == MAX_CONSTRAINTS)
                return yfail(y, c, "too many constraints; expected at most %d", MAX_CONSTRAINTS);
            tgt_constraint *tc = &cs[nc];
            tc->insn = insn;
            if ((st = ymap(y, c, what, constraint_keys)) || (st = yreq(y, c, "check", what, &v)) ||
                (st = ystr(y, v, what, L->a, &tc->src)))
                return st;
            yaml_node_t *w = yget(y, c, "why");
            if (w && (st = ystr(y, w, what, L->a, &tc->why)))
                return st;
            char at[32];
            ywhere(y, v, at, sizeof at);
            tc->where = npu_arena_printf(L->a, "%s:%s", y->file, at);
            insn_scope sc = {&isa->insns[insn], NULL, NULL, 0};
            size_t pos;
            char msg[512];
            if ((st = xparse(L->a, tc->src, tgt_insn_resolve, &sc, &roots[nc], &pos, msg, sizeof msg)))
                return st == NPU_EINTERNAL ? oom(L) : yfail_at(y, v, pos, "in a constraint of '%s': %s",
                                                                isa->insns[insn].name, msg);
            if (!tc->where || !(tc->expr = xcompile(L->a, roots[nc], L->t->p)))
                return oom(L);
            nc++;
        }
    }
    L->t->constraints = cs;
    L->t->nconstraints = nc;
    return NPU_OK;
}

/* What the ISA's fields can express must cover what the target has. */
static npu_status check_isa_fits(tgt_ld *L)
{
    ydoc *y = &L->y;
    const tgt_isa *isa = L->t->isa;
    const int64_t *p = L->t->p;
    for (int i = 0; i < isa->ninsns; i++) {
        const tgt_insn *in = &isa->insns[i];
        for (int j = 0; j < in->nfields; j++) {
            const tgt_field *f = &in->fields[j];
            if (tgt_fid_kind(f->fid) == TGT_K_ADDR && f->hi < p[TGT_P_SRAM_BYTES] - 1)
                return yfail(y, L->param_node[TGT_P_SRAM_BYTES], "sram.bytes %lld is more than ISA '%s' can "
                             "address: %s.%s holds up to %lld; expected at most %lld bytes",
                             (long long)p[TGT_P_SRAM_BYTES], isa->name, in->name, f->name, (long long)f->hi,
                             (long long)f->hi + 1);
            if (f->fid == TGT_F_CH && f->hi < p[TGT_P_DMA_CHANNELS] - 1)
                return yfail(y, L->param_node[TGT_P_DMA_CHANNELS], "dma.channels %lld is more than %s.ch can "
                             "select (0..%lld); expected at most %lld", (long long)p[TGT_P_DMA_CHANNELS],
                             in->name, (long long)f->hi, (long long)f->hi + 1);
        }
    }
    return NPU_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The target's meaning: every number, the ISA's hash, the constraints as a
 * set (their order, repetition and messages do not matter); not its name or texts. */
static uint64_t target_hash(const tgt_target *t, xnode *const *roots)
{
    hsh h;
    hsh_init(&h);
    hsh_printf(&h, "npu-target/1 isa %016llx npu %.17g\n", (unsigned long long)t->isa->hash, t->npu_clock_mhz);
    for (int p = 0; p < TGT_P_COUNT; p++)
        hsh_printf(&h, "%s=%lld\n", tgt_param_name((tgt_param)p), (long long)t->p[p]);
    hsh_printf(&h, "host %s %.17g %.17g\n", t->host_isa, t->host_clock_mhz, t->host_cpi);
    for (int m = 0; m < TGT_MEM_COUNT; m++)
        hsh_printf(&h, "%s %llx %llx\n", tgt_mem_name((tgt_mem)m), (unsigned long long)t->mem[m].base,
                   (unsigned long long)t->mem[m].size);
    hsh_printf(&h, "dtypes %x %x\n", t->act_dtypes, t->weight_dtypes);
    /* constraints are a set: hashed sorted, a repeated one once */
    uint64_t set[MAX_CONSTRAINTS];
    for (int i = 0; i < t->nconstraints; i++) {
        hsh c;
        hsh_init(&c);
        hsh_printf(&c, "%u ", t->isa->insns[t->constraints[i].insn].opcode);
        xcanon(roots[i], &tgt_canon_names, &c);
        set[i] = c.h;
    }
    qsort(set, (size_t)t->nconstraints, sizeof set[0], cmp_u64);
    for (int i = 0; i < t->nconstraints; i++)
        if (i == 0 || set[i] != set[i - 1])
            hsh_printf(&h, "constraint %016llx\n", (unsigned long long)set[i]);
    return h.h;
}

static npu_status load(tgt_ld *L, const tgt_opts *opts, const char *dir)
{
    ydoc *y = &L->y;
    tgt_target *t = L->t;
    yaml_node_t *root = ydoc_root(y), *v;
    npu_status st;
    if ((st = ymap(y, root, "the target", top_keys)))
        return st;
    if ((st = yreq(y, root, "target", "the target", &v)) || (st = ystr(y, v, "the target name", L->a, &t->name)))
        return st;
    if ((v = yget(y, root, "description")) && (st = ystr(y, v, "description", L->a, &t->description)))
        return st;
    /* the ISA first: the rest is checked against it */
    const char *isa_name;
    if ((st = yreq(y, root, "isa", "the target", &v)) || (st = ystr(y, v, "isa", L->a, &isa_name)))
        return st;
    char path[4096];
    npu_err sub;
    npu_err_clear(&sub);
    if (tgt_search(isa_name, "isa", dir, opts, path, sizeof path, &sub))
        return yfail(y, v, "target names ISA '%s' that cannot be found: %s", isa_name, sub.msg);
    char *text;
    size_t len;
    if (opts && opts->isa && opts->isa->file && !strcmp(opts->isa->file, path))
        t->isa = opts->isa;
    else if ((st = tgt_read_file(L->a, path, &text, &len, y->err)) ||
             (st = tgt_isa_parse_in(L->a, t->alloc, path, text, len, &t->own_isa, y->err)))
        return st;
    else
        t->isa = t->own_isa;
    yaml_node_t *n;
    if ((st = yreq(y, root, "npu", "the target", &n)) || (st = parse_npu(L, n)) ||
        (st = yreq(y, root, "host", "the target", &n)) || (st = parse_host(L, n)) ||
        (st = yreq(y, root, "memory_map", "the target", &n)) || (st = parse_memmap(L, n)) ||
        (st = yreq(y, root, "dtypes", "the target", &n)) || (st = parse_dtypes(L, n)))
        return st;
    xnode **roots = npu_arena_alloc(L->a, sizeof *roots * MAX_CONSTRAINTS);
    t->timing = npu_arena_alloc(L->a, sizeof *t->timing * (size_t)t->isa->ninsns);
    if (!roots || !t->timing)
        return oom(L);
    if ((n = yget(y, root, "constraints")) && (st = parse_constraints(L, n, roots)))
        return st;
    if ((st = check_isa_fits(L)))
        return st;
    for (int i = 0; i < t->isa->ninsns; i++)
        if (!(t->timing[i] = xcompile(L->a, xexpr_root(t->isa->insns[i].timing), t->p)))
            return oom(L);
    t->hash = target_hash(t, roots);
    return NPU_OK;
}

/* The overrides first, so that the loader checks them as it checks the file;
 * then the effective description, recorded for stats and embedding. */
static npu_status load_doc(tgt_ld *L, const tgt_opts *opts, const char *dir)
{
    int nsets = opts ? opts->nsets : 0;
    npu_status st = ydoc_apply_sets(&L->y, nsets ? opts->sets : NULL, nsets);
    if (!st)
        st = load(L, opts, dir);
    if (st)
        return st;
    tgt_target *t = L->t;
    const char **sets = npu_arena_alloc(L->a, sizeof *sets * (size_t)(nsets + 1));
    for (int i = 0; sets && i < nsets; i++)
        if (!(sets[i] = npu_arena_strdup(L->a, opts->sets[i])))
            sets = NULL;
    char *flat = ydoc_json(&L->y, L->a, true);
    t->embed_json = ydoc_json(&L->y, L->a, false);
    if (!sets || !flat || !t->embed_json)
        return npu_fail(L->y.err, NPU_EUSER, "%s: out of memory writing the description (or too many nodes)",
                        L->y.file);
    t->sets = sets;
    t->nsets = nsets;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return oom(L);
    fputs("{\"name\": ", f);
    npu_json_string(f, t->name);
    fprintf(f, ", \"hash\": \"%016llx\", \"file\": ", (unsigned long long)t->hash);
    npu_json_string(f, t->file);
    fputs(", \"sets\": [", f);
    for (int i = 0; i < nsets; i++) {
        fputs(i ? ", " : "", f);
        npu_json_string(f, sets[i]);
    }
    fprintf(f, "], \"params\": %s}", flat);
    fclose(f);
    t->config_json = buf ? npu_arena_strndup(L->a, buf, len) : NULL;
    free(buf);
    return t->config_json ? NPU_OK : oom(L);
}

npu_status tgt_find(const char *name_or_path, const tgt_opts *opts, char *path, size_t cap, npu_err *err)
{
    return tgt_search(name_or_path, "targets", NULL, opts, path, cap, err);
}

/* The arena, the target and the directory its ISA is searched from. */
static npu_status begin(const char *file, const tgt_opts *opts, tgt_ld *L, const char **dir, npu_err *err)
{
    npu_alloc al = opts && opts->alloc.fn ? opts->alloc : npu_alloc_default();
    npu_arena *a = npu_arena_new(al);
    if (!a)
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", file);
    *L = (tgt_ld){.a = a};
    L->t = npu_arena_alloc(a, sizeof *L->t);
    char *d = npu_arena_strdup(a, file);
    if (!L->t || !d || !(L->t->file = npu_arena_strdup(a, file))) {
        npu_arena_free(a);
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", file);
    }
    char *slash = strrchr(d, '/');
    if (slash)
        *slash = '\0';
    *dir = slash ? d : ".";
    L->t->arena = a;
    L->t->alloc = al;
    return NPU_OK;
}

static npu_status finish(tgt_ld *L, npu_status st, tgt_target **out)
{
    ydoc_free(&L->y);
    if (st) {
        npu_arena_free(L->a);
        return st;
    }
    *out = L->t;
    return NPU_OK;
}

npu_status tgt_load(const char *name_or_path, const tgt_opts *opts, tgt_target **out, npu_err *err)
{
    *out = NULL;
    char path[4096];
    const char *dir;
    tgt_ld L;
    npu_status st = tgt_find(name_or_path, opts, path, sizeof path, err);
    if (st || (st = begin(path, opts, &L, &dir, err)))
        return st;
    char *text = NULL;
    size_t len = 0;
    st = tgt_read_file(L.a, path, &text, &len, err);
    if (!st)
        st = ydoc_load(&L.y, L.t->file, text, len, err);
    if (!st)
        st = load_doc(&L, opts, dir);
    return finish(&L, st, out);
}

npu_status tgt_parse(const char *file, const char *text, size_t len, const tgt_opts *opts, tgt_target **out,
                     npu_err *err)
{
    *out = NULL;
    const char *dir;
    tgt_ld L;
    npu_status st = begin(file, opts, &L, &dir, err);
    if (st)
        return st;
    st = ydoc_load(&L.y, L.t->file, text, len, err);
    if (!st)
        st = load_doc(&L, opts, dir);
    return finish(&L, st, out);
}

void tgt_free(tgt_target *t)
{
    if (t)
        npu_arena_free(t->arena);
}
