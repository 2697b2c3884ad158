/* Pre-quantized (QDQ) ONNX models -> the quantized graph of docs/numerics.md,
 * with the model's own scales and no calibration. A QDQ model writes each
 * integer op as float between DequantizeLinear of its int8 inputs (and of
 * its int8 weights / int32 bias constants) and QuantizeLinear of its output.
 * Each op with that shape becomes the integer op itself: it reads the int8
 * tensors the DQs read and writes the int8 tensor the Q wrote. The QDQ
 * nodes left are the float boundaries (Q of a graph input, DQ of a graph
 * output or of a float op's input), which the rest of the compiler expects.
 * uint8 activations become int8 with the zero point moved by -128 (exact). */
#include <math.h>
#include <string.h>

#include "quantize/quantize_internal.h"

static bool is_qdq(ir_op op)
{
    return op == IR_OP_QUANTIZE_LINEAR || op == IR_OP_DEQUANTIZE_LINEAR;
}

/* A QuantizeLinear whose scale is a graph input is a run-time conversion (a
 * float op with an integer output, run on the host), not a QDQ boundary. */
static bool qdq_scale_is_const(const ir_node *n)
{
    return n->n_inputs > 1 && n->inputs[1] && n->inputs[1]->data;
}

bool q_graph_is_qdq(const ir_graph *g)
{
    /* a QuantizeLinear of activations: DQ of constants alone is weight-only
     * quantization, which still needs activation ranges from calibration */
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead && ((g->nodes[i]->op == IR_OP_QUANTIZE_LINEAR && qdq_scale_is_const(g->nodes[i])) ||
                                   g->nodes[i]->op == IR_OP_QLINEAR_CONV || g->nodes[i]->op == IR_OP_QLINEAR_MATMUL))
            return true;
    return false;
}

static npu_status oom(npu_err *err)
{
    return npu_fail(err, NPU_EINTERNAL, "out of memory");
}

/* Scale s and zero point z (may be NULL) of x as an ir_quant: per tensor,
 * or per channel along axis; uint8 zero points moved to int8. n: for messages. */
static npu_status params_quant(ir_graph *g, const ir_node *n, const ir_tensor *x, const ir_tensor *s,
                               const ir_tensor *z, int64_t axis_attr, bool u8, ir_quant **out, npu_err *err)
{
    int32_t shift = u8 ? -128 : 0; /* uint8 codes become int8 ones */
    if (!s || !s->data || s->dtype != IR_F32 || (z && !z->data))
        return npu_fail(err, NPU_EUSER, "node '%s' (%s): scale and zero point must be constants", n->name,
                        ir_op_name(n->op));
    int64_t cnt = ir_tensor_numel(s);
    int axis = -1;
    if (cnt > 1) {
        int64_t a = axis_attr;
        if (a < 0)
            a += x->rank;
        if (a < 0 || a >= x->rank || x->dims[a] != cnt)
            return npu_fail(err, NPU_EUSER, "node '%s' (%s): %lld scales do not match the axis", n->name,
                            ir_op_name(n->op), (long long)cnt);
        axis = (int)a;
    }
    if (z && ir_tensor_numel(z) != cnt)
        return npu_fail(err, NPU_EUSER, "node '%s' (%s): zero point and scale counts differ", n->name,
                        ir_op_name(n->op));
    ir_quant *q = q_quant_new(g, axis, (int)cnt);
    if (!q)
        return oom(err);
    for (int64_t k = 0; k < cnt; k++) {
        q->scale[k] = ((const float *)s->data)[k];
        int32_t zp = shift; /* no zero point: 0 in x's type */
        if (z && z->dtype == IR_I8)
            zp = ((const int8_t *)z->data)[k];
        else if (z && z->dtype == IR_U8)
            zp = ((const uint8_t *)z->data)[k] - 128;
        else if (z && z->dtype == IR_I32)
            zp = ((const int32_t *)z->data)[k];
        else if (z)
            return npu_fail(err, NPU_EUSER, "node '%s' (%s): zero point type %s: supported are int8 and uint8",
                            n->name, ir_op_name(n->op), ir_dtype_name(z->dtype));
        if (!(q->scale[k] > 0) || !isfinite(q->scale[k]))
            return npu_fail(err, NPU_EUSER, "node '%s' (%s): scale %g is not positive", n->name, ir_op_name(n->op),
                            (double)q->scale[k]);
        q->zero_point[k] = zp;
    }
    *out = q;
    return NPU_OK;
}

/* uint8 tensors of a Q/DQ become int8: the Q node's zero point input too. */
/* The (scale, zero point) of a Q/DQ node. */
static npu_status node_quant(ir_graph *g, const ir_node *n, const ir_tensor *x, bool u8, ir_quant **out,
                             npu_err *err)
{
    return params_quant(g, n, x, n->inputs[1], n->n_inputs > 2 ? n->inputs[2] : NULL, ir_attr_int(n, "axis", 1),
                        u8, out, err);
}

static npu_status to_int8(ir_node *n, ir_tensor *t, npu_err *err)
{
    if (t->dtype == IR_I8)
        return NPU_OK;
    if (t->dtype != IR_U8)
        return npu_fail(err, NPU_EUSER, "node '%s' (%s): %s activations: supported are int8 and uint8", n->name,
                        ir_op_name(n->op), ir_dtype_name(t->dtype));
    t->dtype = IR_I8;
    if (t->data) {
        uint8_t *u = t->data;
        for (int64_t i = 0; i < ir_tensor_numel(t); i++)
            ((int8_t *)u)[i] = (int8_t)(u[i] - 128);
    }
    return NPU_OK;
}

/* Every Q/DQ node reading or writing an int8 tensor: the tensor gets the
 * node's parameters; uint8 becomes int8 (zero point constants rewritten). */
static npu_status annotate(ir_graph *g, const bool *u8, npu_err *err)
{
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || !is_qdq(n->op))
            continue;
        ir_tensor *qt = n->op == IR_OP_QUANTIZE_LINEAR ? n->outputs[0] : n->inputs[0];
        if (qt->dtype == IR_I32 && qt->data)
            continue; /* a bias: read where its op is converted */
        ir_quant *q;
        bool was_u8 = u8[qt->id];
        npu_status st = node_quant(g, n, qt, was_u8, &q, err);
        if (st == NPU_OK && qt->data && qt->quant && !q_same_quant(qt->quant, q)) {
            /* a constant that DQs of other parameters read (the opt passes' cse merged equal codes, two
             * Muls' scalars): this DQ gets its own copy, as the model had */
            ir_tensor *own = ir_const_new(g, NULL, qt->dtype, qt->rank, qt->dims, qt->data);
            if (!own)
                return oom(err);
            n->inputs[0] = own;
            qt = own;
        }
        if (st == NPU_OK)
            st = to_int8(n, qt, err);
        if (st != NPU_OK)
            return st;
        if (qt->quant && !qt->data && !q_same_quant(qt->quant, q))
            return npu_fail(err, NPU_EUSER, "tensor '%s': its QuantizeLinear and DequantizeLinear nodes disagree "
                            "on the scale or zero point", qt->name);
        qt->quant = q;
        if (was_u8) { /* the node's own zero point input, now int8 (added when it had none) */
            int8_t zi = (int8_t)q->zero_point[0];
            if (q->count != 1)
                return npu_fail(err, NPU_EUSER, "node '%s' (%s): per-axis uint8 activations are not supported",
                                n->name, ir_op_name(n->op));
            ir_tensor *nz = ir_const_new(g, NULL, IR_I8, 0, NULL, &zi);
            ir_tensor **in = npu_arena_alloc(g->arena, 3 * sizeof *in);
            if (!nz || !in)
                return oom(err);
            in[0] = n->inputs[0], in[1] = n->inputs[1], in[2] = nz;
            n->inputs = in;
            n->n_inputs = 3;
        }
    }
    return NPU_OK;
}

/* The DequantizeLinear producing x, or NULL. */
static ir_node *dq_of(const ir_tensor *x)
{
    return x && x->producer && !x->producer->dead && x->producer->op == IR_OP_DEQUANTIZE_LINEAR ? x->producer
                                                                                                 : NULL;
}

/* The one QuantizeLinear reading y (and nothing else), or NULL. */
static ir_node *sole_q_reader(const ir_graph *g, const ir_tensor *y)
{
    if (y->flags & IR_TENSOR_OUTPUT)
        return NULL;
    ir_node *q = NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        for (int k = 0; !n->dead && k < n->n_inputs; k++) {
            if (n->inputs[k] != y)
                continue;
            if (q || n->op != IR_OP_QUANTIZE_LINEAR || k != 0)
                return NULL;
            q = n;
        }
    }
    return q;
}

/* Conv / Gemm / MatMul: int8 symmetric weights [N, K] (Gemm) or OIHW per
 * output channel; bias rescaled to in_scale * w_scale[c] (exact when the
 * model's bias scale is that already, as QDQ exporters write it). */
static npu_status weighted(ir_graph *g, ir_node *n, const ir_quant *bq0, npu_err *err)
{
    ir_tensor *w = n->inputs[1];
    if (!w || !w->data || w->dtype != IR_I8 || !w->quant)
        return npu_fail(err, NPU_EUSER, "node '%s' (%s): weights must be int8 constants behind DequantizeLinear",
                        n->name, ir_op_name(n->op));
    bool gemm_like = n->op != IR_OP_CONV;
    bool trans = gemm_like && !(n->op == IR_OP_GEMM && ir_attr_int(n, "transB", 0));
    if (gemm_like && (w->rank != 2 || n->inputs[0]->rank != 2 || ir_attr_int(n, "transA", 0) ||
                      ir_attr_float(n, "alpha", 1) != 1 || ir_attr_float(n, "beta", 1) != 1))
        return npu_fail(err, NPU_EUSER, "node '%s' (%s): supported are 2-D inputs, transA 0, alpha = beta = 1",
                        n->name, ir_op_name(n->op));
    int64_t oc = trans ? w->dims[1] : w->dims[0], per = ir_tensor_numel(w) / (oc ? oc : 1);
    int ch_axis = trans ? 1 : 0;
    const ir_quant *wq0 = w->quant;
    if (wq0->axis >= 0 && wq0->axis != ch_axis)
        return npu_fail(err, NPU_EUSER, "node '%s' (%s): weight scales along axis %d, not the output channels",
                        n->name, ir_op_name(n->op), wq0->axis);
    ir_quant *wq = q_quant_new(g, 0, (int)oc);
    int64_t wd[IR_MAX_RANK];
    memcpy(wd, w->dims, sizeof wd);
    if (trans)
        wd[0] = oc, wd[1] = per;
    ir_tensor *wt = wq ? ir_const_new(g, NULL, IR_I8, w->rank, wd, NULL) : NULL;
    if (!wt)
        return oom(err);
    const int8_t *src = w->data;
    int8_t *dst = wt->data;
    for (int64_t c = 0; c < oc; c++) {
        int k = wq0->axis >= 0 ? (int)c : 0;
        if (wq0->zero_point[k] != 0)
            return npu_fail(err, NPU_EUSER, "node '%s' (%s): weight zero point %d: weights must be symmetric",
                            n->name, ir_op_name(n->op), (int)wq0->zero_point[k]);
        wq->scale[c] = wq0->scale[k];
        wq->zero_point[c] = 0;
        for (int64_t j = 0; j < per; j++) {
            int8_t v = trans ? src[j * oc + c] : src[c * per + j];
            dst[c * per + j] = v;
        }
    }
    wt->quant = wq;
    n->inputs[1] = wt;
    if (gemm_like) {
        n->op = IR_OP_GEMM;
        if (!ir_set_int(g, n, "transB", 1))
            return oom(err);
    }
    ir_tensor *b = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (!b)
        return NPU_OK;
    if (!b->data || ir_tensor_numel(b) != oc || (bq0 ? b->dtype != IR_I32 : b->dtype != IR_F32))
        return npu_fail(err, NPU_EUSER, "node '%s' (%s): the bias must be an int32 constant behind "
                        "DequantizeLinear (or float), one per output channel", n->name, ir_op_name(n->op));
    ir_tensor *bt = ir_const_new(g, NULL, IR_I32, 1, &oc, NULL);
    ir_quant *bq = bt ? q_quant_new(g, 0, (int)oc) : NULL;
    if (!bq)
        return oom(err);
    float s_in = n->inputs[0]->quant->scale[0];
    for (int64_t c = 0; c < oc; c++) {
        double real = bq0 ? ((double)((const int32_t *)b->data)[c] - bq0->zero_point[bq0->axis >= 0 ? c : 0]) *
                                (double)bq0->scale[bq0->axis >= 0 ? c : 0]
                          : (double)((const float *)b->data)[c];
        double s = (double)s_in * wq->scale[c], r = round(real / s);
        ((int32_t *)bt->data)[c] = (int32_t)(r < -2147483647.0 ? -2147483647.0 : r > 2147483647.0 ? 2147483647.0 : r);
        bq->scale[c] = (float)s;
        bq->zero_point[c] = 0;
    }
    bt->quant = bq;
    n->inputs[2] = bt;
    return NPU_OK;
}

/* QLinearConv / QLinearMatMul (the QOperator form): the Conv / MatMul by
 * constant weights with the node's own parameters. MaxPool and reshapes
 * between them (no Q of their own) keep their input's. */
static npu_status qlinear(ir_graph *g, ir_node *n, const bool *u8, npu_err *err)
{
    bool conv = n->op == IR_OP_QLINEAR_CONV;
    ir_tensor *x = n->inputs[0], *w = n->inputs[3], *y = n->outputs[0];
    ir_tensor *b = conv && n->n_inputs > 8 ? n->inputs[8] : NULL;
    if (!w || !w->data)
        return npu_fail(err, NPU_EUSER, "node '%s' (%s): the weights (input 3) must be a constant", n->name,
                        ir_op_name(n->op));
    ir_quant *xq, *wq, *yq;
    npu_status st = params_quant(g, n, x, n->inputs[1], n->inputs[2], -1, u8[x->id], &xq, err);
    if (st == NPU_OK)
        st = params_quant(g, n, w, n->inputs[4], n->inputs[5], conv ? 0 : w->rank - 1, u8[w->id], &wq, err);
    if (st == NPU_OK)
        st = params_quant(g, n, y, n->inputs[6], n->inputs[7], -1, u8[y->id], &yq, err);
    if (st == NPU_OK && x->quant && !q_same_quant(x->quant, xq))
        st = npu_fail(err, NPU_EUSER, "node '%s' (%s): its input's scale or zero point differs from the producer's",
                      n->name, ir_op_name(n->op));
    if (st == NPU_OK && xq->axis >= 0)
        st = npu_fail(err, NPU_EUSER, "node '%s' (%s): activations must be quantized per tensor", n->name,
                      ir_op_name(n->op));
    if (st == NPU_OK)
        st = to_int8(n, x, err);
    if (st == NPU_OK)
        st = to_int8(n, w, err);
    if (st == NPU_OK)
        st = to_int8(n, y, err);
    ir_quant *bq = b ? q_quant_new(g, wq->axis >= 0 ? 0 : -1, wq->count) : NULL;
    ir_tensor **in = npu_arena_alloc(g->arena, 3 * sizeof *in);
    if (st != NPU_OK)
        return st;
    if (!in || (b && !bq))
        return oom(err);
    for (int c = 0; bq && c < bq->count; c++) {
        bq->scale[c] = (float)((double)xq->scale[0] * wq->scale[c]); /* ONNX: bias at x_scale * w_scale */
        bq->zero_point[c] = 0;
    }
    x->quant = xq, w->quant = wq, y->quant = yq;
    in[0] = x, in[1] = w, in[2] = b;
    n->inputs = in;
    n->n_inputs = b ? 3 : 2;
    n->op = conv ? IR_OP_CONV : IR_OP_MATMUL;
    if (!conv && (w->rank != 2 || x->rank != 2))
        return npu_fail(err, NPU_EUSER, "node '%s' (QLinearMatMul): supported are 2-D input and weights", n->name);
    return weighted(g, n, bq, err);
}

/* DQ -> n -> Q: n becomes its integer form. An op without one stays float
 * between its DQs and Q (a float island); an op with one that the model's
 * parameters do not fit is an error naming it. */
/* A Split whose input a DQ gives and whose every part a Q of that input's
 * parameters alone reads (a channel split as exporters write it): the
 * integer Split, where it would move float32 between the DQ and the Qs. */
static void convert_split(const ir_graph *g, ir_node *n)
{
    enum { MAX_PARTS = 64 };
    ir_node *dq = dq_of(n->inputs[0]), *qs[MAX_PARTS];
    const ir_quant *xq = dq ? dq->inputs[0]->quant : NULL;
    if (!xq || dq->inputs[0]->dtype != IR_I8 || n->n_outputs > MAX_PARTS)
        return;
    for (int k = 0; k < n->n_outputs; k++) {
        qs[k] = n->outputs[k] ? sole_q_reader(g, n->outputs[k]) : NULL;
        if (!qs[k] || !qs[k]->outputs[0]->quant || !q_same_quant(qs[k]->outputs[0]->quant, xq))
            return;
    }
    n->inputs[0] = dq->inputs[0];
    for (int k = 0; k < n->n_outputs; k++) {
        n->outputs[k] = qs[k]->outputs[0];
        n->outputs[k]->producer = n;
        qs[k]->dead = true;
    }
}

static npu_status convert(q_ctx *c, ir_node *n, ir_node *q)
{
    enum { MAX_IN = 8 };
    ir_tensor *orig[MAX_IN] = {0};
    if (n->n_inputs > MAX_IN)
        return NPU_OK;
    for (int i = 0; i < n->n_inputs; i++) {
        orig[i] = n->inputs[i];
        ir_node *dq = dq_of(orig[i]);
        if (dq)
            n->inputs[i] = dq->inputs[0];
        else if (orig[i] && !orig[i]->data) {
            memcpy(n->inputs, orig, sizeof *orig * (size_t)i);
            return NPU_OK; /* an activation not from a DQ: stays float */
        }
    }
    q_kind k = q_classify(n);
    int32_t pad_code = 0;
    /* a QDQ Softmax, LayerNorm or ReduceMean keeps its float form (no host kernel for their integer one);
     * one Q after the node: a Split's other parts stay float; a Pad's value must be a code */
    bool ok = k != Q_KIND_FLOAT && k != Q_KIND_ROWNORM && n->op != IR_OP_REDUCE_MEAN &&
              (k != Q_KIND_INHERIT || n->n_outputs == 1) &&
              (n->op != IR_OP_PAD || q_pad_code(n, q->outputs[0]->quant, &pad_code));
    for (int i = 0; ok && i < n->n_inputs; i++) {
        const ir_tensor *x = n->inputs[i];
        bool bias = k == Q_KIND_WEIGHTED && i == 2;
        if (x && x != orig[i] && !(x->dtype == IR_I8 || (bias && x->dtype == IR_I32)))
            ok = false;
        if (ok && x && !x->data && x->quant->axis >= 0)
            return npu_fail(c->err, NPU_EUSER, "node '%s' (%s): input '%s' is quantized per axis; activations "
                            "must be per tensor", n->name, ir_op_name(n->op), x->name);
    }
    if (!ok) {
        memcpy(n->inputs, orig, sizeof *orig * (size_t)n->n_inputs);
        return NPU_OK;
    }
    ir_tensor *y = q->outputs[0];
    n->outputs[0] = y;
    y->producer = n;
    q->dead = true;
    switch (k) {
    case Q_KIND_WEIGHTED: {
        ir_node *bdq = n->n_inputs > 2 ? dq_of(orig[2]) : NULL;
        ir_quant *bq = NULL;
        npu_status st = bdq ? node_quant(c->g, bdq, bdq->inputs[0], false, &bq, c->err) : NPU_OK;
        return st == NPU_OK ? weighted(c->g, n, bq, c->err) : st;
    }
    case Q_KIND_BINARY: return q_binary_consts(c, n);
    case Q_KIND_LUT: return q_lut(c, n, y);
    case Q_KIND_CONCAT: return q_concat_inputs(c, n);
    case Q_KIND_INHERIT:
        if (!q_same_quant(n->inputs[0]->quant, y->quant))
            return npu_fail(c->err, NPU_EUSER, "node '%s' (%s): the output's scale and zero point must be the "
                            "input's", n->name, ir_op_name(n->op));
        return n->op == IR_OP_PAD ? q_pad_set_code(c->g, n, pad_code, c->err) : NPU_OK;
    default: return NPU_OK;
    }
}

npu_status q_from_qdq(ir_graph *g, npu_err *err)
{
    /* which tensors were uint8 before any is converted (a Q and its DQs
     * each see the tensor) */
    bool *u8 = npu_arena_alloc(g->arena, sizeof *u8 * (size_t)(g->n_tensors + 1));
    if (!u8)
        return oom(err);
    for (int i = 0; i < g->n_tensors; i++)
        u8[i] = g->tensors[i]->dtype == IR_U8;
    npu_status st = annotate(g, u8, err);
    for (int i = 0; st == NPU_OK && i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        if (n->op == IR_OP_QLINEAR_CONV || n->op == IR_OP_QLINEAR_MATMUL)
            st = qlinear(g, n, u8, err);
        else if (q_classify(n) == Q_KIND_INHERIT && n->inputs[0]->quant && !n->outputs[0]->quant &&
                 (n->outputs[0]->dtype == IR_I8 || n->outputs[0]->dtype == IR_U8)) {
            n->outputs[0]->quant = n->inputs[0]->quant;
            st = to_int8(n, n->outputs[0], err);
        }
    }
    q_options o = {.wbits = 8, .abits = 8};
    q_ctx c = {.g = g, .opts = &o, .err = err};
    int n_orig = g->n_nodes;
    for (int i = 0; st == NPU_OK && i < n_orig; i++) {
        ir_node *n = g->nodes[i];
        if (!n->dead && n->op == IR_OP_SPLIT && n->n_inputs && dq_of(n->inputs[0])) {
            convert_split(g, n);
            continue;
        }
        if (n->dead || is_qdq(n->op) || n->n_outputs != 1 || !n->n_inputs || !dq_of(n->inputs[0]))
            continue; /* float ops stay float; their DQ inputs are float boundaries */
        ir_node *q = sole_q_reader(g, n->outputs[0]);
        if (q)
            st = convert(&c, n, q);
    }
    /* DQ -> Q (a change of scale, as before a Concat): an npu.Requantize */
    for (int i = 0; st == NPU_OK && i < n_orig; i++) {
        ir_node *n = g->nodes[i];
        ir_node *dq = n->dead || n->op != IR_OP_QUANTIZE_LINEAR ? NULL : dq_of(n->inputs[0]);
        if (!dq || dq->inputs[0]->dtype != IR_I8 || dq->inputs[0]->quant->axis >= 0 || n->outputs[0]->quant->axis >= 0)
            continue;
        ir_tensor **in = npu_arena_alloc(g->arena, sizeof *in);
        if (!in)
            return oom(err);
        in[0] = dq->inputs[0];
        n->op = IR_OP_REQUANTIZE;
        n->inputs = in;
        n->n_inputs = 1;
        n->n_attrs = 0;
        n->attrs = NULL;
    }
    /* DQs read by nothing now (their readers became integer) go */
    for (int i = 0; st == NPU_OK && i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (!n->dead && n->op == IR_OP_DEQUANTIZE_LINEAR && ir_use_count(g, n->outputs[0]) == 0)
            n->dead = true;
    }
    for (int i = 0; st == NPU_OK && i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (!n->dead && is_qdq(n->op)) {
            n->unit = IR_UNIT_HOST;
            n->unit_reason = "float boundary";
        }
    }
    if (st != NPU_OK)
        return st;
    ir_graph_compact(g);
    st = ir_graph_toposort(g, err);
    if (st == NPU_OK)
        st = ir_graph_verify(g, err);
    return st;
}
