/* Support for the fuzz harnesses: a capped allocator and result checks. */
#include <stdio.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz.h"

static void *capped(void *ud, void *ptr, size_t osize, size_t nsize)
{
    fuzz_alloc *fa = ud;
    if (nsize == 0) {
        if (ptr) {
            fa->live -= osize;
            free(ptr);
        }
        return NULL;
    }
    size_t old = ptr ? osize : 0;
    if (nsize > fa->cap || fa->live - old > fa->cap - nsize)
        return NULL;
    void *p = realloc(ptr, nsize);
    if (p)
        fa->live = fa->live - old + nsize;
    return p;
}

npu_alloc fuzz_alloc_hook(fuzz_alloc *fa, size_t cap)
{
    fa->cap = cap;
    fa->live = 0;
    return (npu_alloc){capped, fa};
}

void fuzz_alloc_done(const fuzz_alloc *fa)
{
    if (fa->live) {
        fprintf(stderr, "fuzz: %zu bytes still allocated after the input\n", fa->live);
        abort();
    }
}

void fuzz_check_err(npu_status st, const npu_err *err)
{
    if (st == NPU_OK)
        return;
    if (st != NPU_EUSER && st != NPU_EUSAGE && st != NPU_EINTERNAL) {
        fprintf(stderr, "fuzz: status %d is not an npu_status\n", (int)st);
        abort();
    }
    if (!err->msg[0]) {
        fprintf(stderr, "fuzz: status %d with an empty message\n", (int)st);
        abort();
    }
}

#ifndef FUZZ_ROOT
#define FUZZ_ROOT "."
#endif

const char *fuzz_root(void)
{
    const char *r = getenv("NPUCC_ROOT");
    return r && *r ? r : FUZZ_ROOT;
}
