/* Worker threads for the parts of one layer (npu_pool.h). A generation
 * counter hands out each call; every worker takes its own part number, so
 * which thread computes which outputs never depends on timing. */
#include "common/npu_pool.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

enum { POOL_MAX = 64 };

typedef struct pool_worker {
    npu_pool *pool;
    int part;
    pthread_t tid;
    bool started;
} pool_worker;

struct npu_pool {
    npu_alloc alloc;
    int threads;
    bool launched; /* the workers were started (some may have failed) */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t gen;  /* bumped per npu_pool_run */
    int pending;   /* started workers still on the current call */
    bool quit;
    npu_pool_fn fn;
    void *ud;
    pool_worker w[POOL_MAX];
};

static void *worker_main(void *arg)
{
    pool_worker *w = arg;
    npu_pool *p = w->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen)
            pthread_cond_wait(&p->go, &p->mu);
        if (p->quit)
            break;
        seen = p->gen;
        npu_pool_fn fn = p->fn;
        void *ud = p->ud;
        pthread_mutex_unlock(&p->mu);
        fn(ud, w->part, p->threads);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

npu_pool *npu_pool_new(int threads, npu_alloc alloc)
{
    npu_pool *p = npu_malloc(alloc, sizeof *p);
    if (!p)
        return NULL;
    memset(p, 0, sizeof *p);
    p->alloc = alloc;
    p->threads = threads < 1 ? 1 : threads > POOL_MAX ? POOL_MAX : threads;
    if (pthread_mutex_init(&p->mu, NULL)) {
        npu_free(alloc, p, sizeof *p);
        return NULL;
    }
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    return p;
}

int npu_pool_threads(const npu_pool *p)
{
    return p ? p->threads : 1;
}

static void launch(npu_pool *p)
{
    p->launched = true;
    for (int i = 1; i < p->threads; i++) {
        p->w[i] = (pool_worker){.pool = p, .part = i};
        p->w[i].started = pthread_create(&p->w[i].tid, NULL, worker_main, &p->w[i]) == 0;
    }
}

void npu_pool_run(npu_pool *p, npu_pool_fn fn, void *ud)
{
    if (!p || p->threads == 1) {
        fn(ud, 0, 1);
        return;
    }
    if (!p->launched)
        launch(p);
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ud = ud;
    p->pending = 0;
    for (int i = 1; i < p->threads; i++)
        p->pending += p->w[i].started;
    p->gen++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    fn(ud, 0, p->threads);
    for (int i = 1; i < p->threads; i++) /* parts whose worker did not start */
        if (!p->w[i].started)
            fn(ud, i, p->threads);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void npu_pool_free(npu_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->threads; i++)
        if (p->w[i].started)
            pthread_join(p->w[i].tid, NULL);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    npu_free(p->alloc, p, sizeof *p);
}
