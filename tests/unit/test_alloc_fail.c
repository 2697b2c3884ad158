/* Allocation failures through a whole compile of the example model
 * (examples/fmnist, a few calibration samples): the allocation numbered N
 * fails, and every later one, for N covering every allocation site once
 * (a site: the call stack above the allocator) plus N spread evenly over
 * all of them. Each run must end with an out-of-memory error, nothing left
 * allocated through the hook, and no output file; under ASan (make
 * test-asan) no sanitizer report and no leak. libyaml and protobuf-c's
 * unpacking allocate outside the hook (libyaml has no allocator hook);
 * libpng's allocations go through it (calib/image_png.c). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver/compile.h"

enum { MAX_SITES = 4096, EVEN = 24, FRAMES = 3 };

static const char *root(void)
{
    const char *r = getenv("NPUCC_ROOT");
    return r ? r : ".";
}

static char dir[64], out_dir[128], calib[128], target[512], model[512], out[160];

static void setup(void)
{
    strcpy(dir, "/tmp/npuallocXXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(calib, sizeof calib, "%s/calib", dir);
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p %s %s && cp %s/examples/fmnist/calib/00[0-3].npy %s/", calib, out_dir, root(),
             calib);
    cr_assert_eq(system(cmd), 0);
    snprintf(target, sizeof target, "%s/targets/edge-v1.yaml", root());
    snprintf(model, sizeof model, "%s/examples/fmnist/fmnist_cnn.onnx", root());
    snprintf(out, sizeof out, "%s/m.npub", out_dir);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(alloc_fail, .init = setup, .fini = teardown);

static npu_status compile(npu_alloc a, npu_err *e)
{
    char *argv[] = {"npucc", "--target", target, "--calib", calib, "-o", out, model};
    drv_options o;
    npu_err_clear(e);
    cr_assert_eq(drv_parse_args(8, argv, &o, e), NPU_OK, "%s", e->msg);
    FILE *null = fopen("/dev/null", "w");
    npu_status st = drv_compile_alloc(&o, null, a, e);
    fclose(null);
    return st;
}

/* ---- finding the sites --------------------------------------------------------- */

typedef struct sites {
    size_t count;
    int n;
    uint64_t sig[MAX_SITES];
    size_t first[MAX_SITES]; /* the allocation number where each site first allocates */
} sites;

static uint64_t stack_sig(void)
{
    void *f[FRAMES + 2];
    int n = backtrace(f, FRAMES + 2);
    uint64_t h = 1469598103934665603ull;
    for (int i = 2; i < n; i++) /* above this hook and backtrace's own frame */
        h = (h ^ (uint64_t)(uintptr_t)f[i]) * 1099511628211ull;
    return h;
}

static void *discover_fn(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)osize;
    sites *s = ud;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    s->count++;
    uint64_t h = stack_sig();
    int i = 0;
    while (i < s->n && s->sig[i] != h)
        i++;
    if (i == s->n && s->n < MAX_SITES) {
        s->sig[s->n] = h;
        s->first[s->n++] = s->count;
    }
    return realloc(ptr, nsize);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static int files_in(const char *path)
{
    DIR *d = opendir(path);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(alloc_fail, every_site_of_a_full_compile_fails_cleanly, .timeout = 600)
{
    static sites s;
    memset(&s, 0, sizeof s);
    npu_err e;
    cr_assert_eq(compile((npu_alloc){discover_fn, &s}, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(files_in(out_dir), 1, "the compile writes its binary");
    unlink(out);
    cr_assert_lt(s.n, MAX_SITES, "more allocation sites than the test tracks");
    /* every site's first allocation, and N spread evenly over the whole compile */
    static size_t ns[MAX_SITES + EVEN];
    int k = 0;
    for (int i = 0; i < s.n; i++)
        ns[k++] = s.first[i];
    for (int i = 1; i <= EVEN; i++)
        ns[k++] = 1 + (s.count - 1) * (size_t)i / EVEN;
    qsort(ns, (size_t)k, sizeof *ns, cmp_size);
    int runs = 0, tolerated = 0;
    time_t t0 = time(NULL);
    for (int i = 0; i < k; i++) {
        if (i && ns[i] == ns[i - 1])
            continue;
        npu_alloc_counter c = {.fail_at = ns[i]};
        npu_status st = compile(npu_alloc_counting(&c), &e);
        runs++;
        cr_assert_eq(c.live_bytes, 0, "failing allocation %zu: %zu bytes left allocated", ns[i], c.live_bytes);
        if (st == NPU_OK) { /* a failure the compile could do without (a scratch buffer's fallback) */
            tolerated++;
            cr_assert_eq(files_in(out_dir), 1);
            unlink(out);
            continue;
        }
        cr_assert_eq(st, NPU_EINTERNAL, "failing allocation %zu: exit %d, not 3: %s", ns[i], (int)st, e.msg);
        cr_assert(strstr(e.msg, "out of memory"), "failing allocation %zu: not an out-of-memory error: %s", ns[i],
                  e.msg);
        cr_assert_eq(files_in(out_dir), 0, "failing allocation %zu left a file behind", ns[i]);
    }
    fprintf(stderr, "alloc sweep: %zu allocations, %d sites, %d runs (%d tolerated the failure), %lds\n", s.count,
            s.n, runs, tolerated, (long)(time(NULL) - t0));
}
