/* Post-training quantization from a calibration directory to the quantized
 * graph: the sequence the driver runs (docs/numerics.md, "Post-training
 * quantization"):
 *   1. --cle: per-channel maxima of clipped conv outputs, then equalization;
 *   2. one float pass over the set: histograms per tensor (and, for the
 *      weight repairs, input patch statistics per Conv/Gemm); minmax
 *      ranges alone on contexts side by side (calib_par.c);
 *   3. ranges; --accuracy-budget: the mixed-precision search;
 *   4. the rewrite; --report: float vs quantized on the set. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <string.h>
#include <time.h>

#include "common/npy.h"
#include "quantize/quantize_internal.h"
#include "kernels/nk_elem.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void progress(FILE *f, const char *what, int64_t done, int64_t total)
{
    if (!f || total <= 0)
        return;
    enum { WIDTH = 30 };
    int fill = (int)(WIDTH * done / total);
    fprintf(f, "\r%-12s [%.*s%*s] %lld/%lld", what, fill, "##############################", WIDTH - fill, "",
            (long long)done, (long long)total);
    if (done == total)
        fputc('\n', f);
    fflush(f);
}

/* Runs g over the whole set with an observer on every activation. */
/* The sample of input t: the dataset's floats as they are, or converted to
 * t's integer or bool dtype into buf (exact for the integers files hold). */
static const void *typed_input(const ir_tensor *t, const float *x, void *buf)
{
    static const int nk[IR_DTYPE_COUNT] = {[IR_F32] = NK_DT_F32 + 1, [IR_F16] = NK_DT_F16 + 1, [IR_I64] = NK_DT_I64 + 1,
                                           [IR_I32] = NK_DT_I32 + 1, [IR_I16] = NK_DT_I16 + 1,
                                           [IR_I8] = NK_DT_I8 + 1,   [IR_U8] = NK_DT_U8 + 1,
                                           [IR_BOOL] = NK_DT_BOOL + 1};
    if (!buf || (unsigned)t->dtype >= IR_DTYPE_COUNT || !nk[t->dtype])
        return x;
    nk_cast(NK_DT_F32, x, (nk_dtype)(nk[t->dtype] - 1), buf, ir_tensor_numel(t));
    return buf;
}

typedef struct progress_to {
    FILE *f;
    const char *what;
} progress_to;

static void progress_cb(void *ud, int64_t done, int64_t total)
{
    const progress_to *p = ud;
    progress(p->f, p->what, done, total);
}

static npu_status float_pass(ir_graph *g, cal_dataset *ds, ref_observer_fn fn, void *ud, q_calib *qc,
                             const q_ptq_options *o, const char *what, npu_err *err)
{
    enum { MAX_OUT = 16 };
    if (g->n_outputs > MAX_OUT)
        return npu_fail(err, NPU_EUSER, "calibration: more than %d graph outputs", MAX_OUT);
    int threads = ref_default_threads();
    if (qc && q_calib_par_fits(g, qc, threads, cal_dataset_count(ds))) {
        progress_to to = {o->progress, what};
        npu_status st = q_calib_par_pass(g, ds, qc, threads, progress_cb, &to, err);
        if (st != NPU_OK && o->progress)
            fputc('\n', o->progress); /* the error message starts on its own line */
        return st;
    }
    ref_ctx *rc = ref_ctx_new(g, g->alloc, err);
    if (!rc)
        return err->code;
    /* outputs are discarded (q_calib_run has its own) */
    void *outs[MAX_OUT] = {0};
    npu_status st = NPU_OK;
    for (int k = 0; !qc && st == NPU_OK && k < g->n_outputs; k++)
        if (!(outs[k] = npu_malloc(g->alloc, ir_tensor_bytes(g->outputs[k]) + 1)))
            st = npu_fail(err, NPU_EINTERNAL, "out of memory");
    void *typed[CAL_MAX_INPUTS] = {0}; /* integer and bool inputs, converted back from the dataset's floats */
    for (int k = 0; st == NPU_OK && k < g->n_inputs; k++)
        if (g->inputs[k]->dtype != IR_F32 &&
            !(typed[k] = npu_malloc(g->alloc, ir_tensor_bytes(g->inputs[k]) + 1)))
            st = npu_fail(err, NPU_EINTERNAL, "out of memory");
    int64_t total = cal_dataset_count(ds), done = 0;
    cal_dataset_rewind(ds);
    for (const float *xs[CAL_MAX_INPUTS] = {0}; st == NPU_OK;) {
        if ((st = cal_dataset_next_inputs(ds, xs, err)) != NPU_OK || !xs[0])
            break;
        const void *ins[CAL_MAX_INPUTS];
        for (int k = 0; k < g->n_inputs; k++)
            ins[k] = typed_input(g->inputs[k], xs[k], typed[k]);
        if (qc) {
            st = q_calib_run(qc, rc, ins, err);
        } else {
            for (int k = 0; k < g->n_inputs; k++)
                fn(ud, NULL, g->inputs[k], xs[k]);
            ref_ctx_set_observer(rc, fn, ud);
            st = ref_ctx_run(rc, ins, outs, err);
        }
        progress(o->progress, what, ++done, total);
    }
    if (st != NPU_OK && o->progress && done && done < total)
        fputc('\n', o->progress); /* the error message starts on its own line */
    for (int k = 0; k < g->n_outputs; k++)
        if (outs[k])
            npu_free(g->alloc, outs[k], ir_tensor_bytes(g->outputs[k]) + 1);
    for (int k = 0; k < g->n_inputs; k++)
        if (typed[k])
            npu_free(g->alloc, typed[k], ir_tensor_bytes(g->inputs[k]) + 1);
    ref_ctx_free(rc);
    return st;
}

/* ---- 1. cross-layer equalization ---- */

typedef struct chan_max_ctx {
    const ir_graph *g;
    float **max; /* per tensor id: per-channel maxima, for outputs of clipped convs */
} chan_max_ctx;

static void observe_chan_max(void *ud, const ir_node *n, const ir_tensor *t, const void *data)
{
    chan_max_ctx *c = ud;
    if (!n || t->id >= c->g->n_tensors || !c->max[t->id])
        return;
    const float *x = data;
    int64_t ch = t->dims[1], inner = ir_tensor_numel(t) / (t->dims[0] * ch);
    for (int64_t i = 0, total = ir_tensor_numel(t); i < total; i++) {
        float *m = &c->max[t->id][(i / inner) % ch];
        *m = x[i] > *m ? x[i] : *m;
    }
}

static npu_status run_cle(ir_graph *g, cal_dataset *ds, const q_ptq_options *o, npu_err *err)
{
    size_t nt = (size_t)g->n_tensors;
    chan_max_ctx c = {g, npu_malloc(g->alloc, sizeof(float *) * nt)};
    if (!c.max)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    memset(c.max, 0, sizeof(float *) * nt);
    bool need = false;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        const ir_tensor *y = n->outputs[0];
        if (n->dead || n->op != IR_OP_CONV || n->act.kind != IR_ACT_CLIP || y->rank < 2)
            continue;
        c.max[y->id] = npu_arena_alloc(g->arena, sizeof(float) * (size_t)y->dims[1]);
        if (!c.max[y->id]) {
            npu_free(g->alloc, c.max, sizeof(float *) * nt);
            return npu_fail(err, NPU_EINTERNAL, "out of memory");
        }
        for (int64_t k = 0; k < y->dims[1]; k++)
            c.max[y->id][k] = -INFINITY;
        need = true;
    }
    npu_status st = need ? float_pass(g, ds, observe_chan_max, &c, NULL, o, "equalizing", err) : NPU_OK;
    if (st == NPU_OK)
        q_cle_apply(g, c.max, 4);
    npu_free(g->alloc, c.max, sizeof(float *) * nt);
    return st;
}

/* ---- the whole sequence ---- */

typedef struct ptq_state {
    cal_dataset *ds;
    q_calib *qc;
    q_lstats *ls;
    float *lo, *hi;
    size_t nt;
    void *ser;          /* the float graph (after CLE), for the report and mixed precision */
    size_t ser_size;
    ir_graph *float_copy;
    q_mixed_out mixed;
    q_prec_out prec;
    q_layer_bits *bits;
} ptq_state;

static void state_free(ptq_state *s, npu_alloc a, int n_bits)
{
    npu_free(a, s->lo, sizeof(float) * s->nt);
    npu_free(a, s->hi, sizeof(float) * s->nt);
    npu_free(a, s->ser, s->ser_size);
    npu_free(a, s->bits, sizeof *s->bits * (size_t)(n_bits ? n_bits : 1));
    ir_graph_free(s->float_copy);
    q_mixed_free(&s->mixed, a);
    q_prec_free(&s->prec, a);
    q_lstats_free(s->ls);
    q_calib_free(s->qc);
    cal_dataset_close(s->ds);
}

static npu_status calibrate(ir_graph *g, ptq_state *s, const q_ptq_options *o, q_ptq_result *res, npu_err *err)
{
    /* second moments only for weights that will be rounded by them: npucc
     * always asks GPTQ for int4, which an all-int8 compile never uses */
    bool any4 = o->q.wbits == 4 || o->precision_auto;
    for (int i = 0; i < o->q.n_layer_bits; i++)
        any4 |= o->q.layer_bits[i].wbits == 4;
    bool gram = (any4 && o->int4_rounding != Q_ROUND_NEAREST) || o->int8_rounding != Q_ROUND_NEAREST;
    bool stats = o->bias_correction || gram;
    double t0 = now();
    if (!(s->qc = q_calib_new(g, g->alloc, err)))
        return err->code;
    q_calib_set_range_only(s->qc, o->range.method == CAL_MINMAX);
    if (stats) {
        if (!(s->ls = q_lstats_new(g, gram, o->bias_correction, cal_dataset_count(s->ds), g->alloc, err)))
            return err->code;
        q_calib_set_tap(s->qc, q_lstats_observe, s->ls);
    }
    npu_status st = float_pass(g, s->ds, NULL, NULL, s->qc, o, "calibrating", err);
    if (st != NPU_OK)
        return st;
    if (s->ls)
        q_lstats_finish(s->ls);
    s->nt = (size_t)g->n_tensors;
    s->lo = npu_malloc(g->alloc, sizeof(float) * s->nt);
    s->hi = npu_malloc(g->alloc, sizeof(float) * s->nt);
    if (!s->lo || !s->hi)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    cal_range_opts ro = o->range;
    ro.bits = o->q.abits;
    q_calib_ranges(s->qc, &ro, s->lo, s->hi);
    if (o->q.abits == 4 && !o->q.int4_io) {
        /* int8 graph inputs and outputs: ranges chosen for 8 bits (a 4-bit
         * clip of the logits would tie the largest ones) */
        ro.bits = 8;
        for (int k = 0; k < g->n_inputs + g->n_outputs; k++) {
            int id = (k < g->n_inputs ? g->inputs[k] : g->outputs[k - g->n_inputs])->id;
            q_calib_range(s->qc, id, &ro, &s->lo[id], &s->hi[id]);
        }
    }
    if (res) {
        res->samples = (int64_t)q_calib_samples(s->qc);
        res->calib_seconds = now() - t0;
    }
    return NPU_OK;
}

/* The user's --layer-bits, then a search's choices (names from g, which the rewrite keeps). */
static npu_status add_bits(ir_graph *g, ptq_state *s, q_options *qo, const q_layer_bits *more, int n, npu_err *err)
{
    int nb = qo->n_layer_bits + n;
    if (!(s->bits = npu_malloc(g->alloc, sizeof *s->bits * (size_t)(nb ? nb : 1))))
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    for (int i = 0; i < qo->n_layer_bits; i++)
        s->bits[i] = qo->layer_bits[i];
    for (int i = 0; i < n; i++)
        s->bits[qo->n_layer_bits + i] = more[i];
    qo->layer_bits = s->bits;
    qo->n_layer_bits = nb;
    return NPU_OK;
}

npu_status q_ptq(ir_graph *g, const q_ptq_options *o, q_ptq_result *res, npu_err *err)
{
    const char *model = o->model ? o->model : "model";
    if (res)
        memset(res, 0, sizeof *res);
    if (!o->calib_dir)
        return npu_fail(err, NPU_EUSER, "%s: quantizing needs a calibration set (--calib DIR)", model);
    if (g->n_inputs == 0)
        return NPU_OK; /* no inputs: every tensor is a constant, nothing to calibrate or quantize */
    if (g->n_inputs > CAL_MAX_INPUTS)
        return npu_fail(err, NPU_EUSER, "%s: calibration takes 1 to %d inputs (the model has %d)", model,
                        CAL_MAX_INPUTS, g->n_inputs);
    cal_input_spec specs[CAL_MAX_INPUTS];
    for (int k = 0; k < g->n_inputs; k++) {
        const ir_tensor *in = g->inputs[k];
        if (in->dtype != IR_F32 && in->dtype != IR_F16 && in->dtype != IR_I64 && in->dtype != IR_I32 && in->dtype != IR_I16 &&
            in->dtype != IR_I8 && in->dtype != IR_U8 && in->dtype != IR_BOOL)
            return npu_fail(err, NPU_EUSER, "%s: input '%s' is %s: calibration takes float, integer and bool "
                            "inputs", model, in->name, ir_dtype_name(in->dtype));
        /* an int8/uint8-typed input calibrates on its codes (.npy of its dtype) */
        int codes = in->dtype == IR_I8 ? NPY_I8 : in->dtype == IR_U8 ? NPY_U8 : NPY_F32;
        specs[k] = (cal_input_spec){in->name, in->rank, in->dims, NULL, codes};
    }
    npu_status bits_st = q_check_bits(&o->q, err);
    if (bits_st != NPU_OK)
        return bits_st;
    if (o->precision_auto && q_ptq_precision_check(o, model, err) != NPU_OK)
        return err->code;
    if (o->accuracy_budget_db > 0 && o->q.wbits != 4)
        return npu_fail(err, NPU_EUSER, "%s: --accuracy-budget chooses which layers keep 8 of 4 weight bits: "
                        "it needs --wbits 4", model);
    ptq_state s = {0};
    q_options qo = o->q;
    npu_status st = cal_dataset_open_inputs(o->calib_dir, specs, g->n_inputs, &o->read, g->alloc, &s.ds, err);
    if (st == NPU_OK && o->cle)
        st = run_cle(g, s.ds, o, err);
    if (st == NPU_OK)
        st = calibrate(g, &s, o, res, err);
    if (st == NPU_OK && s.ls) {
        qo.bias_correction = o->bias_correction;
        qo.int4_rounding = o->int4_rounding;
        qo.int8_rounding = o->int8_rounding;
        qo.n_stats = q_lstats_count(s.ls);
        qo.stats = q_lstats_items(s.ls);
    }
    bool mixed = o->accuracy_budget_db > 0;
    if (st == NPU_OK && (mixed || o->precision_auto || o->report))
        st = ir_serialize(g, g->alloc, &s.ser, &s.ser_size, err);
    q_mixed_in mi = {s.ser, s.ser_size, g, s.lo, s.hi, (int)s.nt, &qo, s.ds, o->accuracy_budget_db};
    if (st == NPU_OK && mixed)
        st = q_mixed_search(&mi, g->alloc, &s.mixed, err);
    if (st == NPU_OK && mixed)
        st = add_bits(g, &s, &qo, s.mixed.bits, s.mixed.n, err);
    if (st == NPU_OK && o->precision_auto)
        st = q_ptq_precision(&mi, o, &s.prec, err);
    if (st == NPU_OK && o->precision_auto)
        st = add_bits(g, &s, &qo, s.prec.bits, s.prec.n, err);
    /* names of kept layers point into g, which the rewrite keeps */
    if (st == NPU_OK)
        st = q_quantize(g, s.lo, s.hi, &qo, err);
    if (st == NPU_OK && o->report && res) {
        st = ir_deserialize(s.ser, s.ser_size, g->alloc, &s.float_copy, err);
        if (st == NPU_OK)
            st = q_report_compute(s.float_copy, g, s.ds, 0, g->alloc, &res->report, err);
        for (int i = 0; st == NPU_OK && i < res->report->n_layers; i++) {
            q_layer_sqnr *l = &res->report->layers[i];
            for (int k = 0; k < s.mixed.n; k++)
                if (!strcmp(s.mixed.bits[k].node, l->node))
                    l->why8 = npu_arena_strdup(g->arena, s.mixed.why[k]);
        }
        if (st == NPU_OK && mixed)
            res->report->budget_db = o->accuracy_budget_db;
        if (st == NPU_OK && o->precision_auto)
            st = q_prec_annotate(g, &s.prec, res->report, err);
    }
    state_free(&s, g->alloc, qo.n_layer_bits);
    return st;
}
