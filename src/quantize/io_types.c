/* Model I/O types: the quantized graph's inputs and outputs retyped after
 * quantization (io_types.h). The quantize rewrite leaves each float input x
 * feeding one host QuantizeLinear x -> x:q and each float output y made by
 * a host DequantizeLinear y:q -> y; int8 I/O binds the model to x:q and y:q
 * instead (they take the ONNX names), so those host steps disappear; uint8
 * I/O adds a byte flip (npu.Lut) on the NPU. */
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

/* uint8 <-> int8 codes of the same real values (zero points 128 apart) on
 * the NPU: the bytes' top bit flips, an npu.Lut whose table is the identity
 * of bytes (table[k] = (int8)k: out = table[in + 128] with in read as int8). */
static npu_status flip_node(ir_graph *g, ir_tensor *x, ir_tensor *y, npu_err *err)
{
    int8_t tab[256];
    for (int k = 0; k < 256; k++)
        tab[k] = (int8_t)(k - (k >= 128 ? 256 : 0));
    int64_t n = 256;
    ir_tensor *ins[2] = {x, ir_const_new(g, NULL, IR_I8, 1, &n, tab)};
    if (!ins[1] || !ir_node_new(g, IR_OP_LUT, NULL, 2, ins, 1, &y))
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    return NPU_OK;
}

/* A new tensor like int8 t holding the same real values as dtype dt:
 * uint8 codes (zero point + 128) or float32. */
static ir_tensor *twin(ir_graph *g, const ir_tensor *t, ir_dtype dt, npu_err *err)
{
    char name[512];
    ir_tensor *u = NULL;
    const char *tag = dt == IR_U8 ? "u8" : "f";
    for (int k = 0; !u && k < 100; k++) {
        snprintf(name, sizeof name, k ? "%s:%s%d" : "%s:%s", t->name, tag, k);
        if (!ir_graph_find(g, name))
            u = ir_tensor_new(g, name, dt, t->rank, t->dims);
    }
    if (u && dt == IR_U8 && !(u->quant = q_quant_tensor(g, t->quant->scale[0], t->quant->zero_point[0] + 128)))
        u = NULL;
    if (!u) {
        npu_fail(err, NPU_EINTERNAL, "out of memory");
        return NULL;
    }
    u->shape_known = true;
    return u;
}

/* Graph input (or output) k, an int8 tensor q (a pre-quantized model's, or
 * one retyped below), bound to a new tensor of type want: float32 through a
 * QuantizeLinear (a DequantizeLinear for an output), uint8 through a byte
 * flip. The new tensor takes q's name and place in the graph's I/O list. */
static npu_status rebind_int8_io(ir_graph *g, bool input, int k, q_io_type want, npu_err *err)
{
    ir_tensor **slot = input ? &g->inputs[k] : &g->outputs[k];
    ir_tensor *q = *slot, *bound = twin(g, q, io_dtype(want), err);
    if (!bound)
        return NPU_EINTERNAL;
    ir_tensor *from = input ? bound : q, *to = input ? q : bound;
    npu_status st = want == Q_IO_U8 ? flip_node(g, from, to, err)
                                    : edge_node(g, input ? IR_OP_QUANTIZE_LINEAR : IR_OP_DEQUANTIZE_LINEAR, from, to,
                                                q->quant, err);
    unsigned flag = input ? IR_TENSOR_INPUT : IR_TENSOR_OUTPUT;
    q->flags &= ~flag;
    bound->flags |= flag;
    *slot = bound;
    ir_swap_names(g, q, bound);
    return st;
}

/* Binds graph input i to the integer version of float input x. */
static npu_status retype_input(ir_graph *g, const char *model, int i, q_io_type want, npu_err *err)
{
    ir_tensor *x = g->inputs[i];
    ir_node *qn = quantizer_of(g, x);
    if (!qn)
        return npu_fail(err, NPU_EUSER, "%s: input '%s': --input-type %s: the model uses it only in float (or "
                        "per channel), so it has no int8 scale", model, x->name, q_io_type_name(want));
    ir_tensor *xq = qn->outputs[0];
    /* the quantizer turns round: x stays for any float reader, else it dies */
    qn->op = IR_OP_DEQUANTIZE_LINEAR;
    qn->inputs[0] = xq;
    qn->outputs[0] = x;
    x->producer = qn;
    xq->producer = NULL;
    if (ir_use_count(g, x) == 0)
        qn->dead = true;
    x->flags &= ~(unsigned)IR_TENSOR_INPUT;
    xq->flags |= IR_TENSOR_INPUT;
    g->inputs[i] = xq;
    ir_swap_names(g, x, xq);
    return want == Q_IO_U8 ? rebind_int8_io(g, true, i, want, err) : NPU_OK;
}

static npu_status retype_output(ir_graph *g, const char *model, int j, q_io_type want, npu_err *err)
{
    ir_tensor *y = g->outputs[j];
    ir_node *dq = y->producer;
    if (!dq || dq->dead || dq->op != IR_OP_DEQUANTIZE_LINEAR || !edge_quant(dq->inputs[0]))
        return npu_fail(err, NPU_EUSER, "%s: output '%s': --output-type %s: it is computed in float (by %s '%s'), "
                        "so it has no int8 scale", model, y->name, q_io_type_name(want),
                        dq ? ir_op_name(dq->op) : "no node", dq ? dq->name : "");
    ir_tensor *yq = dq->inputs[0];
    if (yq->flags & (IR_TENSOR_INPUT | IR_TENSOR_OUTPUT))
        return npu_fail(err, NPU_EUSER, "%s: output '%s': its int8 version '%s' is already a model input or output",
                        model, y->name, yq->name);
    y->flags &= ~(unsigned)IR_TENSOR_OUTPUT;
    yq->flags |= IR_TENSOR_OUTPUT;
    g->outputs[j] = yq;
    if (ir_use_count(g, y) == 0)
        dq->dead = true;
    ir_swap_names(g, y, yq);
    return want == Q_IO_U8 ? rebind_int8_io(g, false, j, want, err) : NPU_OK;
}

npu_status q_set_io_types(ir_graph *g, const char *model, const q_io_type *in, const q_io_type *out, npu_err *err)
{
    npu_status st = NPU_OK;
    for (int k = 0; st == NPU_OK && k < g->n_inputs + g->n_outputs; k++) {
        bool is_in = k < g->n_inputs;
        int i = is_in ? k : k - g->n_inputs;
        q_io_type want = is_in ? in[i] : out[i];
        ir_tensor *t = is_in ? g->inputs[i] : g->outputs[i];
        if (want == Q_IO_KEEP || t->dtype == io_dtype(want))
            continue;
        if (t->dtype == IR_F32)
            st = is_in ? retype_input(g, model, i, want, err) : retype_output(g, model, i, want, err);
        else if (edge_quant(t))
            st = rebind_int8_io(g, is_in, i, want, err);
        else
            st = npu_fail(err, NPU_EUSER, "%s: %s '%s' is %s%s: --%s-type %s converts float32 and per-tensor "
                          "quantized int8 only", model, is_in ? "input" : "output", t->name,
                          ir_dtype_name(t->dtype), t->quant ? " quantized per channel" : " without a scale",
                          is_in ? "input" : "output", q_io_type_name(want));
    }
    if (st == NPU_OK)
        st = ir_graph_toposort(g, err);
    if (st == NPU_OK)
        ir_graph_compact(g);
    return st;
}
