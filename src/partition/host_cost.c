/* The host cycle model: what the runtime's kernel for a node costs on the
 * host CPU, as instructions per call, per element and per MAC of the
 * kernel's class, times the target's CPI, converted to NPU cycles. The
 * coefficients are fitted to npusim's measured host cycles per host step
 * (bench/partition_calib.py; the fit and its error in docs/partition.md). */
#include "partition/partition.h"

/* Kernel classes of rt/npurt_ops*.c, by what their inner loops walk. */
typedef enum hk_class {
    HK_QUANTIZE,   /* f32 -> int8 */
    HK_DEQUANTIZE, /* int8/int32 -> f32 */
    HK_QCONV,      /* im2col and dot products: work: MACs, aux: im2col elements */
    HK_QDWCONV,    /* the direct path (one input channel per group): work: MACs */
    HK_QFC,        /* work: MACs */
    HK_QPOOL,      /* work: window elements read */
    HK_QGAP,       /* work: input elements */
    HK_QBINARY,
    HK_QREQUANT,
    HK_QLUT,
    HK_COPY,       /* concat, split, reshape copies, transpose: work: bytes */
    HK_F32_UNARY,  /* libm-like float functions */
    HK_F32_BINARY,
    HK_F32_REDUCE, /* softmax and reductions: work: input elements */
    HK_COUNT
} hk_class;

static const char *const hk_names[HK_COUNT] = {
    "quantize", "dequantize", "qconv", "qdirectconv", "qfc", "qpool", "qgap", "qbinary", "qrequant", "qlut", "copy",
    "f32_unary", "f32_binary", "f32_reduce",
};

/* Host instructions per call, per output element, per unit of work and of aux.
 * Fitted on edge-v1 (rv32imafc, CPI 1) by bench/partition_calib.py;
 * docs/partition.md has the fit and its error. */
static const struct {
    double call, per_out, per_work, per_aux;
} hk_coef[HK_COUNT] = {
    [HK_QUANTIZE] = {874, 11.0, 0, 0}, /* the unrolled loop of kernels/nk_quant.c */
    [HK_DEQUANTIZE] = {851, 11.0, 0, 0},
    [HK_QCONV] = {15897, 155.8, 5.53, 21.6},
    [HK_QDWCONV] = {27633, 3.26, 29.4, 0.53},
    [HK_QFC] = {1451, 194.4, 14.0, 0},
    [HK_QPOOL] = {1876, 44.5, 40.6, 0},
    [HK_QGAP] = {9, 0, 12.0, 0},
    [HK_QBINARY] = {3713, 165.5, 0, 0},
    [HK_QREQUANT] = {0, 108.8, 0, 0},
    [HK_QLUT] = {933, 9.0, 0, 0},
    [HK_COPY] = {478, 3.22, 3.22, 0},
    /* not measured yet (no test model runs them): guesses from the kernels' loops */
    [HK_F32_UNARY] = {800, 60.0, 0, 0},
    [HK_F32_BINARY] = {800, 30.0, 0, 0},
    [HK_F32_REDUCE] = {0, 0, 5894, 0}, /* one softmax measured */
};

static int64_t in_elems(const ir_node *n)
{
    int64_t e = 0;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && !n->inputs[i]->data)
            e += ir_tensor_numel(n->inputs[i]);
    return e;
}

static int64_t window(const ir_node *n)
{
    int64_t k[2] = {1, 1};
    if (ir_attr_ints(n, "kernel_shape", k, 2) == 1)
        k[1] = 1;
    return k[0] * k[1];
}

/* The class of n's kernel and its work in the class's units (0: none beside the outputs). */
static hk_class classify(const ir_node *n, int64_t *work, int64_t *aux)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int64_t out = ir_tensor_numel(y);
    *work = *aux = 0;
    switch (n->op) {
    case IR_OP_QUANTIZE_LINEAR: return HK_QUANTIZE;
    case IR_OP_DEQUANTIZE_LINEAR: return HK_DEQUANTIZE;
    case IR_OP_CONV: {
        const ir_tensor *w = n->inputs[1];
        int64_t k = w && w->dims[0] ? ir_tensor_numel(w) / w->dims[0] : 1, groups = ir_attr_int(n, "group", 1);
        *work = out * k;
        /* nk_qconv2d: direct when each group has one input channel, else im2col once per group and pixel */
        *aux = y->rank == 4 && y->dims[1] ? out / y->dims[1] * k * groups : 0;
        return x && x->rank == 4 && x->dims[1] == groups ? HK_QDWCONV : HK_QCONV;
    }
    case IR_OP_GEMM:
    case IR_OP_MATMUL: *work = out * (x && x->rank ? x->dims[x->rank - 1] : 1); return HK_QFC;
    case IR_OP_MAX_POOL:
    case IR_OP_AVERAGE_POOL: *work = out * window(n); return HK_QPOOL;
    case IR_OP_GLOBAL_AVERAGE_POOL:
    case IR_OP_GLOBAL_MAX_POOL: *work = in_elems(n); return HK_QGAP;
    case IR_OP_LUT: return HK_QLUT;
    case IR_OP_REQUANTIZE: return HK_QREQUANT;
    case IR_OP_CONCAT:
    case IR_OP_SPLIT:
    case IR_OP_SLICE:
    case IR_OP_TRANSPOSE: *work = (int64_t)ir_tensor_bytes(y) * (n->op == IR_OP_TRANSPOSE ? 4 : 1); return HK_COPY;
    case IR_OP_SOFTMAX:
    case IR_OP_LOG_SOFTMAX:
    case IR_OP_REDUCE_MEAN:
    case IR_OP_REDUCE_SUM:
    case IR_OP_REDUCE_MAX:
    case IR_OP_REDUCE_MIN: *work = in_elems(n); return HK_F32_REDUCE;
    default: break;
    }
    if (ir_op_is_view(n->op)) {
        *work = (int64_t)ir_tensor_bytes(y);
        return HK_COPY;
    }
    if (x && x->quant)
        return HK_QBINARY;
    return n->n_inputs == 2 && n->inputs[1] ? HK_F32_BINARY : HK_F32_UNARY;
}

const char *part_host_kernel(const ir_node *n, int64_t *work, int64_t *aux)
{
    *work = *aux = 0;
    if (n->n_inputs < 1 || !n->inputs[0] || n->n_outputs < 1 || !n->outputs[0])
        return "none";
    return hk_names[classify(n, work, aux)];
}

int64_t part_host_cycles(const part_host_model *m, const ir_node *n)
{
    if (!m || n->n_inputs < 1 || !n->inputs[0] || n->n_outputs < 1 || !n->outputs[0])
        return 0;
    int64_t work, aux;
    hk_class k = classify(n, &work, &aux);
    double out = (double)ir_tensor_numel(n->outputs[0]);
    double insns = hk_coef[k].call + hk_coef[k].per_out * out + hk_coef[k].per_work * (double)work +
                   hk_coef[k].per_aux * (double)aux;
    return (int64_t)(insns * m->cpi * m->npu_per_host_cycle + 0.5);
}

/* Host instructions of one NPU step beside the NPU's own time: validating
 * the step, the doorbell writes, the completion poll and the return
 * (bench/partition_calib.py measures it). */
enum { HK_JOB_INSNS = 186 }; /* measured: 185-186 on every one-segment e2e model */

int64_t part_switch_cycles(const part_host_model *m)
{
    return m ? (int64_t)(HK_JOB_INSNS * m->cpi * m->npu_per_host_cycle + 0.5) : 0;
}
