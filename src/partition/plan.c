/* The partition stage: the assignment, the order (unit-aware, then the
 * smallest arena among orders that keep the NPU segments), the
 * steps. The baseline is what first fit gets through the same stage; the
 * cost model's outcome replaces it only when it estimates fewer cycles. */
#include "partition/part_internal.h"

/* The order that lowers the activation peak (branchy graphs) among those
 * with no more steps; then the estimate of the order kept. */
static npu_status memory_order(ir_graph *g, const part_caps *caps, part_result *r, npu_err *err)
{
    bool reordered = false;
    npu_status st = part_choose_order(g, caps, &reordered, err);
    if (st == NPU_OK)
        r->est_cycles = part_cost_of(g, r, &r->switches);
    return st;
}

npu_status part_plan(ir_graph *g, const part_caps *caps, part_result *res, part_schedule *sched, npu_err *err)
{
    ir_unit *units;
    ir_node **order, **orig;
    npu_status st = part_probe(g, caps, res, err);
    if (st == NPU_OK && res->mode == PART_COST && res->costed) {
        /* first fit through the whole stage, as the baseline */
        ir_unit *u0;
        if ((st = part_save_units(g, &u0, &orig, err)) == NPU_OK &&
            (st = part_decide(g, PART_FIRST_FIT, res, err)) == NPU_OK &&
            (st = memory_order(g, caps, res, err)) == NPU_OK)
            st = part_save_units(g, &units, &order, err);
        int64_t ff = res->est_cycles;
        int ff_sw = res->switches;
        if (st == NPU_OK) {
            part_restore_units(g, res, u0, orig);
            if ((st = part_decide(g, PART_COST, res, err)) == NPU_OK)
                st = memory_order(g, caps, res, err);
        }
        if (st == NPU_OK && res->est_cycles > ff) {
            part_restore_units(g, res, units, order);
            res->est_cycles = part_cost_of(g, res, &res->switches);
        }
        res->est_cycles_first_fit = ff;
        res->switches_first_fit = ff_sw;
    } else if (st == NPU_OK) {
        st = part_decide(g, res->mode, res, err);
        if (st == NPU_OK)
            st = memory_order(g, caps, res, err);
        if (res->mode == PART_FIRST_FIT) /* the baseline is itself */
            res->est_cycles_first_fit = res->est_cycles, res->switches_first_fit = res->switches;
    }
    if (st == NPU_OK)
        st = part_schedule_build(g, sched, err);
    return st;
}
