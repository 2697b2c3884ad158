/* Memory-plan benchmark: for synthetic graphs and every ONNX model named on
 * the command line, the planned arena against the max-live lower bound and
 * against TFLite Micro's greedy planner (largest first, first fit) on the
 * same lifetimes; concat bytes copied with and without elision; and the
 * planning time of a 500-tensor graph. Prints PASS/FAIL per line against
 * the targets of issue 6; exits 1 when any line fails.
 *   memplan_bench [MODEL.onnx ...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "import/import.h"
#include "memplan/memplan.h"
#include "opt/opt.h"
#include "tests/support/memplan_graphs.h"

#define ALIGN 16

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* TFLite Micro's GreedyMemoryPlanner: buffers by size, largest first (ties
 * by first use), each at the lowest aligned offset free over its lifetime. */
typedef struct tflm_buf {
    int64_t size, offset;
    int first, last;
} tflm_buf;

static int cmp_tflm(const void *a, const void *b)
{
    const tflm_buf *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return (x->first > y->first) - (x->first < y->first);
}

static int64_t tflm_greedy(tflm_buf *b, int n)
{
    qsort(b, (size_t)n, sizeof *b, cmp_tflm);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        int64_t off = 0;
        for (bool moved = true; moved;) {
            moved = false;
            for (int j = 0; j < i; j++) {
                bool time = b[j].first <= b[i].last && b[i].first <= b[j].last;
                if (time && off < b[j].offset + b[j].size && b[j].offset < off + b[i].size) {
                    off = (b[j].offset + b[j].size + ALIGN - 1) / ALIGN * ALIGN;
                    moved = true;
                }
            }
        }
        b[i].offset = off;
        if (off + b[i].size > total)
            total = off + b[i].size;
    }
    return total;
}

/* The arena roots of a plan, with their lifetimes, as the baseline's input. */
static int64_t greedy_on_plan(const mp_plan *p)
{
    tflm_buf *b = malloc(sizeof *b * (size_t)(p->n_tensors + 1));
    int n = 0;
    for (int t = 0; t < p->n_tensors; t++) {
        const mp_tensor *m = &p->t[t];
        if (m->region == NPUB_REGION_ARENA && m->alias_of < 0 && m->first_pos >= 0)
            b[n++] = (tflm_buf){m->size, 0, m->first_pos, m->last_pos};
    }
    int64_t total = tflm_greedy(b, n);
    free(b);
    return total;
}

typedef struct result {
    int64_t arena, bound, greedy, plain_arena, copied, without;
    int tensors, concats, elided;
    double ms;
    bool checked;
} result;

static npu_status plan_one(ir_graph *g, result *r, npu_err *err)
{
    part_schedule s;
    npu_status st = part_schedule_build(g, &s, err);
    mp_options o = {.align = ALIGN}, plain = {.align = ALIGN, .no_elision = true};
    mp_plan p, q;
    double t0 = now_ms();
    if (st == NPU_OK)
        st = mp_plan_graph(g, &s, &o, &p, err);
    r->ms = now_ms() - t0;
    if (st == NPU_OK)
        st = mp_plan_graph(g, &s, &plain, &q, err);
    if (st != NPU_OK)
        return st;
    r->checked = mp_check(g, &p, err) == NPU_OK && mp_check(g, &q, err) == NPU_OK;
    r->arena = p.region_bytes[NPUB_REGION_ARENA];
    r->bound = p.arena_lower_bound;
    r->greedy = greedy_on_plan(&p);
    r->plain_arena = q.region_bytes[NPUB_REGION_ARENA];
    r->copied = p.concat_bytes_copied;
    r->without = p.concat_bytes_without_elision;
    r->tensors = p.n_tensors;
    r->concats = p.concats;
    r->elided = p.concats_elided;
    return NPU_OK;
}

static bool report(const char *name, const result *r)
{
    double ratio = r->bound ? (double)r->arena / (double)r->bound : 1.0;
    bool ok = r->checked && r->arena * 100 <= r->bound * 101 && r->arena <= r->greedy;
    printf("%-22s %7d %10lld %10lld %6.4f %10lld %10lld %5d/%-5d %10lld %10lld %8.1f  %s\n", name, r->tensors,
           (long long)r->arena, (long long)r->bound, ratio, (long long)r->greedy, (long long)r->plain_arena,
           r->elided, r->concats, (long long)r->copied, (long long)r->without, r->ms,
           ok ? "PASS" : r->checked ? "FAIL" : "FAIL (check)");
    return ok;
}

/* Activations as the quantizer leaves them (int8): the plan reads sizes only. */
static void as_int8(ir_graph *g)
{
    for (int t = 0; t < g->n_tensors; t++)
        if (!g->tensors[t]->data && g->tensors[t]->dtype == IR_F32)
            g->tensors[t]->dtype = IR_I8;
}

static bool run_model(const char *path)
{
    npu_err err;
    ir_graph *g = NULL;
    npu_status st = imp_load_onnx(path, NULL, npu_alloc_default(), &g, &err);
    if (st == NPU_OK)
        st = opt_run(g, NULL, &err);
    result r = {0};
    if (st == NPU_OK) {
        as_int8(g);
        st = plan_one(g, &r, &err);
    }
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    bool ok = st == NPU_OK && report(base, &r);
    if (st != NPU_OK)
        printf("%-22s FAIL: %s\n", base, err.msg);
    if (g)
        ir_graph_free(g);
    return ok;
}

static bool run_synthetic(int kind)
{
    static const char *names[] = {"chain-60", "residual-16", "inception-9", "densenet-3x6", "random-500"};
    ir_graph *g = ir_graph_new(npu_alloc_default());
    switch (kind) {
    case 0: mg_chain(g, 60, 16, 32); break;
    case 1: mg_residual(g, 16, 16, 32); break;
    case 2: mg_inception(g, 9, 128, 28); break;
    case 3: mg_densenet(g, 3, 6, 12, 32); break;
    default: mg_random(g, 500, 7); break;
    }
    result r = {0};
    npu_err err;
    bool ok = plan_one(g, &r, &err) == NPU_OK && report(names[kind], &r);
    ir_graph_free(g);
    return ok;
}

/* Best of several runs of the whole mp_plan_graph on a 500-tensor graph. */
static bool run_timing(void)
{
    double worst = 0;
    int tensors = 0;
    for (int seed = 1; seed <= 5; seed++) {
        ir_graph *g = ir_graph_new(npu_alloc_default());
        mg_random(g, 500, (uint32_t)seed);
        part_schedule s;
        mp_plan p;
        npu_err err;
        mp_options o = {.align = ALIGN};
        if (part_schedule_build(g, &s, &err) != NPU_OK)
            return false;
        double t0 = now_ms();
        npu_status st = mp_plan_graph(g, &s, &o, &p, &err);
        double ms = now_ms() - t0;
        tensors = g->n_tensors;
        ir_graph_free(g);
        if (st != NPU_OK)
            return false;
        /* the worst of the five graphs counts */
        if (ms > worst)
            worst = ms;
    }
    bool ok = worst < 100.0;
    printf("planning time, %d-tensor graphs (worst of 5 seeds): %.1f ms (target < 100 ms)  %s\n", tensors, worst,
           ok ? "PASS" : "FAIL");
    return ok;
}

int main(int argc, char **argv)
{
    printf("memplan: arena vs the max-live lower bound and TFLite Micro's greedy planner\n"
           "(int8 activations, %d-byte alignment, node-granularity lifetimes; targets: arena <= 1.01 x bound,\n"
           " arena <= greedy)\n\n",
           ALIGN);
    printf("%-22s %7s %10s %10s %6s %10s %10s %11s %10s %10s %8s\n", "graph", "tensors", "arena", "bound", "ratio",
           "tflm", "no-elision", "concats", "copied", "no-elis.", "ms");
    bool ok = true;
    for (int k = 0; k < 5; k++)
        ok &= run_synthetic(k);
    for (int i = 1; i < argc; i++)
        ok &= run_model(argv[i]);
    printf("\n");
    ok &= run_timing();
    return ok ? 0 : 1;
}
