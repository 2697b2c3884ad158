/* Partition: places every node on the NPU or the host, with the reason for
 * each host placement, and groups the placed graph into steps (host ops and
 * NPU segments of consecutive NPU nodes) in execution order. */
#ifndef NPU_PARTITION_H
#define NPU_PARTITION_H

#include "ir/ir.h"

/* What the NPU can run, asked per node. The tiler answers it from the target
 * (its ops, dtypes, field widths and constraints); tests pass their own. */
typedef struct part_caps {
    /* true when the NPU can run n; otherwise *reason says why not (static text
     * or text in the graph's arena) */
    bool (*npu_supports)(void *ud, const ir_graph *g, const ir_node *n, const char **reason);
    void *ud;
} part_caps;

/* Sets unit and unit_reason of every live node. Views (Reshape and the
 * like, which move no data) take the unit of their producer so they never
 * split a segment. */
npu_status part_assign(ir_graph *g, const part_caps *caps, npu_err *err);

typedef struct part_step {
    ir_unit unit;
    int first; /* index into g->nodes of the first node */
    int count; /* consecutive live nodes (an NPU segment may hold many) */
} part_step;

typedef struct part_schedule {
    int n_steps;
    part_step *steps; /* in the graph's arena */
} part_schedule;

/* Groups the topologically ordered live nodes into steps. */
npu_status part_schedule_build(ir_graph *g, part_schedule *out, npu_err *err);

/* The --report table: node, op, unit, reason. */
void part_report(const ir_graph *g, FILE *out);

#endif
