/* Data movement in the quantizer (src/quantize/qmove.c): which ops keep
 * their input's codes, a Split's every part, a Pad's value as a code. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "quantize/quantize_internal.h"

static ir_graph *new_graph(void)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    cr_assert_not_null(g);
    g->opset = 13;
    return g;
}

static ir_tensor *f32(ir_graph *g, const char *name, int rank, const int64_t *dims)
{
    ir_tensor *t = ir_tensor_new(g, name, IR_F32, rank, dims);
    cr_assert_not_null(t);
    return t;
}

static ir_tensor *i64c(ir_graph *g, const char *name, int n, const int64_t *v)
{
    ir_tensor *t = ir_const_new(g, name, IR_I64, 1, (int64_t[]){n}, v);
    cr_assert_not_null(t);
    return t;
}

static void io(ir_graph *g, ir_tensor *x, ir_tensor *const *ys, int n_y)
{
    x->flags |= IR_TENSOR_INPUT;
    g->inputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->inputs[0] = x;
    g->n_inputs = 1;
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *) * (size_t)n_y);
    for (int i = 0; i < n_y; i++) {
        ys[i]->flags |= IR_TENSOR_OUTPUT;
        g->outputs[i] = ys[i];
    }
    g->n_outputs = n_y;
}

Test(quantize_move, data_movement_keeps_its_inputs_codes)
{
    ir_graph *g = new_graph();
    int64_t d[4] = {1, 4, 2, 2}, e[5] = {1, 1, 4, 2, 2};
    ir_tensor *x = f32(g, "x", 4, d), *y = f32(g, "y", 4, d), *u = f32(g, "u", 5, e);
    ir_tensor *two[2] = {x, i64c(g, "c", 1, (int64_t[]){0})};
    const ir_op same[] = {IR_OP_SLICE, IR_OP_SQUEEZE, IR_OP_EXPAND, IR_OP_TILE, IR_OP_SPLIT};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        ir_node *n = ir_node_new(g, same[i], NULL, 2, two, 1, &y);
        cr_assert_eq(q_classify(n), Q_KIND_INHERIT, "%s", ir_op_name(same[i]));
        n->dead = true;
    }
    ir_node *un = ir_node_new(g, IR_OP_UNSQUEEZE, NULL, 2, two, 1, &u);
    cr_assert_eq(q_classify(un), Q_KIND_INHERIT);
    un->dead = true;
    ir_tensor *pads = i64c(g, "pads", 8, (int64_t[]){0, 0, 1, 1, 0, 0, 1, 1});
    ir_tensor *pin[2] = {x, pads}, *apin[2] = {x, f32(g, "runtime_pads", 1, (int64_t[]){8})};
    ir_node *pad = ir_node_new(g, IR_OP_PAD, NULL, 2, pin, 1, &y);
    cr_assert_eq(q_classify(pad), Q_KIND_INHERIT, "constant pads");
    ir_node *apad = ir_node_new(g, IR_OP_PAD, NULL, 2, apin, 1, &y);
    cr_assert_eq(q_classify(apad), Q_KIND_FLOAT, "pads known only at run time");
    pad->dead = apad->dead = true;
    ir_graph_free(g);
}

/* x[1,6,2,2] -> Split(axis 1) -> three graph outputs */
Test(quantize_move, every_part_of_a_split_is_an_integer_version)
{
    ir_graph *g = new_graph();
    int64_t d[4] = {1, 6, 2, 2}, p[4] = {1, 2, 2, 2};
    ir_tensor *x = f32(g, "x", 4, d), *parts[3];
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "y%d", i);
        parts[i] = f32(g, name, 4, p);
    }
    ir_node *sp = ir_node_new(g, IR_OP_SPLIT, "split", 1, &x, 3, parts);
    ir_set_int(g, sp, "axis", 1);
    io(g, x, parts, 3);
    float lo[16] = {0}, hi[16] = {0};
    lo[x->id] = -1.0f, hi[x->id] = 3.0f;
    q_options o = {.wbits = 8, .abits = 8};
    npu_err err;
    cr_assert_eq(q_quantize(g, lo, hi, &o, &err), NPU_OK, "%s", err.msg);
    const ir_node *s = NULL;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->op == IR_OP_SPLIT)
            s = g->nodes[i];
    cr_assert_not_null(s);
    cr_assert_eq(s->inputs[0]->dtype, IR_I8);
    for (int i = 0; i < 3; i++) {
        const ir_tensor *yi = s->outputs[i];
        cr_assert_eq(yi->dtype, IR_I8, "part %d", i);
        cr_assert(q_same_quant(yi->quant, s->inputs[0]->quant), "part %d keeps the input's codes", i);
        cr_assert_eq(parts[i]->producer->op, IR_OP_DEQUANTIZE_LINEAR, "part %d", i);
        cr_assert_eq(parts[i]->producer->inputs[0], yi, "part %d", i);
    }
    cr_assert_eq(ir_graph_verify(g, &err), NPU_OK, "%s", err.msg);
    ir_graph_free(g);
}

/* x (range [-1, 3]: scale 4/255, zero point -64) -> Pad(value) -> y */
static const ir_node *quantized_pad(ir_graph *g, int value_kind, float *scale)
{
    int64_t d[4] = {1, 2, 3, 3}, pd[4] = {1, 2, 5, 5};
    ir_tensor *x = f32(g, "x", 4, d), *y = f32(g, "y", 4, pd);
    q_params_from_range(-1.0f, 3.0f, 8, scale, &(int32_t){0});
    float v = value_kind == 1 ? 1.0f : 2.0f * *scale; /* 1.0 is no code; 2 * scale is */
    ir_tensor *in[3] = {x, i64c(g, "pads", 8, (int64_t[]){0, 0, 1, 1, 0, 0, 1, 1}),
                        value_kind ? ir_const_new(g, "v", IR_F32, 0, NULL, &v) : NULL};
    ir_node *n = ir_node_new(g, IR_OP_PAD, "pad", value_kind ? 3 : 2, in, 1, &y);
    ir_set_string(g, n, "mode", "constant");
    io(g, x, &y, 1);
    float lo[16] = {0}, hi[16] = {0};
    lo[x->id] = lo[y->id] = -1.0f, hi[x->id] = hi[y->id] = 3.0f;
    q_options o = {.wbits = 8, .abits = 8};
    npu_err err;
    cr_assert_eq(q_quantize(g, lo, hi, &o, &err), NPU_OK, "%s", err.msg);
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->op == IR_OP_PAD)
            return g->nodes[i];
    cr_assert_fail("no Pad");
    return NULL;
}

Test(quantize_move, a_pad_value_becomes_its_code_or_the_pad_stays_float)
{
    for (int kind = 0; kind < 3; kind++) { /* absent (0), 1.0, 2 * scale */
        ir_graph *g = new_graph();
        float s;
        const ir_node *n = quantized_pad(g, kind, &s);
        if (kind == 1) {
            cr_assert_eq(n->inputs[0]->dtype, IR_F32, "1.0 at scale %g is no code: float", (double)s);
        } else {
            cr_assert_eq(n->inputs[0]->dtype, IR_I8, "kind %d", kind);
            cr_assert_eq(n->inputs[0]->quant->zero_point[0], -64);
            cr_assert(q_same_quant(n->outputs[0]->quant, n->inputs[0]->quant));
            cr_assert_eq(n->n_inputs, 3);
            const ir_tensor *v = n->inputs[2];
            cr_assert_eq(v->dtype, IR_I8);
            cr_assert_eq(*(const int8_t *)v->data, kind == 0 ? -64 : -62, "kind %d: code %d", kind,
                         *(const int8_t *)v->data);
        }
        ir_graph_free(g);
    }
}
