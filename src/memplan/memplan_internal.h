/* Helpers shared by the planner and the checker; not for other modules. */
#ifndef NPU_MEMPLAN_INTERNAL_H
#define NPU_MEMPLAN_INTERNAL_H

#include "memplan/memplan.h"

int64_t mp_align_up(int64_t v, int64_t a);

/* True when the concat's inputs are contiguous byte ranges of its output
 * (every dim before the axis is 1, whole bytes, one dtype); prefix[i] is
 * then input i's byte offset in the output. */
bool mp_concat_layout(const ir_node *n, int64_t *prefix);
/* The same for a split: its outputs as byte ranges of its input. */
bool mp_split_layout(const ir_node *n, int64_t *prefix);

#endif
