/* --emit qdq: the quantized graph as a QDQ ONNX model that onnxruntime runs.
 * Every int8 activation X:q stays an int8 value; a float op reads it through
 * DequantizeLinear and its result goes back through QuantizeLinear with X's
 * parameters. Integer ops become DQ -> the float ONNX op (plus the fused
 * activation) -> Q; weights and biases are int initializers behind a
 * per-axis DQ; npu.Requantize is DQ -> Q; npu.Lut is an exact Gather on its
 * table; npu.Softmax is DQ -> exp(x - max) / sum -> Q and npu.LayerNorm
 * DQ -> LayerNormalization (scale and bias read back from the column table)
 * -> Q, within rounding of the integer rows. The IR is read only; the protobuf lives in one arena.
 * Opset 13, or the source model's when newer (up to the importer's 17), 17
 * with an npu.LayerNorm. */
#include <math.h>
#include <string.h>

#include "common/file.h"
#include "emit/emit.h"
#include "kernels/nk_quant.h"
#include "onnx/onnx.pb-c.h"

/* Per-axis QuantizeLinear/DequantizeLinear need opset 13. */
enum { QDQ_OPSET = 13, QDQ_IR_VERSION = 8 };

typedef struct qdq_w {
    npu_arena *a;
    const ir_graph *g;
    npu_err *err;
    Onnx__NodeProto **nodes;
    size_t n_nodes, cap_nodes;
    Onnx__TensorProto **inits;
    size_t n_inits, cap_inits;
    const char **fview;     /* per tensor id: name of its DequantizeLinear output */
    const char **qscale;    /* per tensor id: its scale initializer */
    const char **qzp;       /* per tensor id: its zero-point initializer (NULL: none) */
    bool *init_done;        /* per tensor id: its initializer is written */
} qdq_w;

static npu_status oom(qdq_w *w)
{
    return npu_fail(w->err, NPU_EINTERNAL, "--emit qdq: out of memory");
}

/* Appends p to a growing arena array; false when out of memory. */
static bool push(qdq_w *w, void ***arr, size_t *n, size_t *cap, void *p)
{
    if (!p)
        return false;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        void **na = npu_arena_grow(w->a, *arr, *cap * sizeof **arr, nc * sizeof **arr);
        if (!na)
            return false;
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = p;
    return true;
}

static int onnx_dtype(ir_dtype dt)
{
    switch (dt) {
    case IR_F32: return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    case IR_F16: return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    case IR_I64: return ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    case IR_I32: return ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    case IR_I16: return ONNX__TENSOR_PROTO__DATA_TYPE__INT16;
    case IR_I8:
    case IR_I4: return ONNX__TENSOR_PROTO__DATA_TYPE__INT8; /* int4 is written unpacked */
    case IR_U8:
    case IR_U4: return ONNX__TENSOR_PROTO__DATA_TYPE__UINT8;
    case IR_BOOL: return ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    default: return 0;
    }
}

/* ---- tensors and initializers -------------------------------------------------- */

static Onnx__TensorProto *tensor_proto(qdq_w *w, const char *name, int dt, int rank, const int64_t *dims,
                                       const void *raw, size_t nbytes)
{
    Onnx__TensorProto *t = npu_arena_alloc(w->a, sizeof *t);
    int64_t *d = npu_arena_alloc(w->a, sizeof *d * (size_t)(rank ? rank : 1));
    uint8_t *data = npu_arena_alloc(w->a, nbytes ? nbytes : 1);
    if (!t || !d || !data)
        return NULL;
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    if (rank)
        memcpy(d, dims, sizeof *d * (size_t)rank);
    if (nbytes)
        memcpy(data, raw, nbytes); /* little-endian host, as ONNX raw_data */
    t->n_dims = (size_t)rank;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = dt;
    t->name = npu_arena_strdup(w->a, name);
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = data;
    return t->name ? t : NULL;
}

static const char *add_init(qdq_w *w, const char *name, int dt, int rank, const int64_t *dims, const void *raw,
                            size_t nbytes)
{
    Onnx__TensorProto *t = tensor_proto(w, name, dt, rank, dims, raw, nbytes);
    return push(w, (void ***)&w->inits, &w->n_inits, &w->cap_inits, t) ? t->name : NULL;
}

/* A constant's payload as ONNX stores it: int4 unpacked to one byte each. */
static Onnx__TensorProto *const_proto(qdq_w *w, const ir_tensor *t)
{
    size_t nbytes = ir_tensor_bytes(t);
    const void *raw = t->data;
    if (t->dtype == IR_I4 || t->dtype == IR_U4) {
        size_t n = (size_t)ir_tensor_numel(t);
        int8_t *u = npu_arena_alloc(w->a, n ? n : 1);
        if (!u)
            return NULL;
        nk_int4_unpack(t->data, u, n);
        if (t->dtype == IR_U4) /* unsigned nibbles: undo the sign extension */
            for (size_t i = 0; i < n; i++)
                u[i] = (int8_t)(u[i] & 15);
        raw = u;
        nbytes = n;
    }
    return tensor_proto(w, t->name, onnx_dtype(t->dtype), t->rank, t->dims, raw, nbytes);
}

/* The tensor's own name, writing its initializer the first time for a constant. */
static const char *value_name(qdq_w *w, const ir_tensor *t)
{
    if (t->data && !w->init_done[t->id]) {
        Onnx__TensorProto *p = const_proto(w, t);
        if (!push(w, (void ***)&w->inits, &w->n_inits, &w->cap_inits, p))
            return NULL;
        w->init_done[t->id] = true;
    }
    return t->name;
}

/* Scale and zero-point initializers of a quantized tensor: scalars per
 * tensor, 1-D along the axis per channel. */
static bool qparams(qdq_w *w, const ir_tensor *t)
{
    if (w->qscale[t->id])
        return true;
    const ir_quant *q = t->quant;
    int rank = q->axis >= 0 ? 1 : 0;
    int64_t dim = q->count;
    size_t n = (size_t)q->count;
    w->qscale[t->id] = add_init(w, npu_arena_printf(w->a, "%s/scale", t->name), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
                                rank, &dim, q->scale, n * sizeof(float));
    if (!w->qscale[t->id])
        return false;
    int zdt = onnx_dtype(t->dtype);
    size_t esz = zdt == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ? 4 : 1;
    uint8_t *zp = npu_arena_alloc(w->a, n * esz);
    if (!zp)
        return false;
    for (size_t i = 0; i < n; i++) {
        int32_t z = q->zero_point ? q->zero_point[i] : 0;
        if (esz == 4)
            memcpy(zp + 4 * i, &z, 4);
        else
            zp[i] = (uint8_t)(int8_t)z;
    }
    w->qzp[t->id] = add_init(w, npu_arena_printf(w->a, "%s/zp", t->name), zdt, rank, &dim, zp, n * esz);
    return w->qzp[t->id] != NULL;
}

/* ---- nodes ------------------------------------------------------------------------- */

static Onnx__NodeProto *add_node(qdq_w *w, const char *op, const char *name, int n_in, const char *const *in,
                                 int n_out, const char *const *out)
{
    Onnx__NodeProto *n = npu_arena_alloc(w->a, sizeof *n);
    char **i = npu_arena_alloc(w->a, sizeof *i * (size_t)(n_in ? n_in : 1));
    char **o = npu_arena_alloc(w->a, sizeof *o * (size_t)(n_out ? n_out : 1));
    if (!n || !i || !o)
        return NULL;
    *n = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    for (int k = 0; k < n_in; k++)
        if (!in[k] || !(i[k] = npu_arena_strdup(w->a, in[k])))
            return NULL;
    for (int k = 0; k < n_out; k++)
        if (!out[k] || !(o[k] = npu_arena_strdup(w->a, out[k])))
            return NULL;
    n->n_input = (size_t)n_in;
    n->input = i;
    n->n_output = (size_t)n_out;
    n->output = o;
    n->op_type = npu_arena_strdup(w->a, op);
    n->name = npu_arena_strdup(w->a, name);
    if (!n->op_type || !n->name)
        return NULL;
    return push(w, (void ***)&w->nodes, &w->n_nodes, &w->cap_nodes, n) ? n : NULL;
}

static Onnx__AttributeProto *add_attr(qdq_w *w, Onnx__NodeProto *n, const char *name)
{
    Onnx__AttributeProto *a = npu_arena_alloc(w->a, sizeof *a);
    Onnx__AttributeProto **arr = npu_arena_grow(w->a, n->attribute, n->n_attribute * sizeof *arr,
                                                (n->n_attribute + 1) * sizeof *arr);
    if (!a || !arr)
        return NULL;
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = npu_arena_strdup(w->a, name);
    a->has_type = 1;
    arr[n->n_attribute++] = a;
    n->attribute = arr;
    return a->name ? a : NULL;
}

static bool attr_int(qdq_w *w, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = add_attr(w, n, name);
    if (!a)
        return false;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
    return true;
}

/* Copies an IR attribute as it is (the IR keeps ONNX's attributes). */
static bool copy_attr(qdq_w *w, Onnx__NodeProto *n, const ir_attr *ia)
{
    Onnx__AttributeProto *a = add_attr(w, n, ia->name);
    if (!a)
        return false;
    switch (ia->kind) {
    case IR_ATTR_INT:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->has_i = 1;
        a->i = ia->i;
        return true;
    case IR_ATTR_FLOAT:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        a->has_f = 1;
        a->f = ia->f;
        return true;
    case IR_ATTR_STRING:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        a->has_s = 1;
        a->s.len = strlen(ia->s);
        a->s.data = (uint8_t *)npu_arena_strdup(w->a, ia->s);
        return a->s.data != NULL;
    case IR_ATTR_INTS:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        a->n_ints = (size_t)ia->n;
        a->ints = ia->ints; /* the IR outlives the packing */
        return true;
    case IR_ATTR_FLOATS:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        a->n_floats = (size_t)ia->n;
        a->floats = ia->floats;
        return true;
    case IR_ATTR_TENSOR:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
        a->t = const_proto(w, ia->t);
        return a->t != NULL;
    }
    return false;
}

/* Attributes the IR normalizes in that opset 13 does not know (AveragePool
 * has dilations only from opset 19): dropped when they are the default. */
static bool attr_known(const ir_node *n, const ir_attr *a, bool *default_value)
{
    *default_value = true;
    if (n->op != IR_OP_AVERAGE_POOL || strcmp(a->name, "dilations") != 0)
        return true;
    for (int i = 0; a->kind == IR_ATTR_INTS && i < a->n; i++)
        *default_value = *default_value && a->ints[i] == 1;
    return false;
}

/* All of n's attributes but skip (one that became an input). */
static npu_status copy_attrs(qdq_w *w, Onnx__NodeProto *p, const ir_node *n, const char *skip)
{
    for (int i = 0; i < n->n_attrs; i++) {
        bool dflt;
        if (skip && !strcmp(n->attrs[i].name, skip))
            continue;
        if (!attr_known(n, &n->attrs[i], &dflt) && !dflt)
            return npu_fail(w->err, NPU_EUSER, "--emit qdq: node '%s' (%s): attribute %s is not in opset %d", n->name,
                            ir_op_name(n->op), n->attrs[i].name, QDQ_OPSET);
        if (attr_known(n, &n->attrs[i], &dflt) && !copy_attr(w, p, &n->attrs[i]))
            return oom(w);
    }
    return NPU_OK;
}

/* Name of the float view of a quantized tensor: DequantizeLinear(t), made once. */
static const char *float_view(qdq_w *w, const ir_tensor *t)
{
    if (w->fview[t->id])
        return w->fview[t->id];
    const char *v = value_name(w, t);
    const char *out = npu_arena_printf(w->a, "%s/dq", t->name);
    if (!v || !out || !qparams(w, t))
        return NULL;
    const char *in[3] = {v, w->qscale[t->id], w->qzp[t->id]};
    Onnx__NodeProto *n = add_node(w, "DequantizeLinear", out, 3, in, 1, &out);
    if (!n || (t->quant->axis >= 0 && !attr_int(w, n, "axis", t->quant->axis)))
        return NULL;
    return w->fview[t->id] = out;
}

/* QuantizeLinear(src) -> t with t's parameters. */
static bool quantize_to(qdq_w *w, const char *src, const ir_tensor *t)
{
    if (!qparams(w, t))
        return false;
    const char *in[3] = {src, w->qscale[t->id], w->qzp[t->id]};
    const char *name = npu_arena_printf(w->a, "%s/q", t->name);
    Onnx__NodeProto *n = add_node(w, "QuantizeLinear", name ? name : "", 3, in, 1, &t->name);
    return n && (t->quant->axis < 0 || attr_int(w, n, "axis", t->quant->axis));
}

/* The fused activation in float after src; returns the name of its result. */
static const char *fused_act(qdq_w *w, const ir_node *n, const char *src, const ir_tensor *o)
{
    const char *out = npu_arena_printf(w->a, "%s/act", o->name);
    if (!out)
        return NULL;
    switch (n->act.kind) {
    case IR_ACT_NONE: return src;
    case IR_ACT_RELU: return add_node(w, "Relu", out, 1, &src, 1, &out) ? out : NULL;
    case IR_ACT_LEAKY_RELU: {
        Onnx__NodeProto *p = add_node(w, "LeakyRelu", out, 1, &src, 1, &out);
        Onnx__AttributeProto *a = p ? add_attr(w, p, "alpha") : NULL;
        if (!a)
            return NULL;
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        a->has_f = 1;
        a->f = n->act.alpha;
        return out;
    }
    case IR_ACT_CLIP: {
        const char *lo = add_init(w, npu_arena_printf(w->a, "%s/lo", o->name), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
                                  0, NULL, &n->act.lo, sizeof(float));
        const char *hi = add_init(w, npu_arena_printf(w->a, "%s/hi", o->name), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
                                  0, NULL, &n->act.hi, sizeof(float));
        const char *in[3] = {src, lo, hi};
        return lo && hi && add_node(w, "Clip", out, 3, in, 1, &out) ? out : NULL;
    }
    }
    return NULL;
}

static bool is_quantized(const ir_tensor *t)
{
    return t && t->quant && t->dtype != IR_F32 && t->dtype != IR_F16;
}

/* Input names of n: quantized tensors through their float view when
 * dequantize is set, others (and "" for an omitted optional input) as they are. */
static const char **input_names(qdq_w *w, const ir_node *n, bool dequantize)
{
    const char **in = npu_arena_alloc(w->a, sizeof *in * (size_t)(n->n_inputs ? n->n_inputs : 1));
    for (int i = 0; in && i < n->n_inputs; i++) {
        const ir_tensor *t = n->inputs[i];
        in[i] = !t ? "" : dequantize && is_quantized(t) ? float_view(w, t) : value_name(w, t);
        if (!in[i])
            return NULL;
    }
    return in;
}

/* npu.Lut: out = table[x + 128], exactly, as Cast -> Add -> Gather. */
static bool emit_lut(qdq_w *w, const ir_node *n)
{
    const ir_tensor *o = n->outputs[0];
    const char *x = value_name(w, n->inputs[0]), *table = value_name(w, n->inputs[1]);
    const char *i32 = npu_arena_printf(w->a, "%s/i32", o->name), *idx = npu_arena_printf(w->a, "%s/idx", o->name);
    int32_t off = 128;
    const char *c128 = add_init(w, npu_arena_printf(w->a, "%s/offset", o->name), ONNX__TENSOR_PROTO__DATA_TYPE__INT32,
                                0, NULL, &off, sizeof off);
    if (!x || !table || !i32 || !idx || !c128)
        return false;
    Onnx__NodeProto *cast = add_node(w, "Cast", i32, 1, &x, 1, &i32);
    if (!cast || !attr_int(w, cast, "to", ONNX__TENSOR_PROTO__DATA_TYPE__INT32))
        return false;
    const char *add_in[2] = {i32, c128}, *gather_in[2] = {table, idx};
    Onnx__NodeProto *gather;
    return add_node(w, "Add", idx, 2, add_in, 1, &idx) &&
           (gather = add_node(w, "Gather", n->name, 2, gather_in, 1, &o->name)) && attr_int(w, gather, "axis", 0);
}

/* npu.Softmax / npu.LayerNorm over the last axis in float between DQ and Q. */
static bool emit_rownorm(qdq_w *w, const ir_node *n)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0], *cols = n->inputs[1];
    const char *in[3] = {float_view(w, x), NULL, NULL}, *f = npu_arena_printf(w->a, "%s/f", y->name);
    if (!in[0] || !f)
        return false;
    Onnx__NodeProto *p;
    if (n->op == IR_OP_QSOFTMAX) {
        /* spelled out as exp(x - max) / sum: onnxruntime fuses DQ -> Softmax -> Q into its int8
         * QLinearSoftmax, which gives wrong codes (rows of zeros, seen with onnxruntime-node 1.x) */
        int64_t ax = -1, one = 1;
        const char *m = npu_arena_printf(w->a, "%s/max", y->name), *d = npu_arena_printf(w->a, "%s/sub", y->name);
        const char *e = npu_arena_printf(w->a, "%s/exp", y->name), *s = npu_arena_printf(w->a, "%s/sum", y->name);
        const char *axes = add_init(w, npu_arena_printf(w->a, "%s/axes", n->name), ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
                                    1, &one, &ax, sizeof ax);
        const char *sub[2] = {in[0], m}, *rs[2] = {e, axes}, *dv[2] = {e, s};
        Onnx__NodeProto *mx = m && d && e && s && axes ? add_node(w, "ReduceMax", m, 1, in, 1, &m) : NULL;
        Onnx__AttributeProto *at = mx ? add_attr(w, mx, "axes") : NULL;
        if (!at)
            return false;
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        at->n_ints = 1;
        at->ints = npu_arena_alloc(w->a, sizeof(int64_t));
        if (!at->ints)
            return false;
        at->ints[0] = -1;
        return add_node(w, "Sub", d, 2, sub, 1, &d) && add_node(w, "Exp", e, 1, &d, 1, &e) &&
               add_node(w, "ReduceSum", s, 2, rs, 1, &s) && add_node(w, "Div", n->name, 2, dv, 1, &f) &&
               quantize_to(w, f, y);
    } else {
        int64_t D = x->dims[x->rank - 1];
        float *gb = npu_arena_alloc(w->a, sizeof(float) * 2 * (size_t)D), ys = y->quant->scale[0];
        const int32_t *c = cols->data;
        for (int64_t j = 0; gb && j < D; j++) { /* mult ~ gamma / ys 2^(shift-12), bias ~ beta / ys 2^shift */
            gb[j] = (float)ldexp((double)c[3 * j + 1] * ys, 12 - c[3 * j + 2]);
            gb[D + j] = (float)ldexp((double)c[3 * j] * ys, -c[3 * j + 2]);
        }
        if (!gb || !(in[1] = add_init(w, npu_arena_printf(w->a, "%s/scale", n->name), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
                                      1, &D, gb, sizeof(float) * (size_t)D)) ||
            !(in[2] = add_init(w, npu_arena_printf(w->a, "%s/bias", n->name), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1,
                               &D, gb + D, sizeof(float) * (size_t)D)))
            return false;
        p = add_node(w, "LayerNormalization", n->name, 3, in, 1, &f);
        Onnx__AttributeProto *e = p ? add_attr(w, p, "epsilon") : NULL;
        if (!e)
            return false;
        double xs = x->quant->scale[0];
        e->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        e->has_f = 1;
        e->f = (float)((double)ir_attr_int(n, "eps_q", 0) * xs * xs / ((double)D * (double)D));
    }
    return p && attr_int(w, p, "axis", -1) && quantize_to(w, f, y);
}

/* n's ONNX op with its attributes on the given input and output names. */
/* The attribute opset 13 turned into input 1 (the IR keeps a source model's
 * older form), or NULL. */
static const char *attr_now_input(const qdq_w *w, const ir_node *n)
{
    if (w->g->opset >= QDQ_OPSET || n->n_inputs != 1)
        return NULL;
    switch (n->op) {
    case IR_OP_SQUEEZE:
    case IR_OP_UNSQUEEZE:
    case IR_OP_REDUCE_SUM: return ir_attr_find(n, "axes") ? "axes" : NULL;
    case IR_OP_SPLIT: return ir_attr_find(n, "split") ? "split" : NULL;
    default: return NULL;
    }
}

static npu_status onnx_node(qdq_w *w, const ir_node *n, const char *const *in, const char *const *out)
{
    const char *moved = attr_now_input(w, n);
    const char *in2[2] = {in[0], NULL};
    if (moved) {
        const ir_attr *a = ir_attr_find(n, moved);
        int64_t len = a->n;
        in2[1] = add_init(w, npu_arena_printf(w->a, "%s/%s", n->name, moved), ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1,
                          &len, a->ints, sizeof(int64_t) * (size_t)a->n);
        if (!in2[1])
            return oom(w);
    }
    Onnx__NodeProto *p = add_node(w, ir_op_name(n->op), n->name, moved ? 2 : n->n_inputs, moved ? in2 : in,
                                  n->n_outputs, out);
    /* (Softmax's old form and default axis the importer has already made explicit) */
    return p ? copy_attrs(w, p, n, moved) : oom(w);
}

/* An integer op: DQ(inputs) -> float op -> fused act -> Q(outputs). */
static npu_status emit_integer(qdq_w *w, const ir_node *n)
{
    const char **in = input_names(w, n, true);
    const char **out = npu_arena_alloc(w->a, sizeof *out * (size_t)n->n_outputs);
    if (!in || !out)
        return oom(w);
    if (n->op == IR_OP_REQUANTIZE)
        return quantize_to(w, in[0], n->outputs[0]) ? NPU_OK : oom(w);
    for (int i = 0; i < n->n_outputs; i++) {
        const ir_tensor *o = n->outputs[i];
        out[i] = is_quantized(o) ? npu_arena_printf(w->a, "%s/f", o->name) : o->name;
        if (!out[i])
            return oom(w);
    }
    npu_status st = onnx_node(w, n, in, out);
    for (int i = 0; st == NPU_OK && i < n->n_outputs; i++) {
        const ir_tensor *o = n->outputs[i];
        const char *f = is_quantized(o) ? fused_act(w, n, out[i], o) : o->name;
        if (!f || (is_quantized(o) && !quantize_to(w, f, o)))
            st = oom(w);
    }
    return st;
}

/* A node as it is: the float ops and the graph's own Q/DQ boundaries. */
static npu_status emit_plain(qdq_w *w, const ir_node *n)
{
    bool boundary = n->op == IR_OP_QUANTIZE_LINEAR || n->op == IR_OP_DEQUANTIZE_LINEAR;
    const char **in = input_names(w, n, !boundary);
    const char **out = npu_arena_alloc(w->a, sizeof *out * (size_t)(n->n_outputs ? n->n_outputs : 1));
    if (!in || !out)
        return oom(w);
    for (int i = 0; i < n->n_outputs; i++)
        out[i] = n->outputs[i] ? n->outputs[i]->name : "";
    return onnx_node(w, n, in, out);
}

/* ---- the model ------------------------------------------------------------------------ */

static Onnx__ValueInfoProto *value_info(qdq_w *w, const ir_tensor *t)
{
    Onnx__ValueInfoProto *vi = npu_arena_alloc(w->a, sizeof *vi);
    Onnx__TypeProto *tp = npu_arena_alloc(w->a, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = npu_arena_alloc(w->a, sizeof *tt);
    Onnx__TensorShapeProto *sp = npu_arena_alloc(w->a, sizeof *sp);
    Onnx__TensorShapeProto__Dimension **dims = npu_arena_alloc(w->a, sizeof *dims * (size_t)(t->rank ? t->rank : 1));
    if (!vi || !tp || !tt || !sp || !dims)
        return NULL;
    for (int i = 0; i < t->rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = npu_arena_alloc(w->a, sizeof *d);
        if (!d)
            return NULL;
        *d = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = t->dims[i];
        dims[i] = d;
    }
    *sp = (Onnx__TensorShapeProto)ONNX__TENSOR_SHAPE_PROTO__INIT;
    sp->n_dim = (size_t)t->rank;
    sp->dim = dims;
    *tt = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
    tt->has_elem_type = 1;
    tt->elem_type = onnx_dtype(t->dtype);
    tt->shape = sp;
    *tp = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    *vi = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    vi->name = (char *)t->name;
    vi->type = tp;
    return vi;
}

static npu_status check_supported(qdq_w *w)
{
    const ir_graph *g = w->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] && (n->outputs[k]->dtype == IR_I4 || n->outputs[k]->dtype == IR_U4 ||
                                  (n->outputs[k]->flags & IR_TENSOR_INT4_CODES)))
                return npu_fail(w->err, NPU_EUSER, "--emit qdq: node '%s' (%s) has an int4 activation, which "
                                "opset %d cannot hold", n->name, ir_op_name(n->op), QDQ_OPSET);
    }
    return NPU_OK;
}

static npu_status build(qdq_w *w, Onnx__ModelProto *m)
{
    const ir_graph *g = w->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        bool integer = n->op != IR_OP_QUANTIZE_LINEAR && n->n_outputs && is_quantized(n->outputs[0]);
        bool rows = n->op == IR_OP_QSOFTMAX || n->op == IR_OP_QLAYER_NORM;
        npu_status st = n->op == IR_OP_LUT ? (emit_lut(w, n) ? NPU_OK : oom(w))
                         : rows          ? (emit_rownorm(w, n) ? NPU_OK : oom(w))
                         : integer       ? emit_integer(w, n)
                                         : emit_plain(w, n);
        if (st != NPU_OK)
            return st;
    }
    Onnx__GraphProto *gp = npu_arena_alloc(w->a, sizeof *gp);
    Onnx__ValueInfoProto **ins = npu_arena_alloc(w->a, sizeof *ins * (size_t)(g->n_inputs + 1));
    Onnx__ValueInfoProto **outs = npu_arena_alloc(w->a, sizeof *outs * (size_t)(g->n_outputs + 1));
    Onnx__OperatorSetIdProto *os = npu_arena_alloc(w->a, sizeof *os);
    Onnx__OperatorSetIdProto **osp = npu_arena_alloc(w->a, sizeof *osp);
    if (!gp || !ins || !outs || !os || !osp)
        return oom(w);
    for (int i = 0; i < g->n_inputs; i++)
        if (!(ins[i] = value_info(w, g->inputs[i])))
            return oom(w);
    for (int i = 0; i < g->n_outputs; i++)
        if (!(outs[i] = value_info(w, g->outputs[i])))
            return oom(w);
    *gp = (Onnx__GraphProto)ONNX__GRAPH_PROTO__INIT;
    gp->name = (char *)(g->name ? g->name : "npucc");
    gp->n_node = w->n_nodes;
    gp->node = w->nodes;
    gp->n_initializer = w->n_inits;
    gp->initializer = w->inits;
    gp->n_input = (size_t)g->n_inputs;
    gp->input = ins;
    gp->n_output = (size_t)g->n_outputs;
    gp->output = outs;
    *os = (Onnx__OperatorSetIdProto)ONNX__OPERATOR_SET_ID_PROTO__INIT;
    os->domain = "";
    os->has_version = 1;
    /* a newer source opset is kept: the IR holds its ops in that opset's form */
    os->version = g->opset > QDQ_OPSET ? g->opset : QDQ_OPSET;
    for (int i = 0; i < g->n_nodes; i++) /* LayerNormalization is an opset-17 op */
        if (!g->nodes[i]->dead && g->nodes[i]->op == IR_OP_QLAYER_NORM && os->version < 17)
            os->version = 17;
    osp[0] = os;
    m->has_ir_version = 1;
    m->ir_version = QDQ_IR_VERSION;
    m->n_opset_import = 1;
    m->opset_import = osp;
    m->producer_name = "npucc";
    m->graph = gp;
    return NPU_OK;
}

npu_status emit_qdq(const ir_graph *g, const char *path, npu_err *err)
{
    qdq_w w = {.a = npu_arena_new(g->alloc), .g = g, .err = err};
    if (!w.a)
        return oom(&w);
    size_t nt = (size_t)(g->n_tensors ? g->n_tensors : 1);
    w.fview = npu_arena_alloc(w.a, nt * sizeof *w.fview);
    w.qscale = npu_arena_alloc(w.a, nt * sizeof *w.qscale);
    w.qzp = npu_arena_alloc(w.a, nt * sizeof *w.qzp);
    w.init_done = npu_arena_alloc(w.a, nt * sizeof *w.init_done);
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    npu_status st = !w.fview || !w.qscale || !w.qzp || !w.init_done ? oom(&w) : check_supported(&w);
    if (st == NPU_OK)
        st = build(&w, &m);
    if (st == NPU_OK) {
        size_t size = onnx__model_proto__get_packed_size(&m);
        uint8_t *buf = npu_malloc(g->alloc, size ? size : 1);
        if (!buf)
            st = oom(&w);
        else {
            onnx__model_proto__pack(&m, buf);
            st = npu_write_file_atomic(path, buf, size, err);
            npu_free(g->alloc, buf, size ? size : 1);
        }
    }
    npu_arena_free(w.a);
    return st;
}
