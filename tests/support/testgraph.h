/* Test helpers: kernel shapes and hand-built IR graphs, written inline:
 *   ir_tensor *x = tg_const(g, "x", IR_F32, 2, (int64_t[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6});
 *   ir_node *n = tg_node(g, IR_OP_ADD, 2, (ir_tensor *[]){x, y}, 1, (ir_tensor *[]){z}); */
#ifndef TESTS_TESTGRAPH_H
#define TESTS_TESTGRAPH_H

#include <stdarg.h>

#include "ir/ir.h"
#include "kernels/nk_common.h"

static inline nk_shape tg_shape(int rank, ...)
{
    nk_shape s = {.rank = rank};
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        s.dims[i] = va_arg(ap, int);
    va_end(ap);
    return s;
}

static inline ir_tensor *tg_const(ir_graph *g, const char *name, ir_dtype dt, int rank, const int64_t *dims,
                                  const void *data)
{
    return ir_const_new(g, name, dt, rank, dims, data);
}

/* An activation with a known shape (what shape inference would give). */
static inline ir_tensor *tg_tensor(ir_graph *g, const char *name, ir_dtype dt, int rank, const int64_t *dims)
{
    static const int64_t none[1] = {0};
    return ir_tensor_new(g, name, dt, rank, rank ? dims : none);
}

static inline ir_node *tg_node(ir_graph *g, ir_op op, int n_in, ir_tensor *const *in, int n_out,
                               ir_tensor *const *out)
{
    return ir_node_new(g, op, NULL, n_in, in, n_out, out);
}

/* Quantization parameters in g's arena: per tensor (count 1) or per axis 0;
 * zps NULL: all zero. */
static inline ir_quant *tg_quant(ir_graph *g, int count, const float *scales, const int32_t *zps)
{
    ir_quant *q = npu_arena_alloc(g->arena, sizeof *q);
    q->axis = count > 1 ? 0 : -1;
    q->count = count;
    q->scale = npu_arena_alloc(g->arena, sizeof(float) * (size_t)count);
    q->zero_point = npu_arena_alloc(g->arena, sizeof(int32_t) * (size_t)count);
    for (int i = 0; i < count; i++) {
        q->scale[i] = scales[i];
        q->zero_point[i] = zps ? zps[i] : 0;
    }
    return q;
}

/* An int8 activation with per-tensor (scale, zp); NULL when the name is taken. */
static inline ir_tensor *tg_act(ir_graph *g, const char *name, int rank, const int64_t *dims, float scale, int32_t zp)
{
    ir_tensor *t = ir_tensor_new(g, name, IR_I8, rank, dims);
    if (t)
        t->quant = tg_quant(g, 1, &scale, &zp);
    return t;
}

/* Makes in[0..n_in) the graph's inputs and out its one output. */
static inline void tg_set_io(ir_graph *g, int n_in, ir_tensor *const *in, ir_tensor *out)
{
    g->inputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *) * (size_t)(n_in ? n_in : 1));
    for (int i = 0; i < n_in; i++) {
        in[i]->flags |= IR_TENSOR_INPUT;
        g->inputs[i] = in[i];
    }
    g->n_inputs = n_in;
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->outputs[0] = out;
    out->flags |= IR_TENSOR_OUTPUT;
    g->n_outputs = 1;
}

#endif
