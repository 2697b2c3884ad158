/* Model I/O types: the quantized graph's inputs and outputs retyped after
 * quantization (io_types.h). The quantize rewrite leaves each float input x
 * feeding one host QuantizeLinear x -> x:q and each float output y made by
 * a host DequantizeLinear y:q -> y; int8 I/O binds the model to x:q and y:q
 * instead (they take the ONNX names), so those host steps disappear. */
#include "quantize/io_types.h"

#include <string.h>

#include "quantize/quantize_internal.h"

bool q_io_type_parse(const char *s, q_io_type *out)
{
    static const char *const names[] = {"float32", "int8", "uint8"};
    for (int k = 0; k < 3; k++)
        if (strcmp(s, names[k]) == 0) {
            *out = (q_io_type)(Q_IO_F32 + k);
            return true;
        }
    return false;
}

const char *q_io_type_name(q_io_type t)
{
    return t == Q_IO_I8 ? "int8" : t == Q_IO_U8 ? "uint8" : t == Q_IO_F32 ? "float32" : "keep";
}

static ir_dtype io_dtype(q_io_type t)
{
    return t == Q_IO_I8 ? IR_I8 : t == Q_IO_U8 ? IR_U8 : IR_F32;
}

/* A per-tensor int8 scale and zero point usable at the model's edge. */
static bool edge_quant(const ir_tensor *t)
{
    return t && t->dtype == IR_I8 && t->quant && t->quant->axis < 0 && t->quant->count == 1 &&
           !(t->flags & IR_TENSOR_INT4_CODES);
}

/* The live QuantizeLinear reading float input x into a per-tensor int8 tensor. */
static ir_node *quantizer_of(const ir_graph *g, const ir_tensor *x)
{
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (!n->dead && n->op == IR_OP_QUANTIZE_LINEAR && n->inputs[0] == x && edge_quant(n->outputs[0]))
            return n;
    }
    return NULL;
}

/* A host QuantizeLinear (x float -> y) or DequantizeLinear (x -> y float)
 * at y's scale and zero point, its parameters constants as ONNX has them. */
static npu_status edge_node(ir_graph *g, ir_op op, ir_tensor *x, ir_tensor *y, const ir_quant *q, npu_err *err)
{
    float s = q->scale[0];
    ir_dtype qdt = op == IR_OP_QUANTIZE_LINEAR ? y->dtype : x->dtype;
    uint8_t zb[1] = {(uint8_t)q->zero_point[0]}; /* int8 or uint8: the same low byte */
    ir_tensor *ins[3] = {x, ir_const_new(g, NULL, IR_F32, 0, NULL, &s), ir_const_new(g, NULL, qdt, 0, NULL, zb)};
    ir_node *n = ins[1] && ins[2] ? ir_node_new(g, op, NULL, 3, ins, 1, &y) : NULL;
    if (!n)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    n->unit = IR_UNIT_HOST;
    n->unit_reason = "float boundary";
    return NPU_OK;
}

/* A new uint8 tensor like t (the int8 tensor of the same real values). */
static ir_tensor *u8_twin(ir_graph *g, const ir_tensor *t, const ir_quant *q, npu_err *err)
{
    char name[512];
    ir_tensor *u = NULL;
    for (int k = 0; !u && k < 100; k++) {
        snprintf(name, sizeof name, k ? "%s:u8_%d" : "%s:u8", t->name, k);
        if (!ir_graph_find(g, name))
            u = ir_tensor_new(g, name, IR_U8, t->rank, t->dims);
    }
    if (u)
        u->quant = q_quant_tensor(g, q->scale[0], q->zero_point[0] + 128);
    if (!u || !u->quant) {
        npu_fail(err, NPU_EINTERNAL, "out of memory");
        return NULL;
    }
    u->shape_known = true;
    return u;
}

/* Binds graph input i to the integer version of float input x. */
static npu_status retype_input(ir_graph *g, const char *model, int i, q_io_type want, npu_err *err)
{
    ir_tensor *x = g->inputs[i];
    ir_node *qn = quantizer_of(g, x);
    if (!qn)
        return npu_fail(err, NPU_EUSER, "%s: input '%s': --input-type %s: the model uses it only in float (or "
                        "per channel), so it has no int8 scale", model, x->name, q_io_type_name(want));
    ir_tensor *xq = qn->outputs[0], *bound = xq;
    npu_status st = NPU_OK;
    if (want == Q_IO_I8) {
        /* the quantizer turns round: x stays for any float reader, else it dies */
        qn->op = IR_OP_DEQUANTIZE_LINEAR;
        qn->inputs[0] = xq;
        qn->outputs[0] = x;
        x->producer = qn;
        xq->producer = NULL;
        if (ir_use_count(g, x) == 0)
            qn->dead = true;
    } else {
        if (!(bound = u8_twin(g, xq, xq->quant, err)))
            return NPU_EINTERNAL;
        st = edge_node(g, IR_OP_DEQUANTIZE_LINEAR, bound, x, bound->quant, err);
    }
    x->flags &= ~(unsigned)IR_TENSOR_INPUT;
    bound->flags |= IR_TENSOR_INPUT;
    g->inputs[i] = bound;
    ir_swap_names(g, x, bound);
    return st;
}

static npu_status retype_output(ir_graph *g, const char *model, int j, q_io_type want, npu_err *err)
{
    ir_tensor *y = g->outputs[j];
    ir_node *dq = y->producer;
    if (!dq || dq->dead || dq->op != IR_OP_DEQUANTIZE_LINEAR || !edge_quant(dq->inputs[0]))
        return npu_fail(err, NPU_EUSER, "%s: output '%s': --output-type %s: it is computed in float (by %s '%s'), "
                        "so it has no int8 scale", model, y->name, q_io_type_name(want),
                        dq ? ir_op_name(dq->op) : "no node", dq ? dq->name : "");
    ir_tensor *yq = dq->inputs[0], *bound = yq;
    npu_status st = NPU_OK;
    if (want == Q_IO_U8) {
        if (!(bound = u8_twin(g, yq, yq->quant, err)))
            return NPU_EINTERNAL;
        st = edge_node(g, IR_OP_QUANTIZE_LINEAR, y, bound, bound->quant, err);
    } else if (yq->flags & (IR_TENSOR_INPUT | IR_TENSOR_OUTPUT)) {
        return npu_fail(err, NPU_EUSER, "%s: output '%s': its int8 version '%s' is already a model input or output",
                        model, y->name, yq->name);
    }
    y->flags &= ~(unsigned)IR_TENSOR_OUTPUT;
    bound->flags |= IR_TENSOR_OUTPUT;
    g->outputs[j] = bound;
    if (want == Q_IO_I8 && ir_use_count(g, y) == 0)
        dq->dead = true;
    ir_swap_names(g, y, bound);
    return st;
}

npu_status q_set_io_types(ir_graph *g, const char *model, q_io_type in, q_io_type out, npu_err *err)
{
    npu_status st = NPU_OK;
    for (int i = 0; st == NPU_OK && in != Q_IO_KEEP && i < g->n_inputs; i++) {
        ir_dtype have = g->inputs[i]->dtype;
        if (have == io_dtype(in))
            continue;
        if (have != IR_F32)
            st = npu_fail(err, NPU_EUSER, "%s: input '%s' is %s in the model: --input-type %s converts float "
                          "inputs only", model, g->inputs[i]->name, ir_dtype_name(have), q_io_type_name(in));
        else
            st = retype_input(g, model, i, in, err);
    }
    for (int j = 0; st == NPU_OK && out != Q_IO_KEEP && j < g->n_outputs; j++) {
        ir_dtype have = g->outputs[j]->dtype;
        if (have == io_dtype(out))
            continue;
        if (have != IR_F32)
            st = npu_fail(err, NPU_EUSER, "%s: output '%s' is %s in the model: --output-type %s converts float "
                          "outputs only", model, g->outputs[j]->name, ir_dtype_name(have), q_io_type_name(out));
        else
            st = retype_output(g, model, j, out, err);
    }
    if (st == NPU_OK)
        st = ir_graph_toposort(g, err);
    if (st == NPU_OK)
        ir_graph_compact(g);
    return st;
}
