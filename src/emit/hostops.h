/* Host steps, compiler side: an IR node that runs on the host CPU becomes a
 * parameter record for libnpurt (the layouts of rt/npurt_ops.h). Every
 * parameter comes from src/numerics (the readers the reference runs on) or
 * the reference adapters' own rules, so the runtime computes exactly what `npuref` computes. */
#ifndef NPU_EMIT_HOSTOPS_H
#define NPU_EMIT_HOSTOPS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/blob.h"
#include "ir/ir.h"
#include "rt/npub.h"

/* The npub tensor index of t; for a constant it registers it (the emitter
 * copies its data into CONSTANTS). Returns NPUB_NONE on failure. */
typedef struct emit_tensor_map {
    uint32_t (*index)(void *ud, const ir_tensor *t);
    void *ud;
} emit_tensor_map;

/* Whether the runtime has a host kernel for n as it stands (dtypes,
 * quantization, attributes); when not, *why (if non-NULL) says why in a
 * static string. */
bool emit_host_supports(const ir_graph *g, const ir_node *n, const char **why);

/* Appends n's record to params (4-byte aligned) and returns its kernel id
 * (the step's op), its byte range and the host scratch it needs (the
 * binary's npub_memory.scratch_bytes must be at least the maximum over its
 * steps). Errors name the node. */
npu_status emit_host_step(const ir_graph *g, const ir_node *n, const emit_tensor_map *map, emit_blob *params,
                          uint16_t *kernel, uint32_t *params_offset, uint32_t *params_size,
                          uint32_t *scratch_bytes, npu_err *err);

#endif
