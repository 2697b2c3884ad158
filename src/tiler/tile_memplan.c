/* The memory-plan stage, the tiler's entry to it: the planner must know
 * which nodes the tiler cascades, because a cascade keeps its intermediates
 * in SRAM and the planner then gives them no DRAM home. */
#include "tiler/tiler.h"

npu_status tile_memplan(const tgt_target *t, ir_graph *g, const part_schedule *sched, npu_alloc alloc, mp_plan *plan,
                        npu_err *err)
{
    int *group = npu_arena_alloc(g->arena, sizeof(int) * (size_t)(g->n_nodes + 1));
    npu_status st = group ? tile_cascades(t, g, sched, alloc, group, err)
                          : npu_fail(err, NPU_EINTERNAL, "out of memory");
    mp_options mo = {.align = 16, .group = group};
    if (st == NPU_OK)
        st = mp_plan_graph(g, sched, &mo, plan, err);
    if (st == NPU_OK)
        st = mp_check(g, plan, err);
    return st;
}
