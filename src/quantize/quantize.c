/* The float graph -> quantized graph rewrite (see quantize.h for the rules). */
#include "quantize/quantize.h"

#include <math.h>
#include <string.h>

#include "numerics/numerics.h"
#include "quantize/quantize_internal.h"

void q_params_from_range(float lo, float hi, int bits, float *scale, int32_t *zero_point)
{
    if (bits == 16) { /* A16W8: symmetric, zero point 0, codes -32767..32767 cover the range (TFLite 16x8) */
        float m = fmaxf(fabsf(lo), fabsf(hi));
        *scale = (m < 1e-8f ? 1e-8f : m) / 32767.0f;
        *zero_point = 0;
        return;
    }
    int qmin = -(1 << (bits - 1)), qmax = (1 << (bits - 1)) - 1;
    lo = fminf(lo, 0.0f);
    hi = fmaxf(hi, 0.0f);
    if (hi - lo < 1e-8f)
        hi = lo + 1e-8f;
    float s = (hi - lo) / (float)(qmax - qmin);
    /* the zero point is an integer, so real 0 is exactly representable */
    double zp = round((double)qmin - (double)lo / s);
    if (zp < qmin)
        zp = qmin;
    if (zp > qmax)
        zp = qmax;
    *scale = s;
    *zero_point = (int32_t)zp;
}

ir_quant *q_quant_new(ir_graph *g, int axis, int count)
{
    ir_quant *q = npu_arena_alloc(g->arena, sizeof *q);
    if (!q)
        return NULL;
    q->axis = axis;
    q->count = count;
    q->scale = npu_arena_alloc(g->arena, sizeof(float) * (size_t)count);
    q->zero_point = npu_arena_alloc(g->arena, sizeof(int32_t) * (size_t)count);
    return q->scale && q->zero_point ? q : NULL;
}

ir_quant *q_quant_tensor(ir_graph *g, float scale, int32_t zp)
{
    ir_quant *q = q_quant_new(g, -1, 1);
    if (q) {
        q->scale[0] = scale;
        q->zero_point[0] = zp;
    }
    return q;
}

bool q_same_quant(const ir_quant *a, const ir_quant *b)
{
    return a && b && a->axis < 0 && b->axis < 0 && a->scale[0] == b->scale[0] &&
           a->zero_point[0] == b->zero_point[0];
}

/* ---- per-op classification ---- */

/* Shapes the integer batched MatMul takes (ref_qbmm_params): rank >= 2,
 * the inner dims agreeing, each operand's batch either the output's or 1. */
bool q_bmm_shapes(const ir_node *n)
{
    const ir_tensor *a = n->inputs[0], *b = n->inputs[1], *y = n->outputs[0];
    if (!a || !b || !y || !a->shape_known || !b->shape_known || !y->shape_known || a->rank < 2 || b->rank < 2 ||
        y->rank < 2)
        return false;
    int64_t m = a->dims[a->rank - 2], k = a->dims[a->rank - 1], nn = b->dims[b->rank - 1];
    if (m <= 0 || k <= 0 || nn <= 0 || b->dims[b->rank - 2] != k)
        return false;
    int64_t batch = ir_tensor_numel(y) / (m * nn), ab = ir_tensor_numel(a) / (m * k), bb = ir_tensor_numel(b) / (k * nn);
    return (ab == batch || ab == 1) && (bb == batch || bb == 1);
}

bool q_becomes_lut(const ir_node *n)
{
    return q_classify(n) == Q_KIND_LUT;
}

q_kind q_classify(const ir_node *n)
{
    switch (n->op) {
    case IR_OP_CONV:
        return n->inputs[1] && n->inputs[1]->data && (n->n_inputs < 3 || !n->inputs[2] || n->inputs[2]->data)
                   ? Q_KIND_WEIGHTED
                   : Q_KIND_FLOAT;
    case IR_OP_GEMM: {
        const ir_tensor *b = n->inputs[1], *bias = n->n_inputs > 2 ? n->inputs[2] : NULL;
        if (!b || !b->data || b->rank != 2 || ir_attr_int(n, "transA", 0) != 0 || n->inputs[0]->rank != 2)
            return Q_KIND_FLOAT;
        int64_t cols = ir_attr_int(n, "transB", 0) ? b->dims[0] : b->dims[1];
        if (bias && (!bias->data || ir_tensor_numel(bias) != cols))
            return Q_KIND_FLOAT; /* only a per-output-column bias folds into int32 */
        return Q_KIND_WEIGHTED;
    }
    case IR_OP_MATMUL:
        /* activation [..., K] x constant [K, N]: becomes a Gemm on the rows [M, K] (the
         * output keeps its shape [..., N]); two activations: the batched kernel */
        if (n->inputs[1] && !n->inputs[1]->data)
            return q_bmm_shapes(n) ? Q_KIND_OWN_RANGE : Q_KIND_FLOAT;
        return n->inputs[1] && n->inputs[1]->data && n->inputs[1]->rank == 2 && n->inputs[0]->rank >= 2
                   ? Q_KIND_WEIGHTED
                   : Q_KIND_FLOAT;
    case IR_OP_ADD:
    case IR_OP_SUB:
    case IR_OP_MUL:
    case IR_OP_MIN:
    case IR_OP_MAX: return n->n_inputs == 2 ? Q_KIND_BINARY : Q_KIND_FLOAT;
    case IR_OP_MAX_POOL:
    case IR_OP_GLOBAL_MAX_POOL:
        /* the integer pools are 1-D and 2-D; 3-D ones stay float (host) */
        if (n->inputs[0] && n->inputs[0]->rank > 4)
            return Q_KIND_FLOAT;
        return n->n_outputs == 1 ? Q_KIND_INHERIT : Q_KIND_FLOAT;
    case IR_OP_RESHAPE:
    case IR_OP_FLATTEN:
    /* data movement is exact on int8 codes: the output keeps the input's
     * scale and the NPU or the host moves the codes (docs/runtime.md, NODE).
     * Not Pad (its constant is a float value, not the zero point) nor Resize
     * (the kernel interpolates in float) */
    case IR_OP_SQUEEZE:
    case IR_OP_UNSQUEEZE:
    case IR_OP_TRANSPOSE:
    case IR_OP_GATHER: /* by constant indices (an activation index is no INHERIT, see use_int) */
    case IR_OP_SLICE:
    case IR_OP_EXPAND:
    case IR_OP_TILE: return n->n_outputs == 1 ? Q_KIND_INHERIT : Q_KIND_FLOAT;
    case IR_OP_SPLIT: return Q_KIND_INHERIT; /* every output */
    case IR_OP_PAD: return q_pad_movable(n) ? Q_KIND_INHERIT : Q_KIND_FLOAT;
    case IR_OP_AVERAGE_POOL:
    case IR_OP_GLOBAL_AVERAGE_POOL: return n->inputs[0] && n->inputs[0]->rank > 4 ? Q_KIND_FLOAT : Q_KIND_OWN_RANGE;
    case IR_OP_CONCAT: return Q_KIND_CONCAT;
#define IR_UNARY(OP, UN) case IR_OP_##OP:
#include "ir/unary.def"
#undef IR_UNARY
    case IR_OP_GELU:
        for (int i = 1; i < n->n_inputs; i++)
            if (n->inputs[i] && !n->inputs[i]->data)
                return Q_KIND_FLOAT;
        return Q_KIND_LUT;
    case IR_OP_SOFTMAX:
    case IR_OP_LAYER_NORM: return q_rownorm_ok(n) ? Q_KIND_ROWNORM : Q_KIND_FLOAT;
    case IR_OP_REDUCE_MEAN: { /* an average pool of a view (src/ref/ops_norm.c) */
        int64_t w[5];
        return ref_reduce_mean_window(n, w) ? Q_KIND_OWN_RANGE : Q_KIND_FLOAT;
    }
    default: return Q_KIND_FLOAT;
    }
}

/* Output quantization fixed by the op's range of values, as in TFLite:
 * [0, 1) or [-1, 1) over all 2^bits codes (1/256 and 1/128 at int8). */
static bool fixed_output(ir_op op, int bits, float *scale, int32_t *zp)
{
    float levels = (float)(1 << bits);
    if (bits == 16) { /* TFLite's int16 logistic and tanh: 1/32768, zero point 0 */
        bool fixed = op == IR_OP_SIGMOID || op == IR_OP_HARD_SIGMOID || op == IR_OP_TANH;
        *scale = 1.0f / 32768.0f;
        *zp = 0;
        return fixed;
    }
    switch (op) {
    case IR_OP_SIGMOID:
    case IR_OP_HARD_SIGMOID:
        *scale = 1.0f / levels;
        *zp = -(1 << (bits - 1));
        return true;
    case IR_OP_TANH:
        *scale = 2.0f / levels;
        *zp = 0;
        return true;
    default: return false;
    }
}

/* ---- the rewrite ---- */

int q_act_bits(const q_ctx *c, const ir_tensor *y)
{
    if (c->a16 && y->id < c->n_orig_tensors && c->a16[y->id])
        return 16;
    if (c->opts->abits == 16)
        return 8; /* an op without an int16 form */
    if (c->opts->abits == 8 || c->opts->int4_io)
        return c->opts->abits;
    for (int i = 0; i < c->g->n_outputs; i++)
        if (c->g->outputs[i] == y)
            return 8;
    for (int i = 0; i < c->g->n_inputs; i++)
        if (c->g->inputs[i] == y)
            return 8;
    return c->opts->abits;
}

static npu_status output_quant(q_ctx *c, const ir_node *n, ir_tensor *y, ir_quant **out)
{
    float s;
    int32_t zp;
    int bits = q_act_bits(c, y);
    if (!fixed_output(n->op, bits, &s, &zp)) {
        int id = y->id;
        float lo = id >= 0 && id < c->n_ranges ? c->lo[id] : 0.0f, hi = id >= 0 && id < c->n_ranges ? c->hi[id] : 0.0f;
        q_params_from_range(lo, hi, bits, &s, &zp);
    }
    if (!(*out = q_quant_tensor(c->g, s, zp)))
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    return NPU_OK;
}

/* A Pad's value must be a code of the scale its input will have. */
static bool pad_exact(const q_ctx *c, const ir_node *n, int32_t *code)
{
    const ir_tensor *x = n->inputs[0];
    if (x->id < c->n_orig_tensors && c->qver[x->id])
        return q_pad_code(n, c->qver[x->id]->quant, code);
    if (x->id >= c->n_ranges)
        return false;
    float s;
    int32_t zp;
    q_params_from_range(c->lo[x->id], c->hi[x->id], q_act_bits(c, x), &s, &zp);
    ir_quant q = {.axis = -1, .count = 1, .scale = &s, .zero_point = &zp};
    return q_pad_code(n, &q, code);
}

static bool use_int(q_ctx *c, const ir_node *n, q_kind k, int32_t *pad_code)
{
    if (k == Q_KIND_FLOAT)
        return false;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && !n->inputs[i]->data && n->inputs[i]->dtype != IR_F32)
            return false; /* shape arithmetic and the like stay as they are */
    if (n->op == IR_OP_PAD && !pad_exact(c, n, pad_code))
        return false;
    switch (n->op) {
    case IR_OP_SQUEEZE:
    case IR_OP_UNSQUEEZE:
    case IR_OP_TRANSPOSE:
    case IR_OP_GATHER:
    case IR_OP_EXPAND:
    case IR_OP_TILE: return true; /* the host moves int8 codes where the NPU cannot */
    default: return !c->opts->int_supported || c->opts->int_supported(c->opts->ud, c->g, n);
    }
}

static npu_status rewrite_node(q_ctx *c, ir_node *n)
{
    q_kind k = q_classify(n);
    int32_t pad_code = 0;
    if (!use_int(c, n, k, &pad_code))
        return q_make_float_island(c, n);
    /* activation inputs in their integer form */
    for (int i = 0; i < n->n_inputs; i++) {
        ir_tensor *x = n->inputs[i];
        if (!x || x->data)
            continue;
        ir_tensor *xq;
        npu_status st = q_int_version(c, x, n->unit, &xq);
        if (st == NPU_OK)
            st = q_width_version(c, n, x, xq, &xq);
        if (st != NPU_OK)
            return st;
        n->inputs[i] = xq;
    }
    /* outputs: new integer tensors; the float originals are produced later
     * by a DequantizeLinear only if something still reads them */
    ir_tensor *y = n->outputs[0];
    ir_quant *yq = NULL;
    npu_status st = NPU_OK;
    if (k == Q_KIND_INHERIT)
        yq = n->inputs[0]->quant;
    else
        st = output_quant(c, n, y, &yq);
    if (st != NPU_OK)
        return st;
    ir_tensor *yint;
    if ((st = q_new_int_tensor(c, y, yq, &yint)) != NPU_OK)
        return st;
    if (k == Q_KIND_INHERIT) /* the same codes: int4 or int8 as the input's */
        yint->flags = (yint->flags & ~(unsigned)IR_TENSOR_INT4_CODES) | (n->inputs[0]->flags & IR_TENSOR_INT4_CODES);
    n->outputs[0] = yint;
    yint->producer = n;
    y->producer = NULL;
    c->qver[y->id] = yint;
    switch (k) {
    case Q_KIND_WEIGHTED: return q_weighted(c, n);
    case Q_KIND_BINARY: return q_binary_consts(c, n);
    case Q_KIND_LUT: return q_lut(c, n, y);
    case Q_KIND_CONCAT: return q_concat_inputs(c, n);
    case Q_KIND_ROWNORM: return q_rownorm(c, n, y);
    case Q_KIND_INHERIT:
        if (n->op == IR_OP_PAD)
            return q_pad_set_code(c->g, n, pad_code, c->err);
        return q_inherit_outputs(c, n);
    default: return NPU_OK;
    }
}

/* A fused LeakyRelu is no clamp: the integer kernels cannot apply it, so it
 * goes back to a node of its own (which becomes a LUT). Its input range
 * follows from the output's: x = y / alpha below zero. Grows lo/hi (copies
 * in the arena) to cover the new tensors. */
static npu_status split_leaky_acts(ir_graph *g, const float **lo, const float **hi, npu_err *err)
{
    int n_split = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n_split += !g->nodes[i]->dead && g->nodes[i]->act.kind == IR_ACT_LEAKY_RELU;
    if (!n_split)
        return NPU_OK;
    int nt = g->n_tensors, cap = nt + n_split;
    float *nlo = npu_arena_alloc(g->arena, sizeof(float) * (size_t)cap);
    float *nhi = npu_arena_alloc(g->arena, sizeof(float) * (size_t)cap);
    if (!nlo || !nhi)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    memcpy(nlo, *lo, sizeof(float) * (size_t)nt);
    memcpy(nhi, *hi, sizeof(float) * (size_t)nt);
    int n_nodes = g->n_nodes;
    for (int i = 0; i < n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || n->act.kind != IR_ACT_LEAKY_RELU)
            continue;
        ir_tensor *y = n->outputs[0];
        char name[512];
        snprintf(name, sizeof name, "%s:pre_act", y->name);
        ir_tensor *t = ir_tensor_new(g, ir_graph_find(g, name) ? NULL : name, y->dtype, y->rank, y->dims);
        if (!t)
            return npu_fail(err, NPU_EINTERNAL, "out of memory");
        float alpha = n->act.alpha;
        nlo[t->id] = alpha > 0 ? nlo[y->id] / alpha : nlo[y->id];
        nhi[t->id] = nhi[y->id];
        n->outputs[0] = t;
        t->producer = n;
        ir_node *a = ir_node_new(g, IR_OP_LEAKY_RELU, NULL, 1, &t, 1, &y);
        if (!a || !ir_set_float(g, a, "alpha", alpha))
            return npu_fail(err, NPU_EINTERNAL, "out of memory");
        a->unit = n->unit;
        a->unit_reason = n->unit_reason;
        n->act = (ir_act){IR_ACT_NONE, 0, 0, 0};
    }
    *lo = nlo;
    *hi = nhi;
    return ir_graph_toposort(g, err);
}

npu_status q_check_bits(const q_options *o, npu_err *err)
{
    if (o->wbits != 8 && o->wbits != 4)
        return npu_fail(err, NPU_EUSER, "--wbits %d: supported are 8 and 4", o->wbits);
    if (o->abits != 8 && o->abits != 4 && o->abits != 16)
        return npu_fail(err, NPU_EUSER, "--abits %d: supported are 8, 4 and 16", o->abits);
    for (int i = 0; i < o->n_layer_bits; i++) {
        int a = o->layer_bits[i].abits, w = o->layer_bits[i].wbits;
        if ((a && a != 8 && a != 16) || (w && w != 8 && w != 4))
            return npu_fail(err, NPU_EUSER, "--layer-bits %s: weights 8|4, activations 8|16", o->layer_bits[i].node);
        if (a && o->abits == 4)
            return npu_fail(err, NPU_EUSER, "--layer-bits %s: per-layer activation bits do not mix with --abits 4",
                            o->layer_bits[i].node);
    }
    if (o->abits == 4 && !o->target_int4_acts)
        return npu_fail(err, NPU_EUSER, "%s: --abits 4: the target declares no int4 activations "
                        "(dtypes.activations lists no int4)", o->target_file ? o->target_file : "the target");
    return NPU_OK;
}

/* An npu.Lut of a conv's int8 output (a Concat's requantization, lut.c)
 * runs in the conv's output stage only when it follows the conv in the
 * schedule: move it right after the conv. Its other input is the constant
 * table, so the order stays topological. */
static void luts_after_convs(ir_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || n->op != IR_OP_LUT || n->n_inputs != 2 || !n->inputs[1]->data)
            continue;
        const ir_node *p = n->inputs[0]->producer;
        int j = i - 1;
        while (j >= 0 && g->nodes[j] != p)
            j--;
        if (!p || p->op != IR_OP_CONV || j < 0 || ir_use_count(g, n->inputs[0]) != 1)
            continue;
        memmove(&g->nodes[j + 2], &g->nodes[j + 1], sizeof *g->nodes * (size_t)(i - j - 1));
        g->nodes[j + 1] = n;
    }
}

npu_status q_quantize(ir_graph *g, const float *lo, const float *hi, const q_options *o, npu_err *err)
{
    npu_status st0 = q_check_bits(o, err);
    if (st0 != NPU_OK)
        return st0;
    st0 = split_leaky_acts(g, &lo, &hi, err);
    if (st0 != NPU_OK)
        return st0;
    q_ctx c = {.g = g, .opts = o, .err = err, .lo = lo, .hi = hi, .n_ranges = g->n_tensors};
    c.n_orig_tensors = g->n_tensors;
    c.qver = npu_arena_alloc(g->arena, sizeof *c.qver * (size_t)(g->n_tensors + 1));
    if (!c.qver)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    if ((st0 = q_a16_plan(&c)) != NPU_OK)
        return st0;
    int n_orig = g->n_nodes;
    for (int i = 0; i < n_orig; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        npu_status st = rewrite_node(&c, n);
        if (st != NPU_OK)
            return st;
    }
    /* graph outputs stay float: dequantize the ones now produced as integers */
    for (int i = 0; i < g->n_outputs; i++) {
        ir_tensor *y = g->outputs[i];
        if (y->producer || y->data || (y->flags & IR_TENSOR_INPUT))
            continue;
        npu_status st = q_float_version(&c, y, IR_UNIT_HOST);
        if (st != NPU_OK)
            return st;
    }
    ir_graph_compact(g);
    npu_status st = ir_graph_toposort(g, err);
    if (st == NPU_OK)
        luts_after_convs(g);
    if (st == NPU_OK)
        st = ir_graph_verify(g, err);
    return st;
}
