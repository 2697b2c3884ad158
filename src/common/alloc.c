#include "common/alloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *default_fn(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
}

npu_alloc npu_alloc_default(void)
{
    return (npu_alloc){default_fn, NULL};
}

void *npu_malloc(npu_alloc a, size_t size)
{
    return size ? a.fn(a.ud, NULL, 0, size) : NULL;
}

void *npu_realloc(npu_alloc a, void *ptr, size_t osize, size_t nsize)
{
    return a.fn(a.ud, ptr, osize, nsize);
}

void npu_free(npu_alloc a, void *ptr, size_t size)
{
    if (ptr)
        a.fn(a.ud, ptr, size, 0);
}

static void *counting_fn(void *ud, void *ptr, size_t osize, size_t nsize)
{
    npu_alloc_counter *c = ud;
    if (nsize == 0) {
        if (ptr)
            c->live_bytes -= osize;
        free(ptr);
        return NULL;
    }
    c->count++;
    if (c->fail_at && c->count >= c->fail_at)
        return NULL;
    void *p = realloc(ptr, nsize);
    if (p)
        c->live_bytes += nsize - (ptr ? osize : 0);
    return p;
}

npu_alloc npu_alloc_counting(npu_alloc_counter *c)
{
    return (npu_alloc){counting_fn, c};
}

bool npu_alloc_from_env(npu_alloc *a, npu_alloc_counter *c)
{
    const char *v = getenv("NPUCC_FAIL_ALLOC");
    char *end;
    memset(c, 0, sizeof *c);
    *a = npu_alloc_default();
    if (!v || !*v)
        return false;
    unsigned long long n = strtoull(v, &end, 10);
    c->fail_at = *end ? 0 : (size_t)n; /* not a number: count only */
    *a = npu_alloc_counting(c);
    return true;
}

void npu_alloc_report(const char *tool, const npu_alloc_counter *c, bool in_use)
{
    if (in_use)
        fprintf(stderr, "%s: %zu allocations, %zu bytes still live\n", tool, c->count, c->live_bytes);
}

/* Blocks are chained; big requests get a block of their own. */
typedef struct arena_block {
    struct arena_block *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
} arena_block;

struct npu_arena {
    npu_alloc alloc;
    arena_block *head;
    size_t total_used;
};

enum { ARENA_BLOCK = 64 * 1024 };

npu_arena *npu_arena_new(npu_alloc a)
{
    npu_arena *arena = npu_malloc(a, sizeof *arena);
    if (!arena)
        return NULL;
    arena->alloc = a;
    arena->head = NULL;
    arena->total_used = 0;
    return arena;
}

void npu_arena_free(npu_arena *arena)
{
    if (!arena)
        return;
    arena_block *b = arena->head;
    while (b) {
        arena_block *next = b->next;
        npu_free(arena->alloc, b, sizeof *b + b->size);
        b = next;
    }
    npu_free(arena->alloc, arena, sizeof *arena);
}

void *npu_arena_alloc(npu_arena *arena, size_t size)
{
    size_t need = (size + 15) & ~(size_t)15;
    if (need < size)
        return NULL;
    arena_block *b = arena->head;
    if (!b || b->size - b->used < need) {
        size_t bsize = need > ARENA_BLOCK / 4 ? need : ARENA_BLOCK;
        arena_block *nb = npu_malloc(arena->alloc, sizeof *nb + bsize);
        if (!nb)
            return NULL;
        nb->size = bsize;
        nb->used = 0;
        if (b && bsize == need && b->size - b->used >= 1024) {
            /* keep the current block as the head: it still has room */
            nb->next = b->next;
            b->next = nb;
            nb->used = need;
            arena->total_used += need;
            memset(nb->data, 0, need);
            return nb->data;
        }
        nb->next = b;
        arena->head = b = nb;
    }
    void *p = b->data + b->used;
    b->used += need;
    arena->total_used += need;
    memset(p, 0, need);
    return p;
}

void *npu_arena_grow(npu_arena *arena, void *ptr, size_t osize, size_t nsize)
{
    void *p = npu_arena_alloc(arena, nsize);
    if (p && ptr)
        memcpy(p, ptr, osize < nsize ? osize : nsize);
    return p;
}

char *npu_arena_strndup(npu_arena *arena, const char *s, size_t n)
{
    char *p = npu_arena_alloc(arena, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *npu_arena_strdup(npu_arena *arena, const char *s)
{
    return npu_arena_strndup(arena, s, strlen(s));
}

char *npu_arena_printf(npu_arena *arena, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = npu_arena_alloc(arena, (size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

size_t npu_arena_used(const npu_arena *arena)
{
    return arena->total_used;
}
