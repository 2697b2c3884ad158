/* Targets and ISAs described in YAML (see docs/isa.md): loading and
 * validation, the field/semantics vocabulary the simulator implements, the
 * table-driven encoder and decoder, timing and constraint evaluation.
 *
 * A tgt_target owns its tgt_isa; both live in one arena and are freed by
 * tgt_free. The structs below are read-only for callers. */
#ifndef NPU_TARGET_H
#define NPU_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/alloc.h"
#include "common/stats.h"
#include "common/status.h"

/* ---- vocabulary ------------------------------------------------------------ */

/* Field ids: one per field name an ISA may use (target/fields.def). */
typedef enum tgt_fid {
#define TGT_FIELD(id, name, kind, doc) TGT_F_##id,
#include "target/fields.def"
#undef TGT_FIELD
    TGT_F_COUNT
} tgt_fid;

typedef enum tgt_kind {
    TGT_K_MASK,   /* token bit set, unsigned */
    TGT_K_ADDR,   /* SRAM byte address, unsigned */
    TGT_K_DRAM,   /* byte offset in a DRAM region, unsigned */
    TGT_K_SIZE,   /* count / size, unsigned */
    TGT_K_STRIDE, /* byte stride, unsigned */
    TGT_K_INT,    /* signed value */
    TGT_K_FLAG,   /* 0 or 1 */
    TGT_K_ENUM,   /* a value named by the simulator's table */
} tgt_kind;

const char *tgt_fid_name(tgt_fid f);
tgt_kind tgt_fid_kind(tgt_fid f);
const char *tgt_fid_doc(tgt_fid f);
tgt_fid tgt_fid_from_name(const char *name); /* TGT_F_COUNT when unknown */

/* Values of the enum fields: fixed here (the simulator's meaning), not by YAML. */
enum { TGT_REGION_CONSTANTS, TGT_REGION_ARENA, TGT_REGION_INPUTS, TGT_REGION_OUTPUTS, TGT_REGION_FLASH,
       TGT_REGION_COUNT };
enum { TGT_ELT_ADD, TGT_ELT_SUB, TGT_ELT_MUL, TGT_ELT_MIN, TGT_ELT_MAX, TGT_ELT_COUNT };
enum { TGT_POOL_MAX, TGT_POOL_AVG, TGT_POOL_COUNT };
enum { TGT_BC_W = 1, TGT_BC_H = 2, TGT_BC_C = 4 }; /* bits of a_bc / b_bc */
/* The eltwise epilogue's parameter block at etab (conv, dwconv with epi_elt;
 * docs/isa.md "Eltwise epilogue"): 16 little-endian int32 words, the fields
 * of eltwise in this order, the conv's int8 result as a (as b with the swap
 * flag), the operand at b as b (as a); the last three words reserved, 0. */
enum {
    TGT_ETAB_OP, TGT_ETAB_FLAGS, TGT_ETAB_A_MULT, TGT_ETAB_A_SHIFT, TGT_ETAB_B_MULT, TGT_ETAB_B_SHIFT,
    TGT_ETAB_OUT_MULT, TGT_ETAB_OUT_SHIFT, TGT_ETAB_A_ZP, TGT_ETAB_B_ZP, TGT_ETAB_OUT_ZP, TGT_ETAB_CLAMP_LO,
    TGT_ETAB_CLAMP_HI, TGT_ETAB_WORDS = 16, TGT_ETAB_BYTES = 4 * TGT_ETAB_WORDS
};
enum { TGT_ETAB_SWAP = 1 }; /* flags: the operand at b is the eltwise's a, the conv's result its b */

/* "arena" for (TGT_F_REGION, 1); NULL when f is no enum or v has no name. */
const char *tgt_enum_name(tgt_fid f, int64_t v);
/* Number of named values of an enum field (0 for others). */
int tgt_enum_count(tgt_fid f);

/* Semantics: what the simulator implements in C, one per entry. */
typedef enum tgt_sem {
    TGT_SEM_DMA_LOAD,
    TGT_SEM_DMA_STORE,
    TGT_SEM_CONV,
    TGT_SEM_DWCONV,
    TGT_SEM_MATMUL,
    TGT_SEM_POOL,
    TGT_SEM_ELTWISE,
    TGT_SEM_LUT,
    TGT_SEM_REQUANT,
    TGT_SEM_SOFTMAX,
    TGT_SEM_LAYERNORM,
    TGT_SEM_SYNC,
    TGT_SEM_END,
    TGT_SEM_QUANTIZE, /* float32 -> int8 (model inputs): nk_quantize_f32_i8 */
    TGT_SEM_COUNT
} tgt_sem;

typedef enum tgt_unit { TGT_UNIT_DMA, TGT_UNIT_MAC, TGT_UNIT_VECTOR, TGT_UNIT_CTRL, TGT_UNIT_COUNT } tgt_unit;

typedef struct tgt_sem_field {
    tgt_fid fid;
    bool required;
    int64_t def; /* the value the simulator assumes when an optional field is absent */
} tgt_sem_field;

typedef struct tgt_sem_info {
    const char *name;
    unsigned units; /* bit set of (1u << tgt_unit) it may issue to */
    int nfields;    /* wait and signal included, optional, default 0 */
    const tgt_sem_field *fields;
} tgt_sem_info;

const tgt_sem_info *tgt_sem_get(tgt_sem s);
const char *tgt_sem_name(tgt_sem s);
tgt_sem tgt_sem_from_name(const char *name); /* TGT_SEM_COUNT when unknown */
const char *tgt_unit_name(tgt_unit u);

/* Integer target parameters (target/params.def), usable in expressions. */
typedef enum tgt_param {
#define TGT_PARAM(id, name, min, doc) TGT_P_##id,
#include "target/params.def"
#undef TGT_PARAM
    TGT_P_COUNT
} tgt_param;

const char *tgt_param_name(tgt_param p); /* "mac.rows" */

/* How a parameter is given (target/params.def). */
typedef enum tgt_param_kind { TGT_PK_REQUIRED, TGT_PK_OPTIONAL, TGT_PK_ENUM, TGT_PK_DERIVED } tgt_param_kind;
tgt_param_kind tgt_param_kind_of(tgt_param p);
int64_t tgt_param_default(tgt_param p);          /* an optional or enum key's value when absent */
const char *tgt_param_enum_names(tgt_param p);   /* "dram|flash"; NULL for other kinds */
int64_t tgt_param_enum_value(tgt_param p, const char *name); /* index of name, -1 when none */


/* ---- the ISA ----------------------------------------------------------------- */

typedef struct tgt_expr tgt_expr; /* a compiled integer expression */

typedef struct tgt_field {
    const char *name;
    tgt_fid fid;
    int word, lsb, width;
    bool is_signed;
    int64_t scale, offset; /* value = raw * scale + offset */
    int64_t lo, hi;        /* values accepted: encodable and inside the declared range */
    const char *doc;
} tgt_field;

typedef struct tgt_insn {
    const char *name;
    uint32_t opcode;
    tgt_sem sem;
    tgt_unit unit;
    int nwords;
    int nfields;
    const tgt_field *fields;       /* in the order the YAML lists them (formats first) */
    int16_t slot[TGT_F_COUNT];     /* index into fields, -1 when the instruction lacks the field */
    int64_t defaults[TGT_F_COUNT]; /* semantics defaults; 0 for fields the semantics does not read */
    const uint32_t *used;          /* per word: bits owned by the opcode or a field */
    const tgt_expr *timing;        /* over fields and target parameters, unbound */
    const char *timing_src;
    const char *doc;
} tgt_insn;

typedef struct tgt_isa {
    const char *name, *file, *description;
    int opcode_word, opcode_lsb, opcode_width; /* opcode_word is always 0 */
    int ninsns;
    const tgt_insn *insns; /* sorted by opcode */
    int max_words;
    uint64_t hash; /* FNV-1a over the canonical description (docs/isa.md) */
    /* private */
    const int16_t *by_opcode; /* 1 << opcode_width entries, -1 for none */
    npu_arena *arena;
    npu_alloc alloc;
} tgt_isa;

/* ---- the target ---------------------------------------------------------------- */

typedef enum tgt_mem { TGT_MEM_ROM, TGT_MEM_FLASH, TGT_MEM_DRAM, TGT_MEM_NPU_REGS, TGT_MEM_SIM_CTRL,
                       TGT_MEM_COUNT } tgt_mem;
const char *tgt_mem_name(tgt_mem m); /* the memory_map key: "rom", ..., "sim_ctrl" */

typedef struct tgt_region {
    uint64_t base, size;
} tgt_region;

enum { TGT_DT_INT4 = 1u << 0, TGT_DT_INT8 = 1u << 1, TGT_DT_INT16 = 1u << 2 };

/* A check the ISA cannot express: expr over the instruction's fields and the
 * target parameters must be nonzero. */
typedef struct tgt_constraint {
    int insn;
    const char *src, *why;
    const tgt_expr *expr;
    const char *where; /* "file:line:col" of the expression */
} tgt_constraint;

typedef struct tgt_target {
    const char *name, *file, *description;
    const tgt_isa *isa;
    double npu_clock_mhz;
    int64_t p[TGT_P_COUNT]; /* indexed by tgt_param */
    const char *host_isa;
    double host_clock_mhz, host_cpi;
    tgt_region mem[TGT_MEM_COUNT];
    unsigned act_dtypes, weight_dtypes; /* TGT_DT_* */
    int nconstraints;
    const tgt_constraint *constraints;
    uint64_t hash; /* of the target's canonical form, which includes the ISA's hash */
    int nsets;                 /* --set overrides applied (tgt_opts.sets) */
    const char *const *sets;
    const char *config_json;   /* {"name", "hash", "file", "sets", "params": {"npu.mac.rows": 16, ...}} */
    const char *embed_json;    /* the effective description as JSON, which tgt_parse reads back */
    /* private */
    const tgt_expr **timing; /* per instruction, target parameters folded in */
    tgt_isa *own_isa;
    npu_arena *arena;
    npu_alloc alloc;
} tgt_target;

/* The buses the NPU's DMA and the host use (docs/npu-model.md "Buses"). */
typedef enum tgt_bus { TGT_BUS_DRAM, TGT_BUS_FLASH, TGT_BUS_COUNT } tgt_bus;
enum { TGT_PLACE_DRAM = 0, TGT_PLACE_FLASH = 1 }; /* placement.constants */
/* The bus a DMA of a region (TGT_REGION_*) uses: flash for the flash region
 * and for the constants when the target leaves them in flash, else DRAM. */
tgt_bus tgt_region_bus(const tgt_target *t, int64_t region);
/* A bus's bandwidth in bytes per NPU cycle, exactly what the ISA's timing
 * uses (kb_per_s / clock_khz), as a double. */
double tgt_bus_bytes_per_cycle(const tgt_target *t, tgt_bus b);

/* Area of the target's components and the energy of counted accesses, from
 * its energy.* and area.* parameters (target/energy.c, docs/npu-model.md). */
void tgt_area(const tgt_target *t, npu_area *a);
void tgt_energy(const tgt_target *t, const npu_energy_counts *c, npu_energy *e);

/* ---- loading --------------------------------------------------------------------- */

typedef struct tgt_opts {
    npu_alloc alloc;         /* .fn NULL: malloc */
    const char *search_path; /* ':'-separated directories; NULL: $NPUCC_TARGET_PATH */
    const char *exe_dir;     /* NULL: the directory of /proc/self/exe */
    const char *const *sets; /* "PATH=VALUE" overrides (npu.mac.cols=32), applied to the YAML before it is
                              * checked; errors name "--set PATH=VALUE" */
    int nsets;
    /* An ISA already loaded (tgt_isa_load), used instead of reading and
     * parsing again for a target whose ISA resolves to its file: many
     * targets of one ISA (a sweep, a fuzzer) share it. The caller keeps it
     * alive as long as the targets. NULL: each target parses its own. */
    const tgt_isa *isa;
} tgt_opts;

/* name_or_path: a path (contains '/' or ends in .yaml) or a target name,
 * searched as NAME.yaml in: the search path, <exe>/../share/npucc/targets,
 * <exe>/../targets, ./targets. The target's ISA is resolved from its
 * directory's ../isa/, its directory, then the same places. opts may be NULL.
 * Errors are "file:line:col: ..." and say what was expected. */
npu_status tgt_load(const char *name_or_path, const tgt_opts *opts, tgt_target **out, npu_err *err);
/* From memory (the fuzz harness); file names it in messages and its
 * directory is where the ISA is looked for first, as for tgt_load. */
npu_status tgt_parse(const char *file, const char *text, size_t len, const tgt_opts *opts, tgt_target **out,
                     npu_err *err);
void tgt_free(tgt_target *t);
/* The file tgt_load would read for a target name. */
npu_status tgt_find(const char *name_or_path, const tgt_opts *opts, char *path, size_t cap, npu_err *err);

/* An ISA alone (disassembly, tests); name_or_path as for tgt_load but
 * searched in isa/ directories. */
npu_status tgt_isa_load(const char *name_or_path, const tgt_opts *opts, tgt_isa **out, npu_err *err);
/* From memory; file names it in messages. */
npu_status tgt_isa_parse(const char *file, const char *text, size_t len, const tgt_opts *opts, tgt_isa **out,
                         npu_err *err);
void tgt_isa_free(tgt_isa *isa);

/* Units, sizes, peak MACs/cycle, bandwidths, instructions (npucc --validate). */
void tgt_print_summary(const tgt_target *t, FILE *out);
/* Where the free-text description contradicts the numbers ("16x16" against a
 * 16x32 array, "512 KiB SRAM", "8 B/cycle DRAM"): one "warning: ..." line
 * each to out; returns how many. */
int tgt_check_description(const tgt_target *t, FILE *out);

/* ---- instructions ------------------------------------------------------------------ */

int tgt_insn_find(const tgt_isa *isa, const char *name);  /* -1 when none */
int tgt_insn_for_sem(const tgt_isa *isa, tgt_sem s);      /* first by opcode, -1 when none */
const tgt_field *tgt_insn_field(const tgt_isa *isa, int insn, tgt_fid f); /* NULL when absent */
/* Limits a tiler must respect; for a field the instruction lacks, both are
 * the semantics default (the only value it can express). */
int64_t tgt_field_min(const tgt_isa *isa, int insn, tgt_fid f);
int64_t tgt_field_max(const tgt_isa *isa, int insn, tgt_fid f);

/* v[f] for every field id: fill with tgt_defaults, set what you need, encode. */
void tgt_defaults(const tgt_isa *isa, int insn, int64_t v[TGT_F_COUNT]);
/* Refuses a value outside a field's range or off its scale, and a value other
 * than the default for a field the instruction lacks; the error names the
 * ISA, instruction, field, value and range. *nwords = words written. */
npu_status tgt_encode(const tgt_isa *isa, int insn, const int64_t v[TGT_F_COUNT], uint32_t *words, size_t cap,
                      size_t *nwords, npu_err *err);

typedef struct tgt_kv {
    const char *name;
    int64_t value;
} tgt_kv;
/* Convenience: by names (unknown names are errors). */
npu_status tgt_encode_named(const tgt_isa *isa, const char *insn, const tgt_kv *kv, size_t nkv, uint32_t *words,
                            size_t cap, size_t *nwords, npu_err *err);

typedef struct tgt_decoded {
    int insn;
    int nwords;
    int64_t v[TGT_F_COUNT]; /* fields of the instruction; defaults for the rest */
} tgt_decoded;

/* Decodes the instruction at words[off] (n words in all). Errors (unknown
 * opcode, truncation, reserved bits set, a value outside a declared range)
 * name the word offset. */
npu_status tgt_decode(const tgt_isa *isa, const uint32_t *words, size_t n, size_t off, tgt_decoded *d,
                      npu_err *err);

/* "conv wait=0x1 signal=0x0 src=0x400 ... ic=16" into buf (always
 * terminated); returns the length it wanted, as snprintf. */
size_t tgt_format(const tgt_isa *isa, const tgt_decoded *d, char *buf, size_t cap);

/* Called with each instruction's word offset; a non-NULL string is printed
 * as a "; label" line before it (the .npub debug section plugs in here). */
typedef const char *(*tgt_label_fn)(void *ud, size_t off);
/* One line per instruction: "  000012: conv  src=0x0 ...". Stops at the
 * first undecodable word with its error (lines before it are printed). */
npu_status tgt_disasm(const tgt_isa *isa, const uint32_t *words, size_t n, FILE *out, tgt_label_fn label,
                      void *ud, npu_err *err);

/* ---- what an instruction touches ---------------------------------------------------- */

enum { TGT_MAX_OPERANDS = 8 };

typedef struct tgt_operand {
    tgt_fid addr;  /* the field holding its address: TGT_F_SRC, TGT_F_SRAM, TGT_F_DRAM, ... */
    bool dram;     /* a byte offset in DRAM region v[TGT_F_REGION], else an SRAM address */
    bool write;
    int64_t bytes; /* extent from the address: one past the last byte touched */
    /* a conv or dwconv operand: `plane` bytes per plane; with a plane stride (src_cs, dst_cs, b_cs) `planes`
     * of them cs apart, the bytes between them untouched (planes 0: one dense range) */
    int64_t planes, plane, cs;
} tgt_operand;

/* The memory an instruction with field values v reads and writes, by its
 * semantics (docs/isa.md); returns the count written to out. A DMA with a4
 * addresses its DRAM side in nibbles: that operand's address and extent are
 * nibbles (int4 codes), not bytes. */
int tgt_operands(const tgt_isa *isa, int insn, const int64_t v[TGT_F_COUNT], tgt_operand out[TGT_MAX_OPERANDS]);
/* Bytes a DMA box moves on its bus: c*h*w, half of it rounded up with a4
 * (two int4 codes a byte); what the simulator and the estimates count. */
static inline int64_t tgt_dma_bus_bytes(const int64_t v[TGT_F_COUNT])
{
    int64_t n = v[TGT_F_C] * v[TGT_F_H] * v[TGT_F_W];
    return v[TGT_F_A4] ? (n + 1) / 2 : n;
}
/* Rules between fields the semantics implies: output size matches input,
 * kernel, stride, dilation and padding; padding inside the kernel's extent;
 * clamp_lo <= clamp_hi. */
npu_status tgt_sem_check(const tgt_isa *isa, int insn, const int64_t v[TGT_F_COUNT], npu_err *err);

/* ---- timing and constraints -------------------------------------------------------- */

/* Cycles the instruction occupies its unit: its timing expression over v
 * and the target's parameters, rounded up. */
npu_status tgt_timing(const tgt_target *t, int insn, const int64_t v[TGT_F_COUNT], int64_t *cycles,
                      npu_err *err);
/* Everything a tile must satisfy: every field fits its range, tgt_sem_check,
 * every SRAM operand inside the SRAM, and every target constraint on the
 * instruction; the error names what failed (a constraint with its why). */
npu_status tgt_check(const tgt_target *t, int insn, const int64_t v[TGT_F_COUNT], npu_err *err);

#endif
