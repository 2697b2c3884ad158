/* tile_supports: can the NPU of this target run the node (as it will be
 * after quantization)? Limits come from the ISA's field widths and the
 * target's constraints; the reason names the limit that fails. */
#include <string.h>

#include "numerics/numerics.h"
#include "quantize/quantize.h"
#include "tiler/tile_internal.h"

bool tile_w4_ok(const tgt_target *t, int64_t elems_per_filter)
{
    return (t->weight_dtypes & TGT_DT_INT4) && elems_per_filter % 2 == 0;
}

static bool no(const ir_graph *g, const char **reason, const char *text)
{
    if (reason)
        *reason = text;
    (void)g;
    return false;
}

/* A reason with numbers, in the graph's arena (static text when that fails). */
#define NO(...)                                                                                                       \
    do {                                                                                                              \
        const char *r_ = npu_arena_printf(g->arena, __VA_ARGS__);                                                    \
        return no(g, reason, r_ ? r_ : "exceeds an NPU field limit");                                                \
    } while (0)

static int64_t fmax_of(const tgt_target *t, tgt_sem s, tgt_fid f)
{
    int i = tgt_insn_for_sem(t->isa, s);
    return i < 0 ? 0 : tgt_field_max(t->isa, i, f);
}

static int ints2(const ir_node *n, const char *name, int64_t *v, int64_t def)
{
    v[0] = v[1] = def;
    int k = ir_attr_ints(n, name, v, 2);
    if (k == 1)
        v[1] = v[0];
    return k;
}

/* Kernel, stride, dilation and pads of a window op against instruction s. */
static bool window_ok(const tgt_target *t, const ir_graph *g, const ir_node *n, tgt_sem s, const int64_t *k,
                      const char **reason)
{
    int64_t st[2], dl[2], pads[4] = {0, 0, 0, 0};
    ints2(n, "strides", st, 1);
    ints2(n, "dilations", dl, 1);
    int np = ir_attr_ints(n, "pads", pads, 4);
    if (np == 2)
        pads[2] = pads[1], pads[1] = 0, pads[3] = 0; /* 1-D: begin, end */
    const char *isa = t->isa->name, *what = tgt_sem_name(s);
    if (k[0] > fmax_of(t, s, TGT_F_KH) || k[1] > fmax_of(t, s, TGT_F_KW))
        NO("kernel %lldx%lld exceeds the %s kh/kw field (max %lld) of %s", (long long)k[0], (long long)k[1], what,
           (long long)fmax_of(t, s, TGT_F_KH), isa);
    if (st[0] > fmax_of(t, s, TGT_F_SH) || st[1] > fmax_of(t, s, TGT_F_SW))
        NO("stride %lld exceeds the %s sh field (max %lld) of %s", (long long)(st[0] > st[1] ? st[0] : st[1]), what,
           (long long)fmax_of(t, s, TGT_F_SH), isa);
    if (s == TGT_SEM_POOL && (dl[0] != 1 || dl[1] != 1))
        return no(g, reason, n->op == IR_OP_MAX_POOL ? "dilated max pool" : "dilated pool");
    if (s != TGT_SEM_POOL && (dl[0] > fmax_of(t, s, TGT_F_DH) || dl[1] > fmax_of(t, s, TGT_F_DW)))
        NO("dilation %lld exceeds the %s dh field (max %lld) of %s", (long long)(dl[0] > dl[1] ? dl[0] : dl[1]),
           what, (long long)fmax_of(t, s, TGT_F_DH), isa);
    for (int i = 0; i < 4; i++) {
        int64_t ext = k[i % 2] * (s == TGT_SEM_POOL ? 1 : dl[i % 2]);
        if (pads[i] > fmax_of(t, s, TGT_F_PT))
            NO("padding %lld exceeds the %s pt field (max %lld) of %s", (long long)pads[i], what,
               (long long)fmax_of(t, s, TGT_F_PT), isa);
        if (pads[i] >= ext)
            NO("padding %lld is not smaller than the kernel's extent %lld", (long long)pads[i], (long long)ext);
    }
    return true;
}

static bool conv_ok(const tgt_target *t, const ir_graph *g, const ir_node *n, const char **reason)
{
    const ir_tensor *x = n->inputs[0], *w = n->n_inputs > 1 ? n->inputs[1] : NULL;
    if (!w || !w->data || (n->n_inputs > 2 && n->inputs[2] && !n->inputs[2]->data))
        return no(g, reason, "convolution with non-constant weights or bias");
    if (x->rank != 4 && x->rank != 3)
        return no(g, reason, "only 1-D and 2-D convolutions run on the NPU");
    int64_t k[2] = {x->rank == 4 ? w->dims[2] : 1, w->dims[x->rank - 1]};
    int64_t G = ir_attr_int(n, "group", 1), C = x->dims[1], OC = w->dims[0];
    bool dw = G > 1 && G == C && OC == C;
    if (dw && tgt_insn_for_sem(t->isa, TGT_SEM_DWCONV) >= 0) {
        /* the depthwise unit when its datapath takes the window, else one conv per group */
        int i = tgt_insn_for_sem(t->isa, TGT_SEM_DWCONV);
        int64_t v[TGT_F_COUNT];
        tgt_defaults(t->isa, i, v);
        int64_t st[2], dl[2];
        ints2(n, "strides", st, 1);
        ints2(n, "dilations", dl, 1);
        v[TGT_F_C] = 1, v[TGT_F_KH] = k[0], v[TGT_F_KW] = k[1], v[TGT_F_SH] = st[0], v[TGT_F_SW] = st[1];
        v[TGT_F_DH] = dl[0], v[TGT_F_DW] = dl[1];
        v[TGT_F_IH] = (k[0] - 1) * dl[0] + 1, v[TGT_F_IW] = (k[1] - 1) * dl[1] + 1, v[TGT_F_OH] = v[TGT_F_OW] = 1;
        npu_err e;
        if (tgt_check(t, i, v, &e) == NPU_OK)
            return window_ok(t, g, n, TGT_SEM_DWCONV, k, reason);
    }
    if (tgt_insn_for_sem(t->isa, TGT_SEM_CONV) < 0)
        return no(g, reason, "the ISA has no conv instruction");
    if (G > 1 && (C / G) * k[0] * k[1] > 65536)
        return no(g, reason, "grouped convolution whose reduction exceeds the int32 accumulator limits");
    return window_ok(t, g, n, TGT_SEM_CONV, k, reason);
}

/* A float model input quantized on the vector unit: per tensor to int8. */
static bool quantize_ok(const tgt_target *t, const ir_graph *g, const ir_node *n, const char **reason)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    if (tgt_insn_for_sem(t->isa, TGT_SEM_QUANTIZE) < 0)
        return no(g, reason, "the ISA has no quantize instruction");
    bool a16 = y->dtype == IR_I16 && tgt_insn_field(t->isa, tgt_insn_for_sem(t->isa, TGT_SEM_QUANTIZE), TGT_F_A16);
    if (x->dtype != IR_F32 || x->data || (y->dtype != IR_I8 && !a16) || !y->quant || y->quant->count != 1 ||
        y->quant->axis >= 0 || (y->flags & IR_TENSOR_INT4_CODES))
        return no(g, reason, "quantize on the NPU: float32 to int8 (or, with a16, int16) per tensor only");
    const ir_tensor *s = n->n_inputs > 1 ? n->inputs[1] : NULL, *z = n->n_inputs > 2 ? n->inputs[2] : NULL;
    bool s_ok = s && s->data && s->dtype == IR_F32 && ir_tensor_numel(s) == 1 &&
                *(const float *)s->data == y->quant->scale[0];
    bool z_ok = !z || (z->data && z->dtype == IR_I8 && ir_tensor_numel(z) == 1 &&
                       *(const int8_t *)z->data == y->quant->zero_point[0]) ||
                (z->data && z->dtype == IR_I16 && ir_tensor_numel(z) == 1 && *(const int16_t *)z->data == 0);
    if (!s_ok || !z_ok)
        return no(g, reason, "quantize on the NPU: scale and zero point must be the output's, as constants");
    return true;
}

/* An average pool sums its window in int32 before the one rounding: 2^15
 * elements keep that exact for int16 inputs too (2^15 * 65535 < 2^31), and
 * cover a global pool over 112x112 (EfficientNet's first squeeze-excite). */
enum { POOL_MAX_COUNT = 32768 };

bool tile_avgpool_ok(void *target, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w)
{
    const tgt_target *t = target;
    int i = tgt_insn_for_sem(t->isa, TGT_SEM_POOL);
    if (i < 0 || kh * kw > POOL_MAX_COUNT || kh > fmax_of(t, TGT_SEM_POOL, TGT_F_KH) ||
        kw > fmax_of(t, TGT_SEM_POOL, TGT_F_KW) || stride_h > fmax_of(t, TGT_SEM_POOL, TGT_F_SH) ||
        stride_w > fmax_of(t, TGT_SEM_POOL, TGT_F_SW))
        return false;
    int64_t v[TGT_F_COUNT];
    tgt_defaults(t->isa, i, v);
    v[TGT_F_MODE] = TGT_POOL_AVG, v[TGT_F_KH] = kh, v[TGT_F_KW] = kw, v[TGT_F_SH] = stride_h, v[TGT_F_SW] = stride_w;
    v[TGT_F_C] = 1, v[TGT_F_IH] = kh, v[TGT_F_IW] = kw, v[TGT_F_OH] = v[TGT_F_OW] = 1;
    npu_err e;
    return tgt_check(t, i, v, &e) == NPU_OK;
}

bool tile_pool_acc_ok(const tgt_target *t, int64_t divisor)
{
    int i = tgt_insn_for_sem(t->isa, TGT_SEM_POOL);
    if (i < 0 || divisor > POOL_MAX_COUNT || !tgt_insn_field(t->isa, i, TGT_F_PSUM) ||
        !tgt_insn_field(t->isa, i, TGT_F_ACC_IN) || !tgt_insn_field(t->isa, i, TGT_F_ACC_OUT) ||
        !tgt_insn_field(t->isa, i, TGT_F_DIVISOR))
        return false;
    int64_t v[TGT_F_COUNT];
    tgt_defaults(t->isa, i, v);
    v[TGT_F_MODE] = TGT_POOL_AVG, v[TGT_F_ACC_IN] = 1, v[TGT_F_DIVISOR] = divisor;
    v[TGT_F_C] = v[TGT_F_IH] = v[TGT_F_IW] = v[TGT_F_KH] = v[TGT_F_KW] = v[TGT_F_OH] = v[TGT_F_OW] = 1;
    npu_err e;
    return tgt_check(t, i, v, &e) == NPU_OK;
}

static bool pool_ok(const tgt_target *t, const ir_graph *g, const ir_node *n, const char **reason)
{
    const ir_tensor *x = n->inputs[0];
    if (x->rank != 4 && x->rank != 3)
        return no(g, reason, "only 1-D and 2-D pools run on the NPU");
    if (tgt_insn_for_sem(t->isa, TGT_SEM_POOL) < 0)
        return no(g, reason, "the ISA has no pool instruction");
    bool global = n->op == IR_OP_GLOBAL_AVERAGE_POOL || n->op == IR_OP_GLOBAL_MAX_POOL;
    bool avg = n->op == IR_OP_AVERAGE_POOL || n->op == IR_OP_GLOBAL_AVERAGE_POOL;
    int64_t k[2];
    if (global) {
        k[0] = x->rank == 4 ? x->dims[2] : 1, k[1] = x->dims[x->rank - 1];
        if (k[0] > fmax_of(t, TGT_SEM_POOL, TGT_F_IH) || k[1] > fmax_of(t, TGT_SEM_POOL, TGT_F_IW))
            NO("global pool over %lldx%lld exceeds the pool ih/iw field (max %lld) of %s", (long long)k[0],
               (long long)k[1], (long long)fmax_of(t, TGT_SEM_POOL, TGT_F_IH), t->isa->name);
    } else {
        int nk = ir_attr_ints(n, "kernel_shape", k, 2);
        if (nk != x->rank - 2)
            return no(g, reason, "pool without a kernel_shape of the input's rank");
        if (nk == 1)
            k[1] = k[0], k[0] = 1;
        if (ir_attr_int(n, "storage_order", 0) != 0)
            return no(g, reason, "MaxPool storage_order 1");
        if (ir_attr_int(n, "ceil_mode", 0) && ir_attr_int(n, "count_include_pad", 0))
            return no(g, reason, "ceil_mode average pool counting padding");
    }
    if (n->n_outputs > 1 && n->outputs[1])
        return no(g, reason, "MaxPool with an Indices output");
    if (avg && k[0] * k[1] > POOL_MAX_COUNT)
        NO("average window %lldx%lld exceeds %d elements (the int32 sum)", (long long)k[0], (long long)k[1],
           POOL_MAX_COUNT);
    if (global) {
        if (k[0] > fmax_of(t, TGT_SEM_POOL, TGT_F_KH) || k[1] > fmax_of(t, TGT_SEM_POOL, TGT_F_KW))
            NO("global pool window %lldx%lld exceeds the pool kh field (max %lld) of %s", (long long)k[0],
               (long long)k[1], (long long)fmax_of(t, TGT_SEM_POOL, TGT_F_KH), t->isa->name);
        return true;
    }
    return window_ok(t, g, n, TGT_SEM_POOL, k, reason);
}

static bool matmul_ok(const tgt_target *t, const ir_graph *g, const ir_node *n, const char **reason)
{
    const ir_tensor *x = n->inputs[0], *w = n->n_inputs > 1 ? n->inputs[1] : NULL;
    if (tgt_insn_for_sem(t->isa, TGT_SEM_MATMUL) < 0)
        return no(g, reason, "the ISA has no matmul instruction");
    if (w && !w->data && n->op == IR_OP_MATMUL) { /* tile_bmm */
        if (!q_bmm_shapes(n))
            return no(g, reason, "MatMul of two activations whose shapes the batched kernel does not take (a partly broadcast batch)");
        return true;
    }
    if (!w || !w->data)
        return no(g, reason, "Gemm of two activations (the NPU multiplies by constant weights)");
    /* a MatMul's [..., K] input runs as its rows [M, K] (dense in DRAM) */
    if (w->rank != 2 || x->rank < 2 || (x->rank != 2 && n->op != IR_OP_MATMUL && !n->outputs[0]->quant))
        return no(g, reason, "matrix multiply of other than 2-D operands");
    if (n->op == IR_OP_GEMM && ir_attr_int(n, "transA", 0))
        return no(g, reason, "Gemm with transA");
    const ir_tensor *b = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (b && !b->data)
        return no(g, reason, "Gemm with a non-constant bias");
    /* as q_classify: only one C value per output column folds into the int32 bias (opt's gemm_bias
     * rewrites the others; one left is float) */
    int64_t cols = n->op == IR_OP_GEMM && ir_attr_int(n, "transB", 0) ? w->dims[0] : w->dims[1];
    if (b && ir_tensor_numel(b) != cols)
        return no(g, reason, "Gemm whose C is not one value per output column");
    return true;
}

/* npu.Softmax / npu.LayerNorm, or the float op that becomes one: the
 * instruction and a row within its w field. */
static bool rownorm_ok(const tgt_target *t, const ir_graph *g, const ir_node *n, const char **reason)
{
    tgt_sem s = n->op == IR_OP_QSOFTMAX || n->op == IR_OP_SOFTMAX ? TGT_SEM_SOFTMAX : TGT_SEM_LAYERNORM;
    const ir_tensor *x = n->inputs[0];
    int64_t w = x->rank ? x->dims[x->rank - 1] : 1;
    if (tgt_insn_for_sem(t->isa, s) < 0)
        NO("the ISA has no %s instruction", tgt_sem_name(s));
    if (w > fmax_of(t, s, TGT_F_W))
        NO("rows of %lld exceed the %s w field (max %lld) of %s", (long long)w, tgt_sem_name(s),
           (long long)fmax_of(t, s, TGT_F_W), t->isa->name);
    return true;
}

/* ReduceMean as an average pool of a view (ref_reduce_mean_window): the pool
 * instruction's window and tile fields, the target's checks on an average. */
static bool reduce_ok(const tgt_target *t, const ir_graph *g, const ir_node *n, const char **reason)
{
    int64_t w[5];
    if (!ref_reduce_mean_window(n, w))
        return no(g, reason, "ReduceMean over other than one run of consecutive axes");
    if (tgt_insn_for_sem(t->isa, TGT_SEM_POOL) < 0)
        return no(g, reason, "the ISA has no pool instruction");
    if (w[3] > fmax_of(t, TGT_SEM_POOL, TGT_F_KH) || w[4] > fmax_of(t, TGT_SEM_POOL, TGT_F_KW) ||
        w[1] > fmax_of(t, TGT_SEM_POOL, TGT_F_IH) || w[2] > fmax_of(t, TGT_SEM_POOL, TGT_F_IW))
        NO("ReduceMean as a %lldx%lld pool over %lldx%lld exceeds the pool fields of %s", (long long)w[3],
           (long long)w[4], (long long)w[1], (long long)w[2], t->isa->name);
    if (!tile_avgpool_ok((void *)t, w[3], w[4], 1, 1)) /* the target's divider, its checks: it stays float */
        NO("ReduceMean over %lld elements: %s's average pool does not take a %lldx%lld window",
           (long long)(w[3] * w[4]), t->name, (long long)w[3], (long long)w[4]);
    return true;
}

bool tile_int_supported(void *target, const ir_graph *g, const ir_node *n)
{
    if (n->n_inputs < 1 || !n->inputs[0])
        return true;
    if (n->op == IR_OP_REDUCE_MEAN)
        return reduce_ok(target, g, n, NULL);
    return (n->op != IR_OP_SOFTMAX && n->op != IR_OP_LAYER_NORM) || rownorm_ok(target, g, n, NULL);
}

static bool eltwise_ok(const tgt_target *t, const ir_graph *g, const ir_node *n, const char **reason)
{
    if (n->n_inputs != 2 || !n->inputs[0] || !n->inputs[1])
        return no(g, reason, "elementwise op without two inputs");
    if (tgt_insn_for_sem(t->isa, TGT_SEM_ELTWISE) < 0)
        return no(g, reason, "the ISA has no eltwise instruction");
    const ir_tensor *a = n->inputs[0], *b = n->inputs[1], *y = n->outputs[0];
    if (ir_shape_equal(a, b) && ir_shape_equal(a, y))
        return true;
    if (y->rank > 4 || y->rank < 1)
        return no(g, reason, "broadcast over more than 4 dimensions");
    int64_t W = y->dims[y->rank - 1];
    if (W > fmax_of(t, TGT_SEM_ELTWISE, TGT_F_W))
        NO("broadcast eltwise rows of %lld exceed the w field (max %lld) of %s", (long long)W,
           (long long)fmax_of(t, TGT_SEM_ELTWISE, TGT_F_W), t->isa->name);
    for (int k = 0; k < 2; k++) {
        const ir_tensor *x = n->inputs[k];
        for (int i = 0; i < x->rank; i++) {
            int64_t o = y->dims[y->rank - x->rank + i];
            /* the leading dim of a 4-D output is looped over, the rest broadcast in hardware */
            if (x->dims[i] != o && x->dims[i] != 1)
                return no(g, reason, "shapes that do not broadcast");
        }
    }
    return true;
}

static bool supports_shape(const tgt_target *t, const ir_graph *g, const ir_node *n, const char **reason);

/* Quantized nodes are also lowered once for real, which finds every field,
 * SRAM or constraint limit a tile would hit (a pool's rescale shift, ...). */
/* The node computes on codes the NPU takes: int8 (uint8 only through the
 * byte-flipping npu.Lut of a uint8 model input or output), or it is a float
 * input's QuantizeLinear. */
static bool tile_quantized_input(const ir_node *n, const ir_tensor *x)
{
    return x && ((x->quant && (x->dtype == IR_I8 || x->dtype == IR_I16 || (x->dtype == IR_U8 && n->op == IR_OP_LUT))) ||
                 n->op == IR_OP_QUANTIZE_LINEAR);
}

/* int16 activations (A16W8) anywhere in the node. */
bool tile_node_a16(const ir_node *n)
{
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && !n->inputs[i]->data && n->inputs[i]->dtype == IR_I16)
            return true;
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] && n->outputs[i]->dtype == IR_I16)
            return true;
    return false;
}

/* The ops with an a16 lowering, on an ISA whose instruction has the a16 field. */
static bool a16_ok(const tgt_target *t, const ir_graph *g, const ir_node *n, const char **reason)
{
    if (!tile_node_a16(n))
        return true;
    tgt_sem s;
    switch (n->op) {
    case IR_OP_CONV: s = TGT_SEM_CONV; break;
    case IR_OP_GEMM:
    case IR_OP_MATMUL:
        if (ref_q_is_bmm(n))
            return no(g, reason, "int16 activations (A16W8): no NPU lowering of a MatMul of two activations");
        s = TGT_SEM_MATMUL;
        break;
    case IR_OP_MAX_POOL:
    case IR_OP_AVERAGE_POOL:
    case IR_OP_GLOBAL_AVERAGE_POOL:
    case IR_OP_GLOBAL_MAX_POOL: s = TGT_SEM_POOL; break;
    case IR_OP_ADD:
    case IR_OP_SUB:
    case IR_OP_MUL:
    case IR_OP_MIN:
    case IR_OP_MAX: s = TGT_SEM_ELTWISE; break;
    case IR_OP_LUT: s = TGT_SEM_LUT; break;
    case IR_OP_QUANTIZE_LINEAR: s = TGT_SEM_QUANTIZE; break;
    case IR_OP_REQUANTIZE: s = TGT_SEM_REQUANT; break;
    case IR_OP_RESHAPE:
    case IR_OP_FLATTEN:
    case IR_OP_SQUEEZE:
    case IR_OP_UNSQUEEZE:
    case IR_OP_IDENTITY: return true; /* views: the same bytes */
    default: return no(g, reason, "int16 activations (A16W8): no NPU lowering of this op");
    }
    int i = tgt_insn_for_sem(t->isa, s);
    if (i < 0 || !tgt_insn_field(t->isa, i, TGT_F_A16) ||
        (n->op == IR_OP_CONV && !tgt_insn_field(t->isa, i, TGT_F_CLAMP16_LO)))
        NO("int16 activations (A16W8): %s's %s has no a16 field", t->isa->name, tgt_sem_name(s));
    return true;
}

bool tile_supports(void *target, const ir_graph *g, const ir_node *n, const char **reason)
{
    const tgt_target *t = target;
    if (!a16_ok(t, g, n, reason) || !supports_shape(t, g, n, reason))
        return false;
    const ir_tensor *x = n->n_inputs ? n->inputs[0] : NULL;
    bool quantized = tile_quantized_input(n, x);
    if (!quantized && x && !x->data && x->dtype != IR_F32)
        return no(g, reason, "integer or bool data without quantization (the NPU computes on int8 codes)");
    if (!quantized)
        return true;
    npu_err err;
    npu_status st = tile_try_node(t, g, n, NULL, reason, &err);
    if (st != NPU_OK && st != NPU_EUSER && reason) { /* a fault: still a reason, for callers without a status */
        const char *m = npu_arena_strdup(g->arena, err.msg);
        *reason = m ? m : "out of memory";
    }
    return st == NPU_OK;
}

npu_status tile_estimate(void *target, const ir_graph *g, const ir_node *n, int64_t *cycles, const char **reason,
                         npu_err *err)
{
    const tgt_target *t = target;
    *cycles = 0;
    if (!a16_ok(t, g, n, reason) || !supports_shape(t, g, n, reason))
        return NPU_EUSER;
    const ir_tensor *x = n->n_inputs ? n->inputs[0] : NULL;
    if (tile_quantized_input(n, x))
        return tile_try_node(t, g, n, cycles, reason, err);
    if (x && !x->data && x->dtype != IR_F32) {
        no(g, reason, "integer or bool data without quantization (the NPU computes on int8 codes)");
        return NPU_EUSER;
    }
    /* not yet quantized: no instructions to time, the peak-throughput bound of its bytes instead */
    int64_t bytes = 0;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && !n->inputs[i]->data)
            bytes += ir_tensor_numel(n->inputs[i]);
    bytes += ir_tensor_numel(n->outputs[0]);
    *cycles = tile_cdiv(bytes, t->p[TGT_P_DRAM_BYTES_PER_CYCLE]);
    return NPU_OK;
}

static bool supports_shape(const tgt_target *t, const ir_graph *g, const ir_node *n, const char **reason)
{
    if (reason)
        *reason = NULL;
    if (!t || !n || n->n_outputs < 1 || !n->outputs[0])
        return no(g, reason, "no target");
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && n->inputs[i]->quant == NULL && n->inputs[i]->dtype == IR_I8 && !n->inputs[i]->data)
            return no(g, reason, "int8 tensor without quantization parameters");
    if (n->act.kind == IR_ACT_LEAKY_RELU && n->op != IR_OP_LEAKY_RELU)
        return no(g, reason, "fused LeakyRelu (not a clamp)");
    switch (n->op) {
    case IR_OP_CONV: return conv_ok(t, g, n, reason);
    case IR_OP_GEMM:
    case IR_OP_MATMUL: return matmul_ok(t, g, n, reason);
    case IR_OP_MAX_POOL:
    case IR_OP_AVERAGE_POOL:
    case IR_OP_GLOBAL_AVERAGE_POOL:
    case IR_OP_GLOBAL_MAX_POOL: return pool_ok(t, g, n, reason);
    case IR_OP_ADD:
    case IR_OP_SUB:
    case IR_OP_MUL:
    case IR_OP_MIN:
    case IR_OP_MAX: return eltwise_ok(t, g, n, reason);
    case IR_OP_LUT:
        return tgt_insn_for_sem(t->isa, TGT_SEM_LUT) >= 0 ? true : no(g, reason, "the ISA has no lut instruction");
    case IR_OP_REQUANTIZE:
        return tgt_insn_for_sem(t->isa, TGT_SEM_REQUANT) >= 0 ? true
                                                              : no(g, reason, "the ISA has no requant instruction");
    case IR_OP_TRANSPOSE: /* tile_transpose.c: DMA only, on bytes (int8 once quantized) */
    case IR_OP_SLICE: {
        const ir_tensor *x = n->inputs[0];
        if (!x || (x->dtype != IR_F32 && x->dtype != IR_I8) ||
            !(n->op == IR_OP_TRANSPOSE ? tile_transpose_ok(n) : tile_move_shape(n) || tile_slice_ok(n)))
            NO("%s of other than int8 activations, or %s", ir_op_name(n->op),
               n->op == IR_OP_SLICE ? "with backward steps" : "perm not a permutation");
        return true;
    }
    case IR_OP_GATHER: { /* tile_gather: strided copies */
        int64_t idx[TILE_GATHER_MAX], count;
        const ir_tensor *x = n->inputs[0];
        if (!x || (x->dtype != IR_F32 && x->dtype != IR_I8) || !tile_gather_indices(n, idx, &count))
            return no(g, reason, "Gather of other than int8 data by at most 64 constant indices");
        return true;
    }
    case IR_OP_QSOFTMAX:
    case IR_OP_QLAYER_NORM: return rownorm_ok(t, g, n, reason);
    case IR_OP_REDUCE_MEAN:
        /* kept float by tile_int_supported: the reason is the pool's limit */
        if (!n->inputs[0]->quant)
            return !reduce_ok(t, g, n, reason) ? false : no(g, reason, "float op: no integer form (ReduceMean)");
        return reduce_ok(t, g, n, reason);
    case IR_OP_SOFTMAX:
    case IR_OP_LAYER_NORM: /* float: say so, or why the NPU's row instruction cannot take it */
        if (!rownorm_ok(t, g, n, reason))
            return false;
        NO("float op: no integer form (%s)", ir_op_name(n->op));
    case IR_OP_QUANTIZE_LINEAR: return quantize_ok(t, g, n, reason);
    case IR_OP_SPLIT: /* tile_move: DMA box copies (Slice: tile_transpose.c's strided view) */
        return tile_move_shape(n) ? true : no(g, reason, "Split of other than int8 or float32 data in boxes of step 1");
    case IR_OP_CONCAT:
    case IR_OP_RESHAPE:
    case IR_OP_FLATTEN:
    case IR_OP_SQUEEZE:
    case IR_OP_UNSQUEEZE:
    case IR_OP_IDENTITY: return true;
    case IR_OP_PAD:
    case IR_OP_EXPAND:
    case IR_OP_TILE:
        if (n->inputs[0] && n->inputs[0]->dtype == IR_I8)
            NO("%s of int8 codes: no NPU lowering (the host moves the codes)", ir_op_name(n->op));
        NO("float op: no integer form (%s)", ir_op_name(n->op));
    default:
        if (q_becomes_lut(n))
            return tgt_insn_for_sem(t->isa, TGT_SEM_LUT) >= 0 ? true
                                                               : no(g, reason, "the ISA has no lut instruction");
        NO("float op: no integer form (%s)", ir_op_name(n->op));
    }
}
