/* A small pool of worker threads that runs the parts of one large layer
 * side by side: npuref's (src/ref/ref.c) and the NPU model's convolutions
 * (sim/npu_exec.c) when a context has more threads than inferences. */
#ifndef NPU_COMMON_POOL_H
#define NPU_COMMON_POOL_H

#include "common/alloc.h"

typedef struct npu_pool npu_pool;

/* Part `part` of `parts`; the parts of one call touch disjoint outputs. */
typedef void (*npu_pool_fn)(void *ud, int part, int parts);

/* A pool for `threads` parts at a time (the caller's thread is one of them);
 * workers start on the first npu_pool_run. NULL when out of memory. */
npu_pool *npu_pool_new(int threads, npu_alloc alloc);
void npu_pool_free(npu_pool *p);
int npu_pool_threads(const npu_pool *p);

/* Runs fn for parts 0 .. threads-1 and returns when all are done. A worker
 * that could not start leaves its part to the caller: the result is the
 * same, only slower. */
void npu_pool_run(npu_pool *p, npu_pool_fn fn, void *ud);

#endif
