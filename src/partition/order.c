/* Unit-aware ordering: list scheduling over the live nodes that prefers a
 * ready node of one unit, so that independent host work does not cut an NPU
 * segment in two (each cut is one more NPU job): either the unit that ran
 * last, or the host whenever a host node is ready (its work then lies
 * before the NPU run it would have cut). Among ready nodes of that unit the
 * earliest in the current order goes first, so an order with nothing to
 * gain stays as it is. */
#include "partition/partition.h"

#include <string.h>

/* A min-heap of node indices: the ready nodes of one unit, earliest first. */
typedef struct heap {
    int *v, n;
} heap;

static void heap_push(heap *h, int x)
{
    int i = h->n++;
    while (i > 0 && h->v[(i - 1) / 2] > x) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = x;
}

static int heap_pop(heap *h)
{
    int top = h->v[0], x = h->v[--h->n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1] < h->v[c])
            c++;
        if (h->v[c] >= x)
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = x;
    return top;
}

static bool live_producer(const ir_tensor *x, int nn)
{
    return x && x->producer && !x->producer->dead && x->producer->id >= 0 && x->producer->id < nn;
}

/* The consumers of each node as lists (cons[at[i]..at[i+1])), one entry per
 * input edge, and per node the number of its inputs a live node produces. */
static void consumers(ir_node *const *orig, int nn, int *at, int *cons, int *pending)
{
    memset(at, 0, sizeof(int) * (size_t)(nn + 1));
    for (int i = 0; i < nn; i++) {
        pending[i] = 0;
        for (int j = 0; !orig[i]->dead && j < orig[i]->n_inputs; j++)
            if (live_producer(orig[i]->inputs[j], nn)) {
                at[orig[i]->inputs[j]->producer->id + 1]++;
                pending[i]++;
            }
    }
    for (int i = 0; i < nn; i++)
        at[i + 1] += at[i];
    int *fill = cons + at[nn]; /* scratch: nn entries after the edges */
    memcpy(fill, at, sizeof(int) * (size_t)nn);
    for (int i = 0; i < nn; i++)
        for (int j = 0; !orig[i]->dead && j < orig[i]->n_inputs; j++)
            if (live_producer(orig[i]->inputs[j], nn))
                cons[fill[orig[i]->inputs[j]->producer->id]++] = i;
}

/* Ready nodes are kept in a heap per unit: a scan of every node per step
 * made long graphs quadratic. */
npu_status part_order_by_unit(ir_graph *g, bool host_first, npu_err *err)
{
    int nn = g->n_nodes;
    size_t edges = 0;
    for (int i = 0; i < nn; i++)
        edges += (size_t)g->nodes[i]->n_inputs;
    ir_node **orig = npu_arena_alloc(g->arena, sizeof *orig * (size_t)(nn + 1));
    ir_node **out = npu_arena_alloc(g->arena, sizeof *out * (size_t)(nn + 1));
    int *at = npu_arena_alloc(g->arena, sizeof(int) * (size_t)(nn + 1));
    int *cons = npu_arena_alloc(g->arena, sizeof(int) * (edges + (size_t)nn + 1));
    int *pending = npu_arena_alloc(g->arena, sizeof(int) * (size_t)(nn + 1));
    int *hv = npu_arena_alloc(g->arena, sizeof(int) * 2 * (size_t)(nn + 1));
    if (!orig || !out || !at || !cons || !pending || !hv)
        return npu_fail(err, NPU_EINTERNAL, "out of memory ordering the graph");
    memcpy(orig, g->nodes, sizeof *orig * (size_t)nn);
    for (int i = 0; i < nn; i++)
        orig[i]->id = i;
    consumers(orig, nn, at, cons, pending);
    heap ready[2] = {{hv, 0}, {hv + nn + 1, 0}};
    int k = 0, n_live = 0;
    for (int i = 0; i < nn; i++) {
        n_live += !orig[i]->dead;
        if (!orig[i]->dead && !pending[i])
            heap_push(&ready[orig[i]->unit == IR_UNIT_NPU], i);
    }
    int unit = -1;
    while (k < n_live) {
        /* the preferred unit's earliest ready node, else the earliest of all */
        int want = host_first ? (int)IR_UNIT_HOST : unit, u;
        if (want >= 0 && ready[want == IR_UNIT_NPU].n)
            u = want == IR_UNIT_NPU;
        else if (ready[0].n && ready[1].n)
            u = ready[1].v[0] < ready[0].v[0];
        else if (ready[0].n || ready[1].n)
            u = ready[1].n != 0;
        else
            return NPU_OK; /* not a DAG: leave the order alone */
        int pick = heap_pop(&ready[u]);
        unit = (int)orig[pick]->unit;
        out[k++] = orig[pick];
        for (int e = at[pick]; e < at[pick + 1]; e++)
            if (--pending[cons[e]] == 0)
                heap_push(&ready[orig[cons[e]]->unit == IR_UNIT_NPU], cons[e]);
    }
    for (int i = 0; i < nn; i++)
        if (orig[i]->dead)
            out[k++] = orig[i];
    memcpy(g->nodes, out, sizeof *out * (size_t)nn);
    for (int i = 0; i < nn; i++)
        g->nodes[i]->id = i;
    return NPU_OK;
}
