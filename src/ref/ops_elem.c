/* Reference adapters: elementwise binary and unary ops, Cast, Softmax,
 * reductions (kernels/nk_elem.h). A node's dtype is its first input's.
 *
 * Softmax / LogSoftmax: the IR node does not carry the opset. Without
 * attributes beyond "axis" a node has opset-13 semantics (normalize along
 * dims[axis] only, default axis -1). An int attribute "_flatten_axis" = 1
 * selects the opset < 13 coerce-to-2D semantics (normalize over the flattened
 * dims[axis:], default axis 1). The importer does not need it today: it
 * rewrites opset < 13 Softmax as Flatten -> Softmax(axis=1) -> Reshape
 * (src/import/imp_graph.c); the attribute is there for any producer that
 * would rather keep one node.
 */
#include <math.h>

#include "ref/ref_internal.h"

/* Input 0 and output 0 present; both f32 when f32_only. */
static npu_status one_in_out(const ir_node *n, bool f32_only, npu_err *err)
{
    if (n->n_inputs < 1 || !n->inputs[0] || n->n_outputs < 1 || !n->outputs[0])
        return npu_fail(err, NPU_EUSER, "expects an input and an output");
    if (f32_only && (n->inputs[0]->dtype != IR_F32 || n->outputs[0]->dtype != IR_F32))
        return npu_fail(err, NPU_EUSER, "%s on dtype %s is not supported (supported: f32)", ir_op_name(n->op),
                        ir_dtype_name(n->inputs[0]->dtype));
    return NPU_OK;
}

static npu_status same_dtype(const ir_node *n, int i, npu_err *err)
{
    if (!n->inputs[i] || n->inputs[i]->dtype != n->inputs[0]->dtype)
        return npu_fail(err, NPU_EUSER, "input %d must have the dtype of input 0 (%s)", i,
                        ir_dtype_name(n->inputs[0]->dtype));
    return NPU_OK;
}

static npu_status unsupported_dtype(const ir_node *n, const ir_tensor *t, const char *supported, npu_err *err)
{
    return npu_fail(err, NPU_EUSER, "%s on dtype %s is not supported (supported: %s)", ir_op_name(n->op),
                    ir_dtype_name(t->dtype), supported);
}

/* ---- binary ------------------------------------------------------------ */

static bool is_int(ir_dtype dt)
{
    return dt == IR_I64 || dt == IR_I32 || dt == IR_I16 || dt == IR_I8 || dt == IR_U8;
}

/* y = a op b for shapes as, bs, ys (a, b and y of dtype dt). */
static npu_status binary_step(const ir_node *n, ir_dtype dt, const nk_shape *as, const void *a, const nk_shape *bs,
                              const void *b, const nk_shape *ys, void *y, npu_err *err)
{
    nk_binary_params p = {ref_binop(n->op), ref_nk_act(n->act)};
    nk_status st;
    nk_dtype kdt;
    nk_shape tmp;
    if (dt == IR_F32) {
        st = nk_binary_f32(&p, as, a, bs, b, ys, y);
    } else if (is_int(dt) && n->op != IR_OP_PRELU && ref_nk_dtype(dt, &kdt)) {
        if (n->act.kind != IR_ACT_NONE)
            return npu_fail(err, NPU_EUSER, "a fused activation needs a float output");
        st = nk_binary_int(&p, kdt, as, a, bs, b, ys, y);
        if (st == NK_EARG && n->op == IR_OP_DIV && nk_shape_broadcast(as, bs, &tmp) == NK_OK)
            return npu_fail(err, NPU_EUSER, "integer division by zero");
    } else {
        return npu_fail(err, NPU_EUSER, "%s on dtype %s is not supported (supported: f32%s)", ir_op_name(n->op),
                        ir_dtype_name(dt), n->op == IR_OP_PRELU ? "" : ", i64, i32, i16, i8, u8");
    }
    if (st != NK_OK)
        return npu_fail(err, NPU_EUSER, "input shapes do not broadcast to the output shape");
    return NPU_OK;
}

static npu_status binary_shapes(const ir_node *n, nk_shape *as, nk_shape *bs, nk_shape *ys, npu_err *err)
{
    npu_status st;
    if (n->n_inputs != 2 || n->n_outputs < 1 || !n->inputs[0] || !n->inputs[1])
        return npu_fail(err, NPU_EUSER, "expects 2 inputs and 1 output");
    if ((st = ref_shape(n->inputs[0], as, err)) || (st = ref_shape(n->inputs[1], bs, err)) ||
        (st = ref_shape(n->outputs[0], ys, err)))
        return st;
    return NPU_OK;
}

static npu_status run_binary(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                             npu_err *err)
{
    (void)scratch;
    nk_shape as, bs, ys;
    npu_status st;
    if ((st = binary_shapes(n, &as, &bs, &ys, err)) || (st = same_dtype(n, 1, err)))
        return st;
    return binary_step(n, n->inputs[0]->dtype, &as, in[0], &bs, in[1], &ys, out[0], err);
}

/* Pow's base and exponent may differ in type: the exponent is cast to the
 * base's type, except that an integer base with a float exponent is
 * computed in float and truncated back (as onnxruntime's pow and cast do). */
static npu_status run_pow(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    nk_shape as, bs, ys;
    npu_status st = binary_shapes(n, &as, &bs, &ys, err);
    if (st)
        return st;
    ir_dtype xt = n->inputs[0]->dtype, et = n->inputs[1]->dtype;
    if (xt == et)
        return binary_step(n, xt, &as, in[0], &bs, in[1], &ys, out[0], err);
    nk_dtype kx, ke;
    if (!(xt == IR_F32 || is_int(xt)) || !(et == IR_F32 || is_int(et)) || !ref_nk_dtype(xt, &kx) ||
        !ref_nk_dtype(et, &ke) || n->outputs[0]->dtype != xt)
        return npu_fail(err, NPU_EUSER, "Pow of %s by %s is not supported (f32 and integers)", ir_dtype_name(xt),
                        ir_dtype_name(et));
    int64_t na = nk_shape_numel(&as), nb = nk_shape_numel(&bs), ny = nk_shape_numel(&ys);
    uint8_t *sa = scratch, *sb = sa + 4 * na, *sy = sb + 8 * nb;
    if (is_int(xt) && et == IR_F32) {
        nk_cast(kx, in[0], NK_DT_F32, sa, na);
        if ((st = binary_step(n, IR_F32, &as, sa, &bs, in[1], &ys, sy, err)))
            return st;
        nk_cast(NK_DT_F32, sy, kx, out[0], ny);
        return NPU_OK;
    }
    nk_cast(ke, in[1], kx, sb, nb);
    return binary_step(n, xt, &as, in[0], &bs, sb, &ys, out[0], err);
}

static size_t scratch_pow(const ir_node *n)
{
    if (n->n_inputs != 2 || !n->inputs[0] || !n->inputs[1] || n->n_outputs < 1 || !n->outputs[0])
        return 0;
    return 4 * (size_t)ir_tensor_numel(n->inputs[0]) + 8 * (size_t)ir_tensor_numel(n->inputs[1]) +
           4 * (size_t)ir_tensor_numel(n->outputs[0]);
}

/* Variadic Max/Min: pairwise, alternating between scratch and the output so
 * that the last step writes the output and no step reads what it writes. */
static npu_status run_variadic(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                               npu_err *err)
{
    if (n->n_inputs == 2)
        return run_binary(n, in, out, scratch, err);
    if (n->n_inputs < 1 || n->n_outputs < 1)
        return npu_fail(err, NPU_EUSER, "expects at least 1 input");
    npu_status st;
    nk_shape acc, s, ys;
    if ((st = ref_shape(n->inputs[0], &acc, err)) || (st = ref_shape(n->outputs[0], &ys, err)))
        return st;
    if (n->n_inputs == 1) {
        if (nk_shape_numel(&acc) != nk_shape_numel(&ys) || n->inputs[0]->dtype != n->outputs[0]->dtype)
            return npu_fail(err, NPU_EUSER, "output shape differs from the input's");
        memcpy(out[0], in[0], ir_tensor_bytes(n->outputs[0]));
        if (n->outputs[0]->dtype == IR_F32)
            ref_apply_act(n, out[0], nk_shape_numel(&ys));
        return NPU_OK;
    }
    const void *prev = in[0];
    int steps = n->n_inputs - 1;
    for (int k = 1; k < n->n_inputs; k++) {
        nk_shape next;
        if ((st = same_dtype(n, k, err)) || (st = ref_shape(n->inputs[k], &s, err)))
            return st;
        if (nk_shape_broadcast(&acc, &s, &next) != NK_OK)
            return npu_fail(err, NPU_EUSER, "input %d does not broadcast with the inputs before it", k);
        void *dst = (steps - k) % 2 == 0 ? out[0] : scratch;
        if (k == steps)
            next = ys;
        ir_node step = *n;
        if (k < steps)
            step.act.kind = IR_ACT_NONE; /* the activation applies to the result only */
        if ((st = binary_step(&step, n->inputs[0]->dtype, &acc, prev, &s, in[k], &next, dst, err)))
            return st;
        acc = next;
        prev = dst;
    }
    return NPU_OK;
}

static size_t scratch_variadic(const ir_node *n)
{
    return n->n_inputs > 2 ? ir_tensor_bytes(n->outputs[0]) : 0;
}

static npu_status run_compare(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                              npu_err *err)
{
    (void)scratch;
    nk_shape as, bs, ys;
    nk_dtype dt;
    npu_status st;
    if (n->n_inputs != 2 || n->n_outputs < 1)
        return npu_fail(err, NPU_EUSER, "expects 2 inputs and 1 output");
    if ((st = same_dtype(n, 1, err)) || (st = ref_shape(n->inputs[0], &as, err)) ||
        (st = ref_shape(n->inputs[1], &bs, err)) || (st = ref_shape(n->outputs[0], &ys, err)))
        return st;
    if (n->outputs[0]->dtype != IR_BOOL)
        return npu_fail(err, NPU_EUSER, "the output must be bool, not %s", ir_dtype_name(n->outputs[0]->dtype));
    nk_cmpop op = n->op == IR_OP_EQUAL ? NK_CMP_EQUAL : n->op == IR_OP_LESS ? NK_CMP_LESS : NK_CMP_GREATER;
    ir_dtype idt = n->inputs[0]->dtype;
    if (!ref_nk_dtype(idt, &dt) || dt == NK_DT_F16 || dt == NK_DT_I16)
        return unsupported_dtype(n, n->inputs[0], "f32, i64, i32, i8, u8, bool", err);
    nk_status ks = nk_compare(op, dt, &as, in[0], &bs, in[1], &ys, out[0]);
    if (ks == NK_EARG)
        return npu_fail(err, NPU_EUSER, "input shapes do not broadcast to the output shape");
    return ks == NK_OK ? NPU_OK : unsupported_dtype(n, n->inputs[0], "f32, i64, i32, i8, u8, bool", err);
}

static npu_status run_where(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                            npu_err *err)
{
    (void)scratch;
    nk_shape cs, as, bs, ys;
    npu_status st;
    if (n->n_inputs != 3 || n->n_outputs < 1 || !n->inputs[0] || !n->inputs[1] || !n->inputs[2])
        return npu_fail(err, NPU_EUSER, "expects 3 inputs and 1 output");
    if (n->inputs[0]->dtype != IR_BOOL)
        return npu_fail(err, NPU_EUSER, "the condition must be bool, not %s", ir_dtype_name(n->inputs[0]->dtype));
    if (n->inputs[2]->dtype != n->inputs[1]->dtype || n->outputs[0]->dtype != n->inputs[1]->dtype)
        return npu_fail(err, NPU_EUSER, "inputs 1, 2 and the output must have one dtype");
    size_t es = ref_elem_size(n->inputs[1]);
    if (!es)
        return unsupported_dtype(n, n->inputs[1], "any but i4, u4", err);
    if ((st = ref_shape(n->inputs[0], &cs, err)) || (st = ref_shape(n->inputs[1], &as, err)) ||
        (st = ref_shape(n->inputs[2], &bs, err)) || (st = ref_shape(n->outputs[0], &ys, err)))
        return st;
    if (nk_where(es, &cs, in[0], &as, in[1], &bs, in[2], &ys, out[0]) != NK_OK)
        return npu_fail(err, NPU_EUSER, "input shapes do not broadcast to the output shape");
    return NPU_OK;
}

/* ---- unary --------------------------------------------------------------- */

/* A Clip bound: input i (opset 11+) if given, else the attribute. */
static npu_status clip_bound(const ir_node *n, int i, const void *const *in, const char *attr, float def, float *v,
                             npu_err *err)
{
    *v = ir_attr_float(n, attr, def);
    if (i >= n->n_inputs || !n->inputs[i])
        return NPU_OK;
    if (n->inputs[i]->dtype != IR_F32 || ir_tensor_numel(n->inputs[i]) != 1)
        return npu_fail(err, NPU_EUSER, "input %d ('%s') must be one f32 value", i, n->inputs[i]->name);
    *v = *(const float *)in[i];
    return NPU_OK;
}

/* Integer Clip (opset 12+): the bounds are inputs of the data's dtype,
 * applied in place as Max and Min against a scalar. */
static npu_status clip_int(const ir_node *n, const void *const *in, void *const *out, npu_err *err)
{
    const ir_tensor *x = n->inputs[0];
    nk_dtype dt;
    nk_shape xs, one = {.rank = 0};
    npu_status st = ref_shape(x, &xs, err);
    if (st || !ref_nk_dtype(x->dtype, &dt))
        return st ? st : unsupported_dtype(n, x, "f32, i64, i32, i16, i8, u8", err);
    if (out[0] != in[0])
        memcpy(out[0], in[0], ir_tensor_bytes(x));
    for (int i = 1; i <= 2 && i < n->n_inputs; i++) {
        if (!n->inputs[i])
            continue;
        if (n->inputs[i]->dtype != x->dtype || ir_tensor_numel(n->inputs[i]) != 1)
            return npu_fail(err, NPU_EUSER, "input %d ('%s') must be one %s value", i, n->inputs[i]->name,
                            ir_dtype_name(x->dtype));
        nk_binary_params p = {i == 1 ? NK_BIN_MAX : NK_BIN_MIN, {NK_ACT_NONE, 0, 0, 0}};
        nk_binary_int(&p, dt, &xs, out[0], &one, in[i], &xs, out[0]);
    }
    return NPU_OK;
}

static npu_status run_unary(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                            npu_err *err)
{
    (void)scratch;
    npu_status st = one_in_out(n, false, err);
    if (st)
        return st;
    const ir_tensor *x = n->inputs[0];
    int64_t count = ir_tensor_numel(x);
    if (count != ir_tensor_numel(n->outputs[0]) || n->outputs[0]->dtype != x->dtype)
        return npu_fail(err, NPU_EUSER, "the output must have the input's size and dtype");
    static const struct {
        ir_op op;
        nk_unop un;
    } map[] = {
#define IR_UNARY(OP, UN) {IR_OP_##OP, NK_UN_##UN},
#include "ir/unary.def"
#undef IR_UNARY
    };
    nk_unary_params p = {NK_UN_RELU, 0.0f, 0.0f, -INFINITY, INFINITY};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].op == n->op)
            p.op = map[i].un;
    if (n->op == IR_OP_CLIP && is_int(x->dtype))
        return clip_int(n, in, out, err);
    if (x->dtype == IR_I32 || x->dtype == IR_I64) {
        if (p.op != NK_UN_NEG && p.op != NK_UN_ABS)
            return unsupported_dtype(n, x, "f32", err);
        if (x->dtype == IR_I32)
            nk_unary_i32(p.op, in[0], out[0], count);
        else
            nk_unary_i64(p.op, in[0], out[0], count);
        return NPU_OK;
    }
    if (x->dtype != IR_F32)
        return unsupported_dtype(n, x,
                                 p.op == NK_UN_NEG || p.op == NK_UN_ABS ? "f32, i32, i64"
                                 : p.op == NK_UN_CLIP                   ? "f32, i64, i32, i16, i8, u8"
                                                                        : "f32",
                                 err);
    switch (n->op) {
    case IR_OP_LEAKY_RELU: p.alpha = ir_attr_float(n, "alpha", 0.01f); break;
    case IR_OP_HARD_SIGMOID:
        p.alpha = ir_attr_float(n, "alpha", 0.2f);
        p.beta = ir_attr_float(n, "beta", 0.5f);
        break;
    case IR_OP_CLIP:
        if ((st = clip_bound(n, 1, in, "min", -INFINITY, &p.lo, err)) ||
            (st = clip_bound(n, 2, in, "max", INFINITY, &p.hi, err)))
            return st;
        break;
    default: break;
    }
    nk_unary_f32(&p, in[0], out[0], count);
    ref_apply_act(n, out[0], count);
    return NPU_OK;
}

static npu_status run_not(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    (void)scratch;
    npu_status st = one_in_out(n, false, err);
    if (st)
        return st;
    if (n->inputs[0]->dtype != IR_BOOL || n->outputs[0]->dtype != IR_BOOL)
        return unsupported_dtype(n, n->inputs[0], "bool", err);
    if (ir_tensor_numel(n->inputs[0]) != ir_tensor_numel(n->outputs[0]))
        return npu_fail(err, NPU_EUSER, "the output must have the input's size");
    nk_not(in[0], out[0], ir_tensor_numel(n->inputs[0]));
    return NPU_OK;
}

static npu_status run_cast(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                           npu_err *err)
{
    (void)scratch;
    npu_status st = one_in_out(n, false, err);
    if (st)
        return st;
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    nk_dtype from, to;
    if (!ref_nk_dtype(x->dtype, &from))
        return unsupported_dtype(n, x, "f32, f16, i64, i32, i16, i8, u8, bool", err);
    if (!ref_nk_dtype(y->dtype, &to))
        return npu_fail(err, NPU_EUSER, "Cast to %s is not supported (f32, f16, i64, i32, i16, i8, u8, bool)",
                        ir_dtype_name(y->dtype));
    if (ir_tensor_numel(x) != ir_tensor_numel(y))
        return npu_fail(err, NPU_EUSER, "the output must have the input's size");
    nk_cast(from, in[0], to, out[0], ir_tensor_numel(x));
    return NPU_OK;
}

/* ---- softmax, reductions -------------------------------------------------- */

static npu_status run_softmax(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                              npu_err *err)
{
    (void)scratch;
    npu_status st = one_in_out(n, true, err);
    if (st)
        return st;
    const ir_tensor *x = n->inputs[0];
    if (!ir_shape_equal(x, n->outputs[0]))
        return npu_fail(err, NPU_EUSER, "the output must have the input's shape");
    bool flatten = ir_attr_int(n, "_flatten_axis", 0) != 0; /* opset < 13: see the top of this file */
    int64_t a = ir_attr_int(n, "axis", flatten ? 1 : -1);
    int axis = ref_axis(a, x->rank);
    if (axis < 0 && !(x->rank == 0 && (a == 0 || a == -1)))
        return npu_fail(err, NPU_EUSER, "axis %lld is out of range for rank %d", (long long)a, x->rank);
    nk_softmax_params p = {1, 1, 1, n->op == IR_OP_LOG_SOFTMAX};
    for (int d = 0; d < x->rank; d++) {
        if (d < axis)
            p.outer *= x->dims[d];
        else if (d == axis || flatten)
            p.len *= x->dims[d];
        else
            p.inner *= x->dims[d];
    }
    nk_softmax_f32(&p, in[0], out[0]);
    return NPU_OK;
}

static npu_status run_reduce(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                             npu_err *err)
{
    (void)scratch;
    npu_status st = one_in_out(n, true, err);
    if (st)
        return st;
    const ir_tensor *x = n->inputs[0];
    int64_t axes[NK_MAX_RANK];
    int k = -1;
    st = ref_ints_attr_or_input(n, "axes", 1, in, axes, NK_MAX_RANK, &k, err);
    if (st)
        return st;
    int64_t count = ir_tensor_numel(x);
    if (k <= 0 && ir_attr_int(n, "noop_with_empty_axes", 0)) {
        if (ir_tensor_numel(n->outputs[0]) != count)
            return npu_fail(err, NPU_EUSER, "the output must have the input's size");
        memcpy(out[0], in[0], ir_tensor_bytes(x));
        return NPU_OK;
    }
    uint32_t mask = k <= 0 ? (1u << x->rank) - 1 : 0;
    int64_t kept = 1;
    for (int i = 0; i < k; i++) {
        int a = ref_axis(axes[i], x->rank);
        if (a < 0 || (mask & (1u << a)))
            return npu_fail(err, NPU_EUSER, "axis %lld is out of range for rank %d or repeated",
                            (long long)axes[i], x->rank);
        mask |= 1u << a;
    }
    for (int d = 0; d < x->rank; d++)
        if (!(mask & (1u << d)))
            kept *= x->dims[d];
    nk_shape xs;
    if ((st = ref_shape(x, &xs, err)))
        return st;
    if (ir_tensor_numel(n->outputs[0]) != kept)
        return npu_fail(err, NPU_EUSER, "the output has %lld elements, the reduction gives %lld",
                        (long long)ir_tensor_numel(n->outputs[0]), (long long)kept);
    nk_reduce_op op = n->op == IR_OP_REDUCE_MEAN ? NK_RED_MEAN
                      : n->op == IR_OP_REDUCE_SUM ? NK_RED_SUM
                      : n->op == IR_OP_REDUCE_MAX ? NK_RED_MAX
                                                  : NK_RED_MIN;
    nk_reduce_f32(op, &xs, in[0], mask, out[0]);
    ref_apply_act(n, out[0], kept);
    return NPU_OK;
}

const ref_op_entry ref_ops_elem[] = {
    {IR_OP_ADD, run_binary, NULL},
    {IR_OP_SUB, run_binary, NULL},
    {IR_OP_MUL, run_binary, NULL},
    {IR_OP_DIV, run_binary, NULL},
    {IR_OP_POW, run_pow, scratch_pow},
    {IR_OP_PRELU, run_binary, NULL},
    {IR_OP_MAX, run_variadic, scratch_variadic},
    {IR_OP_MIN, run_variadic, scratch_variadic},
    {IR_OP_EQUAL, run_compare, NULL},
    {IR_OP_LESS, run_compare, NULL},
    {IR_OP_GREATER, run_compare, NULL},
    {IR_OP_WHERE, run_where, NULL},
#define IR_UNARY(OP, UN) {IR_OP_##OP, run_unary, NULL},
#include "ir/unary.def"
#undef IR_UNARY
    {IR_OP_NOT, run_not, NULL},
    {IR_OP_CAST, run_cast, NULL},
    {IR_OP_SOFTMAX, run_softmax, NULL},
    {IR_OP_LOG_SOFTMAX, run_softmax, NULL},
    {IR_OP_REDUCE_MEAN, run_reduce, NULL},
    {IR_OP_REDUCE_SUM, run_reduce, NULL},
    {IR_OP_REDUCE_MAX, run_reduce, NULL},
    {IR_OP_REDUCE_MIN, run_reduce, NULL},
    {IR_OP_COUNT, NULL, NULL},
};
