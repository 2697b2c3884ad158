/* The emitter: the compiled model as a .npub (rt/npub.h, docs/npub.md), or
 * as a C array and header for firmware, or as a readable listing. It takes
 * what the stages before it decided — the schedule, the memory plan, the
 * tiler's command streams and constants — and only lays them out. */
#ifndef NPU_EMIT_H
#define NPU_EMIT_H

#include <stdbool.h>
#include <stdio.h>

#include "common/blob.h"
#include "ir/ir.h"
#include "memplan/memplan.h"
#include "partition/partition.h"
#include "rt/npub.h"
#include "target/target.h"
#include "tiler/tiler.h"

typedef struct emit_model {
    const tgt_target *target;
    const ir_graph *g;           /* quantized, units assigned */
    const part_schedule *sched;
    const mp_plan *plan;
    const tile_program *prog;    /* the NPU command streams (NULL: no NPU step) */
    emit_blob *consts;           /* the tiler's constants; host-step constants are appended */
    bool strip;                  /* leave the debug and graph sections out */
} emit_model;

typedef struct emit_info {
    uint32_t n_steps, n_host_steps, n_npu_steps;
    uint32_t scratch_bytes; /* host-kernel scratch the runtime must provide */
    uint64_t weights_bytes; /* the CONSTANTS section */
} emit_info;

/* A Split or Slice the emitter runs itself: its outputs are byte ranges of
 * its input (read in place where the memory plan allows, else copied). */
bool emit_is_part_copy(const ir_node *n);

/* A complete .npub in a new buffer (free with npu_free(alloc, *out, *size)). */
npu_status emit_npub(const emit_model *m, npu_alloc alloc, void **out, size_t *size, emit_info *info,
                     npu_err *err);

/* Reads path and validates it (npub_open); *buf holds the file (free with
 * npu_free(alloc, *buf, *size)), *v the view over it. Errors name the file
 * and the byte offset. */
npu_status emit_npub_read(const char *path, npu_alloc alloc, void **buf, size_t *size, npub_view *v, npu_err *err);

/* The header's target name, NUL-terminated. */
enum { EMIT_TARGET_NAME_CAP = 25 };
void emit_npub_target_name(const npub_view *v, char name[EMIT_TARGET_NAME_CAP]);

/* Loads the target the binary names (or override); with check_hash, a
 * description whose hash differs from the one the binary was built for is
 * an error naming both. */
npu_status emit_npub_target(const npub_view *v, const char *path, const char *override, bool check_hash,
                            tgt_target **t, npu_err *err);

/* --emit c: OUT.c holds the binary as `const uint8_t NAME_npub[]` (16-byte
 * aligned) and its size; OUT.h the sizes a firmware allocates (arena,
 * inputs, outputs, scratch) as macros. NAME is derived from the header's
 * file name. Both files are written atomically. */
typedef struct emit_c_options {
    const char *section; /* the array's section (__attribute__((section))); NULL: the compiler's (.rodata) */
    unsigned align;      /* the array's alignment, a power of two >= 8; 0: 16 */
} emit_c_options;
npu_status emit_c_files(const void *npub, size_t size, const char *c_path, const char *h_path,
                        const emit_c_options *opt, npu_err *err);

/* --emit listing and npudis: header, memory, tensors, steps, and every
 * command stream disassembled with the source node of each range. */
npu_status emit_listing(const npub_view *v, const tgt_isa *isa, FILE *out, npu_err *err);

/* --emit qdq: the quantized graph g as a QDQ ONNX model (opset 13) that
 * onnxruntime runs (src/emit/qdq.c), written atomically to path. */
npu_status emit_qdq(const ir_graph *g, const char *path, npu_err *err);

#endif
