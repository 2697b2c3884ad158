/* The host cycle model: what the runtime's kernel for a node costs on the
 * host CPU, as instructions per call, per element and per MAC of the
 * kernel's class, times the target's CPI, converted to NPU cycles. The
 * coefficients are fitted to npusim's measured host cycles per host step
 * (bench/partition_calib.py; the fit and its error in docs/partition.md). */
#include "partition/partition.h"

/* Kernel classes of rt/npurt_ops*.c, by what their inner loop walks. */
typedef enum hk_class {
    HK_QUANTIZE,   /* f32 -> int8: per element */
    HK_DEQUANTIZE, /* int8/int32 -> f32 */
    HK_QCONV,      /* per MAC */
    HK_QDWCONV,    /* a depthwise conv: per MAC, shorter inner loops */
    HK_QFC,        /* per MAC */
    HK_QPOOL,      /* per window element read */
    HK_QGAP,       /* per input element */
    HK_QBINARY,    /* per output element */
    HK_QUNARY,     /* LUT and requantize: per element */
    HK_COPY,       /* concat, reshape copies, transpose: per byte */
    HK_F32_UNARY,  /* libm-like float functions: per element */
    HK_F32_BINARY,
    HK_F32_REDUCE, /* softmax and reductions: per input element */
    HK_COUNT
} hk_class;

/* Instructions: per call, per unit of work. Fitted on edge-v1 (rv32imafc,
 * CPI 1): docs/partition.md has the fit. */
static const struct {
    double call, per;
} hk_coef[HK_COUNT] = {
    [HK_QUANTIZE] = {400, 21.0},
    [HK_DEQUANTIZE] = {400, 9.0},
    [HK_QCONV] = {2000, 6.0},
    [HK_QDWCONV] = {2000, 8.0},
    [HK_QFC] = {1000, 4.0},
    [HK_QPOOL] = {1000, 5.0},
    [HK_QGAP] = {1000, 3.0},
    [HK_QBINARY] = {800, 20.0},
    [HK_QUNARY] = {500, 8.0},
    [HK_COPY] = {300, 0.6},
    [HK_F32_UNARY] = {500, 60.0},
    [HK_F32_BINARY] = {800, 25.0},
    [HK_F32_REDUCE] = {800, 30.0},
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

/* The class of n's kernel and its work in the class's unit. */
static hk_class classify(const ir_node *n, int64_t *work)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int64_t out = ir_tensor_numel(y);
    bool q = x && x->quant;
    *work = out;
    switch (n->op) {
    case IR_OP_QUANTIZE_LINEAR: return HK_QUANTIZE;
    case IR_OP_DEQUANTIZE_LINEAR: return HK_DEQUANTIZE;
    case IR_OP_CONV: {
        const ir_tensor *w = n->inputs[1];
        *work = out * (w && w->dims[0] ? ir_tensor_numel(w) / w->dims[0] : 1);
        return ir_attr_int(n, "group", 1) > 1 ? HK_QDWCONV : HK_QCONV;
    }
    case IR_OP_GEMM:
    case IR_OP_MATMUL: *work = out * (x && x->rank ? x->dims[x->rank - 1] : 1); return HK_QFC;
    case IR_OP_MAX_POOL:
    case IR_OP_AVERAGE_POOL: *work = out * window(n); return HK_QPOOL;
    case IR_OP_GLOBAL_AVERAGE_POOL:
    case IR_OP_GLOBAL_MAX_POOL: *work = in_elems(n); return HK_QGAP;
    case IR_OP_LUT:
    case IR_OP_REQUANTIZE: return HK_QUNARY;
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
    bool binary = n->n_inputs == 2 && n->inputs[1];
    if (q)
        return HK_QBINARY;
    return binary ? HK_F32_BINARY : HK_F32_UNARY;
}

int64_t part_host_cycles(const part_host_model *m, const ir_node *n)
{
    if (!m || n->n_inputs < 1 || !n->inputs[0] || n->n_outputs < 1 || !n->outputs[0])
        return 0;
    int64_t work;
    hk_class k = classify(n, &work);
    double insns = hk_coef[k].call + hk_coef[k].per * (double)work;
    return (int64_t)(insns * m->cpi * m->npu_per_host_cycle + 0.5);
}

/* Host instructions of one NPU step beside the NPU's own time: validating
 * the step, the doorbell writes, the completion poll and the return. */
enum { HK_JOB_INSNS = 700 };

int64_t part_switch_cycles(const part_host_model *m)
{
    return m ? (int64_t)(HK_JOB_INSNS * m->cpi * m->npu_per_host_cycle + 0.5) : 0;
}
