/* Re-check of a stored graph (ref/ref_check.h). The reader (src/ir/serial.c)
 * has checked that every record is inside the section and that the graph is
 * well formed (producers before consumers, constants' data equal to their
 * shape). What is left is what the kernels trust: that each tensor's shape
 * and dtype are what its producer computes, so that every buffer the
 * reference allocates from a tensor's shape is as large as the kernel that
 * writes or reads it assumes. */
#include "ref/ref_check.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ref/ref.h"
#include "numerics/numerics.h"

enum { CHECK_MAX_IO = 64 }; /* as ref_ctx_run: a node with more is refused */

typedef struct chk {
    ir_graph *g;
    const ir_serial_map *map;
    size_t base;
    npu_err *err;
} chk;

static npu_status at_fail(const chk *c, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static npu_status at_fail(const chk *c, size_t at, const char *fmt, ...)
{
    char msg[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return npu_fail(c->err, NPU_EUSER, "graph section: byte %zu (file byte %zu): %s", at, c->base + at, msg);
}

static size_t tensor_at(const chk *c, const ir_tensor *t)
{
    return c->map && t->id >= 0 && t->id < c->map->n_tensors ? c->map->tensor_at[t->id] : 0;
}

static size_t node_at(const chk *c, const ir_node *n)
{
    return c->map && n->id >= 0 && n->id < c->map->n_nodes ? c->map->node_at[n->id] : 0;
}

static const char *fmt_shape(char *buf, size_t cap, ir_dtype dt, int rank, const int64_t *dims)
{
    size_t k = (size_t)snprintf(buf, cap, "%s[", ir_dtype_name(dt));
    for (int i = 0; i < rank && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (k < cap)
        snprintf(buf + k, cap - k, "]");
    return buf;
}

/* ---- tensors: quantization parameters against the dtype ------------------ */

static bool zp_range(ir_dtype dt, int32_t *lo, int32_t *hi)
{
    switch (dt) {
    case IR_I8: *lo = -128, *hi = 127; return true;
    case IR_U8: *lo = 0, *hi = 255; return true;
    case IR_I4: *lo = -8, *hi = 7; return true;
    case IR_U4: *lo = 0, *hi = 15; return true;
    case IR_I16: *lo = -32768, *hi = 32767; return true;
    case IR_I32: *lo = INT32_MIN, *hi = INT32_MAX; return true;
    default: return false;
    }
}

static npu_status check_tensor(const chk *c, const ir_tensor *t)
{
    const ir_quant *q = t->quant;
    if (!q)
        return NPU_OK;
    int32_t lo, hi;
    if (!zp_range(t->dtype, &lo, &hi))
        return at_fail(c, tensor_at(c, t), "tensor '%s': quantization parameters on a %s tensor", t->name,
                       ir_dtype_name(t->dtype));
    for (int i = 0; i < q->count; i++) {
        if (!isfinite(q->scale[i]) || !(q->scale[i] > 0.0f) || q->scale[i] < FLT_MIN)
            return at_fail(c, tensor_at(c, t), "tensor '%s': scale %d is %g (not a positive normal number)",
                           t->name, i, (double)q->scale[i]);
        if (q->zero_point[i] < lo || q->zero_point[i] > hi)
            return at_fail(c, tensor_at(c, t), "tensor '%s': zero point %d is %d, outside %s's %d..%d", t->name, i,
                           (int)q->zero_point[i], ir_dtype_name(t->dtype), (int)lo, (int)hi);
    }
    return NPU_OK;
}

/* ---- nodes: shapes against the op ------------------------------------------ */

typedef struct saved {
    ir_dtype dtype;
    int rank;
    int64_t dims[IR_MAX_RANK];
    bool known;
} saved;

static void save(const ir_tensor *t, saved *s)
{
    s->dtype = t->dtype;
    s->rank = t->rank;
    s->known = t->shape_known;
    memcpy(s->dims, t->dims, sizeof s->dims);
}

static void restore(ir_tensor *t, const saved *s)
{
    t->dtype = s->dtype;
    t->rank = s->rank;
    t->shape_known = s->known;
    memcpy(t->dims, s->dims, sizeof s->dims);
}

static bool byte_code(ir_dtype dt)
{
    return dt == IR_I8 || dt == IR_U8;
}

/* byte_any: int8 and uint8 count as one dtype (npu.Lut maps either to
 * either: the uint8 I/O of --input-type uint8 is flipped by a table). */
static bool same_shape(const ir_tensor *t, const saved *s, bool byte_any)
{
    bool same_dt = t->dtype == s->dtype || (byte_any && byte_code(t->dtype) && byte_code(s->dtype));
    if (!same_dt || t->rank != s->rank || !t->shape_known)
        return false;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] != s->dims[i])
            return false;
    return true;
}

/* Shape inference of the node again, its outputs compared with the stored
 * ones. Shape inference is the float graph's: int4 weights count as int8
 * there (their dtype is the quantizer's storage choice, not the op's). */
static npu_status check_shapes(const chk *c, ir_node *n)
{
    saved out[CHECK_MAX_IO];
    ir_dtype in_dt[CHECK_MAX_IO];
    for (int i = 0; i < n->n_inputs; i++) {
        ir_tensor *t = n->inputs[i];
        if (!t)
            continue;
        in_dt[i] = t->dtype;
        if (t->dtype == IR_I4 || t->dtype == IR_U4)
            t->dtype = t->dtype == IR_I4 ? IR_I8 : IR_U8;
    }
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i])
            save(n->outputs[i], &out[i]);
    npu_err e;
    npu_err_clear(&e);
    npu_status st = ir_infer_node(c->g, n, &e);
    int bad = -1;
    for (int i = 0; i < n->n_outputs && st == NPU_OK && bad < 0; i++)
        if (n->outputs[i] && !same_shape(n->outputs[i], &out[i], n->op == IR_OP_LUT))
            bad = i;
    char got[200] = "", want[200];
    if (bad >= 0)
        fmt_shape(got, sizeof got, n->outputs[bad]->dtype, n->outputs[bad]->rank, n->outputs[bad]->dims);
    for (int i = n->n_inputs - 1; i >= 0; i--) /* backwards: a tensor read twice gets its first dtype */
        if (n->inputs[i])
            n->inputs[i]->dtype = in_dt[i];
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i])
            restore(n->outputs[i], &out[i]);
    if (st != NPU_OK)
        return at_fail(c, node_at(c, n), "%s", e.msg);
    if (bad >= 0)
        return at_fail(c, node_at(c, n), "node '%s' (%s): output '%s' is stored as %s, its inputs and attributes give %s",
                       n->name, ir_op_name(n->op), n->outputs[bad]->name,
                       fmt_shape(want, sizeof want, out[bad].dtype, out[bad].rank, out[bad].dims), got);
    return NPU_OK;
}

/* Every input is a constant, a graph input or produced earlier (the
 * reader checked the last two, but a tensor flagged as an input need not
 * be one of the graph's). */
static npu_status check_sources(const chk *c, const ir_node *n)
{
    if (n->n_inputs > CHECK_MAX_IO || n->n_outputs > CHECK_MAX_IO)
        return at_fail(c, node_at(c, n), "node '%s' (%s): %d inputs and %d outputs, at most %d each", n->name,
                       ir_op_name(n->op), n->n_inputs, n->n_outputs, CHECK_MAX_IO);
    for (int i = 0; i < n->n_inputs; i++) {
        const ir_tensor *t = n->inputs[i];
        if (!t || t->producer || t->data)
            continue;
        bool is_input = false;
        for (int k = 0; k < c->g->n_inputs && !is_input; k++)
            is_input = c->g->inputs[k] == t;
        if (!is_input)
            return at_fail(c, tensor_at(c, t), "node '%s' (%s) reads '%s', which is neither a constant, a graph input "
                           "nor produced by a node", n->name, ir_op_name(n->op), t->name);
    }
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] && n->outputs[i]->data)
            return at_fail(c, tensor_at(c, n->outputs[i]), "node '%s' (%s) writes the constant '%s'", n->name,
                           ir_op_name(n->op), n->outputs[i]->name);
    return NPU_OK;
}

/* ---- nodes: integer kernel parameters against tensor sizes ------------------ */

static int64_t mul_cap(int64_t a, int64_t b)
{
    const int64_t cap = (int64_t)1 << 50;
    if (a < 0 || b < 0 || a > cap || b > cap)
        return -1;
    return a && b > cap / a ? -1 : a * b;
}

static int64_t prod4(int64_t a, int64_t b, int64_t c, int64_t d)
{
    return mul_cap(mul_cap(a, b), mul_cap(c, d));
}

static npu_status size_fail(const chk *c, const ir_node *n, const ir_tensor *t, int64_t want)
{
    return at_fail(c, node_at(c, n), "node '%s' (%s): the kernel's parameters need %lld elements of '%s', it has %lld",
                   n->name, ir_op_name(n->op), (long long)want, t->name, (long long)ir_tensor_numel(t));
}

static npu_status check_conv(const chk *c, const ir_node *n, npu_err *e)
{
    nk_qconv2d_params p;
    if (ref_qconv_params(n, &p, e) != NPU_OK)
        return e->code;
    const ir_tensor *x = n->inputs[0], *w = n->inputs[1], *y = n->outputs[0];
    int64_t nx = prod4(p.n, p.c_in, p.h_in, p.w_in), ny = prod4(p.n, p.c_out, p.h_out, p.w_out);
    int64_t nw = prod4(p.c_out, p.c_in / p.groups, p.k_h, p.k_w);
    if (nx != ir_tensor_numel(x))
        return size_fail(c, n, x, nx);
    if (ny != ir_tensor_numel(y))
        return size_fail(c, n, y, ny);
    if (nw != ir_tensor_numel(w))
        return size_fail(c, n, w, nw);
    if (!nk_qconv2d_scratch_size(&p))
        return npu_fail(e, NPU_EUSER, "the integer Conv kernel rejects its geometry");
    return NPU_OK;
}

static npu_status check_matmul(const chk *c, const ir_node *n, npu_err *e)
{
    const ir_tensor *a = n->inputs[0], *b = n->n_inputs > 1 ? n->inputs[1] : NULL, *y = n->outputs[0];
    if (ref_q_is_bmm(n)) {
        nk_qbmm_params p;
        if (ref_qbmm_params(n, &p, e) != NPU_OK)
            return e->code;
        int64_t na = prod4(p.a_batch, p.m, p.k, 1), nb = prod4(p.b_batch, p.k, p.n, 1);
        int64_t ny = prod4(p.batch, p.m, p.n, 1);
        if (na != ir_tensor_numel(a))
            return size_fail(c, n, a, na);
        if (nb != ir_tensor_numel(b))
            return size_fail(c, n, b, nb);
        return ny != ir_tensor_numel(y) ? size_fail(c, n, y, ny) : NPU_OK;
    }
    ref_qfc_setup f;
    if (ref_qfc_params(n, &f, e) != NPU_OK)
        return e->code;
    int64_t nx = mul_cap(f.p.batch, f.p.in_features), nw = mul_cap(f.p.in_features, f.p.out_features);
    int64_t ny = mul_cap(f.p.batch, f.p.out_features);
    if (nx != ir_tensor_numel(a))
        return size_fail(c, n, a, nx);
    if (ny != ir_tensor_numel(y) || y->dtype != IR_I8)
        return size_fail(c, n, y, ny);
    return nw != ir_tensor_numel(b) ? size_fail(c, n, b, nw) : NPU_OK;
}

static npu_status check_pool(const chk *c, const ir_node *n, npu_err *e)
{
    nk_qpool_params p;
    if (ref_qpool_params(n, &p, e) != NPU_OK)
        return e->code;
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int64_t nx = prod4(p.n, p.c, p.h_in, p.w_in), ny = prod4(p.n, p.c, p.h_out, p.w_out);
    if (nx != ir_tensor_numel(x))
        return size_fail(c, n, x, nx);
    return ny != ir_tensor_numel(y) ? size_fail(c, n, y, ny) : NPU_OK;
}

/* QuantizeLinear / DequantizeLinear: the scale is float with at least one
 * value, the zero point one of the dtypes the reference reads, and the
 * input of the dtype the kernel reads (shape inference passes any: a
 * QuantizeLinear of int8 codes read them as floats past their end). */
static npu_status check_qdq(const chk *c, const ir_node *n)
{
    const ir_tensor *x = n->inputs[0], *s = n->n_inputs > 1 ? n->inputs[1] : NULL;
    const ir_tensor *z = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (!x || !s || s->dtype != IR_F32 || ir_tensor_numel(s) < 1 ||
        (z && z->dtype != IR_I8 && z->dtype != IR_U8 && z->dtype != IR_I32))
        return at_fail(c, node_at(c, n), "node '%s' (%s): needs an input, a float scale and an int8, uint8 or int32 "
                       "zero point", n->name, ir_op_name(n->op));
    bool q = n->op == IR_OP_QUANTIZE_LINEAR;
    if (q ? x->dtype != IR_F32 : x->dtype != IR_I8 && x->dtype != IR_U8 && x->dtype != IR_I32)
        return at_fail(c, node_at(c, n), "node '%s' (%s): input '%s' is %s, expected %s", n->name, ir_op_name(n->op),
                       x->name, ir_dtype_name(x->dtype), q ? "float32" : "int8, uint8 or int32");
    return NPU_OK;
}

static npu_status check_kernel(const chk *c, const ir_node *n)
{
    if (n->op == IR_OP_QUANTIZE_LINEAR || n->op == IR_OP_DEQUANTIZE_LINEAR)
        return check_qdq(c, n);
    if (n->n_inputs < 1 || !n->inputs[0] || !n->inputs[0]->quant || n->n_outputs < 1 || !n->outputs[0])
        return NPU_OK;
    npu_err e;
    npu_err_clear(&e);
    npu_status st = NPU_OK;
    switch (n->op) {
    case IR_OP_CONV: st = check_conv(c, n, &e); break;
    case IR_OP_GEMM:
    case IR_OP_MATMUL: st = check_matmul(c, n, &e); break;
    case IR_OP_MAX_POOL:
    case IR_OP_AVERAGE_POOL:
    case IR_OP_GLOBAL_AVERAGE_POOL:
    case IR_OP_GLOBAL_MAX_POOL: st = check_pool(c, n, &e); break;
    default: break;
    }
    if (st != NPU_OK && e.code != NPU_OK) /* a parameter function's message, without the place */
        return at_fail(c, node_at(c, n), "node '%s' (%s): %s", n->name, ir_op_name(n->op), e.msg);
    return st;
}

npu_status ref_check_graph(ir_graph *g, const ir_serial_map *map, size_t file_offset, npu_err *err)
{
    chk c = {g, map, file_offset, err};
    npu_status st = NPU_OK;
    for (int i = 0; i < g->n_tensors && st == NPU_OK; i++)
        st = check_tensor(&c, g->tensors[i]);
    for (int i = 0; i < g->n_nodes && st == NPU_OK; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        /* a quantized Gemm is the quantizer's fully connected layer over the
         * input flattened to [M, K], not ONNX's 2-D Gemm: check_kernel ties
         * its element counts to the kernel's M, K and N instead */
        bool fc = n->op == IR_OP_GEMM && n->n_inputs > 0 && n->inputs[0] && n->inputs[0]->quant;
        if ((st = check_sources(&c, n)) == NPU_OK && (fc || (st = check_shapes(&c, n)) == NPU_OK))
            st = check_kernel(&c, n);
    }
    for (int i = 0; i < g->n_outputs && st == NPU_OK; i++)
        if (!g->outputs[i]->shape_known)
            st = at_fail(&c, tensor_at(&c, g->outputs[i]), "graph output '%s' has no shape", g->outputs[i]->name);
    return st;
}

npu_status ref_load_graph_section(const void *sec, size_t size, size_t file_offset, npu_alloc alloc, ir_graph **out,
                                  npu_err *err)
{
    const ir_serial_map *map = NULL;
    ir_graph *g = NULL;
    npu_status st = ir_deserialize_map(sec, size, alloc, &g, &map, err);
    if (st != NPU_OK)
        return st;
    if ((st = ref_check_graph(g, map, file_offset, err)) != NPU_OK) {
        ir_graph_free(g);
        return st;
    }
    *out = g;
    return NPU_OK;
}
