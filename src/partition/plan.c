/* The partition stage: the assignment, the order (unit-aware, then the
 * memory planner's choice among orders that keep the NPU segments), the
 * steps. */
#include "memplan/memplan.h"
#include "partition/partition.h"

npu_status part_plan(ir_graph *g, const part_caps *caps, part_result *res, part_schedule *sched, npu_err *err)
{
    npu_status st = part_assign_ex(g, caps, res, err);
    /* the order that lowers the activation peak (branchy graphs) among those with no more steps */
    mp_options mo = {.align = 16};
    bool reordered = false;
    if (st == NPU_OK)
        st = mp_choose_order(g, &mo, &reordered, err);
    if (st == NPU_OK && reordered)
        res->est_cycles = part_cost_of(g, res, &res->switches);
    if (st == NPU_OK)
        st = part_schedule_build(g, sched, err);
    return st;
}
