/* NODE records (rt/npurt_ops.h): every op npuref runs that has no dedicated
 * host record: float Conv/ConvTranspose/Gemm/MatMul (batched, broadcast,
 * two activations), BatchNormalization, float pools, Resize, data movement
 * of any dtype (Slice, Concat, Split, Pad, Gather, Expand, Tile), Where,
 * compares, Cast, Not, integer elementwise ops and Dropout. Parameters come
 * from the readers the reference adapters run on (src/numerics) or follow
 * their rules, so the runtime calls the same kernel on the same numbers. */
#include "emit/hostops_internal.h"

#include <math.h>
#include <string.h>

#include "numerics/numerics.h"

enum { MAX_SLOTS = 2 * NPURT_REC_MAX_IO };

/* Header, tensor slots, the node block and every slot's dtype and shape;
 * the caller appends the op's words[] (n_words of them). */
static npu_status node_begin(emit_hop *b, npurt_nop op, int n_in, int n_out, const ir_tensor *const *t,
                             int n_words)
{
    npu_status st = emit_hop_begin(b, NPURT_K_NODE, n_in, n_out, t);
    npurt_p_node nb = {op, n_words};
    if (st == NPU_OK)
        st = emit_hop_put(b, &nb, sizeof nb);
    for (int i = 0; st == NPU_OK && i < n_in + n_out; i++) {
        npurt_p_tshape ts;
        memset(&ts, 0, sizeof ts);
        ts.dtype = -1;
        if (t[i]) {
            if (ir_dtype_bits(t[i]->dtype) % 8)
                return emit_hop_unsupported(b, "packed int4 tensors have no generic host kernel");
            ts.dtype = (int32_t)t[i]->dtype;
            if ((st = emit_hop_shape(b, t[i], &ts.shape)) != NPU_OK)
                return st;
        }
        st = emit_hop_put(b, &ts, sizeof ts);
    }
    return st;
}

static npu_status node_emit(emit_hop *b, npurt_nop op, int n_in, int n_out, const ir_tensor *const *t,
                            const void *words, size_t bytes)
{
    npu_status st = node_begin(b, op, n_in, n_out, t, (int)(bytes / 4));
    return st == NPU_OK && bytes ? emit_hop_put(b, words, bytes) : st;
}

/* The node's own inputs then outputs (at most MAX_SLOTS); n_in of them inputs. */
static int io_slots(const ir_node *n, int n_in, const ir_tensor **t)
{
    int k = 0;
    for (int i = 0; i < n_in; i++)
        t[k++] = i < n->n_inputs ? n->inputs[i] : NULL;
    for (int i = 0; i < n->n_outputs; i++)
        t[k++] = n->outputs[i];
    return k;
}

/* The data of the node's inputs (constants; NULL for activations). */
static void const_data(const ir_node *n, const void **in)
{
    for (int i = 0; i < n->n_inputs && i < NPURT_REC_MAX_IO; i++)
        in[i] = n->inputs[i] ? n->inputs[i]->data : NULL;
}

/* Inputs from `from` on (shape parameters) must be constants. */
static bool consts_from(const ir_node *n, int from)
{
    for (int i = from; i < n->n_inputs; i++)
        if (n->inputs[i] && !n->inputs[i]->data && ir_tensor_numel(n->inputs[i]) > 0)
            return false;
    return true;
}

static npu_status ref_fail(emit_hop *b, const char *why)
{
    b->why = why;
    return b->err->code; /* err already says what the reference adapter found */
}

static npu_status node_conv(emit_hop *b, bool transpose)
{
    const ir_node *n = b->n;
    nk_conv_params k;
    if (ref_conv_params(n, transpose, &k, b->err) != NPU_OK)
        return ref_fail(b, "a float convolution the reference adapter rejects");
    npurt_p_n_conv r = {k.n, k.c, k.h, k.w, k.m, k.oh, k.ow, k.kh, k.kw, k.group,
                        k.stride_h, k.stride_w, k.dil_h, k.dil_w, k.pad_top, k.pad_left,
                        k.pad_bottom, k.pad_right, k.out_pad_h, k.out_pad_w, emit_hop_act(n->act)};
    const ir_tensor *t[4] = {n->inputs[0], n->inputs[1], n->n_inputs > 2 ? n->inputs[2] : NULL, n->outputs[0]};
    return node_emit(b, transpose ? NPURT_N_CONV_T : NPURT_N_CONV, 3, 1, t, &r, sizeof r);
}

static npu_status node_gemm(emit_hop *b)
{
    const ir_node *n = b->n;
    nk_gemm_params k;
    if (ref_gemm_params(n, &k, b->err) != NPU_OK)
        return ref_fail(b, "a float Gemm the reference adapter rejects");
    npurt_p_n_gemm r = {k.m, k.n, k.k, k.trans_a, k.trans_b, k.alpha, k.beta, k.c_rows, k.c_cols,
                        emit_hop_act(n->act)};
    const ir_tensor *t[4] = {n->inputs[0], n->inputs[1], n->n_inputs > 2 ? n->inputs[2] : NULL, n->outputs[0]};
    return node_emit(b, NPURT_N_GEMM, 3, 1, t, &r, sizeof r);
}

static void from_nk_shape(const nk_shape *s, npurt_p_shape *r)
{
    memset(r, 0, sizeof *r);
    r->rank = s->rank;
    for (int i = 0; i < s->rank; i++)
        r->dims[i] = s->dims[i];
}

static npu_status node_matmul(emit_hop *b)
{
    const ir_node *n = b->n;
    nk_matmul_params k;
    if (ref_matmul_params(n, &k, b->err) != NPU_OK)
        return ref_fail(b, "a float MatMul the reference adapter rejects");
    npurt_p_n_matmul r;
    from_nk_shape(&k.a, &r.a);
    from_nk_shape(&k.b, &r.b);
    r.act = emit_hop_act(n->act);
    const ir_tensor *t[3] = {n->inputs[0], n->inputs[1], n->outputs[0]};
    return node_emit(b, NPURT_N_MATMUL, 2, 1, t, &r, sizeof r);
}

static npu_status node_pool(emit_hop *b)
{
    const ir_node *n = b->n;
    const ir_tensor *t[2] = {n->inputs[0], n->outputs[0]};
    if (n->op == IR_OP_GLOBAL_AVERAGE_POOL || n->op == IR_OP_GLOBAL_MAX_POOL) {
        nk_global_pool_params g;
        if (ref_global_pool_params(n, &g, b->err) != NPU_OK)
            return ref_fail(b, "a float global pool the reference adapter rejects");
        return node_emit(b, n->op == IR_OP_GLOBAL_AVERAGE_POOL ? NPURT_N_GAVGPOOL : NPURT_N_GMAXPOOL, 1, 1, t,
                         NULL, 0);
    }
    nk_pool_params k;
    if (ref_pool_params(n, &k, b->err) != NPU_OK)
        return ref_fail(b, "a float pool the reference adapter rejects");
    npurt_p_n_pool r;
    memset(&r, 0, sizeof r);
    r.rank = k.rank;
    for (int i = 0; i < k.rank; i++) {
        r.kernel[i] = k.kernel[i];
        r.stride[i] = k.stride[i];
        r.dilation[i] = k.dilation[i];
        r.pad_begin[i] = k.pad_begin[i];
        r.pad_end[i] = k.pad_end[i];
    }
    r.count_include_pad = k.count_include_pad;
    return node_emit(b, n->op == IR_OP_MAX_POOL ? NPURT_N_MAXPOOL : NPURT_N_AVGPOOL, 1, 1, t, &r, sizeof r);
}

static npu_status node_batchnorm(emit_hop *b)
{
    const ir_node *n = b->n;
    if (n->n_inputs != 5 || !emit_hop_all_f32(n, 5) || ir_attr_int(n, "training_mode", 0) != 0)
        return emit_hop_unsupported(b, "BatchNormalization on the host takes five f32 inputs (inference)");
    npurt_p_n_bn r = {ir_attr_float(n, "epsilon", 1e-5f), emit_hop_act(n->act)};
    const ir_tensor *t[6];
    io_slots(n, 5, t);
    return node_emit(b, NPURT_N_BATCHNORM, 5, 1, t, &r, sizeof r);
}

static npu_status node_layernorm(emit_hop *b)
{
    const ir_node *n = b->n;
    const ir_tensor *x = n->inputs[0];
    int axis = (int)ir_attr_int(n, "axis", -1);
    axis = axis < 0 ? axis + x->rank : axis;
    if (n->n_inputs < 2 || n->n_outputs > 3 || axis < 0 || axis >= x->rank)
        return emit_hop_unsupported(b, "LayerNormalization on the host takes X and Scale and an axis of X");
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && n->inputs[i]->dtype != IR_F32)
            return emit_hop_unsupported(b, "LayerNormalization on the host takes f32 tensors");
    npurt_p_n_layernorm r = {axis, ir_attr_float(n, "epsilon", 1e-5f)};
    const ir_tensor *t[6] = {x, n->inputs[1], n->n_inputs > 2 ? n->inputs[2] : NULL, n->outputs[0],
                             n->n_outputs > 1 ? n->outputs[1] : NULL, n->n_outputs > 2 ? n->outputs[2] : NULL};
    return node_emit(b, NPURT_N_LAYERNORM, 3, 3, t, &r, sizeof r);
}

static npu_status node_gelu(emit_hop *b)
{
    const ir_node *n = b->n;
    const char *a = ir_attr_string(n, "approximate", "none");
    if (n->inputs[0]->dtype != IR_F32 || (strcmp(a, "none") && strcmp(a, "tanh")))
        return emit_hop_unsupported(b, "Gelu on the host takes f32 and approximate none or tanh");
    int32_t tanh_form = !strcmp(a, "tanh");
    const ir_tensor *t[2] = {n->inputs[0], n->outputs[0]};
    return node_emit(b, NPURT_N_GELU, 1, 1, t, &tanh_form, sizeof tanh_form);
}

npu_status emit_hop_qdq_runtime(emit_hop *b, bool quantize)
{
    const ir_node *n = b->n;
    const ir_tensor *x = n->inputs[0];
    int axis = (int)ir_attr_int(n, "axis", 1);
    axis = axis < 0 ? axis + x->rank : axis;
    if (ir_tensor_numel(n->inputs[1]) > 1 && (axis < 0 || axis >= x->rank))
        return emit_hop_unsupported(b, "the quantization axis is out of range");
    npurt_p_n_qdq r = {quantize, axis < 0 ? 0 : axis};
    const ir_tensor *t[4] = {x, n->inputs[1], n->n_inputs > 2 ? n->inputs[2] : NULL, n->outputs[0]};
    return node_emit(b, NPURT_N_QDQ, 3, 1, t, &r, sizeof r);
}

static npu_status node_resize(emit_hop *b)
{
    const ir_node *n = b->n;
    const void *in[NPURT_REC_MAX_IO] = {0};
    if (!consts_from(n, 1))
        return emit_hop_unsupported(b, "Resize needs constant scales, sizes and roi");
    const_data(n, in);
    nk_resize_params k;
    if (ref_resize_params(n, in, &k, b->err) != NPU_OK)
        return ref_fail(b, "a Resize the reference adapter rejects");
    npurt_p_n_resize r;
    memset(&r, 0, sizeof r);
    for (int d = 0; d < k.rank; d++) {
        r.scale[d] = k.scale[d];
        r.roi_start[d] = k.roi_start[d];
        r.roi_end[d] = k.roi_end[d];
    }
    r.mode = k.mode, r.coord = k.coord, r.nearest = k.nearest, r.cubic_a = k.cubic_a;
    r.exclude_outside = k.exclude_outside, r.extrapolation_value = k.extrapolation_value;
    const ir_tensor *t[2] = {n->inputs[0], n->outputs[0]};
    return node_emit(b, NPURT_N_RESIZE, 1, 1, t, &r, sizeof r);
}

static size_t elem_bytes(const ir_tensor *t)
{
    int bits = ir_dtype_bits(t->dtype);
    return bits % 8 ? 0 : (size_t)bits / 8;
}

static npu_status node_slice_pad(emit_hop *b)
{
    const ir_node *n = b->n;
    const ir_tensor *x = n->inputs[0], *t[2] = {x, n->outputs[0]};
    const void *in[NPURT_REC_MAX_IO] = {0};
    /* Pad's constant value may be an activation: a slot read at run time */
    const ir_tensor *val = n->op == IR_OP_PAD && n->n_inputs > 2 && n->inputs[2] && !n->inputs[2]->data &&
                                   ir_tensor_numel(n->inputs[2]) > 0
                               ? n->inputs[2]
                               : NULL;
    uint64_t zero = 0;
    for (int i = 1; i < n->n_inputs; i++)
        if (n->inputs[i] && !n->inputs[i]->data && ir_tensor_numel(n->inputs[i]) > 0 && n->inputs[i] != val)
            return emit_hop_unsupported(b, "Slice and Pad need constant parameters");
    if (!elem_bytes(x) || elem_bytes(x) > 8)
        return emit_hop_unsupported(b, "Slice and Pad move whole elements of up to 8 bytes");
    const_data(n, in);
    if (val)
        in[2] = &zero;
    if (n->op == IR_OP_SLICE) {
        nk_slice_params k;
        if (ref_slice_params(n, in, x, &k, b->err) != NPU_OK)
            return ref_fail(b, "a Slice the reference adapter rejects");
        npurt_p_n_slice r;
        memset(&r, 0, sizeof r);
        for (int d = 0; d < x->rank; d++) {
            if (k.start[d] < 0 || k.start[d] > INT32_MAX || k.step[d] < INT32_MIN || k.step[d] > INT32_MAX)
                return emit_hop_unsupported(b, "a slice start or step does not fit int32");
            r.start[d] = (int32_t)k.start[d];
            r.step[d] = (int32_t)k.step[d];
        }
        return node_emit(b, NPURT_N_SLICE, 1, 1, t, &r, sizeof r);
    }
    nk_pad_params k;
    uint64_t value;
    if (ref_pad_params(n, in, elem_bytes(x), &k, &value, b->err) != NPU_OK)
        return ref_fail(b, "a Pad the reference adapter rejects");
    npurt_p_n_pad r;
    memset(&r, 0, sizeof r);
    r.mode = k.mode;
    for (int d = 0; d < x->rank; d++) {
        if (k.begin[d] < INT32_MIN || k.begin[d] > INT32_MAX || k.end[d] < INT32_MIN || k.end[d] > INT32_MAX)
            return emit_hop_unsupported(b, "a pad does not fit int32");
        r.begin[d] = (int32_t)k.begin[d];
        r.end[d] = (int32_t)k.end[d];
    }
    memcpy(r.value, &value, sizeof r.value);
    if (val) {
        const ir_tensor *tv[3] = {x, val, n->outputs[0]};
        return node_emit(b, NPURT_N_PAD, 2, 1, tv, &r, sizeof r);
    }
    return node_emit(b, NPURT_N_PAD, 1, 1, t, &r, sizeof r);
}

/* Concat, Split, Gather: an axis word (normalized as the reference does). */
static npu_status node_axis(emit_hop *b)
{
    const ir_node *n = b->n;
    const ir_tensor *t[MAX_SLOTS];
    int rank = n->op == IR_OP_CONCAT ? n->outputs[0]->rank : n->inputs[0]->rank;
    int64_t a = ir_attr_int(n, "axis", 0);
    if (a < -rank || a >= rank)
        return emit_hop_unsupported(b, "axis out of range");
    int32_t axis = (int32_t)(a < 0 ? a + rank : a);
    if (n->n_inputs + n->n_outputs > MAX_SLOTS || n->n_inputs > NPURT_REC_MAX_IO ||
        n->n_outputs > NPURT_REC_MAX_IO)
        return emit_hop_unsupported(b, "too many tensors for one host step");
    if (n->op == IR_OP_SPLIT) {
        if (!consts_from(n, 1))
            return emit_hop_unsupported(b, "Split needs constant split sizes");
        io_slots(n, 1, t);
        return node_emit(b, NPURT_N_SPLIT, 1, n->n_outputs, t, &axis, 4);
    }
    if (n->op == IR_OP_GATHER) {
        io_slots(n, 2, t);
        return node_emit(b, NPURT_N_GATHER, 2, 1, t, &axis, 4);
    }
    io_slots(n, n->n_inputs, t);
    return node_emit(b, NPURT_N_CONCAT, n->n_inputs, 1, t, &axis, 4);
}

/* Inference, or training with a constant ratio of 0: the reference's copy. */
static bool dropout_is_copy(const ir_node *n)
{
    const ir_tensor *ratio = n->n_inputs > 1 ? n->inputs[1] : NULL, *train = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (!train || ir_tensor_numel(train) != 1 || !train->data)
        return true; /* absent, or known at run time only (the runtime checks it) */
    if (train->dtype != IR_BOOL)
        return false;
    if (!*(const uint8_t *)train->data)
        return true;
    return ratio && ratio->data && ratio->dtype == IR_F32 && ir_tensor_numel(ratio) == 1 &&
           *(const float *)ratio->data == 0.0f;
}

/* Elementwise ops of other than f32 (and the f32 ones without a record). */
static npu_status node_elem(emit_hop *b)
{
    const ir_node *n = b->n;
    const ir_tensor *t[MAX_SLOTS];
    switch (n->op) {
    case IR_OP_WHERE:
        if (n->n_inputs != 3)
            return emit_hop_unsupported(b, "Where takes three inputs");
        io_slots(n, 3, t);
        return node_emit(b, NPURT_N_WHERE, 3, 1, t, NULL, 0);
    case IR_OP_EQUAL:
    case IR_OP_LESS:
    case IR_OP_GREATER: {
        int32_t c = n->op == IR_OP_EQUAL ? NK_CMP_EQUAL : n->op == IR_OP_LESS ? NK_CMP_LESS : NK_CMP_GREATER;
        if (n->n_inputs != 2)
            return emit_hop_unsupported(b, "a compare takes two inputs");
        io_slots(n, 2, t);
        return node_emit(b, NPURT_N_COMPARE, 2, 1, t, &c, 4);
    }
    case IR_OP_CAST:
    case IR_OP_NOT:
        io_slots(n, 1, t);
        return node_emit(b, n->op == IR_OP_CAST ? NPURT_N_CAST : NPURT_N_NOT, 1, 1, t, NULL, 0);
    case IR_OP_NEG:
    case IR_OP_ABS: {
        int32_t u = n->op == IR_OP_NEG ? NK_UN_NEG : NK_UN_ABS;
        io_slots(n, 1, t);
        return node_emit(b, NPURT_N_UNARY_INT, 1, 1, t, &u, 4);
    }
    case IR_OP_DROPOUT: {
        if (!dropout_is_copy(n))
            return emit_hop_unsupported(b, "Dropout in training mode (other than a ratio of 0)");
        /* a ratio or training_mode given at run time: the runtime checks them, as the reference */
        int ni = n->n_inputs > 3 ? 3 : n->n_inputs;
        bool live = false;
        for (int i = 1; i < ni; i++)
            live |= n->inputs[i] && !n->inputs[i]->data;
        io_slots(n, live ? ni : 1, t);
        return node_emit(b, NPURT_N_DROPOUT, live ? ni : 1, n->n_outputs, t, NULL, 0);
    }
    case IR_OP_CLIP: {
        if (n->n_inputs > 3)
            return emit_hop_unsupported(b, "Clip takes at most three inputs");
        npurt_p_n_clip r = {ir_attr_float(n, "min", -INFINITY), ir_attr_float(n, "max", INFINITY),
                            emit_hop_act(n->act)};
        io_slots(n, 3, t);
        return node_emit(b, NPURT_N_CLIP, 3, 1, t, &r, sizeof r);
    }
    default: break;
    }
    if ((n->op == IR_OP_MAX || n->op == IR_OP_MIN) && n->n_inputs != 2) {
        if (n->n_inputs < 1 || n->n_inputs > NPURT_REC_MAX_IO)
            return emit_hop_unsupported(b, "Max/Min of 1 to 64 inputs");
        npurt_p_n_binary r = {ref_binop(n->op), emit_hop_act(n->act)};
        io_slots(n, n->n_inputs, t);
        return node_emit(b, NPURT_N_VARIADIC, n->n_inputs, 1, t, &r, sizeof r);
    }
    if (n->n_inputs != 2 || !n->inputs[1] || (n->inputs[0]->dtype != n->inputs[1]->dtype && n->op != IR_OP_POW))
        return emit_hop_unsupported(b, "binary ops on the host take two inputs of one dtype");
    npurt_p_n_binary r = {ref_binop(n->op), emit_hop_act(n->act)};
    io_slots(n, 2, t);
    return node_emit(b, NPURT_N_BINARY, 2, 1, t, &r, sizeof r);
}

npu_status emit_hop_node(emit_hop *b)
{
    const ir_node *n = b->n;
    for (int i = 0; i < n->n_outputs; i++)
        if (!n->outputs[i] && !(n->op == IR_OP_DROPOUT && i == 1))
            return emit_hop_unsupported(b, "an output is missing");
    switch (n->op) {
    case IR_OP_CONV: return node_conv(b, false);
    case IR_OP_CONV_TRANSPOSE: return node_conv(b, true);
    case IR_OP_GEMM: return node_gemm(b);
    case IR_OP_MATMUL: return node_matmul(b);
    case IR_OP_BATCH_NORM: return node_batchnorm(b);
    case IR_OP_LAYER_NORM: return node_layernorm(b);
    case IR_OP_GELU: return node_gelu(b);
    case IR_OP_MAX_POOL:
    case IR_OP_AVERAGE_POOL:
    case IR_OP_GLOBAL_AVERAGE_POOL:
    case IR_OP_GLOBAL_MAX_POOL: return node_pool(b);
    case IR_OP_RESIZE:
    case IR_OP_UPSAMPLE: return node_resize(b);
    case IR_OP_SLICE:
    case IR_OP_PAD: return node_slice_pad(b);
    case IR_OP_CONCAT:
    case IR_OP_SPLIT:
    case IR_OP_GATHER: return node_axis(b);
    case IR_OP_EXPAND:
    case IR_OP_TILE: {
        const ir_tensor *t[2] = {n->inputs[0], n->outputs[0]};
        return node_emit(b, n->op == IR_OP_EXPAND ? NPURT_N_EXPAND : NPURT_N_TILE, 1, 1, t, NULL, 0);
    }
    case IR_OP_WHERE:
    case IR_OP_EQUAL:
    case IR_OP_LESS:
    case IR_OP_GREATER:
    case IR_OP_CAST:
    case IR_OP_NOT:
    case IR_OP_NEG:
    case IR_OP_ABS:
    case IR_OP_DROPOUT:
    case IR_OP_CLIP:
    case IR_OP_ADD:
    case IR_OP_SUB:
    case IR_OP_MUL:
    case IR_OP_DIV:
    case IR_OP_POW:
    case IR_OP_MAX:
    case IR_OP_MIN: return node_elem(b);
    default: return emit_hop_unsupported(b, "no host kernel for this op");
    }
}
