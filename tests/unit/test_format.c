/* src/format: the graph section's nodes read without the IR must be what
 * ir_deserialize reads (the layout is ir_serialize's), and the op-name table
 * generated from src/ir/ops.def must be the IR's. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "ir/ir.h"

Test(format, op_names_are_the_irs)
{
    for (int op = 0; op < IR_OP_COUNT; op++) {
        cr_assert_not_null(fmt_op_name((uint32_t)op), "op %d", op);
        cr_assert_str_eq(fmt_op_name((uint32_t)op), ir_op_name((ir_op)op));
    }
    cr_assert_null(fmt_op_name(IR_OP_COUNT));
    cr_assert_null(fmt_op_name(UINT32_MAX));
}

/* x -> Neg -> a -> Conv(w, quantized, attrs of every kind) -> b -> Relu -> y */
static ir_graph *sample(void)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[4] = {1, 3, 4, 4}, wd[4] = {2, 3, 1, 1};
    ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 4, d), *a = ir_tensor_new(g, "a", IR_F32, 4, d);
    x->flags |= IR_TENSOR_INPUT;
    int64_t od[4] = {1, 2, 4, 4};
    ir_tensor *b = ir_tensor_new(g, "b", IR_F32, 4, od), *y = ir_tensor_new(g, "y", IR_F32, 4, od);
    int8_t w[6] = {1, -2, 3, -4, 5, -128};
    ir_tensor *wt = ir_const_new(g, "w", IR_I8, 4, wd, w);
    ir_quant *q = npu_arena_alloc(g->arena, sizeof *q);
    *q = (ir_quant){.axis = 0, .count = 2};
    q->scale = npu_arena_alloc(g->arena, 8);
    q->zero_point = npu_arena_alloc(g->arena, 8);
    q->scale[0] = 0.5f, q->scale[1] = 0.25f, q->zero_point[0] = q->zero_point[1] = 0;
    wt->quant = q;
    ir_node_new(g, IR_OP_NEG, "neg", 1, &x, 1, &a);
    ir_tensor *cin[2] = {a, wt};
    ir_node *c = ir_node_new(g, IR_OP_CONV, "conv", 2, cin, 1, &b);
    ir_node_new(g, IR_OP_RELU, "relu", 1, &b, 1, &y);
    int64_t is[2] = {1, 1};
    float fs[2] = {1.5f, -2.0f};
    ir_set_ints(g, c, "strides", 2, is);
    ir_set_floats(g, c, "fs", 2, fs);
    ir_set_string(g, c, "auto_pad", "NOTSET");
    ir_set_float(g, c, "alpha", 0.125f);
    ir_set_int(g, c, "group", 1);
    int64_t td[1] = {2};
    int32_t tv[2] = {7, 8};
    ir_set_tensor(g, c, "value", ir_const_new(g, "t", IR_I32, 1, td, tv));
    g->inputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->inputs[0] = x, g->outputs[0] = y, g->n_inputs = g->n_outputs = 1;
    return g;
}

typedef struct seen {
    int n;
    char names[8][16];
    const char *ops[8];
} seen;

static void on_node(void *ud, const char *name, size_t len, const char *op)
{
    seen *s = ud;
    cr_assert_lt(s->n, 8);
    cr_assert_lt(len, 16);
    memcpy(s->names[s->n], name, len);
    s->names[s->n][len] = 0;
    s->ops[s->n++] = op;
}

static void serialized(void **buf, size_t *len, ir_graph **g)
{
    npu_err e;
    *g = sample();
    cr_assert_eq(ir_graph_verify(*g, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(ir_serialize(*g, npu_alloc_default(), buf, len, &e), NPU_OK, "%s", e.msg);
}

Test(format, graph_nodes_match_the_deserialized_graph)
{
    void *buf;
    size_t len;
    ir_graph *g;
    serialized(&buf, &len, &g);
    npu_err e;
    ir_graph *h;
    cr_assert_eq(ir_deserialize(buf, len, npu_alloc_default(), &h, &e), NPU_OK, "%s", e.msg);
    seen s = {0};
    cr_assert_eq(fmt_graph_nodes(buf, len, on_node, &s, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(s.n, h->n_nodes);
    for (int i = 0; i < h->n_nodes; i++) {
        cr_assert_str_eq(s.names[i], h->nodes[i]->name);
        cr_assert_str_eq(s.ops[i], ir_op_name(h->nodes[i]->op));
    }
    cr_assert_str_eq(s.ops[1], "Conv");
    free(buf);
    ir_graph_free(g);
    ir_graph_free(h);
}

Test(format, truncated_or_corrupt_graph_sections_are_errors_with_an_offset)
{
    void *buf;
    size_t len;
    ir_graph *g;
    serialized(&buf, &len, &g);
    /* the nodes end before the graph's input and output indices (4 bytes each) */
    size_t nodes_end = len - 4 * 2;
    for (size_t n = 0; n < nodes_end; n++) {
        seen s = {0};
        npu_err e = {0};
        cr_assert_neq(fmt_graph_nodes(buf, n, on_node, &s, &e), NPU_OK, "prefix of %zu bytes accepted", n);
        cr_assert(strstr(e.msg, "graph section: byte "), "%s", e.msg);
    }
    unsigned char *p = buf;
    memcpy(p + 4, &(uint32_t){2}, 4);
    npu_err e;
    seen s = {0};
    cr_assert_neq(fmt_graph_nodes(buf, len, on_node, &s, &e), NPU_OK);
    cr_assert(strstr(e.msg, "version 2"), "%s", e.msg);
    free(buf);
    ir_graph_free(g);
}
