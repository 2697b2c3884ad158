/* Performance and memory statistics in the --stats-json contract
 * (docs/cli.md): npucc fills them with static estimates, npusim with
 * measurements; one writer serves both. */
#ifndef NPU_STATS_H
#define NPU_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/status.h"

typedef struct npu_stats_layer {
    const char *name;
    const char *op;
    const char *unit; /* "npu" or "host" */
    uint64_t cycles;
    uint64_t macs;
    uint64_t dram_bytes;
    uint64_t bound_cycles; /* max(compute bound, DRAM bound) */
    double energy_nj;      /* dynamic energy plus the static power over its cycles */
    uint64_t flash_bytes;  /* bytes read over the flash bus */
} npu_stats_layer;

/* What used energy (target energy.*): counts of one inference or layer. */
typedef struct npu_energy_counts {
    uint64_t macs_int8, macs_int4;
    uint64_t sram_read, sram_write, dram, flash; /* bytes */
    uint64_t vector;                             /* elements the vector unit produced */
    uint64_t host_insns;
    double seconds; /* for the static power */
} npu_energy_counts;

/* Energy in nanojoules, per component. */
typedef struct npu_energy {
    double mac, sram, dram, flash, vector, host, leak, total;
} npu_energy;

/* Area in mm^2, per component. */
typedef struct npu_area {
    double mac, sram, vector, dma, ctrl, host, total;
} npu_area;

typedef struct npu_stats_buffer {
    const char *tensor;
    uint64_t offset, size;
    int first, last;       /* step of the first write and the last read */
    const char *alias_of;  /* root tensor, or NULL */
    /* added fields (written when level is non-NULL): the planner's node
     * positions of the lifetime, and the memory level ("dram", "sram") */
    int first_pos, last_pos;
    const char *level;
    bool packed; /* int4 codes two per byte (written as "packed": true when set) */
} npu_stats_buffer;

/* A model input or output as the application sees it. */
typedef struct npu_stats_io {
    const char *name;
    const char *kind;  /* "input" or "output" */
    const char *dtype; /* "float32", "int8", "uint8", ... */
    int rank;
    int64_t dims[8];
    bool quantized;    /* real = scale * (q - zero_point) */
    double scale;
    int32_t zero_point;
} npu_stats_io;

typedef struct npu_stats {
    const char *target;
    const char *model;
    const char *target_config; /* JSON object: the effective target (tgt_target.config_json), or NULL */
    uint64_t cycles_total, cycles_npu, cycles_host;
    double clock_mhz;      /* time_ms = cycles_total / clock */
    uint64_t macs;
    double peak_macs_per_cycle; /* mac_utilization = macs / (cycles_npu * peak) */
    uint64_t dram_read_bytes, dram_write_bytes;
    uint64_t arena_bytes, arena_lower_bound_bytes, sram_peak_bytes, weights_bytes;
    uint64_t sram_resident_bytes, sram_resident_lower_bound_bytes; /* the SRAM level of the memory plan */
    int n_plan;
    const npu_stats_buffer *plan;
    int n_layers;
    const npu_stats_layer *layers;
    int n_io;
    const npu_stats_io *io;
    uint64_t flash_read_bytes; /* over the flash bus (constants left in flash) */
    npu_energy energy;         /* per inference */
    npu_area area;             /* of the target */
    uint64_t load_cycles;      /* once, before the first inference: the constants' copy to DRAM */
    /* members after "layers", written by their owner as `"key": value`
     * (several separated by commas), or NULL: npucc's "partition", npusim's "steps" */
    void (*extra)(void *ud, FILE *out);
    void *extra_ud;
} npu_stats;

/* The numpy name of an ir_dtype code ("float32", "int8", ...; "?" unknown). */
const char *npu_stats_dtype_name(unsigned ir_dtype_code);

double npu_stats_time_ms(const npu_stats *s);
double npu_stats_mac_utilization(const npu_stats *s);

/* Writes the JSON object (a complete document). */
void npu_stats_write_json(const npu_stats *s, FILE *out);
/* Writes it to path atomically. */
npu_status npu_stats_save_json(const npu_stats *s, const char *path, npu_err *err);

/* A JSON string literal with escapes (shared with other JSON writers: traces). */
void npu_json_string(FILE *out, const char *s);

#endif
