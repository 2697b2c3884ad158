/* PTQ accuracy benchmark: float top-1 vs quantized top-1 (the reference
 * executor on the quantized graph, what `npuref MODEL.npub` runs) for
 * several quantization configurations, and calibration time against the
 * float reference time over the same calibration set.
 *
 *   ptq_accuracy MODEL.onnx CALIB_DIR TEST_X.npy TEST_Y.npy [-n N] CONFIG...
 *
 * CONFIG: '+'-separated tokens: w8 | w4, a4 (int4 activations; w4a4 = w4+a4), io4 (with a4:
 * int4 graph inputs and outputs too, instead of int8), p=P (the percentile), minmax | percentile | kl | mse,
 * bc (bias correction), cle, round (adaptive int4 rounding), gptq (GPTQ rounding of all
 * weights), gptq4 (of the int4 weights only), budget=DB
 * (mixed precision). Example: w4+mse+bc+round. Built and run by
 * bench/ptq_bench.sh.
 *
 * Calibration time (issue 5: at most 2x the float pass) is timed, best of
 * three, for the first configuration and for the int8 and W4A8 defaults
 * (npucc's: w8 | w4+gptq4, minmax, no other repair), marked "ok"/"OFF"
 * against 2.0; "ptq" is the whole q_ptq (with the weight rounding, which
 * GPTQ makes the larger part at W4A8) against the same float pass. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calib/dataset.h"
#include "common/npy.h"
#include "import/import.h"
#include "opt/opt.h"
#include "partition/partition.h"
#include "quantize/quantize.h"
#include "ref/ref.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const npu_err *e)
{
    fprintf(stderr, "ptq_accuracy: %s\n", e->msg);
    exit(1);
}

static ir_graph *clone(const void *buf, size_t n)
{
    ir_graph *g;
    npu_err e;
    if (ir_deserialize(buf, n, npu_alloc_default(), &g, &e) != NPU_OK)
        die(&e);
    return g;
}

/* Runs g over the first n test images: logits (n x nout) and top-1 in %. */
static double run_test(const ir_graph *g, const npy_array *x, const npy_array *y, int64_t n, float *logits)
{
    npu_err e;
    ref_ctx *rc = ref_ctx_new(g, npu_alloc_default(), &e);
    if (!rc)
        die(&e);
    int64_t per = ir_tensor_numel(g->inputs[0]), nout = ir_tensor_numel(g->outputs[0]);
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        const void *ins[1] = {(const float *)x->data + i * per};
        float *out = logits + i * nout;
        void *outs[1] = {out};
        if (ref_ctx_run(rc, ins, outs, &e) != NPU_OK)
            die(&e);
        int64_t best = 0;
        for (int64_t k = 1; k < nout; k++)
            best = out[k] > out[best] ? k : best;
        int64_t label = y->dtype == NPY_I64 ? ((const int64_t *)y->data)[i] : ((const int32_t *)y->data)[i];
        ok += best == label;
    }
    ref_ctx_free(rc);
    return 100.0 * (double)ok / (double)n;
}

static double sqnr(const float *f, const float *q, int64_t n)
{
    double s = 0, d = 0;
    for (int64_t i = 0; i < n; i++) {
        s += (double)f[i] * f[i];
        d += ((double)q[i] - f[i]) * ((double)q[i] - f[i]);
    }
    return q_sqnr_db(s, d);
}

/* Seconds of the float reference over the calibration set (same reader). */
static double float_calib_time(const ir_graph *g, const char *dir)
{
    npu_err e;
    const ir_tensor *in = g->inputs[0];
    cal_input_spec spec = {.name = in->name, .rank = in->rank, .dims = in->dims};
    cal_dataset *ds;
    if (cal_dataset_open(dir, &spec, npu_alloc_default(), &ds, &e) != NPU_OK)
        die(&e);
    ref_ctx *rc = ref_ctx_new(g, npu_alloc_default(), &e);
    float *out = malloc(ir_tensor_bytes(g->outputs[0]));
    double t0 = now();
    for (const float *x;;) {
        if (cal_dataset_next(ds, &x, &e) != NPU_OK)
            die(&e);
        if (!x)
            break;
        const void *ins[1] = {x};
        void *outs[1] = {out};
        if (ref_ctx_run(rc, ins, outs, &e) != NPU_OK)
            die(&e);
    }
    double t = now() - t0;
    free(out);
    ref_ctx_free(rc);
    cal_dataset_close(ds);
    return t;
}

/* The driver's defaults (src/driver/options.c) at 8 and 4 weight bits. */
static bool is_default(const q_ptq_options *o)
{
    q_rounding want4 = o->q.wbits == 4 ? Q_ROUND_GPTQ : Q_ROUND_NEAREST;
    return o->q.abits == 8 && o->range.method == CAL_MINMAX && !o->bias_correction && !o->cle &&
           o->accuracy_budget_db <= 0 && o->int8_rounding == Q_ROUND_NEAREST &&
           (o->q.wbits == 8 || o->int4_rounding == want4);
}

static bool parse_config(const char *cfg, q_ptq_options *o)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", cfg);
    for (char *t = strtok(buf, "+"); t; t = strtok(NULL, "+")) {
        if (!strcmp(t, "w8"))
            o->q.wbits = 8;
        else if (!strcmp(t, "w4"))
            o->q.wbits = 4;
        else if (!strcmp(t, "a4") || !strcmp(t, "w4a4")) /* int4 activations (as on a target declaring them) */
            o->q.abits = 4, o->q.wbits = t[0] == 'w' ? 4 : o->q.wbits, o->q.target_int4_acts = true;
        else if (!strcmp(t, "io4")) /* with a4: int4 graph inputs and outputs too */
            o->q.int4_io = true;
        else if (!strncmp(t, "p=", 2))
            o->range.percentile = atof(t + 2);
        else if (!strcmp(t, "minmax"))
            o->range.method = CAL_MINMAX;
        else if (!strcmp(t, "percentile"))
            o->range.method = CAL_PERCENTILE;
        else if (!strcmp(t, "kl"))
            o->range.method = CAL_KL;
        else if (!strcmp(t, "mse"))
            o->range.method = CAL_MSE;
        else if (!strcmp(t, "bc"))
            o->bias_correction = true;
        else if (!strcmp(t, "cle"))
            o->cle = true;
        else if (!strcmp(t, "round"))
            o->int4_rounding = Q_ROUND_ADAPTIVE;
        else if (!strcmp(t, "gptq")) /* GPTQ rounding of every weight, 8 and 4 bits */
            o->int4_rounding = o->int8_rounding = Q_ROUND_GPTQ;
        else if (!strcmp(t, "gptq4"))
            o->int4_rounding = Q_ROUND_GPTQ;
        else if (!strncmp(t, "budget=", 7))
            o->accuracy_budget_db = atof(t + 7);
        else
            return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: ptq_accuracy MODEL.onnx CALIB_DIR TEST_X.npy TEST_Y.npy [-n N] CONFIG...\n");
        return 2;
    }
    const char *model = argv[1], *calib = argv[2];
    npu_err e;
    npu_alloc a = npu_alloc_default();
    npy_array x, y;
    if (npy_read(argv[3], a, &x, &e) != NPU_OK || npy_read(argv[4], a, &y, &e) != NPU_OK)
        die(&e);
    int64_t n = x.dims[0];
    int first = 5;
    if (argc > 6 && !strcmp(argv[5], "-n")) {
        n = atoll(argv[6]) < n ? atoll(argv[6]) : n;
        first = 7;
    }
    ir_graph *g;
    if (imp_load_onnx(model, &(imp_options){0}, a, &g, &e) != NPU_OK)
        die(&e);
    opt_options oo = {0};
    part_caps caps = {.npu_supports = NULL};
    if (opt_run(g, &oo, &e) != NPU_OK || part_assign(g, &caps, &e) != NPU_OK)
        die(&e);
    void *ser;
    size_t ser_n;
    if (ir_serialize(g, a, &ser, &ser_n, &e) != NPU_OK)
        die(&e);
    const char *name = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    /* the machine is shared: the best of three runs */
    double tf = 1e30;
    for (int k = 0; k < 3; k++) {
        double t = float_calib_time(g, calib);
        tf = t < tf ? t : tf;
    }
    int64_t nout = ir_tensor_numel(g->outputs[0]);
    float *fl = malloc(sizeof(float) * (size_t)(n * nout)), *ql = malloc(sizeof(float) * (size_t)(n * nout));
    double f1 = run_test(g, &x, &y, n, fl);
    printf("%-16s %-26s top-1 %6.2f%%  (%lld test images; float reference over the calibration set %.3f s)\n",
           name, "float", f1, (long long)n, tf);
    int status = 0;
    for (int i = first; i < argc; i++) {
        q_ptq_options o = {.model = model, .calib_dir = calib, .range = {CAL_MINMAX, 99.99, 8},
                           .q = {.wbits = 8, .abits = 8}};
        if (!parse_config(argv[i], &o)) {
            fprintf(stderr, "ptq_accuracy: bad config '%s'\n", argv[i]);
            return 2;
        }
        ir_graph *q = clone(ser, ser_n);
        q_ptq_result r = {0};
        double best = 1e30;
        bool timed = i == first || is_default(&o);
        for (int k = 0; timed && k < 2; k++) { /* calibration time, best of three */
            ir_graph *t = clone(ser, ser_n);
            if (q_ptq(t, &o, &r, &e) == NPU_OK && r.calib_seconds < best)
                best = r.calib_seconds;
            ir_graph_free(t);
        }
        double t0 = now();
        if (q_ptq(q, &o, &r, &e) != NPU_OK) {
            printf("%-16s %-26s FAILED: %s\n", name, argv[i], e.msg);
            status = 1;
            ir_graph_free(q);
            continue;
        }
        r.calib_seconds = best < r.calib_seconds ? best : r.calib_seconds;
        double tq = now() - t0;
        double q1 = run_test(q, &x, &y, n, ql);
        /* issue 5: int8 within 0.3 points of float, W4A8 within 1.0 */
        double bound = o.q.wbits == 8 ? 0.3 : 1.0;
        const char *verdict = o.q.abits == 4 ? "a4" : fabs(q1 - f1) <= bound ? "ok" : "OFF"; /* no bound for A4 */
        double ratio = r.calib_seconds / (tf > 0 ? tf : 1e-9);
        char timing[96] = "";
        if (timed)
            snprintf(timing, sizeof timing, " = %.2fx float %s%s", ratio, ratio <= 2.0 ? "ok" : "OFF",
                     is_default(&o) ? (o.q.wbits == 8 ? " (int8 default)" : " (W4A8 default)") : "");
        printf("%-16s %-26s top-1 %6.2f%%  (%+.2f %s)  logits SQNR %6.2f dB  calibration %.3f s%s, "
               "ptq %.3f s = %.2fx float\n",
               name, argv[i], q1, q1 - f1, verdict, sqnr(fl, ql, n * nout), r.calib_seconds, timing, tq,
               tq / (tf > 0 ? tf : 1e-9));
        fflush(stdout);
        ir_graph_free(q);
    }
    free(fl);
    free(ql);
    npu_free(a, ser, ser_n);
    ir_graph_free(g);
    npy_free(a, &x);
    npy_free(a, &y);
    return status;
}
