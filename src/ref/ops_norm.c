/* Reference adapters of the transformer-block ops: float Gelu and
 * LayerNormalization, the quantizer's npu.Softmax and npu.LayerNorm
 * (row-wise over the last axis, kernels/nk_norm.h), and an integer
 * ReduceMean as the average pool it is (the mean over tokens of a ViT, a
 * global average pool written as ReduceMean). */
#include <string.h>

#include "ref/ref_internal.h"

static npu_status kfail(nk_status s, npu_err *err, const char *what)
{
    return npu_fail(err, NPU_EUSER, "%s: the integer kernel refuses these parameters (%s)", what,
                    s == NK_EUNSUPPORTED ? "unsupported" : "invalid");
}

static npu_status run_gelu(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    (void)scratch;
    const ir_tensor *x = n->inputs[0];
    if (x->dtype != IR_F32 || n->outputs[0]->dtype != IR_F32 || !ir_shape_equal(x, n->outputs[0]))
        return npu_fail(err, NPU_EUSER, "Gelu needs a float input and an output of its shape");
    const char *a = ir_attr_string(n, "approximate", "none");
    if (strcmp(a, "none") && strcmp(a, "tanh"))
        return npu_fail(err, NPU_EUSER, "approximate = '%s' (supported: none, tanh)", a);
    nk_gelu_f32(in[0], out[0], ir_tensor_numel(x), !strcmp(a, "tanh"));
    return NPU_OK;
}

static npu_status run_layer_norm(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                                 npu_err *err)
{
    (void)scratch;
    const ir_tensor *x = n->inputs[0], *s = n->n_inputs > 1 ? n->inputs[1] : NULL;
    const ir_tensor *b = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (x->dtype != IR_F32 || !s || s->dtype != IR_F32 || (b && b->dtype != IR_F32))
        return npu_fail(err, NPU_EUSER, "LayerNormalization needs float X, Scale and B");
    int axis = ref_axis(ir_attr_int(n, "axis", -1), x->rank);
    if (axis < 0)
        return npu_fail(err, NPU_EUSER, "axis out of range for rank %d", x->rank);
    nk_layernorm_params p = {1, 1, ir_tensor_numel(s), b ? ir_tensor_numel(b) : 1, ir_attr_float(n, "epsilon", 1e-5f)};
    for (int d = 0; d < x->rank; d++)
        *(d < axis ? &p.outer : &p.len) *= x->dims[d];
    nk_status ks = nk_layernorm_f32(&p, in[0], in[1], b ? in[2] : NULL, out[0], n->n_outputs > 1 ? out[1] : NULL,
                                    n->n_outputs > 2 ? out[2] : NULL);
    return ks == NK_OK ? NPU_OK
                       : npu_fail(err, NPU_EUSER, "Scale and B must have the normalized shape's %lld elements (or 1)",
                                  (long long)p.len);
}

static npu_status run_qreduce_mean(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                                   npu_err *err)
{
    (void)scratch;
    nk_qpool_params p;
    npu_status st = ref_qreduce_mean_params(n, &p, err);
    nk_status ks = st == NPU_OK ? nk_qavgpool(&p, in[0], out[0]) : NK_OK;
    return st != NPU_OK ? st : ks == NK_OK ? NPU_OK : kfail(ks, err, "ReduceMean");
}

static npu_status run_qsoftmax(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                               npu_err *err)
{
    (void)scratch;
    nk_qsoftmax_params p;
    npu_status st = ref_qsoftmax_params(n, &p, err);
    nk_status ks = st == NPU_OK ? nk_qsoftmax(&p, in[1], in[0], out[0]) : NK_OK;
    return st != NPU_OK ? st : ks == NK_OK ? NPU_OK : kfail(ks, err, "npu.Softmax");
}

static npu_status run_qlayer_norm(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                                  npu_err *err)
{
    (void)scratch;
    nk_qlayernorm_params p;
    npu_status st = ref_qlayernorm_params(n, &p, err);
    nk_status ks = st == NPU_OK ? nk_qlayernorm(&p, in[1], in[0], out[0]) : NK_OK;
    return st != NPU_OK ? st : ks == NK_OK ? NPU_OK : kfail(ks, err, "npu.LayerNorm");
}

const ref_op_entry ref_ops_norm[] = {
    {IR_OP_GELU, run_gelu, NULL},
    {IR_OP_LAYER_NORM, run_layer_norm, NULL},
    {IR_OP_QSOFTMAX, run_qsoftmax, NULL},
    {IR_OP_QLAYER_NORM, run_qlayer_norm, NULL},
    {IR_OP_COUNT, NULL, NULL},
};

/* Integer forms of ops that also have a float one (looked up first for a quantized node). */
const ref_op_entry ref_ops_qnorm[] = {
    {IR_OP_REDUCE_MEAN, run_qreduce_mean, NULL},
    {IR_OP_COUNT, NULL, NULL},
};
