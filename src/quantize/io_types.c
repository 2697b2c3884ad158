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

/* Graph input i, an int8 tensor xq (a pre-quantized model's, or one
 * retyped above), fed from a new input of type want: float32 through a
 * QuantizeLinear, uint8 through DequantizeLinear and QuantizeLinear (exact:
 * (q - zp) * s / s rounds back to q). */
static npu_status feed_int8_input(ir_graph *g, int i, q_io_type want, npu_err *err)
{
    ir_tensor *xq = g->inputs[i], *xf = twin(g, xq, IR_F32, err);
    ir_tensor *xu = xf && want == Q_IO_U8 ? twin(g, xq, IR_U8, err) : NULL;
    if (!xf || (want == Q_IO_U8 && !xu))
        return NPU_EINTERNAL;
    npu_status st = edge_node(g, IR_OP_QUANTIZE_LINEAR, xf, xq, xq->quant, err);
    if (st == NPU_OK && xu)
        st = edge_node(g, IR_OP_DEQUANTIZE_LINEAR, xu, xf, xu->quant, err);
    ir_tensor *bound = xu ? xu : xf;
    xq->flags &= ~(unsigned)IR_TENSOR_INPUT;
    bound->flags |= IR_TENSOR_INPUT;
    g->inputs[i] = bound;
    ir_swap_names(g, xq, bound);
    return st;
}

/* Graph output j, an int8 tensor yq, delivered as want: float32 through a
 * DequantizeLinear, uint8 through DequantizeLinear and QuantizeLinear. */
static npu_status deliver_int8_output(ir_graph *g, int j, q_io_type want, npu_err *err)
{
    ir_tensor *yq = g->outputs[j], *yf = twin(g, yq, IR_F32, err);
    ir_tensor *yu = yf && want == Q_IO_U8 ? twin(g, yq, IR_U8, err) : NULL;
    if (!yf || (want == Q_IO_U8 && !yu))
        return NPU_EINTERNAL;
    npu_status st = edge_node(g, IR_OP_DEQUANTIZE_LINEAR, yq, yf, yq->quant, err);
    if (st == NPU_OK && yu)
        st = edge_node(g, IR_OP_QUANTIZE_LINEAR, yf, yu, yu->quant, err);
    ir_tensor *bound = yu ? yu : yf;
    yq->flags &= ~(unsigned)IR_TENSOR_OUTPUT;
    bound->flags |= IR_TENSOR_OUTPUT;
    g->outputs[j] = bound;
    ir_swap_names(g, yq, bound);
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
        if (!(bound = twin(g, xq, IR_U8, err)))
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
        if (!(bound = twin(g, yq, IR_U8, err)))
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
            st = is_in ? feed_int8_input(g, i, want, err) : deliver_int8_output(g, i, want, err);
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
