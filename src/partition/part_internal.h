/* Partition internals shared by its files (not for other modules). */
#ifndef NPU_PART_INTERNAL_H
#define NPU_PART_INTERNAL_H

#include "partition/partition.h"

/* Fills r->info: what each unit can do with every live node, at what cost;
 * fails naming a node neither unit runs. */
npu_status part_probe(ir_graph *g, const part_caps *caps, part_result *r, npu_err *err);
/* Assigns units from r->info: first fit (or host first), or with PART_COST
 * the cost model's choice along the current order and the unit-aware ones. */
npu_status part_decide(ir_graph *g, part_mode mode, part_result *r, npu_err *err);
/* Copies of the units and order of g (in its arena), and their return. */
npu_status part_save_units(ir_graph *g, ir_unit **units, ir_node ***order, npu_err *err);
void part_restore_units(ir_graph *g, const part_result *r, ir_unit *units, ir_node **order);

#endif
