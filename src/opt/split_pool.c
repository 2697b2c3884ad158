/* split_pool: a GlobalAveragePool whose window the target's average pool
 * cannot take (edge-v1's divider stops at 4096 elements; EfficientNet-B0's
 * first squeeze-excite pools 112x112) becomes an AveragePool over kh x kw
 * blocks (stride the block, no padding) and the global pool of its output.
 * Every block has the same count, so the mean of the block means is the
 * mean: equal in real arithmetic. Quantized, the block means get an int8
 * scale of their own, calibrated like any tensor: one more rounding, for a
 * pool on the NPU instead of a float pass on the host (6.0M host cycles on
 * EfficientNet-B0, more than its NPU layers' 3.4M). Which windows the NPU
 * takes is the target's, so this is not in opt_run's target-independent
 * pipeline: the driver runs it before calibration with the tiler's test.
 * Not a pool that reads a DequantizeLinear: in a pre-quantized model the
 * pool between DQ and Q becomes the integer pool with the model's own
 * parameters (src/quantize/qdq_import.c), and the block means would be a
 * rounding the model does not have (the host runs it when the NPU cannot). */
#include "opt/opt_internal.h"

/* Block sides tried: a pool window field is far narrower (npu-v1: 256), and
 * the bound keeps a hostile H or W of billions from a long search. */
enum { MAX_BLOCK_SIDE = 4096 };

/* The largest block (kh x kw elements) whose pool and whose global pool after
 * it both pass ok; false when there is none. */
static bool choose_block(int64_t H, int64_t W, opt_pool_ok_fn ok, void *ud, int64_t *kh, int64_t *kw)
{
    int64_t best = 0;
    for (int64_t a = 1; a <= H && a <= MAX_BLOCK_SIDE; a++)
        for (int64_t b = 1; H % a == 0 && b <= W && b <= MAX_BLOCK_SIDE; b++) {
            if (W % b || a * b <= best || a * b == 1 || (a == H && b == W))
                continue;
            if (ok(ud, a, b, a, b) && ok(ud, H / a, W / b, 1, 1))
                best = a * b, *kh = a, *kw = b;
        }
    return best > 0;
}

static npu_status rewrite(ir_graph *g, ir_node *n, int64_t kh, int64_t kw, npu_err *err)
{
    ir_tensor *x = n->inputs[0];
    int64_t dims[4] = {x->dims[0], x->dims[1], x->dims[2] / kh, x->dims[3] / kw};
    int64_t k[2] = {kh, kw}, pads[4] = {0, 0, 0, 0};
    const char *name = npu_arena_printf(g->arena, "%s/blocks", n->name);
    ir_tensor *t = name ? ir_tensor_new(g, NULL, IR_F32, 4, dims) : NULL;
    ir_node *p = t ? ir_node_new(g, IR_OP_AVERAGE_POOL, name, 1, &x, 1, &t) : NULL;
    if (!p || !ir_set_ints(g, p, "kernel_shape", 2, k) || !ir_set_ints(g, p, "strides", 2, k) ||
        !ir_set_ints(g, p, "pads", 4, pads) || !opt_set_inputs(g, n, 1, &t))
        return npu_fail(err, NPU_EINTERNAL, "node '%s' (GlobalAveragePool): out of memory", n->name);
    return NPU_OK;
}

npu_status opt_split_pool(ir_graph *g, opt_pool_ok_fn ok, void *ud, bool *changed, npu_err *err)
{
    *changed = false;
    int n_nodes = g->n_nodes;
    for (int i = 0; i < n_nodes; i++) {
        ir_node *n = g->nodes[i];
        const ir_tensor *x = n->n_inputs == 1 ? n->inputs[0] : NULL;
        if (n->dead || n->op != IR_OP_GLOBAL_AVERAGE_POOL || !x || !x->shape_known || x->rank != 4 ||
            x->dtype != IR_F32 || ok(ud, x->dims[2], x->dims[3], 1, 1) ||
            (x->producer && x->producer->op == IR_OP_DEQUANTIZE_LINEAR))
            continue;
        int64_t kh = 0, kw = 0;
        if (!choose_block(x->dims[2], x->dims[3], ok, ud, &kh, &kw))
            continue; /* no split the NPU takes either: the host runs it */
        npu_status st = rewrite(g, n, kh, kw, err);
        if (st != NPU_OK)
            return st;
        *changed = true;
    }
    return *changed ? ir_graph_toposort(g, err) : NPU_OK;
}
