/* The kernel parameters of the float data-movement ops whose parameters
 * may come from inputs (Slice, Pad: attributes in older opsets, constant
 * inputs in newer ones) and the nk_binop of an elementwise op: the reference
 * and the host NODE records (src/emit/hostops_node.c) both read them here. */
#include <string.h>

#include "numerics/numerics.h"

/* Add, Sub, Mul, Div, Pow, Max, Min; PRelu for any other op. */
nk_binop ref_binop(ir_op op)
{
    switch (op) {
    case IR_OP_ADD: return NK_BIN_ADD;
    case IR_OP_SUB: return NK_BIN_SUB;
    case IR_OP_MUL: return NK_BIN_MUL;
    case IR_OP_DIV: return NK_BIN_DIV;
    case IR_OP_POW: return NK_BIN_POW;
    case IR_OP_MAX: return NK_BIN_MAX;
    case IR_OP_MIN: return NK_BIN_MIN;
    default: return NK_BIN_PRELU;
    }
}

/* ONNX Slice parameters made concrete: per axis a start and a step. */
npu_status ref_slice_params(const ir_node *n, const void *const *in, const ir_tensor *x, nk_slice_params *p,
                               npu_err *err)
{
    int64_t starts[NK_MAX_RANK], ends[NK_MAX_RANK], axes[NK_MAX_RANK], steps[NK_MAX_RANK];
    int ns = -1, ne = -1, na = -1, nst = -1;
    npu_status st;
    if ((st = ref_ints_attr_or_input(n, "starts", 1, in, starts, NK_MAX_RANK, &ns, err)) ||
        (st = ref_ints_attr_or_input(n, "ends", 2, in, ends, NK_MAX_RANK, &ne, err)) ||
        (st = ref_ints_attr_or_input(n, "axes", 3, in, axes, NK_MAX_RANK, &na, err)) ||
        (st = ref_ints_attr_or_input(n, "steps", 4, in, steps, NK_MAX_RANK, &nst, err)))
        return st;
    if (ns < 0 || ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return npu_fail(err, NPU_EUSER, "starts, ends, axes and steps must have one length");
    for (int d = 0; d < x->rank; d++) {
        p->start[d] = 0;
        p->step[d] = 1;
    }
    unsigned seen = 0;
    for (int i = 0; i < ns; i++) {
        int64_t a64 = na >= 0 ? axes[i] : i;
        int a = ref_axis(a64, x->rank);
        if (a < 0 || (seen & (1u << a)))
            return npu_fail(err, NPU_EUSER, "axis %lld is out of range for rank %d or repeated", (long long)a64,
                            x->rank);
        seen |= 1u << a;
        int64_t dim = x->dims[a], s = starts[i], e = ends[i], step = nst >= 0 ? steps[i] : 1;
        if (step == 0)
            return npu_fail(err, NPU_EUSER, "step 0 on axis %d", a);
        if (s < 0)
            s += dim;
        if (e < 0)
            e += dim;
        /* clamp as ONNX does: [0, dim] forward, [-1, dim - 1] backward */
        if (step > 0) {
            s = s < 0 ? 0 : (s > dim ? dim : s);
            e = e < 0 ? 0 : (e > dim ? dim : e);
        } else {
            s = s < 0 ? 0 : (s > dim - 1 ? dim - 1 : s);
            e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
        }
        /* in unsigned arithmetic: step may be INT64_MIN or INT64_MAX */
        uint64_t span = step > 0 ? (e > s ? (uint64_t)(e - s) : 0) : (s > e ? (uint64_t)(s - e) : 0);
        uint64_t ustep = step > 0 ? (uint64_t)step : 0u - (uint64_t)step;
        int64_t count = span ? (int64_t)((span - 1) / ustep + 1) : 0;
        if (count != n->outputs[0]->dims[a])
            return npu_fail(err, NPU_EUSER, "axis %d: the slice has %lld elements, the output shape says %lld", a,
                            (long long)count, (long long)n->outputs[0]->dims[a]);
        p->start[a] = s;
        p->step[a] = step;
    }
    return NPU_OK;
}

npu_status ref_pad_params(const ir_node *n, const void *const *in, size_t es, nk_pad_params *out, uint64_t *value,
                          npu_err *err)
{
    const ir_tensor *x = n->inputs[0];
    int rank = x->rank;
    const char *mode = ir_attr_string(n, "mode", "constant");
    nk_pad_params p = {.elem_size = es};
    npu_status st;
    if (!strcmp(mode, "constant"))
        p.mode = NK_PAD_CONSTANT;
    else if (!strcmp(mode, "reflect"))
        p.mode = NK_PAD_REFLECT;
    else if (!strcmp(mode, "edge"))
        p.mode = NK_PAD_EDGE;
    else
        return npu_fail(err, NPU_EUSER, "mode '%s' is not supported (constant, reflect, edge)", mode);
    int64_t pads[2 * NK_MAX_RANK], axes[NK_MAX_RANK];
    int np = -1, na;
    if ((st = ref_ints_attr_or_input(n, "pads", 1, in, pads, 2 * NK_MAX_RANK, &np, err)))
        return st;
    na = -1;
    if (n->n_inputs > 3 && n->inputs[3] && (st = ref_input_ints(n, 3, in[3], axes, NK_MAX_RANK, &na, err)))
        return st;
    int count = na >= 0 ? na : rank;
    if (np != 2 * count)
        return npu_fail(err, NPU_EUSER, "pads has %d values, %d expected", np < 0 ? 0 : np, 2 * count);
    for (int i = 0; i < count; i++) {
        int a = na >= 0 ? ref_axis(axes[i], rank) : i;
        if (a < 0)
            return npu_fail(err, NPU_EUSER, "axis %lld is out of range", (long long)axes[i]);
        p.begin[a] = pads[i];
        p.end[a] = pads[count + i];
    }
    /* the constant: input 2 (opset 11+, of the data's dtype) or the float
     * attribute 'value' of older opsets, converted */
    *value = 0;
    if (n->n_inputs > 2 && n->inputs[2] && ir_tensor_numel(n->inputs[2]) > 0) {
        if (n->inputs[2]->dtype != x->dtype)
            return npu_fail(err, NPU_EUSER, "constant_value must have the data's dtype (%s)",
                            ir_dtype_name(x->dtype));
        memcpy(value, in[2], es);
    } else {
        float v = ir_attr_float(n, "value", 0.0f);
        nk_dtype dt;
        if (ref_nk_dtype(x->dtype, &dt))
            nk_cast(NK_DT_F32, &v, dt, value, 1);
    }
    *out = p;
    return NPU_OK;
}
