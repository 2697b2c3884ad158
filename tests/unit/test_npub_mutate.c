/* 1,000 mutants of the GRAPH section of a compiled model (examples/fmnist),
 * CRCs recomputed so that only the re-check of the stored graph stands
 * between each mutant and the reference kernels (src/ref/ref_check.c). Each
 * is either rejected with an error naming the graph section and a byte, or
 * runs; under ASan (make test-asan) any out-of-bounds access fails the run.
 * The same mutants go through the runtime's validation, which ignores the
 * graph section; mutants of the sections the device reads (tensors, steps,
 * params, IO, memory) go through npurt_open and, when accepted, npurt_run. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/compile.h"
#include "emit/emit.h"
#include "ref/ref.h"
#include "ref/ref_check.h"
#include "rt/npurt.h"

enum { N_MUTANTS = 1000 };

static const char *root(void)
{
    const char *r = getenv("NPUCC_ROOT");
    return r ? r : ".";
}

/* The example model compiled once per process into a temporary file. */
static void compile_example(void **buf, size_t *size)
{
    static char dir[64];
    strcpy(dir, "/tmp/npubmutXXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    char model[512], target[512], calib[512], out[128];
    snprintf(model, sizeof model, "%s/examples/fmnist/fmnist_cnn.onnx", root());
    snprintf(target, sizeof target, "%s/targets/edge-v1.yaml", root());
    snprintf(calib, sizeof calib, "%s/examples/fmnist/calib", root());
    snprintf(out, sizeof out, "%s/m.npub", dir);
    char *argv[] = {"npucc", "--target", target, "--calib", calib, "-o", out, model};
    drv_options o;
    npu_err e;
    npu_err_clear(&e);
    cr_assert_eq(drv_parse_args(8, argv, &o, &e), NPU_OK, "%s", e.msg);
    FILE *null = fopen("/dev/null", "w");
    cr_assert_eq(drv_compile(&o, null, &e), NPU_OK, "%s", e.msg);
    fclose(null);
    npub_view v;
    cr_assert_eq(fmt_npub_read(out, npu_alloc_default(), buf, size, &v, &e), NPU_OK, "%s", e.msg);
    unlink(out);
    rmdir(dir);
}

static uint32_t rng(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static npub_section *section(uint8_t *blob, uint32_t kind)
{
    const npub_header *h = (const npub_header *)blob;
    npub_section *t = (npub_section *)(blob + h->section_table);
    for (uint32_t i = 0; i < h->section_count; i++)
        if (t[i].kind == kind)
            return &t[i];
    return NULL;
}

static void fix_crc(uint8_t *blob, npub_section *s)
{
    s->crc = npub_crc32(0, blob + s->offset, s->size);
}

/* One mutation of bytes [0, n) of sec: a random byte, one byte of a tensor's
 * dimension (the field the known overflow came through), a small step of a
 * dimension, or an interesting 32-bit value at a random place. */
static void mutate(uint8_t *sec, size_t n, const ir_serial_map *map, uint32_t *s)
{
    uint32_t kind = rng(s) % 10;
    if (kind < 3 || !map || !map->n_tensors) {
        sec[rng(s) % n] = (uint8_t)rng(s);
        return;
    }
    if (kind < 8) {
        /* tensor record: name length (u32), name, dtype, rank, flags, known, dims (i64) */
        size_t at = map->tensor_at[rng(s) % (uint32_t)map->n_tensors];
        uint32_t len;
        memcpy(&len, sec + at, 4);
        size_t dims = at + 4 + len + 4;
        uint8_t rank = sec[at + 4 + len + 1];
        if (!rank || dims + 8u * rank > n) {
            sec[at + 4 + len + rng(s) % 4] = (uint8_t)rng(s); /* dtype, rank, flags, known */
            return;
        }
        size_t d = dims + 8u * (rng(s) % rank);
        if (kind < 6) {
            sec[d + rng(s) % 2] = (uint8_t)rng(s);
        } else {
            int64_t v;
            memcpy(&v, sec + d, 8);
            v += rng(s) % 2 ? 1 : -1;
            memcpy(sec + d, &v, 8);
        }
        return;
    }
    static const uint32_t interesting[] = {0, 1, 2, 0xff, 0x7fffffffu, 0x80000000u, 0xffffffffu, 1024, 0x10000};
    if (n < 4)
        return;
    uint32_t v = interesting[rng(s) % (sizeof interesting / sizeof *interesting)];
    memcpy(sec + rng(s) % (n - 3), &v, 4);
}

typedef struct tally {
    int rejected, run_failed, ran;
} tally;

/* Loads the graph section of blob as npuref does and runs it once. */
static void run_graph(const uint8_t *blob, const npub_section *gs, tally *t)
{
    npu_alloc a = npu_alloc_default();
    ir_graph *g = NULL;
    npu_err e;
    npu_err_clear(&e);
    if (ref_load_graph_section(blob + gs->offset, gs->size, gs->offset, a, &g, &e) != NPU_OK) {
        cr_assert(strstr(e.msg, "graph section") && strstr(e.msg, "byte"), "no place in: %s", e.msg);
        t->rejected++;
        return;
    }
    void *ins[64] = {0}, *outs[64] = {0};
    cr_assert(g->n_inputs <= 64 && g->n_outputs <= 64);
    for (int i = 0; i < g->n_inputs; i++) {
        size_t nb = ir_tensor_bytes(g->inputs[i]);
        ins[i] = calloc(nb ? nb : 1, 1);
        cr_assert_not_null(ins[i]);
    }
    for (int i = 0; i < g->n_outputs; i++)
        outs[i] = malloc(ir_tensor_bytes(g->outputs[i]) + 1);
    ref_ctx *ctx = ref_ctx_new(g, a, &e);
    npu_status st = ctx ? ref_ctx_run(ctx, (const void *const *)ins, outs, &e) : e.code;
    cr_assert(st == NPU_OK || e.msg[0], "a failure without a message");
    if (st == NPU_OK)
        t->ran++;
    else
        t->run_failed++;
    ref_ctx_free(ctx);
    for (int i = 0; i < g->n_inputs; i++)
        free(ins[i]);
    for (int i = 0; i < g->n_outputs; i++)
        free(outs[i]);
    ir_graph_free(g);
}

Test(npub_mutate, graph_section_mutants_are_rejected_or_run, .timeout = 300)
{
    void *buf;
    size_t size;
    compile_example(&buf, &size);
    uint8_t *orig = buf, *m = malloc(size);
    npub_section *gs0 = section(orig, NPUB_SEC_GRAPH);
    cr_assert_not_null(gs0);
    ir_graph *g0;
    const ir_serial_map *map;
    npu_err e;
    cr_assert_eq(ir_deserialize_map(orig + gs0->offset, gs0->size, npu_alloc_default(), &g0, &map, &e), NPU_OK, "%s",
                 e.msg);
    cr_assert_eq(ref_check_graph(g0, map, gs0->offset, &e), NPU_OK, "the unmutated graph: %s", e.msg);
    tally t = {0};
    uint32_t seed = 19;
    for (int k = 0; k < N_MUTANTS; k++) {
        memcpy(m, orig, size);
        npub_section *gs = section(m, NPUB_SEC_GRAPH);
        mutate(m + gs->offset, gs->size, map, &seed);
        fix_crc(m, gs);
        run_graph(m, gs, &t);
        /* the device never reads the graph section: the file still opens */
        npub_view v;
        npub_error ne;
        cr_assert_eq(npurt_open(m, size, &v, &ne), 0, "mutant %d: %s", k, ne.msg);
    }
    ir_graph_free(g0);
    cr_log_info("graph mutants: %d rejected, %d failed at run time, %d ran", t.rejected, t.run_failed, t.ran);
    fprintf(stderr, "graph mutants: %d rejected, %d failed at run time, %d ran\n", t.rejected, t.run_failed, t.ran);
    cr_assert_eq(t.rejected + t.run_failed + t.ran, N_MUTANTS);
    cr_assert_gt(t.rejected, 0);
    cr_assert_gt(t.ran, 0);
    free(m);
    free(buf);
}

/* ---- the runtime ------------------------------------------------------------ */

static int stub_launch(void *ud, const npub_view *v, uint32_t first, uint32_t count, uint8_t *const region[4])
{
    (void)ud, (void)v, (void)first, (void)count, (void)region;
    return 0; /* the NPU's writes are the NPU model's business: host steps run on what is there */
}

/* Runs an accepted mutant's host steps natively in regions of the sizes the
 * binary asks for (when they are modest). */
static int run_device(const npub_view *v, npub_error *ne)
{
    npurt_env env = {.npu_launch = stub_launch};
    const npub_memory *mem = v->memory;
    uint64_t total = mem->scratch_bytes;
    for (int r = 0; r < NPUB_REGION_COUNT; r++)
        total += mem->region_bytes[r];
    if (total > (64u << 20))
        return 1; /* not run: more memory than a test should take */
    for (int r = NPUB_REGION_ARENA; r < NPUB_REGION_COUNT; r++) {
        env.region[r] = calloc(mem->region_bytes[r] ? mem->region_bytes[r] : 1, 1);
        env.region_size[r] = mem->region_bytes[r];
    }
    env.scratch = aligned_alloc(16, ((size_t)mem->scratch_bytes + 16) / 16 * 16);
    env.scratch_size = mem->scratch_bytes;
    int rc = npurt_run(v, &env, ne);
    for (int r = NPUB_REGION_ARENA; r < NPUB_REGION_COUNT; r++)
        free(env.region[r]);
    free(env.scratch);
    return rc ? 2 : 0;
}

Test(npub_mutate, device_section_mutants_are_rejected_or_run, .timeout = 300)
{
    void *buf;
    size_t size;
    compile_example(&buf, &size);
    uint8_t *orig = buf, *m = malloc(size);
    static const uint32_t kinds[] = {NPUB_SEC_TENSORS, NPUB_SEC_STEPS, NPUB_SEC_PARAMS, NPUB_SEC_IO,
                                     NPUB_SEC_MEMORY};
    int rejected = 0, failed = 0, ran = 0, skipped = 0;
    uint32_t seed = 20;
    for (int k = 0; k < N_MUTANTS; k++) {
        memcpy(m, orig, size);
        npub_section *s = section(m, kinds[k % 5]);
        if (!s || !s->size)
            continue;
        mutate(m + s->offset, s->size, NULL, &seed);
        fix_crc(m, s);
        npub_view v;
        npub_error ne;
        if (npurt_open(m, size, &v, &ne)) {
            cr_assert(strstr(ne.msg, "byte") || strstr(ne.msg, "step"), "no place in: %s", ne.msg);
            rejected++;
            continue;
        }
        int rc = run_device(&v, &ne);
        rc == 0 ? ran++ : rc == 1 ? skipped++ : failed++;
    }
    fprintf(stderr, "device mutants: %d rejected by npurt_open, %d failed in npurt_run, %d ran, %d too large to run\n",
            rejected, failed, ran, skipped);
    cr_assert_gt(rejected, 0);
    cr_assert_gt(ran, 0);
    free(m);
    free(buf);
}
