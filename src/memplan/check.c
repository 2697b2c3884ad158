/* mp_check: an independent check of a plan against its graph. It re-derives
 * what must hold from the graph (who writes and reads what, where, views and
 * concat layouts) and trusts nothing the planner computed but the plan. */
#include <string.h>

#include "memplan/memplan_internal.h"

typedef struct checker {
    const ir_graph *g;
    const mp_plan *p;
    int horizon;   /* time steps on the plan's axis */
    int *pos_node; /* position -> node index */
    int *uf;       /* union-find over tensors, joined by the relations that alias */
    int64_t *prefix;
    int *own_first, *own_last; /* per tensor, from the graph: write and last read positions */
    /* check_overwrite's sweep: the tensors u with own_first < q < own_last, found
     * among those born by q (born[born_at[q]..born_at[q+1]) have own_first q - 1) */
    int *born_at, *born, *active;
    int n_active, next_q;
    int *order; /* check_overlaps: root tensors sorted */
} checker;

static const char *tname(const checker *c, int t)
{
    return c->g->tensors[t]->name;
}

static int find(int *uf, int t)
{
    while (uf[t] != t)
        t = uf[t] = uf[uf[t]];
    return t;
}

static int root_of(const checker *c, int t)
{
    return c->p->t[t].alias_of >= 0 ? c->p->t[t].alias_of : t;
}

static int step_at(const checker *c, int time)
{
    return c->p->by_step ? time : c->p->pos_step[time];
}

/* The first and last positions of the cascade holding position q (q alone without cascades). */
static int group_first(const checker *c, int q)
{
    return c->p->pos_group ? c->p->pos_group[q] : q;
}

static int group_last(const checker *c, int q)
{
    int g = group_first(c, q);
    while (q + 1 < c->p->n_positions && group_first(c, q + 1) == g)
        q++;
    return q;
}

static mp_region expected_region(const ir_graph *g, const ir_tensor *x)
{
    if (x->data)
        return MP_REGION_CONST;
    unsigned f = x->flags;
    for (int i = 0; i < g->n_inputs; i++)
        f |= g->inputs[i] == x ? IR_TENSOR_INPUT : 0;
    for (int i = 0; i < g->n_outputs; i++)
        f |= g->outputs[i] == x ? IR_TENSOR_OUTPUT : 0;
    return f & IR_TENSOR_INPUT ? MP_REGION_INPUT : f & IR_TENSOR_OUTPUT ? MP_REGION_OUTPUT : MP_REGION_ARENA;
}

static npu_status check_positions(checker *c, npu_err *err)
{
    const ir_graph *g = c->g;
    const mp_plan *p = c->p;
    for (int k = 0; k < p->n_positions; k++)
        c->pos_node[k] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        int q = p->node_pos[i];
        if (g->nodes[i]->dead)
            continue;
        if (q < 0 || q >= p->n_positions || c->pos_node[q] >= 0)
            return npu_fail(err, NPU_EINTERNAL, "memplan check: node '%s' has position %d", g->nodes[i]->name, q);
        c->pos_node[q] = i;
    }
    for (int k = 0; k < p->n_positions; k++) {
        int s = p->pos_step[k];
        if (c->pos_node[k] < 0 || s < 0 || s >= p->n_steps || (k && s < p->pos_step[k - 1]))
            return npu_fail(err, NPU_EINTERNAL, "memplan check: position %d has no node or step %d is out of order",
                            k, s);
    }
    return NPU_OK;
}

/* A cascade's intermediate: no DRAM home, written and read only inside one cascade, by a node that is not its last. */
static npu_status check_in_sram(const checker *c, const ir_tensor *x, const mp_tensor *m, npu_err *err)
{
    const ir_graph *g = c->g;
    const ir_node *pr = x->producer;
    int q = pr && pr->id >= 0 && pr->id < g->n_nodes && g->nodes[pr->id] == pr ? c->p->node_pos[pr->id] : -1;
    if (m->offset >= 0 || m->first_pos >= 0 || m->alias_of >= 0 || expected_region(g, x) != MP_REGION_ARENA ||
        q < 0 || q >= group_last(c, q))
        return npu_fail(err, NPU_EINTERNAL, "memplan check: '%s' is kept in SRAM but is not a cascade's intermediate",
                        x->name);
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        for (int j = 0; !n->dead && j < n->n_inputs; j++)
            if (n->inputs[j] == x && group_first(c, c->p->node_pos[i]) != group_first(c, q))
                return npu_fail(err, NPU_EINTERNAL, "memplan check: '%s' is kept in SRAM but node '%s' outside "
                                "its cascade reads it", x->name, n->name);
    }
    return NPU_OK;
}

static npu_status check_tensor(const checker *c, int t, npu_err *err)
{
    const ir_tensor *x = c->g->tensors[t];
    const mp_tensor *m = &c->p->t[t];
    if (m->in_sram && !x->data)
        return check_in_sram(c, x, m, err);
    if (x->data)
        return m->region == MP_REGION_CONST && m->alias_of < 0
                   ? NPU_OK
                   : npu_fail(err, NPU_EINTERNAL, "memplan check: constant '%s' is not in the CONST region", x->name);
    if (m->first_pos < 0 || c->horizon == 0) /* no steps at all (every output a constant): no lifetimes */
        return NPU_OK;
    if (m->first_pos > m->last_pos || m->last_pos >= c->horizon || m->first != step_at(c, m->first_pos) ||
        m->last != step_at(c, m->last_pos))
        return npu_fail(err, NPU_EINTERNAL, "memplan check: '%s' has lifetime %d..%d (steps %d..%d)", x->name,
                        m->first_pos, m->last_pos, m->first, m->last);
    size_t need = m->packed ? (ir_tensor_bytes(x) + 1) / 2 : ir_tensor_bytes(x);
    if (m->packed && (!(x->flags & IR_TENSOR_INT4_CODES) || m->level != MP_LEVEL_DRAM))
        return npu_fail(err, NPU_EINTERNAL, "memplan check: '%s' is packed but holds no int4 codes in DRAM", x->name);
    if (m->size < (int64_t)need || m->offset < 0)
        return npu_fail(err, NPU_EINTERNAL, "memplan check: '%s' has %lld bytes at offset %lld, needs %zu", x->name,
                        (long long)m->size, (long long)m->offset, need);
    if (m->alias_of < 0) {
        if (m->region != expected_region(c->g, x))
            return npu_fail(err, NPU_EINTERNAL, "memplan check: '%s' is in region %d, not %d", x->name, m->region,
                            expected_region(c->g, x));
        int64_t bytes = m->level == MP_LEVEL_SRAM ? c->p->sram_bytes : c->p->region_bytes[m->region];
        if (m->offset + m->size > bytes)
            return npu_fail(err, NPU_EINTERNAL, "memplan check: '%s' ends at %lld, past its %s's %lld bytes",
                            x->name, (long long)(m->offset + m->size), m->level ? "SRAM level" : "region",
                            (long long)bytes);
        if (m->level == MP_LEVEL_SRAM && (m->region != MP_REGION_ARENA || m->first != m->last))
            return npu_fail(err, NPU_EINTERNAL, "memplan check: SRAM-resident '%s' is not an arena buffer of one step",
                            x->name);
        return NPU_OK;
    }
    int r = m->alias_of;
    if (r >= c->p->n_tensors || r == t || c->p->t[r].alias_of >= 0 || c->p->t[r].first_pos < 0 ||
        c->g->tensors[r]->data)
        return npu_fail(err, NPU_EINTERNAL, "memplan check: '%s' aliases tensor %d, which is not a root buffer",
                        x->name, r);
    const mp_tensor *rm = &c->p->t[r];
    mp_region want = expected_region(c->g, x);
    if (want != MP_REGION_ARENA && want != rm->region)
        return npu_fail(err, NPU_EINTERNAL, "memplan check: '%s' belongs in region %d but lies in '%s' (region %d)",
                        x->name, want, tname(c, r), rm->region);
    if (m->region != rm->region || m->level != rm->level || m->packed != rm->packed || m->offset < rm->offset ||
        m->offset + m->size > rm->offset + rm->size)
        return npu_fail(err, NPU_EINTERNAL, "memplan check: '%s' [%lld, %lld) is not inside its root '%s' [%lld, %lld)",
                        x->name, (long long)m->offset, (long long)(m->offset + m->size), tname(c, r),
                        (long long)rm->offset, (long long)(rm->offset + rm->size));
    if (m->first_pos < rm->first_pos || m->last_pos > rm->last_pos)
        return npu_fail(err, NPU_EINTERNAL, "memplan check: '%s' lives %d..%d, outside its root '%s' (%d..%d)", x->name,
                        m->first_pos, m->last_pos, tname(c, r), rm->first_pos, rm->last_pos);
    return NPU_OK;
}

static npu_status check_covered(const checker *c, const ir_node *n, int q, const ir_tensor *x, bool is_output,
                                npu_err *err)
{
    const mp_tensor *m = &c->p->t[x->id];
    if (m->in_sram)
        return NPU_OK; /* check_in_sram */
    /* a cascade's nodes run at once: its tensors are live across all of it */
    int q0 = group_first(c, q), q1 = group_last(c, q);
    int t0 = c->p->by_step ? c->p->pos_step[q0] : q0, t1 = c->p->by_step ? c->p->pos_step[q1] : q1;
    if (m->first_pos < 0 || t0 < m->first_pos || t1 > m->last_pos)
        return npu_fail(err, NPU_EINTERNAL, "memplan check: node '%s' %s '%s' at %d..%d, outside its lifetime %d..%d",
                        n->name, is_output ? "writes" : "reads", x->name, t0, t1, m->first_pos, m->last_pos);
    const ir_node *pr = x->producer;
    bool indexed = pr && pr->id >= 0 && pr->id < c->g->n_nodes && c->g->nodes[pr->id] == pr;
    if (!is_output && indexed && (pr->dead || c->p->node_pos[pr->id] >= q))
        return npu_fail(err, NPU_EINTERNAL, "memplan check: node '%s' reads '%s' before node '%s' writes it", n->name,
                        x->name, x->producer->name);
    return NPU_OK;
}

/* The relations that let two tensors share a buffer, each only at its own
 * offset: views (same offset), concat inputs and split outputs (at their
 * prefix), elementwise outputs over an input (same offset, and nothing else
 * on those bytes read afterwards). Each joins the two tensors; an alias no
 * chain of them joins to its root is an error. */
/* From the graph alone: where each tensor is written and last read. */
static void own_lifetimes(checker *c)
{
    const ir_graph *g = c->g;
    for (int t = 0; t < c->p->n_tensors; t++) {
        mp_region r = expected_region(g, g->tensors[t]);
        c->own_first[t] = r == MP_REGION_INPUT ? 0 : -1;
        c->own_last[t] = c->own_first[t];
    }
    for (int q = 0; q < c->p->n_positions; q++) {
        const ir_node *n = g->nodes[c->pos_node[q]];
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j]) {
                c->own_first[n->outputs[j]->id] = group_first(c, q);
                c->own_last[n->outputs[j]->id] = group_last(c, q);
            }
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j])
                c->own_last[n->inputs[j]->id] = group_last(c, q);
    }
    for (int t = 0; t < c->p->n_tensors; t++)
        if (c->own_first[t] >= 0 && expected_region(g, g->tensors[t]) == MP_REGION_OUTPUT)
            c->own_last[t] = c->p->n_positions - 1;
}

/* y written over x at position q: every other tensor of the buffer on x's
 * bytes that was written before q must be read for the last time by q. */
static bool overwrite_candidate(const checker *c, int u)
{
    return !c->g->tensors[u]->data && c->p->t[u].first_pos >= 0 && c->own_first[u] >= 0 &&
           c->own_first[u] + 1 < c->own_last[u];
}

/* The born_at/born buckets of the tensors check_overwrite may have to look at. */
static void overwrite_buckets(checker *c)
{
    int np = c->p->n_positions;
    memset(c->born_at, 0, sizeof(int) * (size_t)(np + 2));
    for (int u = 0; u < c->p->n_tensors; u++)
        if (overwrite_candidate(c, u) && c->own_first[u] + 1 <= np)
            c->born_at[c->own_first[u] + 2]++;
    for (int q = 0; q <= np; q++)
        c->born_at[q + 1] += c->born_at[q];
    for (int u = 0; u < c->p->n_tensors; u++)
        if (overwrite_candidate(c, u) && c->own_first[u] + 1 <= np)
            c->born[c->born_at[c->own_first[u] + 1]++] = u;
    for (int q = np; q > 0; q--) /* the fill moved each start one bucket on */
        c->born_at[q] = c->born_at[q - 1];
    c->born_at[0] = 0;
    c->n_active = 0;
    c->next_q = 0;
}

/* y written over x at position q: every other tensor of the buffer on x's
 * bytes that was written before q must be read for the last time by q.
 * Only the tensors live across q can be: a sweep over q keeps them, so a
 * long in-place chain is checked in linear time, not quadratic. */
static npu_status check_overwrite(checker *c, const ir_tensor *x, const ir_tensor *y, int q, npu_err *err)
{
    const mp_tensor *t = c->p->t;
    for (; c->next_q <= q; c->next_q++)
        for (int k = c->born_at[c->next_q]; k < c->born_at[c->next_q + 1]; k++)
            c->active[c->n_active++] = c->born[k];
    int root = root_of(c, x->id), kept = 0;
    int64_t lo = t[x->id].offset, hi = lo + t[x->id].size;
    npu_status st = NPU_OK;
    for (int k = 0; k < c->n_active; k++) {
        int u = c->active[k];
        if (c->own_last[u] <= q)
            continue; /* dead from here on: dropped */
        c->active[kept++] = u;
        if (st != NPU_OK || u == y->id || root_of(c, u) != root || t[u].offset >= hi || t[u].offset + t[u].size <= lo)
            continue;
        st = npu_fail(err, NPU_EINTERNAL,
                      "memplan check: '%s' is written over '%s' at %d while '%s' on the same bytes is read until %d",
                      y->name, x->name, q, tname(c, u), c->own_last[u]);
    }
    c->n_active = kept;
    return st;
}

static npu_status check_relations(checker *c, const ir_node *n, int q, npu_err *err)
{
    const mp_tensor *t = c->p->t;
    const ir_tensor *o = n->n_outputs ? n->outputs[0] : NULL;
    if (!o)
        return NPU_OK;
    if (ir_op_is_view(n->op) && n->n_inputs && n->inputs[0] && !n->inputs[0]->data) {
        const ir_tensor *x = n->inputs[0];
        if (root_of(c, x->id) == root_of(c, o->id) && t[x->id].offset == t[o->id].offset)
            c->uf[find(c->uf, x->id)] = find(c->uf, o->id);
    }
    for (int j = 0; mp_is_elementwise(n->op) && j < n->n_inputs; j++) {
        const ir_tensor *x = n->inputs[j];
        if (!mp_inplace_operand(n, x) || root_of(c, x->id) != root_of(c, o->id) || t[x->id].offset != t[o->id].offset)
            continue;
        npu_status st = check_overwrite(c, x, o, q, err);
        if (st != NPU_OK)
            return st;
        c->uf[find(c->uf, x->id)] = find(c->uf, o->id);
    }
    if ((n->op == IR_OP_SPLIT || n->op == IR_OP_SLICE) && n->n_inputs && n->inputs[0] && !n->inputs[0]->data) {
        const ir_tensor *x = n->inputs[0];
        bool layout = mp_split_layout(n, c->prefix);
        for (int j = 0; j < n->n_outputs; j++) {
            const ir_tensor *y = n->outputs[j];
            if (!y || root_of(c, y->id) != root_of(c, x->id))
                continue;
            /* elsewhere in the same buffer (a concat slice): the split copies it there */
            if (layout && t[y->id].offset == t[x->id].offset + c->prefix[j])
                c->uf[find(c->uf, y->id)] = find(c->uf, x->id);
        }
    }
    if (n->op == IR_OP_CONCAT) {
        bool layout = mp_concat_layout(n, c->prefix);
        for (int j = 0; j < n->n_inputs; j++) {
            const ir_tensor *x = n->inputs[j];
            if (!x || x->data || root_of(c, x->id) != root_of(c, o->id))
                continue;
            /* elsewhere in the same buffer: the concat copies it; some other relation must place it */
            if (layout && t[x->id].offset == t[o->id].offset + c->prefix[j])
                c->uf[find(c->uf, x->id)] = find(c->uf, o->id);
        }
    }
    return NPU_OK;
}

static npu_status overlap_fail(const checker *c, int a, int b, npu_err *err)
{
    const mp_tensor *t = c->p->t;
    if (a > b) {
        int x = a;
        a = b, b = x;
    }
    return npu_fail(err, NPU_EINTERNAL,
                    "memplan check: '%s' [%lld, %lld) live %d..%d overlaps '%s' [%lld, %lld) live %d..%d",
                    tname(c, a), (long long)t[a].offset, (long long)(t[a].offset + t[a].size), t[a].first_pos,
                    t[a].last_pos, tname(c, b), (long long)t[b].offset, (long long)(t[b].offset + t[b].size),
                    t[b].first_pos, t[b].last_pos);
}

static bool overlap_root(const checker *c, int a)
{
    const mp_tensor *t = c->p->t;
    return !c->g->tensors[a]->data && t[a].alias_of < 0 && t[a].first_pos >= 0 && t[a].size != 0;
}

/* Bytes shared at the same level (DRAM and the SRAM level are apart). */
static bool bytes_overlap(const mp_tensor *a, const mp_tensor *b)
{
    return a->level == b->level && a->offset < b->offset + b->size && b->offset < a->offset + a->size;
}

/* Root buffers of one region never share bytes while both are live (input
 * and output buffers are live for the whole inference). Swept by time in the
 * arena (each buffer against those still live), every pair elsewhere (few):
 * a check of every pair of arena buffers was quadratic in the tensors. */
static npu_status check_overlaps(checker *c, npu_err *err)
{
    const mp_tensor *t = c->p->t;
    int n = c->p->n_tensors, h = c->horizon > 0 ? c->horizon : 1;
    /* the arena's roots by first_pos (counting sort), then the sweep */
    int *at = c->born_at, *ord = c->order, *live = c->active, n_live = 0; /* born_at has >= h + 1 entries */
    memset(at, 0, sizeof(int) * (size_t)(h + 1));
    for (int a = 0; a < n; a++)
        if (overlap_root(c, a) && t[a].region == MP_REGION_ARENA && t[a].first_pos < h)
            at[t[a].first_pos + 1]++;
    for (int k = 0; k < h; k++)
        at[k + 1] += at[k];
    for (int a = 0; a < n; a++)
        if (overlap_root(c, a) && t[a].region == MP_REGION_ARENA && t[a].first_pos < h)
            ord[at[t[a].first_pos]++] = a;
    int m = at[h - 1 < 0 ? 0 : h - 1];
    for (int k = 0; k < m; k++) {
        int a = ord[k], kept = 0;
        for (int j = 0; j < n_live; j++) {
            int b = live[j];
            if (t[b].last_pos < t[a].first_pos)
                continue;
            live[kept++] = b;
            if (bytes_overlap(&t[a], &t[b]))
                return overlap_fail(c, a, b, err);
        }
        n_live = kept;
        live[n_live++] = a;
    }
    /* the input and output regions hold only the graph's inputs and outputs: every pair */
    int cnt = 0;
    for (int a = 0; a < n; a++)
        if (overlap_root(c, a) && t[a].region != MP_REGION_ARENA)
            ord[cnt++] = a;
    for (int i = 0; i < cnt; i++)
        for (int j = i + 1; j < cnt; j++)
            if (t[ord[i]].region == t[ord[j]].region && bytes_overlap(&t[ord[i]], &t[ord[j]]))
                return overlap_fail(c, ord[i], ord[j], err);
    return NPU_OK;
}

static npu_status run_checks(checker *c, npu_err *err)
{
    const ir_graph *g = c->g;
    const mp_plan *p = c->p;
    npu_status st = check_positions(c, err);
    if (st == NPU_OK) {
        own_lifetimes(c);
        overwrite_buckets(c);
    }
    for (int t = 0; t < p->n_tensors && st == NPU_OK; t++)
        st = check_tensor(c, t, err);
    for (int q = 0; q < p->n_positions && st == NPU_OK; q++) {
        const ir_node *n = g->nodes[c->pos_node[q]];
        for (int j = 0; j < n->n_inputs && st == NPU_OK; j++)
            if (n->inputs[j] && !n->inputs[j]->data)
                st = check_covered(c, n, q, n->inputs[j], false, err);
        for (int j = 0; j < n->n_outputs && st == NPU_OK; j++)
            if (n->outputs[j])
                st = check_covered(c, n, q, n->outputs[j], true, err);
        if (st == NPU_OK)
            st = check_relations(c, n, q, err);
    }
    for (int t = 0; t < p->n_tensors && st == NPU_OK; t++) {
        const mp_tensor *m = &p->t[t];
        if (m->first_pos < 0 || g->tensors[t]->data)
            continue;
        if (expected_region(g, g->tensors[t]) == MP_REGION_OUTPUT && m->last_pos != c->horizon - 1)
            st = npu_fail(err, NPU_EINTERNAL, "memplan check: graph output '%s' dies at %d, before the end (%d)",
                          tname(c, t), m->last_pos, c->horizon - 1);
        else if (m->alias_of >= 0 && find(c->uf, t) != find(c->uf, m->alias_of))
            st = npu_fail(err, NPU_EINTERNAL, "memplan check: '%s' lies in '%s' but no view, concat, split or in-place op relates them",
                          tname(c, t), tname(c, m->alias_of));
    }
    if (st == NPU_OK)
        st = check_overlaps(c, err);
    return st;
}

npu_status mp_check(const ir_graph *g, const mp_plan *p, npu_err *err)
{
    if (p->n_tensors != g->n_tensors || !p->t || !p->node_pos || !p->pos_step)
        return npu_fail(err, NPU_EINTERNAL, "memplan check: the plan has %d tensors, the graph %d", p->n_tensors,
                        g->n_tensors);
    int max_in = 1; /* inputs of a concat, outputs of a split */
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i]->n_inputs > max_in)
            max_in = g->nodes[i]->n_inputs;
        if (g->nodes[i]->n_outputs > max_in)
            max_in = g->nodes[i]->n_outputs;
    }
    checker c = {.g = g, .p = p, .horizon = p->by_step ? p->n_steps : p->n_positions};
    size_t np = (size_t)(p->n_positions > 0 ? p->n_positions : 1), nt = (size_t)(p->n_tensors ? p->n_tensors : 1);
    c.pos_node = npu_malloc(g->alloc, sizeof(int) * np);
    c.uf = npu_malloc(g->alloc, sizeof(int) * nt);
    c.prefix = npu_malloc(g->alloc, sizeof(int64_t) * (size_t)max_in);
    c.own_first = npu_malloc(g->alloc, sizeof(int) * nt);
    c.own_last = npu_malloc(g->alloc, sizeof(int) * nt);
    size_t nb = np > (size_t)p->n_steps ? np : (size_t)p->n_steps; /* positions or steps */
    c.born_at = npu_malloc(g->alloc, sizeof(int) * (nb + 2));
    c.born = npu_malloc(g->alloc, sizeof(int) * nt);
    c.active = npu_malloc(g->alloc, sizeof(int) * nt);
    c.order = npu_malloc(g->alloc, sizeof(int) * nt);
    npu_status st;
    if (!c.pos_node || !c.uf || !c.prefix || !c.own_first || !c.own_last || !c.born_at || !c.born || !c.active ||
        !c.order) {
        st = npu_fail(err, NPU_EINTERNAL, "memplan check: out of memory");
    } else {
        for (int t = 0; t < p->n_tensors; t++)
            c.uf[t] = t;
        st = run_checks(&c, err);
    }
    npu_free(g->alloc, c.order, sizeof(int) * nt);
    npu_free(g->alloc, c.active, sizeof(int) * nt);
    npu_free(g->alloc, c.born, sizeof(int) * nt);
    npu_free(g->alloc, c.born_at, sizeof(int) * (nb + 2));
    npu_free(g->alloc, c.own_last, sizeof(int) * nt);
    npu_free(g->alloc, c.own_first, sizeof(int) * nt);
    npu_free(g->alloc, c.prefix, sizeof(int64_t) * (size_t)max_in);
    npu_free(g->alloc, c.uf, sizeof(int) * nt);
    npu_free(g->alloc, c.pos_node, sizeof(int) * np);
    return st;
}
