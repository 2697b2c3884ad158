/* Data movement on int8 codes (Slice, Split, Squeeze, Unsqueeze, Expand,
 * Tile, Pad): each output element is an input element, so the output keeps
 * the input's scale and zero point and no value changes. A constant-mode
 * Pad also writes its pad value: that is exact only when the value is a
 * code on the input's scale (0 is: the zero point). */
#include <math.h>
#include <string.h>

#include "quantize/quantize_internal.h"

/* Pad with constant pads (and axes) and a constant or absent pad value. */
bool q_pad_movable(const ir_node *n)
{
    if (n->n_outputs != 1 || n->n_inputs < 2 || !n->inputs[1] || !n->inputs[1]->data)
        return false;
    for (int i = 2; i < n->n_inputs; i++)
        if (n->inputs[i] && !n->inputs[i]->data)
            return false;
    const ir_tensor *v = n->n_inputs > 2 ? n->inputs[2] : NULL;
    return !v || ir_tensor_numel(v) == 0 || (v->dtype == IR_F32 && ir_tensor_numel(v) == 1);
}

/* The float pad value of a constant-mode Pad (0 when absent). */
static float pad_value(const ir_node *n)
{
    const ir_tensor *v = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (v && ir_tensor_numel(v) == 1 && v->dtype == IR_F32)
        return *(const float *)v->data;
    return 0.0f;
}

static bool constant_mode(const ir_node *n)
{
    return strcmp(ir_attr_string(n, "mode", "constant"), "constant") == 0;
}

bool q_pad_code(const ir_node *n, const ir_quant *q, int32_t *code)
{
    *code = 0;
    if (!constant_mode(n))
        return true; /* reflect and edge copy codes */
    if (!q || q->count != 1)
        return false;
    float v = pad_value(n), s = q->scale[0];
    int32_t zp = q->zero_point[0];
    double c = round((double)v / s) + zp;
    if (c < -128 || c > 127 || (float)((c - zp) * (double)s) != v)
        return false;
    *code = (int32_t)c;
    return true;
}

npu_status q_pad_set_code(ir_graph *g, ir_node *n, int32_t code, npu_err *err)
{
    if (!constant_mode(n))
        return NPU_OK;
    int8_t b = (int8_t)code;
    ir_tensor *v = ir_const_new(g, NULL, IR_I8, 0, NULL, &b);
    if (!v)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    if (n->n_inputs < 3) {
        ir_tensor **in = npu_arena_alloc(g->arena, sizeof *in * 3);
        if (!in)
            return npu_fail(err, NPU_EINTERNAL, "out of memory");
        memcpy(in, n->inputs, sizeof *in * (size_t)n->n_inputs);
        in[2] = NULL;
        n->inputs = in;
        n->n_inputs = 3;
    }
    n->inputs[2] = v;
    return NPU_OK;
}

/* Outputs after the first (Split's parts): integer versions on the input's
 * parameters, as rewrite_node made the first. */
npu_status q_inherit_outputs(q_ctx *c, ir_node *n)
{
    const ir_tensor *x = n->inputs[0];
    for (int j = 1; j < n->n_outputs; j++) {
        ir_tensor *y = n->outputs[j], *yint;
        if (!y)
            continue;
        npu_status st = q_new_int_tensor(c, y, x->quant, &yint);
        if (st != NPU_OK)
            return st;
        yint->flags = (yint->flags & ~(unsigned)IR_TENSOR_INT4_CODES) | (x->flags & IR_TENSOR_INT4_CODES);
        n->outputs[j] = yint;
        yint->producer = n;
        y->producer = NULL;
        if (y->id < c->n_orig_tensors)
            c->qver[y->id] = yint;
    }
    return NPU_OK;
}
