/* Shape inference: output dtypes and static shapes from inputs and attributes.
 * Pure: reads constant inputs where the shape depends on values (Reshape's
 * shape, Slice's starts, ...) but never evaluates a kernel. Where it is cheap
 * it writes the resolved parameters back as attributes in ONNX spelling
 * (explicit pads instead of auto_pad, non-negative axes, ...) so that later
 * stages read one form; docs/import.md lists them. Data movement ops live in
 * shape_data.c. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/shape_internal.h"

/* ---- helpers ------------------------------------------------------------ */

npu_status sh_fail(sctx *c, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return npu_fail(c->err, NPU_EUSER, "node '%s' (%s): %s", c->n->name, ir_op_name(c->n->op), msg);
}

static npu_status oom(sctx *c)
{
    return npu_fail(c->err, NPU_EINTERNAL, "node '%s' (%s): out of memory", c->n->name, ir_op_name(c->n->op));
}

const char *sh_fmt(char *buf, size_t size, int rank, const int64_t *dims)
{
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (k < size)
        snprintf(buf + k, size - k, "]");
    return buf;
}

ir_tensor *sh_in(const ir_node *n, int i)
{
    return i < n->n_inputs ? n->inputs[i] : NULL;
}

npu_status sh_need(sctx *c, int i, ir_tensor **out)
{
    ir_tensor *t = sh_in(c->n, i);
    if (!t)
        return sh_fail(c, "required input %d is missing", i);
    if (!t->shape_known)
        return npu_fail(c->err, NPU_EINTERNAL, "node '%s' (%s): input '%s' has no shape yet", c->n->name,
                        ir_op_name(c->n->op), t->name);
    *out = t;
    return NPU_OK;
}

npu_status sh_set(sctx *c, int i, ir_dtype dt, int rank, const int64_t *dims)
{
    if (i >= c->n->n_outputs || !c->n->outputs[i])
        return NPU_OK;
    char b[160];
    if (rank < 0 || rank > IR_MAX_RANK)
        return sh_fail(c, "output rank %d exceeds the supported %d", rank, IR_MAX_RANK);
    int64_t numel = 1;
    for (int k = 0; k < rank; k++) {
        if (dims[k] < 0)
            return sh_fail(c, "output shape %s has a negative dimension", sh_fmt(b, sizeof b, rank, dims));
        /* a 0 counts as 1: the other dimensions of an empty tensor stay
         * bounded too (Flatten and Reshape multiply them) */
        int64_t dk = dims[k] ? dims[k] : 1;
        if (numel > SHAPE_MAX_NUMEL / dk)
            return sh_fail(c, "output shape %s is too large", sh_fmt(b, sizeof b, rank, dims));
        numel *= dk;
    }
    ir_tensor *t = c->n->outputs[i];
    t->dtype = dt;
    ir_tensor_set_shape(t, rank, dims);
    return NPU_OK;
}

npu_status sh_same_dtype(sctx *c, const ir_tensor *a, const ir_tensor *b)
{
    if (a->dtype != b->dtype)
        return sh_fail(c, "inputs '%s' (%s) and '%s' (%s) must have the same dtype", a->name,
                       ir_dtype_name(a->dtype), b->name, ir_dtype_name(b->dtype));
    return NPU_OK;
}

/* Conv/Gemm operands: one dtype, or a quantized graph's int8/int16
 * activation with int8/int4 weights (int4 is packed, A16W8 is int16 x int8). */
static npu_status sh_weight_dtype(sctx *c, const ir_tensor *x, const ir_tensor *w)
{
    if ((x->dtype == IR_I8 || x->dtype == IR_I16) && (w->dtype == IR_I8 || w->dtype == IR_I4) && w->quant)
        return NPU_OK;
    return sh_same_dtype(c, x, w);
}

npu_status sh_axis(sctx *c, const char *what, int64_t axis, int rank, bool inclusive, int64_t *out)
{
    int64_t hi = inclusive ? rank : rank - 1;
    if (axis < -rank || axis > hi)
        return sh_fail(c, "%s %lld is out of range for rank %d", what, (long long)axis, rank);
    *out = axis < 0 ? axis + rank : axis;
    return NPU_OK;
}

/* t is a constant scalar or 1-D tensor of at most max values whose dtype is
 * a or b (named types in the message); *n gets its count. */
static npu_status const_vector(sctx *c, const ir_tensor *t, const char *what, ir_dtype a, ir_dtype b,
                               const char *types, int max, int64_t *n)
{
    if (!t->data)
        return sh_fail(c, "%s '%s' must be a constant (known when the model is compiled)", what, t->name);
    if (t->dtype != a && t->dtype != b)
        return sh_fail(c, "%s '%s' must be %s, not %s", what, t->name, types, ir_dtype_name(t->dtype));
    if (t->rank > 1)
        return sh_fail(c, "%s '%s' must be a scalar or a 1-D tensor", what, t->name);
    *n = ir_tensor_numel(t);
    if (*n > max)
        return sh_fail(c, "%s '%s' has %lld values; at most %d are supported", what, t->name, (long long)*n, max);
    return NPU_OK;
}

npu_status sh_const_ints(sctx *c, const ir_tensor *t, const char *what, int64_t *out, int max, int *count)
{
    int64_t n;
    npu_status st = const_vector(c, t, what, IR_I64, IR_I32, "int64 or int32", max, &n);
    if (st != NPU_OK)
        return st;
    for (int64_t i = 0; i < n; i++)
        out[i] = t->dtype == IR_I64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
    *count = (int)n;
    return NPU_OK;
}

static float half_to_float(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 1024), e - 25);
    return (h & 0x8000) ? -v : v;
}

npu_status sh_const_floats(sctx *c, const ir_tensor *t, const char *what, float *out, int max, int *count)
{
    int64_t n;
    npu_status st = const_vector(c, t, what, IR_F32, IR_F16, "float", max, &n);
    if (st != NPU_OK)
        return st;
    for (int64_t i = 0; i < n; i++)
        out[i] = t->dtype == IR_F32 ? ((const float *)t->data)[i] : half_to_float(((const uint16_t *)t->data)[i]);
    *count = (int)n;
    return NPU_OK;
}

npu_status sh_ints_param(sctx *c, const char *attr, int idx, int64_t *out, int max, int *count)
{
    const ir_attr *a = ir_attr_find(c->n, attr);
    *count = -1;
    if (a) {
        if (a->kind != IR_ATTR_INTS)
            return sh_fail(c, "attribute '%s' must be a list of ints", attr);
        if (a->n > max)
            return sh_fail(c, "attribute '%s' has %d values; at most %d are supported", attr, a->n, max);
        memcpy(out, a->ints, sizeof *out * (size_t)a->n);
        *count = a->n;
        return NPU_OK;
    }
    ir_tensor *t = idx >= 0 ? sh_in(c->n, idx) : NULL;
    if (!t || (t->shape_known && ir_tensor_numel(t) == 0))
        return NPU_OK;
    return sh_const_ints(c, t, attr, out, max, count);
}

npu_status sh_broadcast(sctx *c, int ra, const int64_t *a, int rb, const int64_t *b, int *rank, int64_t *out)
{
    int r = ra > rb ? ra : rb;
    int64_t res[IR_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
        int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
        if (da != db && da != 1 && db != 1) {
            char ba[160], bb[160];
            return sh_fail(c, "shapes %s and %s do not broadcast", sh_fmt(ba, sizeof ba, ra, a),
                           sh_fmt(bb, sizeof bb, rb, b));
        }
        res[i] = da == 1 ? db : da;
    }
    memcpy(out, res, sizeof *res * (size_t)r);
    *rank = r;
    return NPU_OK;
}

/* ---- elementwise ---------------------------------------------------------- */

/* Broadcast over inputs [first, n_inputs); same dtype unless mixed is true. */
static npu_status infer_broadcast(sctx *c, int first, bool mixed, ir_dtype out_dt, bool use_in_dt)
{
    ir_tensor *t0 = NULL;
    npu_status st = sh_need(c, first, &t0);
    if (st)
        return st;
    int rank = t0->rank;
    int64_t dims[IR_MAX_RANK];
    memcpy(dims, t0->dims, sizeof dims);
    for (int i = first + 1; i < c->n->n_inputs; i++) {
        ir_tensor *t = NULL;
        if ((st = sh_need(c, i, &t)))
            return st;
        if (!mixed && (st = sh_same_dtype(c, t0, t)))
            return st;
        if ((st = sh_broadcast(c, rank, dims, t->rank, t->dims, &rank, dims)))
            return st;
    }
    return sh_set(c, 0, use_in_dt ? t0->dtype : out_dt, rank, dims);
}

static npu_status infer_same(sctx *c)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    return st ? st : sh_set(c, 0, x->dtype, x->rank, x->dims);
}

static npu_status infer_where(sctx *c)
{
    ir_tensor *cond = NULL, *x = NULL, *y = NULL;
    npu_status st;
    if ((st = sh_need(c, 0, &cond)) || (st = sh_need(c, 1, &x)) || (st = sh_need(c, 2, &y)))
        return st;
    if (cond->dtype != IR_BOOL)
        return sh_fail(c, "condition '%s' must be bool, not %s", cond->name, ir_dtype_name(cond->dtype));
    if ((st = sh_same_dtype(c, x, y)))
        return st;
    int rank;
    int64_t d[IR_MAX_RANK];
    if ((st = sh_broadcast(c, cond->rank, cond->dims, x->rank, x->dims, &rank, d)) ||
        (st = sh_broadcast(c, rank, d, y->rank, y->dims, &rank, d)))
        return st;
    return sh_set(c, 0, x->dtype, rank, d);
}

static npu_status infer_prelu(sctx *c)
{
    ir_tensor *x = NULL, *s = NULL;
    npu_status st;
    if ((st = sh_need(c, 0, &x)) || (st = sh_need(c, 1, &s)) || (st = sh_same_dtype(c, x, s)))
        return st;
    /* the slope broadcasts to X, never the other way */
    int rank;
    int64_t d[IR_MAX_RANK];
    if ((st = sh_broadcast(c, x->rank, x->dims, s->rank, s->dims, &rank, d)))
        return st;
    char bx[160], bs[160];
    if (rank != x->rank || memcmp(d, x->dims, sizeof *d * (size_t)rank))
        return sh_fail(c, "slope shape %s does not broadcast to input shape %s", sh_fmt(bs, sizeof bs, s->rank, s->dims),
                       sh_fmt(bx, sizeof bx, x->rank, x->dims));
    return sh_set(c, 0, x->dtype, x->rank, x->dims);
}

/* Clip: min/max inputs (opset 11+) also become "min"/"max" attributes when constant. */
static npu_status infer_clip(sctx *c)
{
    static const char *const names[2] = {"min", "max"};
    for (int k = 0; k < 2; k++) {
        ir_tensor *t = sh_in(c->n, 1 + k);
        if (!t)
            continue;
        if (t->shape_known && ir_tensor_numel(t) != 1)
            return sh_fail(c, "%s '%s' must be a scalar", names[k], t->name);
        if (!t->data)
            continue;
        float v;
        switch (t->dtype) {
        case IR_F32: v = *(const float *)t->data; break;
        case IR_F16: v = half_to_float(*(const uint16_t *)t->data); break;
        case IR_I64: v = (float)*(const int64_t *)t->data; break;
        case IR_I32: v = (float)*(const int32_t *)t->data; break;
        case IR_I8: v = *(const int8_t *)t->data; break;
        case IR_U8: v = *(const uint8_t *)t->data; break;
        default: return sh_fail(c, "%s '%s' has unsupported dtype %s", names[k], t->name, ir_dtype_name(t->dtype));
        }
        if (!ir_set_float(c->g, c->n, names[k], v))
            return oom(c);
    }
    return infer_same(c);
}

/* ---- convolution and pooling ------------------------------------------- */

static npu_status ints_attr(sctx *c, const char *name, int want, int64_t def, int64_t *out, bool *given)
{
    int n = ir_attr_ints(c->n, name, out, IR_MAX_RANK * 2);
    if (given)
        *given = n >= 0;
    if (n < 0) {
        for (int i = 0; i < want; i++)
            out[i] = def;
        return NPU_OK;
    }
    if (n != want)
        return sh_fail(c, "attribute '%s' has %d values; expected %d", name, n, want);
    return NPU_OK;
}

/* Resolves strides, dilations and pads (auto_pad becomes explicit pads) for
 * nsp spatial dims of x, computes the output spatial sizes, and writes the
 * resolved attributes back. */
static npu_status conv_geometry(sctx *c, const ir_tensor *x, const int64_t *kernel, int nsp, bool ceil_mode,
                                int64_t *out_sp)
{
    int64_t strides[IR_MAX_RANK], dil[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
    npu_status st;
    if ((st = ints_attr(c, "strides", nsp, 1, strides, NULL)) || (st = ints_attr(c, "dilations", nsp, 1, dil, NULL)) ||
        (st = ints_attr(c, "pads", 2 * nsp, 0, pads, NULL)))
        return st;
    const char *ap = ir_attr_string(c->n, "auto_pad", "NOTSET");
    /* SAME_* gives ceil(in / stride) outputs whatever ceil_mode says (the
     * ONNX operator docs, onnxruntime): with the pads it takes (at least 0)
     * the floor already gives that many, the ceil one more where the input
     * needs no padding (in 8, stride 3, kernel 1: 4 instead of 3). */
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    ceil_mode = ceil_mode && !same;
    for (int i = 0; i < nsp; i++) {
        if (strides[i] < 1 || dil[i] < 1 || kernel[i] < 1)
            return sh_fail(c, "kernel_shape, strides and dilations must be positive");
        /* bounded so that the arithmetic below cannot overflow */
        if (strides[i] > SHAPE_MAX_NUMEL || kernel[i] - 1 > SHAPE_MAX_NUMEL / dil[i])
            return sh_fail(c, "kernel_shape, strides or dilations are too large");
        if (pads[i] < 0 || pads[i + nsp] < 0)
            return sh_fail(c, "pads must not be negative");
        if (pads[i] > SHAPE_MAX_NUMEL || pads[i + nsp] > SHAPE_MAX_NUMEL)
            return sh_fail(c, "pads are too large");
        int64_t in = x->dims[2 + i], ek = (kernel[i] - 1) * dil[i] + 1;
        if (!strcmp(ap, "VALID")) {
            pads[i] = pads[i + nsp] = 0;
        } else if (same) {
            int64_t out = (in + strides[i] - 1) / strides[i];
            int64_t total = (out - 1) * strides[i] + ek - in;
            if (total < 0)
                total = 0;
            int64_t small = total / 2, big = total - small;
            bool upper = !strcmp(ap, "SAME_UPPER");
            pads[i] = upper ? small : big;
            pads[i + nsp] = upper ? big : small;
        } else if (strcmp(ap, "NOTSET")) {
            return sh_fail(c, "auto_pad '%s' is not supported (NOTSET, SAME_UPPER, SAME_LOWER, VALID)", ap);
        }
        int64_t span = in + pads[i] + pads[i + nsp] - ek;
        if (span < 0)
            return sh_fail(c, "spatial dimension %d: input %lld (padded %lld) is smaller than the kernel extent %lld",
                           i, (long long)in, (long long)(in + pads[i] + pads[i + nsp]), (long long)ek);
        out_sp[i] = 1 + (ceil_mode ? (span + strides[i] - 1) / strides[i] : span / strides[i]);
        /* ceil_mode drops a last window that starts past the input and its
         * begin padding, as onnxruntime, PyTorch and ONNX's reference since
         * 1.16 (kernel 1, stride 2 over 4 rows: 2 windows, not 3) */
        if (ceil_mode && out_sp[i] > 1 && (out_sp[i] - 1) * strides[i] >= in + pads[i])
            out_sp[i]--;
    }
    if (!ir_set_ints(c->g, c->n, "kernel_shape", nsp, kernel) || !ir_set_ints(c->g, c->n, "strides", nsp, strides) ||
        !ir_set_ints(c->g, c->n, "dilations", nsp, dil) || !ir_set_ints(c->g, c->n, "pads", 2 * nsp, pads))
        return oom(c);
    if (ir_attr_find(c->n, "auto_pad") && !ir_set_string(c->g, c->n, "auto_pad", "NOTSET"))
        return oom(c);
    return NPU_OK;
}

/* Conv and QLinearConv: x, w are input indices; bias index or -1. */
static npu_status infer_conv(sctx *c, int xi, int wi, int bi, ir_dtype out_dt, bool use_x_dt)
{
    ir_tensor *x = NULL, *w = NULL;
    npu_status st;
    if ((st = sh_need(c, xi, &x)) || (st = sh_need(c, wi, &w)))
        return st;
    char bx[160], bw[160];
    if (x->rank < 3 || w->rank != x->rank)
        return sh_fail(c, "input %s and weight %s must have the same rank, at least 3",
                       sh_fmt(bx, sizeof bx, x->rank, x->dims), sh_fmt(bw, sizeof bw, w->rank, w->dims));
    int nsp = x->rank - 2;
    int64_t group = ir_attr_int(c->n, "group", 1);
    if (group < 1 || w->dims[0] % group || x->dims[1] != w->dims[1] * group)
        return sh_fail(c, "input %s, weight %s and group %lld do not agree on channels",
                       sh_fmt(bx, sizeof bx, x->rank, x->dims), sh_fmt(bw, sizeof bw, w->rank, w->dims),
                       (long long)group);
    int64_t ks[IR_MAX_RANK];
    bool given;
    if ((st = ints_attr(c, "kernel_shape", nsp, 0, ks, &given)))
        return st;
    for (int i = 0; i < nsp; i++) {
        if (given && ks[i] != w->dims[2 + i])
            return sh_fail(c, "kernel_shape does not match weight %s", sh_fmt(bw, sizeof bw, w->rank, w->dims));
        ks[i] = w->dims[2 + i];
    }
    ir_tensor *b = bi >= 0 ? sh_in(c->n, bi) : NULL;
    if (b && (!b->shape_known || ir_tensor_numel(b) != w->dims[0] || b->rank != 1))
        return sh_fail(c, "bias '%s' must have %lld values", b->name, (long long)w->dims[0]);
    int64_t d[IR_MAX_RANK] = {x->dims[0], w->dims[0]};
    if ((st = conv_geometry(c, x, ks, nsp, false, d + 2)))
        return st;
    return sh_set(c, 0, use_x_dt ? x->dtype : out_dt, x->rank, d);
}

static npu_status infer_conv_transpose(sctx *c)
{
    ir_tensor *x = NULL, *w = NULL;
    npu_status st;
    if ((st = sh_need(c, 0, &x)) || (st = sh_need(c, 1, &w)) || (st = sh_same_dtype(c, x, w)))
        return st;
    char bx[160], bw[160];
    int64_t group = ir_attr_int(c->n, "group", 1);
    if (x->rank < 3 || w->rank != x->rank || group < 1 || x->dims[1] != w->dims[0] || w->dims[0] % group)
        return sh_fail(c, "input %s, weight %s and group %lld do not agree", sh_fmt(bx, sizeof bx, x->rank, x->dims),
                       sh_fmt(bw, sizeof bw, w->rank, w->dims), (long long)group);
    int nsp = x->rank - 2;
    int64_t ks[IR_MAX_RANK], strides[IR_MAX_RANK], dil[IR_MAX_RANK], opad[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
    int64_t oshape[IR_MAX_RANK];
    bool given, have_oshape;
    if ((st = ints_attr(c, "kernel_shape", nsp, 0, ks, &given)) || (st = ints_attr(c, "strides", nsp, 1, strides, NULL)) ||
        (st = ints_attr(c, "dilations", nsp, 1, dil, NULL)) || (st = ints_attr(c, "output_padding", nsp, 0, opad, NULL)) ||
        (st = ints_attr(c, "pads", 2 * nsp, 0, pads, NULL)))
        return st;
    /* output_shape may list all dims or only the spatial ones */
    int no = ir_attr_ints(c->n, "output_shape", oshape, IR_MAX_RANK);
    have_oshape = no >= 0;
    if (no == x->rank)
        memmove(oshape, oshape + 2, sizeof *oshape * (size_t)nsp);
    else if (have_oshape && no != nsp)
        return sh_fail(c, "output_shape has %d values; expected %d", no, nsp);
    const char *ap = ir_attr_string(c->n, "auto_pad", "NOTSET");
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
        return sh_fail(c, "auto_pad '%s' is not supported (NOTSET, SAME_UPPER, SAME_LOWER, VALID)", ap);
    /* every factor bounded before a product, so that no size overflows */
    if (w->dims[1] > SHAPE_MAX_NUMEL / group)
        return sh_fail(c, "group %lld times weight %s is too many channels", (long long)group,
                       sh_fmt(bw, sizeof bw, w->rank, w->dims));
    int64_t d[IR_MAX_RANK] = {x->dims[0], w->dims[1] * group};
    for (int i = 0; i < nsp; i++) {
        if (given && ks[i] != w->dims[2 + i])
            return sh_fail(c, "kernel_shape does not match weight %s", sh_fmt(bw, sizeof bw, w->rank, w->dims));
        ks[i] = w->dims[2 + i];
        if (strides[i] < 1 || dil[i] < 1 || ks[i] < 1 || opad[i] < 0 || pads[i] < 0 || pads[i + nsp] < 0)
            return sh_fail(c, "strides, dilations and kernel must be positive, pads non-negative");
        if (x->dims[2 + i] - 1 > SHAPE_MAX_NUMEL / strides[i] || ks[i] - 1 > SHAPE_MAX_NUMEL / dil[i] ||
            opad[i] > SHAPE_MAX_NUMEL || pads[i] > SHAPE_MAX_NUMEL || pads[i + nsp] > SHAPE_MAX_NUMEL ||
            (have_oshape && (oshape[i] < 0 || oshape[i] > SHAPE_MAX_NUMEL)))
            return sh_fail(c, "strides, dilations, kernel, pads or output_shape are too large");
        int64_t full = strides[i] * (x->dims[2 + i] - 1) + opad[i] + (ks[i] - 1) * dil[i] + 1;
        if (have_oshape || same) {
            int64_t want = have_oshape ? oshape[i] : x->dims[2 + i] * strides[i];
            int64_t total = full - want;
            if (total < 0)
                return sh_fail(c, "output size %lld is larger than the %lld the input can reach", (long long)want,
                               (long long)full);
            /* ONNX: the extra pad goes to the end for SAME_UPPER, else the start */
            bool upper = !strcmp(ap, "SAME_UPPER");
            pads[i] = upper ? total / 2 : total - total / 2;
            pads[i + nsp] = total - pads[i];
        } else if (!strcmp(ap, "VALID")) {
            pads[i] = pads[i + nsp] = 0;
        }
        d[2 + i] = full - pads[i] - pads[i + nsp];
        if (d[2 + i] < 1)
            return sh_fail(c, "pads leave an empty output");
    }
    ir_tensor *b = sh_in(c->n, 2);
    if (b && (!b->shape_known || b->rank != 1 || b->dims[0] != d[1]))
        return sh_fail(c, "bias '%s' must have %lld values", b->name, (long long)d[1]);
    if (!ir_set_ints(c->g, c->n, "kernel_shape", nsp, ks) || !ir_set_ints(c->g, c->n, "strides", nsp, strides) ||
        !ir_set_ints(c->g, c->n, "dilations", nsp, dil) || !ir_set_ints(c->g, c->n, "pads", 2 * nsp, pads) ||
        !ir_set_ints(c->g, c->n, "output_padding", nsp, opad) ||
        (ir_attr_find(c->n, "auto_pad") && !ir_set_string(c->g, c->n, "auto_pad", "NOTSET")))
        return oom(c);
    return sh_set(c, 0, x->dtype, x->rank, d);
}

static npu_status infer_pool(sctx *c)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    if (x->rank < 3)
        return sh_fail(c, "input '%s' must have rank 3 or more (N, C, spatial...)", x->name);
    int nsp = x->rank - 2;
    int64_t ks[IR_MAX_RANK];
    bool given;
    if ((st = ints_attr(c, "kernel_shape", nsp, 0, ks, &given)))
        return st;
    if (!given)
        return sh_fail(c, "attribute 'kernel_shape' is required");
    int64_t d[IR_MAX_RANK] = {x->dims[0], x->dims[1]};
    if ((st = conv_geometry(c, x, ks, nsp, ir_attr_int(c->n, "ceil_mode", 0) != 0, d + 2)))
        return st;
    if ((st = sh_set(c, 0, x->dtype, x->rank, d)))
        return st;
    return sh_set(c, 1, IR_I64, x->rank, d); /* MaxPool's Indices */
}

static npu_status infer_global_pool(sctx *c)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    if (x->rank < 2)
        return sh_fail(c, "input '%s' must have rank 2 or more", x->name);
    int64_t d[IR_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        d[i] = i < 2 ? x->dims[i] : 1;
    return sh_set(c, 0, x->dtype, x->rank, d);
}

/* ---- matrix ops ------------------------------------------------------------ */

static npu_status infer_gemm(sctx *c)
{
    ir_tensor *a = NULL, *b = NULL;
    npu_status st;
    if ((st = sh_need(c, 0, &a)) || (st = sh_need(c, 1, &b)) || (st = sh_weight_dtype(c, a, b)))
        return st;
    char ba[160], bb[160];
    if (a->rank != 2 || b->rank != 2)
        return sh_fail(c, "A %s and B %s must be 2-D", sh_fmt(ba, sizeof ba, a->rank, a->dims),
                       sh_fmt(bb, sizeof bb, b->rank, b->dims));
    bool ta = ir_attr_int(c->n, "transA", 0) != 0, tb = ir_attr_int(c->n, "transB", 0) != 0;
    int64_t m = a->dims[ta], k = a->dims[!ta], kb = b->dims[tb], nn = b->dims[!tb];
    if (k != kb)
        return sh_fail(c, "A %s%s and B %s%s do not agree on K", sh_fmt(ba, sizeof ba, a->rank, a->dims),
                       ta ? "^T" : "", sh_fmt(bb, sizeof bb, b->rank, b->dims), tb ? "^T" : "");
    int64_t d[2] = {m, nn};
    ir_tensor *cc = sh_in(c->n, 2);
    if (cc) {
        int rank;
        int64_t bd[IR_MAX_RANK];
        if (!cc->shape_known)
            return sh_need(c, 2, &cc);
        if ((st = sh_broadcast(c, 2, d, cc->rank, cc->dims, &rank, bd)))
            return st;
        if (rank != 2 || bd[0] != m || bd[1] != nn)
            return sh_fail(c, "C %s does not broadcast to [%lld,%lld]", sh_fmt(ba, sizeof ba, cc->rank, cc->dims),
                           (long long)m, (long long)nn);
    }
    return sh_set(c, 0, a->dtype, 2, d);
}

static npu_status infer_matmul(sctx *c, int ai, int bi, ir_dtype out_dt, bool use_a_dt)
{
    ir_tensor *a = NULL, *b = NULL;
    npu_status st;
    if ((st = sh_need(c, ai, &a)) || (st = sh_need(c, bi, &b)))
        return st;
    if (use_a_dt && (st = sh_same_dtype(c, a, b)))
        return st;
    char ba[160], bb[160];
    if (a->rank < 1 || b->rank < 1)
        return sh_fail(c, "operands must have rank 1 or more");
    /* 1-D operands: [k] acts as [1,k] on the left and [k,1] on the right */
    int64_t ad[IR_MAX_RANK + 1], bd[IR_MAX_RANK + 1];
    int ra = a->rank, rb = b->rank;
    memcpy(ad + (ra == 1), a->dims, sizeof *ad * (size_t)ra);
    memcpy(bd, b->dims, sizeof *bd * (size_t)rb);
    if (ra == 1)
        ad[0] = 1, ra = 2;
    if (rb == 1)
        bd[1] = 1, rb = 2;
    if (ad[ra - 1] != bd[rb - 2])
        return sh_fail(c, "shapes %s and %s do not agree on K for MatMul", sh_fmt(ba, sizeof ba, a->rank, a->dims),
                       sh_fmt(bb, sizeof bb, b->rank, b->dims));
    int rank;
    int64_t d[IR_MAX_RANK + 2];
    if ((st = sh_broadcast(c, ra - 2, ad, rb - 2, bd, &rank, d)))
        return st;
    if (a->rank > 1)
        d[rank++] = ad[ra - 2];
    if (b->rank > 1)
        d[rank++] = bd[rb - 1];
    return sh_set(c, 0, use_a_dt ? a->dtype : out_dt, rank, d);
}

static npu_status infer_batch_norm(sctx *c)
{
    ir_tensor *x = NULL, *p = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    if (x->rank < 2)
        return sh_fail(c, "input '%s' must have rank 2 or more", x->name);
    for (int i = 1; i < 5; i++) {
        if ((st = sh_need(c, i, &p)))
            return st;
        if (p->rank != 1 || p->dims[0] != x->dims[1])
            return sh_fail(c, "parameter '%s' must have %lld values (the channels of '%s')", p->name,
                           (long long)x->dims[1], x->name);
    }
    return sh_set(c, 0, x->dtype, x->rank, x->dims);
}

/* ---- reductions and normalization -------------------------------------- */

static npu_status infer_softmax(sctx *c)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    int64_t axis = 0;
    if ((st = sh_axis(c, "axis", ir_attr_int(c->n, "axis", -1), x->rank, false, &axis)))
        return st;
    if (!ir_set_int(c->g, c->n, "axis", axis))
        return oom(c);
    return sh_set(c, 0, x->dtype, x->rank, x->dims);
}

/* LayerNormalization: Y as X; the optional Mean and InvStdDev keep X's
 * leading dims and are 1 from the axis on. The axis is stored resolved. */
static npu_status infer_layer_norm(sctx *c)
{
    npu_status st = infer_softmax(c); /* the axis resolved, Y as X */
    if (st)
        return st;
    const ir_tensor *x = c->n->inputs[0];
    int64_t axis = ir_attr_int(c->n, "axis", -1), d[IR_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        d[i] = i < axis ? x->dims[i] : 1;
    for (int k = 1; k < 3 && k < c->n->n_outputs; k++)
        if (c->n->outputs[k] && (st = sh_set(c, k, IR_F32, x->rank, d)))
            return st;
    return NPU_OK;
}

/* Reduce*: the resolved "axes" attribute lists exactly the reduced axes,
 * sorted; empty means none (ReduceSum's noop_with_empty_axes). */
static npu_status infer_reduce(sctx *c)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    int64_t axes[SHAPE_MAX_PARAMS];
    int n;
    if ((st = sh_ints_param(c, "axes", 1, axes, SHAPE_MAX_PARAMS, &n)))
        return st;
    bool reduce[IR_MAX_RANK] = {false};
    if (n <= 0 && !ir_attr_int(c->n, "noop_with_empty_axes", 0)) {
        for (int i = 0; i < x->rank; i++)
            reduce[i] = true;
    }
    for (int i = 0; i < n; i++) {
        int64_t a = 0;
        if ((st = sh_axis(c, "axis", axes[i], x->rank, false, &a)))
            return st;
        if (reduce[a])
            return sh_fail(c, "axis %lld is listed twice", (long long)axes[i]);
        reduce[a] = true;
    }
    bool keep = ir_attr_int(c->n, "keepdims", 1) != 0;
    int64_t d[IR_MAX_RANK];
    int rank = 0, na = 0;
    for (int i = 0; i < x->rank; i++) {
        if (reduce[i])
            axes[na++] = i;
        if (!reduce[i] || keep)
            d[rank++] = reduce[i] ? 1 : x->dims[i];
    }
    if (!ir_set_ints(c->g, c->n, "axes", na, axes))
        return oom(c);
    return sh_set(c, 0, x->dtype, rank, d);
}

/* ---- types and quantization -------------------------------------------- */

bool ir_dtype_from_onnx(int onnx_type, ir_dtype *out)
{
    /* TensorProto.DataType numbers (stable across ONNX versions) */
    static const int map[][2] = {{1, IR_F32}, {2, IR_U8}, {3, IR_I8}, {5, IR_I16}, {6, IR_I32},
                                 {7, IR_I64}, {9, IR_BOOL}, {10, IR_F16}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i][0] == onnx_type) {
            *out = (ir_dtype)map[i][1];
            return true;
        }
    return false;
}

static npu_status infer_cast(sctx *c)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    ir_dtype dt;
    const ir_attr *to = ir_attr_find(c->n, "to");
    if (!to || to->kind != IR_ATTR_INT)
        return sh_fail(c, "attribute 'to' is required");
    if (!ir_dtype_from_onnx((int)to->i, &dt))
        return sh_fail(c, "'to' = %lld is not a supported dtype (float, float16, int64, int32, int16, int8, uint8, bool)",
                       (long long)to->i);
    return sh_set(c, 0, dt, x->rank, x->dims);
}

/* QuantizeLinear / DequantizeLinear: scale and zero point per tensor or per axis. */
static npu_status infer_qdq(sctx *c, bool quantize)
{
    ir_tensor *x = NULL, *s = NULL;
    npu_status st;
    if ((st = sh_need(c, 0, &x)) || (st = sh_need(c, 1, &s)))
        return st;
    ir_tensor *zp = sh_in(c->n, 2);
    if (s->rank > 1 || (zp && (!zp->shape_known || !ir_shape_equal(s, zp))))
        return sh_fail(c, "scale and zero point must be scalars or 1-D of the same length");
    if (s->rank == 1 && ir_tensor_numel(s) != 1) {
        int64_t axis = 0;
        if ((st = sh_axis(c, "axis", ir_attr_int(c->n, "axis", 1), x->rank, false, &axis)))
            return st;
        if (s->dims[0] != x->dims[axis])
            return sh_fail(c, "%lld scales for %lld channels along axis %lld", (long long)s->dims[0],
                           (long long)x->dims[axis], (long long)axis);
        if (!ir_set_int(c->g, c->n, "axis", axis))
            return oom(c);
    }
    ir_dtype out = IR_F32;
    if (quantize) {
        out = zp ? zp->dtype : IR_U8;
        if (out != IR_U8 && out != IR_I8 && out != IR_I16) /* int16: A16W8 (ONNX opset 21) */
            return sh_fail(c, "zero point '%s' must be uint8, int8 or int16, not %s", zp->name,
                           ir_dtype_name(out));
    }
    return sh_set(c, 0, out, x->rank, x->dims);
}

static npu_status qlinear_out_dtype(sctx *c, int zp_index, ir_dtype *dt)
{
    ir_tensor *zp = NULL;
    npu_status st = sh_need(c, zp_index, &zp);
    if (st)
        return st;
    if (zp->dtype != IR_U8 && zp->dtype != IR_I8)
        return sh_fail(c, "zero point '%s' must be uint8 or int8, not %s", zp->name, ir_dtype_name(zp->dtype));
    *dt = zp->dtype;
    return NPU_OK;
}

/* ---- dispatch ---------------------------------------------------------------- */

npu_status ir_infer_node(ir_graph *g, ir_node *n, npu_err *err)
{
    sctx ctx = {g, n, err}, *c = &ctx;
    ir_dtype dt;
    npu_status st;
    /* every op's first output is required (ONNX); the kernels write it
     * unchecked, and a stored graph need not say so (the graph fuzzer's Gelu) */
    if (n->n_outputs < 1 || !n->outputs[0])
        return npu_fail(err, NPU_EUSER, "node '%s' (%s): its first output is missing", n->name, ir_op_name(n->op));
    switch (n->op) {
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV: case IR_OP_MAX: case IR_OP_MIN:
        return infer_broadcast(c, 0, false, IR_F32, true);
    case IR_OP_POW:
        return infer_broadcast(c, 0, true, IR_F32, true);
    case IR_OP_EQUAL: case IR_OP_LESS: case IR_OP_GREATER:
        return infer_broadcast(c, 0, false, IR_BOOL, false);
    case IR_OP_WHERE: return infer_where(c);
    case IR_OP_PRELU: return infer_prelu(c);
    case IR_OP_NOT: {
        ir_tensor *x = NULL;
        if ((st = sh_need(c, 0, &x)))
            return st;
        if (x->dtype != IR_BOOL)
            return sh_fail(c, "input '%s' must be bool, not %s", x->name, ir_dtype_name(x->dtype));
        return infer_same(c);
    }
#define IR_UNARY(OP, UN) case IR_OP_##OP:
#include "ir/unary.def"
#undef IR_UNARY
        if (c->n->op == IR_OP_CLIP)
            return infer_clip(c);
        return infer_same(c);
    case IR_OP_REQUANTIZE: { /* the one op between widths: int8 <-> int16 (A16W8) keeps its output's type */
        ir_tensor *x = NULL, *y = c->n->outputs[0];
        if ((st = sh_need(c, 0, &x)))
            return st;
        bool wid = (x->dtype == IR_I8 || x->dtype == IR_I16) && (y->dtype == IR_I8 || y->dtype == IR_I16);
        return sh_set(c, 0, wid ? y->dtype : x->dtype, x->rank, x->dims);
    }
    case IR_OP_IDENTITY: case IR_OP_LUT:
    case IR_OP_GELU: case IR_OP_QSOFTMAX: case IR_OP_QLAYER_NORM:
        return infer_same(c);
    case IR_OP_LAYER_NORM: return infer_layer_norm(c);
    case IR_OP_DROPOUT: {
        ir_tensor *x = NULL;
        if ((st = sh_need(c, 0, &x)) || (st = infer_same(c)))
            return st;
        return sh_set(c, 1, IR_BOOL, x->rank, x->dims); /* the optional mask */
    }
    case IR_OP_CAST: return infer_cast(c);
    case IR_OP_CONV: {
        ir_tensor *x = NULL, *w = NULL;
        if ((st = sh_need(c, 0, &x)) || (st = sh_need(c, 1, &w)) || (st = sh_weight_dtype(c, x, w)))
            return st;
        return infer_conv(c, 0, 1, 2, IR_F32, true);
    }
    case IR_OP_QLINEAR_CONV:
        if ((st = qlinear_out_dtype(c, 7, &dt)))
            return st;
        return infer_conv(c, 0, 3, 8, dt, false);
    case IR_OP_CONV_TRANSPOSE: return infer_conv_transpose(c);
    case IR_OP_MAX_POOL: case IR_OP_AVERAGE_POOL: return infer_pool(c);
    case IR_OP_GLOBAL_AVERAGE_POOL: case IR_OP_GLOBAL_MAX_POOL: return infer_global_pool(c);
    case IR_OP_GEMM: return infer_gemm(c);
    case IR_OP_MATMUL: return infer_matmul(c, 0, 1, IR_F32, true);
    case IR_OP_QLINEAR_MATMUL:
        if ((st = qlinear_out_dtype(c, 7, &dt)))
            return st;
        return infer_matmul(c, 0, 3, dt, false);
    case IR_OP_BATCH_NORM: return infer_batch_norm(c);
    case IR_OP_SOFTMAX: case IR_OP_LOG_SOFTMAX: return infer_softmax(c);
    case IR_OP_REDUCE_MEAN: case IR_OP_REDUCE_SUM: case IR_OP_REDUCE_MAX: case IR_OP_REDUCE_MIN:
        return infer_reduce(c);
    case IR_OP_QUANTIZE_LINEAR: return infer_qdq(c, true);
    case IR_OP_DEQUANTIZE_LINEAR: return infer_qdq(c, false);
    default: break;
    }
    bool handled = false;
    st = sh_infer_data(c, &handled);
    if (!handled)
        return npu_fail(err, NPU_EINTERNAL, "node '%s' (%s): no shape inference for this op", n->name,
                        ir_op_name(n->op));
    return st;
}

npu_status ir_infer_shapes(ir_graph *g, npu_err *err)
{
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i]->dead)
            continue;
        npu_status st = ir_infer_node(g, g->nodes[i], err);
        if (st != NPU_OK)
            return st;
    }
    return NPU_OK;
}
