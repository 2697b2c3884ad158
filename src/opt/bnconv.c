/* bnconv: a BatchNormalization that bnfold could not fold (after a Concat,
 * a pool, on a graph input, ...) becomes the depthwise 1x1 Conv that computes
 * the same per-channel affine y = x * s + t: weight [C, 1, 1(, 1)] = s, bias
 * = t, group = C. The rewrite is exact in float (the same s and t bnfold
 * uses, rounded once to float), and the quantized form is exact too: a
 * depthwise filter of one element is its own per-channel maximum, so its
 * int8 (or int4) code is +-qmax with no rounding error, and the bias is
 * int32 at in_scale*w_scale like any conv's. The NPU runs it on its
 * depthwise unit, the host on the integer conv kernel, and a Relu after it
 * fuses into it (fuse_act runs next). 1-D and 2-D inputs (rank 3 and 4)
 * only: the NPU's convolutions. */
#include "opt/opt_internal.h"

static npu_status to_conv(ir_graph *g, ir_node *bn, bool *changed, npu_err *err)
{
    ir_tensor *x = bn->inputs[0], *y = bn->n_outputs > 0 ? bn->outputs[0] : NULL;
    if (!x || !y || !x->shape_known || (x->rank != 3 && x->rank != 4) || !y->shape_known ||
        y->dtype != x->dtype || !ir_shape_equal(x, y))
        return NPU_OK;
    opt_bn_coef k;
    if (!opt_bn_coefficients(g, bn, &k))
        return NPU_OK;
    int64_t wdims[4] = {k.c, 1, 1, 1}, ks[2] = {1, 1};
    ir_tensor *w = opt_const_new(g, bn->name, "dw_weight", IR_F32, x->rank, wdims, NULL);
    ir_tensor *b = w ? opt_const_new(g, bn->name, "dw_bias", IR_F32, 1, wdims, NULL) : NULL;
    if (!b)
        return npu_fail(err, NPU_EINTERNAL, "bnconv: node '%s': out of memory", bn->name);
    float *wv = w->data, *bv = b->data;
    for (int64_t c = 0; c < k.c; c++) {
        wv[c] = (float)k.s[c];
        bv[c] = (float)k.t[c];
    }
    ir_tensor *in[3] = {x, w, b};
    bn->dead = true;
    ir_node *conv = ir_node_new(g, IR_OP_CONV, bn->name, 3, in, 1, &y);
    if (!conv || !ir_set_int(g, conv, "group", k.c) || !ir_set_ints(g, conv, "kernel_shape", x->rank - 2, ks))
        return npu_fail(err, NPU_EINTERNAL, "bnconv: node '%s': out of memory", bn->name);
    for (int j = 1; j < bn->n_outputs; j++) /* unused (opt_bn_coefficients checked) */
        if (bn->outputs[j])
            bn->outputs[j]->producer = NULL;
    *changed = true;
    return NPU_OK;
}

npu_status opt_bnconv(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    bool any = false;
    int n = g->n_nodes; /* the new convs are appended: not revisited */
    for (int i = 0; i < n; i++) {
        ir_node *bn = g->nodes[i];
        if (bn->dead || bn->op != IR_OP_BATCH_NORM)
            continue;
        npu_status st = to_conv(g, bn, &any, err);
        if (st != NPU_OK)
            return st;
    }
    *changed = any;
    if (!any)
        return NPU_OK;
    ir_graph_compact(g);
    return ir_graph_toposort(g, err);
}
