/* constfold: a node whose inputs are all constant is evaluated once, by the
 * reference kernels (ref_eval_node), and replaced by its results as
 * constants. Shape folds from the static shape of its input alone, so the
 * Shape/Gather/Concat/Unsqueeze chains of PyTorch exports fold to constants.
 *
 * Not folded:
 * - a fold that would grow constant storage past the size limit (Expand,
 *   Tile, ConstantOfShape of an activation-sized tensor): it costs flash and
 *   DRAM traffic for what the kernel computes cheaply, unless a consumer reads
 *   the result as a shape-like operand (Reshape's shape, Slice's starts, ...),
 *   which later stages need as a constant;
 * - quantization ops (QuantizeLinear, DequantizeLinear, QLinear*): the
 *   quantizer reads the pre-quantized weights they carry;
 * - ops the reference cannot run; a node whose evaluation fails stays for
 *   the run-time kernel (the same error shows there), except when a shape
 *   operand depends on it: then the error is reported here. */
#include "opt/opt_internal.h"

#include <string.h>

#include "ref/ref.h"

/* Inputs whose value determines a consumer's output shape or parameters. */
static bool is_shape_operand(ir_op op, int input)
{
    switch (op) {
    case IR_OP_RESHAPE:
    case IR_OP_EXPAND:
    case IR_OP_TILE:
    case IR_OP_SQUEEZE:
    case IR_OP_UNSQUEEZE:
    case IR_OP_SPLIT:
    case IR_OP_UPSAMPLE:
    case IR_OP_REDUCE_SUM:
    case IR_OP_REDUCE_MEAN:
    case IR_OP_REDUCE_MAX:
    case IR_OP_REDUCE_MIN: return input == 1;
    case IR_OP_CONSTANT_OF_SHAPE: return input == 0;
    case IR_OP_SLICE: return input >= 1;
    case IR_OP_RESIZE: return input >= 1;
    case IR_OP_PAD: return input == 1 || input == 3;
    case IR_OP_RANGE: return true;
    case IR_OP_CLIP: return input >= 1;
    case IR_OP_DROPOUT: return input >= 1;
    default: return false;
    }
}

static bool needed_as_shape(const ir_graph *g, const ir_node *p)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] && n->inputs[j]->producer == p && is_shape_operand(n->op, j))
                return true;
    }
    return false;
}

static bool never_folded(ir_op op)
{
    return op == IR_OP_QUANTIZE_LINEAR || op == IR_OP_DEQUANTIZE_LINEAR || op == IR_OP_QLINEAR_CONV ||
           op == IR_OP_QLINEAR_MATMUL || op == IR_OP_REQUANTIZE || op == IR_OP_LUT;
}

static bool inputs_const(const ir_node *n)
{
    if (n->n_inputs == 0)
        return false;
    for (int j = 0; j < n->n_inputs; j++) {
        const ir_tensor *t = n->inputs[j];
        if (t && (!opt_is_const(t) || t->quant))
            return false;
    }
    return true;
}

static size_t bytes_of(ir_tensor *const *ts, int count, bool outputs)
{
    size_t b = 0;
    for (int j = 0; j < count; j++)
        if (ts[j] && (outputs || ts[j]->data))
            b += ir_tensor_bytes(ts[j]);
    return b;
}

static npu_status fold_shape(ir_graph *g, ir_node *n, npu_err *err)
{
    const ir_tensor *x = n->inputs[0];
    ir_tensor *out = n->outputs[0];
    int64_t r = x->rank;
    int64_t start = ir_attr_int(n, "start", 0), end = ir_attr_int(n, "end", r);
    start = start < 0 ? start + r : start;
    end = end < 0 ? end + r : end;
    start = start < 0 ? 0 : (start > r ? r : start);
    end = end < start ? start : (end > r ? r : end);
    int64_t len = end - start;
    if (out->shape_known && (out->dtype != IR_I64 || out->rank != 1 || out->dims[0] != len))
        return npu_fail(err, NPU_EINTERNAL, "node '%s' (Shape): output shape disagrees with input rank %d",
                        n->name, x->rank);
    out->dtype = IR_I64;
    ir_tensor_set_shape(out, 1, &len);
    if (!(out->data = npu_arena_alloc(g->arena, len ? sizeof(int64_t) * (size_t)len : 1)))
        return npu_fail(err, NPU_EINTERNAL, "out of memory folding '%s'", n->name);
    memcpy(out->data, &x->dims[start], sizeof(int64_t) * (size_t)len);
    return NPU_OK;
}

/* A Constant node left by the importer: its value attribute becomes the data. */
static bool fold_constant_node(ir_graph *g, ir_node *n)
{
    const ir_attr *a = ir_attr_find(n, "value");
    ir_tensor *out = n->outputs[0];
    if (!a || a->kind != IR_ATTR_TENSOR || !a->t || !a->t->data || !out || n->n_outputs != 1)
        return false;
    if (out->shape_known && (out->dtype != a->t->dtype || !ir_shape_equal(out, a->t)))
        return false;
    out->dtype = a->t->dtype;
    ir_tensor_set_shape(out, a->t->rank, a->t->dims);
    size_t nb = ir_tensor_bytes(out);
    if (!(out->data = npu_arena_alloc(g->arena, nb ? nb : 1)))
        return false;
    memcpy(out->data, a->t->data, nb);
    return true;
}

npu_status opt_constfold(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    size_t limit = o && o->fold_limit_bytes ? o->fold_limit_bytes : OPT_FOLD_LIMIT_DEFAULT;
    bool any = false;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || never_folded(n->op) || n->n_outputs < 1)
            continue;
        bool outs_known = true;
        for (int j = 0; j < n->n_outputs; j++)
            outs_known &= !n->outputs[j] || n->outputs[j]->shape_known;
        npu_status st;
        if (n->op == IR_OP_CONSTANT) {
            if (!fold_constant_node(g, n))
                continue;
        } else if (n->op == IR_OP_SHAPE && n->n_inputs == 1 && n->inputs[0] && n->inputs[0]->shape_known &&
            n->n_outputs == 1 && n->outputs[0]) {
            if ((st = fold_shape(g, n, err)) != NPU_OK)
                return st;
        } else {
            if (!outs_known || !inputs_const(n) || !ref_lookup_node(n))
                continue;
            size_t out_b = bytes_of(n->outputs, n->n_outputs, true);
            bool grows = out_b > limit && out_b > bytes_of(n->inputs, n->n_inputs, false);
            if (grows && !needed_as_shape(g, n))
                continue;
            npu_err e = {0}; /* the executor needs a real err; a skipped fold drops it */
            if ((st = ref_eval_node(g, n, &e)) != NPU_OK) {
                if (needed_as_shape(g, n))
                    return npu_fail(err, st, "%s", e.msg);
                continue;
            }
        }
        n->dead = true;
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j])
                n->outputs[j]->producer = NULL;
        any = true;
    }
    if (any)
        ir_graph_compact(g);
    *changed = any;
    return NPU_OK;
}
