#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static ir_graph *chain(void)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[4] = {1, 3, 8, 8};
    ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 4, d);
    x->flags |= IR_TENSOR_INPUT;
    ir_tensor *a = ir_tensor_new(g, "a", IR_F32, 4, d);
    ir_tensor *b = ir_tensor_new(g, "b", IR_F32, 4, d);
    /* inserted out of order: b = Relu(a) before a = Neg(x) */
    ir_node_new(g, IR_OP_RELU, "r", 1, &a, 1, &b);
    ir_node_new(g, IR_OP_NEG, "n", 1, &x, 1, &a);
    g->inputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->inputs[0] = x;
    g->n_inputs = 1;
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->outputs[0] = b;
    g->n_outputs = 1;
    return g;
}

Test(ir, op_names_round_trip)
{
    for (int i = 0; i < IR_OP_COUNT; i++)
        cr_assert_eq(ir_op_from_name(ir_op_name((ir_op)i)), i);
    cr_assert_eq(ir_op_from_name("NoSuchOp"), IR_OP_COUNT);
}

Test(ir, toposort_orders_producers_first)
{
    ir_graph *g = chain();
    npu_err e;
    cr_assert_neq(ir_graph_verify(g, &e), NPU_OK);
    cr_assert_eq(ir_graph_toposort(g, &e), NPU_OK);
    cr_assert_str_eq(g->nodes[0]->name, "n");
    cr_assert_str_eq(g->nodes[1]->name, "r");
    cr_assert_eq(ir_graph_verify(g, &e), NPU_OK, "%s", e.msg);
    ir_graph_free(g);
}

Test(ir, toposort_reports_cycle)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[1] = {4};
    ir_tensor *a = ir_tensor_new(g, "a", IR_F32, 1, d);
    ir_tensor *b = ir_tensor_new(g, "b", IR_F32, 1, d);
    ir_node_new(g, IR_OP_RELU, "r1", 1, &a, 1, &b);
    ir_node_new(g, IR_OP_RELU, "r2", 1, &b, 1, &a);
    npu_err e;
    cr_assert_eq(ir_graph_toposort(g, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "cycle"), "%s", e.msg);
    ir_graph_free(g);
}

Test(ir, names_unique_and_compact_drops_dead)
{
    ir_graph *g = chain();
    cr_assert_null(ir_tensor_new(g, "x", IR_F32, 0, NULL));
    npu_err e;
    ir_graph_toposort(g, &e);
    cr_assert_eq(ir_use_count(g, ir_graph_find(g, "a")), 1);
    /* bypass the Relu: output becomes a */
    g->nodes[1]->dead = true;
    ir_replace_uses(g, ir_graph_find(g, "b"), ir_graph_find(g, "a"));
    ir_graph_compact(g);
    cr_assert_eq(g->n_nodes, 1);
    cr_assert_eq(g->n_tensors, 2);
    cr_assert_str_eq(g->outputs[0]->name, "a");
    ir_graph_free(g);
}

Test(ir, attributes_replace_and_default)
{
    ir_graph *g = chain();
    ir_node *n = g->nodes[0];
    int64_t s[2] = {2, 2};
    ir_set_ints(g, n, "strides", 2, s);
    ir_set_int(g, n, "group", 1);
    ir_set_int(g, n, "group", 3);
    cr_assert_eq(ir_attr_int(n, "group", 0), 3);
    cr_assert_eq(ir_attr_int(n, "missing", 9), 9);
    int64_t out[4];
    cr_assert_eq(ir_attr_ints(n, "strides", out, 4), 2);
    cr_assert_eq(out[1], 2);
    cr_assert_eq(n->n_attrs, 2);
    ir_graph_free(g);
}

Test(ir, dump_shows_nodes_and_shapes)
{
    ir_graph *g = chain();
    npu_err e;
    ir_graph_toposort(g, &e);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ir_dump(g, f);
    fclose(f);
    cr_assert(strstr(buf, "%a:f32[1,3,8,8] = Neg(%x:f32[1,3,8,8])"), "%s", buf);
    cr_assert(strstr(buf, "output %b"), "%s", buf);
    free(buf);
    ir_graph_free(g);
}

Test(ir, allocation_failure_never_crashes)
{
    /* fail every allocation from the n-th on: construction returns NULL somewhere, never crashes */
    for (size_t n = 1; n < 40; n++) {
        npu_alloc_counter c = {.fail_at = n};
        ir_graph *g = ir_graph_new(npu_alloc_counting(&c));
        if (g) {
            int64_t d[2] = {2, 2};
            for (int i = 0; i < 100; i++)
                if (!ir_tensor_new(g, NULL, IR_F32, 2, d))
                    break;
            ir_graph_free(g);
        }
        cr_assert_eq(c.live_bytes, 0, "leak when failing allocation %zu", n);
    }
}
