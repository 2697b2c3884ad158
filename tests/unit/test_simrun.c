/* npusim's per-layer statistics (sim/npub_run.c): every layer names its op
 * type, and its bound (MACs at the array's peak, int4 ones at the int4 rate,
 * or bytes over DRAM) is a real lower bound of its measured cycles. And the
 * NPU's region flash: the constants in flash, beside their DRAM copy. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/compile.h"
#include "sim/npub_run.h"
#include "target/target.h"
#include "tests/support/npurt_bin.h"

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

/* ---- region flash ------------------------------------------------------------ */

enum { FLASH_AT = 16, FLASH_BYTES = 32, N_CONSTS = 64 };

static uint8_t const_byte(int i)
{
    return (uint8_t)(i * 7 + 3);
}

static tgt_target *edge_v1(char *path, size_t n)
{
    snprintf(path, n, "%s/targets/edge-v1.yaml", env_or("NPUCC_ROOT", "."));
    tgt_target *t;
    npu_err e;
    cr_assert_eq(tgt_load(path, NULL, &t, &e), NPU_OK, "%s", e.msg);
    return t;
}

static size_t encode(const tgt_target *t, uint32_t *w, size_t n, const char *insn, const tgt_kv *kv, size_t nkv)
{
    size_t nw;
    npu_err e;
    cr_assert_eq(tgt_encode_named(t->isa, insn, kv, nkv, w + n, 64 - n, &nw, &e), NPU_OK, "%s", e.msg);
    return n + nw;
}

/* A dense DMA of FLASH_BYTES between region offset dram and SRAM 0. */
static size_t dma(const tgt_target *t, uint32_t *w, size_t n, const char *insn, int region, int64_t dram, int wait,
                  int signal)
{
    const tgt_kv kv[] = {{"ch", 0}, {"region", region}, {"dram", dram}, {"sram", 0}, {"c", 1}, {"h", 1},
                         {"w", FLASH_BYTES}, {"dram_hs", FLASH_BYTES}, {"dram_cs", FLASH_BYTES},
                         {"sram_hs", FLASH_BYTES}, {"sram_cs", FLASH_BYTES}, {"wait", wait}, {"signal", signal}};
    return encode(t, w, n, insn, kv, sizeof kv / sizeof *kv);
}

/* One NPU step: FLASH_BYTES from region flash at FLASH_AT to the output,
 * through SRAM; constants const_byte(i); one int8 input the step ignores. */
static void *flash_copy_binary(const tgt_target *t, size_t *size)
{
    uint32_t cmds[64];
    size_t n = dma(t, cmds, 0, "dma_load", TGT_REGION_FLASH, FLASH_AT, 0, 1);
    n = dma(t, cmds, n, "dma_store", TGT_REGION_OUTPUTS, 0, 1, 0);
    n = encode(t, cmds, n, "end", (const tgt_kv[]){{"wait", 0}}, 1);
    uint8_t consts[N_CONSTS];
    for (int i = 0; i < N_CONSTS; i++)
        consts[i] = const_byte(i);
    npub_tensor tensors[2] = {
        {.name = 1, .dtype = IR_I8, .rank = 1, .region = NPUB_REGION_INPUT, .dims = {16}, .size = 16,
         .alias_of = NPUB_NONE},
        {.name = 3, .dtype = IR_I8, .rank = 1, .region = NPUB_REGION_OUTPUT, .dims = {FLASH_BYTES},
         .size = FLASH_BYTES, .alias_of = NPUB_NONE},
    };
    npub_step step = {.kind = NPUB_STEP_NPU, .a = 0, .b = (uint32_t)n, .name = 1};
    uint32_t io[4] = {1, 1, 0, 1};
    npub_memory mem = {.region_bytes = {N_CONSTS, 0, 16, FLASH_BYTES}};
    fmt_section secs[] = {
        {NPUB_SEC_COMMANDS, cmds, n * 4},
        {NPUB_SEC_CONSTANTS, consts, sizeof consts},
        {NPUB_SEC_TENSORS, tensors, sizeof tensors},
        {NPUB_SEC_STEPS, &step, sizeof step},
        {NPUB_SEC_IO, io, sizeof io},
        {NPUB_SEC_STRINGS, "\0x\0y", 5}, /* "", "x", "y" */
        {NPUB_SEC_MEMORY, &mem, sizeof mem},
    };
    void *bin;
    npu_err e;
    cr_assert_eq(fmt_npub_assemble("edge-v1", t->hash, 0, secs, 7, npu_alloc_default(), &bin, size, &e), NPU_OK,
                 "%s", e.msg);
    return bin;
}

static void expect_constants(const int8_t *y)
{
    for (int i = 0; i < FLASH_BYTES; i++)
        cr_assert_eq((uint8_t)y[i], const_byte(FLASH_AT + i), "output byte %d: 0x%02x, constant %d is 0x%02x", i,
                     (uint8_t)y[i], FLASH_AT + i, const_byte(FLASH_AT + i));
}

/* npusim MODEL.npub with the constants copied to DRAM (edge-v1) and left in
 * flash: region flash offset X is constant X either way, over the flash bus. */
static void run_flash_copy(const char *set)
{
    char target[1024], path[] = "/tmp/npucc_flash_XXXXXX", fw[1024];
    tgt_target *t = edge_v1(target, sizeof target);
    size_t size;
    void *bin = flash_copy_binary(t, &size);
    int fd = mkstemp(path);
    cr_assert(fd >= 0 && write(fd, bin, size) == (ssize_t)size);
    close(fd);
    snprintf(fw, sizeof fw, "%s/fw/npurt.elf", env_or("NPUCC_BUILD", "build"));
    simrun_options so = {.firmware = fw, .target = target, .sets = set ? &set : NULL, .nsets = set ? 1 : 0};
    simrun *r;
    npu_err e;
    cr_assert_eq(simrun_open(path, &so, &r, &e), NPU_OK, "%s", e.msg);
    int8_t x[16] = {0}, y[FLASH_BYTES] = {0};
    const void *in[1] = {x};
    void *out[1] = {y};
    cr_assert_eq(simrun_infer(r, in, out, &e), NPU_OK, "%s", e.msg);
    expect_constants(y);
    npu_stats s;
    simrun_stats(r, &s);
    cr_assert_eq(s.flash_read_bytes, FLASH_BYTES, "the load is on the flash bus");
    cr_assert_eq(s.load_cycles > 0, set == NULL, "the copy to DRAM at load: %llu cycles (%s)",
                 (unsigned long long)s.load_cycles, set ? set : "edge-v1");
    simrun_free(r);
    unlink(path);
    npu_free(npu_alloc_default(), bin, size);
    tgt_free(t);
}

Test(simrun, region_flash_reads_the_constants_from_flash)
{
    run_flash_copy(NULL);
    run_flash_copy("npu.placement.constants=flash");
}

/* The region registers at the doorbell, then the model's run of the job. */
typedef struct job_regions {
    npu_model *npu;
    sim_region region[FW_NPU_NREGIONS];
} job_regions;

static npu_status record_regions(void *ud, sim_ctx *sim, const sim_npu_job *job, uint64_t *cycles, npu_err *err)
{
    job_regions *j = ud;
    memcpy(j->region, job->region, sizeof j->region);
    return npu_model_sim_ops()->run(j->npu, sim, job, cycles, err);
}

/* FW_CMD_RUN_NPUB on a DRAM copy of the blob: region 0 points into the copy,
 * region flash at the same offset into the flash image the request names. */
Test(simrun, firmware_points_region_flash_at_the_flash_image)
{
    char target[1024];
    tgt_target *t = edge_v1(target, sizeof target);
    size_t size;
    void *bin = flash_copy_binary(t, &size);
    job_regions j = {0};
    npu_err e;
    cr_assert_eq(npu_model_new(t, npu_alloc_default(), &j.npu, &e), NPU_OK, "%s", e.msg);
    int8_t x[16] = {0}, y[FLASH_BYTES];
    const void *in[1] = {x};
    console con = {0};
    fw_session fs;
    fw_session_open(bin, size, in, NULL, &con, &fs);
    uint32_t flash_at = fs.req.arg[FW_NPUB_ARG_BLOB], copy_at;
    cr_assert_eq(sim_place_dram(fs.s, bin, size, 64, &copy_at, &e), NPU_OK, "%s", e.msg);
    fs.req.arg[FW_NPUB_ARG_BLOB] = copy_at;
    fs.req.flash_blob = flash_at;
    cr_assert_eq(sim_mem_write(fs.s, fs.req_at, &fs.req, sizeof fs.req, &e), NPU_OK, "%s", e.msg);
    static const sim_npu_ops ops = {record_regions};
    sim_attach_npu(fs.s, &ops, &j);
    sim_result res;
    cr_assert_eq(sim_run(fs.s, &res, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(res.exit_code, 0, "%s %s", res.msg, con.text);
    uint32_t at = (uint32_t)(fs.v.constants - fs.v.base);
    cr_assert_eq(j.region[FW_NPU_REGION_CONST].base, copy_at + at);
    cr_assert_eq(j.region[FW_NPU_REGION_FLASH].base, flash_at + at);
    cr_assert_eq(j.region[FW_NPU_REGION_FLASH].size, fs.v.constants_size);
    cr_assert_eq(sim_mem_read(fs.s, fs.out_at, y, sizeof y, &e), NPU_OK, "%s", e.msg);
    expect_constants(y);
    sim_free(fs.s);
    npu_model_free(j.npu);
    npu_free(npu_alloc_default(), bin, size);
    tgt_free(t);
}
