/* Tests of src/target: the shipped descriptions, validation messages,
 * encoding round trips, variants, hashing, expressions, timing, lookup.
 * Data files are found under $NPUCC_ROOT (set by the Makefile) or ".". */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "target/target.h"
#include "target/tgt_internal.h"

/* ---- helpers ------------------------------------------------------------------ */

static const char *root(void)
{
    const char *r = getenv("NPUCC_ROOT");
    return r && *r ? r : ".";
}

static void at_root(char *buf, size_t cap, const char *rel)
{
    snprintf(buf, cap, "%s/%s", root(), rel);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The *.yaml files of a directory under the root, sorted. */
static int list_yaml(const char *rel, char names[][128], int max)
{
    char dir[1024];
    at_root(dir, sizeof dir, rel);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s (set NPUCC_ROOT)", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t l = strlen(e->d_name);
        if (l > 5 && l < 128 && strcmp(e->d_name + l - 5, ".yaml") == 0)
            memcpy(names[n++], e->d_name, l + 1);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_str);
    return n;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

static tgt_isa *load_isa(const char *rel)
{
    char p[1024];
    at_root(p, sizeof p, rel);
    tgt_isa *isa = NULL;
    npu_err e;
    npu_err_clear(&e);
    cr_assert_eq(tgt_isa_load(p, NULL, &isa, &e), NPU_OK, "%s", e.msg);
    return isa;
}

/* Every ISA under isa/, loaded. */
static int load_shipped_isas(tgt_isa *out[16])
{
    char names[16][128];
    int n = list_yaml("isa", names, 16);
    cr_assert_geq(n, 2, "expected npu-v1 and a variant");
    for (int k = 0; k < n; k++) {
        char rel[200];
        snprintf(rel, sizeof rel, "isa/%.120s", names[k]);
        out[k] = load_isa(rel);
    }
    return n;
}

static tgt_target *load_target(const char *name)
{
    char dir[1024];
    at_root(dir, sizeof dir, "targets");
    tgt_opts o = {.search_path = dir};
    tgt_target *t = NULL;
    npu_err e;
    npu_err_clear(&e);
    cr_assert_eq(tgt_load(name, &o, &t, &e), NPU_OK, "%s", e.msg);
    return t;
}

/* Replaces the first occurrence of from (which must exist) in a malloc'd copy. */
static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    cr_assert_not_null(at, "'%s' not in the text", from);
    size_t n = strlen(text) - strlen(from) + strlen(to);
    char *out = malloc(n + 1);
    size_t pre = (size_t)(at - text);
    memcpy(out, text, pre);
    strcpy(out + pre, to);
    strcat(out, at + strlen(from));
    return out;
}

static uint64_t isa_hash_of(const char *text)
{
    tgt_isa *isa;
    npu_err e;
    npu_err_clear(&e);
    cr_assert_eq(tgt_isa_parse("mem.yaml", text, strlen(text), NULL, &isa, &e), NPU_OK, "%s", e.msg);
    uint64_t h = isa->hash;
    tgt_isa_free(isa);
    return h;
}

static char *make_tmpdir(void)
{
    char *d = strdup("/tmp/npucc_tgt_XXXXXX");
    cr_assert_not_null(mkdtemp(d));
    return d;
}

static void rm_tmpdir(char *d)
{
    DIR *dd = opendir(d);
    struct dirent *e;
    char p[1200];
    while (dd && (e = readdir(dd)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", d, e->d_name);
            unlink(p);
        }
    if (dd)
        closedir(dd);
    rmdir(d);
    free(d);
}

/* ---- every shipped description ------------------------------------------------------ */

Test(shipped, every_target_validates_and_summarizes)
{
    char names[32][128];
    int n = list_yaml("targets", names, 32);
    cr_assert_geq(n, 4, "expected edge-v1 and its variants");
    for (int i = 0; i < n; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/targets/%s", root(), names[i]);
        tgt_target *t;
        npu_err e;
        npu_err_clear(&e);
        cr_assert_eq(tgt_load(p, NULL, &t, &e), NPU_OK, "%s", e.msg);
        /* the file is named after the target */
        cr_assert_eq(strncmp(names[i], t->name, strlen(t->name)), 0, "%s names target %s", names[i], t->name);
        cr_assert_str_eq(names[i] + strlen(t->name), ".yaml");
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        tgt_print_summary(t, m);
        fclose(m);
        char want[64];
        snprintf(want, sizeof want, "%lld/cycle int8", (long long)(t->p[TGT_P_MAC_ROWS] * t->p[TGT_P_MAC_COLS]));
        cr_assert_not_null(strstr(buf, want), "summary of %s lacks '%s':\n%s", t->name, want, buf);
        cr_assert_not_null(strstr(buf, t->isa->name));
        free(buf);
        tgt_free(t);
    }
}

Test(shipped, edge_v1_numbers)
{
    tgt_target *t = load_target("edge-v1");
    cr_assert_str_eq(t->isa->name, "npu-v1");
    cr_assert_eq(t->npu_clock_mhz, 500.0);
    cr_assert_eq(t->p[TGT_P_MAC_ROWS], 16);
    cr_assert_eq(t->p[TGT_P_MAC_COLS], 16);
    cr_assert_eq(t->p[TGT_P_MAC_INT4_SPEEDUP], 2);
    cr_assert_eq(t->p[TGT_P_VECTOR_LANES], 16);
    cr_assert_eq(t->p[TGT_P_SRAM_BYTES], 512 * 1024);
    cr_assert_eq(t->p[TGT_P_SRAM_BANKS], 8);
    cr_assert_eq(t->p[TGT_P_DMA_CHANNELS], 2);
    cr_assert_eq(t->p[TGT_P_DRAM_BYTES_PER_CYCLE], 8);
    cr_assert_eq(t->p[TGT_P_DRAM_LATENCY], 100);
    cr_assert_str_eq(t->host_isa, "rv32imafc");
    cr_assert_eq(t->host_clock_mhz, 400.0);
    cr_assert_eq(t->host_cpi, 1.0);
    cr_assert(t->weight_dtypes & TGT_DT_INT4);
    cr_assert_eq(t->mem[TGT_MEM_DRAM].base, 0x80000000u);
    tgt_free(t);
    t = load_target("edge-v1-lite");
    cr_assert_eq(t->p[TGT_P_MAC_ROWS] * t->p[TGT_P_MAC_COLS], 64);
    cr_assert_eq(t->p[TGT_P_SRAM_BYTES], 128 * 1024);
    cr_assert_eq(t->p[TGT_P_DRAM_BYTES_PER_CYCLE], 4);
    tgt_free(t);
    t = load_target("edge-v1-wide");
    cr_assert_eq(t->p[TGT_P_MAC_ROWS] * t->p[TGT_P_MAC_COLS], 1024);
    cr_assert_eq(t->p[TGT_P_SRAM_BYTES], 2 * 1024 * 1024);
    cr_assert_eq(t->p[TGT_P_DRAM_BYTES_PER_CYCLE], 16);
    tgt_free(t);
    t = load_target("edge-v1-narrow");
    cr_assert_str_eq(t->isa->name, "npu-v1-narrow");
    cr_assert_not(t->weight_dtypes & TGT_DT_INT4);
    tgt_free(t);
}

Test(shipped, every_isa_implements_every_semantics)
{
    tgt_isa *isas[16];
    int n = load_shipped_isas(isas);
    for (int i = 0; i < n; i++) {
        tgt_isa *isa = isas[i];
        for (int s = 0; s < TGT_SEM_COUNT; s++)
            cr_assert_geq(tgt_insn_for_sem(isa, (tgt_sem)s), 0, "%s lacks %s", isa->name, tgt_sem_name((tgt_sem)s));
        tgt_isa_free(isa);
    }
}

Test(semantics, table_is_consistent)
{
    for (int s = 0; s < TGT_SEM_COUNT; s++) {
        const tgt_sem_info *si = tgt_sem_get((tgt_sem)s);
        cr_assert_eq(tgt_sem_from_name(si->name), (tgt_sem)s);
        cr_assert_neq(si->units, 0u);
        for (int i = 0; i < si->nfields; i++) {
            cr_assert_lt((unsigned)si->fields[i].fid, (unsigned)TGT_F_COUNT);
            for (int j = 0; j < i; j++)
                cr_assert_neq(si->fields[i].fid, si->fields[j].fid, "%s lists a field twice", si->name);
        }
    }
    cr_assert_eq(tgt_sem_from_name("nope"), TGT_SEM_COUNT);
    for (int f = 0; f < TGT_F_COUNT; f++)
        cr_assert_eq(tgt_fid_from_name(tgt_fid_name((tgt_fid)f)), (tgt_fid)f);
    cr_assert_str_eq(tgt_enum_name(TGT_F_REGION, TGT_REGION_FLASH), "flash");
    cr_assert_str_eq(tgt_enum_name(TGT_F_OP, TGT_ELT_MUL), "mul");
    cr_assert_null(tgt_enum_name(TGT_F_OP, TGT_ELT_COUNT));
}

/* ---- malformed descriptions ------------------------------------------------------------- */

/* Each file under tests/data/bad_yaml/ has one defect; target_* are targets.
 * Locations are where the defect is in the file. */
static const struct {
    const char *file;
    int line, col;
    const char *msg;
} bad_cases[] = {
    {"syntax_error.yaml", 3, 1, "expected valid YAML"},
    {"unknown_top_key.yaml", 3, 1, "unknown key 'instruction' in the ISA"},
    {"missing_opcode.yaml", 2, 1, "missing key 'opcode' in the ISA"},
    {"wrong_type_words.yaml", 4, 55, "expected an integer for words, got 'two'"},
    {"wrong_type_signed.yaml", 14, 47, "expected true or false for field requant.mult"},
    {"overlap.yaml", 13, 7, "overlap field 'src'"},
    {"out_of_word.yaml", 13, 30, "outside the 32-bit word"},
    {"word_beyond.yaml", 13, 21, "is in word 3 but instruction 'lut' has 3 words"},
    {"overlap_opcode.yaml", 11, 7, "overlap the opcode bits [31:24]"},
    {"dup_opcode.yaml", 5, 18, "opcode 0x1 of 'sync' is also that of 'end'"},
    {"narrow_range.yaml", 13, 55, "too narrow for its declared range [1, 1024]"},
    {"narrow_enum.yaml", 11, 16, "too narrow for the 5 values of 'region'"},
    {"unknown_semantics.yaml", 5, 45, "unknown semantics 'convolution'"},
    {"missing_sem_field.yaml", 5, 3, "lacks field 'table' that semantics 'lut' needs"},
    {"field_not_in_sem.yaml", 11, 7, "field 'ic' is not read by semantics 'end'"},
    {"unknown_field_name.yaml", 13, 7, "unknown field name 'strid'"},
    {"timing_syntax.yaml", 15, 53, "expected ',' or ')' in the arguments of 'ceil'"},
    {"timing_unknown_name.yaml", 15, 25, "unknown name 'vector.lane'"},
    {"timing_unknown_func.yaml", 15, 13, "unknown function 'round'"},
    {"dup_key.yaml", 4, 69, "duplicate key 'words'"},
    {"wrong_unit.yaml", 5, 27, "semantics 'sync' cannot issue to unit 'mac'"},
    {"unknown_format.yaml", 7, 74, "unknown format"},
    {"opcode_too_big.yaml", 4, 17, "expected the opcode in 0..255"},
    {"no_end.yaml", 4, 3, "expected an instruction with semantics 'end'"},
    {"signed_addr.yaml", 11, 39, "field lut.src is an SRAM address; expected it unsigned"},
    {"reversed_bits.yaml", 2, 25, "is reversed"},
    {"target_missing_isa.yaml", 2, 6, "names ISA 'npu-v9' that cannot be found"},
    {"target_unknown_key.yaml", 6, 9, "unknown key 'rowz' in npu.mac"},
    {"target_wrong_type.yaml", 4, 14, "expected a number for npu.clock_mhz"},
    {"target_missing_key.yaml", 4, 3, "missing key 'dram' in npu"},
    {"target_mem_overlap.yaml", 17, 13, "memory_map.sim_ctrl [0x40000000, 0x40001000) overlaps memory_map.npu_regs"},
    {"target_sram_too_big.yaml", 8, 17, "sram.bytes 1048576 is more than ISA 'npu-v1-narrow' can address"},
    {"target_int4_no_w4.yaml", 19, 40, "lists int4 but ISA 'npu-v1-narrow' has no instruction with field 'w4'"},
    {"target_constraint_syntax.yaml", 22, 21, "in a constraint of 'conv': expected an operand"},
    {"target_constraint_insn.yaml", 21, 3, "constraints name instruction 'convolution' that ISA 'npu-v1' lacks"},
    {"target_host_isa.yaml", 12, 13, "host.isa 'x86_64' is not one the simulator runs"},
};

Test(bad_yaml, each_file_fails_with_its_message_and_location)
{
    size_t ncases = sizeof bad_cases / sizeof bad_cases[0];
    cr_assert_geq(ncases, 20);
    for (size_t i = 0; i < ncases; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/tests/data/bad_yaml/%s", root(), bad_cases[i].file);
        npu_err e;
        npu_err_clear(&e);
        npu_status st;
        if (strncmp(bad_cases[i].file, "target_", 7) == 0) {
            tgt_target *t = NULL;
            st = tgt_load(p, NULL, &t, &e);
            cr_assert_null(t);
        } else {
            tgt_isa *isa = NULL;
            st = tgt_isa_load(p, NULL, &isa, &e);
            cr_assert_null(isa);
        }
        cr_assert_eq(st, NPU_EUSER, "%s: status %d: %s", bad_cases[i].file, st, e.msg);
        char where[1100];
        snprintf(where, sizeof where, "%s:%d:%d: ", p, bad_cases[i].line, bad_cases[i].col);
        cr_assert_eq(strncmp(e.msg, where, strlen(where)), 0, "expected '%s...', got '%s'", where, e.msg);
        cr_assert_not_null(strstr(e.msg, bad_cases[i].msg), "%s: expected '%s' in '%s'", bad_cases[i].file,
                           bad_cases[i].msg, e.msg);
        cr_assert_not_null(strstr(e.msg, "expected"), "%s: the message should say what was expected: %s",
                           bad_cases[i].file, e.msg);
    }
}

Test(bad_yaml, every_file_has_a_case)
{
    char names[128][128];
    int n = list_yaml("tests/data/bad_yaml", names, 128);
    for (int i = 0; i < n; i++) {
        size_t k = 0;
        while (k < sizeof bad_cases / sizeof bad_cases[0] && strcmp(bad_cases[k].file, names[i]) != 0)
            k++;
        cr_assert_lt(k, sizeof bad_cases / sizeof bad_cases[0], "%s has no entry in bad_cases", names[i]);
    }
}

/* A few defects that are easier to state inline. */
Test(bad_yaml, inline_cases)
{
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"", "expected a YAML mapping"},
        {"- 1\n- 2\n", "expected a mapping for the ISA, got a list"},
        {"isa: x\nopcode: {word: 1, bits: [7, 0]}\ninstructions: {}\n", "expected word 0"},
        {"isa: x\nopcode: {word: 0, bits: [31, 8]}\ninstructions: {}\n", "expected at most 16"},
        {"isa: x\nopcode: {word: 0, bits: [31, 24]}\ninstructions: {}\n", "expected at least one instruction"},
        {"isa: x\nopcode: {word: 0, bits: [31, 24]}\nconstants: {ic: 3}\ninstructions: {}\n", "a field name"},
        {"isa: x\nopcode: {word: 0, bits: [31, 24]}\ninstructions:\n  end: {opcode: 1, unit: ctrl, semantics: end, "
         "words: 99, timing: 1}\n", "expected words in 1..16"},
        {"isa: x\nopcode: {word: 0, bits: [31, 24]}\ninstructions:\n  end: {opcode: 1, unit: cpu, semantics: end, "
         "words: 1, timing: 1}\n", "expected dma, mac, vector or ctrl"},
        {"isa: x\nopcode: {word: 0, bits: [31, 24]}\ninstructions:\n  end: {opcode: 1, unit: ctrl, semantics: end, "
         "words: 1, timing: \"1 +\"}\n", "expected an operand"},
        {"isa: x\nopcode: {word: 0, bits: [31, 24]}\ninstructions:\n  end: {opcode: 1, unit: ctrl, semantics: end, "
         "words: 1, timing: \"(((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))\"}\n",
         "nested too deeply"},
        {"isa: x\nopcode: {word: 0, bits: [31, 24]}\ninstructions:\n  end: {opcode: 1, unit: ctrl, semantics: end, "
         "words: 1, formats: head, timing: 1}\n", "unknown format"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tgt_isa *isa = NULL;
        npu_err e;
        npu_err_clear(&e);
        npu_status st = tgt_isa_parse("inline.yaml", cases[i].text, strlen(cases[i].text), NULL, &isa, &e);
        cr_assert_eq(st, NPU_EUSER, "case %zu: %s", i, e.msg);
        cr_assert_eq(strncmp(e.msg, "inline.yaml:", 12), 0, "%s", e.msg);
        cr_assert_not_null(strstr(e.msg, cases[i].msg), "case %zu: expected '%s' in '%s'", i, cases[i].msg, e.msg);
    }
}

/* ---- encoding ---------------------------------------------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
    /* xorshift64*: reproducible across platforms */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

static int64_t raw_lo(const tgt_field *f)
{
    /* smallest raw value whose logical value is >= lo */
    int64_t d = f->lo - f->offset;
    return d >= 0 ? (d + f->scale - 1) / f->scale : -((-d) / f->scale);
}

static int64_t raw_hi(const tgt_field *f)
{
    int64_t d = f->hi - f->offset;
    return d >= 0 ? d / f->scale : -((-d + f->scale - 1) / f->scale);
}

static void fill(const tgt_isa *isa, int insn, int how, uint64_t *seed, int64_t *v)
{
    const tgt_insn *in = &isa->insns[insn];
    tgt_defaults(isa, insn, v);
    for (int i = 0; i < in->nfields; i++) {
        const tgt_field *f = &in->fields[i];
        int64_t lo = raw_lo(f), hi = raw_hi(f);
        int64_t raw = how == 0 ? lo : how == 1 ? hi : lo + (int64_t)(rnd(seed) % (uint64_t)(hi - lo + 1));
        v[f->fid] = raw * f->scale + f->offset;
    }
}

static void roundtrip(const tgt_isa *isa, int insn, const int64_t *v)
{
    const tgt_insn *in = &isa->insns[insn];
    uint32_t w[32];
    size_t n = 0;
    npu_err e;
    npu_err_clear(&e);
    cr_assert_eq(tgt_encode(isa, insn, v, w, 32, &n, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(n, (size_t)in->nwords);
    cr_assert_eq((w[0] >> isa->opcode_lsb) & ((1u << isa->opcode_width) - 1), in->opcode);
    tgt_decoded d;
    cr_assert_eq(tgt_decode(isa, w, n, 0, &d, &e), NPU_OK, "%s: %s", in->name, e.msg);
    cr_assert_eq(d.insn, insn);
    cr_assert_eq(d.nwords, in->nwords);
    for (int f = 0; f < TGT_F_COUNT; f++)
        cr_assert_eq(d.v[f], v[f], "%s %s.%s: encoded %lld, decoded %lld", isa->name, in->name,
                     tgt_fid_name((tgt_fid)f), (long long)v[f], (long long)d.v[f]);
}

Test(encode, roundtrip_every_instruction_of_every_isa)
{
    tgt_isa *isas[16];
    int n = load_shipped_isas(isas);
    for (int k = 0; k < n; k++) {
        tgt_isa *isa = isas[k];
        uint64_t seed = 0x9e3779b97f4a7c15ull;
        for (int i = 0; i < isa->ninsns; i++) {
            int64_t v[TGT_F_COUNT];
            fill(isa, i, 0, &seed, v);
            roundtrip(isa, i, v);
            fill(isa, i, 1, &seed, v);
            roundtrip(isa, i, v);
            for (int r = 0; r < 100; r++) {
                fill(isa, i, 2, &seed, v);
                roundtrip(isa, i, v);
            }
        }
        tgt_isa_free(isa);
    }
}

Test(encode, refuses_values_out_of_range_naming_the_field)
{
    tgt_isa *isas[16];
    int n = load_shipped_isas(isas);
    for (int k = 0; k < n; k++) {
        tgt_isa *isa = isas[k];
        uint64_t seed = 1;
        for (int i = 0; i < isa->ninsns; i++) {
            const tgt_insn *in = &isa->insns[i];
            for (int j = 0; j < in->nfields; j++) {
                const tgt_field *f = &in->fields[j];
                cr_assert_eq(tgt_field_max(isa, i, f->fid), f->hi);
                cr_assert_eq(tgt_field_min(isa, i, f->fid), f->lo);
                int64_t v[TGT_F_COUNT];
                uint32_t w[32];
                npu_err e;
                for (int side = 0; side < 2; side++) {
                    fill(isa, i, 0, &seed, v);
                    v[f->fid] = side ? f->hi + 1 : f->lo - 1;
                    npu_err_clear(&e);
                    cr_assert_eq(tgt_encode(isa, i, v, w, 32, NULL, &e), NPU_EUSER, "%s.%s = %lld accepted",
                                 in->name, f->name, (long long)v[f->fid]);
                    char want[160];
                    snprintf(want, sizeof want, "%s.%s = %lld does not fit; expected %lld..%lld", in->name,
                             f->name, (long long)v[f->fid], (long long)f->lo, (long long)f->hi);
                    cr_assert_not_null(strstr(e.msg, want), "expected '%s' in '%s'", want, e.msg);
                }
            }
        }
        tgt_isa_free(isa);
    }
}

Test(encode, decode_errors_name_the_word_offset)
{
    tgt_isa *isa = load_isa("isa/npu-v1.yaml");
    int end = tgt_insn_find(isa, "end"), conv = tgt_insn_find(isa, "conv");
    cr_assert_geq(end, 0);
    uint32_t w[32];
    size_t n;
    int64_t v[TGT_F_COUNT];
    npu_err e;
    npu_err_clear(&e);
    tgt_defaults(isa, end, v);
    cr_assert_eq(tgt_encode(isa, end, v, w, 32, &n, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(n, 1u);
    w[1] = 0xff000000u; /* no instruction has opcode 0xff */
    tgt_decoded d;
    cr_assert_eq(tgt_decode(isa, w, 2, 0, &d, &e), NPU_OK);
    cr_assert_eq(tgt_decode(isa, w, 2, 1, &d, &e), NPU_EUSER);
    cr_assert_not_null(strstr(e.msg, "word offset 1: unknown opcode 0xff"), "%s", e.msg);
    cr_assert_eq(tgt_decode(isa, w, 2, 2, &d, &e), NPU_EUSER);
    cr_assert_not_null(strstr(e.msg, "word offset 2"), "%s", e.msg);
    /* a truncated conv */
    uint64_t seed = 5;
    fill(isa, conv, 2, &seed, v);
    cr_assert_eq(tgt_encode(isa, conv, v, w + 1, 31, &n, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(tgt_decode(isa, w, 1 + n - 1, 1, &d, &e), NPU_EUSER);
    cr_assert_not_null(strstr(e.msg, "word offset 1: conv needs"), "%s", e.msg);
    /* the encoder's buffer must hold the instruction */
    cr_assert_eq(tgt_encode(isa, conv, v, w, 2, &n, &e), NPU_EINTERNAL);
    tgt_isa_free(isa);
}

Test(encode, reserved_bits_are_refused)
{
    tgt_isa *isa = load_isa("isa/npu-v1.yaml");
    uint64_t seed = 7;
    int checked = 0;
    for (int i = 0; i < isa->ninsns; i++) {
        const tgt_insn *in = &isa->insns[i];
        int64_t v[TGT_F_COUNT];
        fill(isa, i, 2, &seed, v);
        uint32_t w[32];
        size_t n;
        npu_err e;
        cr_assert_eq(tgt_encode(isa, i, v, w, 32, &n, &e), NPU_OK, "%s", e.msg);
        for (int k = 0; k < in->nwords; k++)
            for (int b = 0; b < 32; b++)
                if (!(in->used[k] >> b & 1)) {
                    w[k] ^= 1u << b;
                    tgt_decoded d;
                    cr_assert_eq(tgt_decode(isa, w, n, 0, &d, &e), NPU_EUSER, "%s word %d bit %d", in->name, k, b);
                    cr_assert_not_null(strstr(e.msg, "reserved bits"), "%s", e.msg);
                    w[k] ^= 1u << b;
                    checked++;
                }
    }
    cr_assert_gt(checked, 0);
    tgt_isa_free(isa);
}

Test(encode, fields_the_instruction_lacks_only_take_their_default)
{
    tgt_isa *isa = load_isa("isa/npu-v1-narrow.yaml");
    int conv = tgt_insn_find(isa, "conv");
    cr_assert_null(tgt_insn_field(isa, conv, TGT_F_W4));
    cr_assert_eq(tgt_field_max(isa, conv, TGT_F_W4), 0);
    cr_assert_eq(tgt_field_max(isa, conv, TGT_F_DH), 4); /* 2 bits, offset 1 */
    int64_t v[TGT_F_COUNT];
    uint64_t seed = 3;
    fill(isa, conv, 0, &seed, v);
    v[TGT_F_W4] = 1;
    uint32_t w[32];
    npu_err e;
    npu_err_clear(&e);
    cr_assert_eq(tgt_encode(isa, conv, v, w, 32, NULL, &e), NPU_EUSER);
    cr_assert_not_null(strstr(e.msg, "conv has no field 'w4'"), "%s", e.msg);
    tgt_kv kv[] = {{"ic", 1}, {"stride", 2}};
    cr_assert_eq(tgt_encode_named(isa, "conv", kv, 2, w, 32, NULL, &e), NPU_EUSER);
    cr_assert_not_null(strstr(e.msg, "unknown field 'stride'"), "%s", e.msg);
    cr_assert_eq(tgt_encode_named(isa, "convolve", kv, 1, w, 32, NULL, &e), NPU_EUSER);
    tgt_isa_free(isa);
}

/* ---- variants ------------------------------------------------------------------------------ */

typedef struct step {
    const char *insn;
    tgt_kv kv[16];
} step;

/* One tile of a 3x3 conv: load input and weights, convolve, store, end. */
static const step program[] = {
    {"dma_load", {{"signal", 1}, {"region", TGT_REGION_ARENA}, {"dram", 0x1000}, {"sram", 0}, {"c", 8}, {"h", 18},
                  {"w", 18}, {"dram_hs", 32}, {"dram_cs", 1024}, {"sram_hs", 18}, {"sram_cs", 324}}},
    {"dma_load", {{"signal", 2}, {"ch", 1}, {"region", TGT_REGION_CONSTANTS}, {"dram", 0}, {"sram", 0x4000},
                  {"c", 1}, {"h", 1}, {"w", 1152}, {"dram_hs", 1152}, {"dram_cs", 1152}, {"sram_hs", 1152},
                  {"sram_cs", 1152}}},
    {"conv", {{"wait", 3}, {"signal", 4}, {"src", 0}, {"dst", 0x8000}, {"wgt", 0x4000}, {"qtab", 0x7000},
              {"ic", 8}, {"oc", 16}, {"ih", 18}, {"iw", 18}, {"oh", 16}, {"ow", 16}, {"kh", 3}, {"kw", 3},
              {"in_zp", -3}, {"clamp_lo", 0}}},
    {"dma_store", {{"wait", 4}, {"region", TGT_REGION_OUTPUTS}, {"dram", 64}, {"sram", 0x8000}, {"c", 16},
                   {"h", 16}, {"w", 16}, {"dram_hs", 32}, {"dram_cs", 1024}, {"sram_hs", 16}, {"sram_cs", 256}}},
    {"end", {{NULL, 0}}},
};

static size_t nkv(const step *s)
{
    size_t n = 0;
    while (n < 16 && s->kv[n].name)
        n++;
    return n;
}

static size_t assemble(const tgt_isa *isa, uint32_t *w, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof program / sizeof program[0]; i++) {
        size_t k;
        npu_err e;
        npu_err_clear(&e);
        cr_assert_eq(tgt_encode_named(isa, program[i].insn, program[i].kv, nkv(&program[i]), w + n, cap - n, &k, &e),
                     NPU_OK, "%s: %s", isa->name, e.msg);
        n += k;
    }
    return n;
}

/* Decodes w and checks it is the program. */
static void check_program(const tgt_isa *isa, const uint32_t *w, size_t n)
{
    size_t off = 0;
    for (size_t i = 0; i < sizeof program / sizeof program[0]; i++) {
        tgt_decoded d;
        npu_err e;
        cr_assert_eq(tgt_decode(isa, w, n, off, &d, &e), NPU_OK, "%s", e.msg);
        cr_assert_str_eq(isa->insns[d.insn].name, program[i].insn);
        for (size_t k = 0; k < nkv(&program[i]); k++)
            cr_assert_eq(d.v[tgt_fid_from_name(program[i].kv[k].name)], program[i].kv[k].value, "%s.%s",
                         program[i].insn, program[i].kv[k].name);
        off += (size_t)d.nwords;
    }
    cr_assert_eq(off, n);
}

Test(variant, same_program_encodes_differently)
{
    tgt_isa *v1 = load_isa("isa/npu-v1.yaml"), *nar = load_isa("isa/npu-v1-narrow.yaml");
    uint32_t a[128], b[128];
    size_t na = assemble(v1, a, 128), nb = assemble(nar, b, 128);
    cr_assert(na != nb || memcmp(a, b, na * sizeof *a) != 0);
    check_program(v1, a, na);
    check_program(nar, b, nb);
    cr_assert_neq(v1->hash, nar->hash);
    /* the other ISA does not read it back as the same program */
    bool same = true;
    size_t off = 0;
    for (size_t i = 0; same && i < sizeof program / sizeof program[0]; i++) {
        tgt_decoded d;
        npu_err e;
        if (tgt_decode(nar, a, na, off, &d, &e) || strcmp(nar->insns[d.insn].name, program[i].insn) != 0)
            same = false;
        else
            off += (size_t)d.nwords;
    }
    cr_assert_not(same);
    /* limits a tiler sees */
    int c1 = tgt_insn_find(v1, "conv"), c2 = tgt_insn_find(nar, "conv");
    cr_assert_eq(tgt_field_max(v1, c1, TGT_F_IC), 4096);
    cr_assert_eq(tgt_field_max(nar, c2, TGT_F_IC), 256);
    cr_assert_eq(tgt_field_max(v1, c1, TGT_F_SRC), (1 << 21) - 1);
    cr_assert_eq(tgt_field_max(nar, c2, TGT_F_SRC), (1 << 19) - 1);
    int64_t v[TGT_F_COUNT];
    uint64_t seed = 2;
    fill(v1, c1, 0, &seed, v);
    v[TGT_F_IC] = 512;
    npu_err e;
    npu_err_clear(&e);
    cr_assert_eq(tgt_encode(v1, c1, v, a, 128, NULL, &e), NPU_OK, "%s", e.msg);
    fill(nar, c2, 0, &seed, v);
    v[TGT_F_IC] = 512;
    cr_assert_eq(tgt_encode(nar, c2, v, b, 128, NULL, &e), NPU_EUSER);
    cr_assert_not_null(strstr(e.msg, "conv.ic = 512 does not fit; expected 1..256"), "%s", e.msg);
    tgt_isa_free(v1);
    tgt_isa_free(nar);
}

/* ---- disassembly ------------------------------------------------------------------------------ */

static const char *label_at(void *ud, size_t off)
{
    (void)ud;
    return off == 0 ? "node conv1 (Conv)" : NULL;
}

Test(disasm, one_line_per_instruction)
{
    tgt_isa *isa = load_isa("isa/npu-v1.yaml");
    uint32_t w[128];
    size_t n = assemble(isa, w, 128);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    npu_err e;
    cr_assert_eq(tgt_disasm(isa, w, n, m, label_at, NULL, &e), NPU_OK, "%s", e.msg);
    fclose(m);
    int lines = 0;
    for (char *p = buf; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, (int)(sizeof program / sizeof program[0]) + 1, "%s", buf);
    cr_assert_eq(strncmp(buf, "; node conv1 (Conv)\n", 20), 0, "%s", buf);
    cr_assert_not_null(strstr(buf, "dma_load wait=0x0 signal=0x1 ch=0 region=arena dram=0x1000"), "%s", buf);
    cr_assert_not_null(strstr(buf, " ic=8 oc=16 "), "%s", buf);
    cr_assert_not_null(strstr(buf, " in_zp=-3 "), "%s", buf);
    free(buf);
    /* a bad word stops it with the offset */
    w[n - 1] = 0xee000000u;
    m = open_memstream(&buf, &len);
    cr_assert_eq(tgt_disasm(isa, w, n, m, NULL, NULL, &e), NPU_EUSER);
    fclose(m);
    char want[64];
    snprintf(want, sizeof want, "word offset %zu: unknown opcode 0xee", n - 1);
    cr_assert_not_null(strstr(e.msg, want), "%s", e.msg);
    free(buf);
    tgt_isa_free(isa);
}

Test(disasm, npudis_tool)
{
    const char *b = getenv("NPUCC_BUILD");
    if (!b)
        cr_skip_test("NPUCC_BUILD not set");
    tgt_isa *isa = load_isa("isa/npu-v1.yaml");
    uint32_t w[128];
    size_t n = assemble(isa, w, 128);
    tgt_isa_free(isa);
    char *dir = make_tmpdir(), p[1200], cmd[4096];
    snprintf(p, sizeof p, "%s/s.bin", dir);
    FILE *f = fopen(p, "wb");
    for (size_t i = 0; i < n; i++) {
        unsigned char le[4] = {(unsigned char)w[i], (unsigned char)(w[i] >> 8), (unsigned char)(w[i] >> 16),
                               (unsigned char)(w[i] >> 24)};
        fwrite(le, 1, 4, f);
    }
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s/%s/npudis --isa %s/isa/npu-v1.yaml %s > %s/out.txt 2>&1", root(), b, root(), p,
             dir);
    if (b[0] == '/')
        snprintf(cmd, sizeof cmd, "%s/npudis --isa %s/isa/npu-v1.yaml %s > %s/out.txt 2>&1", b, root(), p, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(p, sizeof p, "%s/out.txt", dir);
    size_t len;
    char *out = slurp(p, &len);
    cr_assert_not_null(strstr(out, "conv wait=0x3 signal=0x4"), "%s", out);
    cr_assert_not_null(strstr(out, ": end"), "%s", out);
    free(out);
    /* the narrow ISA refuses the stream: exit code 1 */
    snprintf(cmd, sizeof cmd, "%s%s%s/npudis --isa %s/isa/npu-v1-narrow.yaml %s/s.bin > /dev/null 2>&1",
             b[0] == '/' ? "" : root(), b[0] == '/' ? "" : "/", b, root(), dir);
    int rc = system(cmd);
    cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "%s: %d", cmd, rc);
    rm_tmpdir(dir);
}

/* ---- the hash ---------------------------------------------------------------------------------- */

/* Re-emits a YAML text through libyaml: every mapping's keys reversed, all
 * collections in flow style, folded scalars quoted, lines wrapped short. */
static char *reemit(const char *text)
{
    yaml_parser_t p;
    yaml_document_t d;
    cr_assert(yaml_parser_initialize(&p));
    yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
    cr_assert(yaml_parser_load(&p, &d));
    for (yaml_node_t *n = d.nodes.start; n < d.nodes.top; n++) {
        if (n->type == YAML_MAPPING_NODE) {
            yaml_node_pair_t *a = n->data.mapping.pairs.start, *b = n->data.mapping.pairs.top - 1;
            for (; a < b; a++, b--) {
                yaml_node_pair_t t = *a;
                *a = *b;
                *b = t;
            }
            n->data.mapping.style = YAML_FLOW_MAPPING_STYLE;
        } else if (n->type == YAML_SEQUENCE_NODE) {
            n->data.sequence.style = YAML_FLOW_SEQUENCE_STYLE;
        } else if (n->data.scalar.style == YAML_FOLDED_SCALAR_STYLE ||
                   n->data.scalar.style == YAML_LITERAL_SCALAR_STYLE) {
            n->data.scalar.style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        }
    }
    size_t cap = 1 << 20, written = 0;
    unsigned char *out = malloc(cap);
    yaml_emitter_t em;
    cr_assert(yaml_emitter_initialize(&em));
    yaml_emitter_set_output_string(&em, out, cap - 1, &written);
    yaml_emitter_set_width(&em, 40);
    cr_assert(yaml_emitter_open(&em));
    cr_assert(yaml_emitter_dump(&em, &d)); /* frees d */
    cr_assert(yaml_emitter_close(&em));
    yaml_emitter_delete(&em);
    yaml_parser_delete(&p);
    out[written] = '\0';
    return (char *)out;
}

/* A line that starts a key or a list item (not the inside of a block scalar). */
static bool key_line(const char *line, size_t l)
{
    size_t i = 0;
    while (i < l && line[i] == ' ')
        i++;
    if (i + 1 < l && line[i] == '-' && line[i + 1] == ' ')
        return true;
    size_t j = i;
    while (j < l && (line[j] == '_' || line[j] == '-' || (line[j] >= 'a' && line[j] <= 'z') ||
                     (line[j] >= '0' && line[j] <= '9')))
        j++;
    return j > i && j < l && line[j] == ':';
}

/* The same text with a comment line before every key line and trailing blanks. */
static char *commented(const char *text)
{
    size_t n = strlen(text);
    char *out = malloc(n * 4 + 64), *o = out;
    const char *line = text;
    while (*line) {
        const char *nl = strchr(line, '\n');
        size_t l = nl ? (size_t)(nl - line) : strlen(line);
        bool key = key_line(line, l);
        if (key)
            o += sprintf(o, "# a comment the hash must not see\n");
        memcpy(o, line, l);
        o += l;
        o += sprintf(o, "%s\n", key ? "   " : "");
        line += l + (nl ? 1 : 0);
    }
    *o = '\0';
    return out;
}

Test(hash, stable_across_reformatting_changes_with_meaning)
{
    char p[1024];
    at_root(p, sizeof p, "isa/npu-v1.yaml");
    size_t len;
    char *text = slurp(p, &len);
    tgt_isa *ref = load_isa("isa/npu-v1.yaml");
    uint64_t h = isa_hash_of(text);
    cr_assert_eq(h, ref->hash);
    tgt_isa_free(ref);

    char *a = reemit(text), *b = commented(text);
    cr_assert_neq(strcmp(a, text), 0);
    cr_assert_eq(isa_hash_of(a), h, "re-emitted:\n%s", a);
    cr_assert_eq(isa_hash_of(b), h);
    free(a);
    free(b);

    /* documentation does not change the meaning */
    char *c = replace(text, "description: Edge NPU v1", "description: Another text");
    cr_assert_eq(isa_hash_of(c), h);
    free(c);
    c = replace(text, "doc: tokens to wait on", "doc: other words");
    cr_assert_eq(isa_hash_of(c), h);
    free(c);
    c = replace(text, "isa: npu-v1", "isa: renamed");
    cr_assert_eq(isa_hash_of(c), h);
    free(c);
    /* the same value spelled differently */
    c = replace(text, "opcode: 0x20", "opcode: 32");
    cr_assert_eq(isa_hash_of(c), h);
    free(c);

    /* a narrower field, a different timing, opcode, signedness, offset */
    static const char *const changes[][2] = {
        {"ic:      {word: 6, bits: [11, 0], offset: 1}", "ic:      {word: 6, bits: [10, 0], offset: 1}"},
        {"+ mac.fill\n", "+ 2*mac.fill\n"},
        {"opcode: 0x32", "opcode: 0x34"},
        {"in_zp:    {word: 8, bits: [7, 0], signed: true}", "in_zp:    {word: 8, bits: [7, 0], signed: false}"},
        {"len:   {word: 4, bits: [20, 0], offset: 1}", "len:   {word: 4, bits: [20, 0]}"},
        {"unit: mac\n    semantics: dwconv", "unit: vector\n    semantics: dwconv"},
    };
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        c = replace(text, changes[i][0], changes[i][1]);
        cr_assert_neq(isa_hash_of(c), h, "change %zu kept the hash", i);
        free(c);
    }
    free(text);
}

Test(hash, target_hash_covers_numbers_and_isa)
{
    tgt_target *t = load_target("edge-v1"), *lite = load_target("edge-v1-lite");
    tgt_target *nar = load_target("edge-v1-narrow");
    cr_assert_neq(t->hash, lite->hash);
    cr_assert_neq(t->hash, nar->hash);
    cr_assert_eq(t->isa->hash, lite->isa->hash);
    char p[1024];
    at_root(p, sizeof p, "targets/edge-v1.yaml");
    size_t len;
    char *text = slurp(p, &len);
    char isa_path[1100], *dir = make_tmpdir(), f[1200];
    snprintf(isa_path, sizeof isa_path, "isa: %s/isa/npu-v1.yaml", root());
    /* elsewhere, reformatted, constraints reordered, another name: same meaning */
    char *c = replace(text, "isa: npu-v1", isa_path);
    char *d = replace(c, "target: edge-v1", "target: copy");
    char *g0 = replace(d, "  lut:\n", "  lut:\n    - {check: \"table % 4 == 0\"}\n");
    /* lut's constraints first: a set has no order */
    char *lut = strstr(g0, "  lut:\n"), *g = malloc(strlen(g0) + 1);
    size_t cut = (size_t)(strstr(g0, "  conv:\n") - g0);
    memcpy(g, g0, cut);
    strcpy(g + cut, lut);
    strncat(g, g0 + cut, (size_t)(lut - (g0 + cut)));
    free(g0);
    char *e = commented(g);
    char *r = reemit(e);
    snprintf(f, sizeof f, "%s/copy.yaml", dir);
    spit(f, r);
    tgt_target *t2;
    npu_err err;
    npu_err_clear(&err);
    cr_assert_eq(tgt_load(f, NULL, &t2, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(t2->hash, t->hash);
    tgt_free(t2);
    /* one number changes it */
    char *h = replace(c, "latency_ns: 200", "latency_ns: 202");
    spit(f, h);
    cr_assert_eq(tgt_load(f, NULL, &t2, &err), NPU_OK, "%s", err.msg);
    cr_assert_neq(t2->hash, t->hash);
    tgt_free(t2);
    free(c), free(d), free(e), free(g), free(r), free(h), free(text);
    rm_tmpdir(dir);
    tgt_free(t);
    tgt_free(lite);
    tgt_free(nar);
}

/* ---- expressions ----------------------------------------------------------------------------------- */

/* a = 7, b = 3 (fields 0, 1); p.x = 16 (parameter 0); K = 5 */
static xref_kind test_names(void *ud, const char *name, int64_t *out)
{
    (void)ud;
    if (strcmp(name, "a") == 0 || strcmp(name, "b") == 0) {
        *out = name[0] - 'a';
        return XREF_FIELD;
    }
    if (strcmp(name, "p.x") == 0) {
        *out = 0;
        return XREF_PARAM;
    }
    if (strcmp(name, "K") == 0) {
        *out = 5;
        return XREF_CONST;
    }
    return XREF_NONE;
}

static bool eval(const char *src, int64_t *out, bool *ok)
{
    npu_arena *ar = npu_arena_new(npu_alloc_default());
    xnode *root;
    size_t pos;
    char msg[256];
    npu_status st = xparse(ar, src, test_names, NULL, &root, &pos, msg, sizeof msg);
    cr_assert_eq(st, NPU_OK, "'%s': %s at %zu", src, msg, pos);
    const int64_t fields[] = {7, 3}, params[] = {16};
    tgt_expr *unbound = xcompile(ar, root, NULL), *bound = xcompile(ar, root, params);
    xrat r1, r2;
    *ok = xeval(unbound, fields, params, &r1);
    bool ok2 = xeval(bound, fields, params, &r2);
    cr_assert_eq(*ok, ok2, "'%s': folding changed success", src);
    if (*ok) {
        cr_assert(r1.n == r2.n && r1.d == r2.d, "'%s': folding changed the value", src);
        *out = xrat_ceil(r1);
    }
    npu_arena_free(ar);
    return *ok;
}

Test(expr, values)
{
    static const struct {
        const char *src;
        int64_t want;
    } cases[] = {
        {"1", 1}, {"2 + 3 * 4", 14}, {"(2 + 3) * 4", 20}, {"10 - 4 - 3", 3}, {"-a + b", -4}, {"--a", 7},
        {"a / 2", 4}, /* 3.5 rounds up at the end */
        {"floor(a / 2)", 3}, {"ceil(a / 2)", 4}, {"floor(-a / 2)", -4}, {"ceil(-a / 2)", -3},
        {"a / 2 * 2", 7}, {"ceil(a*b / p.x)", 2}, {"1/3 + 2/3", 1}, {"(1/3 + 2/3) == 1", 1},
        {"a % b", 1}, {"-a % b", 2}, {"min(a, b)", 3}, {"max(a, b, p.x, K)", 16}, {"min(4, 9, 1, 6)", 1},
        {"a > b", 1}, {"a < b", 0}, {"a >= 7", 1}, {"a <= 6", 0}, {"a == 7", 1}, {"a != 7", 0},
        {"!0", 1}, {"!a", 0}, {"a > b && b > 0", 1}, {"a < b || b == 3", 1}, {"0 || 0", 0}, {"2 && 3", 1},
        {"if(a > b, 100, 200)", 100}, {"if(0, 1, 2)", 2}, {"if(b == 3, 1, a / 0)", 1},
        {"b == 3 || a / 0", 1}, {"b != 3 && a / 0", 0}, {"K * p.x + 0x10", 96}, {"1 + 2 == 3", 1},
        {"ceil(p.x / (a - 5)) * if(1 < 2, 2, 3)", 16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t v = 0;
        bool ok;
        eval(cases[i].src, &v, &ok);
        cr_assert(ok, "'%s' failed", cases[i].src);
        cr_assert_eq(v, cases[i].want, "'%s' = %lld, expected %lld", cases[i].src, (long long)v,
                     (long long)cases[i].want);
    }
}

/* E on fields a, b: whether it evaluates and its exact value (compiled unbound). */
static bool eval_ab(npu_arena *ar, const char *src, int64_t a, int64_t b, xrat *r)
{
    xnode *root;
    size_t pos;
    char msg[256];
    cr_assert_eq(xparse(ar, src, test_names, NULL, &root, &pos, msg, sizeof msg), NPU_OK, "'%s': %s", src, msg);
    const int64_t fields[] = {a, b}, params[] = {16};
    tgt_expr *e = xcompile(ar, root, NULL);
    cr_assert_not_null(e);
    return xeval(e, fields, params, r);
}

/* Integer code (every quotient under ceil or floor) runs without rationals:
 * the same values and the same failures as E / 1, which a quotient left
 * alone keeps on rationals. */
Test(expr, integers_as_rationals)
{
    static const char *const cases[] = {
        "ceil(a / b)", "floor(a / b)", "a % b", "a - b", "a + b", "a * b", "-a", "min(a, b) - max(a, b)",
        "ceil(a / b) * floor(b / a)", "if(a < b, ceil(a / b), floor(b / a))", "ceil(if(a < b, a, a / b))",
        "!a + (a && b) + (a || b)", "a % b == 0", "ceil(a * b / (b - 3)) + floor(-a / 2)",
    };
    static const int64_t v[] = {0, 1, -1, 2, -2, 3, 7, -7, INT64_C(1) << 32, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    npu_arena *ar = npu_arena_new(npu_alloc_default());
    char twin[128];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t x = 0; x < sizeof v / sizeof v[0]; x++)
            for (size_t y = 0; y < sizeof v / sizeof v[0]; y++) {
                xrat r1 = {0, 1}, r2 = {0, 1};
                snprintf(twin, sizeof twin, "(%s) / 1", cases[i]);
                bool ok1 = eval_ab(ar, cases[i], v[x], v[y], &r1), ok2 = eval_ab(ar, twin, v[x], v[y], &r2);
                cr_assert_eq(ok1, ok2, "'%s' at a = %lld, b = %lld: %d, rationals %d", cases[i], (long long)v[x],
                             (long long)v[y], ok1, ok2);
                cr_assert(!ok1 || (r1.n == r2.n && r1.d == r2.d), "'%s' at a = %lld, b = %lld: %lld/%lld, rationals %lld/%lld",
                          cases[i], (long long)v[x], (long long)v[y], (long long)r1.n, (long long)r1.d,
                          (long long)r2.n, (long long)r2.d);
            }
    npu_arena_free(ar);
}

Test(expr, evaluation_errors)
{
    static const char *const cases[] = {"a / (b - 3)", "a % 0", "9223372036854775807 + a",
                                        "9223372036854775807 * 2", "if(1, a / 0, 1)"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t v;
        bool ok;
        eval(cases[i], &v, &ok);
        cr_assert_not(ok, "'%s' should fail", cases[i]);
    }
}

Test(expr, syntax_errors_with_position)
{
    static const struct {
        const char *src;
        size_t pos;
        const char *msg;
    } cases[] = {
        {"", 0, "expected an operand"},
        {"1 +", 3, "expected an operand, got the end"},
        {"a +* b", 3, "expected an operand, got '*'"},
        {"(a + b", 6, "expected ')'"},
        {"a b", 2, "expected an operator"},
        {"foo(1)", 0, "unknown function 'foo'"},
        {"ceil(1, 2)", 0, "'ceil' takes 1 argument"},
        {"min(1)", 0, "'min' takes 2 or more arguments"},
        {"a + zz", 4, "unknown name 'zz'"},
        {"p.x(1)", 0, "is not a function"},
        {"12abc", 0, "expected a number"},
        {"99999999999999999999", 0, "number too large"},
        {"a = b", 2, "expected an operator"},
        {"if(a, b)", 0, "'if' takes 3 arguments"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        npu_arena *ar = npu_arena_new(npu_alloc_default());
        xnode *root;
        size_t pos = 999;
        char msg[256] = "";
        cr_assert_eq(xparse(ar, cases[i].src, test_names, NULL, &root, &pos, msg, sizeof msg), NPU_EUSER,
                     "'%s' parsed", cases[i].src);
        cr_assert_eq(pos, cases[i].pos, "'%s': error at %zu (%s), expected %zu", cases[i].src, pos, msg,
                     cases[i].pos);
        cr_assert_not_null(strstr(msg, cases[i].msg), "'%s': expected '%s' in '%s'", cases[i].src, cases[i].msg,
                           msg);
        npu_arena_free(ar);
    }
}

/* ---- timing and constraints -------------------------------------------------------------------------- */

static int64_t cycles(const tgt_target *t, const char *insn, const tgt_kv *kv, size_t n)
{
    int i = tgt_insn_find(t->isa, insn);
    cr_assert_geq(i, 0);
    int64_t v[TGT_F_COUNT], c = -1;
    tgt_defaults(t->isa, i, v);
    for (size_t k = 0; k < n; k++)
        v[tgt_fid_from_name(kv[k].name)] = kv[k].value;
    npu_err e;
    cr_assert_eq(tgt_timing(t, i, v, &c, &e), NPU_OK, "%s", e.msg);
    return c;
}

Test(timing, conv_and_dma_on_each_target)
{
    tgt_target *t = load_target("edge-v1"), *lite = load_target("edge-v1-lite");
    tgt_kv conv[] = {{"ic", 16}, {"oc", 32}, {"kh", 3}, {"kw", 3}, {"oh", 8}, {"ow", 8}, {"w4", 0}};
    /* ceil(32/16) * ceil(144/16) * 64 + 16 */
    cr_assert_eq(cycles(t, "conv", conv, 7), 2 * 9 * 64 + 16);
    conv[6].value = 1; /* int4: twice the rows: ceil(144/32) = 5 */
    cr_assert_eq(cycles(t, "conv", conv, 7), 2 * 5 * 64 + 16);
    conv[6].value = 0; /* 8x8: ceil(32/8) * ceil(144/8) * 64 + 8 */
    cr_assert_eq(cycles(lite, "conv", conv, 7), 4 * 18 * 64 + 8);
    tgt_kv dma[] = {{"region", TGT_REGION_ARENA}, {"c", 16}, {"h", 10}, {"w", 10}, {"dram_hs", 32}, {"sram_hs", 10}};
    /* strided rows: 100 + 160 rows * ceil(10/8) */
    cr_assert_eq(cycles(t, "dma_load", dma, 6), 100 + 160 * 2);
    dma[4].value = 10; /* contiguous: one burst of 1600 bytes */
    cr_assert_eq(cycles(t, "dma_load", dma, 6), 100 + 200);
    cr_assert_eq(cycles(lite, "dma_load", dma, 6), 100 + 400);
    dma[0].value = TGT_REGION_FLASH; /* 200 + 1600 / 2 */
    cr_assert_eq(cycles(t, "dma_load", dma, 6), 200 + 800);
    tgt_kv req[] = {{"len", 1000}, {"copy", 1}};
    cr_assert_eq(cycles(t, "requant", req, 2), 16 + 4); /* ceil(1000/64) + latency */
    tgt_free(t);
    tgt_free(lite);
}

Test(timing, constraints_are_checked)
{
    tgt_target *t = load_target("edge-v1");
    const tgt_isa *isa = t->isa;
    int conv = tgt_insn_find(isa, "conv"), st = tgt_insn_find(isa, "dma_store");
    int64_t v[TGT_F_COUNT];
    uint64_t seed = 11;
    fill(isa, conv, 0, &seed, v);
    npu_err e;
    npu_err_clear(&e);
    cr_assert_eq(tgt_check(t, conv, v, &e), NPU_OK, "%s", e.msg);
    v[TGT_F_WGT] = 0x4008;
    cr_assert_eq(tgt_check(t, conv, v, &e), NPU_EUSER);
    cr_assert_not_null(strstr(e.msg, "conv violates 'wgt % 16 == 0"), "%s", e.msg);
    cr_assert_not_null(strstr(e.msg, "16-byte lines"), "%s", e.msg);
    cr_assert_not_null(strstr(e.msg, "targets/edge-v1.yaml:"), "%s", e.msg);
    v[TGT_F_WGT] = 0x4000;
    v[TGT_F_IC] = 5000;
    cr_assert_eq(tgt_check(t, conv, v, &e), NPU_EUSER);
    cr_assert_not_null(strstr(e.msg, "conv.ic = 5000"), "%s", e.msg);
    fill(isa, st, 0, &seed, v);
    cr_assert_eq(tgt_check(t, st, v, &e), NPU_EUSER); /* region 0: constants are read-only */
    cr_assert_not_null(strstr(e.msg, "read-only"), "%s", e.msg);
    v[TGT_F_REGION] = TGT_REGION_OUTPUTS;
    cr_assert_eq(tgt_check(t, st, v, &e), NPU_OK, "%s", e.msg);
    tgt_free(t);
}

/* ---- lookup ------------------------------------------------------------------------------------------------- */

Test(lookup, search_path_env_exe_dir_cwd_and_path)
{
    char targets[1024], isa_dir[1024];
    at_root(targets, sizeof targets, "targets");
    at_root(isa_dir, sizeof isa_dir, "isa");
    tgt_target *t;
    npu_err e;
    npu_err_clear(&e);
    /* $NPUCC_TARGET_PATH, past a missing directory */
    char env[2100];
    snprintf(env, sizeof env, "/nonexistent:%s", targets);
    setenv("NPUCC_TARGET_PATH", env, 1);
    tgt_opts none = {.exe_dir = "/nonexistent"};
    cr_assert_eq(tgt_load("edge-v1-lite", &none, &t, &e), NPU_OK, "%s", e.msg);
    cr_assert_str_eq(t->name, "edge-v1-lite");
    tgt_free(t);
    unsetenv("NPUCC_TARGET_PATH");
    /* <exe>/../targets: the source tree next to build/ */
    tgt_opts exe = {.exe_dir = isa_dir};
    cr_assert_eq(tgt_load("edge-v1-wide", &exe, &t, &e), NPU_OK, "%s", e.msg);
    tgt_free(t);
    /* ./targets */
    char cwd[1024];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    cr_assert_eq(chdir(root()), 0);
    cr_assert_eq(tgt_load("edge-v1", &none, &t, &e), NPU_OK, "%s", e.msg);
    tgt_free(t);
    cr_assert_eq(chdir(cwd), 0);
    /* a path */
    char p[1100];
    snprintf(p, sizeof p, "%s/edge-v1-narrow.yaml", targets);
    cr_assert_eq(tgt_load(p, &none, &t, &e), NPU_OK, "%s", e.msg);
    tgt_free(t);
    /* missing: the message lists where it looked */
    cr_assert_eq(tgt_load("no-such-target", &none, &t, &e), NPU_EUSER);
    cr_assert_null(t);
    cr_assert_not_null(strstr(e.msg, "target 'no-such-target' not found"), "%s", e.msg);
    cr_assert_not_null(strstr(e.msg, "/nonexistent/../targets/no-such-target.yaml"), "%s", e.msg);
    cr_assert_eq(tgt_load("/nonexistent/x.yaml", &none, &t, &e), NPU_EUSER);
    cr_assert_not_null(strstr(e.msg, "/nonexistent/x.yaml: target file not found"), "%s", e.msg);
    char found[1024];
    tgt_opts sp = {.search_path = targets, .exe_dir = "/nonexistent"};
    cr_assert_eq(tgt_find("edge-v1", &sp, found, sizeof found, &e), NPU_OK, "%s", e.msg);
    snprintf(p, sizeof p, "%s/edge-v1.yaml", targets);
    cr_assert_str_eq(found, p);
}

Test(lookup, isa_found_on_the_search_path)
{
    char *dir = make_tmpdir(), p[1200], isa_dir[1024];
    at_root(isa_dir, sizeof isa_dir, "isa");
    char src[1024];
    at_root(src, sizeof src, "targets/edge-v1.yaml");
    size_t len;
    char *text = slurp(src, &len);
    snprintf(p, sizeof p, "%s/mine.yaml", dir);
    spit(p, text); /* isa: npu-v1, but no ../isa next to it */
    char sp[2400];
    snprintf(sp, sizeof sp, "%s:%s", dir, isa_dir);
    tgt_opts o = {.search_path = sp, .exe_dir = "/nonexistent"};
    tgt_target *t;
    npu_err e;
    npu_err_clear(&e);
    cr_assert_eq(tgt_load("mine", &o, &t, &e), NPU_OK, "%s", e.msg);
    cr_assert_str_eq(t->isa->name, "npu-v1");
    tgt_free(t);
    /* not found when nothing on the path holds it (run where ./isa does not exist) */
    char cwd[1024];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    cr_assert_eq(chdir(dir), 0);
    tgt_opts bare = {.search_path = dir, .exe_dir = "/nonexistent"};
    cr_assert_eq(tgt_load("mine", &bare, &t, &e), NPU_EUSER);
    cr_assert_eq(chdir(cwd), 0);
    cr_assert_not_null(strstr(e.msg, "names ISA 'npu-v1' that cannot be found"), "%s", e.msg);
    free(text);
    rm_tmpdir(dir);
}

/* ---- resources ------------------------------------------------------------------------------------------------ */

Test(resources, every_allocation_failure_is_reported_and_nothing_leaks)
{
    char targets[1024];
    at_root(targets, sizeof targets, "targets");
    bool loaded = false;
    for (size_t k = 1; k < 2000 && !loaded; k++) {
        npu_alloc_counter c = {.fail_at = k};
        tgt_opts o = {.alloc = npu_alloc_counting(&c), .search_path = targets};
        tgt_target *t = NULL;
        npu_err e;
        npu_err_clear(&e);
        npu_status st = tgt_load("edge-v1", &o, &t, &e);
        if (st == NPU_OK) {
            loaded = true;
            tgt_free(t);
        } else {
            cr_assert_eq(st, NPU_EINTERNAL, "failing allocation %zu: %s", k, e.msg);
            cr_assert_not_null(strstr(e.msg, "out of memory"), "%s", e.msg);
            cr_assert_null(t);
        }
        cr_assert_eq(c.live_bytes, 0, "allocation %zu: %zu bytes leaked", k, c.live_bytes);
    }
    cr_assert(loaded);
}

/* ---- robustness ------------------------------------------------------------------------------------------------ */

/* Random edits of a real description: the loader answers OK or a located
 * user error, never crashes (run under ASan by make test-asan). */
Test(robust, mutated_descriptions_never_crash)
{
    char p[1024];
    at_root(p, sizeof p, "isa/npu-v1.yaml");
    size_t len;
    char *text = slurp(p, &len);
    static const char alphabet[] = "{}[]:,-#'\"\n\t 0179axz_.*&!|>%";
    uint64_t seed = 0x1234567ull;
    char *buf = malloc(2 * len + 64);
    int rejected = 0;
    for (int it = 0; it < 400; it++) {
        memcpy(buf, text, len + 1);
        size_t n = len;
        int edits = 1 + (int)(rnd(&seed) % 4);
        for (int k = 0; k < edits && n > 2; k++) {
            size_t at = (size_t)(rnd(&seed) % n);
            switch (rnd(&seed) % 4) {
            case 0: buf[at] = alphabet[rnd(&seed) % (sizeof alphabet - 1)]; break;
            case 1: { /* delete a span */
                size_t span = 1 + (size_t)(rnd(&seed) % 40);
                if (at + span > n)
                    span = n - at;
                memmove(buf + at, buf + at + span, n - at - span + 1);
                n -= span;
                break;
            }
            case 2: { /* repeat a span */
                size_t span = 1 + (size_t)(rnd(&seed) % 40);
                if (at + span > n)
                    span = n - at;
                if (n + span < 2 * len) {
                    memmove(buf + at + span, buf + at, n - at + 1);
                    n += span;
                }
                break;
            }
            default: buf[at] = '\0', n = at; break;
            }
        }
        tgt_isa *isa = NULL;
        npu_err e;
        npu_err_clear(&e);
        npu_status st = tgt_isa_parse("fuzz.yaml", buf, n, NULL, &isa, &e);
        cr_assert(st == NPU_OK || st == NPU_EUSER, "iteration %d: status %d: %s", it, st, e.msg);
        if (st) {
            rejected++;
            cr_assert_eq(strncmp(e.msg, "fuzz.yaml:", 10), 0, "%s", e.msg);
        } else {
            /* what loads must also round-trip */
            uint64_t s2 = (uint64_t)it + 1;
            for (int i = 0; i < isa->ninsns; i++) {
                int64_t v[TGT_F_COUNT];
                fill(isa, i, 2, &s2, v);
                roundtrip(isa, i, v);
            }
            tgt_isa_free(isa);
        }
    }
    cr_assert_gt(rejected, 100);
    free(buf);
    free(text);
}

/* ---- semantics: footprints and consistency ----------------------------------------------------------------------- */

static void set_kv(const tgt_isa *isa, int insn, const tgt_kv *kv, size_t n, int64_t *v)
{
    tgt_defaults(isa, insn, v);
    for (size_t k = 0; k < n; k++)
        v[tgt_fid_from_name(kv[k].name)] = kv[k].value;
}

static int64_t bytes_of(const tgt_operand *o, int n, tgt_fid f, bool write)
{
    for (int i = 0; i < n; i++)
        if (o[i].addr == f && o[i].write == write)
            return o[i].bytes;
    return -1;
}

Test(semantics, operand_footprints)
{
    tgt_isa *isa = load_isa("isa/npu-v1.yaml");
    int conv = tgt_insn_find(isa, "conv"), elt = tgt_insn_find(isa, "eltwise"), dma = tgt_insn_find(isa, "dma_load");
    int64_t v[TGT_F_COUNT];
    tgt_operand o[TGT_MAX_OPERANDS];
    tgt_kv c[] = {{"ic", 8}, {"oc", 16}, {"ih", 18}, {"iw", 18}, {"oh", 16}, {"ow", 16}, {"kh", 3}, {"kw", 3}, {"w4", 1}};
    set_kv(isa, conv, c, 9, v);
    int n = tgt_operands(isa, conv, v, o);
    cr_assert_eq(bytes_of(o, n, TGT_F_SRC, false), 8 * 18 * 18);
    cr_assert_eq(bytes_of(o, n, TGT_F_WGT, false), 16 * 8 * 9 / 2);
    cr_assert_eq(bytes_of(o, n, TGT_F_QTAB, false), 16 * 12);
    cr_assert_eq(bytes_of(o, n, TGT_F_DST, true), 16 * 16 * 16);
    cr_assert_eq(bytes_of(o, n, TGT_F_PSUM, true), -1);
    v[TGT_F_ACC_OUT] = 1; /* partial sums instead of the output */
    n = tgt_operands(isa, conv, v, o);
    cr_assert_eq(bytes_of(o, n, TGT_F_PSUM, true), 4 * 16 * 16 * 16);
    cr_assert_eq(bytes_of(o, n, TGT_F_DST, true), -1);
    tgt_kv e[] = {{"c", 4}, {"h", 5}, {"w", 6}, {"b_bc", TGT_BC_H | TGT_BC_W}};
    set_kv(isa, elt, e, 4, v);
    n = tgt_operands(isa, elt, v, o);
    cr_assert_eq(bytes_of(o, n, TGT_F_A, false), 120);
    cr_assert_eq(bytes_of(o, n, TGT_F_B, false), 4); /* per channel */
    tgt_kv d[] = {{"c", 2}, {"h", 3}, {"w", 4}, {"dram_cs", 100}, {"dram_hs", 10}, {"sram_cs", 12}, {"sram_hs", 4}};
    set_kv(isa, dma, d, 7, v);
    n = tgt_operands(isa, dma, v, o);
    cr_assert_eq(bytes_of(o, n, TGT_F_DRAM, false), 100 + 2 * 10 + 4);
    cr_assert_eq(bytes_of(o, n, TGT_F_SRAM, true), 12 + 2 * 4 + 4);
    cr_assert(o[0].dram && !o[1].dram);
    tgt_isa_free(isa);
}

Test(semantics, window_consistency)
{
    tgt_isa *isa = load_isa("isa/npu-v1.yaml");
    int conv = tgt_insn_find(isa, "conv");
    static const struct {
        int64_t ih, kh, sh, dh, pt, pb, oh;
        bool ok;
    } cases[] = {
        {18, 3, 1, 1, 0, 0, 16, true}, {18, 3, 1, 1, 0, 0, 17, false}, {16, 3, 1, 1, 1, 1, 16, true},
        {17, 3, 2, 1, 0, 0, 8, true},  {10, 3, 1, 2, 0, 0, 6, true},   {2, 3, 1, 1, 0, 0, 1, false},
        {5, 3, 1, 1, 3, 0, 6, false}, /* padding as large as the kernel */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tgt_kv kv[] = {{"ic", 1}, {"oc", 1}, {"ih", cases[i].ih}, {"iw", 1}, {"oh", cases[i].oh}, {"ow", 1},
                       {"kh", cases[i].kh}, {"kw", 1}, {"sh", cases[i].sh}, {"dh", cases[i].dh},
                       {"pt", cases[i].pt}, {"pb", cases[i].pb}};
        int64_t v[TGT_F_COUNT];
        set_kv(isa, conv, kv, 12, v);
        npu_err e;
        npu_err_clear(&e);
        cr_assert_eq(tgt_sem_check(isa, conv, v, &e) == NPU_OK, cases[i].ok, "case %zu: %s", i, e.msg);
    }
    tgt_isa_free(isa);
}

Test(semantics, check_keeps_operands_inside_sram)
{
    tgt_target *t = load_target("edge-v1");
    int conv = tgt_insn_find(t->isa, "conv");
    tgt_kv kv[] = {{"ic", 1}, {"oc", 16}, {"ih", 8}, {"iw", 8}, {"oh", 8}, {"ow", 8}, {"kh", 1}, {"kw", 1},
                   {"dst", 512 * 1024 - 1024}, {"wgt", 0x1000}, {"qtab", 0x2000}};
    int64_t v[TGT_F_COUNT];
    set_kv(t->isa, conv, kv, 11, v);
    npu_err e;
    npu_err_clear(&e);
    cr_assert_eq(tgt_check(t, conv, v, &e), NPU_OK, "%s", e.msg); /* 16*8*8 = 1024 bytes: just fits */
    v[TGT_F_DST] += 16;
    cr_assert_eq(tgt_check(t, conv, v, &e), NPU_EUSER);
    cr_assert_not_null(strstr(e.msg, "conv.dst 0x7fc10 + 1024 bytes runs past"), "%s", e.msg);
    tgt_free(t);
}

/* ---- from memory (tgt_parse, the fuzz harness's entry point) ------------------ */

Test(parse, from_memory_equals_from_file_and_names_the_file)
{
    char path[1024];
    at_root(path, sizeof path, "targets/edge-v1.yaml");
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    npu_err err;
    tgt_target *a = NULL, *b = NULL;
    cr_assert_eq(tgt_load(path, NULL, &a, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(tgt_parse(path, text, n, NULL, &b, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(a->hash, b->hash);
    cr_assert_str_eq(b->file, path);
    cr_assert_eq(b->isa->ninsns, a->isa->ninsns);
    tgt_free(a);
    tgt_free(b);
    /* a break in the text is reported at its line in the given file */
    const char *bad = "target: x\nisa: npu-v1\nnpu: [\n";
    cr_assert_eq(tgt_parse(path, bad, strlen(bad), NULL, &b, &err), NPU_EUSER);
    cr_assert_null(b);
    cr_assert(strstr(err.msg, "edge-v1.yaml:4:") || strstr(err.msg, "edge-v1.yaml:3:"), "%s", err.msg);
}

/* tgt_opts.isa: targets of one ISA share an ISA loaded once, with the same
 * hash as when each parses its own; a target of another ISA still parses its
 * own. */
Test(parse, shared_isa_is_used_when_the_path_matches)
{
    char tpath[1024], ipath[1024], npath[1024];
    at_root(tpath, sizeof tpath, "targets/edge-v1.yaml");
    at_root(npath, sizeof npath, "targets/edge-v1-narrow.yaml");
    at_root(ipath, sizeof ipath, "targets/../isa/npu-v1.yaml");
    npu_err err;
    tgt_isa *isa = NULL;
    cr_assert_eq(tgt_isa_load(ipath, NULL, &isa, &err), NPU_OK, "%s", err.msg);
    tgt_opts o = {.isa = isa};
    tgt_target *own = NULL, *shared = NULL, *other = NULL;
    cr_assert_eq(tgt_load(tpath, NULL, &own, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(tgt_load(tpath, &o, &shared, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(tgt_load(npath, &o, &other, &err), NPU_OK, "%s", err.msg);
    cr_assert_str_eq(own->isa->file, ipath, "the cache keys on this path form");
    cr_assert(shared->isa == isa, "the shared ISA is used");
    cr_assert(own->isa != isa);
    cr_assert_eq(shared->hash, own->hash);
    cr_assert(other->isa != isa && strcmp(other->isa->name, isa->name) != 0, "another ISA: its own");
    tgt_free(shared);
    tgt_free(own);
    tgt_free(other);
    tgt_isa_free(isa);
}
