/* libnpurt in the firmware of the simulated SoC: all-host binaries and an
 * NPU step through FW_CMD_RUN_NPUB on the rv32 host (Unicorn), the NPU model
 * attached, compared byte for byte with the reference executor. */
#include "numerics/numerics.h"
#include "target/target.h"
#include "tests/support/npurt_bin.h"

Test(npurt, firmware_runs_the_binary_bit_exactly)
{
    ir_graph *g = cnn_graph();
    float *x = random_input(3 * 8 * 8, 1);
    const void *in[1] = {x};
    size_t out_bytes;
    uint8_t *want = reference_output(g, in, &out_bytes);
    asm_state *a = asm_new(g);
    size_t size;
    void *blob = assemble(a, &size);
    fw_run *run = malloc(sizeof *run);
    run_firmware(blob, size, in, run);
    cr_assert_eq(run->r.exit_code, 0, "exit %d: %s", run->r.exit_code, run->con.text);
    cr_assert_eq(run->back.status, FW_REQ_ST_DONE);
    cr_assert_eq(run->back.result[FW_NPUB_RES_STATUS], 0);
    cr_assert_eq(run->back.result[FW_NPUB_RES_STEPS], a->n_steps);
    cr_assert_eq(run->back.result[FW_NPUB_RES_JOBS], 0, "an all-host binary starts no NPU job");
    cr_assert_gt(run->back.result[FW_NPUB_RES_CYCLES_LO], 1000);
    uint32_t y_off = a->tensors[a->io[2 + a->io[0]]].offset;
    compare_bytes(run->out + y_off, want, out_bytes, "firmware");
    cr_assert_not_null(run->steps, "the scratch had room for the step table");
    uint64_t sum = 0;
    for (uint32_t i = 0; i < a->n_steps; i++) {
        cr_assert_gt(run->steps[2 * i], 0, "step %u took no cycles", i);
        sum += run->steps[2 * i];
    }
    cr_assert_leq(sum, run->back.result[FW_NPUB_RES_CYCLES_LO]);
    fw_run_release(run);

    /* a broken record: the firmware says which step and exits with its code */
    rec_of(a, STEP_CONV1)->kernel = 99;
    a->steps[STEP_CONV1].op = 99;
    free(blob);
    blob = assemble(a, &size);
    run_firmware(blob, size, in, run);
    cr_assert_eq(run->r.exit_code, FW_EXIT_NPUB_BAD, "exit %d", run->r.exit_code);
    cr_assert_eq(run->back.result[FW_NPUB_RES_STATUS], FW_EXIT_NPUB_BAD);
    cr_assert(strstr(run->con.text, "npurt:") && strstr(run->con.text, "step 1 (node 'conv1'"), "%s",
              run->con.text);
    fw_run_release(run);
    free(run);
    free(blob);
    asm_delete(a);
    free(want);
    free(x);
    ir_graph_free(g);
}

/* Resumes the waiting firmware on the request in fs->req; back gets the block. */
static void serve_next(fw_session *fs, sim_result *r, fw_request *back)
{
    npu_err e;
    cr_assert(sim_waiting(fs->s));
    cr_assert_eq(sim_mem_write(fs->s, fs->req_at, &fs->req, sizeof fs->req, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(sim_resume(fs->s, r, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(sim_mem_read(fs->s, fs->req_at, back, sizeof *back, &e), NPU_OK, "%s", e.msg);
}

/* FW_CTL_SERVE: one boot answers request after request; the binary is
 * validated when first opened, not again for the same blob, and again for
 * another one (here: the same address with another size, which fails). */
Test(npurt, firmware_serves_requests_and_validates_a_binary_once)
{
    ir_graph *g = cnn_graph();
    float *x = random_input(3 * 8 * 8, 7);
    const void *in[1] = {x};
    size_t out_bytes;
    uint8_t *want = reference_output(g, in, &out_bytes);
    asm_state *a = asm_new(g);
    size_t size;
    void *blob = assemble(a, &size);
    console con = {0};
    fw_session fs;
    fw_session_open(blob, size, in, NULL, &con, &fs);
    sim_set_serve(fs.s, 1);
    sim_result r1, r2;
    fw_request b1, b2;
    npu_err e;
    cr_assert_eq(sim_run(fs.s, &r1, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(r1.stop, SIM_STOP_WAIT, "%s %s", r1.msg, con.text);
    cr_assert_eq(sim_mem_read(fs.s, fs.req_at, &b1, sizeof b1, &e), NPU_OK);
    cr_assert_eq(b1.status, FW_REQ_ST_DONE);
    uint32_t y_off = a->tensors[a->io[2 + a->io[0]]].offset;
    uint8_t *out = malloc(fs.v.memory->region_bytes[NPUB_REGION_OUTPUT]);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(sim_mem_read(fs.s, fs.out_at, out, fs.v.memory->region_bytes[NPUB_REGION_OUTPUT], &e), NPU_OK);
        compare_bytes(out + y_off, want, out_bytes, "served firmware");
        memset(out, 0, fs.v.memory->region_bytes[NPUB_REGION_OUTPUT]);
        sim_mem_write(fs.s, fs.out_at, out, fs.v.memory->region_bytes[NPUB_REGION_OUTPUT], &e);
        serve_next(&fs, &r2, &b2);
        cr_assert_eq(r2.stop, SIM_STOP_WAIT, "%s %s", r2.msg, con.text);
        cr_assert_eq(b2.status, FW_REQ_ST_DONE);
        cr_assert_eq(b2.result[FW_NPUB_RES_CYCLES_LO], b1.result[FW_NPUB_RES_CYCLES_LO], "the same run, the same cycles");
        /* no boot and no CRC over the blob (several instructions a byte) */
        cr_assert_lt(r2.stats.insns + size, r1.stats.insns, "%llu vs %llu", (unsigned long long)r2.stats.insns,
                     (unsigned long long)r1.stats.insns);
    }
    fs.req.arg[FW_NPUB_ARG_BLOB_SIZE] = (uint32_t)size - 8;
    serve_next(&fs, &r2, &b2);
    cr_assert_eq(r2.stop, SIM_STOP_EXIT);
    cr_assert_eq(r2.exit_code, FW_EXIT_NPUB_BAD, "another size is another binary: validated again");
    cr_assert(strstr(con.text, "truncated"), "%s", con.text);
    cr_assert(!sim_waiting(fs.s));
    cr_assert_eq(sim_resume(fs.s, &r2, &e), NPU_EUSAGE, "nothing waits after an exit");
    sim_free(fs.s);
    free(out);
    free(blob);
    asm_delete(a);
    free(want);
    free(x);
    ir_graph_free(g);
}

/* A dense DMA of n bytes between SRAM 0 and offset dram of a region; the words it took. */
static size_t dma(const tgt_target *t, const char *name, int ch, int region, uint32_t dram, int n, int wait,
                  int signal, uint32_t *words, size_t cap)
{
    const tgt_kv kv[] = {{"ch", ch},      {"region", region}, {"dram", dram},    {"sram", 0},
                         {"c", 1},        {"h", 1},           {"w", n},          {"dram_hs", n},
                         {"dram_cs", n},  {"sram_hs", n},     {"sram_cs", n},    {"wait", wait},
                         {"signal", signal}};
    size_t nw;
    npu_err e;
    npu_status st = tgt_encode_named(t->isa, name, kv, sizeof kv / sizeof kv[0], words, cap, &nw, &e);
    cr_assert_eq(st, NPU_OK, "%s", e.msg);
    return nw;
}

/* An NPU step in the firmware: the NPU model copies a constant (from the
 * const region in flash) into an arena tensor, then a host step requantizes
 * it into the output. This checks the region bases, the command range and
 * the doorbell/status handshake the firmware performs. */
Test(npurt, firmware_drives_the_npu_for_npu_steps)
{
    const char *root = getenv("NPUCC_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/targets/edge-v1.yaml", root && *root ? root : ".");
    tgt_target *t;
    npu_model *m;
    npu_err e;
    cr_assert_eq(tgt_load(path, NULL, &t, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(npu_model_new(t, npu_alloc_default(), &m, &e), NPU_OK, "%s", e.msg);

    ir_graph *g = ir_graph_new(npu_alloc_default());
    enum { N = 64 };
    int64_t d[1] = {N};
    int8_t cv[N];
    for (int i = 0; i < N; i++)
        cv[i] = (int8_t)(i * 37 - 100);
    ir_tensor *c = ir_const_new(g, "c", IR_I8, 1, d, cv);
    ir_tensor *av = act(g, "a", 1, d, 0.05f, 3), *y = act(g, "y", 1, d, 0.08f, -2);
    ir_node *rq = node(g, IR_OP_REQUANTIZE, "rq", 1, &av, y);
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->outputs[0] = y;
    y->flags |= IR_TENSOR_OUTPUT;
    g->n_outputs = 1;

    asm_state *a = asm_new(g);
    const npub_tensor *ct = &a->tensors[map_index(a, c)], *at = &a->tensors[map_index(a, av)];
    size_t nw = dma(t, "dma_load", 0, TGT_REGION_CONSTANTS, ct->offset, N, 0, 1, a->cmds, 64);
    nw += dma(t, "dma_store", 1, TGT_REGION_ARENA, at->offset, N, 1, 0, a->cmds + nw, 64 - nw);
    const tgt_kv end[] = {{"wait", 0}};
    size_t k;
    cr_assert_eq(tgt_encode_named(t->isa, "end", end, 1, a->cmds + nw, 64 - nw, &k, &e), NPU_OK, "%s", e.msg);
    nw += k;
    a->cmds[nw] = 0xffffffffu; /* past `end`: never read */
    a->n_cmds = (uint32_t)nw + 1;
    memmove(a->steps + 1, a->steps, sizeof(npub_step) * a->n_steps);
    a->n_steps++;
    a->steps[0] =
        (npub_step){.kind = NPUB_STEP_NPU, .a = 0, .b = (uint32_t)nw, .name = add_string(a, "npu_copy")};
    size_t size;
    void *blob = assemble(a, &size);

    fw_run *run = malloc(sizeof *run);
    run_firmware_npu(blob, size, NULL, m, run);
    cr_assert_eq(run->r.exit_code, 0, "exit %d: %s %s", run->r.exit_code, run->r.msg, run->con.text);
    cr_assert_eq(run->back.result[FW_NPUB_RES_JOBS], 1);
    cr_assert_not_null(run->steps);
    cr_assert_gt(run->steps[0], 0);
    nk_qrequant_params p;
    cr_assert_eq(ref_qrequant_params(rq, av, y, &p, &e), NPU_OK, "%s", e.msg);
    int8_t want[N];
    cr_assert_eq(nk_qrequant(&p, cv, want, N), NK_OK);
    compare_bytes(run->out + a->tensors[map_index(a, y)].offset, (const uint8_t *)want, N, "firmware + NPU");
    cr_assert_eq(npu_model_totals(m)->dram_write, N, "the NPU wrote the arena tensor");
    fw_run_release(run);
    free(run);
    free(blob);
    asm_delete(a);
    ir_graph_free(g);
    npu_model_free(m);
    tgt_free(t);
}

Test(npurt, quantized_example_model_matches_reference)
{
    for (int wbits = 8; wbits >= 4; wbits -= 4) {
        ir_graph *g = fmnist_quantized(wbits);
        int i4 = 0;
        for (int i = 0; i < g->n_tensors; i++)
            i4 += g->tensors[i]->dtype == IR_I4;
        cr_assert_eq(i4 > 0, wbits == 4, "%d int4 tensors with %d-bit weights", i4, wbits);
        float *x = random_input(28 * 28, 10);
        for (int i = 0; i < 28 * 28; i++)
            x[i] = x[i] * 0.5f + 0.5f; /* images in [0, 1] */
        const void *in[1] = {x};
        check_graph(g, in);
        if (wbits == 8) { /* and the same binary in the firmware */
            size_t out_bytes, size;
            uint8_t *want = reference_output(g, in, &out_bytes);
            asm_state *a = asm_new(g);
            void *blob = assemble(a, &size);
            fw_run *run = malloc(sizeof *run);
            run_firmware(blob, size, in, run);
            cr_assert_eq(run->r.exit_code, 0, "exit %d: %s", run->r.exit_code, run->con.text);
            compare_bytes(run->out + a->tensors[a->io[2 + a->io[0]]].offset, want, out_bytes, "firmware");
            cr_log_info("fmnist in the firmware: %u host cycles, %llu instructions",
                        run->back.result[FW_NPUB_RES_CYCLES_LO], (unsigned long long)run->r.stats.insns);
            fw_run_release(run);
            free(run);
            free(blob);
            asm_delete(a);
            free(want);
        }
        free(x);
        ir_graph_free(g);
    }
}

/* The NODE records (float nn ops, data movement, compares) on the rv32 host:
 * the same bytes as the reference executor. */
Test(npurt, firmware_runs_node_records_bit_exactly)
{
    ir_graph *g = node_graph();
    float *x = random_input(32, 3);
    const void *in[1] = {x};
    size_t out_bytes;
    uint8_t *want = reference_output(g, in, &out_bytes);
    asm_state *a = asm_new(g);
    size_t size;
    void *blob = assemble(a, &size);
    fw_run *run = malloc(sizeof *run);
    run_firmware(blob, size, in, run);
    cr_assert_eq(run->r.exit_code, 0, "exit %d: %s", run->r.exit_code, run->con.text);
    cr_assert_eq(run->back.result[FW_NPUB_RES_STATUS], 0, "%s", run->con.text);
    cr_assert_eq(run->back.result[FW_NPUB_RES_STEPS], a->n_steps);
    uint32_t y_off = a->tensors[a->io[2 + a->io[0]]].offset;
    compare_bytes(run->out + y_off, want, out_bytes, "firmware");
    fw_run_release(run);
    free(run);
    free(blob);
    asm_delete(a);
    free(want);
    free(x);
    ir_graph_free(g);
}
