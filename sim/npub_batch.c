/* A batch of inferences on parallel simulation contexts (npusim -j N). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "sim/npub_run.h"

enum { BATCH_MAX_IO = 64, BATCH_MAX_THREADS = 64 };

typedef struct worker {
    simrun *r;
    int64_t begin, end, failed; /* failed: the inference that failed, -1 none */
    simrun_io_fn io;
    void *ud;
    npu_status st;
    npu_err err;
    pthread_t tid;
    int started;
} worker;

static void *run_slice(void *arg)
{
    worker *w = arg;
    w->failed = -1;
    for (int64_t n = w->begin; n < w->end; n++) {
        const void *ins[BATCH_MAX_IO];
        void *outs[BATCH_MAX_IO];
        w->io(w->ud, n, ins, outs);
        if ((w->st = simrun_infer(w->r, ins, outs, &w->err)) != NPU_OK) {
            w->failed = n;
            break;
        }
    }
    return NULL;
}

int simrun_default_threads(void)
{
    const char *e = getenv("NPUCC_THREADS");
    char *end;
    long v = e ? strtol(e, &end, 10) : 0;
    if (e && *e && !*end && v > 0)
        return v > BATCH_MAX_THREADS ? BATCH_MAX_THREADS : (int)v;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > BATCH_MAX_THREADS ? BATCH_MAX_THREADS : (int)n);
}

static npu_status finish(worker *w, int nw, int64_t runs, npu_err *err)
{
    npu_status st = NPU_OK;
    for (int t = 0; t < nw; t++) {
        if (w[t].started)
            pthread_join(w[t].tid, NULL);
        if (st == NPU_OK && w[t].failed >= 0) {
            st = w[t].st;
            *err = w[t].err;
            if (runs > 1)
                npu_err_prefix(err, "inference %lld", (long long)w[t].failed);
        }
    }
    for (int t = 1; t < nw; t++) {
        if (st == NPU_OK)
            simrun_merge(w[0].r, w[t].r);
        simrun_free(w[t].r);
    }
    return st;
}

npu_status simrun_batch(simrun *r, const char *path, const simrun_options *o, int threads, int64_t runs,
                        simrun_io_fn io, void *ud, npu_err *err)
{
    if (runs <= 0)
        return NPU_OK;
    int nw = threads < 1 ? 1 : (threads > BATCH_MAX_THREADS ? BATCH_MAX_THREADS : threads);
    if (nw > runs)
        nw = (int)runs;
    worker w[BATCH_MAX_THREADS] = {{0}};
    simrun_options wo = *o;
    wo.trace = NULL; /* the trace is the first inference's: context 0 */
    npu_status st = NPU_OK;
    for (int t = 0; t < nw; t++) {
        w[t] = (worker){.r = t ? NULL : r, .begin = runs * t / nw, .end = runs * (t + 1) / nw, .failed = -1,
                        .io = io, .ud = ud};
        if (t && st == NPU_OK)
            st = simrun_open(path, &wo, &w[t].r, err);
    }
    /* threads left over (fewer inferences than threads) go inside the contexts */
    for (int t = 0; t < nw && st == NPU_OK && threads / nw > 1; t++)
        st = npu_model_set_threads(simrun_npu(w[t].r), threads / nw, err);
    if (st != NPU_OK) {
        for (int t = 1; t < nw; t++)
            simrun_free(w[t].r);
        return st;
    }
    for (int t = 1; t < nw; t++)
        if (!(w[t].started = pthread_create(&w[t].tid, NULL, run_slice, &w[t]) == 0))
            run_slice(&w[t]); /* no thread: run it here */
    run_slice(&w[0]);
    return finish(w, nw, runs, err);
}
