/* Reference adapters of the quantized graph (docs/numerics.md): IR nodes
 * whose first input carries quantization parameters run on the integer
 * kernels of kernels/nk_quant.h, on the parameters src/numerics/quant.c
 * derives from the tensors' scales at run time.
 *
 * Scratch layout of the weighted ops: int32 multipliers [c], int32 shifts [c],
 * then the kernel's own scratch at a 16-byte boundary. */
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/nk_qfast.h"
#include "numerics/numerics.h"
#include "ref/ref.h"

static size_t align16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

static npu_status kfail(nk_status st, npu_err *err, const char *what)
{
    return npu_fail(err, NPU_EUSER, "%s: the integer kernel %s", what,
                    st == NK_EUNSUPPORTED ? "does not support these parameters (int32 accumulator limits)"
                                          : "rejected its parameters");
}

static size_t mults_bytes(int64_t c)
{
    return align16(2 * sizeof(int32_t) * (size_t)c);
}

/* Per-channel multipliers into scratch (int32 mult[c], then shift[c]). */
static npu_status fill_mults(const ir_tensor *x, const ir_tensor *w, const ir_tensor *y, int64_t c, void *scratch,
                             nk_qmults *q, npu_err *err)
{
    int32_t *m = scratch, *s = m + c;
    q->n = w->quant->count, q->mult = m, q->shift = s;
    return ref_qmults(x, w, y, m, s, err);
}

/* Whether n runs the int16 (A16W8) kernels: its activations are all int16 or all int8. */
static npu_status width(const ir_node *n, bool *a16, npu_err *err)
{
    *a16 = ref_is_a16(n->inputs[0]);
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && !n->inputs[i]->data && n->inputs[i]->quant && ref_is_a16(n->inputs[i]) != *a16)
            return npu_fail(err, NPU_EUSER, "%s mixes int8 and int16 activations", ir_op_name(n->op));
    if (ref_is_a16(n->outputs[0]) != *a16)
        return npu_fail(err, NPU_EUSER, "%s: int%d input, int%d output (needs an npu.Requantize)", ir_op_name(n->op),
                        *a16 ? 16 : 8, *a16 ? 8 : 16);
    return NPU_OK;
}

static size_t conv_scratch(const ir_node *n)
{
    nk_qconv2d_params p;
    npu_err e;
    if (ref_qconv_params(n, &p, &e) != NPU_OK)
        return 0;
    return mults_bytes(p.c_out) + nk_qconv2d_fast_scratch_size(&p);
}

static npu_status run_conv(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    nk_qconv2d_params p;
    bool a16;
    npu_status st = width(n, &a16, err);
    if (st == NPU_OK)
        st = ref_qconv_params(n, &p, err);
    if (st == NPU_OK)
        st = fill_mults(n->inputs[0], n->inputs[1], n->outputs[0], p.c_out, scratch, &p.q, err);
    if (st != NPU_OK)
        return st;
    const int32_t *bias = n->n_inputs > 2 ? in[2] : NULL;
    nk_status ks = a16 ? nk_qconv2d_a16(&p, in[0], in[1], bias, out[0])
                       : nk_qconv2d_fast(&p, in[0], in[1], bias, out[0], NULL, (char *)scratch + mults_bytes(p.c_out));
    return ks == NK_OK ? NPU_OK : kfail(ks, err, "Conv");
}

static size_t fc_scratch_bytes(const ref_qfc_setup *f)
{
    size_t kn = (size_t)f->p.in_features * (size_t)f->p.out_features;
    return mults_bytes(f->p.out_features) + (f->transpose ? align16(kn) : 0) + nk_qfc_scratch_size(&f->p);
}

static size_t gemm_scratch(const ir_node *n)
{
    npu_err e;
    if (ref_q_is_bmm(n)) {
        nk_qbmm_params p;
        return ref_qbmm_params(n, &p, &e) == NPU_OK ? nk_qbmm_scratch_size(&p) : 0;
    }
    ref_qfc_setup f;
    return ref_qfc_params(n, &f, &e) == NPU_OK ? fc_scratch_bytes(&f) : 0;
}

static npu_status run_gemm(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    nk_status ks;
    if (ref_q_is_bmm(n)) {
        nk_qbmm_params p;
        npu_status st = ref_qbmm_params(n, &p, err);
        if (st != NPU_OK)
            return st;
        ks = nk_qbmm(&p, in[0], in[1], out[0], scratch);
        return ks == NK_OK ? NPU_OK : kfail(ks, err, "MatMul");
    }
    ref_qfc_setup f;
    bool a16;
    npu_status st = width(n, &a16, err);
    if (st == NPU_OK)
        st = ref_qfc_params(n, &f, err);
    if (st == NPU_OK)
        st = fill_mults(n->inputs[0], n->inputs[1], n->outputs[0], f.p.out_features, scratch, &f.p.q, err);
    if (st != NPU_OK)
        return st;
    char *rest = (char *)scratch + mults_bytes(f.p.out_features);
    const void *w = in[1];
    if (f.transpose) { /* [K, N] -> [N, K], unpacking int4 on the way */
        size_t K = (size_t)f.p.in_features, N = (size_t)f.p.out_features;
        int8_t *t = (int8_t *)rest;
        bool i4 = n->inputs[1]->dtype == IR_I4;
        for (size_t k = 0; k < K; k++)
            for (size_t j = 0; j < N; j++)
                t[j * K + k] = i4 ? nk_int4_get(in[1], k * N + j) : ((const int8_t *)in[1])[k * N + j];
        w = t;
        rest += align16(K * N);
    }
    const int32_t *bias = n->n_inputs > 2 ? in[2] : NULL;
    ks = a16 ? nk_qfc_a16(&f.p, in[0], w, bias, out[0]) : nk_qfc(&f.p, in[0], w, bias, out[0], rest);
    return ks == NK_OK ? NPU_OK : kfail(ks, err, ir_op_name(n->op));
}

static npu_status run_pool(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    (void)scratch;
    nk_qpool_params p;
    bool a16;
    npu_status st = width(n, &a16, err);
    if (st == NPU_OK)
        st = ref_qpool_params(n, &p, err);
    if (st != NPU_OK)
        return st;
    nk_status ks;
    if (a16)
        ks = n->op == IR_OP_MAX_POOL || n->op == IR_OP_GLOBAL_MAX_POOL ? nk_qmaxpool_a16(&p, in[0], out[0])
             : n->op == IR_OP_AVERAGE_POOL                          ? nk_qavgpool_a16(&p, in[0], out[0])
                                                                    : nk_qglobal_avgpool_a16(&p, in[0], out[0]);
    else if (n->op == IR_OP_MAX_POOL || n->op == IR_OP_GLOBAL_MAX_POOL)
        ks = nk_qmaxpool(&p, in[0], out[0]);
    else if (n->op == IR_OP_AVERAGE_POOL)
        ks = nk_qavgpool(&p, in[0], out[0]);
    else
        ks = nk_qglobal_avgpool(&p, in[0], out[0]);
    return ks == NK_OK ? NPU_OK : kfail(ks, err, ir_op_name(n->op));
}

static npu_status run_binary(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    (void)scratch;
    nk_qbinary_params p;
    npu_status st = ref_qbinary_params(n, &p, err);
    if (st != NPU_OK)
        return st;
    nk_status ks = ref_is_a16(n->outputs[0]) ? nk_qbinary_a16(&p, in[0], in[1], out[0])
                                             : nk_qbinary(&p, in[0], in[1], out[0]);
    return ks == NK_OK ? NPU_OK : kfail(ks, err, ir_op_name(n->op));
}

static npu_status run_requantize(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                                 npu_err *err)
{
    (void)scratch;
    nk_qrequant_params p;
    npu_status st = ref_qrequant_params(n, n->inputs[0], n->outputs[0], &p, err);
    if (st != NPU_OK)
        return st;
    if (ir_tensor_numel(n->inputs[0]) != ir_tensor_numel(n->outputs[0]))
        return npu_fail(err, NPU_EUSER, "npu.Requantize changes the element count");
    nk_status ks = nk_qrequant_x(&p, in[0], ref_is_a16(n->inputs[0]) ? 2 : 1, out[0],
                                 ref_is_a16(n->outputs[0]) ? 2 : 1, (size_t)ir_tensor_numel(n->outputs[0]));
    return ks == NK_OK ? NPU_OK : kfail(ks, err, "npu.Requantize");
}

static npu_status run_lut(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    (void)scratch;
    const ir_tensor *x = n->inputs[0], *t = n->n_inputs > 1 ? n->inputs[1] : NULL, *y = n->outputs[0];
    if (t && ref_is_a16(x)) {
        if (!ref_is_a16(y) || t->dtype != IR_I16 || ir_tensor_numel(t) != NK_LUT16_SIZE ||
            ir_tensor_numel(x) != ir_tensor_numel(y))
            return npu_fail(err, NPU_EUSER, "npu.Lut of int16 data needs an int16 output and table of 513 entries");
        nk_lut_apply_i16(in[1], in[0], out[0], (size_t)ir_tensor_numel(y));
        return NPU_OK;
    }
    /* uint8 data (a model's uint8 input or output) is looked up by its bytes, as the NPU reads them */
    if ((x->dtype != IR_I8 && x->dtype != IR_U8) || (y->dtype != IR_I8 && y->dtype != IR_U8) || !t ||
        t->dtype != IR_I8 || ir_tensor_numel(t) != 256 || ir_tensor_numel(x) != ir_tensor_numel(y))
        return npu_fail(err, NPU_EUSER, "npu.Lut needs int8 (or uint8) data and an int8 table of 256 entries");
    nk_lut_apply_i8(in[1], in[0], out[0], (size_t)ir_tensor_numel(y));
    return NPU_OK;
}

/* ---- data movement -------------------------------------------------------- */

static npu_status run_concat(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    (void)scratch;
    const ir_tensor *y = n->outputs[0];
    int64_t axis = ir_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += y->rank;
    if (axis < 0 || axis >= y->rank)
        return npu_fail(err, NPU_EUSER, "Concat axis out of range");
    int64_t outer = 1, inner = 1, total = 0;
    for (int i = 0; i < axis; i++)
        outer *= y->dims[i];
    for (int i = (int)axis + 1; i < y->rank; i++)
        inner *= y->dims[i];
    for (int i = 0; i < n->n_inputs; i++) {
        const ir_tensor *x = n->inputs[i];
        if (!x || x->rank != y->rank)
            return npu_fail(err, NPU_EUSER, "Concat inputs must share the output's rank");
        total += x->dims[axis];
    }
    if (total != y->dims[axis])
        return npu_fail(err, NPU_EUSER, "Concat input sizes do not add up to the output");
    int8_t *dst = out[0];
    int es = ref_is_a16(y) ? 2 : 1;
    int64_t row = y->dims[axis] * inner * es, off = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const ir_tensor *x = n->inputs[i];
        const int8_t *src = in[i];
        int64_t chunk = x->dims[axis] * inner * es;
        if (ref_is_a16(x) != (es == 2))
            return npu_fail(err, NPU_EUSER, "Concat mixes int8 and int16 inputs");
        nk_qrequant_params p;
        npu_status st = ref_qrequant_params(n, x, y, &p, err);
        if (st != NPU_OK)
            return st;
        bool same = ref_qrequant_is_copy(x, y, &p);
        for (int64_t o = 0; o < outer; o++) {
            int8_t *d = dst + o * row + off;
            if (same)
                memcpy(d, src + o * chunk, (size_t)chunk);
            else if (nk_qrequant_x(&p, src + o * chunk, es, d, es, (size_t)(chunk / es)) != NK_OK)
                return kfail(NK_EARG, err, "Concat");
        }
        off += chunk;
    }
    return NPU_OK;
}

/* Reshape, Flatten, Squeeze, Unsqueeze, Identity: the same bytes (the
 * quantizer gives the output the input's parameters). */
static npu_status run_copy(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    (void)scratch;
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    if (x->dtype != y->dtype || ir_tensor_numel(x) != ir_tensor_numel(y))
        return npu_fail(err, NPU_EUSER, "a reshape must keep the element type and count");
    if ((y->dtype == IR_I8 || y->dtype == IR_I16) && y->quant && !(y->quant->count == 1 && x->quant->count == 1 &&
                                           y->quant->scale[0] == x->quant->scale[0] &&
                                           y->quant->zero_point[0] == x->quant->zero_point[0]))
        return npu_fail(err, NPU_EUSER, "a reshape cannot change quantization parameters");
    if (out[0] != in[0])
        memmove(out[0], in[0], ir_tensor_bytes(y));
    return NPU_OK;
}

const ref_op_entry ref_ops_quant[] = {
    {IR_OP_CONV, run_conv, conv_scratch},
    {IR_OP_GEMM, run_gemm, gemm_scratch},
    {IR_OP_MATMUL, run_gemm, gemm_scratch},
    {IR_OP_MAX_POOL, run_pool, NULL},
    {IR_OP_GLOBAL_MAX_POOL, run_pool, NULL},
    {IR_OP_AVERAGE_POOL, run_pool, NULL},
    {IR_OP_GLOBAL_AVERAGE_POOL, run_pool, NULL},
    {IR_OP_ADD, run_binary, NULL},
    {IR_OP_SUB, run_binary, NULL},
    {IR_OP_MUL, run_binary, NULL},
    {IR_OP_MIN, run_binary, NULL},
    {IR_OP_MAX, run_binary, NULL},
    {IR_OP_REQUANTIZE, run_requantize, NULL},
    {IR_OP_LUT, run_lut, NULL},
    {IR_OP_CONCAT, run_concat, NULL},
    {IR_OP_RESHAPE, run_copy, NULL},
    {IR_OP_FLATTEN, run_copy, NULL},
    {IR_OP_SQUEEZE, run_copy, NULL},
    {IR_OP_UNSQUEEZE, run_copy, NULL},
    {IR_OP_IDENTITY, run_copy, NULL},
    {IR_OP_COUNT, NULL, NULL},
};
