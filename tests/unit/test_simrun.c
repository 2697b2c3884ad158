/* npusim's per-layer statistics (sim/npub_run.c): every layer names its op
 * type, and its bound (MACs at the array's peak, int4 ones at the int4 rate,
 * or bytes over DRAM) is a real lower bound of its measured cycles. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/compile.h"
#include "sim/npub_run.h"
#include "target/target.h"

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* Compiles the example model to a temporary .npub. */
static void compile_example(const char *wbits, char *out, size_t n)
{
    char model[1024], calib[1024], tmpl[] = "/tmp/npucc_simrun_XXXXXX";
    const char *root = env_or("NPUCC_ROOT", ".");
    snprintf(model, sizeof model, "%s/examples/fmnist/fmnist_cnn.onnx", root);
    snprintf(calib, sizeof calib, "%s/examples/fmnist/calib", root);
    cr_assert_not_null(mkdtemp(tmpl));
    snprintf(out, n, "%s/m.npub", tmpl);
    const char *argv[] = {"npucc", "--target", "edge-v1", "--calib", calib, "--wbits", wbits, "-o", out, model};
    drv_options o;
    npu_err e;
    cr_assert_eq(drv_parse_args((int)(sizeof argv / sizeof *argv), (char **)argv, &o, &e), NPU_OK, "%s", e.msg);
    FILE *sink = fopen("/dev/null", "w");
    cr_assert_eq(drv_compile(&o, sink, &e), NPU_OK, "%s", e.msg);
    fclose(sink);
}

static void run_and_check(const char *wbits, uint64_t *int4_bound_sum, uint64_t *macs_sum)
{
    char path[1100], fw[1024];
    compile_example(wbits, path, sizeof path);
    snprintf(fw, sizeof fw, "%s/fw/npurt.elf", env_or("NPUCC_BUILD", "build"));
    simrun_options so = {.firmware = fw};
    simrun *r;
    npu_err e;
    cr_assert_eq(simrun_open(path, &so, &r, &e), NPU_OK, "%s", e.msg);
    static float x[28 * 28];
    for (int i = 0; i < 28 * 28; i++)
        x[i] = (float)((i * 37) % 101) / 100.0f;
    static uint8_t y[4096];
    const void *in[1] = {x};
    void *out[1] = {y};
    cr_assert_eq(simrun_infer(r, in, out, &e), NPU_OK, "%s", e.msg);
    npu_stats s;
    simrun_stats(r, &s);
    int npu_layers = 0;
    *int4_bound_sum = *macs_sum = 0;
    for (int i = 0; i < s.n_layers; i++) {
        const npu_stats_layer *L = &s.layers[i];
        cr_assert(L->op && *L->op, "layer %s has an op type", L->name);
        if (strcmp(L->unit, "npu") != 0)
            continue;
        npu_layers++;
        cr_assert_leq(L->bound_cycles, L->cycles, "%s: bound %llu above its measured %llu cycles", L->name,
                      (unsigned long long)L->bound_cycles, (unsigned long long)L->cycles);
        if (L->macs || L->dram_bytes)
            cr_assert_gt(L->bound_cycles, 0, "%s: work but no bound", L->name);
        if (L->macs)
            cr_assert_geq(L->bound_cycles * (uint64_t)s.peak_macs_per_cycle * 2, L->macs,
                          "%s: the bound is at most the int4 rate's", L->name);
        *int4_bound_sum += L->bound_cycles;
        *macs_sum += L->macs;
    }
    cr_assert_gt(npu_layers, 2);
    /* the per-step host cycles: a host step's are its layer's; an NPU step's hold the NPU's wait */
    char *json = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&json, &len);
    npu_stats_write_json(&s, f);
    fclose(f);
    cr_assert(strstr(json, "\"steps\": ["), "%s", json);
    /* the first host step (the input quantize runs on the NPU; the output dequantize stays on the host) */
    int h = 0;
    while (h < s.n_layers && strcmp(s.layers[h].unit, "host") != 0)
        h++;
    cr_assert_lt(h, s.n_layers, "a host step");
    char want[128];
    snprintf(want, sizeof want, "\"kind\": \"host\", \"name\": \"%s\", \"op\": \"%s\", \"host_cycles\": %llu}",
             s.layers[h].name, s.layers[h].op, (unsigned long long)s.layers[h].cycles);
    cr_assert(strstr(json, want), "%s in %s", want, json);
    const char *np = strstr(json, "\"kind\": \"npu\"");
    cr_assert(np, "%s", json);
    unsigned long long npu_host = strtoull(strstr(np, "\"host_cycles\": ") + 15, NULL, 10);
    cr_assert_geq(npu_host, s.cycles_npu, "the step waits for its NPU job");
    free(json);
    simrun_free(r);
    unlink(path);
    *strrchr(path, '/') = 0;
    rmdir(path);
}

Test(simrun, layers_have_op_types_and_bounds_below_their_cycles)
{
    uint64_t b8, m8, b4, m4;
    run_and_check("8", &b8, &m8);
    run_and_check("4", &b4, &m4);
    cr_assert_eq(m8, m4, "the same MACs at both weight widths");
    /* edge-v1's array is twice as fast with int4 weights: the compute part
     * of the bound falls (DRAM-bound layers keep theirs) */
    cr_assert_lt(b4, b8, "int4 bound %llu below int8 bound %llu", (unsigned long long)b4, (unsigned long long)b8);
}
