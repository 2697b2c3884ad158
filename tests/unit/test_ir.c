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

static ir_graph *quantized_sample(void)
{
    ir_graph *g = chain();
    npu_err e;
    ir_graph_toposort(g, &e);
    int64_t wd[2] = {3, 2};
    int8_t w[6] = {1, -2, 3, -4, 5, -128};
    ir_tensor *wt = ir_const_new(g, "w", IR_I8, 2, wd, w);
    ir_quant *q = npu_arena_alloc(g->arena, sizeof *q);
    q->axis = 0;
    q->count = 3;
    q->scale = npu_arena_alloc(g->arena, 12);
    q->zero_point = npu_arena_alloc(g->arena, 12);
    q->scale[0] = 0.5f, q->scale[1] = 0.25f, q->scale[2] = 2.0f;
    wt->quant = q;
    ir_node *n = g->nodes[1];
    /* give the relu an extra (ignored) constant input to carry the tensor */
    ir_tensor **ins = npu_arena_alloc(g->arena, 2 * sizeof *ins);
    ins[0] = n->inputs[0];
    ins[1] = wt;
    n->inputs = ins;
    n->n_inputs = 2;
    float fl[2] = {1.5f, -2.0f};
    int64_t is[3] = {7, -1, 1LL << 40};
    ir_set_floats(g, n, "fs", 2, fl);
    ir_set_ints(g, n, "is", 3, is);
    ir_set_string(g, n, "mode", "nearest");
    ir_set_float(g, n, "alpha", 0.125f);
    n->act = (ir_act){IR_ACT_CLIP, 0.0f, 6.0f, 0.0f};
    n->unit = IR_UNIT_NPU;
    return g;
}

Test(ir_serial, round_trip_preserves_graph)
{
    ir_graph *g = quantized_sample();
    npu_err e;
    void *buf;
    size_t len;
    cr_assert_eq(ir_serialize(g, npu_alloc_default(), &buf, &len, &e), NPU_OK, "%s", e.msg);
    ir_graph *h = NULL;
    cr_assert_eq(ir_deserialize(buf, len, npu_alloc_default(), &h, &e), NPU_OK, "%s", e.msg);
    char *d1 = NULL, *d2 = NULL;
    size_t l1, l2;
    FILE *f1 = open_memstream(&d1, &l1), *f2 = open_memstream(&d2, &l2);
    ir_dump(g, f1);
    ir_dump(h, f2);
    fclose(f1);
    fclose(f2);
    cr_assert_str_eq(d1, d2);
    ir_tensor *w = ir_graph_find(h, "w");
    cr_assert_eq(((int8_t *)w->data)[5], -128);
    cr_assert_eq(w->quant->count, 3);
    cr_assert_float_eq(w->quant->scale[2], 2.0f, 0);
    cr_assert_eq(h->nodes[1]->unit, IR_UNIT_NPU);
    int64_t is[3];
    cr_assert_eq(ir_attr_ints(h->nodes[1], "is", is, 3), 3);
    cr_assert_eq(is[2], 1LL << 40);
    free(d1);
    free(d2);
    free(buf);
    ir_graph_free(g);
    ir_graph_free(h);
}

Test(ir_serial, every_truncation_and_byte_flip_is_rejected_or_valid)
{
    ir_graph *g = quantized_sample();
    npu_err e;
    void *buf;
    size_t len;
    cr_assert_eq(ir_serialize(g, npu_alloc_default(), &buf, &len, &e), NPU_OK);
    for (size_t cut = 0; cut < len; cut++) {
        ir_graph *h = NULL;
        cr_assert_neq(ir_deserialize(buf, cut, npu_alloc_default(), &h, &e), NPU_OK, "cut %zu accepted", cut);
        cr_assert(strstr(e.msg, "graph section"), "%s", e.msg);
    }
    unsigned char *copy = malloc(len);
    for (size_t i = 0; i < len; i++) {
        memcpy(copy, buf, len);
        copy[i] ^= 0xff;
        ir_graph *h = NULL;
        if (ir_deserialize(copy, len, npu_alloc_default(), &h, &e) == NPU_OK)
            ir_graph_free(h); /* a flip inside payload data is still a valid graph */
    }
    free(copy);
    free(buf);
    ir_graph_free(g);
}
