/* part_assign: what each unit can run and costs, then the assignment: first
 * fit, or the cheapest one along the order by dynamic programming
 * (docs/partition.md). */
#include "partition/part_internal.h"

#include <string.h>

#define PART_INF ((int64_t)1 << 60)

static bool is_view_of_live(const ir_node *n)
{
    const ir_tensor *src = n->n_inputs ? n->inputs[0] : NULL;
    return ir_op_is_view(n->op) && src && src->producer && !src->producer->dead;
}

static size_t node_hash(const ir_node *n, int n_slot)
{
    uintptr_t h = (uintptr_t)n;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 7) & (size_t)(n_slot - 1);
}

/* Through the hash part_probe builds: a search of the info per lookup made
 * the partitioner quadratic in the nodes. */
const part_node_info *part_info_of(const part_result *res, const ir_node *n)
{
    if (res && res->slot) {
        for (size_t h = node_hash(n, res->n_slot);; h = (h + 1) & (size_t)(res->n_slot - 1)) {
            int i = res->slot[h];
            if (i < 0)
                return NULL;
            if (res->info[i].node == n)
                return &res->info[i];
        }
    }
    for (int i = 0; res && i < res->n_info; i++)
        if (res->info[i].node == n)
            return &res->info[i];
    return NULL;
}

/* The hash of res->info (at most half full), or none when memory runs out. */
static void index_info(ir_graph *g, part_result *r)
{
    int n_slot = 16;
    while (n_slot < 2 * r->n_info && n_slot < (1 << 30))
        n_slot *= 2;
    r->slot = npu_arena_alloc(g->arena, sizeof(int) * (size_t)n_slot);
    if (!r->slot)
        return;
    r->n_slot = n_slot;
    for (int h = 0; h < n_slot; h++)
        r->slot[h] = -1;
    for (int i = 0; i < r->n_info; i++) {
        size_t h = node_hash(r->info[i].node, n_slot);
        while (r->slot[h] >= 0)
            h = (h + 1) & (size_t)(n_slot - 1);
        r->slot[h] = i;
    }
}

/* What the units can do with n and at what cost. */
static npu_status probe(ir_graph *g, const part_caps *caps, ir_node *n, part_node_info *in, npu_err *err)
{
    memset(in, 0, sizeof *in);
    in->node = n;
    const char *reason = "no NPU support information";
    if (is_view_of_live(n)) { /* moves no data: free on either unit */
        in->npu_ok = in->host_ok = true;
        return NPU_OK;
    }
    if (caps && caps->npu_cost && caps->host) {
        npu_status st = caps->npu_cost(caps->ud, g, n, &in->npu_cycles, &reason, err);
        if (st != NPU_OK && st != NPU_EUSER)
            return st;
        in->npu_ok = st == NPU_OK;
    } else if (caps && caps->npu_supports)
        in->npu_ok = caps->npu_supports(caps->ud, g, n, &reason);
    in->npu_reason = in->npu_ok ? NULL : reason ? reason : "not supported by the NPU";
    const char *why = NULL;
    in->host_ok = !caps || !caps->host_supports || caps->host_supports(caps->ud, g, n, &why);
    if (in->host_ok && caps)
        in->host_cycles = part_host_cycles(caps->host, n);
    /* the probes report a failed allocation as their reason: a resource failure, not the model's */
    if (!in->npu_ok && !in->host_ok)
        return npu_fail(err, strstr(in->npu_reason, "out of memory") || (why && strstr(why, "out of memory"))
                                 ? NPU_EINTERNAL : NPU_EUSER, "%s%snode '%s' (%s): the NPU cannot run it (%s) and neither can the host "
                        "runtime (%s)", caps->model ? caps->model : "", caps->model ? ": " : "", n->name,
                        ir_op_name(n->op), in->npu_reason, why ? why : "no host kernel");
    if (!in->npu_ok)
        in->npu_cycles = 0;
    return NPU_OK;
}

static void set_unit(ir_node *n, const part_node_info *in, ir_unit u, const char *host_why)
{
    n->unit = u;
    n->unit_reason = u == IR_UNIT_NPU ? NULL : in->npu_reason ? in->npu_reason : host_why;
}

/* First fit: the NPU whenever it can; a view takes its producer's unit. */
static void first_fit(ir_graph *g, const part_result *r, part_mode mode)
{
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        const part_node_info *in = &r->info[k++];
        if (is_view_of_live(n)) {
            n->unit = n->inputs[0]->producer->unit;
            n->unit_reason = n->unit == IR_UNIT_HOST ? "view of a host tensor" : NULL;
        } else if (mode == PART_HOST && in->host_ok) {
            set_unit(n, in, IR_UNIT_HOST, "placed on the host (--partition host)");
        } else {
            set_unit(n, in, in->npu_ok ? IR_UNIT_NPU : IR_UNIT_HOST, NULL);
        }
    }
}

/* Cost of node n on unit u (PART_INF where it cannot run). */
static int64_t node_cost(const part_node_info *in, int u)
{
    if (u == IR_UNIT_NPU)
        return in->npu_ok ? in->npu_cycles : PART_INF;
    return in->host_ok ? in->host_cycles : PART_INF;
}

/* A change of unit between prev and n: an NPU job to start (entering the
 * NPU), and the tensor prev hands to n makes a DRAM round trip that a
 * cascade on one unit would keep in SRAM. */
static int64_t switch_cost(const part_result *r, const ir_node *prev, const ir_node *n, int into)
{
    int64_t c = into == IR_UNIT_NPU ? r->switch_cycles : 0;
    for (int i = 0; prev && i < n->n_inputs; i++)
        if (n->inputs[i] && n->inputs[i]->producer == prev && r->dram_bytes_per_cycle > 0) {
            c += (int64_t)(2.0 * (double)ir_tensor_bytes(n->inputs[i]) / r->dram_bytes_per_cycle);
            break;
        }
    return c;
}

int64_t part_cost_of(const ir_graph *g, const part_result *r, int *switches)
{
    int64_t total = 0;
    int sw = 0;
    const ir_node *prev = NULL;
    int prev_unit = IR_UNIT_HOST; /* the host starts */
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        const part_node_info *in = part_info_of(r, n);
        if (!in)
            continue;
        int64_t c = node_cost(in, n->unit);
        total += c < PART_INF ? c : 0;
        if ((int)n->unit != prev_unit) {
            total += switch_cost(r, prev, n, n->unit);
            sw += prev != NULL;
        }
        prev_unit = n->unit;
        prev = n;
    }
    if (switches)
        *switches = sw;
    return total;
}

/* The cheapest assignment along g's current order: best[k][u] is the least
 * cost of the first k+1 live nodes with node k on unit u. */
static npu_status dp_assign(ir_graph *g, const part_result *r, npu_err *err)
{
    int m = 0;
    for (int i = 0; i < g->n_nodes; i++)
        m += !g->nodes[i]->dead;
    int64_t (*best)[2] = npu_arena_alloc(g->arena, sizeof *best * (size_t)(m + 1));
    signed char (*from)[2] = npu_arena_alloc(g->arena, sizeof *from * (size_t)(m + 1));
    ir_node **live = npu_arena_alloc(g->arena, sizeof *live * (size_t)(m + 1));
    if (!best || !from || !live)
        return npu_fail(err, NPU_EINTERNAL, "out of memory partitioning the graph");
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead)
            live[k++] = g->nodes[i];
    for (k = 0; k < m; k++) {
        const part_node_info *in = part_info_of(r, live[k]);
        for (int u = 0; u < 2; u++) {
            int64_t c = node_cost(in, u);
            best[k][u] = PART_INF;
            from[k][u] = 0;
            for (int pu = 0; c < PART_INF && pu < 2; pu++) {
                int64_t b = k ? best[k - 1][pu] : (pu == IR_UNIT_HOST ? 0 : PART_INF);
                if (b >= PART_INF)
                    continue;
                b += c + (pu != u ? switch_cost(r, k ? live[k - 1] : NULL, live[k], u) : 0);
                if (b < best[k][u])
                    best[k][u] = b, from[k][u] = (signed char)pu;
            }
        }
    }
    int u = m && best[m - 1][IR_UNIT_NPU] < best[m - 1][IR_UNIT_HOST] ? IR_UNIT_NPU : IR_UNIT_HOST;
    for (k = m - 1; k >= 0; k--) {
        const part_node_info *in = part_info_of(r, live[k]);
        set_unit(live[k], in, (ir_unit)u, "cheaper on the host than a switch to the NPU and back");
        if (u == IR_UNIT_HOST && is_view_of_live(live[k]))
            live[k]->unit_reason = "view of a host tensor";
        u = from[k][u];
    }
    return NPU_OK;
}

npu_status part_save_units(ir_graph *g, ir_unit **units, ir_node ***order, npu_err *err)
{
    *units = npu_arena_alloc(g->arena, sizeof **units * (size_t)(g->n_nodes + 1));
    *order = npu_arena_alloc(g->arena, sizeof **order * (size_t)(g->n_nodes + 1));
    if (!*units || !*order)
        return npu_fail(err, NPU_EINTERNAL, "out of memory partitioning the graph");
    for (int i = 0; i < g->n_nodes; i++)
        (*units)[i] = g->nodes[i]->unit, (*order)[i] = g->nodes[i];
    return NPU_OK;
}

void part_restore_units(ir_graph *g, const part_result *r, ir_unit *units, ir_node **order)
{
    memcpy(g->nodes, order, sizeof *order * (size_t)g->n_nodes);
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        n->id = i;
        const part_node_info *in = part_info_of(r, n);
        if (!in)
            continue;
        n->unit = units[i];
        if (n->unit == IR_UNIT_NPU)
            n->unit_reason = NULL;
        else if (in->npu_ok)
            n->unit_reason = is_view_of_live(n) ? "view of a host tensor"
                                                : "cheaper on the host than a switch to the NPU and back";
        else
            n->unit_reason = in->npu_reason;
    }
}

/* The cost model's choice: the DP along the given order, then along the
 * unit-aware orders; the cheapest wins, and first fit where it is no worse. */
static npu_status choose(ir_graph *g, part_result *r, npu_err *err)
{
    ir_unit *ff_units, *units;
    ir_node **ff_order, **order;
    npu_status st = part_save_units(g, &ff_units, &ff_order, err);
    if (st == NPU_OK)
        st = dp_assign(g, r, err);
    int64_t best = st == NPU_OK ? part_cost_of(g, r, NULL) : 0;
    for (int host_first = 0; host_first < 2 && st == NPU_OK; host_first++) {
        if ((st = part_save_units(g, &units, &order, err)) != NPU_OK ||
            (st = part_order_by_unit(g, host_first, err)) != NPU_OK || (st = dp_assign(g, r, err)) != NPU_OK)
            break;
        int64_t c = part_cost_of(g, r, NULL);
        if (c >= best)
            part_restore_units(g, r, units, order);
        else
            best = c;
    }
    if (st == NPU_OK && best >= r->est_cycles_first_fit) /* never worse than first fit; ties keep its order */
        part_restore_units(g, r, ff_units, ff_order);
    return st;
}

npu_status part_probe(ir_graph *g, const part_caps *caps, part_result *r, npu_err *err)
{
    memset(r, 0, sizeof *r);
    r->mode = caps ? caps->mode : PART_FIRST_FIT;
    r->costed = caps && caps->host;
    if (r->costed) {
        r->switch_cycles = part_switch_cycles(caps->host);
        r->dram_bytes_per_cycle = caps->host->dram_bytes_per_cycle;
    }
    r->info = npu_arena_alloc(g->arena, sizeof *r->info * (size_t)(g->n_nodes + 1));
    if (!r->info)
        return npu_fail(err, NPU_EINTERNAL, "out of memory partitioning the graph");
    npu_status st = NPU_OK;
    for (int i = 0; i < g->n_nodes && st == NPU_OK; i++)
        if (!g->nodes[i]->dead)
            st = probe(g, caps, g->nodes[i], &r->info[r->n_info++], err);
    if (st == NPU_OK)
        index_info(g, r);
    return st;
}

npu_status part_decide(ir_graph *g, part_mode mode, part_result *r, npu_err *err)
{
    npu_status st = NPU_OK;
    first_fit(g, r, mode);
    r->est_cycles_first_fit = part_cost_of(g, r, &r->switches_first_fit);
    if (r->costed && mode == PART_COST)
        st = choose(g, r, err);
    r->est_cycles = part_cost_of(g, r, &r->switches);
    return st;
}

npu_status part_assign_ex(ir_graph *g, const part_caps *caps, part_result *res, npu_err *err)
{
    part_result local;
    part_result *r = res ? res : &local;
    npu_status st = part_probe(g, caps, r, err);
    return st == NPU_OK ? part_decide(g, r->mode, r, err) : st;
}

npu_status part_assign(ir_graph *g, const part_caps *caps, npu_err *err)
{
    return part_assign_ex(g, caps, NULL, err);
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
