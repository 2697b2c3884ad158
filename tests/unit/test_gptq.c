/* GPTQ weight rounding (src/quantize/gptq.c): on a synthetic layer with
 * correlated inputs its output error d^T H d is below nearest and adaptive
 * rounding; codes stay in range; dead inputs and a zero H are handled; and
 * through q_ptq the int4 codes are packed (nk_int4_pack) and a grouped conv
 * is rounded per group. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "quantize/quantize_internal.h"
#include "tests/support/calibfiles.h"
#include "tests/support/testgraph.h"

enum { K = 24, N = 6, SAMPLES = 400 };

/* H = E[p p^T] of patches with a shared component (correlated inputs);
 * inputs listed in dead are always 0. */
static void correlated_gram(double *h, const int *dead, int n_dead, uint32_t seed)
{
    memset(h, 0, sizeof(double) * K * K);
    for (int s = 0; s < SAMPLES; s++) {
        double p[K], common = tf_rnd(&seed);
        for (int i = 0; i < K; i++)
            p[i] = common + 0.3 * tf_rnd(&seed);
        for (int d = 0; d < n_dead; d++)
            p[dead[d]] = 0;
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++)
                h[i * K + j] += p[i] * p[j] / SAMPLES;
    }
}

/* sum over channels of d^T H d, d = s q - w */
static double output_error(const double *h, const float *w, const int8_t *q, const float *scale)
{
    double total = 0;
    for (int c = 0; c < N; c++) {
        double d[K];
        for (int i = 0; i < K; i++)
            d[i] = (double)scale[c] * q[c * K + i] - w[c * K + i];
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++)
                total += d[i] * h[i * K + j] * d[j];
    }
    return total;
}

static double per_channel(const double *h, const float *w, int qmax, q_rounding r, int8_t *q, float *scale)
{
    for (int c = 0; c < N; c++) {
        q_round_in in = {.w = w + c * K, .k = K, .qmax = qmax, .metric = h, .rounding = r};
        q_round_channel(&in, q + c * K, scale + c);
    }
    return output_error(h, w, q, scale);
}

static double gptq(const double *h, const float *w, int qmax, int8_t *q, float *scale)
{
    q_gptq gq;
    npu_err e;
    cr_assert_eq(q_gptq_init(&gq, K, npu_alloc_default(), &e), NPU_OK, "%s", e.msg);
    cr_assert(q_gptq_factor(&gq, h));
    q_gptq_round(&gq, w, N, qmax, q, scale);
    q_gptq_free(&gq);
    return output_error(h, w, q, scale);
}

static void random_weights(float *w, uint32_t seed)
{
    for (int i = 0; i < N * K; i++)
        w[i] = tf_rnd(&seed);
    w[3] = 4.0f; /* an outlier: channel 0's scale follows it, the error feedback pushes codes to the limits */
}

static void assert_codes_in_range(const int8_t *q, int qmax)
{
    for (int i = 0; i < N * K; i++)
        cr_assert(q[i] >= -qmax && q[i] <= qmax, "code %d at %d out of +-%d", q[i], i, qmax);
}

Test(gptq, lower_output_error_than_nearest_and_adaptive)
{
    double h[K * K];
    float w[N * K], scale[N];
    int8_t q[N * K];
    correlated_gram(h, NULL, 0, 3);
    random_weights(w, 17);
    for (int qmax = 7; qmax <= 127; qmax += 120) {
        double nearest = per_channel(h, w, qmax, Q_ROUND_NEAREST, q, scale);
        double adaptive = per_channel(h, w, qmax, Q_ROUND_ADAPTIVE, q, scale);
        double g = gptq(h, w, qmax, q, scale);
        assert_codes_in_range(q, qmax);
        cr_assert_lt(g, 0.5 * nearest, "qmax %d: gptq %g vs nearest %g", qmax, g, nearest);
        cr_assert_lt(g, adaptive, "qmax %d: gptq %g vs adaptive %g", qmax, g, adaptive);
        /* int8: the scale is max|w| / 127 exactly (no clipping) */
        for (int c = 0; qmax == 127 && c < N; c++) {
            float amax = 0;
            for (int i = 0; i < K; i++)
                amax = fmaxf(amax, fabsf(w[c * K + i]));
            cr_assert_float_eq(scale[c], amax / 127.0f, 1e-6f * amax);
        }
    }
}

Test(gptq, deterministic)
{
    double h[K * K];
    float w[N * K], s1[N], s2[N];
    int8_t q1[N * K], q2[N * K];
    correlated_gram(h, NULL, 0, 4);
    random_weights(w, 5);
    gptq(h, w, 7, q1, s1);
    gptq(h, w, 7, q2, s2);
    cr_assert(!memcmp(q1, q2, sizeof q1) && !memcmp(s1, s2, sizeof s1));
}

Test(gptq, dead_inputs_take_and_give_no_error)
{
    const int dead[] = {0, 5, 23};
    double h[K * K];
    float w[N * K], scale[N];
    int8_t q[N * K];
    correlated_gram(h, dead, 3, 9);
    random_weights(w, 23);
    double nearest = per_channel(h, w, 7, Q_ROUND_NEAREST, q, scale);
    double g = gptq(h, w, 7, q, scale);
    cr_assert(isfinite(g));
    assert_codes_in_range(q, 7);
    cr_assert_lt(g, 0.5 * nearest, "gptq %g vs nearest %g", g, nearest);
    /* a dead input's code is its weight rounded at the channel's scale:
     * no error was spread onto it */
    for (int c = 0; c < N; c++)
        for (int d = 0; d < 3; d++) {
            double r = round(w[c * K + dead[d]] / scale[c]);
            r = r > 7 ? 7 : r < -7 ? -7 : r;
            cr_assert_eq(q[c * K + dead[d]], (int8_t)r, "channel %d input %d", c, dead[d]);
        }
}

Test(gptq, no_signal_is_no_factor)
{
    static double h[K * K]; /* all zero: every input dead */
    q_gptq gq;
    npu_err e;
    cr_assert_eq(q_gptq_init(&gq, K, npu_alloc_default(), &e), NPU_OK, "%s", e.msg);
    cr_assert(!q_gptq_factor(&gq, h));
    cr_assert(!gq.ready);
    q_gptq_free(&gq);
}

Test(gptq, init_reports_allocation_failure)
{
    for (size_t k = 1; k <= 5; k++) { /* four allocations */
        npu_alloc_counter cnt = {0};
        npu_alloc a = npu_alloc_counting(&cnt);
        cnt.fail_at = k;
        q_gptq gq;
        npu_err e = {0};
        npu_status st = q_gptq_init(&gq, K, a, &e);
        if (st == NPU_OK)
            q_gptq_free(&gq);
        else
            cr_assert(strstr(e.msg, "out of memory"), "%s", e.msg);
        cr_assert_eq(cnt.live_bytes, 0, "allocation %zu: leaked %zu bytes", k, cnt.live_bytes);
        cr_assert_eq(st == NPU_OK, k == 5, "allocation %zu", k);
    }
}

/* ---- through q_ptq ---- */

static const ir_node *node_named(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i]->name, name))
            return g->nodes[i];
    return NULL;
}

/* x[1,2,6,6] -> Conv 2 -> 4 channels, group 2, 3x3 pad 1 -> y */
static ir_graph *grouped_conv(const float *w)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    ir_tensor *x = tg_tensor(g, "x", IR_F32, 4, (int64_t[]){1, 2, 6, 6});
    ir_tensor *y = tg_tensor(g, "y", IR_F32, 4, (int64_t[]){1, 4, 6, 6});
    ir_tensor *in[2] = {x, tg_const(g, "w", IR_F32, 4, (int64_t[]){4, 1, 3, 3}, w)};
    ir_node *n = ir_node_new(g, IR_OP_CONV, "conv", 2, in, 1, &y);
    ir_set_int(g, n, "group", 2);
    ir_set_ints(g, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    ir_set_ints(g, n, "kernel_shape", 2, (int64_t[]){3, 3});
    tg_set_io(g, 1, &x, y);
    return g;
}

Test(gptq, int4_grouped_conv_through_ptq_is_packed_and_beats_nearest)
{
    float w[4 * 9];
    uint32_t s = 31;
    for (int i = 0; i < 4 * 9; i++)
        w[i] = tf_rnd(&s);
    char *dir = tf_tmpdir();
    for (int n = 0; n < 20; n++) { /* smooth images: neighbouring pixels correlate */
        float x[2 * 36];
        float a = tf_rnd(&s), b = tf_rnd(&s);
        for (int c = 0; c < 2; c++)
            for (int i = 0; i < 36; i++)
                x[c * 36 + i] = (c ? b : a) * (float)(i % 6 + i / 6) / 10.0f + 0.05f * tf_rnd(&s);
        char name[32];
        snprintf(name, sizeof name, "%03d.npy", n);
        tf_write_npy(dir, name, NPY_F32, 4, (int64_t[]){1, 2, 6, 6}, x);
    }
    double sqnr[2];
    for (int r = 0; r < 2; r++) {
        ir_graph *g = grouped_conv(w);
        q_ptq_options o = {.calib_dir = dir, .range = {CAL_MINMAX, 99.99, 8}, .q = {.wbits = 4, .abits = 8},
                           .int4_rounding = r ? Q_ROUND_GPTQ : Q_ROUND_NEAREST, .report = true};
        q_ptq_result res;
        npu_err e;
        cr_assert_eq(q_ptq(g, &o, &res, &e), NPU_OK, "%s", e.msg);
        sqnr[r] = res.report->out_sqnr_db;
        const ir_tensor *wq = node_named(g, "conv")->inputs[1];
        cr_assert_eq(wq->dtype, IR_I4);
        for (int c = 0; c < 4; c++) {
            cr_assert_gt(wq->quant->scale[c], 0.0f);
            for (int i = 0; i < 9; i++) {
                int q = nk_int4_get(wq->data, (size_t)(c * 9 + i));
                cr_assert(q >= -7 && q <= 7, "code %d", q);
                /* the packed code is within a few steps of the weight */
                cr_assert_lt(fabs(q * wq->quant->scale[c] - w[c * 9 + i]), 4.0 * wq->quant->scale[c]);
            }
        }
        q_report_free(res.report);
        ir_graph_free(g);
    }
    cr_assert_gt(sqnr[1], sqnr[0] + 3.0, "gptq %.2f dB vs nearest %.2f dB", sqnr[1], sqnr[0]);
}
