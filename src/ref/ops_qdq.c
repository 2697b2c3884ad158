/* QuantizeLinear / DequantizeLinear (ONNX semantics, per tensor or per
 * axis) on the shared float<->int helpers of kernels/nk_quant.h. They are the
 * float boundaries of the quantized graph and the ops of QDQ models. */
#include "kernels/kernels.h"
#include "ref/ref.h"

/* scale/zero point of element i under the node's axis (per-axis when the
 * scale input is 1-D with more than one element) */
typedef struct qdq_params {
    const float *scale;
    const void *zp;
    ir_dtype zp_dtype;
    int64_t count;   /* number of scales */
    int64_t inner;   /* elements per step of the axis */
} qdq_params;

static npu_status qdq_setup(const ir_node *n, const void *const *in, qdq_params *p, npu_err *err)
{
    const ir_tensor *x = n->inputs[0], *s = n->inputs[1];
    const ir_tensor *z = n->n_inputs > 2 ? n->inputs[2] : NULL;
    p->scale = in[1];
    p->zp = z ? in[2] : NULL;
    p->zp_dtype = z ? z->dtype : IR_U8;
    p->count = ir_tensor_numel(s);
    p->inner = 1;
    if (p->count > 1) {
        int64_t axis = ir_attr_int(n, "axis", 1);
        if (axis < 0)
            axis += x->rank;
        if (axis < 0 || axis >= x->rank || x->dims[axis] != p->count)
            return npu_fail(err, NPU_EUSER, "%lld scales do not match axis %lld of the input", (long long)p->count,
                            (long long)axis);
        for (int i = (int)axis + 1; i < x->rank; i++)
            p->inner *= x->dims[i];
    }
    if (z && ir_tensor_numel(z) != p->count)
        return npu_fail(err, NPU_EUSER, "zero point and scale counts differ");
    return NPU_OK;
}

static int32_t zp_at(const qdq_params *p, int64_t k)
{
    if (!p->zp)
        return 0;
    switch (p->zp_dtype) {
    case IR_I8: return ((const int8_t *)p->zp)[k];
    case IR_U8: return ((const uint8_t *)p->zp)[k];
    case IR_I32: return ((const int32_t *)p->zp)[k];
    default: return 0;
    }
}

static npu_status run_quantize(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                               npu_err *err)
{
    (void)scratch;
    qdq_params p;
    npu_status st = qdq_setup(n, in, &p, err);
    if (st != NPU_OK)
        return st;
    const ir_tensor *y = n->outputs[0];
    if (n->inputs[0]->dtype != IR_F32)
        return npu_fail(err, NPU_EUSER, "input type %s: expected float32", ir_dtype_name(n->inputs[0]->dtype));
    const float *x = in[0];
    int64_t total = ir_tensor_numel(n->inputs[0]);
    int64_t chunk = p.count > 1 ? p.inner : total;
    for (int64_t start = 0, k = 0; start < total; start += chunk, k = (k + 1) % p.count) {
        float s = p.scale[k];
        int32_t zp = zp_at(&p, k);
        nk_status ks;
        if (y->dtype == IR_I8)
            ks = nk_quantize_f32_i8(x + start, (int8_t *)out[0] + start, (size_t)chunk, s, zp);
        else if (y->dtype == IR_U8)
            ks = nk_quantize_f32_u8(x + start, (uint8_t *)out[0] + start, (size_t)chunk, s, zp);
        else
            return npu_fail(err, NPU_EUSER, "output type %s: supported are int8 and uint8", ir_dtype_name(y->dtype));
        if (ks != NK_OK)
            return npu_fail(err, NPU_EUSER, "bad scale %g or zero point %d", (double)s, (int)zp);
    }
    return NPU_OK;
}

static npu_status run_dequantize(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                                 npu_err *err)
{
    (void)scratch;
    qdq_params p;
    npu_status st = qdq_setup(n, in, &p, err);
    if (st != NPU_OK)
        return st;
    const ir_tensor *x = n->inputs[0];
    float *y = out[0];
    int64_t total = ir_tensor_numel(x);
    int64_t chunk = p.count > 1 ? p.inner : total;
    for (int64_t start = 0, k = 0; start < total; start += chunk, k = (k + 1) % p.count) {
        float s = p.scale[k];
        int32_t zp = zp_at(&p, k);
        nk_status ks;
        if (x->dtype == IR_I8)
            ks = nk_dequantize_i8_f32((const int8_t *)in[0] + start, y + start, (size_t)chunk, s, zp);
        else if (x->dtype == IR_U8)
            ks = nk_dequantize_u8_f32((const uint8_t *)in[0] + start, y + start, (size_t)chunk, s, zp);
        else if (x->dtype == IR_I32) {
            for (int64_t i = 0; i < chunk; i++)
                y[start + i] = (float)((double)(((const int32_t *)in[0])[start + i] - zp) * s);
            ks = NK_OK;
        } else
            return npu_fail(err, NPU_EUSER, "input type %s: supported are int8, uint8 and int32",
                            ir_dtype_name(x->dtype));
        if (ks != NK_OK)
            return npu_fail(err, NPU_EUSER, "bad scale %g or zero point %d", (double)s, (int)zp);
    }
    return NPU_OK;
}

const ref_op_entry ref_ops_qdq[] = {
    {IR_OP_QUANTIZE_LINEAR, run_quantize, NULL},
    {IR_OP_DEQUANTIZE_LINEAR, run_dequantize, NULL},
    {IR_OP_COUNT, NULL, NULL},
};
