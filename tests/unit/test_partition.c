#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "partition/partition.h"

/* conv -> relu(host) -> reshape -> conv -> conv */
static ir_graph *sample(void)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[4] = {1, 4, 4, 4};
    ir_tensor *t[6];
    for (int i = 0; i < 6; i++)
        t[i] = ir_tensor_new(g, NULL, IR_F32, 4, d);
    t[0]->flags |= IR_TENSOR_INPUT;
    ir_node_new(g, IR_OP_CONV, "c1", 1, &t[0], 1, &t[1]);
    ir_node_new(g, IR_OP_ERF, "e", 1, &t[1], 1, &t[2]);
    ir_node_new(g, IR_OP_RESHAPE, "r", 1, &t[2], 1, &t[3]);
    ir_node_new(g, IR_OP_CONV, "c2", 1, &t[3], 1, &t[4]);
    ir_node_new(g, IR_OP_CONV, "c3", 1, &t[4], 1, &t[5]);
    return g;
}

static bool convs_only(void *ud, const ir_graph *g, const ir_node *n, const char **reason)
{
    (void)g;
    (*(int *)ud)++;
    if (n->op == IR_OP_CONV)
        return true;
    *reason = "op not in the target's NPU op list";
    return false;
}

Test(partition, assigns_units_with_reasons_and_views_follow_producer)
{
    ir_graph *g = sample();
    int asked = 0;
    part_caps caps = {.npu_supports = convs_only, .ud = &asked};
    npu_err e;
    cr_assert_eq(part_assign(g, &caps, &e), NPU_OK);
    cr_assert_eq(asked, 4, "views are not asked about");
    cr_assert_eq(g->nodes[0]->unit, IR_UNIT_NPU);
    cr_assert_eq(g->nodes[1]->unit, IR_UNIT_HOST);
    cr_assert_str_eq(g->nodes[1]->unit_reason, "op not in the target's NPU op list");
    cr_assert_eq(g->nodes[2]->unit, IR_UNIT_HOST, "reshape of a host tensor stays on the host");
    ir_graph_free(g);
}

Test(partition, schedule_groups_consecutive_npu_nodes)
{
    ir_graph *g = sample();
    int asked = 0;
    part_caps caps = {.npu_supports = convs_only, .ud = &asked};
    npu_err e;
    part_assign(g, &caps, &e);
    part_schedule s;
    cr_assert_eq(part_schedule_build(g, &s, &e), NPU_OK);
    cr_assert_eq(s.n_steps, 4);
    cr_assert_eq(s.steps[0].unit, IR_UNIT_NPU);
    cr_assert_eq(s.steps[1].unit, IR_UNIT_HOST);
    cr_assert_eq(s.steps[2].unit, IR_UNIT_HOST);
    cr_assert_eq(s.steps[3].unit, IR_UNIT_NPU);
    cr_assert_eq(s.steps[3].count, 2, "c2 and c3 share one segment");
    ir_graph_free(g);
}

Test(partition, report_lists_every_node)
{
    ir_graph *g = sample();
    int asked = 0;
    part_caps caps = {.npu_supports = convs_only, .ud = &asked};
    npu_err e;
    part_assign(g, &caps, &e);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    part_report(g, f);
    fclose(f);
    cr_assert(strstr(buf, "e     Erf"), "%s", buf);
    cr_assert(strstr(buf, "3 nodes on the NPU, 2 on the host"), "%s", buf);
    free(buf);
    ir_graph_free(g);
}

/* ---- the cost model ------------------------------------------------------ */

/* NPU costs per node name from a table; a node absent from it the NPU cannot run. */
typedef struct cost_table {
    int n;
    const char *name[16];
    int64_t npu[16];
} cost_table;

static npu_status table_cost(void *ud, const ir_graph *g, const ir_node *n, int64_t *cycles, const char **reason,
                             npu_err *err)
{
    (void)g, (void)err;
    const cost_table *t = ud;
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->name[i], n->name) == 0) {
            *cycles = t->npu[i];
            return NPU_OK;
        }
    *reason = "not in the table";
    return NPU_EUSER;
}

static bool no_host_for_conv(void *ud, const ir_graph *g, const ir_node *n, const char **reason)
{
    (void)ud, (void)g;
    if (n->op != IR_OP_CONV)
        return true;
    *reason = "no host conv";
    return false;
}

/* a chain x -> nodes[0] -> ... -> nodes[n-1], each of op ops[i] */
static ir_graph *chain(int n, const ir_op *ops, const char *const *names)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[4] = {1, 1, 1, 4};
    ir_tensor *t = ir_tensor_new(g, NULL, IR_F32, 4, d);
    t->flags |= IR_TENSOR_INPUT;
    for (int i = 0; i < n; i++) {
        ir_tensor *y = ir_tensor_new(g, NULL, IR_F32, 4, d);
        ir_node_new(g, ops[i], names[i], 1, &t, 1, &y);
        t = y;
    }
    return g;
}

static const part_host_model hm = {1.0, 1.0, 0.0}; /* host cycles are NPU cycles; no DRAM term */

static part_caps cost_caps(cost_table *t)
{
    return (part_caps){.npu_cost = table_cost, .ud = t, .host_supports = no_host_for_conv, .host = &hm};
}

Test(partition, npu_node_between_host_nodes_stays_on_host_when_switches_cost_more)
{
    const ir_op ops[3] = {IR_OP_ERF, IR_OP_RELU, IR_OP_ERF};
    const char *names[3] = {"e1", "mid", "e2"};
    ir_graph *g = chain(3, ops, names);
    int64_t host = part_host_cycles(&hm, g->nodes[1]), sw = part_switch_cycles(&hm);
    cr_assert_gt(sw, 0);
    /* the NPU saves less than the NPU job it needs */
    cost_table t = {1, {"mid"}, {host - sw / 2}};
    part_caps caps = cost_caps(&t);
    part_result r;
    npu_err e;
    cr_assert_eq(part_assign_ex(g, &caps, &r, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(g->nodes[1]->unit, IR_UNIT_HOST);
    cr_assert(strstr(g->nodes[1]->unit_reason, "cheaper on the host"), "%s", g->nodes[1]->unit_reason);
    cr_assert_eq(r.switches, 0);
    cr_assert_eq(r.switches_first_fit, 2, "first fit sends mid to the NPU");
    cr_assert_lt(r.est_cycles, r.est_cycles_first_fit);
    ir_graph_free(g);
}

Test(partition, npu_node_between_host_nodes_goes_to_npu_when_it_saves_more_than_the_switches)
{
    const ir_op ops[3] = {IR_OP_ERF, IR_OP_RELU, IR_OP_ERF};
    const char *names[3] = {"e1", "mid", "e2"};
    ir_graph *g = chain(3, ops, names);
    int64_t host = part_host_cycles(&hm, g->nodes[1]), sw = part_switch_cycles(&hm);
    cost_table t = {1, {"mid"}, {host - 2 * sw}};
    part_caps caps = cost_caps(&t);
    part_result r;
    npu_err e;
    cr_assert_eq(part_assign_ex(g, &caps, &r, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(g->nodes[1]->unit, IR_UNIT_NPU);
    cr_assert_eq(r.switches, 2);
    cr_assert_eq(r.est_cycles, r.est_cycles_first_fit);
    ir_graph_free(g);
}

Test(partition, host_node_between_npu_nodes_moves_to_npu_when_a_segment_split_costs_more)
{
    /* mid is cheaper on the host, but by less than the extra NPU job a host step in the middle costs */
    const ir_op ops[3] = {IR_OP_CONV, IR_OP_RELU, IR_OP_CONV};
    const char *names[3] = {"c1", "mid", "c2"};
    ir_graph *g = chain(3, ops, names);
    int64_t host = part_host_cycles(&hm, g->nodes[1]), sw = part_switch_cycles(&hm);
    cost_table t = {3, {"c1", "mid", "c2"}, {50, host + sw / 2, 50}};
    part_caps caps = cost_caps(&t);
    caps.mode = PART_HOST; /* the host wherever it can: mid on the host */
    part_result r;
    npu_err e;
    cr_assert_eq(part_assign_ex(g, &caps, &r, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(g->nodes[1]->unit, IR_UNIT_HOST);
    int64_t on_host = r.est_cycles;
    caps.mode = PART_COST;
    cr_assert_eq(part_assign_ex(g, &caps, &r, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(g->nodes[1]->unit, IR_UNIT_NPU);
    cr_assert_lt(r.est_cycles, on_host);
    cr_assert_eq(r.est_cycles, 50 + host + sw / 2 + 50 + sw, "one NPU job");
    ir_graph_free(g);
}

Test(partition, a_node_neither_unit_runs_is_an_error_naming_it)
{
    const ir_op ops[2] = {IR_OP_RELU, IR_OP_CONV};
    const char *names[2] = {"r", "badconv"};
    ir_graph *g = chain(2, ops, names);
    cost_table t = {1, {"r"}, {5}};
    part_caps caps = cost_caps(&t);
    caps.model = "m.onnx";
    npu_err e;
    cr_assert_eq(part_assign(g, &caps, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "m.onnx: node 'badconv' (Conv)"), "%s", e.msg);
    cr_assert(strstr(e.msg, "not in the table") && strstr(e.msg, "no host conv"), "%s", e.msg);
    ir_graph_free(g);
}

Test(partition, unit_aware_order_keeps_the_npu_nodes_in_one_segment)
{
    /* x -> n1 -> n2 -> add(n2, h1); x -> h1 (host only); given order n1, h1, n2, add */
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[4] = {1, 1, 1, 4};
    ir_tensor *x = ir_tensor_new(g, NULL, IR_F32, 4, d), *t[4];
    x->flags |= IR_TENSOR_INPUT;
    for (int i = 0; i < 4; i++)
        t[i] = ir_tensor_new(g, NULL, IR_F32, 4, d);
    ir_node_new(g, IR_OP_RELU, "n1", 1, &x, 1, &t[0]);
    ir_node_new(g, IR_OP_ERF, "h1", 1, &x, 1, &t[1]);
    ir_node_new(g, IR_OP_RELU, "n2", 1, &t[0], 1, &t[2]);
    ir_tensor *in[2] = {t[2], t[1]};
    ir_node_new(g, IR_OP_ADD, "add", 2, in, 1, &t[3]);
    cost_table tb = {3, {"n1", "n2", "add"}, {1, 1, 1}};
    part_caps caps = cost_caps(&tb);
    part_result r;
    npu_err e;
    cr_assert_eq(part_assign_ex(g, &caps, &r, &e), NPU_OK, "%s", e.msg);
    part_schedule s;
    cr_assert_eq(part_schedule_build(g, &s, &e), NPU_OK);
    cr_assert_eq(s.n_steps, 2, "h1, then n1 n2 add in one NPU segment");
    cr_assert_str_eq(g->nodes[0]->name, "h1");
    cr_assert_eq(r.switches, 1);
    cr_assert_eq(r.switches_first_fit, 2, "n1 | h1 | n2 add");
    ir_graph_free(g);
}

/* A deterministic random chain-with-branches graph of n nodes: each reads
 * the previous node's output and sometimes an earlier one's. */
static ir_graph *random_graph(uint32_t *seed, int n, cost_table *t)
{
    static const char *const nm[16] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p"};
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[4] = {1, 1, 1, 4};
    ir_tensor *outs[17];
    outs[0] = ir_tensor_new(g, NULL, IR_F32, 4, d);
    outs[0]->flags |= IR_TENSOR_INPUT;
    t->n = 0;
    for (int i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        uint32_t rnd = *seed >> 8;
        ir_tensor *in[2] = {outs[i], outs[rnd % (unsigned)(i + 1)]};
        outs[i + 1] = ir_tensor_new(g, NULL, IR_F32, 4, d);
        bool two = (rnd >> 4) % 3 == 0;
        ir_node_new(g, two ? IR_OP_ADD : IR_OP_RELU, nm[i], two ? 2 : 1, in, 1, &outs[i + 1]);
        if ((rnd >> 8) % 4 != 0) { /* three in four the NPU can run */
            t->name[t->n] = nm[i];
            t->npu[t->n++] = (int64_t)((rnd >> 10) % 2000);
        }
    }
    return g;
}

Test(partition, cost_model_is_never_worse_than_first_fit)
{
    uint32_t seed = 7;
    int better = 0;
    for (int trial = 0; trial < 300; trial++) {
        cost_table t;
        ir_graph *g = random_graph(&seed, 4 + trial % 12, &t);
        part_caps caps = cost_caps(&t);
        part_result r;
        npu_err e;
        cr_assert_eq(part_assign_ex(g, &caps, &r, &e), NPU_OK, "%s", e.msg);
        cr_assert_leq(r.est_cycles, r.est_cycles_first_fit, "trial %d", trial);
        int sw;
        cr_assert_eq(part_cost_of(g, &r, &sw), r.est_cycles, "the estimate is that of the graph's units and order");
        cr_assert_eq(sw, r.switches);
        better += r.est_cycles < r.est_cycles_first_fit;
        ir_graph_free(g);
    }
    cr_assert_gt(better, 0, "the cost model beats first fit somewhere");
}

Test(partition, report_and_json_carry_costs_and_switches)
{
    const ir_op ops[3] = {IR_OP_ERF, IR_OP_RELU, IR_OP_CONV};
    const char *names[3] = {"e1", "mid", "c"};
    ir_graph *g = chain(3, ops, names);
    cost_table t = {2, {"mid", "c"}, {7, 9}};
    part_caps caps = cost_caps(&t);
    part_result r;
    npu_err e;
    cr_assert_eq(part_assign_ex(g, &caps, &r, &e), NPU_OK, "%s", e.msg);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    part_report_ex(g, &r, f);
    fclose(f);
    cr_assert(strstr(buf, "npu cyc") && strstr(buf, "host cyc"), "%s", buf);
    cr_assert(strstr(buf, "switches"), "%s", buf);
    char want[64];
    snprintf(want, sizeof want, "%d switches", r.switches);
    cr_assert(strstr(buf, want), "%s", buf);
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    part_write_json(g, &r, f);
    fclose(f);
    cr_assert(strstr(buf, "\"partition\": {\"mode\": \"cost\""), "%s", buf);
    cr_assert(strstr(buf, "\"name\": \"c\", \"op\": \"Conv\", \"unit\": \"npu\", \"reason\": \"\", \"npu_cycles\": 9, "
                          "\"host_cycles\": null"), "%s", buf);
    cr_assert(strstr(buf, "\"name\": \"e1\", \"op\": \"Erf\", \"unit\": \"host\""), "%s", buf);
    cr_assert(strstr(buf, "\"npu_cycles\": null"), "the host-only Erf: %s", buf);
    cr_assert(strstr(buf, "\"host_steps\": [\n      {\"name\": \"e1\""), "%s", buf);
    cr_assert(strstr(buf, "\"first_fit\": {\"switches\""), "%s", buf);
    free(buf);
    ir_graph_free(g);
}
