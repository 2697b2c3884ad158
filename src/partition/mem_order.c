/* part_choose_order: on branching graphs the execution order decides the
 * peak as much as placement. A few topological orders are built (greedy
 * least-growth list scheduling; depth-first from the outputs, both ways
 * round), the memory planner sizes the arena of each (part_caps.arena), and
 * the graph keeps the smallest; the current order wins ties, so a good
 * exporter order is never disturbed. */
#include <string.h>

#include "partition/part_internal.h"

typedef struct orderer {
    ir_graph *g;
    int nn, nt;
    ir_node **orig;  /* the order on entry */
    int *pending;    /* per node index: inputs whose producer has not run */
    int *uses;       /* per tensor: reads still to come */
    char *done;
    int *stack;      /* DFS: node indices */
    int *next_in;    /* DFS: next input to visit per node */
    int *cons_at;    /* per node index: its consumers' edges start in cons (nn + 1 entries) */
    int *cons;       /* per input edge: the consuming node index, grouped by producer */
    int *ready;      /* greedy: the nodes that may run, n_ready of them */
    int n_ready;
} orderer;

static int node_index(const orderer *o, const ir_node *n)
{
    return n && n->id >= 0 && n->id < o->nn && o->orig[n->id] == n && !n->dead ? n->id : -1;
}

static bool is_activation(const ir_tensor *t)
{
    return t && !t->data && !(t->flags & (IR_TENSOR_INPUT | IR_TENSOR_OUTPUT));
}

/* Bytes a node adds to the live set minus the bytes it lets die. */
static int64_t growth(const orderer *o, const ir_node *n)
{
    int64_t d = 0;
    if (!ir_op_is_view(n->op))
        for (int j = 0; j < n->n_outputs; j++)
            if (is_activation(n->outputs[j]))
                d += (int64_t)ir_tensor_bytes(n->outputs[j]);
    for (int j = 0; j < n->n_inputs; j++) {
        const ir_tensor *x = n->inputs[j];
        if (!is_activation(x))
            continue;
        int reads = 0;
        for (int k = 0; k < n->n_inputs; k++)
            reads += n->inputs[k] == x;
        /* count each distinct input once; a view hands its buffer on */
        bool first_mention = true;
        for (int k = 0; k < j; k++)
            first_mention &= n->inputs[k] != x;
        if (first_mention && o->uses[x->id] == reads && !ir_op_is_view(n->op))
            d -= (int64_t)ir_tensor_bytes(x);
    }
    return d;
}

/* Runs n: its consumers wait for one input fewer (through the consumer
 * lists: a scan of every node per step made long chains quadratic). */
static void run_node(orderer *o, const ir_node *n, ir_node **out, int *k)
{
    out[(*k)++] = (ir_node *)n;
    o->done[n->id] = 1;
    for (int j = 0; j < n->n_inputs; j++)
        if (n->inputs[j])
            o->uses[n->inputs[j]->id]--;
    for (int e = o->cons_at[n->id]; e < o->cons_at[n->id + 1]; e++) {
        int i = o->cons[e];
        if (!o->done[i] && --o->pending[i] == 0)
            o->ready[o->n_ready++] = i;
    }
}

/* The consumer lists, by counting sort of the input edges on their producers. */
static void build_consumers(orderer *o)
{
    memset(o->cons_at, 0, sizeof(int) * (size_t)(o->nn + 1));
    for (int i = 0; i < o->nn; i++)
        for (int j = 0; !o->orig[i]->dead && j < o->orig[i]->n_inputs; j++) {
            const ir_tensor *x = o->orig[i]->inputs[j];
            int p = x ? node_index(o, x->producer) : -1;
            if (p >= 0)
                o->cons_at[p + 1]++;
        }
    for (int i = 0; i < o->nn; i++)
        o->cons_at[i + 1] += o->cons_at[i];
    int *fill = o->next_in; /* scratch until order_dfs */
    memcpy(fill, o->cons_at, sizeof(int) * (size_t)o->nn);
    for (int i = 0; i < o->nn; i++)
        for (int j = 0; !o->orig[i]->dead && j < o->orig[i]->n_inputs; j++) {
            const ir_tensor *x = o->orig[i]->inputs[j];
            int p = x ? node_index(o, x->producer) : -1;
            if (p >= 0)
                o->cons[fill[p]++] = i;
        }
}

static void reset(orderer *o)
{
    memset(o->done, 0, (size_t)o->nn);
    for (int t = 0; t < o->nt; t++)
        o->uses[t] = 0;
    for (int i = 0; i < o->nn; i++) {
        const ir_node *n = o->orig[i];
        o->pending[i] = 0;
        if (n->dead)
            continue;
        for (int j = 0; j < n->n_inputs; j++) {
            if (!n->inputs[j])
                continue;
            o->uses[n->inputs[j]->id]++;
            o->pending[i] += node_index(o, n->inputs[j]->producer) >= 0;
        }
    }
}

/* List scheduling: of the ready nodes, the one that grows the live set least
 * (ties: the earlier in the current order). */
static int order_greedy(orderer *o, ir_node **out)
{
    reset(o);
    build_consumers(o);
    o->n_ready = 0;
    for (int i = 0; i < o->nn; i++)
        if (!o->orig[i]->dead && !o->pending[i])
            o->ready[o->n_ready++] = i;
    int k = 0;
    for (;;) {
        int best = -1, at = -1;
        int64_t best_d = 0;
        for (int r = 0; r < o->n_ready; r++) {
            int i = o->ready[r];
            int64_t d = growth(o, o->orig[i]);
            if (best < 0 || d < best_d || (d == best_d && i < best)) {
                best = i, at = r;
                best_d = d;
            }
        }
        if (best < 0)
            return k;
        o->ready[at] = o->ready[--o->n_ready];
        run_node(o, o->orig[best], out, &k);
    }
}

/* Post-order depth-first from the graph outputs' producers (then any node
 * left), visiting inputs first to last or last to first. */
static int order_dfs(orderer *o, ir_node **out, bool reverse)
{
    reset(o);
    int k = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int r = 0; r < o->nn; r++) {
            const ir_node *start = o->orig[r];
            bool feeds_output = false;
            for (int j = 0; j < start->n_outputs; j++)
                feeds_output |= start->outputs[j] && (start->outputs[j]->flags & IR_TENSOR_OUTPUT);
            if (start->dead || o->done[r] || (pass == 0 && !feeds_output))
                continue;
            int sp = 0;
            o->stack[sp++] = r;
            o->next_in[r] = 0;
            o->done[r] = 2; /* on the stack */
            while (sp) {
                int i = o->stack[sp - 1];
                const ir_node *n = o->orig[i];
                if (o->next_in[i] < n->n_inputs) {
                    int j = o->next_in[i]++;
                    const ir_tensor *x = n->inputs[reverse ? n->n_inputs - 1 - j : j];
                    int p = x ? node_index(o, x->producer) : -1;
                    if (p >= 0 && !o->done[p]) {
                        o->done[p] = 2;
                        o->next_in[p] = 0;
                        o->stack[sp++] = p;
                    }
                    continue;
                }
                sp--;
                out[k++] = (ir_node *)n;
                o->done[i] = 1;
            }
        }
    }
    return k;
}

static void renumber(ir_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++)
        g->nodes[i]->id = i;
}

/* g->nodes = the live order, then the dead nodes as they were */
static void apply_order(ir_graph *g, ir_node *const *order, int n_live, ir_node *const *orig)
{
    int k = 0;
    for (int i = 0; i < n_live; i++)
        g->nodes[k++] = order[i];
    for (int i = 0; i < g->n_nodes; i++)
        if (orig[i]->dead)
            g->nodes[k++] = orig[i];
    renumber(g);
}

/* The arena of g's current order (the planner's answer); also its step
 * count (a reorder must not split NPU segments into more launches). */
static npu_status arena_of(ir_graph *g, const part_caps *caps, int64_t *arena, int *steps, npu_err *err)
{
    part_schedule s;
    npu_status st = part_schedule_build(g, &s, err);
    *arena = 0;
    if (st == NPU_OK)
        st = caps->arena(caps->arena_ud, g, &s, arena, err);
    *steps = s.n_steps;
    return st;
}

npu_status part_choose_order(ir_graph *g, const part_caps *caps, bool *changed, npu_err *err)
{
    *changed = false;
    if (!caps->arena)
        return NPU_OK;
    orderer o = {.g = g, .nn = g->n_nodes, .nt = g->n_tensors};
    size_t nn = (size_t)(o.nn ? o.nn : 1), nt = (size_t)(o.nt ? o.nt : 1);
    npu_arena *tmp = npu_arena_new(g->alloc);
    ir_node **cand = NULL, **best = NULL;
    if (tmp) {
        o.orig = npu_arena_alloc(tmp, sizeof *o.orig * nn);
        cand = npu_arena_alloc(tmp, sizeof *cand * nn);
        best = npu_arena_alloc(tmp, sizeof *best * nn);
        o.pending = npu_arena_alloc(tmp, sizeof(int) * nn);
        o.uses = npu_arena_alloc(tmp, sizeof(int) * nt);
        o.done = npu_arena_alloc(tmp, nn);
        o.stack = npu_arena_alloc(tmp, sizeof(int) * nn);
        o.next_in = npu_arena_alloc(tmp, sizeof(int) * nn);
        o.cons_at = npu_arena_alloc(tmp, sizeof(int) * (nn + 1));
        o.ready = npu_arena_alloc(tmp, sizeof(int) * nn);
    }
    size_t edges = 1;
    for (int i = 0; i < o.nn; i++)
        edges += (size_t)g->nodes[i]->n_inputs;
    o.cons = tmp ? npu_arena_alloc(tmp, sizeof(int) * edges) : NULL;
    if (!tmp || !o.orig || !cand || !best || !o.pending || !o.uses || !o.done || !o.stack || !o.next_in ||
        !o.cons_at || !o.ready || !o.cons) {
        npu_arena_free(tmp);
        return npu_fail(err, NPU_EINTERNAL, "memplan: out of memory choosing an order for %d nodes", o.nn);
    }
    int n_live = 0;
    for (int i = 0; i < o.nn; i++) {
        g->nodes[i]->id = i;
        o.orig[i] = g->nodes[i];
        if (!g->nodes[i]->dead)
            best[n_live++] = g->nodes[i];
    }
    int64_t best_arena;
    int base_steps;
    npu_status st = arena_of(g, caps, &best_arena, &base_steps, err);
    for (int c = 0; c < 3 && st == NPU_OK; c++) {
        int k = c == 0 ? order_greedy(&o, cand) : order_dfs(&o, cand, c == 2);
        if (k != n_live)
            continue; /* a cycle or a dangling input: not an order */
        apply_order(g, cand, n_live, o.orig);
        int64_t arena;
        int steps;
        st = arena_of(g, caps, &arena, &steps, err);
        if (st == NPU_OK && arena < best_arena && steps <= base_steps) {
            best_arena = arena;
            memcpy(best, cand, sizeof *best * (size_t)n_live);
            *changed = true;
        }
        memcpy(g->nodes, o.orig, sizeof *g->nodes * (size_t)o.nn);
        renumber(g);
    }
    if (st == NPU_OK && *changed)
        apply_order(g, best, n_live, o.orig);
    npu_arena_free(tmp);
    return st;
}
