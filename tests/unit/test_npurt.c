/* libnpurt natively: small quantized graphs built with the IR API become
 * all-host .npub files (tensor table from the graph, records from
 * emit_host_step, fmt_npub_assemble), run with npurt_run, and must match
 * the reference executor (ref_ctx_run) on the same graph bit for bit. Then
 * npurt_open against broken records, and npurt_run against a bad
 * environment and NPU steps. */
#include "numerics/numerics.h"
#include "tests/support/npurt_bin.h"

Test(npurt, cnn_matches_reference)
{
    ir_graph *g = cnn_graph();
    float *x = random_input(3 * 8 * 8, 1);
    const void *in[1] = {x};
    check_graph(g, in);
    free(x);
    ir_graph_free(g);
}

/* int4 weights: Conv (stride 2, per-channel int4) -> AveragePool ->
 * Flatten -> MatMul by int4 [K, N] weights (the transposed path) -> Dequantize */
Test(npurt, int4_conv_and_matmul_match_reference)
{
    uint32_t seed = 11;
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 4, 6, 6}, cd[4] = {1, 6, 3, 3}, pd[4] = {1, 6, 2, 2}, fd[2] = {1, 24}, yd[2] = {1, 5};
    int64_t wd[4] = {6, 4, 3, 3}, md[2] = {24, 5};
    ir_tensor *x = fact(g, "x", 4, xd), *q = act(g, "q", 4, xd, 1.0f / 100, -3);
    ir_tensor *c = act(g, "c", 4, cd, 0.15f, 2), *p = act(g, "p", 4, pd, 0.1f, 0);
    ir_tensor *f = act(g, "f", 2, fd, 0.1f, 0), *m = act(g, "m", 2, yd, 0.4f, -7);
    ir_tensor *y = fact(g, "y", 2, yd);
    quantize(g, "quant", x, q);
    ir_tensor *conv_in[3] = {q, weights(g, "w", true, 4, wd, 6, &seed), bias(g, "b", 6, &seed)};
    conv_attrs(g, node(g, IR_OP_CONV, "conv4", 3, conv_in, c), 3, 2, 1, 0);
    ir_node *n = node(g, IR_OP_AVERAGE_POOL, "avg", 1, &c, p);
    conv_attrs(g, n, 2, 1, 0, 0);
    ir_set_int(g, node(g, IR_OP_FLATTEN, "flat", 1, &p, f), "axis", 1);
    ir_tensor *mm_in[2] = {f, weights(g, "wm", true, 2, md, 5, &seed)};
    mm_in[1]->quant->axis = 1;
    node(g, IR_OP_MATMUL, "matmul", 2, mm_in, m);
    dequantize(g, "dequant", m, y);
    tg_set_io(g, 1, &x, y);
    float *xv = random_input(4 * 36, 2);
    const void *in[1] = {xv};
    check_graph(g, in);
    free(xv);
    ir_graph_free(g);
}

/* Requantize and a LUT branch, Concat with the input itself (one input
 * copied, two requantized), then the float side: Dequantize -> Sigmoid ->
 * Add a constant. */
Test(npurt, concat_requant_lut_and_float_ops_match_reference)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 4, 3, 3}, od[4] = {1, 12, 3, 3}, kd[1] = {1};
    ir_tensor *x = fact(g, "x", 4, xd), *q = act(g, "q", 4, xd, 0.05f, 3);
    ir_tensor *r = act(g, "r", 4, xd, 0.06f, 0), *l = act(g, "l", 4, xd, 1.0f / 256, -128);
    ir_tensor *cat = act(g, "cat", 4, od, 0.06f, 0);
    ir_tensor *dq = fact(g, "dq", 4, od), *sg = fact(g, "sg", 4, od), *y = fact(g, "y", 4, od);
    quantize(g, "quant", x, q);
    node(g, IR_OP_REQUANTIZE, "requant", 1, &q, r);
    int8_t lut[256];
    cr_assert_eq(nk_lut_build_i8(lut, nk_lut_sigmoid, NULL, 0.05f, 3, 1.0f / 256, -128), NK_OK);
    int64_t ld[1] = {256};
    ir_tensor *lut_in[2] = {q, ir_const_new(g, "table", IR_I8, 1, ld, lut)};
    node(g, IR_OP_LUT, "lut", 2, lut_in, l);
    ir_tensor *cat_in[3] = {r, l, q};
    ir_set_int(g, node(g, IR_OP_CONCAT, "concat", 3, cat_in, cat), "axis", 1);
    dequantize(g, "dequant", cat, dq);
    node(g, IR_OP_SIGMOID, "sigmoid", 1, &dq, sg);
    float k = 0.25f;
    ir_tensor *add_in[2] = {sg, ir_const_new(g, "k", IR_F32, 1, kd, &k)};
    node(g, IR_OP_ADD, "fadd", 2, add_in, y);
    tg_set_io(g, 1, &x, y);
    float *xv = random_input(36, 3);
    for (int i = 0; i < 36; i++)
        xv[i] *= 6.0f; /* wide enough to saturate some values */
    const void *in[1] = {xv};
    check_graph(g, in);
    free(xv);
    ir_graph_free(g);
}

/* An int16 (A16W8) activation of zero point 0. */
static ir_tensor *act16(ir_graph *g, const char *name, int rank, const int64_t *dims, float scale)
{
    ir_tensor *t = act(g, name, rank, dims, scale, 0);
    t->dtype = IR_I16;
    return t;
}

/* An int16 concat whose inputs the memory plan wrote into their slices of
 * the output (docs/memplan.md, concat elision; the DenseNet kind at A16W8,
 * issue 18): a copied in place, b requantized in place. The slices are at
 * byte prefixes of 2-byte elements: b at a's element count (1-byte
 * elements) overlaps a's slice and is refused. */
static void int16_concat_in_place(bool byte_prefix)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 3, 2, 2}, od[4] = {1, 6, 2, 2};
    ir_tensor *x = act16(g, "x", 4, xd, 1.0f / 4096), *a = act16(g, "a", 4, xd, 1.0f / 2048);
    ir_tensor *b = act16(g, "b", 4, xd, 1.0f / 1024), *cat = act16(g, "cat", 4, od, 1.0f / 2048);
    node(g, IR_OP_REQUANTIZE, "ra", 1, &x, a);
    node(g, IR_OP_REQUANTIZE, "rb", 1, &x, b);
    ir_tensor *cat_in[2] = {a, b};
    ir_set_int(g, node(g, IR_OP_CONCAT, "concat", 2, cat_in, cat), "axis", 1);
    tg_set_io(g, 1, &x, cat);
    int16_t xv[12];
    for (int i = 0; i < 12; i++)
        xv[i] = (int16_t)(i * 2731 - 15000);
    const void *in[1] = {xv};
    size_t out_bytes;
    uint8_t *want = reference_output(g, in, &out_bytes);
    asm_state *s = asm_new(g);
    npub_tensor *ta = &s->tensors[s->index[a->id]], *tb = &s->tensors[s->index[b->id]];
    const npub_tensor *tc = &s->tensors[s->index[cat->id]];
    ta->region = tb->region = tc->region;
    ta->offset = tc->offset;
    tb->offset = tc->offset + (byte_prefix ? 12u : ta->size);
    size_t size;
    void *blob = assemble(s, &size);
    npub_view v;
    npub_error pe;
    if (byte_prefix) {
        cr_assert_eq(npurt_open(blob, size, &v, &pe), -1, "an input over another's slice was accepted");
        cr_assert(strstr(pe.msg, "node 'concat'") && strstr(pe.msg, "overlaps input slot 1"), "%s", pe.msg);
    } else {
        cr_assert_eq(npurt_open(blob, size, &v, &pe), 0, "%s", pe.msg);
        npurt_env env;
        env_alloc(&v, &env);
        memcpy(env.region[NPUB_REGION_INPUT] + v.tensors[v.inputs[0]].offset, xv, sizeof xv);
        cr_assert_eq(npurt_run(&v, &env, &pe), 0, "%s", pe.msg);
        compare_bytes(env.region[tc->region] + tc->offset, want, out_bytes, "runtime");
        env_free(&env);
    }
    free(blob);
    asm_delete(s);
    free(want);
    ir_graph_free(g);
}

Test(npurt, int16_concat_inputs_in_their_slices_match_reference)
{
    int16_concat_in_place(false);
    int16_concat_in_place(true);
}

/* A matmul of two activations (QBMM). */
Test(npurt, matmul_of_activations_matches_reference)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t ad[3] = {2, 3, 4}, bd[3] = {2, 4, 5}, yd[3] = {2, 3, 5};
    ir_tensor *a = fact(g, "a", 3, ad), *b = fact(g, "b", 3, bd);
    ir_tensor *qa = act(g, "qa", 3, ad, 1.0f / 120, 4), *qb = act(g, "qb", 3, bd, 1.0f / 100, -6);
    ir_tensor *m = act(g, "m", 3, yd, 0.02f, 1), *y = fact(g, "y", 3, yd);
    quantize(g, "qa_node", a, qa);
    quantize(g, "qb_node", b, qb);
    ir_tensor *mm_in[2] = {qa, qb};
    node(g, IR_OP_MATMUL, "bmm", 2, mm_in, m);
    dequantize(g, "dequant", m, y);
    ir_tensor *ins[2] = {a, b};
    tg_set_io(g, 2, ins, y);
    float *av = random_input(24, 4), *bv = random_input(40, 5);
    const void *in[2] = {av, bv};
    check_graph(g, in);
    free(av);
    free(bv);
    ir_graph_free(g);
}

/* Broadcast binaries, a padded average pool counting the pad, a global max pool. */
Test(npurt, binaries_and_pools_match_reference)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 4, 4, 4}, bd[4] = {1, 4, 1, 1}, gd[4] = {1, 4, 1, 1};
    ir_tensor *x = fact(g, "x", 4, xd), *b = fact(g, "b", 4, bd);
    ir_tensor *qx = act(g, "qx", 4, xd, 1.0f / 127, 2), *qb = act(g, "qb", 4, bd, 1.0f / 64, -10);
    ir_tensor *av = act(g, "av", 4, xd, 1.0f / 150, 0), *mu = act(g, "mu", 4, xd, 1.0f / 300, 4);
    ir_tensor *mn = act(g, "mn", 4, xd, 1.0f / 200, -3), *sb = act(g, "sb", 4, xd, 1.0f / 90, 1);
    ir_tensor *gm = act(g, "gm", 4, gd, 1.0f / 90, 1), *y = fact(g, "y", 4, gd);
    quantize(g, "qx_node", x, qx);
    quantize(g, "qb_node", b, qb);
    ir_node *n = node(g, IR_OP_AVERAGE_POOL, "avg", 1, &qx, av);
    conv_attrs(g, n, 3, 1, 1, 0);
    ir_set_int(g, n, "count_include_pad", 1);
    ir_tensor *mul_in[2] = {av, qb}, *min_in[2] = {mu, qx}, *sub_in[2] = {mn, qb};
    node(g, IR_OP_MUL, "mul", 2, mul_in, mu);
    node(g, IR_OP_MIN, "min", 2, min_in, mn);
    node(g, IR_OP_SUB, "sub", 2, sub_in, sb)->act.kind = IR_ACT_RELU;
    node(g, IR_OP_GLOBAL_MAX_POOL, "gmax", 1, &sb, gm);
    dequantize(g, "dequant", gm, y);
    ir_tensor *ins[2] = {x, b};
    tg_set_io(g, 2, ins, y);
    float *xv = random_input(64, 6), *bv = random_input(4, 7);
    const void *in[2] = {xv, bv};
    check_graph(g, in);
    free(xv);
    free(bv);
    ir_graph_free(g);
}

/* Per-axis uint8 QuantizeLinear and DequantizeLinear, then float unary and
 * binary ops with broadcast, a Clip with constant bound inputs, LogSoftmax. */
Test(npurt, per_axis_qdq_and_float_chain_match_reference)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[3] = {2, 3, 5}, cd[1] = {3}, kd[3] = {1, 3, 1};
    ir_tensor *x = fact(g, "x", 3, xd), *q = ir_tensor_new(g, "q", IR_U8, 3, xd);
    float scales[3] = {0.01f, 0.02f, 0.005f}, kv[3] = {0.5f, -2.0f, 3.0f}, lo = -0.4f, hi = 0.9f;
    uint8_t zps[3] = {128, 100, 140};
    ir_tensor *s = ir_const_new(g, "s", IR_F32, 1, cd, scales), *z = ir_const_new(g, "z", IR_U8, 1, cd, zps);
    ir_tensor *qin[3] = {x, s, z};
    ir_set_int(g, node(g, IR_OP_QUANTIZE_LINEAR, "quant", 3, qin, q), "axis", 1);
    ir_tensor *dq = fact(g, "dq", 3, xd), *th = fact(g, "th", 3, xd), *dv = fact(g, "dv", 3, xd);
    ir_tensor *cl = fact(g, "cl", 3, xd), *y = fact(g, "y", 3, xd);
    ir_tensor *dqin[3] = {q, s, z};
    ir_set_int(g, node(g, IR_OP_DEQUANTIZE_LINEAR, "dequant", 3, dqin, dq), "axis", 1);
    node(g, IR_OP_TANH, "tanh", 1, &dq, th)->act.kind = IR_ACT_RELU;
    ir_tensor *div_in[2] = {th, ir_const_new(g, "k", IR_F32, 3, kd, kv)};
    node(g, IR_OP_DIV, "div", 2, div_in, dv);
    ir_tensor *clip_in[3] = {dv, ir_const_new(g, "lo", IR_F32, 0, NULL, &lo),
                             ir_const_new(g, "hi", IR_F32, 0, NULL, &hi)};
    node(g, IR_OP_CLIP, "clip", 3, clip_in, cl);
    ir_set_int(g, node(g, IR_OP_LOG_SOFTMAX, "logsoftmax", 1, &cl, y), "axis", 1);
    tg_set_io(g, 1, &x, y);
    float *xv = random_input(30, 8);
    const void *in[1] = {xv};
    check_graph(g, in);
    free(xv);
    ir_graph_free(g);
}

/* Transposes (int8 in the quantized part, f32 after it) and a float
 * reduction with a fused activation. */
Test(npurt, transposes_and_reductions_match_reference)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 3, 4, 5}, td[4] = {1, 4, 5, 3}, fd[4] = {3, 5, 4, 1}, rd[3] = {3, 4, 1};
    ir_tensor *x = fact(g, "x", 4, xd), *q = act(g, "q", 4, xd, 1.0f / 127, 5);
    ir_tensor *tq = act(g, "tq", 4, td, 1.0f / 127, 5), *dq = fact(g, "dq", 4, td);
    ir_tensor *tf = fact(g, "tf", 4, fd), *y = fact(g, "y", 3, rd);
    quantize(g, "quant", x, q);
    int64_t p1[4] = {0, 2, 3, 1};
    ir_set_ints(g, node(g, IR_OP_TRANSPOSE, "nhwc", 1, &q, tq), "perm", 4, p1);
    dequantize(g, "dequant", tq, dq);
    node(g, IR_OP_TRANSPOSE, "reverse", 1, &dq, tf); /* no perm: the dims reversed */
    ir_node *r = node(g, IR_OP_REDUCE_MEAN, "mean", 1, &tf, y);
    int64_t axes[1] = {-3};
    ir_set_ints(g, r, "axes", 1, axes);
    ir_set_int(g, r, "keepdims", 0);
    r->act.kind = IR_ACT_RELU;
    tg_set_io(g, 1, &x, y);
    float *xv = random_input(60, 9);
    const void *in[1] = {xv};
    check_graph(g, in);
    free(xv);
    ir_graph_free(g);
}

/* ---- npurt_open rejects broken records, naming the step -------------------- */

typedef void (*mutate_fn)(asm_state *a);

/* Assembles the cnn graph with one mutation; npurt_open must fail with a
 * message naming the step and its node and containing `what`. */
static void expect_open_fail(mutate_fn mutate, uint32_t step, const char *node_name, const char *what)
{
    ir_graph *g = cnn_graph();
    asm_state *a = asm_new(g);
    mutate(a);
    size_t size;
    void *blob = assemble(a, &size);
    npub_view v;
    npub_error pe;
    cr_assert_eq(npurt_open(blob, size, &v, &pe), -1, "a broken binary was accepted (%s)", what);
    char prefix[96];
    snprintf(prefix, sizeof prefix, "step %u (node '%s'", step, node_name);
    cr_assert(strstr(pe.msg, prefix), "'%s' does not name '%s'", pe.msg, prefix);
    cr_assert(strstr(pe.msg, what), "'%s' does not say '%s'", pe.msg, what);
    cr_assert(pe.offset > 0 && pe.offset < size, "offset %u", pe.offset);
    free(blob);
    asm_delete(a);
    ir_graph_free(g);
}

static void unknown_kernel(asm_state *a)
{
    rec_of(a, STEP_CONV1)->kernel = 99;
    a->steps[STEP_CONV1].op = 99;
}
static void kernel_differs_from_op(asm_state *a)
{
    a->steps[STEP_POOL].op = NPURT_K_QAVGPOOL;
}
static void step_shorter_than_record(asm_state *a)
{
    a->steps[STEP_CONV1].b -= 4;
}
static void truncated_params(asm_state *a)
{
    uint32_t keep = (uint32_t)sizeof(npurt_rec_header) + 4 * 4 + 8; /* slots and 2 words of parameters */
    rec_of(a, STEP_CONV1)->size = keep;
    a->steps[STEP_CONV1].b = keep;
}
static void arrays_cut(asm_state *a)
{
    rec_of(a, STEP_CONV1)->size -= 8; /* one multiplier and shift short */
    a->steps[STEP_CONV1].b -= 8;
}
static void index_out_of_range(asm_state *a)
{
    slots_of(a, STEP_CONV1)[1] = a->n_tensors + 5;
}
static void empty_slot(asm_state *a)
{
    slots_of(a, STEP_FC)[0] = NPUB_NONE;
}
static void weight_dtype(asm_state *a)
{
    a->tensors[slots_of(a, STEP_CONV1)[1]].dtype = IR_U8; /* same size, wrong type */
}
static void input_dtype(asm_state *a)
{
    a->tensors[slots_of(a, STEP_QUANT)[0]].dtype = IR_I32; /* f32 expected, same size */
}
static void record_shape(asm_state *a)
{
    npurt_p_qpool *p = (npurt_p_qpool *)(slots_of(a, STEP_POOL) + 2);
    p->h_in = 16, p->h_out = 8; /* a consistent pool that would read past its input */
}
static void old_version(asm_state *a)
{
    rec_of(a, STEP_FC)->version = NPURT_REC_VERSION + 1;
}
static void little_scratch(asm_state *a)
{
    a->scratch = 4;
}
static void output_in_const(asm_state *a)
{
    npub_tensor *t = &a->tensors[slots_of(a, STEP_POOL)[1]];
    t->region = NPUB_REGION_CONST;
    t->offset = 0;
    while (a->consts.size < t->size) {
        size_t off;
        npu_err e;
        emit_blob_add(&a->consts, NULL, 16, 1, &off, &e);
    }
}

static void output_over_input(asm_state *a)
{
    /* a pool writing over its own input (found by tests/fuzz fz_npub, for a concat) */
    const npub_tensor *x = &a->tensors[slots_of(a, STEP_POOL)[0]];
    npub_tensor *y = &a->tensors[slots_of(a, STEP_POOL)[1]];
    y->region = x->region;
    y->offset = x->offset + 1;
}

Test(npurt, open_rejects_broken_records)
{
    expect_open_fail(unknown_kernel, STEP_CONV1, "conv1", "unknown kernel id 99");
    expect_open_fail(kernel_differs_from_op, STEP_POOL, "pool", "the step says");
    expect_open_fail(step_shorter_than_record, STEP_CONV1, "conv1", "its step");
    expect_open_fail(truncated_params, STEP_CONV1, "conv1", "truncated");
    expect_open_fail(arrays_cut, STEP_CONV1, "conv1", "its parameters make");
    expect_open_fail(index_out_of_range, STEP_CONV1, "conv1", "out of range");
    expect_open_fail(empty_slot, STEP_FC, "fc", "slot 0 is empty");
    expect_open_fail(weight_dtype, STEP_CONV1, "conv1", "dtype");
    expect_open_fail(input_dtype, STEP_QUANT, "quant", "dtype");
    expect_open_fail(record_shape, STEP_POOL, "pool", "bytes");
    expect_open_fail(old_version, STEP_FC, "fc", "version");
    expect_open_fail(little_scratch, STEP_CONV1, "conv1", "scratch");
    expect_open_fail(output_in_const, STEP_POOL, "pool", "constant");
    expect_open_fail(output_over_input, STEP_POOL, "pool", "overlaps input slot 0");
}

/* Every truncation of a record (with the step and header agreeing) fails
 * the structural check instead of reading past it. */
Test(npurt, every_record_truncation_is_rejected)
{
    ir_graph *g = cnn_graph();
    expect_truncations_rejected(g);
    ir_graph_free(g);
}

/* ---- npurt_run: environment, NPU steps, the step hook ----------------------- */

typedef struct fake_npu {
    int calls, fail_with;
    uint32_t first, count;
    uint8_t *region[4];
} fake_npu;

static int fake_launch(void *ud, const npub_view *v, uint32_t first, uint32_t count, uint8_t *const region[4])
{
    fake_npu *f = ud;
    (void)v;
    f->calls++;
    f->first = first;
    f->count = count;
    memcpy(f->region, region, sizeof f->region);
    return f->fail_with;
}

static void count_steps(void *ud, uint32_t step, int done)
{
    int *calls = ud;
    (void)step;
    calls[done ? 1 : 0]++;
}

/* The cnn graph with an NPU step (command words 1..2) in front. */
static void *npu_blob(ir_graph *g, size_t *size)
{
    asm_state *a = asm_new(g);
    memmove(a->steps + 1, a->steps, sizeof(npub_step) * a->n_steps);
    a->n_steps++;
    a->steps[0] = (npub_step){.kind = NPUB_STEP_NPU, .a = 1, .b = 2, .name = add_string(a, "npu0")};
    a->n_cmds = 4;
    void *blob = assemble(a, size);
    asm_delete(a);
    return blob;
}

Test(npurt, run_launches_npu_steps_with_region_bases)
{
    ir_graph *g = cnn_graph();
    size_t size;
    void *blob = npu_blob(g, &size);
    npub_view v;
    npub_error pe;
    cr_assert_eq(npurt_open(blob, size, &v, &pe), 0, "%s", pe.msg);
    npurt_env env;
    env_alloc(&v, &env);
    fake_npu f = {0};
    int hook[2] = {0, 0};
    env.npu_launch = fake_launch;
    env.npu_ud = &f;
    env.on_step = count_steps;
    env.step_ud = hook;
    cr_assert_eq(npurt_run(&v, &env, &pe), 0, "%s", pe.msg);
    cr_assert_eq(f.calls, 1);
    cr_assert(f.first == 1 && f.count == 2, "launched words %u+%u", f.first, f.count);
    cr_assert_eq(f.region[NPUB_REGION_CONST], v.constants, "const resolves to the blob's CONSTANTS");
    cr_assert_eq(f.region[NPUB_REGION_ARENA], env.region[NPUB_REGION_ARENA]);
    cr_assert_eq(f.region[NPUB_REGION_OUTPUT], env.region[NPUB_REGION_OUTPUT]);
    cr_assert(hook[0] == (int)v.n_steps && hook[1] == (int)v.n_steps, "hook %d/%d of %u", hook[0], hook[1],
              v.n_steps);

    f.fail_with = 5;
    cr_assert_eq(npurt_run(&v, &env, &pe), -1);
    cr_assert(strstr(pe.msg, "step 0 (node 'npu0', NPU)") && strstr(pe.msg, "fault 5"), "%s", pe.msg);
    env.npu_launch = NULL;
    cr_assert_eq(npurt_run(&v, &env, &pe), -1);
    cr_assert(strstr(pe.msg, "npu_launch"), "%s", pe.msg);
    env_free(&env);
    free(blob);
    ir_graph_free(g);
}

Test(npurt, run_checks_the_environment)
{
    ir_graph *g = cnn_graph();
    asm_state *a = asm_new(g);
    size_t size;
    void *blob = assemble(a, &size);
    npub_view v;
    npub_error pe;
    cr_assert_eq(npurt_open(blob, size, &v, &pe), 0, "%s", pe.msg);
    npurt_env env;
    env_alloc(&v, &env);
    env.region_size[NPUB_REGION_ARENA] -= 1;
    cr_assert_eq(npurt_run(&v, &env, &pe), -1);
    cr_assert(strstr(pe.msg, "arena region"), "%s", pe.msg);
    env.region_size[NPUB_REGION_ARENA] += 1;
    env.scratch_size = v.memory->scratch_bytes - 1;
    cr_assert_eq(npurt_run(&v, &env, &pe), -1);
    cr_assert(strstr(pe.msg, "scratch"), "%s", pe.msg);
    env.scratch_size = v.memory->scratch_bytes;
    uint8_t *in = env.region[NPUB_REGION_INPUT];
    env.region[NPUB_REGION_INPUT] = NULL;
    cr_assert_eq(npurt_run(&v, &env, &pe), -1);
    cr_assert(strstr(pe.msg, "input region"), "%s", pe.msg);
    env.region[NPUB_REGION_INPUT] = in;
    /* an explicit const region (a copy of the constants) is used instead of the blob's */
    uint8_t *cst = malloc(v.constants_size);
    memcpy(cst, v.constants, v.constants_size);
    env.region[NPUB_REGION_CONST] = cst;
    env.region_size[NPUB_REGION_CONST] = v.constants_size;
    cr_assert_eq(npurt_run(&v, &env, &pe), 0, "%s", pe.msg);
    free(cst);
    env_free(&env);
    free(blob);
    asm_delete(a);
    ir_graph_free(g);
}

/* ---- what the emitter accepts -------------------------------------------- */

Test(npurt, host_support_says_why_not)
{
    ir_graph *g = cnn_graph();
    const char *why = NULL;
    ir_node *conv = g->nodes[STEP_CONV1];
    conv->act.kind = IR_ACT_LEAKY_RELU; /* not a clamp: needs a LUT */
    cr_assert_not(emit_host_supports(g, conv, &why));
    cr_assert(why && strstr(why, "quantization parameters"), "%s", why ? why : "(null)");
    emit_blob params;
    emit_blob_init(&params, npu_alloc_default());
    asm_state *a = calloc(1, sizeof *a);
    a->index = malloc(sizeof(uint32_t) * (size_t)g->n_tensors);
    for (int i = 0; i < g->n_tensors; i++)
        a->index[i] = NPUB_NONE;
    a->strings_size = 1;
    emit_blob_init(&a->consts, npu_alloc_default());
    emit_blob_init(&a->params, npu_alloc_default());
    emit_tensor_map map = {map_index, a};
    uint16_t k;
    uint32_t off, sz, scratch;
    npu_err e;
    cr_assert_eq(emit_host_step(g, conv, &map, &params, &k, &off, &sz, &scratch, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "conv1") && strstr(e.msg, "LeakyRelu"), "%s", e.msg);
    cr_assert_eq(params.size, 0, "nothing appended on failure");
    conv->act.kind = IR_ACT_NONE;

    /* a float Conv over int8 weights: the float kernel takes f32 only (as
     * the reference adapter says); an int8 Softmax: f32 only */
    ir_tensor *q = g->nodes[STEP_QUANT]->outputs[0];
    q->quant = NULL;
    q->dtype = IR_F32;
    cr_assert_not(emit_host_supports(g, conv, &why));
    cr_assert(why && strstr(why, "reference adapter rejects"), "%s", why ? why : "(null)");
    ir_node *sm = g->nodes[g->n_nodes - 1];
    ir_tensor *dq = sm->inputs[0];
    dq->dtype = IR_I8;
    cr_assert_not(emit_host_supports(g, sm, &why));
    cr_assert(why && strstr(why, "f32"), "%s", why ? why : "(null)");
    emit_blob_free(&params);
    asm_delete(a);
    ir_graph_free(g);
}

/* Corrupting any byte of any record (the CRCs recomputed, so npub_open
 * passes) never makes the runtime read or write outside its buffers: the
 * record is rejected, or it runs within its tensors (ASan checks this). */
Test(npurt, corrupted_records_are_rejected_or_run_in_bounds)
{
    ir_graph *g = cnn_graph();
    int rejected, ran;
    expect_flips_safe(g, &rejected, &ran);
    cr_log_info("%d rejected, %d ran", rejected, ran);
    cr_assert_gt(rejected, 0);
    cr_assert_gt(ran, 0, "changes to parameter values the kernels accept still run");
    ir_graph_free(g);
}
