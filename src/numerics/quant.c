/* The kernel parameters of a quantized node (docs/numerics.md): IR nodes
 * whose first input carries quantization parameters, read into the integer
 * kernels' parameter structs of kernels/nk_quant.h. Multipliers are derived
 * from the tensors' scales through nk_multiplier_from_scales: the scales are
 * the one source of truth, and the reference (src/ref/ops_quant.c), the
 * tiler and the host-step emitter all read their parameters here, so they
 * cannot disagree on a rounded multiplier, a pad or a clamp. */
#include <string.h>

#include "numerics/numerics.h"

static npu_status kfail(nk_status st, npu_err *err, const char *what)
{
    return npu_fail(err, NPU_EUSER, "%s: the integer kernel %s", what,
                    st == NK_EUNSUPPORTED ? "does not support these parameters (int32 accumulator limits)"
                                          : "rejected its parameters");
}

/* Per-tensor quantization of an int8 activation, or of an int16 one (A16W8:
 * symmetric, zero point 0). */
static npu_status act_quant(const ir_tensor *t, float *scale, int32_t *zp, npu_err *err)
{
    if (!t || (t->dtype != IR_I8 && t->dtype != IR_I16) || !t->quant || t->quant->count != 1 || !t->quant->scale ||
        !t->quant->zero_point)
        return npu_fail(err, NPU_EUSER, "tensor '%s': expected int8 or int16 with per-tensor quantization",
                        t ? t->name : "(none)");
    *scale = t->quant->scale[0];
    *zp = t->quant->zero_point[0];
    if (!(*scale > 0.0f) || (t->dtype == IR_I8 ? (*zp < -128 || *zp > 127) : *zp != 0))
        return npu_fail(err, NPU_EUSER, "tensor '%s': bad scale %g or zero point %d", t->name, (double)*scale,
                        (int)*zp);
    return NPU_OK;
}

/* Both of an op's input and output activations. */
static npu_status io_quant(const ir_tensor *x, const ir_tensor *y, float *xs, int32_t *xzp, float *ys, int32_t *yzp,
                           npu_err *err)
{
    npu_status st = act_quant(x, xs, xzp, err);
    return st == NPU_OK ? act_quant(y, ys, yzp, err) : st;
}

_Static_assert((int)NK_ACT_RELU == (int)IR_ACT_RELU && (int)NK_ACT_CLIP == (int)IR_ACT_CLIP &&
                   (int)NK_ACT_LEAKY_RELU == (int)IR_ACT_LEAKY_RELU,
               "nk_act_kind mirrors ir_act_kind");

void ref_act_code_range(const ir_tensor *t, int32_t *qmin, int32_t *qmax)
{
    bool i4 = t && (t->flags & IR_TENSOR_INT4_CODES), i16 = t && t->dtype == IR_I16;
    *qmin = i4 ? -8 : i16 ? -32768 : -128;
    *qmax = i4 ? 7 : i16 ? 32767 : 127;
}

bool ref_is_a16(const ir_tensor *t)
{
    return t && t->dtype == IR_I16 && t->quant;
}

/* The fused activation as a clamp on the quantized output y, within y's
 * code range (int4 codes are int8 values clamped to -8..7). */
static npu_status act_clamp(const ir_node *n, const ir_tensor *y, float scale, int32_t zp, int32_t *lo, int32_t *hi,
                            npu_err *err)
{
    nk_act a = {(nk_act_kind)n->act.kind, n->act.lo, n->act.hi, n->act.alpha};
    int32_t qmin, qmax;
    ref_act_code_range(y, &qmin, &qmax);
    nk_status st = nk_quant_act_range(a, scale, zp, qmin, qmax, lo, hi);
    if (st == NK_EUNSUPPORTED)
        return npu_fail(err, NPU_EUSER, "a fused LeakyRelu is not a clamp: the quantized graph needs it as npu.Lut");
    if (st != NK_OK)
        return npu_fail(err, NPU_EUSER, "bad fused activation bounds");
    return NPU_OK;
}

static npu_status multiplier(float num, float w, float den, int32_t *m, int32_t *s, npu_err *err)
{
    int shift;
    if (nk_multiplier_from_scales(num, w, den, m, &shift) != NK_OK)
        return npu_fail(err, NPU_EUSER, "scales %g * %g / %g give no valid multiplier", (double)num, (double)w,
                        (double)den);
    *s = shift;
    return NPU_OK;
}

static bool fits_i32(int64_t v)
{
    return v >= 0 && v <= INT32_MAX;
}

/* ---- conv ----------------------------------------------------------------- */

/* Begin/end pads of one spatial axis, from "pads" or "auto_pad". */
static void axis_pads(const ir_node *n, int axis, int rank, int64_t in, int64_t k, int64_t s, int64_t d,
                      int32_t *p0, int32_t *p1)
{
    int64_t pads[2 * IR_MAX_RANK] = {0};
    const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
    if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        int64_t out = (in + s - 1) / s, total = (out - 1) * s + (k - 1) * d + 1 - in;
        total = total < 0 ? 0 : total;
        int64_t small = total / 2;
        *p0 = (int32_t)(!strcmp(ap, "SAME_UPPER") ? small : total - small);
        *p1 = (int32_t)(total - *p0);
        return;
    }
    if (!strcmp(ap, "VALID") || ir_attr_ints(n, "pads", pads, 2 * IR_MAX_RANK) != 2 * rank) {
        *p0 = *p1 = 0;
        return;
    }
    *p0 = (int32_t)pads[axis];
    *p1 = (int32_t)pads[axis + rank];
}

/* One spatial axis of a window op: kernel, stride, dilation, pads. */
typedef struct win_axis {
    int32_t in, out, k, s, d, p0, p1;
} win_axis;

/* Spatial geometry of an NCHW (or NCL: h = 1) window op with kernel dims kd. */
static npu_status window(const ir_node *n, const ir_tensor *x, const ir_tensor *y, const int64_t *kd, win_axis *ax,
                         npu_err *err)
{
    int sp = x->rank - 2;
    if ((x->rank != 3 && x->rank != 4) || y->rank != x->rank)
        return npu_fail(err, NPU_EUSER, "integer window ops take 1-D or 2-D inputs (rank %d)", x->rank);
    int64_t st[2] = {1, 1}, dl[2] = {1, 1};
    if (ir_attr_ints(n, "strides", st, 2) < 0)
        st[0] = st[1] = 1;
    if (ir_attr_ints(n, "dilations", dl, 2) < 0)
        dl[0] = dl[1] = 1;
    for (int a = 0; a < 2; a++) {
        win_axis *w = &ax[a];
        int i = sp == 2 ? a : 0; /* attribute index */
        bool real = sp == 2 || a == 1;
        int64_t in = real ? x->dims[2 + i] : 1, out = real ? y->dims[2 + i] : 1, k = real ? kd[i] : 1;
        int64_t s = real ? st[i] : 1, d = real ? dl[i] : 1;
        if (!fits_i32(in) || !fits_i32(out) || !fits_i32(k) || !fits_i32(s) || !fits_i32(d))
            return npu_fail(err, NPU_EUSER, "window geometry out of range");
        w->in = (int32_t)in, w->out = (int32_t)out, w->k = (int32_t)k, w->s = (int32_t)s, w->d = (int32_t)d;
        w->p0 = w->p1 = 0;
        if (real)
            axis_pads(n, i, sp, in, k, s, d, &w->p0, &w->p1);
        /* a ceil_mode size that keeps a last window starting past the input and its begin padding
         * (declared so by ONNX's shape inference before 1.16; the float pools take it), the one size
         * the pools' check refuses that shape inference lets through: said here, at compile time */
        bool pool = n->op == IR_OP_MAX_POOL || n->op == IR_OP_AVERAGE_POOL;
        if (real && pool && !nk_qpool_size_ok(w->in, w->out, w->p0, w->p1, w->k, w->d, w->s))
            return npu_fail(err, NPU_EUSER,
                            "output dimension %d is %lld: ceil_mode's last window would start past the input "
                            "(ONNX's shape inference before 1.16 keeps it); the integer pools take %lld, as "
                            "onnxruntime and PyTorch",
                            2 + i, (long long)out, (long long)(out - 1));
    }
    return NPU_OK;
}

/* The weights' per-channel scales (count 1 or c), zero points 0. */
static npu_status weight_quant(const ir_tensor *w, int64_t c, npu_err *err)
{
    const ir_quant *q = w->quant;
    if ((w->dtype != IR_I8 && w->dtype != IR_I4) || !q || (q->count != 1 && q->count != c) || !q->scale)
        return npu_fail(err, NPU_EUSER, "weights '%s': expected int8/int4 with %lld per-channel scales", w->name,
                        (long long)c);
    for (int i = 0; q->zero_point && i < q->count; i++)
        if (q->zero_point[i] != 0)
            return npu_fail(err, NPU_EUSER, "weights '%s': zero points must be 0 (symmetric)", w->name);
    return NPU_OK;
}

static npu_status bias_check(const ir_tensor *b, int64_t c, npu_err *err)
{
    if (b && (b->dtype != IR_I32 || ir_tensor_numel(b) != c))
        return npu_fail(err, NPU_EUSER, "bias '%s': expected int32 with %lld values", b->name, (long long)c);
    return NPU_OK;
}

static const int32_t identity_mult = 1 << 30, identity_shift = 1;

/* Geometry and zero points of a quantized Conv (multipliers left to the caller). */
npu_status ref_qconv_params(const ir_node *n, nk_qconv2d_params *p, npu_err *err)
{
    const ir_tensor *x = n->inputs[0], *w = n->n_inputs > 1 ? n->inputs[1] : NULL, *y = n->outputs[0];
    float xs, ys;
    memset(p, 0, sizeof *p);
    npu_status st = io_quant(x, y, &xs, &p->in_zp, &ys, &p->out_zp, err);
    if (st != NPU_OK)
        return st;
    if (!w || w->rank != x->rank)
        return npu_fail(err, NPU_EUSER, "Conv needs weights of the input's rank");
    win_axis ax[2];
    if ((st = window(n, x, y, w->dims + 2, ax, err)) != NPU_OK)
        return st;
    int64_t g = ir_attr_int(n, "group", 1);
    if (!fits_i32(x->dims[0]) || !fits_i32(x->dims[1]) || !fits_i32(w->dims[0]) || !fits_i32(g) ||
        y->dims[1] != w->dims[0] || g <= 0 || w->dims[1] * g != x->dims[1])
        return npu_fail(err, NPU_EUSER, "Conv shapes do not agree");
    p->n = (int32_t)x->dims[0], p->c_in = (int32_t)x->dims[1], p->c_out = (int32_t)w->dims[0];
    p->groups = (int32_t)g;
    p->h_in = ax[0].in, p->h_out = ax[0].out, p->k_h = ax[0].k, p->stride_h = ax[0].s, p->dil_h = ax[0].d;
    p->w_in = ax[1].in, p->w_out = ax[1].out, p->k_w = ax[1].k, p->stride_w = ax[1].s, p->dil_w = ax[1].d;
    p->pad_top = ax[0].p0, p->pad_bottom = ax[0].p1, p->pad_left = ax[1].p0, p->pad_right = ax[1].p1;
    p->w_format = w->dtype == IR_I4 ? NK_W_I4 : NK_W_I8;
    if ((st = weight_quant(w, p->c_out, err)) != NPU_OK ||
        (st = bias_check(n->n_inputs > 2 ? n->inputs[2] : NULL, p->c_out, err)) != NPU_OK)
        return st;
    p->q.n = 1, p->q.mult = &identity_mult, p->q.shift = &identity_shift; /* valid for size queries */
    return act_clamp(n, y, ys, p->out_zp, &p->act_min, &p->act_max, err);
}

npu_status ref_qmults(const ir_tensor *x, const ir_tensor *w, const ir_tensor *y, int32_t *mult, int32_t *shift,
                      npu_err *err)
{
    for (int i = 0; i < w->quant->count; i++) {
        npu_status st = multiplier(x->quant->scale[0], w->quant->scale[i], y->quant->scale[0], &mult[i], &shift[i], err);
        if (st != NPU_OK)
            return st;
    }
    return NPU_OK;
}

/* ---- Gemm / MatMul -------------------------------------------------------- */

/* Gemm (transB = 1: weights [N, K]; 0: [K, N]) or MatMul by constant weights
 * [K, N], on an input flattened to [M, K]. */
npu_status ref_qfc_params(const ir_node *n, ref_qfc_setup *f, npu_err *err)
{
    const ir_tensor *x = n->inputs[0], *w = n->n_inputs > 1 ? n->inputs[1] : NULL, *y = n->outputs[0];
    nk_qfc_params *p = &f->p;
    float xs, ys;
    memset(f, 0, sizeof *f);
    npu_status st = io_quant(x, y, &xs, &p->in_zp, &ys, &p->out_zp, err);
    if (st != NPU_OK)
        return st;
    if (!w || !w->data || w->rank != 2 || x->rank < 1)
        return npu_fail(err, NPU_EUSER, "integer %s needs constant 2-D weights", ir_op_name(n->op));
    if (n->op == IR_OP_GEMM && (ir_attr_int(n, "transA", 0) != 0 || ir_attr_float(n, "alpha", 1.0f) != 1.0f ||
                                ir_attr_float(n, "beta", 1.0f) != 1.0f))
        return npu_fail(err, NPU_EUSER, "integer Gemm needs transA = 0 and alpha = beta = 1 (folded by the quantizer)");
    f->transpose = !(n->op == IR_OP_GEMM && ir_attr_int(n, "transB", 0));
    int64_t K = f->transpose ? w->dims[0] : w->dims[1], N = f->transpose ? w->dims[1] : w->dims[0];
    int64_t M = ir_tensor_numel(x) / (x->dims[x->rank - 1] ? x->dims[x->rank - 1] : 1);
    if (x->dims[x->rank - 1] != K || ir_tensor_numel(y) != M * N || !fits_i32(M) || !fits_i32(K) || !fits_i32(N))
        return npu_fail(err, NPU_EUSER, "%s shapes do not agree", ir_op_name(n->op));
    p->batch = (int32_t)M, p->in_features = (int32_t)K, p->out_features = (int32_t)N;
    p->w_format = w->dtype == IR_I4 && !f->transpose ? NK_W_I4 : NK_W_I8;
    if ((st = weight_quant(w, N, err)) != NPU_OK ||
        (st = bias_check(n->n_inputs > 2 ? n->inputs[2] : NULL, N, err)) != NPU_OK)
        return st;
    p->q.n = 1, p->q.mult = &identity_mult, p->q.shift = &identity_shift;
    return act_clamp(n, y, ys, p->out_zp, &p->act_min, &p->act_max, err);
}

/* MatMul of two activations: batched, both zero points. */
npu_status ref_qbmm_params(const ir_node *n, nk_qbmm_params *p, npu_err *err)
{
    const ir_tensor *a = n->inputs[0], *b = n->inputs[1], *y = n->outputs[0];
    float as, bs, ys;
    memset(p, 0, sizeof *p);
    npu_status st = act_quant(a, &as, &p->a_zp, err);
    if (st == NPU_OK)
        st = act_quant(b, &bs, &p->b_zp, err);
    if (st == NPU_OK)
        st = act_quant(y, &ys, &p->out_zp, err);
    if (st != NPU_OK)
        return st;
    if (a->rank < 2 || b->rank < 2 || y->rank < 2)
        return npu_fail(err, NPU_EUSER, "integer MatMul of activations needs rank >= 2");
    int64_t M = a->dims[a->rank - 2], K = a->dims[a->rank - 1], N = b->dims[b->rank - 1];
    if (M <= 0 || K <= 0 || N <= 0)
        return npu_fail(err, NPU_EUSER, "integer MatMul of empty matrices");
    int64_t ab = ir_tensor_numel(a) / (M * K), bb = ir_tensor_numel(b) / (K * N), batch = ir_tensor_numel(y) / (M * N);
    if (b->dims[b->rank - 2] != K || (ab != batch && ab != 1) || (bb != batch && bb != 1) || !fits_i32(batch) ||
        !fits_i32(M) || !fits_i32(K) || !fits_i32(N))
        return npu_fail(err, NPU_EUSER, "MatMul shapes do not agree (or broadcast in a way the kernel lacks)");
    p->batch = (int32_t)batch, p->a_batch = (int32_t)ab, p->b_batch = (int32_t)bb;
    p->m = (int32_t)M, p->k = (int32_t)K, p->n = (int32_t)N;
    if ((st = multiplier(as, bs, ys, &p->mult, &p->shift, err)) != NPU_OK)
        return st;
    return act_clamp(n, y, ys, p->out_zp, &p->act_min, &p->act_max, err);
}

bool ref_q_is_bmm(const ir_node *n)
{
    return n->op == IR_OP_MATMUL && n->n_inputs > 1 && n->inputs[1] && !n->inputs[1]->data;
}

/* ---- pools ---------------------------------------------------------------- */

npu_status ref_qpool_params(const ir_node *n, nk_qpool_params *p, npu_err *err)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    float xs, ys;
    memset(p, 0, sizeof *p);
    npu_status st = io_quant(x, y, &xs, &p->in_zp, &ys, &p->out_zp, err);
    if (st == NPU_OK)
        st = multiplier(xs, 1.0f, ys, &p->mult, &p->shift, err);
    if (st != NPU_OK)
        return st;
    if (x->rank < 3 || !fits_i32(x->dims[0]) || !fits_i32(x->dims[1]) || y->dims[1] != x->dims[1])
        return npu_fail(err, NPU_EUSER, "pool shapes do not agree");
    p->n = (int32_t)x->dims[0], p->c = (int32_t)x->dims[1];
    bool global = n->op == IR_OP_GLOBAL_AVERAGE_POOL || n->op == IR_OP_GLOBAL_MAX_POOL;
    int64_t kd[2] = {1, 1};
    if (global) {
        kd[0] = x->dims[2], kd[1] = x->rank > 3 ? x->dims[3] : 1;
    } else if (ir_attr_ints(n, "kernel_shape", kd, 2) != x->rank - 2) {
        return npu_fail(err, NPU_EUSER, "pool needs a kernel_shape of the input's spatial rank");
    }
    if (ir_attr_int(n, "storage_order", 0) != 0)
        return npu_fail(err, NPU_EUSER, "MaxPool storage_order 1 is not supported");
    win_axis ax[2];
    if ((st = window(n, x, y, kd, ax, err)) != NPU_OK)
        return st;
    p->h_in = ax[0].in, p->h_out = ax[0].out, p->k_h = ax[0].k, p->stride_h = ax[0].s, p->dil_h = ax[0].d;
    p->w_in = ax[1].in, p->w_out = ax[1].out, p->k_w = ax[1].k, p->stride_w = ax[1].s, p->dil_w = ax[1].d;
    p->pad_top = ax[0].p0, p->pad_bottom = ax[0].p1, p->pad_left = ax[1].p0, p->pad_right = ax[1].p1;
    p->count_include_pad = (int32_t)ir_attr_int(n, "count_include_pad", 0);
    return act_clamp(n, y, ys, p->out_zp, &p->act_min, &p->act_max, err);
}

/* ---- elementwise ---------------------------------------------------------- */

static npu_status to_shape(const ir_tensor *t, nk_shape *s, npu_err *err)
{
    if (t->rank > NK_MAX_RANK)
        return npu_fail(err, NPU_EUSER, "tensor '%s': rank %d is above %d", t->name, t->rank, NK_MAX_RANK);
    s->rank = t->rank;
    for (int i = 0; i < t->rank; i++) {
        if (!fits_i32(t->dims[i]))
            return npu_fail(err, NPU_EUSER, "tensor '%s': dimension out of range", t->name);
        s->dims[i] = (int32_t)t->dims[i];
    }
    return NPU_OK;
}

npu_status ref_qbinary_params(const ir_node *n, nk_qbinary_params *p, npu_err *err)
{
    if (n->n_inputs != 2)
        return npu_fail(err, NPU_EUSER, "integer %s takes two inputs", ir_op_name(n->op));
    memset(p, 0, sizeof *p);
    p->op = n->op == IR_OP_ADD ? NK_QADD
            : n->op == IR_OP_SUB ? NK_QSUB
            : n->op == IR_OP_MUL ? NK_QMUL
            : n->op == IR_OP_MIN ? NK_QMIN
                                 : NK_QMAX;
    float as, bs, ys;
    npu_status st = act_quant(n->inputs[0], &as, &p->a_zp, err);
    if (st == NPU_OK)
        st = act_quant(n->inputs[1], &bs, &p->b_zp, err);
    if (st == NPU_OK)
        st = act_quant(n->outputs[0], &ys, &p->out_zp, err);
    if (st == NPU_OK)
        st = to_shape(n->inputs[0], &p->a_shape, err);
    if (st == NPU_OK)
        st = to_shape(n->inputs[1], &p->b_shape, err);
    if (st == NPU_OK)
        st = to_shape(n->outputs[0], &p->out_shape, err);
    if (st == NPU_OK)
        st = act_clamp(n, n->outputs[0], ys, p->out_zp, &p->act_min, &p->act_max, err);
    if (st != NPU_OK)
        return st;
    bool a16 = ref_is_a16(n->inputs[0]);
    if (a16 != ref_is_a16(n->inputs[1]) || a16 != ref_is_a16(n->outputs[0]))
        return npu_fail(err, NPU_EUSER, "integer %s mixes int8 and int16 operands", ir_op_name(n->op));
    nk_status ks = a16 ? nk_qbinary_prepare_a16(p, as, bs, ys) : nk_qbinary_prepare(p, as, bs, ys);
    return ks == NK_OK ? NPU_OK : kfail(ks, err, ir_op_name(n->op));
}

/* Requantization of count int8 values from x's parameters to y's. */
npu_status ref_qrequant_params(const ir_node *n, const ir_tensor *x, const ir_tensor *y, nk_qrequant_params *p,
                                 npu_err *err)
{
    float xs, ys;
    npu_status st = io_quant(x, y, &xs, &p->in_zp, &ys, &p->out_zp, err);
    if (st == NPU_OK)
        st = multiplier(xs, 1.0f, ys, &p->mult, &p->shift, err);
    if (st == NPU_OK)
        st = act_clamp(n, y, ys, p->out_zp, &p->act_min, &p->act_max, err);
    return st;
}

bool ref_qrequant_is_copy(const ir_tensor *x, const ir_tensor *y, const nk_qrequant_params *p)
{
    int32_t qmin, qmax;
    ref_act_code_range(y, &qmin, &qmax);
    return x->dtype == y->dtype && x->quant->scale[0] == y->quant->scale[0] && p->in_zp == p->out_zp &&
           p->act_min == qmin &&
           p->act_max == qmax && (x->flags & IR_TENSOR_INT4_CODES) == (y->flags & IR_TENSOR_INT4_CODES);
}
