/* Shape inference for data movement and shape ops: concat/split/slice,
 * reshapes, transpose, pad, resize, gather, expand, tile and the ops that
 * only exist at compile time (Shape, ConstantOfShape, Range). */
#include <math.h>
#include <string.h>

#include "ir/shape_internal.h"

static npu_status oom(sctx *c)
{
    return npu_fail(c->err, NPU_EINTERNAL, "node '%s' (%s): out of memory", c->n->name, ir_op_name(c->n->op));
}

static npu_status infer_concat(sctx *c)
{
    ir_tensor *t0 = NULL, *t = NULL;
    npu_status st = sh_need(c, 0, &t0);
    if (st)
        return st;
    const ir_attr *a = ir_attr_find(c->n, "axis");
    if (!a || a->kind != IR_ATTR_INT)
        return sh_fail(c, "attribute 'axis' is required");
    int64_t axis = 0;
    if ((st = sh_axis(c, "axis", a->i, t0->rank, false, &axis)))
        return st;
    int64_t d[IR_MAX_RANK];
    memcpy(d, t0->dims, sizeof d);
    char b0[160], b1[160];
    for (int i = 1; i < c->n->n_inputs; i++) {
        if ((st = sh_need(c, i, &t)) || (st = sh_same_dtype(c, t0, t)))
            return st;
        bool ok = t->rank == t0->rank;
        for (int k = 0; ok && k < t->rank; k++)
            ok = k == axis || t->dims[k] == t0->dims[k];
        if (!ok)
            return sh_fail(c, "inputs %s and %s differ outside axis %lld", sh_fmt(b0, sizeof b0, t0->rank, t0->dims),
                           sh_fmt(b1, sizeof b1, t->rank, t->dims), (long long)axis);
        d[axis] += t->dims[axis];
    }
    if (!ir_set_int(c->g, c->n, "axis", axis))
        return oom(c);
    return sh_set(c, 0, t0->dtype, t0->rank, d);
}

/* Split: resolved "split" (sizes) and non-negative "axis" attributes. */
static npu_status infer_split(sctx *c)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    int64_t axis = 0;
    if ((st = sh_axis(c, "axis", ir_attr_int(c->n, "axis", 0), x->rank, false, &axis)))
        return st;
    int nout = c->n->n_outputs;
    if (nout < 1 || nout > SHAPE_MAX_PARAMS)
        return sh_fail(c, "%d outputs; 1 to %d are supported", nout, SHAPE_MAX_PARAMS);
    int64_t split[SHAPE_MAX_PARAMS];
    int n;
    if ((st = sh_ints_param(c, "split", 1, split, SHAPE_MAX_PARAMS, &n)))
        return st;
    int64_t dim = x->dims[axis], sum = 0;
    if (n < 0) {
        if (dim % nout)
            return sh_fail(c, "dimension %lld of axis %lld does not split evenly into %d outputs", (long long)dim,
                           (long long)axis, nout);
        for (int i = 0; i < nout; i++)
            split[i] = dim / nout;
        n = nout;
    }
    if (n != nout)
        return sh_fail(c, "split has %d sizes for %d outputs", n, nout);
    for (int i = 0; i < n; i++) {
        if (split[i] < 0)
            return sh_fail(c, "split sizes must not be negative");
        if (split[i] > dim) /* also keeps the sum from overflowing */
            return sh_fail(c, "split size %lld exceeds axis %lld's %lld", (long long)split[i], (long long)axis,
                           (long long)dim);
        sum += split[i];
    }
    if (sum != dim)
        return sh_fail(c, "split sizes add up to %lld, but axis %lld has %lld", (long long)sum, (long long)axis,
                       (long long)dim);
    if (!ir_set_int(c->g, c->n, "axis", axis) || !ir_set_ints(c->g, c->n, "split", n, split))
        return oom(c);
    for (int i = 0; i < nout; i++) {
        int64_t d[IR_MAX_RANK];
        memcpy(d, x->dims, sizeof d);
        d[axis] = split[i];
        if ((st = sh_set(c, i, x->dtype, x->rank, d)))
            return st;
    }
    return NPU_OK;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Slice: writes full-rank "starts", "ends", "axes" (0..rank-1) and "steps",
 * clamped as ONNX specifies, so a kernel needs no further checks. */
static npu_status infer_slice(sctx *c)
{
    ir_tensor *x = NULL, *ts = NULL, *te = NULL;
    npu_status st;
    if ((st = sh_need(c, 0, &x)) || (st = sh_need(c, 1, &ts)) || (st = sh_need(c, 2, &te)))
        return st;
    int64_t starts[SHAPE_MAX_PARAMS], ends[SHAPE_MAX_PARAMS], axes[SHAPE_MAX_PARAMS], steps[SHAPE_MAX_PARAMS];
    int ns, ne, na = -1, nst = -1;
    if ((st = sh_const_ints(c, ts, "starts", starts, SHAPE_MAX_PARAMS, &ns)) ||
        (st = sh_const_ints(c, te, "ends", ends, SHAPE_MAX_PARAMS, &ne)))
        return st;
    ir_tensor *ta = sh_in(c->n, 3), *tp = sh_in(c->n, 4);
    if (ta && (st = sh_const_ints(c, ta, "axes", axes, SHAPE_MAX_PARAMS, &na)))
        return st;
    if (tp && (st = sh_const_ints(c, tp, "steps", steps, SHAPE_MAX_PARAMS, &nst)))
        return st;
    if (ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return sh_fail(c, "starts, ends, axes and steps must have the same length");
    int64_t rs[IR_MAX_RANK], re[IR_MAX_RANK], rstep[IR_MAX_RANK], rax[IR_MAX_RANK], d[IR_MAX_RANK];
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < x->rank; i++) {
        rs[i] = 0, re[i] = x->dims[i], rstep[i] = 1, rax[i] = i;
        d[i] = x->dims[i];
    }
    for (int i = 0; i < ns; i++) {
        int64_t ax = 0;
        if ((st = sh_axis(c, "axis", na >= 0 ? axes[i] : i, x->rank, false, &ax)))
            return st;
        if (seen[ax])
            return sh_fail(c, "axis %lld is sliced twice", (long long)ax);
        seen[ax] = true;
        int64_t step = nst >= 0 ? steps[i] : 1, dim = x->dims[ax];
        if (step == 0)
            return sh_fail(c, "steps must not be 0");
        int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
        int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
        /* in unsigned arithmetic: step may be INT64_MIN, whose negation overflows */
        uint64_t ustep = step > 0 ? (uint64_t)step : 0u - (uint64_t)step;
        if (step > 0) {
            s = clamp64(s, 0, dim);
            e = clamp64(e, 0, dim);
            d[ax] = e > s ? (int64_t)((uint64_t)(e - s - 1) / ustep) + 1 : 0;
        } else {
            s = clamp64(s, 0, dim - 1);
            e = clamp64(e, -1, dim - 1);
            d[ax] = s > e ? (int64_t)((uint64_t)(s - e - 1) / ustep) + 1 : 0;
        }
        /* one element: store step +-1 and the end just past the start, so no later stage
         * multiplies by a step like INT64_MIN */
        if (d[ax] == 1)
            step = step > 0 ? 1 : -1, e = s + step;
        /* backward through index 0: an end of -1 would read as dim - 1 when the attributes are
         * read again (the reference's Slice, this inference after a rewrite); -dim - 1 reads as -1 */
        if (e < 0)
            e = -dim - 1;
        rs[ax] = s, re[ax] = e, rstep[ax] = step;
    }
    int r = x->rank;
    if (!ir_set_ints(c->g, c->n, "starts", r, rs) || !ir_set_ints(c->g, c->n, "ends", r, re) ||
        !ir_set_ints(c->g, c->n, "axes", r, rax) || !ir_set_ints(c->g, c->n, "steps", r, rstep))
        return oom(c);
    return sh_set(c, 0, x->dtype, r, d);
}

static npu_status infer_reshape(sctx *c)
{
    ir_tensor *x = NULL, *ts = NULL;
    npu_status st;
    if ((st = sh_need(c, 0, &x)) || (st = sh_need(c, 1, &ts)))
        return st;
    int64_t d[SHAPE_MAX_PARAMS];
    int n;
    if ((st = sh_const_ints(c, ts, "shape", d, SHAPE_MAX_PARAMS, &n)))
        return st;
    if (n > IR_MAX_RANK)
        return sh_fail(c, "target rank %d exceeds the supported %d", n, IR_MAX_RANK);
    bool allowzero = ir_attr_int(c->n, "allowzero", 0) != 0;
    int infer_at = -1;
    int64_t known = 1, total = ir_tensor_numel(x);
    char bx[160], bt[160];
    for (int i = 0; i < n; i++) {
        if (d[i] == 0 && !allowzero) {
            if (i >= x->rank)
                return sh_fail(c, "shape %s copies dimension %d, which input %s lacks", sh_fmt(bt, sizeof bt, n, d), i,
                               sh_fmt(bx, sizeof bx, x->rank, x->dims));
            d[i] = x->dims[i];
        }
        if (d[i] == -1) {
            if (infer_at >= 0)
                return sh_fail(c, "shape %s has more than one -1", sh_fmt(bt, sizeof bt, n, d));
            infer_at = i;
            continue;
        }
        if (d[i] < 0)
            return sh_fail(c, "shape %s has a negative dimension", sh_fmt(bt, sizeof bt, n, d));
        if (d[i] && known > SHAPE_MAX_NUMEL / d[i])
            return sh_fail(c, "shape %s is too large", sh_fmt(bt, sizeof bt, n, d));
        known *= d[i];
    }
    if (infer_at >= 0) {
        if (known == 0 || total % known)
            return sh_fail(c, "cannot reshape %s into %s", sh_fmt(bx, sizeof bx, x->rank, x->dims),
                           sh_fmt(bt, sizeof bt, n, d));
        d[infer_at] = total / known;
        known = total;
    }
    if (known != total)
        return sh_fail(c, "cannot reshape %s (%lld elements) into %s", sh_fmt(bx, sizeof bx, x->rank, x->dims),
                       (long long)total, sh_fmt(bt, sizeof bt, n, d));
    return sh_set(c, 0, x->dtype, n, d);
}

static npu_status infer_flatten(sctx *c)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    int64_t axis = 0;
    if ((st = sh_axis(c, "axis", ir_attr_int(c->n, "axis", 1), x->rank, true, &axis)))
        return st;
    int64_t d[2] = {1, 1};
    for (int i = 0; i < x->rank; i++)
        d[i >= axis] *= x->dims[i];
    if (!ir_set_int(c->g, c->n, "axis", axis))
        return oom(c);
    return sh_set(c, 0, x->dtype, 2, d);
}

/* Squeeze and Unsqueeze: "axes" from the attribute (opset < 13) or the
 * constant input (13+), written back sorted and non-negative. */
static npu_status infer_squeeze(sctx *c, bool unsqueeze)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    int64_t axes[SHAPE_MAX_PARAMS];
    int n;
    if ((st = sh_ints_param(c, "axes", 1, axes, SHAPE_MAX_PARAMS, &n)))
        return st;
    if (unsqueeze && n < 0)
        return sh_fail(c, "axes are required");
    int out_rank = unsqueeze ? x->rank + n : x->rank;
    if (out_rank > IR_MAX_RANK)
        return sh_fail(c, "output rank %d exceeds the supported %d", out_rank, IR_MAX_RANK);
    bool mark[IR_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        int64_t a = 0;
        if ((st = sh_axis(c, "axis", axes[i], out_rank, false, &a)))
            return st;
        if (mark[a])
            return sh_fail(c, "axis %lld is listed twice", (long long)axes[i]);
        mark[a] = true;
    }
    int64_t d[IR_MAX_RANK];
    int rank = 0, na = 0;
    char bx[160];
    if (unsqueeze) {
        for (int i = 0, k = 0; i < out_rank; i++) {
            d[i] = mark[i] ? 1 : x->dims[k++];
            if (mark[i])
                axes[na++] = i;
        }
        rank = out_rank;
    } else {
        for (int i = 0; i < x->rank; i++) {
            if (n < 0 && x->dims[i] == 1)
                mark[i] = true;
            if (mark[i] && x->dims[i] != 1)
                return sh_fail(c, "cannot squeeze axis %d of %s: its size is not 1", i,
                               sh_fmt(bx, sizeof bx, x->rank, x->dims));
            if (mark[i])
                axes[na++] = i;
            else
                d[rank++] = x->dims[i];
        }
    }
    if (!ir_set_ints(c->g, c->n, "axes", na, axes))
        return oom(c);
    return sh_set(c, 0, x->dtype, rank, d);
}

static npu_status infer_transpose(sctx *c)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    int64_t perm[IR_MAX_RANK];
    int n = ir_attr_ints(c->n, "perm", perm, IR_MAX_RANK);
    if (n < 0) {
        for (int i = 0; i < x->rank; i++)
            perm[i] = x->rank - 1 - i;
        n = x->rank;
    }
    if (n != x->rank)
        return sh_fail(c, "perm has %d values for rank %d", n, x->rank);
    bool seen[IR_MAX_RANK] = {false};
    int64_t d[IR_MAX_RANK];
    for (int i = 0; i < n; i++) {
        if (perm[i] < 0 || perm[i] >= n || seen[perm[i]])
            return sh_fail(c, "perm is not a permutation of 0..%d", n - 1);
        seen[perm[i]] = true;
        d[i] = x->dims[perm[i]];
    }
    if (!ir_set_ints(c->g, c->n, "perm", n, perm))
        return oom(c);
    return sh_set(c, 0, x->dtype, x->rank, d);
}

/* Pad: "pads" and (when given) "value" attributes from the opset-11+ inputs. */
static npu_status infer_pad(sctx *c)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    int64_t pads[SHAPE_MAX_PARAMS];
    int n;
    if ((st = sh_ints_param(c, "pads", 1, pads, SHAPE_MAX_PARAMS, &n)))
        return st;
    if (n <= 0) {
        memset(pads, 0, sizeof pads);
        n = 2 * x->rank;
    }
    if (n != 2 * x->rank)
        return sh_fail(c, "pads has %d values; expected %d for rank %d", n, 2 * x->rank, x->rank);
    int64_t d[IR_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        if (pads[i] < -SHAPE_MAX_NUMEL || pads[i] > SHAPE_MAX_NUMEL || pads[i + x->rank] < -SHAPE_MAX_NUMEL ||
            pads[i + x->rank] > SHAPE_MAX_NUMEL)
            return sh_fail(c, "pads for dimension %d are too large", i);
        d[i] = x->dims[i] + pads[i] + pads[i + x->rank];
        if (d[i] < 0)
            return sh_fail(c, "pads remove more than dimension %d holds", i);
    }
    ir_tensor *cv = sh_in(c->n, 2);
    if (cv && cv->shape_known && ir_tensor_numel(cv) > 0) {
        if (ir_tensor_numel(cv) != 1)
            return sh_fail(c, "constant_value '%s' must be a scalar", cv->name);
        if (cv->dtype != x->dtype)
            return sh_same_dtype(c, x, cv);
        if (cv->data) {
            float v = 0;
            switch (cv->dtype) {
            case IR_F32: v = *(const float *)cv->data; break;
            case IR_I64: v = (float)*(const int64_t *)cv->data; break;
            case IR_I32: v = (float)*(const int32_t *)cv->data; break;
            case IR_I8: v = *(const int8_t *)cv->data; break;
            case IR_U8: v = *(const uint8_t *)cv->data; break;
            default: break;
            }
            if (!ir_set_float(c->g, c->n, "value", v))
                return oom(c);
        }
    }
    if (!ir_set_ints(c->g, c->n, "pads", 2 * x->rank, pads))
        return oom(c);
    return sh_set(c, 0, x->dtype, x->rank, d);
}

/* Resize (scales_idx 2, sizes_idx 3) and Upsample (scales 1): the effective
 * per-axis scale goes into a "scales" attribute. out = floor(in * scale),
 * in float as ONNX computes it. */
static npu_status infer_resize(sctx *c, int scales_idx, int sizes_idx)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    float scales[IR_MAX_RANK];
    int64_t sizes[SHAPE_MAX_PARAMS], d[IR_MAX_RANK];
    int ns = -1, nz = -1;
    ir_tensor *tz = sizes_idx >= 0 ? sh_in(c->n, sizes_idx) : NULL;
    ir_tensor *ts = sh_in(c->n, scales_idx);
    if (tz && tz->shape_known && ir_tensor_numel(tz) > 0) {
        if ((st = sh_const_ints(c, tz, "sizes", sizes, SHAPE_MAX_PARAMS, &nz)))
            return st;
        if (nz != x->rank)
            return sh_fail(c, "sizes has %d values for rank %d", nz, x->rank);
        for (int i = 0; i < x->rank; i++) {
            if (sizes[i] < 0)
                return sh_fail(c, "sizes must not be negative");
            d[i] = sizes[i];
            scales[i] = x->dims[i] ? (float)sizes[i] / (float)x->dims[i] : 1.0f;
        }
    } else if (ts && ts->shape_known && ir_tensor_numel(ts) > 0) {
        if ((st = sh_const_floats(c, ts, "scales", scales, IR_MAX_RANK, &ns)))
            return st;
        if (ns != x->rank)
            return sh_fail(c, "scales has %d values for rank %d", ns, x->rank);
        for (int i = 0; i < x->rank; i++) {
            if (!(scales[i] > 0) || !isfinite(scales[i]))
                return sh_fail(c, "scales must be positive");
            double v = floorf((float)x->dims[i] * scales[i]);
            if (v > (double)SHAPE_MAX_NUMEL)
                return sh_fail(c, "scale %g makes dimension %d too large", (double)scales[i], i);
            d[i] = (int64_t)v;
        }
    } else {
        return sh_fail(c, "needs constant scales or sizes");
    }
    if (!ir_set_floats(c->g, c->n, "scales", x->rank, scales))
        return oom(c);
    return sh_set(c, 0, x->dtype, x->rank, d);
}

static npu_status infer_gather(sctx *c)
{
    ir_tensor *x = NULL, *idx = NULL;
    npu_status st;
    if ((st = sh_need(c, 0, &x)) || (st = sh_need(c, 1, &idx)))
        return st;
    if (idx->dtype != IR_I64 && idx->dtype != IR_I32)
        return sh_fail(c, "indices '%s' must be int64 or int32, not %s", idx->name, ir_dtype_name(idx->dtype));
    int64_t axis = 0;
    if ((st = sh_axis(c, "axis", ir_attr_int(c->n, "axis", 0), x->rank, false, &axis)))
        return st;
    int rank = x->rank - 1 + idx->rank;
    if (rank > IR_MAX_RANK)
        return sh_fail(c, "output rank %d exceeds the supported %d", rank, IR_MAX_RANK);
    int64_t d[IR_MAX_RANK];
    int k = 0;
    for (int i = 0; i < axis; i++)
        d[k++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++)
        d[k++] = idx->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++)
        d[k++] = x->dims[i];
    if (!ir_set_int(c->g, c->n, "axis", axis))
        return oom(c);
    return sh_set(c, 0, x->dtype, rank, d);
}

static npu_status infer_expand(sctx *c)
{
    ir_tensor *x = NULL, *ts = NULL;
    npu_status st;
    if ((st = sh_need(c, 0, &x)) || (st = sh_need(c, 1, &ts)))
        return st;
    int64_t shape[SHAPE_MAX_PARAMS], d[IR_MAX_RANK];
    int n, rank;
    if ((st = sh_const_ints(c, ts, "shape", shape, SHAPE_MAX_PARAMS, &n)))
        return st;
    if (n > IR_MAX_RANK)
        return sh_fail(c, "target rank %d exceeds the supported %d", n, IR_MAX_RANK);
    if ((st = sh_broadcast(c, x->rank, x->dims, n, shape, &rank, d)))
        return st;
    return sh_set(c, 0, x->dtype, rank, d);
}

static npu_status infer_tile(sctx *c)
{
    ir_tensor *x = NULL, *tr = NULL;
    npu_status st;
    if ((st = sh_need(c, 0, &x)) || (st = sh_need(c, 1, &tr)))
        return st;
    int64_t rep[SHAPE_MAX_PARAMS], d[IR_MAX_RANK];
    int n;
    if ((st = sh_const_ints(c, tr, "repeats", rep, SHAPE_MAX_PARAMS, &n)))
        return st;
    if (n != x->rank)
        return sh_fail(c, "repeats has %d values for rank %d", n, x->rank);
    for (int i = 0; i < n; i++) {
        if (rep[i] < 0)
            return sh_fail(c, "repeats must not be negative");
        if (rep[i] && x->dims[i] > SHAPE_MAX_NUMEL / rep[i])
            return sh_fail(c, "repeats make dimension %d too large", i);
        d[i] = x->dims[i] * rep[i];
    }
    return sh_set(c, 0, x->dtype, n, d);
}

/* Shape (opset 15 start/end, clamped): output [end - start] of int64. */
static npu_status infer_shape_op(sctx *c)
{
    ir_tensor *x = NULL;
    npu_status st = sh_need(c, 0, &x);
    if (st)
        return st;
    int64_t r = x->rank;
    int64_t s = ir_attr_int(c->n, "start", 0), e = ir_attr_int(c->n, "end", r);
    s = clamp64(s < 0 ? s + r : s, 0, r);
    e = clamp64(e < 0 ? e + r : e, 0, r);
    int64_t d = e > s ? e - s : 0;
    if (!ir_set_int(c->g, c->n, "start", s) || !ir_set_int(c->g, c->n, "end", s + d))
        return oom(c);
    return sh_set(c, 0, IR_I64, 1, &d);
}

static npu_status infer_constant_of_shape(sctx *c)
{
    ir_tensor *ts = NULL;
    npu_status st = sh_need(c, 0, &ts);
    if (st)
        return st;
    int64_t d[SHAPE_MAX_PARAMS];
    int n;
    if ((st = sh_const_ints(c, ts, "shape", d, SHAPE_MAX_PARAMS, &n)))
        return st;
    if (n > IR_MAX_RANK)
        return sh_fail(c, "target rank %d exceeds the supported %d", n, IR_MAX_RANK);
    const ir_attr *v = ir_attr_find(c->n, "value");
    ir_dtype dt = IR_F32;
    if (v) {
        if (v->kind != IR_ATTR_TENSOR || !v->t || ir_tensor_numel(v->t) != 1)
            return sh_fail(c, "attribute 'value' must be a one-element tensor");
        dt = v->t->dtype;
    }
    return sh_set(c, 0, dt, n, d);
}

static bool scalar_double(const ir_tensor *t, double *v)
{
    switch (t->dtype) {
    case IR_F32: *v = *(const float *)t->data; return true;
    case IR_I64: *v = (double)*(const int64_t *)t->data; return true;
    case IR_I32: *v = *(const int32_t *)t->data; return true;
    case IR_I16: *v = *(const int16_t *)t->data; return true;
    default: return false;
    }
}

/* Range: max(ceil((limit - start) / delta), 0) elements, with the
 * difference taken in the input type as ONNX does. */
static npu_status infer_range(sctx *c)
{
    ir_tensor *t[3];
    static const char *const names[3] = {"start", "limit", "delta"};
    npu_status st;
    for (int i = 0; i < 3; i++) {
        if ((st = sh_need(c, i, &t[i])))
            return st;
        if (ir_tensor_numel(t[i]) != 1 || t[i]->rank > 1)
            return sh_fail(c, "%s '%s' must be a scalar", names[i], t[i]->name);
        if (!t[i]->data)
            return sh_fail(c, "%s '%s' must be a constant (known when the model is compiled)", names[i], t[i]->name);
        if (i && (st = sh_same_dtype(c, t[0], t[i])))
            return st;
    }
    double v[3];
    for (int i = 0; i < 3; i++)
        if (!scalar_double(t[i], &v[i]))
            return sh_fail(c, "dtype %s is not supported", ir_dtype_name(t[0]->dtype));
    if (v[2] == 0)
        return sh_fail(c, "delta must not be 0");
    double diff = t[0]->dtype == IR_F32 ? (double)((float)v[1] - (float)v[0]) : v[1] - v[0];
    double cnt = ceil(diff / v[2]);
    if (!(cnt <= (double)SHAPE_MAX_NUMEL))
        return sh_fail(c, "range has too many elements");
    int64_t d = cnt > 0 ? (int64_t)cnt : 0;
    return sh_set(c, 0, t[0]->dtype, 1, &d);
}

npu_status sh_infer_data(sctx *c, bool *handled)
{
    *handled = true;
    switch (c->n->op) {
    case IR_OP_CONCAT: return infer_concat(c);
    case IR_OP_SPLIT: return infer_split(c);
    case IR_OP_SLICE: return infer_slice(c);
    case IR_OP_RESHAPE: return infer_reshape(c);
    case IR_OP_FLATTEN: return infer_flatten(c);
    case IR_OP_SQUEEZE: return infer_squeeze(c, false);
    case IR_OP_UNSQUEEZE: return infer_squeeze(c, true);
    case IR_OP_TRANSPOSE: return infer_transpose(c);
    case IR_OP_PAD: return infer_pad(c);
    case IR_OP_RESIZE: return infer_resize(c, 2, 3);
    case IR_OP_UPSAMPLE: return infer_resize(c, 1, -1);
    case IR_OP_GATHER: return infer_gather(c);
    case IR_OP_EXPAND: return infer_expand(c);
    case IR_OP_TILE: return infer_tile(c);
    case IR_OP_SHAPE: return infer_shape_op(c);
    case IR_OP_CONSTANT_OF_SHAPE: return infer_constant_of_shape(c);
    case IR_OP_RANGE: return infer_range(c);
    case IR_OP_CONSTANT: {
        const ir_attr *v = ir_attr_find(c->n, "value");
        if (!v || v->kind != IR_ATTR_TENSOR || !v->t)
            return sh_fail(c, "attribute 'value' (a tensor) is required");
        return sh_set(c, 0, v->t->dtype, v->t->rank, v->t->dims);
    }
    default: *handled = false; return NPU_OK;
    }
}
