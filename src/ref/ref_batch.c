/* A batch of inferences on contexts side by side (ref_run_batch, ref.h):
 * each context takes a contiguous slice of the inferences; threads left
 * over split each context's large layers. Contexts are made (and every
 * buffer allocated) on the calling thread, so the allocator need not be
 * thread-safe. */
#include <pthread.h>
#include <string.h>

#include "ref/ref.h"

enum { BATCH_MAX_CTX = 64, BATCH_MAX_IO = 64 };

typedef struct batch_worker {
    ref_ctx *ctx;
    int64_t begin, end, failed; /* failed: the inference that failed, or -1 */
    ref_batch_io_fn io;
    void *ud;
    npu_status st;
    npu_err err;
    pthread_t tid;
    bool started;
} batch_worker;

static void *run_slice(void *arg)
{
    batch_worker *w = arg;
    for (int64_t k = w->begin; k < w->end; k++) {
        const void *ins[BATCH_MAX_IO];
        void *outs[BATCH_MAX_IO];
        w->io(w->ud, k, ins, outs);
        if ((w->st = ref_ctx_run(w->ctx, ins, outs, &w->err)) != NPU_OK) {
            w->failed = k;
            break;
        }
    }
    return NULL;
}

npu_status ref_run_batch(const ir_graph *g, npu_alloc alloc, int threads, int64_t runs, ref_batch_io_fn io,
                         void *ud, npu_err *err)
{
    if (runs <= 0)
        return NPU_OK;
    if (g->n_inputs > BATCH_MAX_IO || g->n_outputs > BATCH_MAX_IO)
        return npu_fail(err, NPU_EUSER, "more than %d graph inputs or outputs", BATCH_MAX_IO);
    int nc = threads < 1 ? 1 : threads > BATCH_MAX_CTX ? BATCH_MAX_CTX : threads;
    if (nc > runs)
        nc = (int)runs;
    static const batch_worker none;
    batch_worker w[BATCH_MAX_CTX];
    npu_status st = NPU_OK;
    for (int t = 0; t < nc; t++) {
        w[t] = none;
        w[t].begin = runs * t / nc;
        w[t].end = runs * (t + 1) / nc;
        w[t].failed = -1;
        w[t].io = io;
        w[t].ud = ud;
        /* threads beyond the contexts go to splitting layers */
        int inner = threads / nc + (t < threads % nc);
        if (st == NPU_OK && !(w[t].ctx = ref_ctx_new(g, alloc, err)))
            st = err->code;
        if (st == NPU_OK)
            st = ref_ctx_set_threads(w[t].ctx, inner, err);
    }
    for (int t = 1; st == NPU_OK && t < nc; t++)
        w[t].started = pthread_create(&w[t].tid, NULL, run_slice, &w[t]) == 0;
    if (st == NPU_OK) {
        run_slice(&w[0]);
        for (int t = 1; t < nc; t++)
            if (!w[t].started)
                run_slice(&w[t]); /* no thread: here, after the first slice */
    }
    int64_t first = -1;
    for (int t = 0; t < nc; t++) {
        if (w[t].started)
            pthread_join(w[t].tid, NULL);
        if (st == NPU_OK && w[t].failed >= 0 && (first < 0 || w[t].failed < first)) {
            first = w[t].failed;
            *err = w[t].err;
        }
        ref_ctx_free(w[t].ctx);
    }
    if (st == NPU_OK && first >= 0) {
        st = err->code;
        if (runs > 1)
            npu_err_prefix(err, "inference %lld", (long long)first);
    }
    return st;
}
