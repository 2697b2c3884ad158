/* Reference adapters, nn family: IR nodes to the float kernels of
 * kernels/nk_nn.h. Each op's node -> kernel-parameter reader lives in
 * src/numerics/nn.c; the scratch-size and run entries here share it, so both
 * always agree. ref.c prefixes messages with the node name and op type. */

#include "kernels/nk_nn.h"
#include "ref/ref_internal.h"

static npu_status kernel_status(nk_status st, npu_err *err)
{
    if (st == NK_OK)
        return NPU_OK;
    return npu_fail(err, NPU_EUSER, "%s", st == NK_EUNSUPPORTED ? "parameter combination not supported by the kernel"
                                                                 : "inconsistent shapes or parameters");
}

/* ---- Conv, ConvTranspose --------------------------------------------------------- */

static size_t conv_scratch(const ir_node *n)
{
    nk_conv_params p;
    npu_err e;
    return ref_conv_params(n, false, &p, &e) == NPU_OK ? nk_conv_fast_scratch_size(&p) : 0;
}

static npu_status conv_run(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    nk_conv_params p;
    npu_status st = ref_conv_params(n, false, &p, err);
    if (st)
        return st;
    return kernel_status(
        nk_conv_part_fast(&p, in[0], in[1], NULL, n->n_inputs > 2 ? in[2] : NULL, out[0], scratch, 0, 1), err);
}

static npu_status conv_part(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                            const void *pack, int part, int parts, npu_err *err)
{
    nk_conv_params p;
    npu_status st = ref_conv_params(n, false, &p, err);
    if (st)
        return st;
    return kernel_status(
        nk_conv_part_fast(&p, in[0], in[1], pack, n->n_inputs > 2 ? in[2] : NULL, out[0], scratch, part, parts),
        err);
}

/* Constant weights are packed once per context, not per inference. */
static size_t conv_pack_size(const ir_node *n)
{
    nk_conv_params p;
    npu_err e;
    if (n->n_inputs < 2 || !n->inputs[1] || !n->inputs[1]->data || ref_conv_params(n, false, &p, &e) != NPU_OK)
        return 0;
    return nk_conv_wpack_size(&p);
}

static void conv_pack(const ir_node *n, void *dst)
{
    nk_conv_params p;
    npu_err e;
    if (ref_conv_params(n, false, &p, &e) == NPU_OK)
        nk_conv_wpack(&p, n->inputs[1]->data, dst);
}

static int64_t conv_work(const ir_node *n)
{
    nk_conv_params p;
    npu_err e;
    if (ref_conv_params(n, false, &p, &e) != NPU_OK)
        return 0;
    return (int64_t)p.n * p.m * p.oh * p.ow * (p.c / p.group) * p.kh * p.kw;
}

static size_t conv_transpose_scratch(const ir_node *n)
{
    nk_conv_params p;
    npu_err e;
    return ref_conv_params(n, true, &p, &e) == NPU_OK ? nk_conv_transpose_scratch_size(&p) : 0;
}

static npu_status conv_transpose_run(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                                     npu_err *err)
{
    nk_conv_params p;
    npu_status st = ref_conv_params(n, true, &p, err);
    if (st)
        return st;
    return kernel_status(nk_conv_transpose(&p, in[0], in[1], n->n_inputs > 2 ? in[2] : NULL, out[0], scratch),
                         err);
}

/* ---- Gemm, MatMul ------------------------------------------------------------------ */

static size_t gemm_scratch(const ir_node *n)
{
    nk_gemm_params p;
    npu_err e;
    return ref_gemm_params(n, &p, &e) == NPU_OK ? nk_gemm_scratch_size(&p) : 0;
}

static npu_status gemm_run(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    nk_gemm_params p;
    npu_status st = ref_gemm_params(n, &p, err);
    if (st)
        return st;
    return kernel_status(nk_gemm(&p, in[0], in[1], n->n_inputs > 2 ? in[2] : NULL, out[0], scratch), err);
}

/* pack: NULL, or a constant B stored n x k (transB, as fully connected
 * layers come) transposed once to k x n, which the GEMM reads in place
 * instead of gathering it into panels on every call. The same products
 * summed in the same order: the same bits. */
static npu_status gemm_part(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                            const void *pack, int part, int parts, npu_err *err)
{
    nk_gemm_params p;
    npu_status st = ref_gemm_params(n, &p, err);
    if (st)
        return st;
    const void *b = in[1];
    if (pack) {
        p.trans_b = 0;
        b = pack;
    }
    return kernel_status(nk_gemm_part(&p, in[0], b, n->n_inputs > 2 ? in[2] : NULL, out[0], scratch, part, parts),
                         err);
}

static size_t gemm_pack_size(const ir_node *n)
{
    nk_gemm_params p;
    npu_err e;
    if (n->n_inputs < 2 || !n->inputs[1] || !n->inputs[1]->data || ref_gemm_params(n, &p, &e) != NPU_OK ||
        !p.trans_b)
        return 0;
    return (size_t)p.n * (size_t)p.k * sizeof(float);
}

static void gemm_pack(const ir_node *n, void *dst)
{
    nk_gemm_params p;
    npu_err e;
    if (ref_gemm_params(n, &p, &e) != NPU_OK)
        return;
    const float *b = n->inputs[1]->data;
    float *d = dst;
    for (int32_t j = 0; j < p.n; j++)
        for (int32_t q = 0; q < p.k; q++)
            d[(size_t)q * (size_t)p.n + (size_t)j] = b[(size_t)j * (size_t)p.k + (size_t)q];
}

static int64_t gemm_work(const ir_node *n)
{
    nk_gemm_params p;
    npu_err e;
    return ref_gemm_params(n, &p, &e) == NPU_OK ? (int64_t)p.m * p.n * p.k : 0;
}

static size_t matmul_scratch(const ir_node *n)
{
    nk_matmul_params p;
    npu_err e;
    return ref_matmul_params(n, &p, &e) == NPU_OK ? nk_matmul_scratch_size(&p) : 0;
}

static npu_status matmul_run(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    nk_matmul_params p;
    npu_status st = ref_matmul_params(n, &p, err);
    if (st || (st = kernel_status(nk_matmul(&p, in[0], in[1], out[0], scratch), err)))
        return st;
    /* the kernel has no activation parameter: apply a fused one here */
    ref_apply_act(n, out[0], ir_tensor_numel(n->outputs[0]));
    return NPU_OK;
}

/* ---- BatchNormalization -------------------------------------------------------------- */

static npu_status batchnorm_run(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                                npu_err *err)
{
    (void)scratch;
    nk_batchnorm_params p;
    npu_status st = ref_batchnorm_params(n, &p, err);
    return st ? st : kernel_status(nk_batchnorm(&p, in[0], in[1], in[2], in[3], in[4], out[0]), err);
}

/* ---- pools ------------------------------------------------------------------------------ */

static npu_status maxpool_run(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    (void)scratch;
    nk_pool_params p;
    npu_status st = ref_pool_params(n, &p, err);
    if (st)
        return st;
    const ir_tensor *idx = n->n_outputs > 1 ? n->outputs[1] : NULL;
    if (idx && (idx->dtype != IR_I64 || !ir_shape_equal(idx, n->outputs[0])))
        return npu_fail(err, NPU_EUSER, "output Indices must be int64 with the shape of Y");
    if (idx && p.storage_order && p.rank != 2)
        return npu_fail(err, NPU_EUSER, "storage_order=1 is supported for 2-D pools only");
    return kernel_status(nk_maxpool(&p, in[0], out[0], idx ? out[1] : NULL), err);
}

static npu_status avgpool_run(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    (void)scratch;
    nk_pool_params p;
    npu_status st = ref_pool_params(n, &p, err);
    if (st)
        return st;
    return kernel_status(nk_avgpool(&p, in[0], out[0]), err);
}

static npu_status gavgpool_run(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                               npu_err *err)
{
    (void)scratch;
    nk_global_pool_params p;
    npu_status st = ref_global_pool_params(n, &p, err);
    return st ? st : kernel_status(nk_global_avgpool(&p, in[0], out[0]), err);
}

static npu_status gmaxpool_run(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                               npu_err *err)
{
    (void)scratch;
    nk_global_pool_params p;
    npu_status st = ref_global_pool_params(n, &p, err);
    return st ? st : kernel_status(nk_global_maxpool(&p, in[0], out[0]), err);
}

/* ---- Resize, Upsample --------------------------------------------------------------------- */

static size_t resize_scratch(const ir_node *n)
{
    nk_resize_params p;
    npu_err e;
    return ref_resize_shape_params(n, &p, &e) == NPU_OK ? nk_resize_scratch_size(&p) : 0;
}

static npu_status resize_run(const ir_node *n, const void *const *in, void *const *out, void *scratch, npu_err *err)
{
    nk_resize_params p;
    npu_status st = ref_resize_params(n, in, &p, err);
    return st ? st : kernel_status(nk_resize(&p, in[0], out[0], scratch), err);
}

const ref_op_entry ref_ops_nn[] = {
    {IR_OP_CONV, conv_run, conv_scratch},
    {IR_OP_CONV_TRANSPOSE, conv_transpose_run, conv_transpose_scratch},
    {IR_OP_GEMM, gemm_run, gemm_scratch},
    {IR_OP_MATMUL, matmul_run, matmul_scratch},
    {IR_OP_BATCH_NORM, batchnorm_run, NULL},
    {IR_OP_MAX_POOL, maxpool_run, NULL},
    {IR_OP_AVERAGE_POOL, avgpool_run, NULL},
    {IR_OP_GLOBAL_AVERAGE_POOL, gavgpool_run, NULL},
    {IR_OP_GLOBAL_MAX_POOL, gmaxpool_run, NULL},
    {IR_OP_RESIZE, resize_run, resize_scratch},
    {IR_OP_UPSAMPLE, resize_run, resize_scratch},
    {IR_OP_COUNT, NULL, NULL},
};

const ref_split_entry ref_split_nn[] = {
    {conv_run, conv_part, conv_work, conv_pack_size, conv_pack},
    {gemm_run, gemm_part, gemm_work, gemm_pack_size, gemm_pack},
    {NULL, NULL, NULL, NULL, NULL},
};
