/* IR node -> libnpurt host-step record (rt/npurt_ops.h): the builder,
 * QuantizeLinear/DequantizeLinear (as src/ref/ops_qdq.c), copies and
 * transposes, the dispatch, and the public entry points. The quantized
 * kernels are in hostops_quant.c, the float fallbacks in hostops_float.c.
 * Each record is checked with the runtime's own npurt_rec_check before it
 * is appended, which also gives its scratch size. */
#include "emit/hostops_internal.h"

#include <string.h>

#include "numerics/numerics.h"

_Static_assert((int)NPURT_DT_F32 == (int)IR_F32 && (int)NPURT_DT_I32 == (int)IR_I32 &&
                   (int)NPURT_DT_I8 == (int)IR_I8 && (int)NPURT_DT_U8 == (int)IR_U8 &&
                   (int)NPURT_DT_I4 == (int)IR_I4 && (int)NPURT_DT_BOOL == (int)IR_BOOL,
               "npub dtype codes are ir_dtype's");
_Static_assert(NPURT_REC_MAX_RANK == NK_MAX_RANK, "record shapes are nk_shape's");

const char *const emit_hop_why_params = "its quantization parameters do not fit the host integer kernels";

npu_status emit_hop_put(emit_hop *b, const void *data, size_t bytes)
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

npu_status emit_hop_unsupported(emit_hop *b, const char *why)
{
    b->why = why;
    return npu_fail(b->err, NPU_EUSER, "%s", why);
}

/* Header and tensor slots; t[i] NULL for an omitted optional input. */
npu_status emit_hop_begin(emit_hop *b, npurt_kernel k, int n_in, int n_out, const ir_tensor *const *t)
{
    npurt_rec_header h = {NPURT_REC_VERSION, (uint32_t)k, 0, (uint32_t)n_in, (uint32_t)n_out};
    npu_status st = emit_hop_put(b, &h, sizeof h);
    for (int i = 0; st == NPU_OK && i < n_in + n_out; i++) {
        uint32_t idx = t[i] ? b->map->index(b->map->ud, t[i]) : NPUB_NONE;
        if (t[i] && idx == NPUB_NONE)
            return npu_fail(b->err, NPU_EINTERNAL, "tensor '%s' has no place in the binary", t[i]->name);
        st = emit_hop_put(b, &idx, 4);
    }
    return st;
}

npu_status emit_hop_shape(emit_hop *b, const ir_tensor *t, npurt_p_shape *r)
{
    memset(r, 0, sizeof *r);
    if (t->rank > NPURT_REC_MAX_RANK)
        return emit_hop_unsupported(b, "a tensor has more dimensions than the host kernels take");
    r->rank = t->rank;
    for (int i = 0; i < t->rank; i++) {
        if (!emit_hop_fits_i32(t->dims[i]))
            return emit_hop_unsupported(b, "a dimension does not fit int32");
        r->dims[i] = (int32_t)t->dims[i];
    }
    return NPU_OK;
}

npurt_p_act emit_hop_act(ir_act a)
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
    case IR_I16: return ((const int16_t *)z->data)[k];
    case IR_I32: return ((const int32_t *)z->data)[k];
    default: return 0;
    }
}

static npu_status build_qdq(emit_hop *b, bool quantize)
{
    const ir_node *n = b->n;
    if (n->n_inputs < 2 || !n->inputs[0] || !n->inputs[1] || n->n_outputs < 1)
        return emit_hop_unsupported(b,
                                    "QuantizeLinear/DequantizeLinear needs an input, a scale and an output");
    const ir_tensor *x = n->inputs[0], *s = n->inputs[1], *y = n->outputs[0];
    const ir_tensor *z = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (!s->data || (z && !z->data))
        return emit_hop_qdq_runtime(b, quantize);
    if (s->dtype != IR_F32)
        return emit_hop_unsupported(b, "the scale must be float32");
    if (z && z->dtype != IR_I8 && z->dtype != IR_U8 && z->dtype != IR_I16 && z->dtype != IR_I32)
        return emit_hop_unsupported(b, "zero points of this dtype have no host kernel");
    if (quantize ? (x->dtype != IR_F32 || (y->dtype != IR_I8 && y->dtype != IR_U8 && y->dtype != IR_I16))
                 : (y->dtype != IR_F32 ||
                    (x->dtype != IR_I8 && x->dtype != IR_U8 && x->dtype != IR_I16 && x->dtype != IR_I32)))
        return emit_hop_unsupported(
            b, quantize ? "QuantizeLinear runs on the host from f32 to int8, uint8 or int16"
                        : "DequantizeLinear runs on the host from int8, uint8, int16, int32 to f32");
    int64_t total = ir_tensor_numel(x), count = ir_tensor_numel(s), inner = 1;
    if (count > 1) {
        int64_t axis = ir_attr_int(n, "axis", 1);
        if (axis < 0)
            axis += x->rank;
        if (axis < 0 || axis >= x->rank || x->dims[axis] != count)
            return emit_hop_unsupported(b, "the scales do not match the quantization axis");
        for (int i = (int)axis + 1; i < x->rank; i++)
            inner *= x->dims[i];
    }
    if ((z && ir_tensor_numel(z) != count) || count < 1 || !emit_hop_fits_i32(total) ||
        !emit_hop_fits_i32(count) || ir_tensor_numel(y) != total)
        return emit_hop_unsupported(b, "the zero point and scale counts differ");
    const ir_tensor *t[2] = {x, y};
    npurt_p_qdq p = {(uint32_t)total, (uint32_t)count, (uint32_t)(count > 1 ? inner : total)};
    npu_status st = emit_hop_begin(b, quantize ? NPURT_K_QUANTIZE : NPURT_K_DEQUANTIZE, 1, 1, t);
    if (st == NPU_OK)
        st = emit_hop_put(b, &p, sizeof p);
    for (int64_t k = 0; st == NPU_OK && k < count; k++)
        st = emit_hop_put(b, (const float *)s->data + k, 4);
    for (int64_t k = 0; st == NPU_OK && k < count; k++) {
        int32_t v = z ? zp_value(z, k) : 0;
        st = emit_hop_put(b, &v, 4);
    }
    return st;
}

/* Reshape, Flatten, Squeeze, Unsqueeze, Identity: the same bytes. */
npu_status emit_hop_copy(emit_hop *b)
{
    const ir_node *n = b->n;
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    if (x->dtype != y->dtype || ir_tensor_bytes(x) != ir_tensor_bytes(y) || ir_tensor_bytes(y) > UINT32_MAX)
        return emit_hop_unsupported(b, "a reshape must keep the element type and count");
    if (y->quant && x->quant &&
        !(y->quant->count == 1 && x->quant->count == 1 && y->quant->scale[0] == x->quant->scale[0] &&
          y->quant->zero_point[0] == x->quant->zero_point[0]))
        return emit_hop_unsupported(b, "a reshape cannot change quantization parameters");
    const ir_tensor *t[2] = {x, y};
    npurt_p_copy r = {(uint32_t)ir_tensor_bytes(y)};
    npu_status st = emit_hop_begin(b, NPURT_K_COPY, 1, 1, t);
    return st == NPU_OK ? emit_hop_put(b, &r, sizeof r) : st;
}

/* Transpose of any whole-byte dtype, as the reference's run_transpose
 * (default perm: the dims reversed). */
static npu_status build_transpose(emit_hop *b)
{
    const ir_node *n = b->n;
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int bits = ir_dtype_bits(x->dtype);
    if (y->dtype != x->dtype || bits % 8 || bits == 0)
        return emit_hop_unsupported(b, "Transpose keeps a whole-byte dtype");
    npurt_p_transpose r;
    memset(&r, 0, sizeof r);
    r.elem_size = bits / 8;
    npu_status st = emit_hop_shape(b, x, &r.in_shape);
    if (st != NPU_OK)
        return st;
    int64_t perm[NPURT_REC_MAX_RANK];
    int k = ir_attr_ints(n, "perm", perm, NPURT_REC_MAX_RANK);
    if ((k >= 0 && k != x->rank) || y->rank != x->rank)
        return emit_hop_unsupported(b, "perm does not match the rank");
    for (int d = 0; d < x->rank; d++) {
        int64_t pd = k >= 0 ? perm[d] : x->rank - 1 - d;
        if (pd < 0 || pd >= x->rank || y->dims[d] != x->dims[pd])
            return emit_hop_unsupported(b, "perm is not a permutation matching the output shape");
        r.perm[d] = (int32_t)pd;
    }
    const ir_tensor *t[2] = {x, y};
    if ((st = emit_hop_begin(b, NPURT_K_TRANSPOSE, 1, 1, t)) == NPU_OK)
        st = emit_hop_put(b, &r, sizeof r);
    return st;
}

/* ---- dispatch ------------------------------------------------------------ */

static bool is_quantized(const ir_node *n)
{
    return n->n_inputs > 0 && n->inputs[0] && n->inputs[0]->quant;
}

/* Data movement on int8 codes is exact when every quantized input and
 * output shares one scale and zero point (the quantizer's pass-through ops):
 * the generic kernels then move the codes as they are. */
static bool same_codes(const ir_node *n)
{
    const ir_quant *q = n->inputs[0]->quant;
    switch (n->op) {
    case IR_OP_SLICE:
    case IR_OP_SPLIT:
    case IR_OP_PAD:
    case IR_OP_GATHER:
    case IR_OP_EXPAND:
    case IR_OP_TILE: break;
    default: return false;
    }
    if (q->count != 1)
        return false;
    for (int i = 0; i < n->n_outputs; i++) {
        const ir_quant *o = n->outputs[i] ? n->outputs[i]->quant : NULL;
        if (n->outputs[i] && (!o || o->count != 1 || o->scale[0] != q->scale[0] ||
                              o->zero_point[0] != q->zero_point[0]))
            return false;
    }
    return true;
}

static npu_status build_node(emit_hop *b)
{
    const ir_node *n = b->n;
    if (n->n_inputs < 1 || !n->inputs[0] || n->n_outputs < 1 || !n->outputs[0])
        return emit_hop_unsupported(b, "the node lacks an input or an output");
    if (n->n_outputs > 1 && n->op != IR_OP_SPLIT && n->op != IR_OP_DROPOUT && n->op != IR_OP_LAYER_NORM)
        for (int i = 1; i < n->n_outputs; i++)
            if (n->outputs[i])
                return emit_hop_unsupported(b, "host kernels have one output");
    bool q = is_quantized(n);
    switch (n->op) {
    case IR_OP_QUANTIZE_LINEAR: return build_qdq(b, true);
    case IR_OP_DEQUANTIZE_LINEAR: return build_qdq(b, false);
    case IR_OP_RESHAPE:
    case IR_OP_FLATTEN:
    case IR_OP_SQUEEZE:
    case IR_OP_UNSQUEEZE:
    case IR_OP_IDENTITY: return emit_hop_copy(b);
    case IR_OP_TRANSPOSE: return build_transpose(b);
    default: break;
    }
    if (q) {
        switch (n->op) {
        case IR_OP_CONV: return emit_hop_qconv(b);
        case IR_OP_GEMM:
        case IR_OP_MATMUL: return ref_q_is_bmm(n) ? emit_hop_qbmm(b) : emit_hop_qfc(b);
        case IR_OP_MAX_POOL:
        case IR_OP_GLOBAL_MAX_POOL: return emit_hop_qpool(b, NPURT_K_QMAXPOOL);
        case IR_OP_AVERAGE_POOL: return emit_hop_qpool(b, NPURT_K_QAVGPOOL);
        case IR_OP_GLOBAL_AVERAGE_POOL: return emit_hop_qpool(b, NPURT_K_QGLOBALAVGPOOL);
        case IR_OP_ADD:
        case IR_OP_SUB:
        case IR_OP_MUL:
        case IR_OP_MIN:
        case IR_OP_MAX: return emit_hop_qbinary(b);
        case IR_OP_REQUANTIZE: return emit_hop_qrequant(b);
        case IR_OP_LUT: return emit_hop_qlut(b);
        case IR_OP_CONCAT: return emit_hop_qconcat(b);
        default: return same_codes(n) ? emit_hop_node(b)
                                      : emit_hop_unsupported(b, "no host kernel for this quantized op");
        }
    }
    switch (n->op) {
    case IR_OP_SOFTMAX:
    case IR_OP_LOG_SOFTMAX:
        return emit_hop_all_f32(n, 1) ? emit_hop_softmax(b)
                                      : emit_hop_unsupported(b, "Softmax runs on the host in f32 only");
    case IR_OP_REDUCE_MEAN:
    case IR_OP_REDUCE_SUM:
    case IR_OP_REDUCE_MAX:
    case IR_OP_REDUCE_MIN:
        return emit_hop_all_f32(n, 1) ? emit_hop_reduce(b)
                                      : emit_hop_unsupported(b, "reductions run on the host in f32 only");
    case IR_OP_ADD:
    case IR_OP_SUB:
    case IR_OP_MUL:
    case IR_OP_DIV:
    case IR_OP_POW:
    case IR_OP_MAX:
    case IR_OP_MIN:
    case IR_OP_PRELU:
        return n->n_inputs == 2 && emit_hop_all_f32(n, 2) ? emit_hop_binary(b) : emit_hop_node(b);
    default: break;
    }
    int u = emit_hop_unary_op(n->op);
    if (n->op == IR_OP_CLIP)
        for (int i = 1; i < n->n_inputs; i++)
            if (n->inputs[i] && !n->inputs[i]->data)
                return emit_hop_node(b); /* bounds known at run time */
    if (u >= 0)
        return emit_hop_all_f32(n, 1) ? emit_hop_unary(b, u) : emit_hop_node(b);
    return emit_hop_node(b);
}

/* Builds n's record into b->rb and checks it with the runtime's checker. */
static npu_status build_checked(emit_hop *b, uint32_t *scratch)
{
    npu_status st = build_node(b);
    if (st != NPU_OK)
        return st;
    npurt_rec_header *h = (npurt_rec_header *)b->rb.w;
    h->size = (uint32_t)(b->rb.n * 4);
    npurt_fault f;
    if (npurt_rec_check(b->rb.w, h->size, scratch, &f)) {
        b->why = emit_hop_why_params;
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
    npu_err err = {0};
    emit_tensor_map map = {dummy_index, NULL};
    emit_hop b = {g, n, &map, {g->alloc, NULL, 0, 0}, NULL, &err};
    uint32_t scratch;
    npu_status st = build_checked(&b, &scratch);
    npu_free(g->alloc, b.rb.w, b.rb.cap * 4);
    if (why)
        *why = st == NPU_OK ? NULL : b.why ? b.why : "out of memory";
    /* the parameter reader's own words after the kind of failure (in the graph's arena) */
    if (why && st != NPU_OK && b.why == emit_hop_why_params && err.msg[0]) {
        const char *detail = npu_arena_printf(g->arena, "%s: %s", b.why, err.msg);
        *why = detail ? detail : b.why;
    }
    return st == NPU_OK;
}

npu_status emit_host_step(const ir_graph *g, const ir_node *n, const emit_tensor_map *map, emit_blob *params,
                          uint16_t *kernel, uint32_t *params_offset, uint32_t *params_size,
                          uint32_t *scratch_bytes, npu_err *err)
{
    emit_hop b = {g, n, map, {g->alloc, NULL, 0, 0}, NULL, err};
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
