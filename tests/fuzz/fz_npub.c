/* A .npub through everything that reads one: the runtime's validation
 * (npurt_open: container, then every host-step record), the runtime itself
 * on what it accepted (host steps on the kernels, NPU steps stubbed), the
 * disassembler (npudis) and the loading of the graph npuref runs (running
 * it is fz_graph's job, on the section alone). The CRCs are repaired first
 * (fuzz_npub_fix_crcs) so mutants get past them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit.h"
#include "rt/npurt.h"
#include "target/target.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_npub.h"

enum { MAX_REGION = 16 << 20 };

static int no_npu(void *ud, const npub_view *v, uint32_t first, uint32_t count, uint8_t *const region[4])
{
    (void)ud, (void)v, (void)first, (void)count, (void)region;
    return 0;
}

static void run_runtime(const npub_view *v)
{
    npurt_env env = {.npu_launch = no_npu};
    int ok = v->memory->scratch_bytes <= MAX_REGION;
    for (int r = NPUB_REGION_ARENA; ok && r < NPUB_REGION_COUNT; r++) {
        uint32_t n = v->memory->region_bytes[r];
        ok = n <= MAX_REGION && (env.region[r] = calloc(1, n ? n : 1)) != NULL;
        env.region_size[r] = n;
    }
    if (ok && (env.scratch = calloc(1, v->memory->scratch_bytes + 16u)))
        env.scratch_size = v->memory->scratch_bytes;
    npub_error pe;
    if (ok && env.scratch && npurt_run(v, &env, &pe) != 0 && !pe.msg[0]) {
        fprintf(stderr, "fuzz: npurt_run failed without a message\n");
        abort();
    }
    for (int r = 0; r < NPUB_REGION_COUNT; r++)
        free(env.region[r]);
    free(env.scratch);
}

static void listing(const npub_view *v)
{
    static tgt_isa *isa;
    static FILE *sink;
    if (!isa) {
        char path[4096];
        snprintf(path, sizeof path, "%s/isa/npu-v1.yaml", fuzz_root());
        npu_err err;
        if (tgt_isa_load(path, NULL, &isa, &err) != NPU_OK) {
            fprintf(stderr, "fuzz: %s\n", err.msg);
            abort();
        }
        if (!(sink = fopen("/dev/null", "w")))
            abort();
    }
    npu_err err;
    npu_err_clear(&err);
    fuzz_check_err(emit_listing(v, isa, sink, &err), &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1); /* malloc: the 8-byte alignment npub_open asks for */
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    fuzz_npub_fix_crcs(buf, size);
    npub_view v;
    npub_error pe;
    memset(&pe, 0, sizeof pe);
    if (npurt_open(buf, size, &v, &pe) != 0) {
        if (!pe.msg[0]) {
            fprintf(stderr, "fuzz: npurt_open failed without a message\n");
            abort();
        }
        free(buf);
        return 0;
    }
    run_runtime(&v);
    listing(&v);
    if (v.graph) {
        fuzz_alloc fa;
        fuzz_run_graph(v.graph, v.graph_size, fuzz_alloc_hook(&fa, 256u << 20), 0);
        fuzz_alloc_done(&fa);
    }
    free(buf);
    return 0;
}
