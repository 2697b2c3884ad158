/* Calibration's float pass on several contexts side by side.
 *
 * Each worker has its own reference context (one thread: a whole inference
 * each, where splitting one inference's layers across the threads paid
 * nothing on MobileNetV2-224) and its own statistics. Round by round the
 * calling thread reads the next sample for each worker (the dataset is read
 * in order, from one thread), the workers run them, and at the end their
 * statistics merge in worker order. Only statistics that merge exactly
 * take this path (q_calib_mergeable: minmax ranges; a minimum or maximum
 * does not depend on the order the samples came in, up to the sign of an
 * exact zero, which the quantization parameters do not see). Everything a
 * worker touches is allocated here, on the calling thread. */
#include <string.h>

#include "common/npu_pool.h"
#include "quantize/quantize_internal.h"

enum { PAR_MAX_WORKERS = 8, PAR_MAX_OUT = 16 };

typedef struct par_worker {
    ref_ctx *ctx;
    q_calib *qc;
    void *in[CAL_MAX_INPUTS];
    void *out[PAR_MAX_OUT];
    bool busy; /* a sample this round */
    npu_status st;
    npu_err err;
} par_worker;

typedef struct par_pass {
    const ir_graph *g;
    par_worker w[PAR_MAX_WORKERS];
    int n;
} par_pass;

static void run_worker(void *ud, int part, int parts)
{
    (void)parts;
    par_worker *w = &((par_pass *)ud)->w[part];
    if (w->busy)
        w->st = q_calib_run_into(w->qc, w->ctx, (const void *const *)w->in, w->out, &w->err);
}

static void free_pass(par_pass *p)
{
    for (int t = 0; t < p->n; t++) {
        par_worker *w = &p->w[t];
        ref_ctx_free(w->ctx);
        q_calib_free(w->qc);
        for (int k = 0; k < p->g->n_inputs; k++)
            npu_free(p->g->alloc, w->in[k], ir_tensor_bytes(p->g->inputs[k]));
        for (int k = 0; k < p->g->n_outputs; k++)
            npu_free(p->g->alloc, w->out[k], ir_tensor_bytes(p->g->outputs[k]) + 1);
    }
}

static npu_status new_worker(par_pass *p, par_worker *w, npu_err *err)
{
    memset(w, 0, sizeof *w);
    if (!(w->ctx = ref_ctx_new(p->g, p->g->alloc, err)) || ref_ctx_set_threads(w->ctx, 1, err) != NPU_OK ||
        !(w->qc = q_calib_new(p->g, p->g->alloc, err)))
        return err->code;
    q_calib_set_range_only(w->qc, true);
    for (int k = 0; k < p->g->n_inputs; k++)
        if (!(w->in[k] = npu_malloc(p->g->alloc, ir_tensor_bytes(p->g->inputs[k]))))
            return npu_fail(err, NPU_EINTERNAL, "out of memory");
    for (int k = 0; k < p->g->n_outputs; k++)
        if (!(w->out[k] = npu_malloc(p->g->alloc, ir_tensor_bytes(p->g->outputs[k]) + 1)))
            return npu_fail(err, NPU_EINTERNAL, "out of memory");
    return NPU_OK;
}

bool q_calib_par_fits(const ir_graph *g, const q_calib *qc, int threads, int64_t samples)
{
    if (threads < 2 || samples < 2 || !q_calib_mergeable(qc) || g->n_inputs > CAL_MAX_INPUTS ||
        g->n_outputs > PAR_MAX_OUT)
        return false;
    for (int k = 0; k < g->n_inputs; k++)
        if (g->inputs[k]->dtype != IR_F32) /* the dataset's floats as they are */
            return false;
    return true;
}

/* Reads the next sample into each worker; false when none was left. */
static npu_status next_round(par_pass *p, cal_dataset *ds, bool *any, npu_err *err)
{
    *any = false;
    for (int t = 0; t < p->n; t++)
        p->w[t].busy = false;
    for (int t = 0; t < p->n; t++) {
        par_worker *w = &p->w[t];
        const float *xs[CAL_MAX_INPUTS] = {0};
        npu_status st = cal_dataset_next_inputs(ds, xs, err);
        if (st != NPU_OK)
            return st;
        if (!xs[0])
            break;
        for (int k = 0; k < p->g->n_inputs; k++)
            memcpy(w->in[k], xs[k], ir_tensor_bytes(p->g->inputs[k]));
        w->busy = *any = true;
    }
    return NPU_OK;
}

npu_status q_calib_par_pass(const ir_graph *g, cal_dataset *ds, q_calib *qc, int threads, q_calib_progress_fn fn,
                            void *ud, npu_err *err)
{
    int64_t total = cal_dataset_count(ds), done = 0;
    par_pass p = {.g = g, .n = 0};
    int n = threads < PAR_MAX_WORKERS ? threads : PAR_MAX_WORKERS;
    if (total > 0 && n > total)
        n = (int)total;
    npu_status st = NPU_OK;
    for (; st == NPU_OK && p.n < n; p.n++)
        st = new_worker(&p, &p.w[p.n], err);
    npu_pool *pool = st == NPU_OK ? npu_pool_new(n, g->alloc) : NULL;
    if (st == NPU_OK && !pool)
        st = npu_fail(err, NPU_EINTERNAL, "out of memory");
    cal_dataset_rewind(ds);
    for (bool any = true; st == NPU_OK;) {
        if ((st = next_round(&p, ds, &any, err)) != NPU_OK || !any)
            break;
        npu_pool_run(pool, run_worker, &p);
        for (int t = 0; t < p.n && st == NPU_OK && p.w[t].busy; t++, done++)
            if ((st = p.w[t].st) != NPU_OK) /* the first failing sample's error, whatever the timing */
                *err = p.w[t].err;
        if (fn)
            fn(ud, done, total);
    }
    for (int t = 0; st == NPU_OK && t < p.n; t++)
        q_calib_merge(qc, p.w[t].qc);
    npu_pool_free(pool);
    free_pass(&p);
    return st;
}
