/* The model API (rt/npurt_model.h) on all-host binaries natively: I/O
 * descriptions, lookups, the work area, copies, runs equal to the
 * reference, op tables that lack a kernel, NPU launches, and hostile blobs
 * (every truncation, flipped bytes: refused or run in bounds under ASan). */
#include "rt/npurt_hal.h"
#include "rt/npurt_model.h"
#include "tests/support/npurt_bin.h"

static const npurt_op *const by_id[NPURT_K_COUNT] = {
    NULL, &npurt_op_quantize, &npurt_op_dequantize, &npurt_op_qconv, &npurt_op_qfc, &npurt_op_qbmm,
    &npurt_op_qmaxpool, &npurt_op_qavgpool, &npurt_op_qglobalavgpool, &npurt_op_qbinary, &npurt_op_qrequant,
    &npurt_op_qlut, &npurt_op_qconcat, &npurt_op_copy, &npurt_op_softmax, &npurt_op_unary_f32,
    &npurt_op_binary_f32, &npurt_op_transpose, &npurt_op_reduce_f32, &npurt_op_node,
};

/* The table of the kernels a binary uses, as npucc --emit c writes it, minus
 * kernel `leave_out` (0: none). */
static void table_of(const void *blob, size_t size, uint32_t leave_out, const npurt_op **ops)
{
    npub_view v;
    npub_error e;
    cr_assert_eq(npurt_open(blob, size, &v, &e), 0, "%s", e.msg);
    int n = 0;
    for (uint32_t k = 1; k < NPURT_K_COUNT; k++) {
        bool used = false;
        for (uint32_t i = 0; i < v.n_steps; i++)
            used |= v.steps[i].kind == NPUB_STEP_HOST && v.steps[i].op == k;
        cr_assert_eq(by_id[k]->kernel, k);
        if (used && k != leave_out)
            ops[n++] = by_id[k];
    }
    ops[n] = NULL;
}

static void *work_for(const npurt_model *m)
{
    void *w = aligned_alloc(16, (npurt_model_work_bytes(m) + 15u) / 16u * 16u + 16u);
    cr_assert_not_null(w);
    return w;
}

Test(npurt_model, describes_io_and_runs_like_the_reference)
{
    ir_graph *g = cnn_graph();
    float *x = random_input(3 * 8 * 8, 1);
    const void *in[1] = {x};
    size_t want_bytes;
    uint8_t *want = reference_output(g, in, &want_bytes);
    asm_state *a = asm_new(g);
    size_t size;
    void *blob = assemble(a, &size);
    const npurt_op *ops[NPURT_K_COUNT];
    table_of(blob, size, 0, ops);
    static npurt_model m;
    cr_assert_eq(npurt_model_open(&m, blob, size, ops), NPURT_OK, "%s", npurt_model_message(&m));
    const npub_memory *mem = m.view.memory;
    uint32_t work = 0;
    for (int r = NPUB_REGION_ARENA; r < NPUB_REGION_COUNT; r++)
        work += (mem->region_bytes[r] + 15u) & ~15u;
    work += (mem->scratch_bytes + 15u) & ~15u;
    cr_assert_eq(npurt_model_work_bytes(&m), work);
    cr_assert(work > mem->region_bytes[NPUB_REGION_ARENA]);
    cr_assert_eq(npurt_model_input_count(&m), 1);
    cr_assert_eq(npurt_model_output_count(&m), 1);

    npurt_tensor_info ti, to;
    cr_assert_eq(npurt_model_input(&m, 0, &ti), NPURT_OK);
    cr_assert_str_eq(ti.name, "x");
    cr_assert(ti.dtype == NPURT_DT_F32 && ti.rank == 4 && ti.dims[0] == 1 && ti.dims[1] == 3 && ti.dims[2] == 8 &&
              ti.dims[3] == 8 && ti.bytes == 3 * 8 * 8 * 4);
    cr_assert(!ti.quantized && ti.scale == 1.0f && ti.zero_point == 0, "float I/O: scale 1, zero point 0");
    cr_assert_eq(npurt_model_output(&m, 0, &to), NPURT_OK);
    cr_assert_str_eq(to.name, "y");
    cr_assert(to.rank == 2 && to.dims[1] == 10 && to.bytes == want_bytes);
    cr_assert_eq(npurt_model_input(&m, 1, &ti), NPURT_EARG);
    cr_assert_eq(npurt_model_output(&m, 0, NULL), NPURT_EARG);
    uint32_t idx = 99;
    cr_assert_eq(npurt_model_find_input(&m, "x", &idx), NPURT_OK);
    cr_assert_eq(idx, 0);
    cr_assert_eq(npurt_model_find_output(&m, "y", &idx), NPURT_OK);
    cr_assert_eq(npurt_model_find_input(&m, "y", &idx), NPURT_ENOTFOUND, "an output is not an input");
    cr_assert_eq(npurt_model_find_output(&m, "nope", &idx), NPURT_ENOTFOUND);

    /* no work area yet */
    cr_assert_null(npurt_model_input_data(&m, 0));
    cr_assert_eq(npurt_model_set_input(&m, 0, x, ti.bytes), NPURT_ENOWORK);
    cr_assert_eq(npurt_model_run(&m), NPURT_ENOWORK);
    uint8_t *w = work_for(&m);
    cr_assert_eq(npurt_model_set_work(&m, w + 4, work), NPURT_EALIGN);
    cr_assert_eq(npurt_model_set_work(&m, w, work - 1), NPURT_ENOWORK);
    cr_assert_eq(npurt_model_set_work(&m, w, work), NPURT_OK);
    cr_assert_eq(npurt_model_set_input(&m, 0, x, ti.bytes - 1), NPURT_ESIZE);
    cr_assert_eq(npurt_model_set_input(&m, 1, x, ti.bytes), NPURT_EARG);
    cr_assert_eq(npurt_model_set_input(&m, 0, x, ti.bytes), NPURT_OK);
    uint8_t *p = npurt_model_input_data(&m, 0);
    cr_assert(p >= w && p + ti.bytes <= w + work && memcmp(p, x, ti.bytes) == 0, "the input is in the work area");
    for (int run = 0; run < 2; run++) { /* a second inference on the same context */
        cr_assert_eq(npurt_model_run(&m), NPURT_OK, "%s", npurt_model_message(&m));
        uint8_t *got = malloc(want_bytes);
        cr_assert_eq(npurt_model_get_output(&m, 0, got, want_bytes + 1), NPURT_ESIZE);
        cr_assert_eq(npurt_model_get_output(&m, 0, got, want_bytes), NPURT_OK);
        compare_bytes(got, want, want_bytes, "npurt_model_run");
        cr_assert_eq(memcmp(npurt_model_output_data(&m, 0), got, want_bytes), 0);
        free(got);
    }
    /* every kernel's table runs it too */
    cr_assert_eq(npurt_model_open(&m, blob, size, npurt_ops_all), NPURT_OK);
    free(w);
    free(blob);
    asm_delete(a);
    free(want);
    free(x);
    ir_graph_free(g);
}

Test(npurt_model, quantized_io_has_scale_and_zero_point)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 2, 4, 4}, yd[4] = {1, 2, 2, 2};
    ir_tensor *x = act(g, "pixels", 4, xd, 0.25f, -7), *y = act(g, "pooled", 4, yd, 0.25f, -7);
    conv_attrs(g, node(g, IR_OP_MAX_POOL, "pool", 1, &x, y), 2, 2, 0, 0);
    tg_set_io(g, 1, &x, y);
    asm_state *a = asm_new(g);
    size_t size;
    void *blob = assemble(a, &size);
    static npurt_model m;
    cr_assert_eq(npurt_model_open(&m, blob, size, npurt_ops_all), NPURT_OK, "%s", npurt_model_message(&m));
    npurt_tensor_info ti, to;
    cr_assert_eq(npurt_model_input(&m, 0, &ti), NPURT_OK);
    cr_assert_eq(npurt_model_output(&m, 0, &to), NPURT_OK);
    cr_assert(ti.quantized && ti.dtype == NPURT_DT_I8 && ti.scale == 0.25f && ti.zero_point == -7, "%s %g %d",
              ti.name, (double)ti.scale, ti.zero_point);
    cr_assert(to.quantized && to.dims[2] == 2 && to.bytes == 8);
    uint8_t *w = work_for(&m);
    cr_assert_eq(npurt_model_set_work(&m, w, npurt_model_work_bytes(&m)), NPURT_OK);
    int8_t *in = npurt_model_input_data(&m, 0);
    for (int i = 0; i < 32; i++)
        in[i] = (int8_t)(i * 7 % 61 - 30); /* in place, no copy */
    cr_assert_eq(npurt_model_run(&m), NPURT_OK, "%s", npurt_model_message(&m));
    const int8_t *out = npurt_model_output_data(&m, 0);
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                int best = -128;
                for (int di = 0; di < 2; di++)
                    for (int dj = 0; dj < 2; dj++) {
                        int v = in[c * 16 + (2 * i + di) * 4 + 2 * j + dj];
                        best = v > best ? v : best;
                    }
                cr_assert_eq(out[c * 4 + i * 2 + j], best, "max pool of the same scale");
            }
    free(w);
    free(blob);
    asm_delete(a);
    ir_graph_free(g);
}

Test(npurt_model, a_kernel_outside_the_op_table_is_refused)
{
    ir_graph *g = cnn_graph();
    asm_state *a = asm_new(g);
    size_t size;
    void *blob = assemble(a, &size);
    const npurt_op *ops[NPURT_K_COUNT];
    table_of(blob, size, NPURT_K_QCONV, ops);
    static npurt_model m;
    cr_assert_eq(npurt_model_open(&m, blob, size, ops), NPURT_EOPS);
    cr_assert(strstr(npurt_model_message(&m), "step 1 (node 'conv1', QCONV)") &&
                  strstr(npurt_model_message(&m), "op table"),
              "%s", npurt_model_message(&m));
    const npurt_op *none[1] = {NULL};
    cr_assert_eq(npurt_model_open(&m, blob, size, none), NPURT_EOPS);
    cr_assert_eq(npurt_model_run(&m), NPURT_EARG, "a context that failed to open does not run");
    /* the step's op and its record's kernel must agree through the table too */
    table_of(blob, size, 0, ops);
    rec_of(a, STEP_CONV1)->kernel = NPURT_K_QMAXPOOL;
    free(blob);
    blob = assemble(a, &size);
    cr_assert_eq(npurt_model_open(&m, blob, size, ops), NPURT_EBLOB, "%s", npurt_model_message(&m));
    free(blob);
    asm_delete(a);
    ir_graph_free(g);
}

typedef struct fake_npu {
    int calls, fail_with;
    uint32_t first, count;
} fake_npu;

static int fake_launch(void *ud, const npub_view *v, uint32_t first, uint32_t count, uint8_t *const region[4])
{
    fake_npu *f = ud;
    cr_assert(region[NPUB_REGION_CONST] == v->constants && region[NPUB_REGION_ARENA]);
    f->calls++;
    f->first = first;
    f->count = count;
    return f->fail_with;
}

Test(npurt_model, npu_steps_go_through_the_launch)
{
    ir_graph *g = cnn_graph();
    asm_state *a = asm_new(g);
    memmove(a->steps + 1, a->steps, sizeof(npub_step) * a->n_steps);
    a->n_steps++;
    a->steps[0] = (npub_step){.kind = NPUB_STEP_NPU, .a = 1, .b = 2, .name = add_string(a, "npu0")};
    a->n_cmds = 4;
    size_t size;
    void *blob = assemble(a, &size);
    static npurt_model m;
    cr_assert_eq(npurt_model_open(&m, blob, size, npurt_ops_all), NPURT_OK, "%s", npurt_model_message(&m));
    cr_assert(m.env.npu_launch == npurt_npu_launch, "the reference driver by default");
    uint8_t *w = work_for(&m);
    cr_assert_eq(npurt_model_set_work(&m, w, npurt_model_work_bytes(&m)), NPURT_OK);
    fake_npu f = {0};
    npurt_model_set_npu(&m, fake_launch, &f);
    cr_assert_eq(npurt_model_run(&m), NPURT_OK, "%s", npurt_model_message(&m));
    cr_assert(f.calls == 1 && f.first == 1 && f.count == 2);
    f.fail_with = 9;
    cr_assert_eq(npurt_model_run(&m), NPURT_ENPU);
    cr_assert(strstr(npurt_model_message(&m), "fault 9"), "%s", npurt_model_message(&m));
    npurt_model_set_npu(&m, NULL, NULL);
    cr_assert_eq(npurt_model_run(&m), NPURT_ENPU);
    free(w);
    free(blob);
    asm_delete(a);
    ir_graph_free(g);
}

Test(npurt_model, bad_arguments)
{
    static npurt_model m;
    static uint8_t blob[64] __attribute__((aligned(16)));
    cr_assert_eq(npurt_model_open(NULL, blob, sizeof blob, npurt_ops_all), NPURT_EARG);
    cr_assert_eq(npurt_model_open(&m, NULL, 0, npurt_ops_all), NPURT_EARG);
    cr_assert_eq(npurt_model_open(&m, blob, sizeof blob, NULL), NPURT_EARG);
    cr_assert_eq(npurt_model_open(&m, blob + 4, 60, npurt_ops_all), NPURT_EALIGN);
    cr_assert_eq(npurt_model_open(&m, blob, sizeof blob, npurt_ops_all), NPURT_EBLOB);
    cr_assert(npurt_model_message(&m)[0], "a refusal says why");
    cr_assert_eq(npurt_model_work_bytes(&m), 0);
    cr_assert_eq(npurt_model_input_count(&m), 0);
    uint32_t i;
    cr_assert_eq(npurt_model_find_input(&m, "x", &i), NPURT_EARG);
    cr_assert_eq(npurt_model_run(NULL), NPURT_EARG);
    for (int s = 0; s <= NPURT_ENPU; s++)
        cr_assert(npurt_strerror((npurt_status)s)[0]);
    cr_assert_str_eq(npurt_strerror((npurt_status)1000), "unknown npurt status");
    cr_assert_str_eq(npurt_strerror(NPURT_OK), "ok");
}

/* Hostile blobs: every truncation is refused; every flipped byte is
 * refused or, when it passes every check, runs inside its buffers (ASan). */
Test(npurt_model, hostile_blobs_are_refused_or_run_in_bounds)
{
    ir_graph *g = cnn_graph();
    asm_state *a = asm_new(g);
    size_t size;
    uint8_t *blob = assemble(a, &size);
    uint8_t *copy = aligned_alloc(16, (size + 15) / 16 * 16);
    static npurt_model m;
    for (size_t n = 0; n < size; n++) {
        memcpy(copy, blob, n);
        npurt_status st = npurt_model_open(&m, copy, n, npurt_ops_all);
        cr_assert(st == NPURT_EBLOB, "a blob cut at %zu of %zu bytes: %s", n, size, npurt_strerror(st));
    }
    float *x = random_input(3 * 8 * 8, 3);
    int refused = 0, ran = 0;
    for (size_t at = 0; at < size; at += (at < 1024 ? 1 : 7)) {
        memcpy(copy, blob, size);
        copy[at] ^= (uint8_t)(1u << (at % 8));
        if (npurt_model_open(&m, copy, size, npurt_ops_all) != NPURT_OK) {
            refused++;
            continue;
        }
        uint8_t *w = work_for(&m);
        cr_assert_eq(npurt_model_set_work(&m, w, npurt_model_work_bytes(&m)), NPURT_OK);
        npurt_tensor_info ti;
        cr_assert_eq(npurt_model_input(&m, 0, &ti), NPURT_OK);
        memcpy(npurt_model_input_data(&m, 0), x, ti.bytes < sizeof(float) * 192 ? ti.bytes : sizeof(float) * 192);
        npurt_status st = npurt_model_run(&m);
        cr_assert(st == NPURT_OK || st == NPURT_ESTEP, "byte %zu: %s", at, npurt_strerror(st));
        ran++;
        free(w);
    }
    cr_assert(refused > 0 && ran > 0, "refused %d, ran %d", refused, ran);
    free(x);
    free(copy);
    free(blob);
    asm_delete(a);
    ir_graph_free(g);
}
