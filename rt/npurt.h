/* libnpurt: the on-device runtime. Loads a .npub (rt/npub.h), checks every
 * host-step record against the binary (rt/npurt_ops.h), and runs the steps
 * in order: host steps on the portable kernels (kernels/), NPU steps through
 * a launch callback the board support provides.
 *
 * Freestanding C: no malloc, no OS calls, no stdio; the caller owns every
 * buffer. Builds natively (libnpurt.a, the tests) and for the host CPU of
 * the target (rv32imafc with picolibc: build/fw/npurt.elf). docs/runtime.md
 * is the integration guide. */
#ifndef NPURT_H
#define NPURT_H

#include <stddef.h>
#include <stdint.h>

#include "rt/npub.h"
#include "rt/npurt_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npurt_env {
    /* Region bases and sizes, indexed by npub_region: const (NULL: the
     * CONSTANTS section inside the blob), arena, input, output. Each must
     * hold npub_memory.region_bytes of its region. */
    uint8_t *region[NPUB_REGION_COUNT];
    uint32_t region_size[NPUB_REGION_COUNT];
    /* Host-kernel scratch, >= npub_memory.scratch_bytes, 4-byte aligned
     * (16 recommended). Never shared with a region. */
    void *scratch;
    uint32_t scratch_size;
    /* Runs NPU command words [first, first + count) of the COMMANDS section
     * with the given region bases (const already resolved); returns 0, or
     * nonzero for a fault. May be NULL for a binary without NPU steps. */
    int (*npu_launch)(void *ud, const npub_view *v, uint32_t first, uint32_t count, uint8_t *const region[4]);
    void *npu_ud;
    /* Optional: called before (done 0) and after (done 1) each step, for
     * per-step timing. NULL: not called. */
    void (*on_step)(void *ud, uint32_t step, int done);
    void *step_ud;
} npurt_env;

/* npub_open, then for every host step: the record's version, kernel id
 * (equal to the step's op), size and layout, tensor indices in range,
 * dtypes and tensor sizes as the kernel uses them, scratch within
 * npub_memory.scratch_bytes. 0, or -1 with err naming the step and node
 * ("step 3 (node 'conv1', QCONV): byte 1234: ..."; err->offset is the file
 * offset of what is wrong). */
int npurt_open(const void *blob, size_t size, npub_view *v, npub_error *err);

/* Runs every step of a view from npurt_open in order. Inputs must already
 * be in env->region[NPUB_REGION_INPUT]; outputs are in
 * env->region[NPUB_REGION_OUTPUT] after it returns 0. -1 with err naming
 * the step and node when an environment check, a kernel or an NPU launch
 * fails (err->offset is then the step index; NPUB_NONE when the environment
 * is wrong before any step runs). */
int npurt_run(const npub_view *v, const npurt_env *env, npub_error *err);

/* npurt_open and npurt_run with an op table (rt/npurt_ops.h, npurt_op): only
 * the kernels it lists are linked, and a host step of another kernel is
 * refused ("kernel N is not in the firmware's op table"). npurt_open and
 * npurt_run use npurt_ops_all, every kernel. */
int npurt_open_ops(const void *blob, size_t size, const npurt_op *const *ops, npub_view *v, npub_error *err);
int npurt_run_ops(const npub_view *v, const npurt_env *env, const npurt_op *const *ops, npub_error *err);

/* The record of host step i (NULL for an NPU step or a bad index). */
const void *npurt_step_record(const npub_view *v, uint32_t i);

#ifdef __cplusplus
}
#endif

#endif
