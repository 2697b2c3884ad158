/* Conv / Gemm / MatMul-by-constant: per-output-channel symmetric weights
 * (int8 -127..127 or int4 -7..7, packed) and int32 bias at in_scale*w_scale. */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "quantize/quantize_internal.h"

/* Gemm weights are stored [N, K] (transB = 1): transposes a [K, N] matrix. */
static float *transposed(ir_graph *g, const float *w, int64_t k, int64_t n)
{
    float *t = npu_arena_alloc(g->arena, sizeof(float) * (size_t)(k * n));
    if (t)
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = 0; j < n; j++)
                t[j * k + i] = w[i * n + j];
    return t;
}

static int wbits_for(const q_ctx *c, const ir_node *n)
{
    for (int i = 0; i < c->opts->n_layer_bits; i++)
        if (strcmp(c->opts->layer_bits[i].node, n->name) == 0)
            return c->opts->layer_bits[i].wbits;
    return c->opts->wbits;
}

npu_status q_weighted(q_ctx *c, ir_node *n)
{
    ir_graph *g = c->g;
    ir_tensor *w = n->inputs[1];
    ir_tensor *b = n->n_inputs > 2 ? n->inputs[2] : NULL;
    const float *wf = w->data;
    int64_t oc, per;
    int64_t wdims[IR_MAX_RANK];
    int wrank = w->rank;
    memcpy(wdims, w->dims, sizeof wdims);
    float alpha = 1.0f, beta = 1.0f;
    if (n->op == IR_OP_CONV) {
        oc = w->dims[0];
        per = ir_tensor_numel(w) / (oc ? oc : 1);
    } else {
        /* Gemm (or MatMul, which becomes Gemm): weights as [N, K] */
        bool trans_b = n->op == IR_OP_GEMM && ir_attr_int(n, "transB", 0);
        if (n->op == IR_OP_GEMM) {
            alpha = ir_attr_float(n, "alpha", 1.0f);
            beta = ir_attr_float(n, "beta", 1.0f);
        }
        int64_t k = trans_b ? w->dims[1] : w->dims[0];
        oc = trans_b ? w->dims[0] : w->dims[1];
        per = k;
        if (!trans_b && !(wf = transposed(g, wf, k, oc)))
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        wdims[0] = oc;
        wdims[1] = k;
        wrank = 2;
        if (n->op == IR_OP_MATMUL)
            n->op = IR_OP_GEMM;
        ir_set_int(g, n, "transB", 1);
        ir_set_float(g, n, "alpha", 1.0f);
        ir_set_float(g, n, "beta", 1.0f);
    }
    int bits = wbits_for(c, n);
    int qmax = bits == 4 ? 7 : 127;
    float s_in = n->inputs[0]->quant->scale[0];
    ir_quant *wq = q_quant_new(g, 0, (int)oc);
    ir_tensor *wt = wq ? ir_tensor_new(g, NULL, bits == 4 ? IR_I4 : IR_I8, wrank, wdims) : NULL;
    int8_t *codes = wt ? npu_arena_alloc(g->arena, (size_t)(oc * per) + 1) : NULL;
    if (!codes)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    for (int64_t ch = 0; ch < oc; ch++) {
        const float *row = wf + ch * per;
        float amax = 0;
        for (int64_t j = 0; j < per; j++)
            amax = fmaxf(amax, fabsf(row[j] * alpha));
        float s = amax > 0 ? amax / (float)qmax : 1.0f;
        wq->scale[ch] = s;
        wq->zero_point[ch] = 0;
        for (int64_t j = 0; j < per; j++) {
            float r = roundf(row[j] * alpha / s);
            codes[ch * per + j] = (int8_t)(r < -qmax ? -qmax : r > qmax ? qmax : r);
        }
    }
    if (bits == 4) {
        size_t nb = ir_tensor_bytes(wt);
        if (!(wt->data = npu_arena_alloc(g->arena, nb)))
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        nk_int4_pack(codes, wt->data, (size_t)(oc * per));
    } else {
        wt->data = codes;
    }
    wt->quant = wq;
    n->inputs[1] = wt;
    if (b) {
        const float *bf = b->data;
        int64_t bd = oc;
        ir_tensor *bt = ir_const_new(g, NULL, IR_I32, 1, &bd, NULL);
        ir_quant *bq = bt ? q_quant_new(g, 0, (int)oc) : NULL;
        if (!bq)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        int32_t *bi = bt->data;
        for (int64_t ch = 0; ch < oc; ch++) {
            double s = (double)s_in * wq->scale[ch];
            double r = round((double)bf[ch] * beta / s);
            bi[ch] = (int32_t)(r < -2147483647.0 ? -2147483647.0 : r > 2147483647.0 ? 2147483647.0 : r);
            bq->scale[ch] = (float)s;
            bq->zero_point[ch] = 0;
        }
        bt->quant = bq;
        n->inputs[2] = bt;
    }
    return NPU_OK;
}
