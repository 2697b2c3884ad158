/* Unit-aware ordering: list scheduling over the live nodes that prefers a
 * ready node of one unit, so that independent host work does not cut an NPU
 * segment in two (each cut is one more NPU job): either the unit that ran
 * last, or the host whenever a host node is ready (its work then lies
 * before the NPU run it would have cut). Among ready nodes of that unit the
 * earliest in the current order goes first, so an order with nothing to
 * gain stays as it is. */
#include "partition/partition.h"

#include <string.h>

/* true when every live producer of n's inputs has run */
static bool ready(const ir_node *n, const char *done)
{
    for (int j = 0; j < n->n_inputs; j++) {
        const ir_tensor *x = n->inputs[j];
        if (x && x->producer && !x->producer->dead && !done[x->producer->id])
            return false;
    }
    return true;
}

npu_status part_order_by_unit(ir_graph *g, bool host_first, npu_err *err)
{
    int nn = g->n_nodes;
    ir_node **orig = npu_arena_alloc(g->arena, sizeof *orig * (size_t)(nn + 1));
    ir_node **out = npu_arena_alloc(g->arena, sizeof *out * (size_t)(nn + 1));
    char *done = npu_arena_alloc(g->arena, (size_t)nn + 1);
    if (!orig || !out || !done)
        return npu_fail(err, NPU_EINTERNAL, "out of memory ordering the graph");
    memcpy(orig, g->nodes, sizeof *orig * (size_t)nn);
    memset(done, 0, (size_t)nn + 1);
    for (int i = 0; i < nn; i++)
        orig[i]->id = i;
    int k = 0, n_live = 0;
    for (int i = 0; i < nn; i++)
        n_live += !orig[i]->dead;
    int unit = -1;
    while (k < n_live) {
        int pick = -1;
        for (int i = 0; i < nn; i++) {
            const ir_node *n = orig[i];
            if (n->dead || done[i] || !ready(n, done))
                continue;
            if (pick < 0)
                pick = i;
            if ((int)n->unit == (host_first ? (int)IR_UNIT_HOST : unit)) {
                pick = i;
                break;
            }
        }
        if (pick < 0) /* not a DAG: leave the order alone */
            return NPU_OK;
        done[pick] = 1;
        unit = (int)orig[pick]->unit;
        out[k++] = orig[pick];
    }
    for (int i = 0; i < nn; i++)
        if (orig[i]->dead)
            out[k++] = orig[i];
    memcpy(g->nodes, out, sizeof *out * (size_t)nn);
    for (int i = 0; i < nn; i++)
        g->nodes[i]->id = i;
    return NPU_OK;
}
