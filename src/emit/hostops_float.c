/* Host-step records of the f32 fallbacks that real models leave between
 * DequantizeLinear and QuantizeLinear: Softmax, unary and binary elementwise
 * ops, reductions, with the rules of their reference adapters
 * (src/ref/ops_elem.c). */
#include "emit/hostops_internal.h"

#include <math.h>
#include <string.h>

bool emit_hop_all_f32(const ir_node *n, int n_in)
{
    for (int i = 0; i < n_in; i++)
        if (i >= n->n_inputs || !n->inputs[i] || n->inputs[i]->dtype != IR_F32)
            return false;
    return n->n_outputs >= 1 && n->outputs[0] && n->outputs[0]->dtype == IR_F32;
}

npu_status emit_hop_softmax(emit_hop *b)
{
    const ir_node *n = b->n;
    const ir_tensor *x = n->inputs[0];
    if (!ir_shape_equal(x, n->outputs[0]))
        return emit_hop_unsupported(b, "Softmax output shape differs from its input's");
    bool flatten = ir_attr_int(n, "_flatten_axis", 0) != 0;
    int64_t a = ir_attr_int(n, "axis", flatten ? 1 : -1);
    int axis = a < 0 ? (int)(a + x->rank) : (int)a;
    if (a < -x->rank || a >= x->rank)
        axis = -1;
    if (axis < 0 && !(x->rank == 0 && (a == 0 || a == -1)))
        return emit_hop_unsupported(b, "Softmax axis out of range");
    int64_t outer = 1, len = 1, inner = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < axis)
            outer *= x->dims[d];
        else if (d == axis || flatten)
            len *= x->dims[d];
        else
            inner *= x->dims[d];
    }
    if (!emit_hop_fits_i32(outer) || !emit_hop_fits_i32(len) || !emit_hop_fits_i32(inner) ||
        !emit_hop_fits_i32(ir_tensor_numel(x)))
        return emit_hop_unsupported(b, "Softmax too large for the host kernel");
    const ir_tensor *t[2] = {x, n->outputs[0]};
    npurt_p_softmax r = {(int32_t)outer, (int32_t)len, (int32_t)inner, n->op == IR_OP_LOG_SOFTMAX};
    npu_status st = emit_hop_begin(b, NPURT_K_SOFTMAX, 1, 1, t);
    return st == NPU_OK ? emit_hop_put(b, &r, sizeof r) : st;
}

static const struct {
    ir_op op;
    nk_unop un;
} unary_map[] = {
#define IR_UNARY(OP, UN) {IR_OP_##OP, NK_UN_##UN},
#include "ir/unary.def"
#undef IR_UNARY
};

int emit_hop_unary_op(ir_op op)
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

npu_status emit_hop_unary(emit_hop *b, int unary_op)
{
    const ir_node *n = b->n;
    nk_unop op = unary_map[unary_op].un;
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int64_t count = ir_tensor_numel(x);
    if (ir_tensor_numel(y) != count || !emit_hop_fits_i32(count))
        return emit_hop_unsupported(b, "the output must have the input's size");
    npurt_p_unary r = {(int32_t)op, (int32_t)count, 0.0f, 0.0f, -INFINITY, INFINITY, emit_hop_act(n->act)};
    if (n->op == IR_OP_LEAKY_RELU) {
        r.alpha = ir_attr_float(n, "alpha", 0.01f);
    } else if (n->op == IR_OP_HARD_SIGMOID) {
        r.alpha = ir_attr_float(n, "alpha", 0.2f);
        r.beta = ir_attr_float(n, "beta", 0.5f);
    } else if (n->op == IR_OP_CLIP &&
               (!clip_bound(n, 1, "min", -INFINITY, &r.lo) || !clip_bound(n, 2, "max", INFINITY, &r.hi))) {
        return emit_hop_unsupported(b, "Clip bounds must be constant f32 scalars");
    }
    const ir_tensor *t[2] = {x, y};
    npu_status st = emit_hop_begin(b, NPURT_K_UNARY_F32, 1, 1, t);
    return st == NPU_OK ? emit_hop_put(b, &r, sizeof r) : st;
}

npu_status emit_hop_binary(emit_hop *b)
{
    const ir_node *n = b->n;
    static const struct {
        ir_op op;
        nk_binop bin;
    } map[] = {{IR_OP_ADD, NK_BIN_ADD}, {IR_OP_SUB, NK_BIN_SUB},    {IR_OP_MUL, NK_BIN_MUL},
               {IR_OP_DIV, NK_BIN_DIV}, {IR_OP_POW, NK_BIN_POW},    {IR_OP_MAX, NK_BIN_MAX},
               {IR_OP_MIN, NK_BIN_MIN}, {IR_OP_PRELU, NK_BIN_PRELU}};
    npurt_p_binary r;
    memset(&r, 0, sizeof r);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].op == n->op)
            r.op = (int32_t)map[i].bin;
    r.act = emit_hop_act(n->act);
    npu_status st;
    if ((st = emit_hop_shape(b, n->inputs[0], &r.a_shape)) ||
        (st = emit_hop_shape(b, n->inputs[1], &r.b_shape)) ||
        (st = emit_hop_shape(b, n->outputs[0], &r.out_shape)))
        return st;
    const ir_tensor *t[3] = {n->inputs[0], n->inputs[1], n->outputs[0]};
    if ((st = emit_hop_begin(b, NPURT_K_BINARY_F32, 2, 1, t)) == NPU_OK)
        st = emit_hop_put(b, &r, sizeof r);
    return st;
}

/* As the reference's run_reduce: axes from the attribute or a constant
 * input; none reduces everything (or, with noop_with_empty_axes, copies). */
npu_status emit_hop_reduce(emit_hop *b)
{
    const ir_node *n = b->n;
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int64_t axes[NPURT_REC_MAX_RANK];
    int k = ir_attr_ints(n, "axes", axes, NPURT_REC_MAX_RANK);
    if (k > NPURT_REC_MAX_RANK)
        return emit_hop_unsupported(b, "too many reduction axes");
    if (k < 0 && n->n_inputs > 1 && n->inputs[1]) {
        const ir_tensor *a = n->inputs[1];
        int64_t cnt = ir_tensor_numel(a);
        if (!a->data || (a->dtype != IR_I64 && a->dtype != IR_I32) || cnt > NPURT_REC_MAX_RANK)
            return emit_hop_unsupported(b, "reduction axes must be a constant int32/int64 input");
        k = (int)cnt;
        for (int i = 0; i < k; i++)
            axes[i] = a->dtype == IR_I64 ? ((const int64_t *)a->data)[i] : ((const int32_t *)a->data)[i];
    }
    if (k <= 0 && ir_attr_int(n, "noop_with_empty_axes", 0))
        return emit_hop_copy(b);
    npurt_p_reduce r;
    memset(&r, 0, sizeof r);
    npu_status st = emit_hop_shape(b, x, &r.x_shape);
    if (st != NPU_OK)
        return st;
    r.axes_mask = k <= 0 ? (1u << x->rank) - 1 : 0;
    for (int i = 0; i < k; i++) {
        int64_t ax = axes[i] < 0 ? axes[i] + x->rank : axes[i];
        if (ax < 0 || ax >= x->rank || (r.axes_mask & (1u << ax)))
            return emit_hop_unsupported(b, "a reduction axis is out of range or repeated");
        r.axes_mask |= 1u << ax;
    }
    int64_t kept = 1;
    for (int d = 0; d < x->rank; d++)
        if (!(r.axes_mask & (1u << d)))
            kept *= x->dims[d];
    if (ir_tensor_numel(y) != kept || !emit_hop_fits_i32(kept))
        return emit_hop_unsupported(b, "the output size is not the reduction's");
    r.op = n->op == IR_OP_REDUCE_MEAN  ? NK_RED_MEAN
           : n->op == IR_OP_REDUCE_SUM ? NK_RED_SUM
           : n->op == IR_OP_REDUCE_MAX ? NK_RED_MAX
                                       : NK_RED_MIN;
    r.out_count = (int32_t)kept;
    r.act = emit_hop_act(n->act);
    const ir_tensor *t[2] = {x, y};
    if ((st = emit_hop_begin(b, NPURT_K_REDUCE_F32, 1, 1, t)) == NPU_OK)
        st = emit_hop_put(b, &r, sizeof r);
    return st;
}
