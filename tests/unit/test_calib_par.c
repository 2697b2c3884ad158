/* Calibration's float pass on contexts side by side (src/quantize/calib_par.c):
 * the same ranges, bit for bit, as one context over the samples in order,
 * for any worker count; allocation failures reported, nothing leaked. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <string.h>

#include "tests/support/calibfiles.h"
#include "tests/support/testgraph.h"
#include "quantize/quantize_internal.h"

enum { K = 12, N = 5, SAMPLES = 7 };

/* x[1, K] -> Gemm -> Relu -> y[1, N] */
static ir_graph *gemm_relu(npu_alloc a)
{
    ir_graph *g = ir_graph_new(a);
    float w[N * K], b[N];
    uint32_t s = 5;
    for (int i = 0; i < N * K; i++)
        w[i] = tf_rnd(&s);
    for (int i = 0; i < N; i++)
        b[i] = 0.1f * tf_rnd(&s);
    ir_tensor *x = tg_tensor(g, "x", IR_F32, 2, (int64_t[]){1, K});
    ir_tensor *h = tg_tensor(g, "h", IR_F32, 2, (int64_t[]){1, N});
    ir_tensor *y = tg_tensor(g, "y", IR_F32, 2, (int64_t[]){1, N});
    ir_tensor *in[3] = {x, tg_const(g, "w", IR_F32, 2, (int64_t[]){N, K}, w),
                        tg_const(g, "b", IR_F32, 1, (int64_t[]){N}, b)};
    ir_set_int(g, ir_node_new(g, IR_OP_GEMM, "gemm", 3, in, 1, &h), "transB", 1);
    ir_node_new(g, IR_OP_RELU, "relu", 1, &h, 1, &y);
    tg_set_io(g, 1, &x, y);
    return g;
}

/* Samples of different scales: the largest is sample 5, the most negative
 * sample 4, so that with 2 or 3 workers the extremes come from a worker
 * other than the first (a merge that lost one would change the ranges). */
static const char *calib_set(void)
{
    static const float scale[SAMPLES] = {1.0f, 1.5f, 0.5f, 2.0f, -3.0f, 4.0f, 2.5f};
    char *d = tf_tmpdir();
    uint32_t s = 9;
    for (int n = 0; n < SAMPLES; n++) {
        float x[K];
        for (int i = 0; i < K; i++)
            x[i] = scale[n] * (0.5f + 0.5f * tf_rnd(&s));
        char name[32];
        snprintf(name, sizeof name, "%d.npy", n);
        tf_write_npy(d, name, NPY_F32, 2, (int64_t[]){1, K}, x);
    }
    return d;
}

static cal_dataset *open_set(const char *dir, npu_alloc a)
{
    cal_input_spec spec = {"x", 2, (int64_t[]){1, K}, NULL, 0};
    cal_dataset *ds = NULL;
    npu_err e = {0};
    cr_assert_eq(cal_dataset_open(dir, &spec, a, &ds, &e), NPU_OK, "%s", e.msg);
    return ds;
}

/* Every tensor's range with one context, the samples in order. */
static void ranges_in_order(ir_graph *g, const char *dir, float *lo, float *hi)
{
    npu_err e = {0};
    q_calib *qc = q_calib_new(g, g->alloc, &e);
    ref_ctx *ctx = ref_ctx_new(g, g->alloc, &e);
    cr_assert(qc && ctx, "%s", e.msg);
    q_calib_set_range_only(qc, true);
    cal_dataset *ds = open_set(dir, g->alloc);
    for (const float *x = NULL;;) {
        cr_assert_eq(cal_dataset_next(ds, &x, &e), NPU_OK, "%s", e.msg);
        if (!x)
            break;
        cr_assert_eq(q_calib_run(qc, ctx, (const void *const[]){x}, &e), NPU_OK, "%s", e.msg);
    }
    cr_assert_eq(q_calib_samples(qc), SAMPLES);
    cal_range_opts ro = {CAL_MINMAX, 99.99, 8};
    q_calib_ranges(qc, &ro, lo, hi);
    cal_dataset_close(ds);
    ref_ctx_free(ctx);
    q_calib_free(qc);
}

Test(calib_par, the_ranges_of_one_context_in_order_for_any_worker_count)
{
    const char *dir = calib_set();
    ir_graph *g = gemm_relu(npu_alloc_default());
    float lo0[16], hi0[16];
    cr_assert(g->n_tensors <= 16);
    ranges_in_order(g, dir, lo0, hi0);
    cr_assert(hi0[g->outputs[0]->id] > 0.0f); /* not a degenerate set */
    for (int threads = 2; threads <= 9; threads++) {
        npu_err e = {0};
        q_calib *qc = q_calib_new(g, g->alloc, &e);
        q_calib_set_range_only(qc, true);
        cr_assert(q_calib_par_fits(g, qc, threads, SAMPLES));
        cal_dataset *ds = open_set(dir, g->alloc);
        cr_assert_eq(q_calib_par_pass(g, ds, qc, threads, NULL, NULL, &e), NPU_OK, "%s", e.msg);
        cr_assert_eq(q_calib_samples(qc), SAMPLES, "%d workers", threads);
        float lo[16], hi[16];
        cal_range_opts ro = {CAL_MINMAX, 99.99, 8};
        q_calib_ranges(qc, &ro, lo, hi);
        cr_assert(!memcmp(lo, lo0, sizeof(float) * (size_t)g->n_tensors) &&
                      !memcmp(hi, hi0, sizeof(float) * (size_t)g->n_tensors),
                  "%d workers: ranges differ from one context's", threads);
        cal_dataset_close(ds);
        q_calib_free(qc);
    }
    ir_graph_free(g);
}

static void no_tap(void *ud, const ir_node *n, const ir_tensor *t, const void *data)
{
    (void)ud, (void)n, (void)t, (void)data;
}

Test(calib_par, only_statistics_that_merge_exactly)
{
    ir_graph *g = gemm_relu(npu_alloc_default());
    npu_err e = {0};
    q_calib *qc = q_calib_new(g, g->alloc, &e);
    cr_assert_not(q_calib_par_fits(g, qc, 4, SAMPLES), "histograms depend on the order of the samples");
    q_calib_set_range_only(qc, true);
    cr_assert(q_calib_par_fits(g, qc, 4, SAMPLES));
    cr_assert_not(q_calib_par_fits(g, qc, 1, SAMPLES));
    cr_assert_not(q_calib_par_fits(g, qc, 4, 1));
    q_calib_set_tap(qc, no_tap, NULL);
    cr_assert_not(q_calib_par_fits(g, qc, 4, SAMPLES), "a tap sees the samples in order");
    q_calib_free(qc);
    ir_graph_free(g);
}

Test(calib_par, every_allocation_failure_is_reported_and_leaks_nothing)
{
    const char *dir = calib_set();
    bool succeeded = false;
    for (size_t k = 1; !succeeded && k < 2000; k++) {
        npu_alloc_counter cnt = {0};
        npu_alloc a = npu_alloc_counting(&cnt);
        ir_graph *g = gemm_relu(a);
        cal_dataset *ds = open_set(dir, a);
        npu_err e = {0};
        q_calib *qc = q_calib_new(g, a, &e);
        cr_assert_not_null(qc);
        q_calib_set_range_only(qc, true);
        cnt.fail_at = cnt.count + k;
        npu_status st = q_calib_par_pass(g, ds, qc, 3, NULL, NULL, &e);
        if (st == NPU_OK)
            succeeded = true;
        else
            cr_assert(st == NPU_EINTERNAL && strstr(e.msg, "out of memory"), "allocation %zu: '%s'", k, e.msg);
        cnt.fail_at = 0;
        q_calib_free(qc);
        cal_dataset_close(ds);
        ir_graph_free(g);
        cr_assert_eq(cnt.live_bytes, 0, "allocation %zu: %zu bytes leaked", k, cnt.live_bytes);
    }
    cr_assert(succeeded);
}
