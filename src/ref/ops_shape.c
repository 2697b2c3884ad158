/* Reference adapters: data movement and shape ops (kernels/nk_shape.h).
 * Output shapes come from shape inference; the adapters read the parameters
 * the kernels need (Slice starts, Pad pads, ...) from attributes (older
 * opsets) or constant inputs (newer ones), whichever the node has. */
#include "ref/ref_internal.h"

static npu_status need_io(const ir_node *n, int n_in, npu_err *err)
{
    if (n->n_inputs < n_in || n->n_outputs < 1 || !n->outputs[0])
        return npu_fail(err, NPU_EUSER, "expects at least %d input%s and an output", n_in, n_in == 1 ? "" : "s");
    for (int i = 0; i < n_in; i++)
        if (!n->inputs[i])
            return npu_fail(err, NPU_EUSER, "input %d is missing", i);
    return NPU_OK;
}

/* need_io, and the element size of input 0, which the output shares. */
static npu_status io_elem(const ir_node *n, int n_in, size_t *es, npu_err *err)
{
    npu_status st = need_io(n, n_in, err);
    if (st)
        return st;
    const ir_tensor *x = n->inputs[0];
    if (n->outputs[0]->dtype != x->dtype)
        return npu_fail(err, NPU_EUSER, "the output must have the input's dtype (%s)", ir_dtype_name(x->dtype));
    if (!(*es = ref_elem_size(x)))
        return npu_fail(err, NPU_EUSER, "%s on dtype %s is not supported (any but i4, u4)", ir_op_name(n->op),
                        ir_dtype_name(x->dtype));
    return NPU_OK;
}

/* io_elem of a one-input op, and the shapes of its input and output. */
static npu_status io_shapes(const ir_node *n, size_t *es, nk_shape *xs, nk_shape *ys, npu_err *err)
{
    npu_status st;
    if ((st = io_elem(n, 1, es, err)) || (st = ref_shape(n->inputs[0], xs, err)) ||
        (st = ref_shape(n->outputs[0], ys, err)))
        return st;
    return NPU_OK;
}

static npu_status shape_error(const ir_node *n, npu_err *err)
{
    return npu_fail(err, NPU_EUSER, "the output shape does not match the inputs and attributes of %s",
                    ir_op_name(n->op));
}

/* Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout: the data is the same. */
static npu_status run_copy(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    (void)scratch;
    npu_status st = need_io(n, 1, err);
    if (st)
        return st;
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    if (x->dtype != y->dtype || ir_tensor_bytes(x) != ir_tensor_bytes(y))
        return npu_fail(err, NPU_EUSER, "output %s[%lld] differs in size or dtype from input %s[%lld]",
                        ir_dtype_name(y->dtype), (long long)ir_tensor_numel(y), ir_dtype_name(x->dtype),
                        (long long)ir_tensor_numel(x));
    /* training mode drops nothing when the ratio is 0; otherwise it is random */
    if (n->op == IR_OP_DROPOUT && n->n_inputs > 2 && n->inputs[2] && ir_tensor_numel(n->inputs[2]) == 1 &&
        *(const uint8_t *)in[2] &&
        !(n->inputs[1] && n->inputs[1]->dtype == IR_F32 && ir_tensor_numel(n->inputs[1]) == 1 &&
          *(const float *)in[1] == 0.0f))
        return npu_fail(err, NPU_EUSER, "training_mode is not supported (inference only, or a ratio of 0)");
    if (out[0] != in[0])
        memcpy(out[0], in[0], ir_tensor_bytes(y));
    /* Dropout's mask in inference: all true */
    if (n->op == IR_OP_DROPOUT && n->n_outputs > 1 && n->outputs[1])
        memset(out[1], 1, ir_tensor_bytes(n->outputs[1]));
    return NPU_OK;
}

static npu_status run_concat(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                             npu_err *err)
{
    (void)scratch;
    size_t es;
    npu_status st;
    if ((st = io_elem(n, 1, &es, err)))
        return st;
    if (n->n_inputs > 64)
        return npu_fail(err, NPU_EUSER, "%d inputs (at most 64)", n->n_inputs);
    nk_shape shapes[64], ys;
    for (int i = 0; i < n->n_inputs; i++) {
        if (!n->inputs[i] || n->inputs[i]->dtype != n->inputs[0]->dtype)
            return npu_fail(err, NPU_EUSER, "input %d must have the dtype of input 0", i);
        if ((st = ref_shape(n->inputs[i], &shapes[i], err)))
            return st;
    }
    if ((st = ref_shape(n->outputs[0], &ys, err)))
        return st;
    int axis = ref_axis(ir_attr_int(n, "axis", 0), ys.rank);
    if (axis < 0)
        return npu_fail(err, NPU_EUSER, "axis %lld is out of range", (long long)ir_attr_int(n, "axis", 0));
    nk_concat_params p = {axis, n->n_inputs, es};
    if (nk_concat(&p, shapes, in, &ys, out[0]) != NK_OK)
        return shape_error(n, err);
    return NPU_OK;
}

static npu_status run_split(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                            npu_err *err)
{
    (void)scratch;
    size_t es;
    npu_status st;
    if ((st = io_elem(n, 1, &es, err)))
        return st;
    if (n->n_outputs > 64)
        return npu_fail(err, NPU_EUSER, "%d outputs (at most 64)", n->n_outputs);
    nk_shape xs, shapes[64];
    if ((st = ref_shape(n->inputs[0], &xs, err)))
        return st;
    int axis = ref_axis(ir_attr_int(n, "axis", 0), xs.rank);
    if (axis < 0)
        return npu_fail(err, NPU_EUSER, "axis %lld is out of range", (long long)ir_attr_int(n, "axis", 0));
    int64_t split[64];
    int k = -1;
    if ((st = ref_ints_attr_or_input(n, "split", 1, in, split, 64, &k, err)))
        return st;
    if (k > 0 && k != n->n_outputs)
        return npu_fail(err, NPU_EUSER, "%d split sizes for %d outputs", k, n->n_outputs);
    /* the output shapes carry the split sizes; an absent output still
     * takes its share of the input */
    for (int i = 0; i < n->n_outputs; i++) {
        if (!n->outputs[i])
            return npu_fail(err, NPU_EUSER, "output %d is missing", i);
        if ((st = ref_shape(n->outputs[i], &shapes[i], err)))
            return st;
        if (n->outputs[i]->dtype != n->inputs[0]->dtype || (k > 0 && shapes[i].rank > axis &&
                                                             shapes[i].dims[axis] != split[i]))
            return shape_error(n, err);
    }
    nk_split_params p = {axis, n->n_outputs, es};
    if (nk_split(&p, &xs, in[0], shapes, out) != NK_OK)
        return shape_error(n, err);
    return NPU_OK;
}

static npu_status run_slice(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                            npu_err *err)
{
    (void)scratch;
    size_t es;
    nk_shape xs, ys;
    npu_status st = io_shapes(n, &es, &xs, &ys, err);
    if (st)
        return st;
    nk_slice_params p = {.elem_size = es};
    if (ys.rank != xs.rank)
        return shape_error(n, err);
    if ((st = ref_slice_params(n, in, n->inputs[0], &p, err)))
        return st;
    if (nk_slice(&p, &xs, in[0], &ys, out[0]) != NK_OK)
        return shape_error(n, err);
    return NPU_OK;
}

static npu_status run_transpose(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                                npu_err *err)
{
    (void)scratch;
    size_t es;
    npu_status st;
    if ((st = io_elem(n, 1, &es, err)))
        return st;
    nk_shape xs;
    if ((st = ref_shape(n->inputs[0], &xs, err)))
        return st;
    int64_t perm[NK_MAX_RANK];
    int k = ir_attr_ints(n, "perm", perm, NK_MAX_RANK);
    nk_transpose_params p = {.elem_size = es};
    if (k >= 0 && k != xs.rank)
        return npu_fail(err, NPU_EUSER, "perm has %d values for rank %d", k, xs.rank);
    const ir_tensor *y = n->outputs[0];
    if (y->rank != xs.rank)
        return shape_error(n, err);
    for (int d = 0; d < xs.rank; d++) {
        int64_t pd = k >= 0 ? perm[d] : xs.rank - 1 - d; /* default: reverse the dims */
        if (pd < 0 || pd >= xs.rank)
            return npu_fail(err, NPU_EUSER, "perm is not a permutation of 0..%d", xs.rank - 1);
        p.perm[d] = (int)pd;
        if (y->dims[d] != xs.dims[pd])
            return shape_error(n, err);
    }
    if (nk_transpose(&p, &xs, in[0], out[0]) != NK_OK)
        return npu_fail(err, NPU_EUSER, "perm is not a permutation of 0..%d", xs.rank - 1);
    return NPU_OK;
}

static npu_status run_pad(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    (void)scratch;
    size_t es;
    nk_shape xs, ys;
    npu_status st = io_shapes(n, &es, &xs, &ys, err);
    if (st)
        return st;
    nk_pad_params p;
    uint64_t value;
    if ((st = ref_pad_params(n, in, es, &p, &value, err)))
        return st;
    p.value = &value;
    nk_status ks = nk_pad(&p, &xs, in[0], &ys, out[0]);
    if (ks != NK_OK)
        return npu_fail(err, NPU_EUSER, "the pads do not give the output shape%s",
                        p.mode == NK_PAD_CONSTANT ? "" : " (or an empty axis is padded by reflect/edge)");
    return NPU_OK;
}

static npu_status run_gather(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                             npu_err *err)
{
    (void)scratch;
    size_t es;
    npu_status st;
    if ((st = io_elem(n, 2, &es, err)))
        return st;
    const ir_tensor *x = n->inputs[0], *ind = n->inputs[1];
    nk_shape xs;
    if ((st = ref_shape(x, &xs, err)))
        return st;
    if (ind->dtype != IR_I64 && ind->dtype != IR_I32)
        return npu_fail(err, NPU_EUSER, "indices must be int32 or int64, not %s", ir_dtype_name(ind->dtype));
    int axis = ref_axis(ir_attr_int(n, "axis", 0), x->rank);
    if (axis < 0)
        return npu_fail(err, NPU_EUSER, "axis %lld is out of range for rank %d", (long long)ir_attr_int(n, "axis", 0),
                        x->rank);
    int64_t n_idx = ir_tensor_numel(ind);
    if (x->dims[axis] && ir_tensor_numel(n->outputs[0]) != ir_tensor_numel(x) / x->dims[axis] * n_idx)
        return shape_error(n, err);
    nk_gather_params p = {axis, ind->dtype == IR_I64, es};
    int64_t bad = 0;
    if (nk_gather(&p, &xs, in[0], in[1], n_idx, out[0], &bad) != NK_OK)
        return npu_fail(err, NPU_EUSER, "index %lld is out of range for axis %d of size %lld", (long long)bad,
                        axis, (long long)x->dims[axis]);
    return NPU_OK;
}

/* Expand (numpy broadcast) and Tile, both from the input and output shapes. */
static npu_status run_expand_tile(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                                  npu_err *err)
{
    (void)scratch;
    size_t es;
    nk_shape xs, ys;
    npu_status st = io_shapes(n, &es, &xs, &ys, err);
    if (st)
        return st;
    nk_status ks = n->op == IR_OP_EXPAND ? nk_expand(es, &xs, in[0], &ys, out[0])
                                         : nk_tile(es, &xs, in[0], &ys, out[0]);
    return ks == NK_OK ? NPU_OK : shape_error(n, err);
}

static npu_status run_shape(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                            npu_err *err)
{
    (void)scratch;
    (void)in;
    npu_status st = need_io(n, 1, err);
    if (st)
        return st;
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int64_t r = x->rank, s = ir_attr_int(n, "start", 0), e = ir_attr_int(n, "end", r);
    s = s < 0 ? s + r : s;
    e = e < 0 ? e + r : e;
    s = s < 0 ? 0 : (s > r ? r : s);
    e = e < 0 ? 0 : (e > r ? r : e);
    int64_t count = e > s ? e - s : 0;
    if (y->dtype != IR_I64 || ir_tensor_numel(y) != count)
        return shape_error(n, err);
    for (int64_t i = 0; i < count; i++)
        ((int64_t *)out[0])[i] = x->dims[s + i];
    return NPU_OK;
}

static npu_status run_constant_of_shape(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                                        npu_err *err)
{
    (void)scratch;
    (void)in;
    if (n->n_outputs < 1 || !n->outputs[0])
        return npu_fail(err, NPU_EUSER, "expects an output");
    const ir_tensor *y = n->outputs[0];
    const ir_attr *a = ir_attr_find(n, "value");
    float zero = 0.0f;
    const void *value = &zero;
    ir_dtype dt = IR_F32;
    if (a) {
        if (a->kind != IR_ATTR_TENSOR || !a->t || !a->t->data || ir_tensor_numel(a->t) != 1)
            return npu_fail(err, NPU_EUSER, "attribute 'value' must be a tensor of one element");
        value = a->t->data;
        dt = a->t->dtype;
    }
    size_t es = ref_elem_size(y);
    if (y->dtype != dt || !es)
        return npu_fail(err, NPU_EUSER, "the output dtype %s differs from the value's %s or is not supported",
                        ir_dtype_name(y->dtype), ir_dtype_name(dt));
    nk_fill(es, value, ir_tensor_numel(y), out[0]);
    return NPU_OK;
}

static npu_status run_range(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                            npu_err *err)
{
    (void)scratch;
    npu_status st = need_io(n, 3, err);
    if (st)
        return st;
    ir_dtype dt = n->outputs[0]->dtype;
    for (int i = 0; i < 3; i++)
        if (n->inputs[i]->dtype != dt || ir_tensor_numel(n->inputs[i]) != 1)
            return npu_fail(err, NPU_EUSER, "input %d must be one value of the output's dtype (%s)", i,
                            ir_dtype_name(dt));
    int64_t count, have = ir_tensor_numel(n->outputs[0]);
    if (dt == IR_F32) {
        const float *s = in[0], *l = in[1], *d = in[2];
        count = nk_range_count_f32(*s, *l, *d);
        if (count == have)
            nk_range_f32(*s, *d, count, out[0]);
    } else if (dt == IR_I64 || dt == IR_I32) {
        int64_t v[3];
        for (int i = 0; i < 3; i++)
            v[i] = dt == IR_I64 ? *(const int64_t *)in[i] : *(const int32_t *)in[i];
        count = nk_range_count_i64(v[0], v[1], v[2]);
        if (count == have && dt == IR_I64)
            nk_range_i64(v[0], v[2], count, out[0]);
        else if (count == have)
            nk_range_i32((int32_t)v[0], (int32_t)v[2], count, out[0]);
    } else {
        return npu_fail(err, NPU_EUSER, "Range on dtype %s is not supported (f32, i32, i64)", ir_dtype_name(dt));
    }
    if (count < 0)
        return npu_fail(err, NPU_EUSER, "delta is zero or the range is too long");
    if (count != have)
        return npu_fail(err, NPU_EUSER, "the range has %lld elements, the output shape says %lld",
                        (long long)count, (long long)have);
    return NPU_OK;
}

const ref_op_entry ref_ops_shape[] = {
    {IR_OP_IDENTITY, run_copy, NULL},
    {IR_OP_DROPOUT, run_copy, NULL},
    {IR_OP_RESHAPE, run_copy, NULL},
    {IR_OP_FLATTEN, run_copy, NULL},
    {IR_OP_SQUEEZE, run_copy, NULL},
    {IR_OP_UNSQUEEZE, run_copy, NULL},
    {IR_OP_CONCAT, run_concat, NULL},
    {IR_OP_SPLIT, run_split, NULL},
    {IR_OP_SLICE, run_slice, NULL},
    {IR_OP_TRANSPOSE, run_transpose, NULL},
    {IR_OP_PAD, run_pad, NULL},
    {IR_OP_GATHER, run_gather, NULL},
    {IR_OP_EXPAND, run_expand_tile, NULL},
    {IR_OP_TILE, run_expand_tile, NULL},
    {IR_OP_SHAPE, run_shape, NULL},
    {IR_OP_CONSTANT_OF_SHAPE, run_constant_of_shape, NULL},
    {IR_OP_RANGE, run_range, NULL},
    {IR_OP_COUNT, NULL, NULL},
};
