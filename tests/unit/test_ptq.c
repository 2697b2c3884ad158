/* Post-training quantization: the repairs (bias
 * correction, cross-layer equalization, mixed precision) and the report. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/npy.h"
#include "tests/support/calibfiles.h"
#include "tests/support/testgraph.h"
#include "kernels/kernels.h"
#include "quantize/quantize_internal.h"

/* ---- graphs ---- */

static void set_io(ir_graph *g, ir_tensor *x, ir_tensor *y)
{
    tg_set_io(g, 1, &x, y);
}

/* x[1, k] -> Gemm(w[n, k], b) -> y[1, n] */
static ir_tensor *add_gemm(ir_graph *g, const char *name, ir_tensor *x, int64_t n, const float *w, const float *b)
{
    int64_t k = x->dims[1], wd[2] = {n, k}, yd[2] = {1, n};
    char yn[64];
    snprintf(yn, sizeof yn, "%s_out", name);
    ir_tensor *y = ir_tensor_new(g, yn, IR_F32, 2, yd);
    ir_tensor *in[3] = {x, ir_const_new(g, NULL, IR_F32, 2, wd, w), ir_const_new(g, NULL, IR_F32, 1, &n, b)};
    ir_node *node = ir_node_new(g, IR_OP_GEMM, name, 3, in, 1, &y);
    ir_set_int(g, node, "transB", 1);
    return y;
}

/* n samples x[1, k] = base + spread * noise into a fresh directory */
static char *calib_dir(int n, int64_t k, float base, float spread, uint32_t seed)
{
    char *d = tf_tmpdir();
    float *x = malloc(sizeof(float) * (size_t)k);
    int64_t dims[2] = {1, k};
    for (int s = 0; s < n; s++) {
        for (int64_t i = 0; i < k; i++)
            x[i] = base + spread * tf_rnd(&seed);
        char name[32];
        snprintf(name, sizeof name, "%03d.npy", s);
        tf_write_npy(d, name, NPY_F32, 2, dims, x);
    }
    free(x);
    return d;
}

static q_report *ptq_report(ir_graph *g, const char *dir, int wbits, bool bc, double budget)
{
    q_ptq_options o = {.calib_dir = dir, .range = {CAL_MINMAX, 99.99, 8}, .q = {.wbits = wbits, .abits = 8},
                       .bias_correction = bc, .accuracy_budget_db = budget, .report = true};
    q_ptq_result r;
    npu_err e;
    cr_assert_eq(q_ptq(g, &o, &r, &e), NPU_OK, "%s", e.msg);
    cr_assert_not_null(r.report);
    cr_assert_eq(r.samples, r.report->samples);
    return r.report;
}

Test(ptq, bias_correction_lowers_the_output_error)
{
    /* inputs far from zero on average: the int4 weight error shifts the mean output */
    enum { K = 32, N = 8 };
    float w[N * K], b[N];
    uint32_t s = 11;
    for (int i = 0; i < N * K; i++)
        w[i] = tf_rnd(&s);
    for (int i = 0; i < N; i++)
        b[i] = 0.1f * tf_rnd(&s);
    char *dir = calib_dir(40, K, 2.0f, 0.2f, 5);
    double sqnr[2];
    for (int bc = 0; bc < 2; bc++) {
        ir_graph *g = ir_graph_new(npu_alloc_default());
        ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 2, (int64_t[]){1, K});
        set_io(g, x, add_gemm(g, "fc", x, N, w, b));
        q_report *r = ptq_report(g, dir, 4, bc, 0);
        sqnr[bc] = r->out_sqnr_db;
        q_report_free(r);
        ir_graph_free(g);
    }
    cr_assert_gt(sqnr[1], sqnr[0] + 3.0, "bias correction: %.2f dB, without: %.2f dB", sqnr[1], sqnr[0]);
}

Test(ptq, mixed_precision_keeps_the_sensitive_layer_at_8_bits)
{
    /* fc1: one large weight per row, the rest small (int4 per-channel scales
     * flush them to zero); fc2: evenly spread weights (int4 copes) */
    enum { K = 16 };
    float w1[K * K], b1[K] = {0}, w2[8 * K], b2[8] = {0};
    uint32_t s = 3;
    for (int o = 0; o < K; o++)
        for (int i = 0; i < K; i++)
            w1[o * K + i] = i == o ? 1.0f : 0.06f * tf_rnd(&s);
    for (int i = 0; i < 8 * K; i++)
        w2[i] = tf_rnd(&s);
    char *dir = calib_dir(30, K, 0.0f, 1.0f, 9);
    double all4 = 0;
    for (int run = 0; run < 3; run++) {
        ir_graph *g = ir_graph_new(npu_alloc_default());
        ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 2, (int64_t[]){1, K});
        ir_tensor *h = add_gemm(g, "fc1", x, K, w1, b1);
        set_io(g, x, add_gemm(g, "fc2", h, 8, w2, b2));
        /* run 0: no budget (the all-int4 SQNR); 1: just above it; 2: below it */
        double budget = run == 0 ? 0 : run == 1 ? all4 + 0.5 : all4 - 1.0;
        q_report *r = ptq_report(g, dir, 4, false, budget);
        int kept = 0;
        const q_layer_sqnr *fc1 = NULL;
        for (int i = 0; i < r->n_layers; i++) {
            kept += r->layers[i].wbits == 8;
            if (!strcmp(r->layers[i].node, "fc1"))
                fc1 = &r->layers[i];
        }
        cr_assert_not_null(fc1);
        if (run == 0) {
            all4 = r->out_sqnr_db;
            cr_assert_eq(kept, 0);
        } else if (run == 1) {
            cr_assert_eq(fc1->wbits, 8, "the sensitive layer stays at 8 bits");
            cr_assert_not_null(fc1->why8);
            cr_assert(strstr(fc1->why8, "rank 1 of 2"), "%s", fc1->why8);
            cr_assert_geq(r->out_sqnr_db, budget - 1.0, "%.2f vs budget %.2f (the search used the same set)",
                          r->out_sqnr_db, budget);
            cr_assert_float_eq(r->budget_db, budget, 1e-12);
        } else {
            cr_assert_eq(kept, 0, "a budget already met keeps every layer at 4 bits");
        }
        q_report_free(r);
        ir_graph_free(g);
    }
}

static double chan_range(const float *w, int64_t stride, int64_t count, int64_t step)
{
    double m = 0;
    for (int64_t j = 0; j < count; j++)
        m = fmax(m, fabs(w[j * step]));
    (void)stride;
    return m;
}

/* x[1,4,6,6] -> depthwise 3x3 (act) -> pointwise 4->3 -> y */
static ir_graph *dw_pw_in(npu_alloc alloc, ir_act act)
{
    ir_graph *g = ir_graph_new(alloc);
    uint32_t s = 21;
    float wd[4 * 9], bd[4], wp[3 * 4], bp[3] = {0.1f, -0.2f, 0.3f};
    float scale[4] = {0.02f, 1.0f, 8.0f, 0.3f}; /* very different per-channel ranges */
    for (int c = 0; c < 4; c++) {
        for (int j = 0; j < 9; j++)
            wd[c * 9 + j] = scale[c] * tf_rnd(&s);
        bd[c] = 0.05f * scale[c];
    }
    for (int i = 0; i < 12; i++)
        wp[i] = tf_rnd(&s);
    int64_t xd[4] = {1, 4, 6, 6}, yd[4] = {1, 3, 6, 6};
    ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 4, xd), *h = ir_tensor_new(g, "h", IR_F32, 4, xd);
    ir_tensor *y = ir_tensor_new(g, "y", IR_F32, 4, yd);
    ir_tensor *dwin[3] = {x, ir_const_new(g, NULL, IR_F32, 4, (int64_t[]){4, 1, 3, 3}, wd),
                          ir_const_new(g, NULL, IR_F32, 1, (int64_t[]){4}, bd)};
    ir_node *dw = ir_node_new(g, IR_OP_CONV, "dw", 3, dwin, 1, &h);
    ir_set_int(g, dw, "group", 4);
    ir_set_ints(g, dw, "pads", 4, (int64_t[]){1, 1, 1, 1});
    ir_set_ints(g, dw, "kernel_shape", 2, (int64_t[]){3, 3});
    dw->act = act;
    ir_tensor *pwin[3] = {h, ir_const_new(g, NULL, IR_F32, 4, (int64_t[]){3, 4, 1, 1}, wp),
                          ir_const_new(g, NULL, IR_F32, 1, (int64_t[]){3}, bp)};
    ir_node *pw = ir_node_new(g, IR_OP_CONV, "pw", 3, pwin, 1, &y);
    ir_set_ints(g, pw, "kernel_shape", 2, (int64_t[]){1, 1});
    set_io(g, x, y);
    return g;
}

static ir_graph *dw_pw(ir_act act, ir_tensor **dw_w, ir_tensor **pw_w)
{
    *dw_w = *pw_w = NULL;
    return dw_pw_in(npu_alloc_default(), act);
}

static void run_float(const ir_graph *g, const float *x, float *y)
{
    npu_err e;
    ref_ctx *rc = ref_ctx_new(g, npu_alloc_default(), &e);
    cr_assert_not_null(rc, "%s", e.msg);
    const void *in[1] = {x};
    void *out[1] = {y};
    cr_assert_eq(ref_ctx_run(rc, in, out, &e), NPU_OK, "%s", e.msg);
    ref_ctx_free(rc);
}

static const ir_node *node_named(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i]->name, name))
            return g->nodes[i];
    return NULL;
}

Test(ptq, cle_equalizes_a_depthwise_pointwise_pair_and_keeps_the_float_outputs)
{
    ir_tensor *unused_a, *unused_b;
    ir_graph *g = dw_pw((ir_act){IR_ACT_RELU, 0, 0, 0}, &unused_a, &unused_b);
    float x[4 * 36], y0[3 * 36], y1[3 * 36];
    uint32_t s = 77;
    for (int i = 0; i < 4 * 36; i++)
        x[i] = tf_rnd(&s);
    run_float(g, x, y0);
    const float *wd0 = node_named(g, "dw")->inputs[1]->data;
    cr_assert_gt(chan_range(wd0 + 2 * 9, 0, 9, 1) / chan_range(wd0, 0, 9, 1), 50.0, "ranges differ before");
    cr_assert_eq(q_cle_apply(g, NULL, 4), 1, "one pair");
    run_float(g, x, y1);
    const float *wd = node_named(g, "dw")->inputs[1]->data, *wp = node_named(g, "pw")->inputs[1]->data;
    for (int c = 0; c < 4; c++) {
        double r1 = chan_range(wd + c * 9, 0, 9, 1), r2 = chan_range(wp + c, 0, 3, 4);
        cr_assert_float_eq(r1, r2, 1e-5 * r1, "channel %d: dw range %g, pw range %g", c, r1, r2);
    }
    double ymax = 0;
    for (int i = 0; i < 3 * 36; i++)
        ymax = fmax(ymax, fabs(y0[i]));
    for (int i = 0; i < 3 * 36; i++)
        cr_assert_float_eq(y1[i], y0[i], 1e-5 * ymax, "y[%d]: %g vs %g", i, (double)y1[i], (double)y0[i]);
    ir_graph_free(g);
}

Test(ptq, cle_leaves_a_saturating_relu6_channel_alone)
{
    ir_tensor *unused_a, *unused_b;
    ir_graph *g = dw_pw((ir_act){IR_ACT_CLIP, 0.0f, 6.0f, 0}, &unused_a, &unused_b);
    ir_node *dw = (ir_node *)node_named(g, "dw");
    float before[36];
    memcpy(before, dw->inputs[1]->data, sizeof before);
    /* channel 2 reached 6 on the calibration data, the others stayed below */
    float m[4] = {0.01f, 0.5f, 6.0f, 0.2f};
    float **chan_max = calloc((size_t)g->n_tensors, sizeof *chan_max);
    chan_max[dw->outputs[0]->id] = m;
    cr_assert_eq(q_cle_apply(g, chan_max, 1), 1);
    const float *wd = dw->inputs[1]->data;
    for (int j = 0; j < 9; j++)
        cr_assert_float_eq(wd[2 * 9 + j], before[2 * 9 + j], 0, "channel 2 must not be scaled");
    int scaled = 0;
    for (int c = 0; c < 4; c++) {
        if (c == 2)
            continue;
        double ratio = before[c * 9] / wd[c * 9]; /* s_c */
        scaled += fabs(ratio - 1.0) > 1e-3;
        cr_assert_gt(ratio, m[c] / 6.0, "channel %d: s = %g would move the clip", c, ratio);
    }
    cr_assert_gt(scaled, 0);
    free(chan_max);
    ir_graph_free(g);
}

/* ---- report numbers ---- */

Test(ptq_report, sqnr_formula)
{
    cr_assert(isinf(q_sqnr_db(1.0, 0.0)) && q_sqnr_db(1.0, 0.0) > 0);
    cr_assert_float_eq(q_sqnr_db(100.0, 1.0), 20.0, 1e-12);
    cr_assert_float_eq(q_sqnr_db(2.0, 3.0), 10.0 * log10(2.0 / 3.0), 1e-12);
}

/* y = x + c: the report of (c = 0) against (c = noise) */
static ir_graph *add_const(const float *c)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[2] = {1, 8};
    ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 2, d), *y = ir_tensor_new(g, "y", IR_F32, 2, d);
    ir_tensor *in[2] = {x, ir_const_new(g, NULL, IR_F32, 2, d, c)};
    ir_node_new(g, IR_OP_ADD, "add", 2, in, 1, &y);
    set_io(g, x, y);
    return g;
}

Test(ptq_report, identical_and_noisy_pairs)
{
    float zero[8] = {0}, noise[8];
    uint32_t s = 4;
    for (int i = 0; i < 8; i++)
        noise[i] = 0.1f * tf_rnd(&s);
    char *dir = calib_dir(10, 8, 0.5f, 1.0f, 13);
    ir_graph *a = add_const(zero), *b = add_const(zero), *c = add_const(noise);
    cal_dataset *ds;
    npu_err e;
    cr_assert_eq(tf_open_set(dir, 2, (int64_t[]){1, 8}, NULL, &ds, &e), NPU_OK, "%s", e.msg);
    q_report *r;
    cr_assert_eq(q_report_compute(a, b, ds, 0, npu_alloc_default(), &r, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(r->samples, 10);
    cr_assert(isinf(r->out_sqnr_db) && r->out_sqnr_db > 0, "identical: %g", r->out_sqnr_db);
    cr_assert_float_eq(r->out_cosine, 1.0, 1e-12);
    q_report_free(r);
    /* the noisy pair against energies computed here */
    double sig = 0, err = 0, dot = 0, qq = 0;
    cal_dataset_rewind(ds);
    for (const float *x; cal_dataset_next(ds, &x, &e) == NPU_OK && x;)
        for (int i = 0; i < 8; i++) {
            double f = x[i], q = (double)(x[i] + noise[i]);
            sig += f * f, err += (q - f) * (q - f), dot += f * q, qq += q * q;
        }
    cr_assert_eq(q_report_compute(a, c, ds, 5, npu_alloc_default(), &r, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(r->samples, 5, "max_samples");
    q_report_free(r);
    cr_assert_eq(q_report_compute(a, c, ds, 0, npu_alloc_default(), &r, &e), NPU_OK, "%s", e.msg);
    cr_assert_float_eq(r->out_sqnr_db, 10.0 * log10(sig / err), 1e-6, "%g", r->out_sqnr_db);
    cr_assert_float_eq(r->out_cosine, dot / sqrt(sig * qq), 1e-9);
    /* the Add's output is a layer of the report, with the same numbers */
    cr_assert_eq(r->n_layers, 1);
    cr_assert_str_eq(r->layers[0].node, "add");
    cr_assert_float_eq(r->layers[0].sqnr_db, r->out_sqnr_db, 1e-9);
    char *text;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    q_report_print(r, f);
    fclose(f);
    cr_assert(strstr(text, "output: cosine"), "%s", text);
    cr_assert(strstr(text, "add"), "%s", text);
    free(text);
    q_report_free(r);
    cal_dataset_close(ds);
    ir_graph_free(a);
    ir_graph_free(b);
    ir_graph_free(c);
}

Test(ptq, adaptive_int4_rounding_lowers_the_output_error)
{
    /* correlated inputs (a shared component): errors of neighbouring weights
     * can cancel, which rounding each weight to nearest ignores */
    enum { K = 24, N = 6, S = 60 };
    float w[N * K], b[N] = {0};
    uint32_t s = 17;
    for (int i = 0; i < N * K; i++)
        w[i] = tf_rnd(&s);
    char *dir = tf_tmpdir();
    for (int n = 0; n < S; n++) {
        float x[K], common = tf_rnd(&s);
        for (int i = 0; i < K; i++)
            x[i] = common + 0.3f * tf_rnd(&s);
        char name[32];
        snprintf(name, sizeof name, "%03d.npy", n);
        tf_write_npy(dir, name, NPY_F32, 2, (int64_t[]){1, K}, x);
    }
    double sqnr[2];
    for (int adaptive = 0; adaptive < 2; adaptive++) {
        ir_graph *g = ir_graph_new(npu_alloc_default());
        ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 2, (int64_t[]){1, K});
        set_io(g, x, add_gemm(g, "fc", x, N, w, b));
        q_ptq_options o = {.calib_dir = dir, .range = {CAL_MINMAX, 99.99, 8}, .q = {.wbits = 4, .abits = 8},
                           .int4_rounding = adaptive ? Q_ROUND_ADAPTIVE : Q_ROUND_NEAREST, .report = true};
        q_ptq_result r;
        npu_err e;
        cr_assert_eq(q_ptq(g, &o, &r, &e), NPU_OK, "%s", e.msg);
        sqnr[adaptive] = r.report->out_sqnr_db;
        /* the codes stay int4 and each is the floor or the ceiling of w / s */
        const ir_tensor *wq = node_named(g, "fc")->inputs[1];
        cr_assert_eq(wq->dtype, IR_I4);
        for (int c = 0; c < N; c++)
            for (int i = 0; i < K; i++) {
                int q = nk_int4_get(wq->data, (size_t)(c * K + i));
                double v = w[c * K + i] / wq->quant->scale[c];
                cr_assert(q >= -7 && q <= 7);
                cr_assert(fabs(q - v) < 1.0 + 1e-6 || abs(q) == 7, "code %d for %g", q, v);
            }
        q_report_free(r.report);
        ir_graph_free(g);
    }
    cr_assert_gt(sqnr[1], sqnr[0] + 1.0, "adaptive %.2f dB vs nearest %.2f dB", sqnr[1], sqnr[0]);
}

static ir_graph *two_gemms(npu_alloc alloc)
{
    enum { K = 8, N = 4 };
    float w1[K * K], b1[K] = {0}, w2[N * K], b2[N] = {0};
    uint32_t s = 5;
    for (int i = 0; i < K * K; i++)
        w1[i] = tf_rnd(&s);
    for (int i = 0; i < N * K; i++)
        w2[i] = tf_rnd(&s);
    ir_graph *g = ir_graph_new(alloc);
    ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 2, (int64_t[]){1, K});
    ir_tensor *h = add_gemm(g, "fc1", x, K, w1, b1);
    set_io(g, x, add_gemm(g, "fc2", h, N, w2, b2));
    return g;
}

static ir_graph *dw_pw_relu6(npu_alloc alloc)
{
    return dw_pw_in(alloc, (ir_act){IR_ACT_CLIP, 0.0f, 6.0f, 0});
}

/* Fails allocation k = 1, 2, ... of q_ptq (every option on) until it succeeds. */
static void allocation_failures_with(ir_graph *(*build)(npu_alloc), const char *dir, q_rounding rounding)
{
    bool succeeded = false;
    for (size_t k = 1; !succeeded && k < 20000; k++) {
        npu_alloc_counter cnt = {0};
        ir_graph *g = build(npu_alloc_counting(&cnt));
        cr_assert_not_null(g);
        cnt.fail_at = cnt.count + k;
        q_ptq_options o = {.calib_dir = dir, .range = {CAL_MSE, 99.99, 8}, .q = {.wbits = 4, .abits = 8},
                           .bias_correction = true, .int4_rounding = rounding, .int8_rounding = rounding, .cle = true,
                           .accuracy_budget_db = 100.0, .report = true};
        q_ptq_result r;
        npu_err e = {0};
        npu_status st = q_ptq(g, &o, &r, &e);
        if (st == NPU_OK) {
            succeeded = true;
            cr_assert_not_null(r.report);
            q_report_free(r.report);
        } else {
            cr_assert_eq(st, NPU_EINTERNAL, "allocation %zu: %s", k, e.msg);
            cr_assert(strstr(e.msg, "out of memory"), "allocation %zu: '%s'", k, e.msg);
        }
        ir_graph_free(g);
        cr_assert_eq(cnt.live_bytes, 0, "allocation %zu: %zu bytes leaked (%s)", k, cnt.live_bytes, e.msg);
    }
    cr_assert(succeeded);
}

/* adaptive (int4 only) and GPTQ (int4, and the 8-bit layers mixed precision keeps) */
static void allocation_failures(ir_graph *(*build)(npu_alloc), const char *dir)
{
    allocation_failures_with(build, dir, Q_ROUND_ADAPTIVE);
    allocation_failures_with(build, dir, Q_ROUND_GPTQ);
}

Test(ptq, every_allocation_failure_is_reported_and_leaks_nothing)
{
    allocation_failures(two_gemms, calib_dir(6, 8, 0.5f, 1.0f, 2));
    char *d = tf_tmpdir();
    uint32_t s = 8;
    for (int n = 0; n < 4; n++) {
        float x[4 * 36];
        for (int i = 0; i < 4 * 36; i++)
            x[i] = 2.0f * tf_rnd(&s);
        char name[32];
        snprintf(name, sizeof name, "%d.npy", n);
        tf_write_npy(d, name, NPY_F32, 4, (int64_t[]){1, 4, 6, 6}, x);
    }
    allocation_failures(dw_pw_relu6, d);
}

Test(ptq, bias_correction_adds_a_bias_removing_the_mean_weight_error)
{
    /* y = Gemm(x[1,4], w[2,4]) without bias; inputs have mean mu */
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[2] = {1, 4}, wd[2] = {2, 4}, yd[2] = {1, 2};
    float w[8] = {0.3f, -0.55f, 0.8f, 0.1f, -1.0f, 0.45f, 0.2f, 0.66f};
    ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 2, xd), *y = ir_tensor_new(g, "y", IR_F32, 2, yd);
    ir_tensor *in[2] = {x, ir_const_new(g, "w", IR_F32, 2, wd, w)};
    ir_node *fc = ir_node_new(g, IR_OP_GEMM, "fc", 2, in, 1, &y);
    ir_set_int(g, fc, "transB", 1);
    set_io(g, x, y);
    double mu[4] = {1.0, 2.0, -0.5, 3.0};
    q_layer_stats st = {.node = "fc", .groups = 1, .k = 4, .n = 10, .mean = mu};
    float lo[8] = {0}, hi[8];
    for (int i = 0; i < 8; i++)
        hi[i] = 4.0f;
    lo[x->id] = -1.0f;
    q_options o = {.wbits = 4, .abits = 8, .bias_correction = true, .n_stats = 1, .stats = &st};
    npu_err e;
    cr_assert_eq(q_quantize(g, lo, hi, &o, &e), NPU_OK, "%s", e.msg);
    const ir_node *q = ir_graph_find(g, "y:q")->producer;
    cr_assert_eq(q->n_inputs, 3, "a bias input was added");
    const int32_t *bias = q->inputs[2]->data;
    float xs = q->inputs[0]->quant->scale[0];
    for (int c = 0; c < 2; c++) {
        float amax = 0;
        for (int j = 0; j < 4; j++)
            amax = fmaxf(amax, fabsf(w[c * 4 + j]));
        float s = amax / 7.0f;
        cr_assert_float_eq(q->inputs[1]->quant->scale[c], s, 1e-9);
        double shift = 0;
        for (int j = 0; j < 4; j++)
            shift += ((double)s * roundf(w[c * 4 + j] / s) - w[c * 4 + j]) * mu[j];
        int32_t want = (int32_t)round(-shift / ((double)xs * s));
        cr_assert_neq(want, 0, "the case must need a correction");
        cr_assert_eq(bias[c], want, "channel %d: %d vs %d", c, bias[c], want);
    }
    ir_graph_free(g);
}
