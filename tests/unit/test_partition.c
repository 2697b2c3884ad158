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
