/* Which ops let an output share its input's bytes, and where: views
 * (same bytes), concat inputs and split/slice outputs (contiguous byte ranges),
 * elementwise ops (an output may overwrite an input at its last read).
 * Shared by the planner and the checker. */
#include "memplan/memplan_internal.h"

int64_t mp_align_up(int64_t v, int64_t a)
{
    return (v + a - 1) / a * a;
}

/* Every dim before the axis is 1: then each part is one byte range. */
static bool outer_dims_one(const ir_tensor *t, int64_t axis)
{
    if (axis < 0)
        axis += t->rank;
    if (axis < 0 || axis >= t->rank)
        return false;
    for (int d = 0; d < axis; d++)
        if (t->dims[d] != 1)
            return false;
    return true;
}

/* prefix[i] = byte offset of parts[i] in whole; false unless they tile it
 * in whole bytes of one dtype. */
static bool parts_tile(const ir_tensor *whole, ir_tensor *const *parts, int n, int64_t *prefix)
{
    int bits = ir_dtype_bits(whole->dtype);
    int64_t acc = 0;
    for (int i = 0; i < n; i++) {
        const ir_tensor *x = parts[i];
        if (!x || x->dtype != whole->dtype || (ir_tensor_numel(x) * bits) % 8 != 0)
            return false;
        prefix[i] = acc;
        acc += (int64_t)ir_tensor_bytes(x);
    }
    return acc == (int64_t)ir_tensor_bytes(whole);
}

/* A Slice (as the importer normalizes it: starts/ends/axes/steps over
 * every dim) that cuts one axis with step 1 and whose dims before that
 * axis are 1: its output is one byte range of its input, at *prefix. */
static bool slice_layout(const ir_node *n, int64_t *prefix)
{
    const ir_tensor *x = n->n_inputs >= 1 ? n->inputs[0] : NULL, *y = n->n_outputs == 1 ? n->outputs[0] : NULL;
    if (!x || !y || x->dtype != y->dtype || y->rank != x->rank || x->rank > IR_MAX_RANK)
        return false;
    int64_t st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
    int r = x->rank;
    if (ir_attr_ints(n, "starts", st, r) != r || ir_attr_ints(n, "ends", en, r) != r ||
        ir_attr_ints(n, "axes", ax, r) != r || ir_attr_ints(n, "steps", sp, r) != r)
        return false;
    int cut = -1;
    int64_t start = 0;
    for (int d = 0; d < r; d++) {
        if (ax[d] != d || sp[d] != 1 || y->dims[d] != en[d] - st[d] || st[d] < 0 || en[d] > x->dims[d])
            return false;
        if (y->dims[d] == x->dims[d])
            continue;
        if (cut >= 0)
            return false; /* two axes cut: not one byte range */
        cut = d, start = st[d];
    }
    if (cut < 0)
        cut = 0;
    if (!outer_dims_one(x, cut))
        return false;
    int64_t inner_bits = ir_dtype_bits(x->dtype);
    for (int d = cut + 1; d < r; d++)
        inner_bits *= x->dims[d];
    if (inner_bits % 8)
        return false;
    *prefix = start * (inner_bits / 8);
    return true;
}

bool mp_split_layout(const ir_node *n, int64_t *prefix)
{
    if (n->op == IR_OP_SLICE)
        return slice_layout(n, prefix);
    const ir_tensor *x = n->n_inputs >= 1 ? n->inputs[0] : NULL;
    return x && n->n_outputs >= 1 && outer_dims_one(x, ir_attr_int(n, "axis", 0)) &&
           parts_tile(x, n->outputs, n->n_outputs, prefix);
}

bool mp_concat_layout(const ir_node *n, int64_t *prefix)
{
    const ir_tensor *o = n->n_outputs == 1 ? n->outputs[0] : NULL;
    return o && outer_dims_one(o, ir_attr_int(n, "axis", 0)) && parts_tile(o, n->inputs, n->n_inputs, prefix);
}

bool mp_is_elementwise(ir_op op)
{
    switch (op) {
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV: case IR_OP_MAX: case IR_OP_MIN:
    case IR_OP_PRELU: case IR_OP_REQUANTIZE: case IR_OP_LUT:
#define IR_UNARY(OP, UN) case IR_OP_##OP:
#include "ir/unary.def"
#undef IR_UNARY
        return true;
    default:
        return false;
    }
}

bool mp_inplace_operand(const ir_node *n, const ir_tensor *x)
{
    const ir_tensor *y = n->n_outputs == 1 ? n->outputs[0] : NULL;
    return y && x && !x->data && mp_is_elementwise(n->op) && ir_tensor_numel(x) == ir_tensor_numel(y) &&
           ir_dtype_bits(x->dtype) == ir_dtype_bits(y->dtype) && ir_tensor_bytes(x) == ir_tensor_bytes(y);
}
