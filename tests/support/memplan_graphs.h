/* Synthetic int8 NCHW graphs (batch 1) for the memory planner's tests and
 * benchmark: shapes only, no weights (the planner reads shapes and edges).
 * Every builder ends with one graph output and returns it. */
#ifndef TESTS_MEMPLAN_GRAPHS_H
#define TESTS_MEMPLAN_GRAPHS_H

#include "ir/ir.h"

static inline ir_tensor *mg_act(ir_graph *g, int64_t c, int64_t h, int64_t w)
{
    int64_t d[4] = {1, c, h, w};
    return ir_tensor_new(g, NULL, IR_I8, 4, d);
}

static inline ir_tensor *mg_input(ir_graph *g, int64_t c, int64_t h, int64_t w)
{
    ir_tensor *t = mg_act(g, c, h, w);
    t->flags |= IR_TENSOR_INPUT;
    return t;
}

/* A node with one output of the given shape. */
static inline ir_tensor *mg_op(ir_graph *g, ir_op op, int n_in, ir_tensor *const *in, int64_t c, int64_t h,
                               int64_t w)
{
    ir_tensor *y = mg_act(g, c, h, w);
    ir_node_new(g, op, NULL, n_in, in, 1, &y);
    return y;
}

static inline ir_tensor *mg_conv(ir_graph *g, ir_tensor *x, int64_t c, int64_t h, int64_t w)
{
    return mg_op(g, IR_OP_CONV, 1, &x, c, h, w);
}

/* Concat along channels of inputs with the same H, W. */
static inline ir_tensor *mg_concat(ir_graph *g, int n, ir_tensor *const *in)
{
    int64_t c = 0;
    for (int i = 0; i < n; i++)
        c += in[i]->dims[1];
    ir_tensor *y = mg_act(g, c, in[0]->dims[2], in[0]->dims[3]);
    ir_node *nd = ir_node_new(g, IR_OP_CONCAT, NULL, n, in, 1, &y);
    ir_set_int(g, nd, "axis", 1);
    return y;
}

static inline ir_tensor *mg_output(ir_tensor *t)
{
    t->flags |= IR_TENSOR_OUTPUT;
    return t;
}

/* input -> n convs (channels alternate c and 2c) -> output */
static inline ir_tensor *mg_chain(ir_graph *g, int n, int64_t c, int64_t hw)
{
    ir_tensor *x = mg_input(g, c, hw, hw);
    for (int i = 0; i < n; i++)
        x = mg_conv(g, x, i % 2 ? c : 2 * c, hw, hw);
    return mg_output(x);
}

/* ResNet basic blocks: y = x + conv(conv(x)), halving H, W every 4 blocks */
static inline ir_tensor *mg_residual(ir_graph *g, int blocks, int64_t c, int64_t hw)
{
    ir_tensor *x = mg_conv(g, mg_input(g, 3, hw, hw), c, hw, hw);
    for (int b = 0; b < blocks; b++) {
        if (b && b % 4 == 0) {
            c *= 2;
            hw /= 2;
            x = mg_conv(g, x, c, hw, hw);
        }
        ir_tensor *a = mg_conv(g, x, c, hw, hw);
        ir_tensor *r = mg_conv(g, a, c, hw, hw);
        x = mg_op(g, IR_OP_ADD, 2, (ir_tensor *[]){x, r}, c, hw, hw);
    }
    return mg_output(mg_op(g, IR_OP_GLOBAL_AVERAGE_POOL, 1, &x, c, 1, 1));
}

/* GoogLeNet-style modules: four branches (1x1; 1x1-3x3; 1x1-5x5; pool-1x1)
 * concatenated. */
static inline ir_tensor *mg_inception(ir_graph *g, int modules, int64_t c, int64_t hw)
{
    ir_tensor *x = mg_conv(g, mg_input(g, 3, hw, hw), c, hw, hw);
    for (int m = 0; m < modules; m++) {
        ir_tensor *b1 = mg_conv(g, x, c / 4, hw, hw);
        ir_tensor *b2 = mg_conv(g, mg_conv(g, x, c / 8, hw, hw), c / 2, hw, hw);
        ir_tensor *b3 = mg_conv(g, mg_conv(g, x, c / 16, hw, hw), c / 8, hw, hw);
        ir_tensor *p = mg_op(g, IR_OP_MAX_POOL, 1, &x, c, hw, hw);
        ir_tensor *b4 = mg_conv(g, p, c / 8, hw, hw);
        x = mg_concat(g, 4, (ir_tensor *[]){b1, b2, b3, b4});
        if (m % 3 == 2 && hw > 4) {
            hw /= 2;
            x = mg_op(g, IR_OP_MAX_POOL, 1, &x, c, hw, hw);
        }
    }
    return mg_output(mg_op(g, IR_OP_GLOBAL_AVERAGE_POOL, 1, &x, c, 1, 1));
}

/* DenseNet blocks as exported from a layer-by-layer model: each layer reads
 * the running concat, computes a bottleneck (4k channels) then k new
 * channels, and appends them: c_i = Concat(c_{i-1}, f_i). A transition (1x1
 * conv to half the channels, 2x2 pool) between blocks. */
static inline ir_tensor *mg_densenet(ir_graph *g, int blocks, int layers, int64_t k, int64_t hw)
{
    ir_tensor *x = mg_conv(g, mg_input(g, 3, hw, hw), 2 * k, hw, hw);
    for (int b = 0; b < blocks; b++) {
        for (int l = 0; l < layers; l++) {
            ir_tensor *h = mg_conv(g, x, 4 * k, hw, hw);
            ir_tensor *f = mg_conv(g, h, k, hw, hw);
            x = mg_concat(g, 2, (ir_tensor *[]){x, f});
        }
        if (b + 1 < blocks) {
            ir_tensor *t = mg_conv(g, x, x->dims[1] / 2, hw, hw);
            hw /= 2;
            x = mg_op(g, IR_OP_AVERAGE_POOL, 1, &t, t->dims[1], hw, hw);
        }
    }
    return mg_output(mg_op(g, IR_OP_GLOBAL_AVERAGE_POOL, 1, &x, x->dims[1], 1, 1));
}

/* About n tensors: a chain with skips and occasional concats of the last
 * tensors, sizes from a fixed-seed generator, so it is the same every run. */
static inline ir_tensor *mg_random(ir_graph *g, int n, uint32_t seed)
{
    ir_tensor **recent = npu_arena_alloc(g->arena, sizeof *recent * (size_t)n);
    int nr = 0;
    recent[nr++] = mg_input(g, 8, 16, 16);
    while (g->n_tensors < n - 1) {
        seed = seed * 1664525u + 1013904223u;
        uint32_t r = seed >> 8;
        ir_tensor *x = recent[nr - 1];
        ir_tensor *y;
        if (r % 7 == 0 && nr >= 3) {
            ir_tensor *a = recent[nr - 2 - (int)((r >> 3) % 2)];
            y = mg_concat(g, 2, (ir_tensor *[]){a, x});
        } else if (r % 5 == 0 && nr >= 4) {
            ir_tensor *s = recent[nr - 4];
            y = mg_op(g, IR_OP_ADD, 2, (ir_tensor *[]){s, x}, x->dims[1], 16, 16);
        } else {
            y = mg_conv(g, x, 4 + (int64_t)((r >> 4) % 29), 16, 16);
        }
        recent[nr++] = y;
    }
    return mg_output(mg_op(g, IR_OP_GLOBAL_AVERAGE_POOL, 1, &recent[nr - 1], recent[nr - 1]->dims[1], 1, 1));
}

#endif
