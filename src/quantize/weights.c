/* Conv / Gemm / MatMul-by-constant: per-output-channel symmetric weights
 * (int8 -127..127 or int4 -7..7, packed) and int32 bias at in_scale*w_scale.
 * Rounding: nearest, adaptive (here) or GPTQ (gptq.c), the last two weighed
 * by the second moment of the layer's input patches (lstats.c). */
#include <math.h>
#include <stdlib.h>
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

static int8_t clamp_code(double r, int qmax)
{
    return (int8_t)(r < -qmax ? -qmax : r > qmax ? qmax : r);
}

/* roundf(x) as clamp_code takes it, without a libm call per weight (a
 * quarter of ResNet-18's weight quantization): below 2^23 the truncation
 * and x minus it are exact, so halves round away from zero as roundf does;
 * a zero may lose its sign, which no code keeps. Larger, infinite and NaN
 * x go to roundf. */
static float round_code(float x)
{
    if (!(fabsf(x) < 8388608.0f))
        return roundf(x);
    float t = (float)(int32_t)x, f = x - t;
    return t + (float)((f >= 0.5f) - (f <= -0.5f)); /* no branch: weights round either way at random */
}

/* Adaptive rounding: a per-channel scale (a clipping factor chosen on the
 * diagonal of the metric), then greedy up/down flips of single codes while
 * the output error dw^T C dw falls (each code stays floor or ceil of w/s). */
static void round_adaptive(const q_round_in *in, double s0, int8_t *q, float *scale)
{
    int64_t k = in->k;
    int qmax = in->qmax;
    double best = -1, s = s0;
    for (int f = 100; f >= 50; f -= 5) {
        double sf = s0 * f / 100.0, cost = 0;
        for (int64_t j = 0; j < k; j++) {
            double d = sf * clamp_code(round(in->w[j] / sf), qmax) - in->w[j];
            cost += in->metric[j * k + j] * d * d;
        }
        if (best < 0 || cost < best) {
            best = cost;
            s = sf;
        }
    }
    /* the scale is stored as float: round with the one the kernels use */
    *scale = (float)s;
    s = *scale;
    npu_alloc a = in->alloc.fn ? in->alloc : npu_alloc_default();
    size_t dbytes = sizeof(double) * (size_t)k * 2;
    double *d = npu_malloc(a, dbytes);
    if (!d) { /* no scratch: nearest at the chosen scale is still valid */
        for (int64_t j = 0; j < k; j++)
            q[j] = clamp_code(round(in->w[j] / s), qmax);
        return;
    }
    double *g = d + k;
    for (int64_t j = 0; j < k; j++) {
        q[j] = clamp_code(round(in->w[j] / s), qmax);
        d[j] = s * q[j] - in->w[j];
    }
    for (int64_t i = 0; i < k; i++) {
        double acc = 0;
        const double *row = in->metric + i * k;
        for (int64_t j = 0; j < k; j++)
            acc += row[j] * d[j];
        g[i] = acc;
    }
    for (int pass = 0; pass < 8; pass++) {
        int flips = 0;
        for (int64_t j = 0; j < k; j++) {
            double fl = floor(in->w[j] / s);
            int alt = q[j] == (int)fl ? (int)fl + 1 : (int)fl;
            if (alt < -qmax || alt > qmax || (alt != (int)fl && alt != (int)fl + 1) || alt == q[j])
                continue;
            double delta = s * (alt - q[j]), cjj = in->metric[j * k + j];
            if (2 * delta * g[j] + delta * delta * cjj >= -1e-15 * (cjj + 1e-30))
                continue;
            q[j] = (int8_t)alt;
            d[j] += delta;
            const double *col = in->metric + j * k; /* symmetric: column j is row j */
            for (int64_t i = 0; i < k; i++)
                g[i] += delta * col[i];
            flips++;
        }
        if (!flips)
            break;
    }
    npu_free(a, d, dbytes);
}

/* sum_j (s q_j - w_j) mean_j: the mean output error bias correction removes */
static double mean_error(const float *w, int64_t k, float s, const int8_t *codes, const double *mean)
{
    double err = 0;
    if (mean)
        for (int64_t j = 0; j < k; j++)
            err += ((double)s * codes[j] - w[j]) * mean[j];
    return err;
}

/* The largest |w[j]| (0 for none) as fmaxf finds it, NaNs skipped, in 8
 * lanes that do not wait on each other (the maximum of a set is the same in
 * any order). */
static float abs_max(const float *w, int64_t k)
{
    enum { L = 8 };
    float m[L] = {0};
    int64_t j = 0;
    for (; j + L <= k; j += L)
        for (int l = 0; l < L; l++) {
            float a = fabsf(w[j + l]);
            m[l] = a > m[l] ? a : m[l];
        }
    for (; j < k; j++) {
        float a = fabsf(w[j]);
        m[0] = a > m[0] ? a : m[0];
    }
    float amax = 0;
    for (int l = 0; l < L; l++)
        amax = m[l] > amax ? m[l] : amax;
    return amax;
}

double q_round_channel(const q_round_in *in, int8_t *codes, float *scale)
{
    float amax = abs_max(in->w, in->k);
    float s = amax > 0 ? amax / (float)in->qmax : 1.0f;
    if (in->rounding == Q_ROUND_ADAPTIVE && in->metric && amax > 0) {
        round_adaptive(in, s, codes, scale);
        s = *scale;
    } else {
        *scale = s;
        for (int64_t j = 0; j < in->k; j++)
            codes[j] = clamp_code(round_code(in->w[j] / s), in->qmax);
    }
    return mean_error(in->w, in->k, s, codes, in->mean);
}

static const q_layer_stats *stats_for(const q_ctx *c, const ir_node *n)
{
    for (int i = 0; i < c->opts->n_stats; i++)
        if (!strcmp(c->opts->stats[i].node, n->name))
            return c->opts->stats[i].n ? &c->opts->stats[i] : NULL;
    return NULL;
}

/* A --layer-bits entry wins; else --wbits, except that under --wbits 4 a
 * layer whose output channels each sum fewer than w4_min_fanin weights
 * (depthwise convs, one-channel stems) keeps 8 bits: with 9 taps a channel
 * has no other weights for GPTQ to absorb the rounding error in, and such
 * layers hold few of the model's weights (docs/numerics.md, "int4 that
 * holds"). */
static int wbits_for(const q_ctx *c, const ir_node *n, int64_t fan_in)
{
    for (int i = 0; i < c->opts->n_layer_bits; i++)
        if (c->opts->layer_bits[i].wbits && strcmp(c->opts->layer_bits[i].node, n->name) == 0)
            return c->opts->layer_bits[i].wbits;
    if (c->opts->wbits == 4 && fan_in < c->opts->w4_min_fanin)
        return 8;
    return c->opts->wbits;
}

/* The weights as one row per output channel, whatever the op stored. */
typedef struct {
    const float *wf; /* [oc, per] real weights, before alpha */
    int64_t oc, per;
    int64_t dims[IR_MAX_RANK];
    int rank;
    float alpha, beta;
} w_layout;

/* Conv weights are already [OC, ...]; Gemm/MatMul ones become [N, K] with
 * alpha and beta folded later, so the node is rewritten to transB=1, 1, 1. */
static npu_status weight_layout(q_ctx *c, ir_node *n, w_layout *L)
{
    ir_tensor *w = n->inputs[1];
    L->wf = w->data;
    L->rank = w->rank;
    memcpy(L->dims, w->dims, sizeof L->dims);
    L->alpha = 1.0f, L->beta = 1.0f;
    if (n->op == IR_OP_CONV) {
        L->oc = w->dims[0];
        L->per = ir_tensor_numel(w) / (L->oc ? L->oc : 1);
        return NPU_OK;
    }
    /* Gemm (or MatMul, which becomes Gemm): weights as [N, K] */
    bool trans_b = n->op == IR_OP_GEMM && ir_attr_int(n, "transB", 0);
    if (n->op == IR_OP_GEMM) {
        L->alpha = ir_attr_float(n, "alpha", 1.0f);
        L->beta = ir_attr_float(n, "beta", 1.0f);
    }
    int64_t k = trans_b ? w->dims[1] : w->dims[0];
    L->oc = trans_b ? w->dims[0] : w->dims[1];
    L->per = k;
    if (!trans_b && !(L->wf = transposed(c->g, L->wf, k, L->oc)))
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    L->dims[0] = L->oc;
    L->dims[1] = k;
    L->rank = 2;
    if (n->op == IR_OP_MATMUL)
        n->op = IR_OP_GEMM;
    ir_set_int(c->g, n, "transB", 1);
    ir_set_float(c->g, n, "alpha", 1.0f);
    ir_set_float(c->g, n, "beta", 1.0f);
    return NPU_OK;
}

/* Rounds every output channel to codes and scales, group by group: nearest,
 * adaptive or GPTQ, weighed by the group's input statistics when there are
 * some. mean_err (when not NULL) gets each channel's mean output error. */
static npu_status round_weights(q_ctx *c, const w_layout *L, const q_layer_stats *ls, int bits,
                                ir_quant *wq, int8_t *codes, double *mean_err)
{
    int64_t oc = L->oc, per = L->per;
    int qmax = bits == 4 ? 7 : 127;
    bool correct = mean_err != NULL;
    q_rounding rounding = bits == 4 ? c->opts->int4_rounding : c->opts->int8_rounding;
    bool weighed = rounding != Q_ROUND_NEAREST && ls && ls->gram;
    int64_t gsize = ls ? oc / ls->groups : oc; /* output channels per group */
    /* the real weights (alpha applied), one row per output channel */
    npu_alloc a = c->g->alloc;
    size_t rbytes = sizeof(float) * (size_t)(oc * per) + 1, mbytes = sizeof(double) * (size_t)(per * per);
    float *rows = npu_malloc(a, rbytes);
    if (!rows)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    for (int64_t i = 0; i < oc * per; i++)
        rows[i] = L->wf[i] * L->alpha;
    /* the error metric per group: E[p p^T], or its covariance when the mean
     * error is corrected by the bias afterwards */
    double *metric = weighed && correct ? npu_malloc(a, mbytes) : NULL;
    q_gptq gq = {0};
    if (weighed && correct && !metric) {
        npu_free(a, rows, rbytes);
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    }
    if (weighed && rounding == Q_ROUND_GPTQ && q_gptq_init(&gq, per, c->g->alloc, c->err) != NPU_OK) {
        npu_free(a, rows, rbytes);
        npu_free(a, metric, mbytes);
        return c->err->code;
    }
    for (int64_t gi = 0; gi * gsize < oc; gi++) {
        const double *gram = weighed ? ls->gram + (size_t)gi * (size_t)(per * per) : NULL;
        const double *mean = correct ? ls->mean + gi * per : NULL;
        if (metric)
            for (int64_t i = 0; i < per; i++)
                for (int64_t j = 0; j < per; j++)
                    metric[i * per + j] = gram[i * per + j] - mean[i] * mean[j];
        const double *h = metric ? metric : gram;
        /* GPTQ rounds the group's channels together; without a factor, nearest */
        bool by_group = gq.m && q_gptq_factor(&gq, h);
        if (by_group)
            q_gptq_round(&gq, rows + gi * gsize * per, gsize, qmax, codes + gi * gsize * per, wq->scale + gi * gsize);
        for (int64_t ch = gi * gsize; ch < (gi + 1) * gsize; ch++) {
            const float *w_ch = rows + ch * per;
            double e;
            if (by_group) {
                e = mean_error(w_ch, per, wq->scale[ch], codes + ch * per, mean);
            } else {
                q_round_in ri = {.w = w_ch, .k = per, .qmax = qmax, .metric = h, .mean = mean,
                                 .rounding = rounding, .alloc = a};
                e = q_round_channel(&ri, codes + ch * per, &wq->scale[ch]);
            }
            wq->zero_point[ch] = 0;
            if (correct)
                mean_err[ch] = e;
        }
    }
    npu_free(a, rows, rbytes);
    npu_free(a, metric, mbytes);
    q_gptq_free(&gq);
    return NPU_OK;
}

/* Bias correction needs a bias to correct: a zero one as the third input. */
static npu_status add_zero_bias(q_ctx *c, ir_node *n, int64_t oc)
{
    ir_graph *g = c->g;
    ir_tensor **ni = npu_arena_alloc(g->arena, 3 * sizeof *ni);
    float *zero = npu_arena_alloc(g->arena, sizeof(float) * (size_t)oc);
    if (!ni || !zero)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    memset(zero, 0, sizeof(float) * (size_t)oc);
    ir_tensor *b = ir_const_new(g, NULL, IR_F32, 1, &oc, zero);
    if (!b)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    ni[0] = n->inputs[0], ni[1] = n->inputs[1], ni[2] = b;
    n->inputs = ni;
    n->n_inputs = 3;
    return NPU_OK;
}

/* The bias as int32 at in_scale * w_scale per channel (beta applied), less
 * the mean output error the weight rounding adds when mean_err is given. */
static npu_status quantize_bias(q_ctx *c, ir_node *n, int64_t oc, float beta, float s_in,
                                const ir_quant *wq, const double *mean_err)
{
    const float *bf = n->inputs[2]->data;
    int64_t bd = oc;
    ir_tensor *bt = ir_const_new(c->g, NULL, IR_I32, 1, &bd, NULL);
    ir_quant *bq = bt ? q_quant_new(c->g, 0, (int)oc) : NULL;
    if (!bq)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    int32_t *bi = bt->data;
    for (int64_t ch = 0; ch < oc; ch++) {
        double s = (double)s_in * wq->scale[ch];
        /* bias correction: remove the mean output error the weight rounding adds */
        double r = round(((double)bf[ch] * beta - (mean_err ? mean_err[ch] : 0.0)) / s);
        bi[ch] = (int32_t)(r < -2147483647.0 ? -2147483647.0 : r > 2147483647.0 ? 2147483647.0 : r);
        bq->scale[ch] = (float)s;
        bq->zero_point[ch] = 0;
    }
    bt->quant = bq;
    n->inputs[2] = bt;
    return NPU_OK;
}

npu_status q_weighted(q_ctx *c, ir_node *n)
{
    ir_graph *g = c->g;
    w_layout L;
    if (weight_layout(c, n, &L) != NPU_OK)
        return c->err->code;
    int64_t oc = L.oc, per = L.per;
    int bits = wbits_for(c, n, per);
    float s_in = n->inputs[0]->quant->scale[0];
    ir_quant *wq = q_quant_new(g, 0, (int)oc);
    ir_tensor *wt = wq ? ir_tensor_new(g, NULL, bits == 4 ? IR_I4 : IR_I8, L.rank, L.dims) : NULL;
    int8_t *codes = wt ? npu_arena_alloc(g->arena, (size_t)(oc * per) + 1) : NULL;
    if (!codes)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    const q_layer_stats *ls = stats_for(c, n);
    if (ls && (ls->k != per || oc % ls->groups))
        ls = NULL; /* statistics of another shape: the graph changed since calibration */
    bool correct = c->opts->bias_correction && ls;
    double *mean_err = correct ? npu_arena_alloc(g->arena, sizeof(double) * (size_t)oc) : NULL;
    if (correct && !mean_err)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    if (round_weights(c, &L, ls, bits, wq, codes, mean_err) != NPU_OK)
        return c->err->code;
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
    float beta = L.beta;
    bool has_bias = n->n_inputs > 2 && n->inputs[2];
    if (correct && !has_bias) {
        if (add_zero_bias(c, n, oc) != NPU_OK)
            return c->err->code;
        beta = 1.0f;
        has_bias = true;
    }
    if (has_bias)
        return quantize_bias(c, n, oc, beta, s_in, wq, mean_err);
    return NPU_OK;
}
