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

/* Elementwise ops whose output may be written over an input. */
bool mp_is_elementwise(ir_op op);
/* True when n's output may overwrite x (an input of elementwise n with the
 * output's element count and width: not a broadcast operand). */
bool mp_inplace_operand(const ir_node *n, const ir_tensor *x);

#endif
