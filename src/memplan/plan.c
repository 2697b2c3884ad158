/* mp_plan_graph: lifetimes over the schedule, aliasing (views, concat
 * elision), then placement of the arena roots and dense input/output
 * regions. The alias structure is a forest: parent[t] is the tensor t lies
 * in, rel[t] its byte offset there; a root owns a buffer whose lifetime is
 * the union of its group's. */
#include <string.h>

#include "memplan/memplan_internal.h"

typedef struct planner {
    ir_graph *g;
    int64_t align;
    bool by_step;
    int nt, np;
    int *node_pos, *pos_step; /* the plan's, in the graph's arena */
    int *pos_node;            /* position -> index into g->nodes */
    const int *group;         /* mp_options.group, or NULL */
    const char *packed;       /* mp_options.packed, or NULL */
    int *pos_group, *pos_gend; /* per position: its cascade's first and last positions */
    char *in_sram;            /* per tensor: a cascade's intermediate, not placed */
    char *level;              /* per root: MP_LEVEL_* (the two-level plan) */
    int *cand, *chosen;       /* choose_sram's scratch */
    int *first, *last;        /* own lifetime per tensor, positions; -1 unused */
    unsigned *pin;            /* IR_TENSOR_INPUT / OUTPUT, from flags and the graph's lists */
    int *parent;
    int64_t *rel;
    int *root;                /* parent[] resolved (resolve_roots), or a union-find over it */
    int64_t *root_rel;        /* t's offset in root[t] */
    int *chain;               /* resolve_roots' scratch */
    int *glast_pos;           /* write_in_place: per root, group_last_pos */
    int *gfirst, *glast;      /* group lifetimes per root */
    int *concat_uses;
    char *inplace;            /* tensor written over its parent by an elementwise op */
    int64_t *diff;            /* np + 1 */
    int64_t *prefix;          /* per concat input */
    int64_t *root_off;        /* placed offset per root */
    int64_t *best_off;        /* root_off of the plan with elision, while the other is tried */
    mp_item *items;
    int *item_tensor;
} planner;

static int tensor_root(const planner *pl, int t, int64_t *off)
{
    int64_t o = 0;
    while (pl->parent[t] >= 0) {
        o += pl->rel[t];
        t = pl->parent[t];
    }
    if (off)
        *off = o;
    return t;
}

static bool is_const(const ir_tensor *t)
{
    return t->data != NULL;
}

/* root[t] and root_rel[t] for every tensor in one pass over parent[]: each
 * chain is walked once and its tensors remembered, so a long in-place chain
 * costs O(n), not O(n^2) as tensor_root per tensor would. */
static void resolve_roots(planner *pl)
{
    int *stack = pl->chain;
    for (int t = 0; t < pl->nt; t++)
        pl->root[t] = -1;
    for (int t = 0; t < pl->nt; t++) {
        int n = 0, u = t;
        while (pl->root[u] < 0 && pl->parent[u] >= 0 && n < pl->nt) {
            stack[n++] = u;
            u = pl->parent[u];
        }
        if (pl->root[u] < 0) {
            pl->root[u] = u;
            pl->root_rel[u] = 0;
        }
        int r = pl->root[u];
        int64_t o = pl->root_rel[u];
        while (n > 0) {
            u = stack[--n];
            o += pl->rel[u];
            pl->root[u] = r;
            pl->root_rel[u] = o;
        }
    }
}

/* tensor_root through root[] as a union-find with path compression: a
 * tensor linked under another (write_in_place) is found in near O(1). */
static int find_root(planner *pl, int t, int64_t *off)
{
    int r = t;
    int64_t o = 0;
    while (pl->root[r] != r) {
        o += pl->root_rel[r];
        r = pl->root[r];
    }
    for (int u = t; pl->root[u] != r && u != r;) { /* compress, keeping offsets relative to r */
        int next = pl->root[u];
        int64_t rest = o - pl->root_rel[u];
        pl->root[u] = r;
        pl->root_rel[u] = o;
        o = rest;
        u = next;
    }
    if (off)
        *off = pl->root[t] == t ? 0 : pl->root_rel[t];
    return r;
}

static mp_region own_region(const planner *pl, const ir_tensor *t)
{
    if (is_const(t))
        return MP_REGION_CONST;
    if (pl->pin[t->id] & IR_TENSOR_INPUT)
        return MP_REGION_INPUT;
    if (pl->pin[t->id] & IR_TENSOR_OUTPUT)
        return MP_REGION_OUTPUT;
    return MP_REGION_ARENA;
}

/* Is t (a root) stored two int4 codes per byte? In DRAM only: the SRAM
 * level holds one code per byte, as the compute instructions read them. */
static bool root_packed(const planner *pl, int t)
{
    return pl->packed && pl->packed[t] && pl->level[t] == MP_LEVEL_DRAM;
}

static int64_t root_size(const planner *pl, int t)
{
    int64_t b = (int64_t)ir_tensor_bytes(pl->g->tensors[t]);
    return mp_align_up(root_packed(pl, t) ? (b + 1) / 2 : b, pl->align);
}

/* Its size in the SRAM level (one code per byte). */
static int64_t sram_size(const planner *pl, int t)
{
    return mp_align_up((int64_t)ir_tensor_bytes(pl->g->tensors[t]), pl->align);
}

static npu_status build_positions(planner *pl, const part_schedule *s, npu_err *err)
{
    ir_graph *g = pl->g;
    for (int i = 0; i < g->n_nodes; i++)
        pl->node_pos[i] = -1;
    int np = 0;
    for (int k = 0; k < s->n_steps; k++) {
        const part_step *st = &s->steps[k];
        if (st->first < 0 || st->count < 0 || st->first + st->count > g->n_nodes)
            return npu_fail(err, NPU_EINTERNAL, "memplan: step %d covers nodes %d..%d of %d", k, st->first,
                            st->first + st->count - 1, g->n_nodes);
        for (int i = st->first; i < st->first + st->count; i++) {
            if (g->nodes[i]->dead || pl->node_pos[i] >= 0)
                return npu_fail(err, NPU_EINTERNAL, "memplan: node '%s' is %s in the schedule", g->nodes[i]->name,
                                g->nodes[i]->dead ? "dead but" : "twice");
            pl->pos_step[np] = k;
            pl->pos_node[np] = i;
            pl->node_pos[i] = np++;
        }
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead && pl->node_pos[i] < 0)
            return npu_fail(err, NPU_EINTERNAL, "memplan: node '%s' (%s) is not in the schedule", g->nodes[i]->name,
                            ir_op_name(g->nodes[i]->op));
    pl->np = np;
    /* a cascade's nodes are consecutive in their step; each position gets its group's range */
    for (int q = 0; q < np; q++) {
        int i = pl->pos_node[q], g0 = pl->group ? pl->group[i] : i;
        bool joins = q > 0 && g0 != i && g0 >= 0 && g0 < g->n_nodes && pl->node_pos[g0] >= 0 &&
                     pl->pos_step[pl->node_pos[g0]] == pl->pos_step[q] && pl->node_pos[g0] < q;
        pl->pos_group[q] = joins ? pl->pos_group[q - 1] : q;
        if (joins && pl->node_pos[g0] != pl->pos_group[q])
            return npu_fail(err, NPU_EINTERNAL, "memplan: node '%s' is not next to its cascade", g->nodes[i]->name);
    }
    for (int q = np - 1; q >= 0; q--)
        pl->pos_gend[q] = q + 1 < np && pl->pos_group[q + 1] == pl->pos_group[q] ? pl->pos_gend[q + 1] : q;
    return NPU_OK;
}

static int time_of(const planner *pl, int pos)
{
    return pl->by_step ? pl->pos_step[pos] : pos;
}

/* Own lifetimes: written at the producer's position (graph inputs at 0),
 * read until the last consumer (graph outputs until the end). */
static npu_status own_lifetimes(planner *pl, npu_err *err)
{
    ir_graph *g = pl->g;
    for (int t = 0; t < pl->nt; t++) {
        if (g->tensors[t]->id != t)
            return npu_fail(err, NPU_EINTERNAL, "memplan: tensor '%s' has id %d at index %d (compact the graph)",
                            g->tensors[t]->name, g->tensors[t]->id, t);
        pl->first[t] = pl->last[t] = -1;
        pl->pin[t] = g->tensors[t]->flags & (IR_TENSOR_INPUT | IR_TENSOR_OUTPUT);
    }
    for (int i = 0; i < g->n_inputs; i++)
        pl->pin[g->inputs[i]->id] |= IR_TENSOR_INPUT;
    for (int i = 0; i < g->n_outputs; i++)
        pl->pin[g->outputs[i]->id] |= IR_TENSOR_OUTPUT;
    for (int t = 0; t < pl->nt; t++)
        if ((pl->pin[t] & IR_TENSOR_INPUT) && !is_const(g->tensors[t]))
            pl->first[t] = pl->last[t] = 0;
    for (int pos = 0; pos < pl->np; pos++) {
        const ir_node *n = g->nodes[pl->pos_node[pos]];
        int gs = pl->pos_group[pos], ge = pl->pos_gend[pos]; /* a cascade's tensors are live across it */
        for (int j = 0; j < n->n_inputs; j++) {
            const ir_tensor *x = n->inputs[j];
            if (!x)
                continue;
            if (!is_const(x) && pl->first[x->id] < 0)
                return npu_fail(err, NPU_EINTERNAL, "memplan: node '%s' (%s) reads '%s' before it is written",
                                n->name, ir_op_name(n->op), x->name);
            if (pl->first[x->id] < 0)
                pl->first[x->id] = gs;
            pl->last[x->id] = ge;
        }
        for (int j = 0; j < n->n_outputs; j++) {
            const ir_tensor *y = n->outputs[j];
            if (!y)
                continue;
            if (pl->first[y->id] >= 0)
                return npu_fail(err, NPU_EINTERNAL, "memplan: '%s' is written twice (again by node '%s')", y->name,
                                n->name);
            pl->first[y->id] = gs;
            pl->last[y->id] = ge;
            pl->in_sram[y->id] = pos < ge && !pl->pin[y->id];
        }
    }
    for (int t = 0; t < pl->nt; t++) {
        /* a cascade's tensor that a node after it reads (the depthwise output its squeeze's pool
         * takes inside the cascade, the excitation's Mul after it) keeps its DRAM home */
        if (pl->in_sram[t] && pl->last[t] > pl->pos_gend[pl->first[t]])
            pl->in_sram[t] = false;
        if (pl->in_sram[t])
            pl->first[t] = pl->last[t] = -1; /* never in DRAM: not placed */
    }
    for (int t = 0; t < pl->nt; t++)
        if ((pl->pin[t] & IR_TENSOR_OUTPUT) && pl->first[t] >= 0)
            pl->last[t] = pl->np - 1;
    return NPU_OK;
}

static bool is_pinned_root(const planner *pl, int t)
{
    return is_const(pl->g->tensors[t]) || pl->pin[t] != 0;
}

/* Group lifetimes on the planner's time axis, per root. */
static void group_lifetimes(planner *pl)
{
    resolve_roots(pl);
    for (int t = 0; t < pl->nt; t++)
        pl->gfirst[t] = pl->glast[t] = -1;
    for (int t = 0; t < pl->nt; t++) {
        if (pl->first[t] < 0 || is_const(pl->g->tensors[t]))
            continue;
        int r = pl->root[t];
        int f = time_of(pl, pl->first[t]), l = time_of(pl, pl->last[t]);
        if (pl->gfirst[r] < 0 || f < pl->gfirst[r])
            pl->gfirst[r] = f;
        if (l > pl->glast[r])
            pl->glast[r] = l;
    }
}

/* The last position any tensor of root r's group is read, and whether the
 * group holds a tensor written over another (its bytes change over time). */
static int group_last_pos(const planner *pl, int r, bool *overwrites)
{
    int last = -1;
    *overwrites = false;
    for (int t = 0; t < pl->nt; t++) {
        if (pl->first[t] < 0 || is_const(pl->g->tensors[t]) || tensor_root(pl, t, NULL) != r)
            continue;
        if (pl->last[t] > last)
            last = pl->last[t];
        *overwrites |= pl->inplace[t] != 0;
    }
    return last;
}

/* The max-live bound of the arena under the current aliasing (roots only). */
static int64_t arena_bound(planner *pl)
{
    group_lifetimes(pl);
    memset(pl->diff, 0, sizeof *pl->diff * (size_t)(pl->np + 1));
    for (int t = 0; t < pl->nt; t++) {
        if (pl->gfirst[t] < 0 || own_region(pl, pl->g->tensors[t]) != MP_REGION_ARENA)
            continue;
        pl->diff[pl->gfirst[t]] += root_size(pl, t);
        pl->diff[pl->glast[t] + 1] -= root_size(pl, t);
    }
    int64_t live = 0, best = 0;
    for (int k = 0; k < pl->np; k++) {
        live += pl->diff[k];
        if (live > best)
            best = live;
    }
    return best;
}

/* A view's output lies on its input. When the output is a graph output the
 * group moves into the output region instead (the output becomes the root);
 * when both ends are pinned (an input viewed as an output) the view copies. */
static void alias_views(planner *pl)
{
    ir_graph *g = pl->g;
    for (int pos = 0; pos < pl->np; pos++) {
        const ir_node *n = g->nodes[pl->pos_node[pos]];
        if (!ir_op_is_view(n->op) || n->n_inputs < 1 || n->n_outputs != 1 || !n->inputs[0] || !n->outputs[0])
            continue;
        const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
        if (is_const(x) || ir_tensor_bytes(x) != ir_tensor_bytes(y))
            continue;
        int64_t ox;
        int rx = tensor_root(pl, x->id, &ox);
        if (!pl->pin[y->id]) {
            pl->parent[y->id] = x->id;
            pl->rel[y->id] = 0;
        } else if (!is_pinned_root(pl, rx) && ox == 0 && ir_tensor_bytes(g->tensors[rx]) == ir_tensor_bytes(y)) {
            pl->parent[rx] = y->id;
            pl->rel[rx] = 0;
        }
    }
}

static bool concat_input_ok(planner *pl, const ir_tensor *x, int ro, int pos)
{
    if (is_const(x) || !x->producer || pl->pin[x->id] || pl->concat_uses[x->id] != 1)
        return false;
    int64_t ox;
    int r = tensor_root(pl, x->id, &ox);
    if (r == ro || ox != 0 || is_pinned_root(pl, r) || ir_tensor_bytes(pl->g->tensors[r]) != ir_tensor_bytes(x))
        return false;
    /* A buffer still read after the concat stays apart when it is a view's
     * (the brief's rule) or when either buffer has bytes overwritten by an
     * elementwise op (x's bytes must not change while they are read). */
    bool overwrites, dest_overwrites;
    int last = group_last_pos(pl, r, &overwrites);
    group_last_pos(pl, ro, &dest_overwrites);
    return last <= pos || (r == x->id && !overwrites && !dest_overwrites);
}

/* An elementwise op writes its output over an input whose buffer is read
 * for the last time by it (same element count and width, a whole root, not
 * pinned). The bound can only fall: the two buffers met only here. Planned
 * per node position, so not in by_step mode (a later node of the segment
 * could still read the input). */
static int write_in_place(planner *pl)
{
    ir_graph *g = pl->g;
    int count = 0;
    /* group_last_pos of every root, kept up to date as groups merge: per node
     * a rescan of the tensors made long chains cubic (issue 19) */
    resolve_roots(pl);
    for (int t = 0; t < pl->nt; t++)
        pl->glast_pos[t] = -1;
    for (int t = 0; t < pl->nt; t++) {
        if (pl->first[t] < 0 || is_const(g->tensors[t]))
            continue;
        int r = pl->root[t];
        if (pl->last[t] > pl->glast_pos[r])
            pl->glast_pos[r] = pl->last[t];
    }
    for (int pos = 0; pos < pl->np; pos++) {
        const ir_node *n = g->nodes[pl->pos_node[pos]];
        if (!mp_is_elementwise(n->op) || n->n_outputs != 1 || !n->outputs[0] || pl->pos_group[pos] != pl->pos_gend[pos])
            continue; /* in a cascade, the output is written band by band while the inputs are still read */
        const ir_tensor *y = n->outputs[0];
        if (pl->pin[y->id] || pl->parent[y->id] >= 0)
            continue;
        for (int j = 0; j < n->n_inputs; j++) {
            const ir_tensor *x = n->inputs[j];
            if (!mp_inplace_operand(n, x) || pl->pin[x->id] ||
                (pl->packed && pl->packed[x->id] != pl->packed[y->id]))
                continue; /* one buffer, one layout */
            int64_t ox;
            int r = find_root(pl, x->id, &ox);
            if (ox != 0 || is_pinned_root(pl, r) || ir_tensor_bytes(g->tensors[r]) != ir_tensor_bytes(x) ||
                pl->glast_pos[r] != pos)
                continue;
            pl->parent[y->id] = x->id;
            pl->rel[y->id] = 0;
            pl->inplace[y->id] = 1;
            /* y was a root (no parent): its group joins r's at offset 0 */
            pl->root[y->id] = r;
            pl->root_rel[y->id] = 0;
            if (pl->glast_pos[y->id] > pl->glast_pos[r])
                pl->glast_pos[r] = pl->glast_pos[y->id];
            count++;
            break;
        }
    }
    return count;
}

/* Keeps the roots changed[0..nc), just given parents, where the arena bound
 * stays at most before: all together, else each alone. Returns how many. */
static int keep_if_no_growth(planner *pl, const int *changed, int nc, int parent, int64_t before)
{
    if (!nc || arena_bound(pl) <= before)
        return nc;
    for (int k = 0; k < nc; k++)
        pl->parent[changed[k]] = -1;
    int kept = 0;
    for (int k = 0; k < nc; k++) {
        pl->parent[changed[k]] = parent;
        if (arena_bound(pl) > before)
            pl->parent[changed[k]] = -1;
        else
            kept++;
    }
    return kept;
}

/* Writes the inputs of each concat into their slices of its output where
 * that does not raise the arena bound; returns how many inputs moved. Two
 * passes, because a later concat's decision can make an earlier one pay. */
static int elide_concats(planner *pl)
{
    ir_graph *g = pl->g;
    for (int t = 0; t < pl->nt; t++)
        pl->concat_uses[t] = 0;
    for (int pos = 0; pos < pl->np; pos++) {
        const ir_node *n = g->nodes[pl->pos_node[pos]];
        if (n->op == IR_OP_CONCAT)
            for (int j = 0; j < n->n_inputs; j++)
                if (n->inputs[j])
                    pl->concat_uses[n->inputs[j]->id]++;
    }
    int moved = 0;
    int *changed = pl->item_tensor; /* scratch: roots given a parent for one concat */
    for (int pass = 0; pass < 2; pass++) {
        for (int pos = 0; pos < pl->np; pos++) {
            const ir_node *n = g->nodes[pl->pos_node[pos]];
            if (n->op != IR_OP_CONCAT || !mp_concat_layout(n, pl->prefix))
                continue;
            int64_t before = arena_bound(pl); /* also fills the group lifetimes */
            int ro = tensor_root(pl, n->outputs[0]->id, NULL);
            int nc = 0;
            for (int j = 0; j < n->n_inputs; j++) {
                const ir_tensor *x = n->inputs[j];
                if (!concat_input_ok(pl, x, ro, pos))
                    continue;
                int r = tensor_root(pl, x->id, NULL);
                pl->parent[r] = n->outputs[0]->id;
                pl->rel[r] = pl->prefix[j];
                changed[nc++] = r;
            }
            moved += keep_if_no_growth(pl, changed, nc, n->outputs[0]->id, before);
        }
    }
    return moved;
}

/* Split outputs read in place: each output lies in its input at its prefix
 * (the split does nothing at run time) where the input's buffer living on
 * while the outputs are read does not raise the bound. An output already
 * written into a concat keeps that place: the split then copies it. */
static void split_in_place(planner *pl)
{
    ir_graph *g = pl->g;
    int *changed = pl->item_tensor;
    for (int pos = 0; pos < pl->np; pos++) {
        const ir_node *n = g->nodes[pl->pos_node[pos]];
        if ((n->op != IR_OP_SPLIT && n->op != IR_OP_SLICE) || !mp_split_layout(n, pl->prefix) ||
            is_const(n->inputs[0]))
            continue;
        const ir_tensor *x = n->inputs[0];
        bool overwrites;
        group_last_pos(pl, tensor_root(pl, x->id, NULL), &overwrites);
        if (overwrites)
            continue; /* the parts must keep the bytes they were split from */
        int64_t before = arena_bound(pl);
        int nc = 0;
        for (int j = 0; j < n->n_outputs; j++) {
            const ir_tensor *y = n->outputs[j];
            if (pl->pin[y->id] || pl->parent[y->id] >= 0 || tensor_root(pl, x->id, NULL) == y->id)
                continue;
            group_last_pos(pl, y->id, &overwrites);
            if (overwrites)
                continue; /* a part written over would change its input's bytes */
            pl->parent[y->id] = x->id;
            pl->rel[y->id] = pl->prefix[j];
            changed[nc++] = y->id;
        }
        keep_if_no_growth(pl, changed, nc, x->id, before);
    }
}

/* Places the arena roots of the current aliasing at one level; *total is its size. */
static npu_status place_level(planner *pl, const mp_options *o, int level, int64_t *total, int64_t *lower,
                              npu_err *err)
{
    group_lifetimes(pl);
    int n = 0;
    for (int t = 0; t < pl->nt; t++) {
        if (pl->gfirst[t] < 0 || own_region(pl, pl->g->tensors[t]) != MP_REGION_ARENA || pl->level[t] != level)
            continue;
        pl->items[n] = (mp_item){root_size(pl, t), pl->gfirst[t], pl->glast[t], 0};
        pl->item_tensor[n++] = t;
    }
    mp_place_options po = {.align = pl->align, .effort = o->effort};
    npu_status st = mp_place_ex(pl->items, n, &po, pl->g->alloc, total, err);
    if (st != NPU_OK)
        return st;
    *lower = mp_lower_bound(pl->items, n);
    /* The SRAM level is placed downwards from the top of the SRAM: the
     * bytes it leaves free while a node runs then lie in one range, below
     * what is live then, for that node's tiles (tile_build's cap by layer). */
    for (int k = 0; k < n; k++)
        pl->root_off[pl->item_tensor[k]] =
            level == MP_LEVEL_SRAM ? *total - pl->items[k].offset - pl->items[k].size : pl->items[k].offset;
    return NPU_OK;
}

static npu_status place_arena(planner *pl, const mp_options *o, int64_t *total, int64_t *lower, npu_err *err)
{
    return place_level(pl, o, MP_LEVEL_DRAM, total, lower, err);
}

static int step_of(const planner *pl, int time)
{
    return time < 0 ? -1 : pl->by_step ? time : pl->pos_step[time];
}

/* DMA bytes a root's SRAM residency avoids: each tensor of its group is
 * written once and read by each reading node (a tile may reload more; this
 * is the floor). */
static void residency_gain(planner *pl, int64_t *gain)
{
    const ir_graph *g = pl->g;
    for (int t = 0; t < pl->nt; t++)
        gain[t] = 0;
    for (int pos = 0; pos < pl->np; pos++) {
        const ir_node *n = g->nodes[pl->pos_node[pos]];
        for (int j = 0; j < n->n_inputs + n->n_outputs; j++) {
            const ir_tensor *x = j < n->n_inputs ? n->inputs[j] : n->outputs[j - n->n_inputs];
            if (x && !is_const(x) && pl->first[x->id] >= 0)
                gain[pl->root[x->id]] += (int64_t)ir_tensor_bytes(x);
        }
    }
}

/* May root t live in SRAM? An arena buffer whose whole group lives inside
 * one NPU step (no host node touches it, and the SRAM holds nothing across
 * a host step), not a cascade's intermediate, not refused by the tiler. */
static bool sram_candidate(const planner *pl, const mp_options *o, const part_schedule *sched, int t)
{
    if (pl->gfirst[t] < 0 || pl->root[t] != t || own_region(pl, pl->g->tensors[t]) != MP_REGION_ARENA ||
        pl->in_sram[t] || (o->no_sram && o->no_sram[t]))
        return false;
    int s0 = step_of(pl, pl->gfirst[t]), s1 = step_of(pl, pl->glast[t]);
    return s0 == s1 && s0 >= 0 && s0 < sched->n_steps && sched->steps[s0].unit == IR_UNIT_NPU;
}

/* The two-level plan: candidates by avoided traffic per byte (ties: the
 * earlier root), taken greedily while the max-live bytes stay within
 * o->sram_bytes, then placed by mp_place; while the placement exceeds the
 * capacity the least dense is given back to DRAM. */
static npu_status choose_sram(planner *pl, const mp_options *o, const part_schedule *sched, int64_t *sram_total, int64_t *sram_lower, npu_err *err)
{
    *sram_total = *sram_lower = 0;
    memset(pl->level, MP_LEVEL_DRAM, (size_t)pl->nt);
    if (o->sram_bytes <= 0)
        return NPU_OK;
    group_lifetimes(pl);
    int64_t *gain = pl->best_off, *live = pl->diff;
    int *cand = pl->cand, nc = 0, *chosen = pl->chosen, nch = 0;
    residency_gain(pl, gain);
    for (int t = 0; t < pl->nt; t++)
        if (sram_candidate(pl, o, sched, t) && gain[t] > 0)
            cand[nc++] = t;
    for (int i = 1; i < nc; i++) { /* insertion sort by density, descending; stable */
        int t = cand[i], j = i;
        for (; j > 0; j--) {
            int u = cand[j - 1];
            if (gain[u] * sram_size(pl, t) >= gain[t] * sram_size(pl, u))
                break;
            cand[j] = u;
        }
        cand[j] = t;
    }
    memset(live, 0, sizeof *live * (size_t)(pl->np + 1));
    for (int i = 0; i < nc; i++) {
        int t = cand[i];
        int64_t sz = sram_size(pl, t), peak = 0;
        for (int k = pl->gfirst[t]; k <= pl->glast[t]; k++)
            peak = live[k] > peak ? live[k] : peak;
        if (peak + sz > o->sram_bytes)
            continue;
        for (int k = pl->gfirst[t]; k <= pl->glast[t]; k++)
            live[k] += sz;
        pl->level[t] = MP_LEVEL_SRAM;
        chosen[nch++] = t;
    }
    npu_status st = NPU_OK;
    while (nch > 0 && st == NPU_OK) {
        st = place_level(pl, o, MP_LEVEL_SRAM, sram_total, sram_lower, err);
        if (st != NPU_OK || *sram_total <= o->sram_bytes)
            break;
        pl->level[chosen[--nch]] = MP_LEVEL_DRAM;
        *sram_total = *sram_lower = 0;
    }
    return st;
}

/* Graph inputs and outputs each get their own region, packed in the order of
 * the graph's lists (then by tensor id for tensors only flagged). */
static int64_t place_dense(planner *pl, mp_region region)
{
    ir_graph *g = pl->g;
    int64_t cursor = 0;
    for (int pass = 0; pass < 3; pass++) {
        int n = pass == 0 ? g->n_inputs : pass == 1 ? g->n_outputs : pl->nt;
        for (int i = 0; i < n; i++) {
            const ir_tensor *x = pass == 0 ? g->inputs[i] : pass == 1 ? g->outputs[i] : g->tensors[i];
            int t = x->id;
            if (pl->first[t] < 0 || pl->parent[t] >= 0 || pl->root_off[t] >= 0 || own_region(pl, x) != region)
                continue;
            pl->root_off[t] = cursor;
            cursor += root_size(pl, t);
        }
    }
    return cursor;
}


static void fill_tensors(planner *pl, mp_plan *out)
{
    group_lifetimes(pl);
    for (int t = 0; t < pl->nt; t++) {
        const ir_tensor *x = pl->g->tensors[t];
        mp_tensor *m = &out->t[t];
        *m = (mp_tensor){own_region(pl, x), -1, root_size(pl, t), -1, -1, -1, -1, -1, pl->in_sram[t] != 0, MP_LEVEL_DRAM, false};
        if (pl->first[t] < 0)
            continue;
        if (is_const(x)) {
            m->first_pos = time_of(pl, pl->first[t]);
            m->last_pos = time_of(pl, pl->last[t]);
        } else {
            int64_t off = pl->root_rel[t]; /* resolved by group_lifetimes */
            int r = pl->root[t];
            m->level = (mp_level)pl->level[r];
            m->packed = root_packed(pl, r) && !pl->in_sram[t];
            if (r == t) {
                m->offset = pl->root_off[t];
                m->first_pos = pl->gfirst[t];
                m->last_pos = pl->glast[t];
            } else {
                m->alias_of = r;
                m->region = own_region(pl, pl->g->tensors[r]);
                m->size = (int64_t)ir_tensor_bytes(x); /* a slice keeps its exact bytes */
                if (m->packed)
                    m->size = (m->size + 1) / 2;
                m->offset = pl->root_off[r] + off;
                m->first_pos = time_of(pl, pl->first[t]);
                m->last_pos = time_of(pl, pl->last[t]);
            }
        }
        m->first = step_of(pl, m->first_pos);
        m->last = step_of(pl, m->last_pos);
    }
}

static void concat_stats(planner *pl, mp_plan *out)
{
    const ir_graph *g = pl->g;
    for (int pos = 0; pos < pl->np; pos++) {
        const ir_node *n = g->nodes[pl->pos_node[pos]];
        if (n->op == IR_OP_SPLIT || n->op == IR_OP_SLICE) {
            int in_place = 0;
            for (int j = 0; j < n->n_outputs; j++)
                in_place += n->outputs[j] && pl->parent[n->outputs[j]->id] == n->inputs[0]->id;
            out->splits++;
            out->splits_in_place += n->n_outputs && in_place == n->n_outputs;
        }
        if (n->op != IR_OP_CONCAT || n->n_outputs < 1 || !n->outputs[0])
            continue;
        bool layout = mp_concat_layout(n, pl->prefix), all = true;
        int64_t oo;
        int ro = tensor_root(pl, n->outputs[0]->id, &oo);
        out->concats++;
        for (int j = 0; j < n->n_inputs; j++) {
            const ir_tensor *x = n->inputs[j];
            if (!x)
                continue;
            int64_t b = (int64_t)ir_tensor_bytes(x), ox;
            out->concat_bytes_without_elision += b;
            if (!(layout && !is_const(x) && tensor_root(pl, x->id, &ox) == ro && ox == oo + pl->prefix[j])) {
                out->concat_bytes_copied += b;
                all = false;
            }
        }
        out->concats_elided += all;
    }
}

/* The SRAM level (choose_sram) into out, and the DRAM arena placed again
 * without it (*total, *lower). */
static npu_status plan_sram_level(planner *pl, const mp_options *o, const part_schedule *sched, mp_plan *out,
                                  int64_t *total, int64_t *lower, npu_err *err)
{
    npu_status st = choose_sram(pl, o, sched, &out->sram_bytes, &out->sram_lower_bound, err);
    if (st == NPU_OK && out->sram_bytes > 0)
        st = place_arena(pl, o, total, lower, err);
    for (int t = 0; t < pl->nt; t++)
        out->sram_tensors += pl->level[t] == MP_LEVEL_SRAM;
    return st;
}

#define SCRATCH(ptr, count) ((ptr) = npu_arena_alloc(tmp, sizeof *(ptr) * (size_t)((count) > 0 ? (count) : 1)))

npu_status mp_plan_graph(ir_graph *g, const part_schedule *sched, const mp_options *opts, mp_plan *out,
                         npu_err *err)
{
    static const mp_options defaults = {.align = 1};
    const mp_options *o = opts ? opts : &defaults;
    memset(out, 0, sizeof *out);
    planner pl = {.g = g, .align = o->align > 0 ? o->align : 1, .by_step = o->by_step, .nt = g->n_tensors,
                  .group = o->group, .packed = o->packed};
    int max_in = 1, nn = g->n_nodes, nt = g->n_tensors;
    for (int i = 0; i < nn; i++) {
        if (g->nodes[i]->n_inputs > max_in)
            max_in = g->nodes[i]->n_inputs;
        if (g->nodes[i]->n_outputs > max_in)
            max_in = g->nodes[i]->n_outputs;
    }
    npu_arena *tmp = npu_arena_new(g->alloc);
    out->t = npu_arena_alloc(g->arena, sizeof *out->t * (size_t)(nt ? nt : 1));
    out->node_pos = pl.node_pos = npu_arena_alloc(g->arena, sizeof(int) * (size_t)(nn ? nn : 1));
    out->pos_step = pl.pos_step = npu_arena_alloc(g->arena, sizeof(int) * (size_t)(nn ? nn : 1));
    int *par_views = NULL, *par_elided = NULL;
    int64_t *rel_views = NULL, *rel_elided = NULL;
    if (!tmp || !out->t || !pl.node_pos || !pl.pos_step || !SCRATCH(pl.pos_node, nn) || !SCRATCH(pl.first, nt) ||
        !SCRATCH(pl.last, nt) || !SCRATCH(pl.pin, nt) || !SCRATCH(pl.parent, nt) || !SCRATCH(pl.rel, nt) ||
        !SCRATCH(par_views, nt) || !SCRATCH(rel_views, nt) || !SCRATCH(par_elided, nt) ||
        !SCRATCH(rel_elided, nt) || !SCRATCH(pl.gfirst, nt) || !SCRATCH(pl.glast, nt) ||
        !SCRATCH(pl.concat_uses, nt) || !SCRATCH(pl.inplace, nt) || !SCRATCH(pl.diff, nn + 1) || !SCRATCH(pl.prefix, max_in) ||
        !SCRATCH(pl.root_off, nt) || !SCRATCH(pl.best_off, nt) || !SCRATCH(pl.items, nt) ||
        !SCRATCH(pl.item_tensor, nt) || !SCRATCH(pl.root, nt) || !SCRATCH(pl.root_rel, nt) || !SCRATCH(pl.chain, nt) ||
        !SCRATCH(pl.glast_pos, nt) || !SCRATCH(pl.pos_gend, nn) || !SCRATCH(pl.in_sram, nt) || !SCRATCH(pl.level, nt) || !SCRATCH(pl.cand, nt) || !SCRATCH(pl.chosen, nt) ||
        !(pl.pos_group = npu_arena_alloc(g->arena, sizeof(int) * (size_t)(nn ? nn : 1)))) {
        npu_arena_free(tmp);
        return npu_fail(err, NPU_EINTERNAL, "memplan: out of memory for %d tensors", nt);
    }
    npu_status st = build_positions(&pl, sched, err);
    if (st == NPU_OK)
        st = own_lifetimes(&pl, err);
    int64_t total = 0, lower = 0;
    if (st == NPU_OK) {
        for (int t = 0; t < nt; t++) {
            pl.parent[t] = -1;
            pl.root_off[t] = -1;
        }
        alias_views(&pl);
        memset(pl.level, MP_LEVEL_DRAM, (size_t)nt);
        if (!o->no_inplace && !o->by_step)
            out->inplace_ops = write_in_place(&pl);
        memcpy(par_views, pl.parent, sizeof(int) * (size_t)nt);
        memcpy(rel_views, pl.rel, sizeof(int64_t) * (size_t)nt);
        int64_t views_bound = arena_bound(&pl);
        int moved = o->no_elision ? 0 : elide_concats(&pl);
        if (!o->no_elision)
            split_in_place(&pl);
        st = place_arena(&pl, o, &total, &lower, err);
        /* without elision the arena is at least views_bound: no need to place it when we are below */
        if (st == NPU_OK && moved && total > views_bound) {
            /* the bound guided each decision; the placed arena has the last word */
            memcpy(par_elided, pl.parent, sizeof(int) * (size_t)nt);
            memcpy(rel_elided, pl.rel, sizeof(int64_t) * (size_t)nt);
            memcpy(pl.best_off, pl.root_off, sizeof(int64_t) * (size_t)nt);
            memcpy(pl.parent, par_views, sizeof(int) * (size_t)nt);
            memcpy(pl.rel, rel_views, sizeof(int64_t) * (size_t)nt);
            int64_t total2 = 0, lower2 = 0;
            st = place_arena(&pl, o, &total2, &lower2, err);
            if (st == NPU_OK && total2 < total) {
                total = total2;
                lower = lower2;
            } else {
                memcpy(pl.parent, par_elided, sizeof(int) * (size_t)nt);
                memcpy(pl.rel, rel_elided, sizeof(int64_t) * (size_t)nt);
                memcpy(pl.root_off, pl.best_off, sizeof(int64_t) * (size_t)nt);
            }
        }
    }
    if (st == NPU_OK && o->sram_bytes > 0)
        st = plan_sram_level(&pl, o, sched, out, &total, &lower, err);
    if (st == NPU_OK) {
        out->n_tensors = nt;
        out->by_step = pl.by_step;
        out->n_steps = sched->n_steps;
        out->n_positions = pl.np;
        out->pos_group = o->group ? pl.pos_group : NULL;
        out->region_bytes[MP_REGION_ARENA] = total;
        out->region_bytes[MP_REGION_INPUT] = place_dense(&pl, MP_REGION_INPUT);
        out->region_bytes[MP_REGION_OUTPUT] = place_dense(&pl, MP_REGION_OUTPUT);
        out->arena_lower_bound = lower;
        fill_tensors(&pl, out);
        concat_stats(&pl, out);
    }
    npu_arena_free(tmp);
    return st;
}
