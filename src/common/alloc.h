/* Allocation hook and per-context arena.
 * Every allocation of a compile or a simulation goes through an npu_alloc,
 * so tests can fail the n-th allocation (see tests/unit/test_common.c),
 * and through an arena owned by the context, freed in one call. */
#ifndef NPU_ALLOC_H
#define NPU_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* lua_Alloc-style hook: nsize == 0 frees, otherwise (re)allocates.
 * Returns NULL on failure (and for a free). */
typedef void *(*npu_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);

typedef struct npu_alloc {
    npu_alloc_fn fn;
    void *ud;
} npu_alloc;

/* The default hook over malloc/realloc/free. */
npu_alloc npu_alloc_default(void);

void *npu_malloc(npu_alloc a, size_t size);
void *npu_realloc(npu_alloc a, void *ptr, size_t osize, size_t nsize);
void npu_free(npu_alloc a, void *ptr, size_t size);

/* A counting hook for tests: fails the allocation numbered fail_at
 * (1-based; 0 never fails) and every one after it. */
typedef struct npu_alloc_counter {
    size_t count;
    size_t fail_at;
    size_t live_bytes;
} npu_alloc_counter;
npu_alloc npu_alloc_counting(npu_alloc_counter *c);

/* The tools' allocator, for main: the default, or, with NPUCC_FAIL_ALLOC=N
 * in the environment, the counting hook over c failing allocation N and
 * every later one (0: none; the tools then print the count at exit, so a
 * test knows how many there are). false when the variable is not set. */
bool npu_alloc_from_env(npu_alloc *a, npu_alloc_counter *c);
/* "TOOL: N allocations, M bytes still live" on stderr when c is in use. */
void npu_alloc_report(const char *tool, const npu_alloc_counter *c, bool in_use);

typedef struct npu_arena npu_arena;

npu_arena *npu_arena_new(npu_alloc a);
void npu_arena_free(npu_arena *arena);
/* Zeroed, 16-byte aligned memory that lives until the arena is freed.
 * NULL when the hook fails. */
void *npu_arena_alloc(npu_arena *arena, size_t size);
/* Grows an arena array: copies osize bytes into a new block of nsize. */
void *npu_arena_grow(npu_arena *arena, void *ptr, size_t osize, size_t nsize);
char *npu_arena_strdup(npu_arena *arena, const char *s);
char *npu_arena_strndup(npu_arena *arena, const char *s, size_t n);
char *npu_arena_printf(npu_arena *arena, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
size_t npu_arena_used(const npu_arena *arena);

#endif
