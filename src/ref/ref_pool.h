/* Internal to src/ref/: a small pool of worker threads that runs the parts
 * of one large layer side by side (ref.c), and the default thread count. */
#ifndef NPU_REF_POOL_H
#define NPU_REF_POOL_H

#include "common/alloc.h"

typedef struct ref_pool ref_pool;

/* Part `part` of `parts`; the parts of one call touch disjoint outputs. */
typedef void (*ref_pool_fn)(void *ud, int part, int parts);

/* A pool for `threads` parts at a time (the caller's thread is one of them);
 * workers start on the first ref_pool_run. NULL when out of memory. */
ref_pool *ref_pool_new(int threads, npu_alloc alloc);
void ref_pool_free(ref_pool *p);
int ref_pool_threads(const ref_pool *p);

/* Runs fn for parts 0 .. threads-1 and returns when all are done. A worker
 * that could not start leaves its part to the caller: the result is the
 * same, only slower. */
void ref_pool_run(ref_pool *p, ref_pool_fn fn, void *ud);

#endif
