/* What the .npub harnesses share (tests/fuzz/fuzz_npub.c). */
#ifndef NPU_FUZZ_NPUB_H
#define NPU_FUZZ_NPUB_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* Rewrites the header's file size, every section CRC that lies inside the
 * buffer, then the header CRC, so that a mutant reaches the checks behind
 * them: a CRC authenticates nothing (issue 19). */
void fuzz_npub_fix_crcs(uint8_t *buf, size_t size);

/* Deserializes a graph section and, if run and every tensor is small, runs
 * the reference executor on zero inputs, as npuref MODEL.npub does. */
void fuzz_run_graph(const uint8_t *data, size_t size, npu_alloc al, int run);

#endif
