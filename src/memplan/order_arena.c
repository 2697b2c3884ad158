/* The planner's answer to the partition's order search (part_caps.arena):
 * how large the arena of one candidate order is. */
#include "memplan/memplan.h"

npu_status mp_order_arena(void *opts, ir_graph *g, const part_schedule *sched, int64_t *arena, npu_err *err)
{
    static const mp_options defaults = {.align = 1};
    mp_plan p;
    mp_options o = opts ? *(const mp_options *)opts : defaults;
    o.effort = o.effort > 0 && o.effort < 200000 ? o.effort : 200000; /* a small search: only compared */
    npu_status st = mp_plan_graph(g, sched, &o, &p, err);
    *arena = st == NPU_OK ? p.region_bytes[MP_REGION_ARENA] : 0;
    return st;
}
