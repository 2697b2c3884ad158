/* IR node -> libnpurt host-step record (rt/npurt_ops.h). The quantized
 * kernels' parameters come from src/ref/ref_qparams.h; QuantizeLinear,
 * DequantizeLinear, Concat, Softmax and the float ops follow the rules of
 * their reference adapters (src/ref/ops_qdq.c, ops_quant.c, ops_elem.c).
 * Each record is checked with the runtime's own npurt_rec_check before it
 * is appended, which also gives its scratch size. */
#include "emit/hostops.h"

#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ref/ref_qparams.h"
#include "rt/npurt_ops.h"

_Static_assert((int)NPURT_DT_F32 == (int)IR_F32 && (int)NPURT_DT_I32 == (int)IR_I32 &&
                   (int)NPURT_DT_I8 == (int)IR_I8 && (int)NPURT_DT_U8 == (int)IR_U8 &&
                   (int)NPURT_DT_I4 == (int)IR_I4 && (int)NPURT_DT_BOOL == (int)IR_BOOL,
               "npub dtype codes are ir_dtype's");
_Static_assert(NPURT_REC_MAX_RANK == NK_MAX_RANK, "record shapes are nk_shape's");

static const char *const why_params = "its quantization parameters do not fit the host integer kernels";

/* A record under construction: 32-bit words, grown through the graph's allocator. */
typedef struct recbuf {
    npu_alloc alloc;
    uint32_t *w;
    size_t n, cap; /* words */
} recbuf;

typedef struct build {
    const ir_graph *g;
    const ir_node *n;
    const emit_tensor_map *map;
    recbuf rb;
    const char *why;
    npu_err *err;
} build;

static npu_status put(build *b, const void *data, size_t bytes)
{
    size_t words = bytes / 4;
    if (b->rb.n + words > b->rb.cap) {
        size_t ncap = b->rb.cap ? b->rb.cap : 64;
        while (ncap < b->rb.n + words)
            ncap *= 2;
        uint32_t *nw = npu_realloc(b->rb.alloc, b->rb.w, b->rb.cap * 4, ncap * 4);
        if (!nw)
            return npu_fail(b->err, NPU_EINTERNAL, "out of memory for a host-step record");
        b->rb.w = nw;
        b->rb.cap = ncap;
    }
    memcpy(b->rb.w + b->rb.n, data, bytes);
    b->rb.n += words;
    return NPU_OK;
}

static npu_status unsupported(build *b, const char *why)
{
    b->why = why;
    return npu_fail(b->err, NPU_EUSER, "%s", why);
}

static bool fits_i32(int64_t v)
{
    return v >= 0 && v <= INT32_MAX;
}

/* Header and tensor slots; t[i] NULL for an omitted optional input. */
static npu_status begin(build *b, npurt_kernel k, int n_in, int n_out, const ir_tensor *const *t)
{
    npurt_rec_header h = {NPURT_REC_VERSION, (uint32_t)k, 0, (uint32_t)n_in, (uint32_t)n_out};
    npu_status st = put(b, &h, sizeof h);
    for (int i = 0; st == NPU_OK && i < n_in + n_out; i++) {
        uint32_t idx = t[i] ? b->map->index(b->map->ud, t[i]) : NPUB_NONE;
        if (t[i] && idx == NPUB_NONE)
            return npu_fail(b->err, NPU_EINTERNAL, "tensor '%s' has no place in the binary", t[i]->name);
        st = put(b, &idx, 4);
    }
    return st;
}

static void to_rec_shape(const nk_shape *s, npurt_p_shape *r)
{
    memset(r, 0, sizeof *r);
    r->rank = s->rank;
    for (int i = 0; i < s->rank; i++)
        r->dims[i] = s->dims[i];
}

static npu_status ir_rec_shape(build *b, const ir_tensor *t, npurt_p_shape *r)
{
    memset(r, 0, sizeof *r);
    if (t->rank > NPURT_REC_MAX_RANK)
        return unsupported(b, "a tensor has more dimensions than the host kernels take");
    r->rank = t->rank;
    for (int i = 0; i < t->rank; i++) {
        if (!fits_i32(t->dims[i]))
            return unsupported(b, "a dimension does not fit int32");
        r->dims[i] = (int32_t)t->dims[i];
    }
    return NPU_OK;
}

static npurt_p_act rec_act(ir_act a)
{
    npurt_p_act r = {NK_ACT_NONE, a.lo, a.hi, a.alpha};
    if (a.kind == IR_ACT_RELU)
        r.kind = NK_ACT_RELU;
    else if (a.kind == IR_ACT_CLIP)
        r.kind = NK_ACT_CLIP;
    else if (a.kind == IR_ACT_LEAKY_RELU)
        r.kind = NK_ACT_LEAKY_RELU;
    return r;
}

/* ---- QuantizeLinear / DequantizeLinear (as src/ref/ops_qdq.c) --------------- */

static int32_t zp_value(const ir_tensor *z, int64_t k)
{
    switch (z->dtype) {
    case IR_I8: return ((const int8_t *)z->data)[k];
    case IR_U8: return ((const uint8_t *)z->data)[k];
    case IR_I32: return ((const int32_t *)z->data)[k];
    default: return 0;
    }
}

static npu_status build_qdq(build *b, bool quantize)
{
    const ir_node *n = b->n;
    if (n->n_inputs < 2 || !n->inputs[0] || !n->inputs[1] || n->n_outputs < 1)
        return unsupported(b, "QuantizeLinear/DequantizeLinear needs an input, a scale and an output");
    const ir_tensor *x = n->inputs[0], *s = n->inputs[1], *y = n->outputs[0];
    const ir_tensor *z = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (!s->data || s->dtype != IR_F32 || (z && !z->data))
        return unsupported(b, "the scale and zero point must be constants");
    if (z && z->dtype != IR_I8 && z->dtype != IR_U8 && z->dtype != IR_I32)
        return unsupported(b, "zero points of this dtype have no host kernel");
    if (quantize ? (x->dtype != IR_F32 || (y->dtype != IR_I8 && y->dtype != IR_U8))
                 : (y->dtype != IR_F32 || (x->dtype != IR_I8 && x->dtype != IR_U8 && x->dtype != IR_I32)))
        return unsupported(b, quantize ? "QuantizeLinear runs on the host from f32 to int8 or uint8"
                                       : "DequantizeLinear runs on the host from int8, uint8, int32 to f32");
    int64_t total = ir_tensor_numel(x), count = ir_tensor_numel(s), inner = 1;
    if (count > 1) {
        int64_t axis = ir_attr_int(n, "axis", 1);
        if (axis < 0)
            axis += x->rank;
        if (axis < 0 || axis >= x->rank || x->dims[axis] != count)
            return unsupported(b, "the scales do not match the quantization axis");
        for (int i = (int)axis + 1; i < x->rank; i++)
            inner *= x->dims[i];
    }
    if ((z && ir_tensor_numel(z) != count) || count < 1 || !fits_i32(total) || !fits_i32(count) ||
        ir_tensor_numel(y) != total)
        return unsupported(b, "the zero point and scale counts differ");
    const ir_tensor *t[2] = {x, y};
    npurt_p_qdq p = {(uint32_t)total, (uint32_t)count, (uint32_t)(count > 1 ? inner : total)};
    npu_status st = begin(b, quantize ? NPURT_K_QUANTIZE : NPURT_K_DEQUANTIZE, 1, 1, t);
    if (st == NPU_OK)
        st = put(b, &p, sizeof p);
    for (int64_t k = 0; st == NPU_OK && k < count; k++)
        st = put(b, (const float *)s->data + k, 4);
    for (int64_t k = 0; st == NPU_OK && k < count; k++) {
        int32_t v = z ? zp_value(z, k) : 0;
        st = put(b, &v, 4);
    }
    return st;
}

/* ---- quantized kernels (src/ref/ref_qparams.h) --------------------------- */

static npu_status put_mults(build *b, const ir_tensor *x, const ir_tensor *w, const ir_tensor *y)
{
    int c = w->quant->count;
    size_t bytes = sizeof(int32_t) * (size_t)c;
    int32_t *m = npu_malloc(b->rb.alloc, 2 * bytes);
    if (!m)
        return npu_fail(b->err, NPU_EINTERNAL, "out of memory for %d multipliers", c);
    npu_status st = ref_qmults(x, w, y, m, m + c, b->err);
    if (st == NPU_OK)
        st = put(b, m, 2 * bytes);
    else
        b->why = why_params;
    npu_free(b->rb.alloc, m, 2 * bytes);
    return st;
}

static npu_status params_failed(build *b, npu_status st)
{
    b->why = why_params;
    return st;
}

static npu_status build_qconv(build *b)
{
    const ir_node *n = b->n;
    nk_qconv2d_params p;
    npu_status st = ref_qconv_params(n, &p, b->err);
    if (st != NPU_OK)
        return params_failed(b, st);
    const ir_tensor *bias = n->n_inputs > 2 ? n->inputs[2] : NULL;
    const ir_tensor *t[4] = {n->inputs[0], n->inputs[1], bias, n->outputs[0]};
    if (!t[1]->data || (t[2] && !t[2]->data))
        return unsupported(b, "Conv weights and bias must be constants");
    npurt_p_qconv r = {p.n, p.c_in, p.h_in, p.w_in, p.c_out, p.h_out, p.w_out, p.k_h, p.k_w,
                       p.stride_h, p.stride_w, p.dil_h, p.dil_w,
                       p.pad_top, p.pad_left, p.pad_bottom, p.pad_right,
                       p.groups, p.in_zp, p.out_zp, p.act_min, p.act_max, (int32_t)p.w_format,
                       t[1]->quant->count};
    if ((st = begin(b, NPURT_K_QCONV, 3, 1, t)) || (st = put(b, &r, sizeof r)))
        return st;
    return put_mults(b, t[0], t[1], t[3]);
}

static npu_status build_qfc(build *b)
{
    const ir_node *n = b->n;
    ref_qfc_setup f;
    npu_status st = ref_qfc_params(n, &f, b->err);
    if (st != NPU_OK)
        return params_failed(b, st);
    const ir_tensor *bias = n->n_inputs > 2 ? n->inputs[2] : NULL;
    const ir_tensor *t[4] = {n->inputs[0], n->inputs[1], bias, n->outputs[0]};
    if (t[2] && !t[2]->data)
        return unsupported(b, "the bias must be a constant");
    const nk_qfc_params *p = &f.p;
    npurt_p_qfc r = {p->batch, p->in_features, p->out_features, p->in_zp, p->out_zp, p->act_min, p->act_max,
                     (int32_t)p->w_format, f.transpose, t[1]->dtype == IR_I4, t[1]->quant->count};
    if ((st = begin(b, NPURT_K_QFC, 3, 1, t)) || (st = put(b, &r, sizeof r)))
        return st;
    return put_mults(b, t[0], t[1], t[3]);
}

static npu_status build_qbmm(build *b)
{
    const ir_node *n = b->n;
    nk_qbmm_params p;
    npu_status st = ref_qbmm_params(n, &p, b->err);
    if (st != NPU_OK)
        return params_failed(b, st);
    const ir_tensor *t[3] = {n->inputs[0], n->inputs[1], n->outputs[0]};
    npurt_p_qbmm r = {p.batch, p.a_batch, p.b_batch, p.m, p.k, p.n, p.a_zp, p.b_zp, p.out_zp,
                      p.act_min, p.act_max, p.mult, p.shift};
    if ((st = begin(b, NPURT_K_QBMM, 2, 1, t)) == NPU_OK)
        st = put(b, &r, sizeof r);
    return st;
}

static npu_status build_qpool(build *b, npurt_kernel k)
{
    const ir_node *n = b->n;
    nk_qpool_params p;
    npu_status st = ref_qpool_params(n, &p, b->err);
    if (st != NPU_OK)
        return params_failed(b, st);
    const ir_tensor *t[2] = {n->inputs[0], n->outputs[0]};
    npurt_p_qpool r = {p.n, p.c, p.h_in, p.w_in, p.h_out, p.w_out, p.k_h, p.k_w, p.stride_h, p.stride_w,
                       p.dil_h, p.dil_w, p.pad_top, p.pad_left, p.pad_bottom, p.pad_right,
                       p.count_include_pad, p.in_zp, p.out_zp, p.mult, p.shift, p.act_min, p.act_max};
    if ((st = begin(b, k, 1, 1, t)) == NPU_OK)
        st = put(b, &r, sizeof r);
    return st;
}

static npu_status build_qbinary(build *b)
{
    const ir_node *n = b->n;
    nk_qbinary_params p;
    npu_status st = ref_qbinary_params(n, &p, b->err);
    if (st != NPU_OK)
        return params_failed(b, st);
    const ir_tensor *t[3] = {n->inputs[0], n->inputs[1], n->outputs[0]};
    npurt_p_qbinary r;
    memset(&r, 0, sizeof r);
    r.op = (int32_t)p.op;
    to_rec_shape(&p.a_shape, &r.a_shape);
    to_rec_shape(&p.b_shape, &r.b_shape);
    to_rec_shape(&p.out_shape, &r.out_shape);
    r.a_zp = p.a_zp, r.b_zp = p.b_zp, r.out_zp = p.out_zp, r.left_shift = p.left_shift;
    r.a_mult = p.a_mult, r.a_shift = p.a_shift, r.b_mult = p.b_mult, r.b_shift = p.b_shift;
    r.out_mult = p.out_mult, r.out_shift = p.out_shift, r.act_min = p.act_min, r.act_max = p.act_max;
    if ((st = begin(b, NPURT_K_QBINARY, 2, 1, t)) == NPU_OK)
        st = put(b, &r, sizeof r);
    return st;
}

static npu_status build_qrequant(build *b)
{
    const ir_node *n = b->n;
    const ir_tensor *t[2] = {n->inputs[0], n->outputs[0]};
    nk_qrequant_params p;
    npu_status st = ref_qrequant_params(n, t[0], t[1], &p, b->err);
    if (st != NPU_OK)
        return params_failed(b, st);
    int64_t count = ir_tensor_numel(t[1]);
    if (ir_tensor_numel(t[0]) != count || !fits_i32(count))
        return unsupported(b, "npu.Requantize changes the element count");
    npurt_p_qrequant r = {(int32_t)count, p.in_zp, p.out_zp, p.mult, p.shift, p.act_min, p.act_max};
    if ((st = begin(b, NPURT_K_QREQUANT, 1, 1, t)) == NPU_OK)
        st = put(b, &r, sizeof r);
    return st;
}

static npu_status build_qlut(build *b)
{
    const ir_node *n = b->n;
    const ir_tensor *x = n->inputs[0], *tab = n->n_inputs > 1 ? n->inputs[1] : NULL, *y = n->outputs[0];
    int64_t count = ir_tensor_numel(y);
    if (x->dtype != IR_I8 || y->dtype != IR_I8 || !tab || tab->dtype != IR_I8 ||
        ir_tensor_numel(tab) != 256 || ir_tensor_numel(x) != count || !fits_i32(count))
        return unsupported(b, "npu.Lut needs int8 data and an int8 table of 256 entries");
    const ir_tensor *t[3] = {x, tab, y};
    npurt_p_qlut r = {(int32_t)count};
    npu_status st = begin(b, NPURT_K_QLUT, 2, 1, t);
    return st == NPU_OK ? put(b, &r, sizeof r) : st;
}

/* As the reference's run_concat: rows of the output along the axis, each
 * input copied when its parameters equal the output's, else requantized. */
static npu_status build_qconcat(build *b)
{
    const ir_node *n = b->n;
    const ir_tensor *y = n->outputs[0];
    int64_t axis = ir_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += y->rank;
    if (axis < 0 || axis >= y->rank || n->n_inputs < 1 || n->n_inputs > NPURT_REC_MAX_IO)
        return unsupported(b, "Concat axis or input count out of range");
    int64_t outer = 1, inner = 1, total = 0;
    for (int i = 0; i < axis; i++)
        outer *= y->dims[i];
    for (int i = (int)axis + 1; i < y->rank; i++)
        inner *= y->dims[i];
    const ir_tensor *t[NPURT_REC_MAX_IO + 1];
    for (int i = 0; i < n->n_inputs; i++) {
        const ir_tensor *x = n->inputs[i];
        if (!x || x->rank != y->rank)
            return unsupported(b, "Concat inputs must share the output's rank");
        total += x->dims[axis];
        t[i] = x;
    }
    t[n->n_inputs] = y;
    if (total != y->dims[axis] || !fits_i32(outer) || !fits_i32(total * inner))
        return unsupported(b, "Concat input sizes do not add up to the output");
    npurt_p_qconcat r = {(int32_t)outer, (int32_t)(total * inner)};
    npu_status st = begin(b, NPURT_K_QCONCAT, n->n_inputs, 1, t);
    if (st == NPU_OK)
        st = put(b, &r, sizeof r);
    for (int i = 0; st == NPU_OK && i < n->n_inputs; i++) {
        const ir_tensor *x = n->inputs[i];
        nk_qrequant_params p;
        if ((st = ref_qrequant_params(n, x, y, &p, b->err)) != NPU_OK)
            return params_failed(b, st);
        int32_t same = x->quant->scale[0] == y->quant->scale[0] && p.in_zp == p.out_zp && p.act_min == -128 &&
                       p.act_max == 127;
        npurt_p_qconcat_in in = {(int32_t)(x->dims[axis] * inner), same, p.in_zp, p.out_zp, p.mult, p.shift,
                                 p.act_min, p.act_max};
        st = put(b, &in, sizeof in);
    }
    return st;
}

/* Reshape, Flatten, Squeeze, Unsqueeze, Identity: the same bytes. */
static npu_status build_copy(build *b)
{
    const ir_node *n = b->n;
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    if (x->dtype != y->dtype || ir_tensor_bytes(x) != ir_tensor_bytes(y) || ir_tensor_bytes(y) > UINT32_MAX)
        return unsupported(b, "a reshape must keep the element type and count");
    if (y->quant && x->quant &&
        !(y->quant->count == 1 && x->quant->count == 1 && y->quant->scale[0] == x->quant->scale[0] &&
          y->quant->zero_point[0] == x->quant->zero_point[0]))
        return unsupported(b, "a reshape cannot change quantization parameters");
    const ir_tensor *t[2] = {x, y};
    npurt_p_copy r = {(uint32_t)ir_tensor_bytes(y)};
    npu_status st = begin(b, NPURT_K_COPY, 1, 1, t);
    return st == NPU_OK ? put(b, &r, sizeof r) : st;
}

/* ---- float fallbacks (src/ref/ops_elem.c) ----------------------------------- */

static bool all_f32(const ir_node *n, int n_in)
{
    for (int i = 0; i < n_in; i++)
        if (i >= n->n_inputs || !n->inputs[i] || n->inputs[i]->dtype != IR_F32)
            return false;
    return n->n_outputs >= 1 && n->outputs[0] && n->outputs[0]->dtype == IR_F32;
}

static npu_status build_softmax(build *b)
{
    const ir_node *n = b->n;
    const ir_tensor *x = n->inputs[0];
    if (!ir_shape_equal(x, n->outputs[0]))
        return unsupported(b, "Softmax output shape differs from its input's");
    bool flatten = ir_attr_int(n, "_flatten_axis", 0) != 0;
    int64_t a = ir_attr_int(n, "axis", flatten ? 1 : -1);
    int axis = a < 0 ? (int)(a + x->rank) : (int)a;
    if (a < -x->rank || a >= x->rank)
        axis = -1;
    if (axis < 0 && !(x->rank == 0 && (a == 0 || a == -1)))
        return unsupported(b, "Softmax axis out of range");
    int64_t outer = 1, len = 1, inner = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < axis)
            outer *= x->dims[d];
        else if (d == axis || flatten)
            len *= x->dims[d];
        else
            inner *= x->dims[d];
    }
    if (!fits_i32(outer) || !fits_i32(len) || !fits_i32(inner) || !fits_i32(ir_tensor_numel(x)))
        return unsupported(b, "Softmax too large for the host kernel");
    const ir_tensor *t[2] = {x, n->outputs[0]};
    npurt_p_softmax r = {(int32_t)outer, (int32_t)len, (int32_t)inner, n->op == IR_OP_LOG_SOFTMAX};
    npu_status st = begin(b, NPURT_K_SOFTMAX, 1, 1, t);
    return st == NPU_OK ? put(b, &r, sizeof r) : st;
}

static const struct {
    ir_op op;
    nk_unop un;
} unary_map[] = {
    {IR_OP_RELU, NK_UN_RELU},           {IR_OP_LEAKY_RELU, NK_UN_LEAKY_RELU},
    {IR_OP_CLIP, NK_UN_CLIP},           {IR_OP_SIGMOID, NK_UN_SIGMOID},
    {IR_OP_TANH, NK_UN_TANH},           {IR_OP_HARD_SIGMOID, NK_UN_HARD_SIGMOID},
    {IR_OP_HARD_SWISH, NK_UN_HARD_SWISH}, {IR_OP_ERF, NK_UN_ERF},
    {IR_OP_EXP, NK_UN_EXP},             {IR_OP_LOG, NK_UN_LOG},
    {IR_OP_SQRT, NK_UN_SQRT},           {IR_OP_RECIPROCAL, NK_UN_RECIPROCAL},
    {IR_OP_NEG, NK_UN_NEG},             {IR_OP_ABS, NK_UN_ABS},
};

static int unary_index(ir_op op)
{
    for (int i = 0; i < (int)(sizeof unary_map / sizeof unary_map[0]); i++)
        if (unary_map[i].op == op)
            return i;
    return -1;
}

/* A Clip bound: a constant scalar input i, else the attribute (as the reference). */
static bool clip_bound(const ir_node *n, int i, const char *attr, float def, float *v)
{
    *v = ir_attr_float(n, attr, def);
    if (i >= n->n_inputs || !n->inputs[i])
        return true;
    const ir_tensor *t = n->inputs[i];
    if (t->dtype != IR_F32 || ir_tensor_numel(t) != 1 || !t->data)
        return false;
    *v = *(const float *)t->data;
    return true;
}

static npu_status build_unary(build *b, nk_unop op)
{
    const ir_node *n = b->n;
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int64_t count = ir_tensor_numel(x);
    if (ir_tensor_numel(y) != count || !fits_i32(count))
        return unsupported(b, "the output must have the input's size");
    npurt_p_unary r = {(int32_t)op, (int32_t)count, 0.0f, 0.0f, -INFINITY, INFINITY, rec_act(n->act)};
    if (n->op == IR_OP_LEAKY_RELU) {
        r.alpha = ir_attr_float(n, "alpha", 0.01f);
    } else if (n->op == IR_OP_HARD_SIGMOID) {
        r.alpha = ir_attr_float(n, "alpha", 0.2f);
        r.beta = ir_attr_float(n, "beta", 0.5f);
    } else if (n->op == IR_OP_CLIP &&
               (!clip_bound(n, 1, "min", -INFINITY, &r.lo) || !clip_bound(n, 2, "max", INFINITY, &r.hi))) {
        return unsupported(b, "Clip bounds must be constant f32 scalars");
    }
    const ir_tensor *t[2] = {x, y};
    npu_status st = begin(b, NPURT_K_UNARY_F32, 1, 1, t);
    return st == NPU_OK ? put(b, &r, sizeof r) : st;
}

static npu_status build_binary(build *b)
{
    const ir_node *n = b->n;
    static const struct {
        ir_op op;
        nk_binop bin;
    } map[] = {{IR_OP_ADD, NK_BIN_ADD}, {IR_OP_SUB, NK_BIN_SUB}, {IR_OP_MUL, NK_BIN_MUL},
               {IR_OP_DIV, NK_BIN_DIV}, {IR_OP_POW, NK_BIN_POW}, {IR_OP_MAX, NK_BIN_MAX},
               {IR_OP_MIN, NK_BIN_MIN}, {IR_OP_PRELU, NK_BIN_PRELU}};
    npurt_p_binary r;
    memset(&r, 0, sizeof r);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].op == n->op)
            r.op = (int32_t)map[i].bin;
    r.act = rec_act(n->act);
    npu_status st;
    if ((st = ir_rec_shape(b, n->inputs[0], &r.a_shape)) ||
        (st = ir_rec_shape(b, n->inputs[1], &r.b_shape)) ||
        (st = ir_rec_shape(b, n->outputs[0], &r.out_shape)))
        return st;
    const ir_tensor *t[3] = {n->inputs[0], n->inputs[1], n->outputs[0]};
    if ((st = begin(b, NPURT_K_BINARY_F32, 2, 1, t)) == NPU_OK)
        st = put(b, &r, sizeof r);
    return st;
}

/* ---- dispatch ------------------------------------------------------------ */

static bool is_quantized(const ir_node *n)
{
    return n->n_inputs > 0 && n->inputs[0] && n->inputs[0]->quant;
}

static npu_status build_node(build *b)
{
    const ir_node *n = b->n;
    if (n->n_inputs < 1 || !n->inputs[0] || n->n_outputs < 1 || !n->outputs[0])
        return unsupported(b, "the node lacks an input or an output");
    if (n->n_outputs > 1)
        for (int i = 1; i < n->n_outputs; i++)
            if (n->outputs[i])
                return unsupported(b, "host kernels have one output");
    bool q = is_quantized(n);
    switch (n->op) {
    case IR_OP_QUANTIZE_LINEAR: return build_qdq(b, true);
    case IR_OP_DEQUANTIZE_LINEAR: return build_qdq(b, false);
    case IR_OP_RESHAPE:
    case IR_OP_FLATTEN:
    case IR_OP_SQUEEZE:
    case IR_OP_UNSQUEEZE:
    case IR_OP_IDENTITY: return build_copy(b);
    default: break;
    }
    if (q) {
        switch (n->op) {
        case IR_OP_CONV: return build_qconv(b);
        case IR_OP_GEMM:
        case IR_OP_MATMUL: return ref_q_is_bmm(n) ? build_qbmm(b) : build_qfc(b);
        case IR_OP_MAX_POOL:
        case IR_OP_GLOBAL_MAX_POOL: return build_qpool(b, NPURT_K_QMAXPOOL);
        case IR_OP_AVERAGE_POOL: return build_qpool(b, NPURT_K_QAVGPOOL);
        case IR_OP_GLOBAL_AVERAGE_POOL: return build_qpool(b, NPURT_K_QGLOBALAVGPOOL);
        case IR_OP_ADD:
        case IR_OP_SUB:
        case IR_OP_MUL:
        case IR_OP_MIN:
        case IR_OP_MAX: return build_qbinary(b);
        case IR_OP_REQUANTIZE: return build_qrequant(b);
        case IR_OP_LUT: return build_qlut(b);
        case IR_OP_CONCAT: return build_qconcat(b);
        default: return unsupported(b, "no host kernel for this quantized op");
        }
    }
    switch (n->op) {
    case IR_OP_SOFTMAX:
    case IR_OP_LOG_SOFTMAX:
        return all_f32(n, 1) ? build_softmax(b) : unsupported(b, "Softmax runs on the host in f32 only");
    case IR_OP_ADD:
    case IR_OP_SUB:
    case IR_OP_MUL:
    case IR_OP_DIV:
    case IR_OP_POW:
    case IR_OP_MAX:
    case IR_OP_MIN:
    case IR_OP_PRELU:
        if (n->n_inputs != 2 || !all_f32(n, 2))
            return unsupported(b, "float binary ops on the host take two f32 inputs");
        return build_binary(b);
    default: break;
    }
    int u = unary_index(n->op);
    if (u >= 0)
        return all_f32(n, 1) ? build_unary(b, unary_map[u].un)
                             : unsupported(b, "float unary ops run in f32 only");
    return unsupported(b, "no host kernel for this op");
}

/* Builds n's record into b->rb and checks it with the runtime's checker. */
static npu_status build_checked(build *b, uint32_t *scratch)
{
    npu_status st = build_node(b);
    if (st != NPU_OK)
        return st;
    npurt_rec_header *h = (npurt_rec_header *)b->rb.w;
    h->size = (uint32_t)(b->rb.n * 4);
    npurt_fault f;
    if (npurt_rec_check(b->rb.w, h->size, scratch, &f)) {
        b->why = why_params;
        return npu_fail(b->err, NPU_EUSER, "the %s record fails the runtime's check at byte %u: %s",
                        npurt_kernel_name(h->kernel), (unsigned)f.at, f.msg);
    }
    return NPU_OK;
}

static uint32_t dummy_index(void *ud, const ir_tensor *t)
{
    (void)ud;
    (void)t;
    return 0;
}

bool emit_host_supports(const ir_graph *g, const ir_node *n, const char **why)
{
    npu_err err;
    emit_tensor_map map = {dummy_index, NULL};
    build b = {g, n, &map, {g->alloc, NULL, 0, 0}, NULL, &err};
    uint32_t scratch;
    npu_status st = build_checked(&b, &scratch);
    npu_free(g->alloc, b.rb.w, b.rb.cap * 4);
    if (why)
        *why = st == NPU_OK ? NULL : b.why ? b.why : "out of memory";
    return st == NPU_OK;
}

npu_status emit_host_step(const ir_graph *g, const ir_node *n, const emit_tensor_map *map, emit_blob *params,
                          uint16_t *kernel, uint32_t *params_offset, uint32_t *params_size,
                          uint32_t *scratch_bytes, npu_err *err)
{
    build b = {g, n, map, {g->alloc, NULL, 0, 0}, NULL, err};
    npu_status st = build_checked(&b, scratch_bytes);
    size_t off = 0;
    if (st == NPU_OK)
        st = emit_blob_add(params, b.rb.w, b.rb.n * 4, 4, &off, err);
    if (st == NPU_OK) {
        if (off + b.rb.n * 4 > UINT32_MAX) {
            st = npu_fail(err, NPU_EUSER, "host-step parameters exceed 4 GiB");
        } else {
            *kernel = (uint16_t)((const npurt_rec_header *)b.rb.w)->kernel;
            *params_offset = (uint32_t)off;
            *params_size = (uint32_t)(b.rb.n * 4);
        }
    }
    npu_free(g->alloc, b.rb.w, b.rb.cap * 4);
    if (st != NPU_OK && !strstr(err->msg, n->name))
        npu_err_prefix(err, "node '%s' (%s)", n->name, ir_op_name(n->op));
    return st;
}
