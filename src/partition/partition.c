#include "partition/partition.h"

#include <string.h>

npu_status part_assign(ir_graph *g, const part_caps *caps, npu_err *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        const ir_tensor *src = n->n_inputs ? n->inputs[0] : NULL;
        if (ir_op_is_view(n->op) && src && src->producer && !src->producer->dead) {
            n->unit = src->producer->unit;
            n->unit_reason = n->unit == IR_UNIT_HOST ? "view of a host tensor" : NULL;
            continue;
        }
        const char *reason = "no NPU support information";
        if (caps && caps->npu_supports && caps->npu_supports(caps->ud, g, n, &reason)) {
            n->unit = IR_UNIT_NPU;
            n->unit_reason = NULL;
        } else {
            n->unit = IR_UNIT_HOST;
            n->unit_reason = reason ? reason : "not supported by the NPU";
        }
    }
    return NPU_OK;
}

npu_status part_schedule_build(ir_graph *g, part_schedule *out, npu_err *err)
{
    out->n_steps = 0;
    out->steps = NULL;
    int cap = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        part_step *last = out->n_steps ? &out->steps[out->n_steps - 1] : NULL;
        /* an NPU segment extends over consecutive NPU nodes; host ops are one step each */
        if (last && n->unit == IR_UNIT_NPU && last->unit == IR_UNIT_NPU && last->first + last->count == i) {
            last->count++;
            continue;
        }
        if (out->n_steps == cap) {
            int ncap = cap ? cap * 2 : 16;
            part_step *ns = npu_arena_grow(g->arena, out->steps, sizeof *ns * (size_t)cap, sizeof *ns * (size_t)ncap);
            if (!ns)
                return npu_fail(err, NPU_EINTERNAL, "out of memory building the schedule");
            out->steps = ns;
            cap = ncap;
        }
        out->steps[out->n_steps++] = (part_step){n->unit, i, 1};
    }
    return NPU_OK;
}

void part_report(const ir_graph *g, FILE *out)
{
    int w = 4;
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead && (int)strlen(g->nodes[i]->name) > w)
            w = (int)strlen(g->nodes[i]->name);
    if (w > 48)
        w = 48;
    int npu = 0, host = 0;
    fprintf(out, "%-*s  %-20s %-5s %s\n", w, "node", "op", "unit", "reason");
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        bool on_npu = n->unit == IR_UNIT_NPU;
        npu += on_npu;
        host += !on_npu;
        fprintf(out, "%-*.*s  %-20s %-5s %s\n", w, w, n->name, ir_op_name(n->op), on_npu ? "npu" : "host",
                on_npu ? "" : n->unit_reason ? n->unit_reason : "");
    }
    fprintf(out, "%d nodes on the NPU, %d on the host\n", npu, host);
}
