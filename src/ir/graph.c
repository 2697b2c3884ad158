/* Whole-graph operations: topological order, compaction, verification. */
#include "ir/ir.h"

#include <string.h>

npu_status ir_graph_toposort(ir_graph *g, npu_err *err)
{
    int n = g->n_nodes;
    if (n == 0)
        return NPU_OK;
    /* state per node: 0 unvisited, 1 on stack, 2 done; iterative DFS in the
     * current order so an already-sorted graph keeps its order */
    npu_alloc a = g->alloc;
    unsigned char *state = npu_malloc(a, (size_t)n);
    ir_node **order = npu_malloc(a, sizeof *order * (size_t)n);
    int *stack_node = npu_malloc(a, sizeof(int) * (size_t)n);
    int *stack_in = npu_malloc(a, sizeof(int) * (size_t)n);
    npu_status st = NPU_OK;
    if (!state || !order || !stack_node || !stack_in) {
        st = npu_fail(err, NPU_EINTERNAL, "out of memory sorting graph");
        goto done;
    }
    memset(state, 0, (size_t)n);
    for (int i = 0; i < n; i++)
        g->nodes[i]->id = i;
    int n_order = 0;
    for (int root = 0; root < n && st == NPU_OK; root++) {
        if (state[root])
            continue;
        int sp = 0;
        stack_node[sp] = root;
        stack_in[sp] = 0;
        state[root] = 1;
        while (sp >= 0) {
            ir_node *nd = g->nodes[stack_node[sp]];
            if (stack_in[sp] < nd->n_inputs) {
                ir_tensor *t = nd->inputs[stack_in[sp]++];
                if (!t || !t->producer)
                    continue;
                int p = t->producer->id;
                if (p < 0 || p >= n || g->nodes[p] != t->producer)
                    continue; /* producer no longer in the graph */
                if (state[p] == 1) {
                    st = npu_fail(err, NPU_EUSER, "graph has a cycle through node '%s' (%s)",
                                  t->producer->name, ir_op_name(t->producer->op));
                    break;
                }
                if (state[p] == 0) {
                    state[p] = 1;
                    sp++;
                    stack_node[sp] = p;
                    stack_in[sp] = 0;
                }
                continue;
            }
            state[stack_node[sp]] = 2;
            order[n_order++] = nd;
            sp--;
        }
    }
    if (st == NPU_OK) {
        memcpy(g->nodes, order, sizeof *order * (size_t)n);
        for (int i = 0; i < n; i++)
            g->nodes[i]->id = i;
    }
done:
    npu_free(a, state, (size_t)n);
    npu_free(a, order, sizeof *order * (size_t)n);
    npu_free(a, stack_node, sizeof(int) * (size_t)n);
    npu_free(a, stack_in, sizeof(int) * (size_t)n);
    return st;
}

void ir_graph_compact(ir_graph *g)
{
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *nd = g->nodes[i];
        if (nd->dead) {
            for (int j = 0; j < nd->n_outputs; j++)
                if (nd->outputs[j] && nd->outputs[j]->producer == nd)
                    nd->outputs[j]->producer = NULL;
            continue;
        }
        nd->id = k;
        g->nodes[k++] = nd;
    }
    g->n_nodes = k;
    /* mark referenced tensors through the id field, then drop the rest.
     * Dropped tensors stay in the name map so names are never reused. */
    for (int i = 0; i < g->n_tensors; i++)
        g->tensors[i]->id = -1;
    for (int i = 0; i < g->n_inputs; i++)
        g->inputs[i]->id = 0;
    for (int i = 0; i < g->n_outputs; i++)
        g->outputs[i]->id = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *nd = g->nodes[i];
        for (int j = 0; j < nd->n_inputs; j++)
            if (nd->inputs[j])
                nd->inputs[j]->id = 0;
        for (int j = 0; j < nd->n_outputs; j++)
            if (nd->outputs[j])
                nd->outputs[j]->id = 0;
    }
    k = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        ir_tensor *t = g->tensors[i];
        if (t->id < 0)
            continue;
        t->id = k;
        g->tensors[k++] = t;
    }
    g->n_tensors = k;
}

npu_status ir_graph_verify(const ir_graph *g, npu_err *err)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *nd = g->nodes[i];
        if (nd->dead)
            continue;
        for (int j = 0; j < nd->n_inputs; j++) {
            const ir_tensor *t = nd->inputs[j];
            if (!t)
                continue;
            if (t->producer) {
                if (t->producer->dead)
                    return npu_fail(err, NPU_EINTERNAL, "node '%s' (%s) reads '%s' from a removed node",
                                    nd->name, ir_op_name(nd->op), t->name);
                if (t->producer->id >= nd->id)
                    return npu_fail(err, NPU_EINTERNAL, "node '%s' (%s) reads '%s' before it is produced",
                                    nd->name, ir_op_name(nd->op), t->name);
            } else if (!t->data && !(t->flags & IR_TENSOR_INPUT)) {
                return npu_fail(err, NPU_EINTERNAL, "node '%s' (%s) reads '%s', which nothing produces",
                                nd->name, ir_op_name(nd->op), t->name);
            }
            if (!t->shape_known)
                return npu_fail(err, NPU_EINTERNAL, "tensor '%s' has no shape", t->name);
        }
        for (int j = 0; j < nd->n_outputs; j++)
            if (nd->outputs[j] && nd->outputs[j]->producer != nd)
                return npu_fail(err, NPU_EINTERNAL, "node '%s' output '%s' has another producer", nd->name,
                                nd->outputs[j]->name);
    }
    return NPU_OK;
}
