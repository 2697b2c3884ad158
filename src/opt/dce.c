/* dce: a node none of whose outputs reaches a graph output is removed, then
 * every tensor nothing refers to (ir_graph_compact). One backward sweep over
 * the topological order marks what is live. */
#include "opt/opt_internal.h"

#include <string.h>

npu_status opt_dce(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    int nt = g->n_tensors;
    bool *live = npu_malloc(g->alloc, sizeof *live * (size_t)(nt ? nt : 1));
    if (!live)
        return npu_fail(err, NPU_EINTERNAL, "dce: out of memory");
    memset(live, 0, sizeof *live * (size_t)(nt ? nt : 1));
/* tensor ids are current between passes; anything else is never live here */
#define ID_OK(t) ((t) && (t)->id >= 0 && (t)->id < nt && g->tensors[(t)->id] == (t))
    for (int i = 0; i < g->n_outputs; i++)
        if (ID_OK(g->outputs[i]))
            live[g->outputs[i]->id] = true;
    bool any = false;
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        bool used = false;
        for (int j = 0; j < n->n_outputs && !used; j++)
            used = n->outputs[j] && (!ID_OK(n->outputs[j]) || live[n->outputs[j]->id]);
        if (!used) {
            n->dead = true;
            any = true;
            continue;
        }
        for (int j = 0; j < n->n_inputs; j++)
            if (ID_OK(n->inputs[j]))
                live[n->inputs[j]->id] = true;
    }
#undef ID_OK
    npu_free(g->alloc, live, sizeof *live * (size_t)(nt ? nt : 1));
    int before = g->n_tensors;
    ir_graph_compact(g);
    *changed = any || g->n_tensors != before;
    return NPU_OK;
}
