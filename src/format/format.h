/* The .npub file as a file (the layout of rt/npub.h, docs/npub.md): reading
 * and validating one, loading the target it names, assembling one from
 * section payloads, and the op types of its graph section. Below emit and
 * sim, so npusim reads and re-assembles binaries without the compiler;
 * includes only rt, target and common (and the generated op-name table). */
#ifndef NPU_FORMAT_H
#define NPU_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/alloc.h"
#include "common/file.h"
#include "common/status.h"
#include "rt/npub.h"
#include "target/target.h"

typedef struct fmt_section {
    npub_section_kind kind;
    const void *data;
    size_t size;
} fmt_section;

/* A complete file in a new buffer (free with npu_free(alloc, buf, size)). */
npu_status fmt_npub_assemble(const char *target, uint64_t target_hash, uint32_t flags, const fmt_section *secs,
                             int n_secs, npu_alloc alloc, void **out, size_t *out_size, npu_err *err);

/* Reads path and validates it (npub_open); *buf holds the file (free with
 * npu_free_file(alloc, *buf, *size)), *v the view over it. Errors name the file
 * and the byte offset. */
npu_status fmt_npub_read(const char *path, npu_alloc alloc, void **buf, size_t *size, npub_view *v, npu_err *err);
/* The same through npu_open_read's options (FIFOs and devices only when
 * allowed, the read cap; ro may be NULL). */
npu_status fmt_npub_read_ex(const char *path, const npu_read_opts *ro, npu_alloc alloc, void **buf, size_t *size,
                            npub_view *v, npu_err *err);

/* The header's target name, NUL-terminated. */
enum { FMT_TARGET_NAME_CAP = 25 };
void fmt_npub_target_name(const npub_view *v, char name[FMT_TARGET_NAME_CAP]);

/* Loads the target the binary names (or override); with check_hash, a
 * description whose hash differs from the one the binary was built for is
 * an error naming both. */
npu_status fmt_npub_target(const npub_view *v, const char *path, const char *override, bool check_hash,
                           tgt_target **t, npu_err *err);
/* The same with load options (--set overrides, search path). Without an
 * override, a binary that embeds its target description (NPUB_SEC_TARGET)
 * uses it, else the target its header names is searched for. */
npu_status fmt_npub_target_ex(const npub_view *v, const char *path, const char *override, const tgt_opts *to,
                              bool check_hash, tgt_target **t, npu_err *err);

/* The graph section (ir_serialize's layout, src/ir/serial.c) read for its
 * nodes only: fn gets each node's name (name_len bytes, not NUL-terminated)
 * and op type (fmt_op_name), in the stored order. The record layout is
 * checked for bounds, not for meaning (ir_deserialize does that); errors
 * name the byte offset. */
typedef void (*fmt_node_fn)(void *ud, const char *name, size_t name_len, const char *op);
npu_status fmt_graph_nodes(const void *graph, size_t size, fmt_node_fn fn, void *ud, npu_err *err);

/* The IR's name of an op code of the graph section (src/ir/ops.def); NULL
 * for a code the IR does not have. */
const char *fmt_op_name(uint32_t op);

#endif
