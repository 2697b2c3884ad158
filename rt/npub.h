/* The .npub container: one definition shared by the emitter (src/emit), the
 * on-device runtime (rt/), the simulator (sim/) and the tools (npudis,
 * npuref). Freestanding C: builds natively and for the host CPU.
 *
 * Little-endian. Layout: header (64 bytes) at offset 0, then the section
 * table, then sections, each aligned to NPUB_ALIGN and checksummed (CRC-32).
 * docs/npub.md describes every field. */
#ifndef NPUB_H
#define NPUB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPUB_MAGIC 0x4255504Eu /* "NPUB" */
#define NPUB_VERSION 1u
#define NPUB_ALIGN 16u
#define NPUB_MAX_RANK 6
#define NPUB_NONE 0xffffffffu

enum { NPUB_F_STRIPPED = 1u << 0 }; /* debug and graph sections left out */

typedef struct npub_header {
    uint32_t magic;
    uint16_t version;
    uint16_t header_size;   /* sizeof(npub_header) */
    uint32_t file_size;
    uint32_t flags;
    uint64_t target_hash;   /* tgt hash of the target the binary is built for */
    char target[24];        /* NUL-padded target name */
    uint32_t section_count;
    uint32_t section_table; /* file offset of npub_section[section_count] */
    uint32_t header_crc;    /* CRC-32 of the header with this field zero */
    uint32_t reserved;
} npub_header;

typedef enum npub_section_kind {
    NPUB_SEC_COMMANDS = 1,  /* uint32 NPU instruction words */
    NPUB_SEC_CONSTANTS = 2, /* weights (int4 packed low nibble first), bias, requant tables, LUTs */
    NPUB_SEC_TENSORS = 3,   /* npub_tensor[] */
    NPUB_SEC_STEPS = 4,     /* npub_step[] in execution order */
    NPUB_SEC_IO = 5,        /* npub_io, then uint32 tensor indices: inputs, then outputs */
    NPUB_SEC_STRINGS = 6,   /* NUL-terminated names; offset 0 is "" */
    NPUB_SEC_PARAMS = 7,    /* host-step parameter records (uint32-aligned) */
    NPUB_SEC_MEMORY = 8,    /* npub_memory */
    NPUB_SEC_DEBUG = 9,     /* npub_debug[]: command ranges -> source node names */
    NPUB_SEC_GRAPH = 10,    /* the quantized graph (ir_serialize) that npuref runs */
    NPUB_SEC_MAC = 11,      /* npub_mac: keyed tags (npucc --sign-key), optional */
    NPUB_SEC_TARGET = 12,   /* the effective target description (JSON text), optional; npusim's */
    NPUB_SEC_KIND_MAX = 12
} npub_section_kind;

typedef struct npub_section {
    uint32_t kind;
    uint32_t offset;
    uint32_t size;
    uint32_t crc;
} npub_section;

/* DRAM regions: the NPU addresses memory as region + offset, the runtime
 * sets the base registers, so a binary is relocatable. */
typedef enum npub_region {
    NPUB_REGION_CONST = 0,  /* the CONSTANTS section of the opened blob (flash, or the loader's DRAM copy) */
    NPUB_REGION_ARENA = 1,  /* activations */
    NPUB_REGION_INPUT = 2,  /* model inputs */
    NPUB_REGION_OUTPUT = 3, /* model outputs */
    NPUB_REGION_COUNT = 4
} npub_region;

typedef struct npub_memory {
    uint32_t region_bytes[NPUB_REGION_COUNT];
    uint32_t sram_peak_bytes;
    uint32_t scratch_bytes; /* host-kernel scratch the runtime must provide */
    uint32_t arena_lower_bound; /* the memory plan's max-live bound (reports) */
    uint32_t reserved;
} npub_memory;

/* dtype codes are ir_dtype's (src/ir/ir.h; src/emit/emit.c checks), named
 * here for readers below the compiler */
typedef enum npub_dtype {
    NPUB_DT_F32, NPUB_DT_F16, NPUB_DT_I64, NPUB_DT_I32, NPUB_DT_I16,
    NPUB_DT_I8,  NPUB_DT_U8,  NPUB_DT_I4,  NPUB_DT_U4,  NPUB_DT_BOOL,
} npub_dtype;

typedef struct npub_tensor {
    uint32_t name;          /* string offset */
    uint8_t dtype;
    uint8_t rank;
    uint8_t region;
    uint8_t has_quant;      /* per-tensor scale and zero point valid */
    int32_t dims[NPUB_MAX_RANK];
    uint32_t offset;        /* byte offset in its region */
    uint32_t size;          /* bytes */
    float scale;
    int32_t zero_point;
    uint32_t alias_of;      /* tensor index of the root buffer, or NPUB_NONE */
    uint32_t reserved;
} npub_tensor;

typedef enum npub_step_kind { NPUB_STEP_NPU = 1, NPUB_STEP_HOST = 2 } npub_step_kind;

typedef struct npub_step {
    uint16_t kind;
    uint16_t op;            /* host: the host kernel id (rt/npurt.h) */
    uint32_t a;             /* npu: first command word; host: params byte offset */
    uint32_t b;             /* npu: command word count; host: params byte size */
    uint32_t name;          /* string offset of the (first) source node */
} npub_step;

typedef struct npub_io {
    uint32_t n_inputs;
    uint32_t n_outputs;
} npub_io;

/* IO types, an optional extension after the IO section's indices (files
 * without it still open; their I/O types are their tensors'): npub_io_ext,
 * then one npub_io_type per binding, inputs then outputs. The extension is
 * versioned on its own so that records can grow without a new file version. */
#define NPUB_IO_EXT_MAGIC 0x4550594Fu /* "OYPE" */
#define NPUB_IO_EXT_VERSION 1u

typedef struct npub_io_ext {
    uint32_t magic;
    uint16_t version;
    uint16_t record_size;   /* sizeof(npub_io_type) */
} npub_io_ext;

/* What the application feeds or receives: real = scale * (q - zero_point). */
typedef struct npub_io_type {
    uint8_t dtype;          /* equal to the tensor's */
    uint8_t has_quant;      /* 1 for int8/uint8 I/O with a scale; 0 for float */
    uint16_t reserved;
    float scale;            /* finite, > 0 when has_quant; 0 otherwise */
    int32_t zero_point;     /* in the dtype's range; 0 without quant */
    uint32_t reserved2;
} npub_io_type;

typedef struct npub_debug {
    uint32_t first_word;
    uint32_t word_count;
    uint32_t name;          /* string offset of the source node */
    uint32_t step;
} npub_debug;

/* Keyed tags (docs/npub.md "Integrity and authenticity"): HMAC-SHA256 of
 * a canonical message, "NPUBMAC1", the target hash (u64) and name (24
 * bytes), then for each present section of kind 1..last in kind order: kind
 * (u32), size (u32), its bytes. Offsets, CRCs, flags and the MAC section
 * itself are left out, so a stripped copy keeps a valid device tag. */
#define NPUB_MAC_HMAC_SHA256 1u
#define NPUB_MAC_BYTES 32u

typedef struct npub_mac {
    uint32_t algorithm;     /* NPUB_MAC_HMAC_SHA256 */
    uint32_t reserved;      /* 0 */
    uint8_t device[NPUB_MAC_BYTES]; /* sections 1..8: what the device reads */
    uint8_t full[NPUB_MAC_BYTES];   /* sections 1..10: with the debug and graph sections */
} npub_mac;

/* A validated view of a binary in memory: pointers into the caller's buffer. */
typedef struct npub_view {
    const uint8_t *base;
    size_t size;
    const uint8_t *flash;    /* the blob's image in flash (the NPU's region 4): base, unless the caller
                              * opened a copy and sets it */
    const npub_header *header;
    const npub_section *sections;
    const npub_section *sec[NPUB_SEC_KIND_MAX + 1]; /* by kind, NULL when absent */
    const uint32_t *commands;
    uint32_t n_commands;
    const uint8_t *constants;
    uint32_t constants_size;
    const npub_tensor *tensors;
    uint32_t n_tensors;
    const npub_step *steps;
    uint32_t n_steps;
    const npub_io *io;
    const uint32_t *inputs;  /* tensor indices */
    const uint32_t *outputs;
    const npub_io_type *io_types; /* inputs then outputs; NULL in files without the extension */
    const char *strings;
    uint32_t strings_size;
    const uint8_t *params;
    uint32_t params_size;
    const npub_memory *memory;
    const npub_debug *debug;
    uint32_t n_debug;
    const uint8_t *graph;
    uint32_t graph_size;
    const npub_mac *mac;     /* NULL when the binary is not signed */
} npub_view;

typedef struct npub_error {
    uint32_t offset;        /* file offset of what is wrong */
    char msg[160];
} npub_error;

uint32_t npub_crc32(uint32_t crc, const void *data, size_t size);

/* Checks everything against the buffer (sizes, offsets, alignment, CRCs,
 * tensor regions against npub_memory, step ranges against the command and
 * params sections, string offsets) before filling view. Returns 0 on
 * success, else -1 with err filled ("byte N: ..."). */
int npub_open(const void *data, size_t size, npub_view *view, npub_error *err);

/* The tag of v under key over sections 1..last_kind (NPUB_SEC_MEMORY: the
 * device tag; NPUB_SEC_GRAPH: the full tag). */
void npub_mac_compute(const npub_view *v, const void *key, size_t key_size, uint32_t last_kind,
                      uint8_t out[NPUB_MAC_BYTES]);
/* 0 when v is signed and its device tag (full == 0) or full tag (full != 0)
 * is right under key; else -1 with err ("byte N: ..."). The comparison takes
 * the same time wherever the tags differ. */
int npub_mac_verify(const npub_view *v, const void *key, size_t key_size, int full, npub_error *err);

/* A string from the table; "" for a bad offset. */
const char *npub_string(const npub_view *view, uint32_t offset);

/* Element size in bits of a dtype code (0 when unknown). */
uint32_t npub_dtype_bits(uint32_t dtype);

#ifdef __cplusplus
}
#endif

#endif
