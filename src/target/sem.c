/* The one table of semantics the simulator implements in C, the field
 * vocabulary, units, target parameters, and the hasher of canonical forms.
 * Adding a semantics means a row here, an entry in tgt_sem, its C in the
 * simulator and a section in docs/isa.md. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "target/tgt_internal.h"

static const struct {
    const char *name;
    tgt_kind kind;
    const char *doc;
} vocab[TGT_F_COUNT] = {
#define TGT_FIELD(id, name, kind, doc) [TGT_F_##id] = {name, TGT_K_##kind, doc},
#include "target/fields.def"
#undef TGT_FIELD
};

const char *tgt_fid_name(tgt_fid f)
{
    return (unsigned)f < TGT_F_COUNT ? vocab[f].name : "?";
}

tgt_kind tgt_fid_kind(tgt_fid f)
{
    return (unsigned)f < TGT_F_COUNT ? vocab[f].kind : TGT_K_INT;
}

const char *tgt_fid_doc(tgt_fid f)
{
    return (unsigned)f < TGT_F_COUNT ? vocab[f].doc : "";
}

tgt_fid tgt_fid_from_name(const char *name)
{
    for (int f = 0; f < TGT_F_COUNT; f++)
        if (strcmp(vocab[f].name, name) == 0)
            return (tgt_fid)f;
    return TGT_F_COUNT;
}

static const char *const region_names[] = {"constants", "arena", "inputs", "outputs", "flash"};
static const char *const elt_names[] = {"add", "sub", "mul", "min", "max"};
static const char *const pool_names[] = {"max", "avg"};

static const char *const *enum_names(tgt_fid f, int *n)
{
    switch (f) {
    case TGT_F_REGION: *n = TGT_REGION_COUNT; return region_names;
    case TGT_F_OP: *n = TGT_ELT_COUNT; return elt_names;
    case TGT_F_MODE: *n = TGT_POOL_COUNT; return pool_names;
    default: *n = 0; return NULL;
    }
}

const char *tgt_enum_name(tgt_fid f, int64_t v)
{
    int n;
    const char *const *names = enum_names(f, &n);
    return names && v >= 0 && v < n ? names[v] : NULL;
}

int tgt_enum_count(tgt_fid f)
{
    int n;
    enum_names(f, &n);
    return n;
}

/* ---- semantics -------------------------------------------------------------------- */

#define R(f) {TGT_F_##f, true, 0}
#define O(f, d) {TGT_F_##f, false, d}
#define COMMON O(WAIT, 0), O(SIGNAL, 0)
#define WINDOW O(SH, 1), O(SW, 1), O(PT, 0), O(PL, 0), O(PB, 0), O(PR, 0)
#define CLAMP O(CLAMP_LO, -128), O(CLAMP_HI, 127)
#define ACCUM O(ACC_IN, 0), O(ACC_OUT, 0), O(PSUM, 0)
/* the output stage's table lookup and its eltwise with an SRAM operand */
#define EPILOGUE O(EPI_LUT, 0), O(TABLE, 0), O(EPI_ELT, 0), O(B, 0), O(B_BC, 0), O(ETAB, 0)
/* plane strides of the SRAM operands (optional: without them every operand is dense) */
#define PLANES O(SRC_CS, 0), O(DST_CS, 0), O(B_CS, 0)
/* A16W8 (optional: an ISA without them has no int16 activations) */
#define A16 O(A16, 0), O(CLAMP16_LO, 0), O(CLAMP16_HI, 0)

static const tgt_sem_field f_dma[] = {
    COMMON, R(REGION), R(DRAM), R(SRAM), R(C), R(H), R(W), R(DRAM_HS), R(DRAM_CS), R(SRAM_HS), R(SRAM_CS),
    O(CH, 0), O(A4, 0),
};
static const tgt_sem_field f_conv[] = {
    COMMON, R(SRC), R(DST), R(WGT), R(QTAB), R(IC), R(OC), R(IH), R(IW), R(OH), R(OW), R(KH), R(KW),
    WINDOW, O(DH, 1), O(DW, 1), O(IN_ZP, 0), O(OUT_ZP, 0), CLAMP, O(W4, 0), ACCUM, EPILOGUE, A16, PLANES,
};
static const tgt_sem_field f_dwconv[] = {
    COMMON, R(SRC), R(DST), R(WGT), R(QTAB), R(C), R(IH), R(IW), R(OH), R(OW), R(KH), R(KW),
    WINDOW, O(DH, 1), O(DW, 1), O(IN_ZP, 0), O(OUT_ZP, 0), CLAMP, O(W4, 0), EPILOGUE, A16, PLANES,
};
static const tgt_sem_field f_matmul[] = {
    COMMON, R(SRC), R(DST), R(WGT), R(QTAB), R(M), R(K), R(N),
    O(IN_ZP, 0), O(W_ZP, 0), O(OUT_ZP, 0), CLAMP, O(W4, 0), ACCUM, O(BT, 0), A16,
};
static const tgt_sem_field f_pool[] = {
    COMMON, R(SRC), R(DST), R(C), R(IH), R(IW), R(OH), R(OW), R(KH), R(KW), R(MODE),
    WINDOW, CLAMP, O(COUNT_PAD, 0), O(IN_ZP, 0), O(OUT_ZP, 0), O(MULT, 1 << 30), O(SHIFT, 1), A16, ACCUM,
    O(DIVISOR, 1),
};
static const tgt_sem_field f_eltwise[] = {
    COMMON, R(A), R(B), R(DST), R(C), R(H), R(W), R(OP), R(A_MULT), R(B_MULT), R(OUT_MULT), R(OUT_SHIFT),
    O(A_SHIFT, 0), O(B_SHIFT, 0), O(A_ZP, 0), O(B_ZP, 0), O(OUT_ZP, 0), CLAMP,
    O(A_BC, 0), O(B_BC, 0), A16,
};
static const tgt_sem_field f_lut[] = {COMMON, R(SRC), R(DST), R(LEN), R(TABLE), O(A16, 0)};
static const tgt_sem_field f_requant[] = {
    COMMON, R(SRC), R(DST), R(LEN), R(MULT), O(SHIFT, 0), O(IN_ZP, 0), O(OUT_ZP, 0), CLAMP, O(COPY, 0), A16, O(IN16, 0),
};
/* rows h of w elements: softmax's 256 int32 exp table, layernorm's per-column qtab */
static const tgt_sem_field f_softmax[] = {
    COMMON, R(SRC), R(DST), R(TABLE), R(H), R(W), R(MULT), O(SHIFT, 0), O(OUT_ZP, 0), CLAMP,
};
static const tgt_sem_field f_layernorm[] = {
    COMMON, R(SRC), R(DST), R(QTAB), R(H), R(W), O(EPS, 0), O(OUT_ZP, 0), CLAMP,
};
static const tgt_sem_field f_quantize[] = {COMMON, R(SRC), R(DST), R(LEN), R(FSCALE), O(OUT_ZP, 0), O(A16, 0)};
static const tgt_sem_field f_ctrl[] = {COMMON};
static const tgt_sem_field f_sync[] = {COMMON, O(DRAIN, 0)};

#define U(u) (1u << TGT_UNIT_##u)
#define ROW(id, name, units, f) [TGT_SEM_##id] = {name, units, (int)(sizeof f / sizeof f[0]), f}

static const tgt_sem_info sems[TGT_SEM_COUNT] = {
    ROW(DMA_LOAD, "dma_load", U(DMA), f_dma),
    ROW(DMA_STORE, "dma_store", U(DMA), f_dma),
    ROW(CONV, "conv", U(MAC) | U(VECTOR), f_conv),
    ROW(DWCONV, "dwconv", U(MAC) | U(VECTOR), f_dwconv),
    ROW(MATMUL, "matmul", U(MAC) | U(VECTOR), f_matmul),
    ROW(POOL, "pool", U(MAC) | U(VECTOR), f_pool),
    ROW(ELTWISE, "eltwise", U(MAC) | U(VECTOR), f_eltwise),
    ROW(LUT, "lut", U(MAC) | U(VECTOR), f_lut),
    ROW(REQUANT, "requant", U(MAC) | U(VECTOR), f_requant),
    ROW(SOFTMAX, "softmax", U(VECTOR), f_softmax),
    ROW(LAYERNORM, "layernorm", U(VECTOR), f_layernorm),
    ROW(SYNC, "sync", U(CTRL), f_sync),
    ROW(END, "end", U(CTRL), f_ctrl),
    ROW(QUANTIZE, "quantize", U(VECTOR), f_quantize),
};

const tgt_sem_info *tgt_sem_get(tgt_sem s)
{
    return (unsigned)s < TGT_SEM_COUNT ? &sems[s] : NULL;
}

const char *tgt_sem_name(tgt_sem s)
{
    return (unsigned)s < TGT_SEM_COUNT ? sems[s].name : "?";
}

tgt_sem tgt_sem_from_name(const char *name)
{
    for (int s = 0; s < TGT_SEM_COUNT; s++)
        if (strcmp(sems[s].name, name) == 0)
            return (tgt_sem)s;
    return TGT_SEM_COUNT;
}

static const char *const unit_names[TGT_UNIT_COUNT] = {"dma", "mac", "vector", "ctrl"};

const char *tgt_unit_name(tgt_unit u)
{
    return (unsigned)u < TGT_UNIT_COUNT ? unit_names[u] : "?";
}

/* ---- parameters and memories --------------------------------------------------------- */

static const struct {
    const char *name;
    int64_t min, def;
    tgt_param_kind kind;
    const char *names; /* an enum's values, '|'-separated */
} params[TGT_P_COUNT] = {
#define TGT_PARAM(id, name, min, doc) [TGT_P_##id] = {name, min, 0, TGT_PK_REQUIRED, NULL},
#define TGT_PARAM_OPT(id, name, min, def, doc) [TGT_P_##id] = {name, min, def, TGT_PK_OPTIONAL, NULL},
#define TGT_PARAM_ENUM(id, name, names, def, doc) [TGT_P_##id] = {name, 0, def, TGT_PK_ENUM, names},
#define TGT_PARAM_DERIVED(id, name, doc) [TGT_P_##id] = {name, 0, 0, TGT_PK_DERIVED, NULL},
#include "target/params.def"
#undef TGT_PARAM
#undef TGT_PARAM_OPT
#undef TGT_PARAM_ENUM
#undef TGT_PARAM_DERIVED
};

const char *tgt_param_name(tgt_param p)
{
    return (unsigned)p < TGT_P_COUNT ? params[p].name : "?";
}

int64_t tgt_param_min(tgt_param p)
{
    return params[p].min;
}

tgt_param_kind tgt_param_kind_of(tgt_param p)
{
    return params[p].kind;
}

int64_t tgt_param_default(tgt_param p)
{
    return params[p].def;
}

const char *tgt_param_enum_names(tgt_param p)
{
    return params[p].names;
}

int64_t tgt_param_enum_value(tgt_param p, const char *s)
{
    const char *n = params[p].names;
    size_t len = strlen(s);
    for (int64_t i = 0; n && *n; i++) {
        size_t k = strcspn(n, "|");
        if (k == len && strncmp(n, s, k) == 0)
            return i;
        n += k + (n[k] == '|');
    }
    return -1;
}

tgt_param tgt_param_from_name(const char *name)
{
    for (int p = 0; p < TGT_P_COUNT; p++)
        if (strcmp(params[p].name, name) == 0)
            return (tgt_param)p;
    return TGT_P_COUNT;
}

static const char *const mem_names[TGT_MEM_COUNT] = {"rom", "flash", "dram", "npu_regs", "sim_ctrl"};

const char *tgt_mem_name(tgt_mem m)
{
    return (unsigned)m < TGT_MEM_COUNT ? mem_names[m] : "?";
}

static const char *canon_field(int64_t i)
{
    return tgt_fid_name((tgt_fid)i);
}

static const char *canon_param(int64_t i)
{
    return tgt_param_name((tgt_param)i);
}

const xcanon_names tgt_canon_names = {canon_field, canon_param};

/* ---- FNV-1a ------------------------------------------------------------------------------ */

void hsh_init(hsh *h)
{
    h->h = 0xcbf29ce484222325ull;
}

void hsh_bytes(hsh *h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h->h ^= b[i];
        h->h *= 0x100000001b3ull;
    }
}

void hsh_printf(hsh *h, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* canonical pieces are short; a longer one is hashed truncated, still deterministic */
    hsh_bytes(h, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

tgt_bus tgt_region_bus(const tgt_target *t, int64_t region)
{
    if (region == TGT_REGION_FLASH || (region == TGT_REGION_CONSTANTS && t->p[TGT_P_PLACEMENT_CONSTANTS] == TGT_PLACE_FLASH))
        return TGT_BUS_FLASH;
    return TGT_BUS_DRAM;
}

double tgt_bus_bytes_per_cycle(const tgt_target *t, tgt_bus b)
{
    int64_t kbps = t->p[b == TGT_BUS_FLASH ? TGT_P_FLASH_KB_PER_S : TGT_P_DRAM_KB_PER_S];
    return (double)kbps / (double)t->p[TGT_P_CLOCK_KHZ];
}
