/* Tests of src/tiler: one-node and small multi-node quantized graphs built by
 * hand (tests/support/tiler_graphs.h), a hand-made memory plan and schedule,
 * for every target under targets/. Structural checks (every instruction
 * decodes and passes tgt_check, the SRAM holds every tile, tile counts follow
 * the SRAM size, int4 weights expand where the ISA has no w4) always run;
 * functional checks (the NPU model against the reference, bit for bit) run
 * when sim/npu.h exists. */
#include "tests/support/tiler_graphs.h"
#include "tiler/tile_internal.h"

/* ---- the cases ---- */

typedef struct tcase {
    const char *name;
    ir_graph *(*make)(int arg);
    int arg;
} tcase;

static const conv_spec conv_specs[] = {
    {1, 16, 20, 20, 32, 3, 1, 1, 1, IR_I8, true, 1},  /* 0: 3x3 pad 1 */
    {1, 8, 17, 17, 16, 3, 2, 1, 1, IR_I8, false, 1},  /* 1: stride 2 */
    {1, 32, 10, 10, 24, 1, 1, 0, 1, IR_I8, false, 1}, /* 2: 1x1 */
    {1, 16, 12, 12, 16, 3, 1, 1, 1, IR_I4, true, 1},  /* 3: int4 */
    {1, 3, 12, 12, 8, 3, 1, 1, 1, IR_I4, false, 1},   /* 4: int4, odd filter (expanded) */
    {1, 32, 14, 14, 32, 3, 1, 1, 32, IR_I8, true, 1}, /* 5: depthwise */
    {1, 8, 10, 10, 8, 3, 1, 1, 2, IR_I8, false, 1},   /* 6: grouped */
    {1, 64, 56, 56, 64, 3, 1, 1, 1, IR_I8, true, 1},  /* 7: resnet-like, many tiles on lite */
    {2, 300, 9, 9, 40, 3, 1, 1, 1, IR_I8, false, 1},  /* 8: batch 2, reduction split on narrow */
    {1, 8, 15, 15, 8, 3, 1, 2, 1, IR_I8, false, 2},   /* 9: dilation 2 */
    {1, 4, 6, 300, 8, 3, 1, 1, 1, IR_I8, false, 1},   /* 10: rows wider than npu-v1-narrow's 256: column tiles */
};

static ir_graph *mk_conv(int i)
{
    return conv_graph(&conv_specs[i]);
}

static ir_graph *mk_gemm(int i)
{
    switch (i) {
    case 0: return gemm_graph(1, 300, 70, IR_I8);
    case 1: return gemm_graph(4, 64, 40, IR_I4);
    case 2: return gemm_graph(3, 5000, 20, IR_I8); /* K split on npu-v1-narrow */
    default: return gemm_graph(300, 64, 16, IR_I8); /* M tiles on npu-v1-narrow */
    }
}

static ir_graph *mk_pool(int i)
{
    switch (i) {
    case 0: return pool_graph(IR_OP_MAX_POOL, 16, 20, 2, 2, 0, 0.05f);
    case 1: return pool_graph(IR_OP_MAX_POOL, 24, 15, 3, 2, 1, 0.05f);
    case 2: return pool_graph(IR_OP_AVERAGE_POOL, 8, 11, 3, 1, 1, 0.04f);
    case 4: return pool_graph_ex(IR_OP_MAX_POOL, 12, 16, 3, 2, 0, 0.05f, true, false); /* ceil: last window clipped */
    case 5: return pool_graph_ex(IR_OP_AVERAGE_POOL, 12, 13, 3, 2, 1, 0.05f, false, true); /* count_include_pad */
    default: return pool_graph(IR_OP_GLOBAL_AVERAGE_POOL, 64, 7, 7, 1, 0, 0.02f); /* rescale */
    }
}

static ir_graph *mk_binary(int i)
{
    int64_t full[4] = {1, 16, 9, 11}, chan[4] = {1, 16, 1, 1}, row[4] = {1, 1, 1, 11};
    int64_t batch[4] = {3, 5, 6, 7}, one[4] = {1, 5, 6, 7};
    switch (i) {
    case 4: return binary_graph(IR_OP_SUB, 4, batch, one, batch, false);
    case 0: return binary_graph(IR_OP_ADD, 4, full, full, full, true);
    case 1: return binary_graph(IR_OP_ADD, 4, full, chan, full, false);
    case 2: return binary_graph(IR_OP_MUL, 4, row, full, full, false);
    default: return binary_graph(IR_OP_MAX, 4, full, full, full, false);
    }
}

static ir_graph *mk_lut(int i)
{
    return lut_graph(i ? 70000 : 5000);
}

/* Two graph inputs concatenated along W (strided rows), the second requantized. */
static ir_graph *concat_w_graph(void)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t ad[4] = {1, 4, 6, 10}, bd[4] = {1, 4, 6, 7}, yd[4] = {1, 4, 6, 17};
    ir_tensor *a = act(g, "a", 4, ad, 0.05f, 2), *b = act(g, "b", 4, bd, 0.03f, -7);
    ir_tensor *y = act(g, "y", 4, yd, 0.05f, 2);
    ir_tensor *ins[2] = {a, b};
    ir_node *n = ir_node_new(g, IR_OP_CONCAT, "concat", 2, ins, 1, &y);
    ir_set_int(g, n, "axis", 3);
    tg_set_io(g, 2, ins, y);
    return g;
}

static ir_graph *mk_concat(int i)
{
    return i ? concat_w_graph() : concat_graph();
}

static const tcase cases[] = {
    {"conv3x3", mk_conv, 0},      {"conv_s2", mk_conv, 1},     {"conv1x1", mk_conv, 2},    {"conv_i4", mk_conv, 3},
    {"conv_i4_odd", mk_conv, 4},  {"dwconv", mk_conv, 5},      {"grouped", mk_conv, 6},    {"conv_big", mk_conv, 7},
    {"conv_batch", mk_conv, 8}, {"conv_dil", mk_conv, 9}, {"conv_wide_rows", mk_conv, 10}, {"gemm_mtiles", mk_gemm, 3},   {"gemm", mk_gemm, 0},        {"gemm_i4", mk_gemm, 1},    {"gemm_ksplit", mk_gemm, 2},
    {"maxpool", mk_pool, 0},      {"maxpool_pad", mk_pool, 1}, {"avgpool", mk_pool, 2},    {"gavgpool", mk_pool, 3}, {"maxpool_ceil", mk_pool, 4}, {"avgpool_cpad", mk_pool, 5},
    {"add_relu", mk_binary, 0},   {"add_bcast", mk_binary, 1}, {"mul_bcast", mk_binary, 2}, {"max", mk_binary, 3}, {"sub_nbcast", mk_binary, 4},
    {"lut", mk_lut, 0},           {"lut_big", mk_lut, 1},      {"concat", mk_concat, 0}, {"concat_w", mk_concat, 1},
};

Test(tiler, every_case_on_every_target)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            built b;
            npu_err e;
            ir_graph *g = cases[ci].make(cases[ci].arg);
            for (int i = 0; i < g->n_nodes; i++) {
                const char *why = NULL;
                cr_assert(tile_supports(t, g, g->nodes[i], &why), "%s on %s: %s", cases[ci].name, t->name, why);
            }
            cr_assert_eq(build(t, g, &b, &e), NPU_OK, "%s on %s: %s", cases[ci].name, t->name, e.msg);
            int counts[TG_COUNTS];
            check_program(t, &b, cases[ci].name, counts);
            cr_assert_gt(compute_count(counts), 0, "%s on %s computes", cases[ci].name, t->name);
#ifdef HAVE_NPU_MODEL
            run_functional(t, &b, cases[ci].name, (uint32_t)ci * 77 + 1);
#endif
            built_free(&b);
        }
        tgt_free(t);
    }
}

/* conv -> maxpool -> flatten (aliased: no instructions) -> gemm, as a small CNN. */
static ir_graph *chain_graph(void)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 4, 16, 16};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, -3);
    conv_spec cs = {1, 4, 16, 16, 8, 3, 1, 1, 1, IR_I8, true, 1};
    ir_tensor *c = add_conv(g, x, &cs, "conv", 31);
    int64_t pd[4] = {1, 8, 8, 8}, fd[2] = {1, 512}, yd[2] = {1, 10}, wd[2] = {10, 512}, bd[1] = {10};
    ir_tensor *p = act(g, "pool", 4, pd, 0.05f, -128);
    c->quant->scale[0] = 0.05f;
    ir_node *pn = ir_node_new(g, IR_OP_MAX_POOL, "maxpool", 1, &c, 1, &p);
    int64_t ks[2] = {2, 2};
    ir_set_ints(g, pn, "kernel_shape", 2, ks);
    ir_set_ints(g, pn, "strides", 2, ks);
    ir_tensor *f = act(g, "flat", 2, fd, 0.05f, -128);
    ir_node_new(g, IR_OP_FLATTEN, "flatten", 1, &p, 1, &f);
    ir_tensor *y = act(g, "logits", 2, yd, 0.1f, 5);
    ir_tensor *w = rand_const(g, "fc:w", IR_I8, 2, wd, -127, 127, 33);
    w->quant = quant(g, 10, 0.003f, 0.0001f);
    ir_tensor *b = rand_const(g, "fc:b", IR_I32, 1, bd, -500, 500, 34);
    ir_tensor *ins[3] = {f, w, b};
    ir_node *fc = ir_node_new(g, IR_OP_GEMM, "fc", 3, ins, 1, &y);
    ir_set_int(g, fc, "transB", 1);
    tg_set_io(g, 1, &x, y);
    return g;
}

Test(tiler, chain_with_aliased_view)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        built b;
        npu_err e;
        cr_assert_eq(build(t, chain_graph(), &b, &e), NPU_OK, "%s", e.msg);
        /* rebuild with the flatten aliased onto its input, as the planner does */
        tile_program_free(&b.prog, npu_alloc_default());
        emit_blob_free(&b.consts);
        emit_blob_init(&b.consts, npu_alloc_default());
        make_plan(b.g, &b.plan, true);
        cr_assert_eq(tile_build(t, b.g, &b.sched, &b.plan, &b.consts, npu_alloc_default(), &b.prog, &e), NPU_OK, "%s",
                     e.msg);
        int counts[TG_COUNTS];
        check_program(t, &b, "chain", counts);
        cr_assert_eq(b.prog.n_layers, 4);
        cr_assert_eq(b.prog.layers[2].n_words, 0, "an aliased view moves nothing");
        cr_assert_gt(b.prog.layers[3].n_words, 0);
        cr_assert_gt(b.prog.layers[0].macs, 0);
#ifdef HAVE_NPU_MODEL
        run_functional(t, &b, "chain", 99);
#endif
        built_free(&b);
        tgt_free(t);
    }
}

static int conv_insns_of(const tgt_target *t, const conv_spec *s, int64_t *cycles, int64_t *consts_size, bool *w4,
                         int64_t *dram)
{
    built b;
    npu_err e;
    cr_assert_eq(build(t, conv_graph(s), &b, &e), NPU_OK, "%s", e.msg);
    int counts[TG_COUNTS];
    check_program(t, &b, "conv", counts);
    *cycles = b.prog.layers[0].cycles;
    if (dram)
        *dram = b.prog.layers[0].dram_bytes;
    cr_assert_geq(b.prog.layers[0].tiles, 1);
    *consts_size = (int64_t)b.consts.size;
    *w4 = false;
    for (size_t off = 0; off < b.prog.n_words;) {
        tgt_decoded d;
        cr_assert_eq(tgt_decode(t->isa, b.prog.words, b.prog.n_words, off, &d, &e), NPU_OK);
        if (t->isa->insns[d.insn].sem == TGT_SEM_CONV && d.v[TGT_F_W4])
            *w4 = true;
        off += (size_t)d.nwords;
    }
    built_free(&b);
    return counts[TGT_SEM_CONV];
}

Test(tiler, tiles_grow_as_sram_shrinks)
{
    const conv_spec *s = &conv_specs[7]; /* 64x56x56 -> 64, 3x3 pad 1 */
    int n[N_TARGETS];
    int64_t cyc[N_TARGETS], cs, dram;
    bool w4;
    /* compulsory traffic: input, output, weights once */
    int64_t once = 2 * s->c * s->h * s->w + s->oc * s->c * s->k * s->k;
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        n[ti] = conv_insns_of(t, s, &cyc[ti], &cs, &w4, &dram);
        cr_log_info("resnet-like 3x3 conv 64x56x56->64 on %s: %d conv tiles, %lld static cycles, %lld DRAM bytes "
                    "(%.2fx compulsory)", t->name, n[ti], (long long)cyc[ti], (long long)dram,
                    (double)dram / (double)once);
        cr_assert_lt(dram, 3 * once, "%s: DRAM traffic near the compulsory minimum", t->name);
        tgt_free(t);
    }
    cr_assert_gt(n[1], 1, "edge-v1-lite needs several tiles");
    cr_assert_geq(n[1], n[0], "lite (128 KiB) has at least as many tiles as edge-v1 (512 KiB)");
    cr_assert_gt(n[1], n[2], "lite has more tiles than wide");
    cr_assert_gt(cyc[1], cyc[2], "the lite array is slower than the wide one");
}

Test(tiler, int4_expands_without_w4)
{
    const conv_spec *s = &conv_specs[3]; /* int4 16 -> 16, 3x3 */
    int64_t cyc, c_v1, c_narrow;
    bool w4_v1, w4_narrow;
    tgt_target *t = load_target("edge-v1");
    conv_insns_of(t, s, &cyc, &c_v1, &w4_v1, NULL);
    tgt_free(t);
    t = load_target("edge-v1-narrow");
    cr_assert_null(tgt_insn_field(t->isa, tgt_insn_for_sem(t->isa, TGT_SEM_CONV), TGT_F_W4));
    conv_insns_of(t, s, &cyc, &c_narrow, &w4_narrow, NULL);
    tgt_free(t);
    cr_assert(w4_v1, "edge-v1 runs int4 weights packed");
    cr_assert(!w4_narrow, "the narrow ISA has no w4");
    int64_t elems = s->oc * s->c * s->k * s->k;
    cr_assert_geq(c_narrow, elems, "expanded to one byte per weight");
    cr_assert_lt(c_v1, c_narrow, "packed weights take less room");
    /* an odd filter (3 x 3x3) cannot be packed by whole bytes: expanded on edge-v1 too */
    t = load_target("edge-v1");
    conv_insns_of(t, &conv_specs[4], &cyc, &c_v1, &w4_v1, NULL);
    tgt_free(t);
    cr_assert(!w4_v1);
}

Test(tiler, supports_reasons)
{
    tgt_target *nar = load_target("edge-v1-narrow"), *v1 = load_target("edge-v1");
    const char *why;
    conv_spec big = {1, 3, 64, 64, 8, 11, 4, 2, 1, IR_I8, false, 1};
    ir_graph *g = conv_graph(&big);
    cr_assert(!tile_supports(nar, g, g->nodes[0], &why));
    cr_assert(strstr(why, "11x11") && strstr(why, "max 8") && strstr(why, "npu-v1-narrow"), "%s", why);
    cr_assert(tile_supports(v1, g, g->nodes[0], &why), "%s", why);
    /* and tile_build itself refuses it with the node's name rather than wrapping a field */
    built b;
    npu_err e;
    g->nodes[0]->unit = IR_UNIT_NPU;
    cr_assert_neq(build(nar, g, &b, &e), NPU_OK);
    cr_assert(strstr(e.msg, "'conv'"), "%s", e.msg);
    emit_blob_free(&b.consts);
    ir_graph_free(g);

    g = pool_graph(IR_OP_MAX_POOL, 4, 9, 2, 1, 0, 0.05f);
    int64_t dl[2] = {2, 2};
    ir_set_ints(g, g->nodes[0], "dilations", 2, dl);
    cr_assert(!tile_supports(v1, g, g->nodes[0], &why));
    cr_assert_str_eq(why, "dilated max pool");
    ir_graph_free(g);

    g = ir_graph_new(npu_alloc_default());
    int64_t d[2] = {2, 8};
    ir_tensor *x = act(g, "x", 2, d, 0.1f, 0), *y = act(g, "y", 2, d, 0.1f, 0), *z = act(g, "z", 2, d, 0.1f, 0);
    ir_node *sm = ir_node_new(g, IR_OP_SOFTMAX, "sm", 1, &x, 1, &y);
    cr_assert(!tile_supports(v1, g, sm, &why));
    cr_assert_str_eq(why, "float op: no integer form (Softmax)");
    ir_tensor *ab[2] = {x, y};
    ir_node *mm = ir_node_new(g, IR_OP_MATMUL, "mm", 2, ab, 1, &z);
    cr_assert(!tile_supports(v1, g, mm, &why));
    cr_assert(strstr(why, "two activations"), "%s", why);
    /* a Gemm whose C is not one value per output column stays float (q_classify), so off the NPU */
    int64_t wd[2] = {8, 8}, cd[2] = {2, 1};
    float wv[64] = {0}, cv[2] = {1, 2};
    ir_tensor *wt = ir_tensor_new(g, "w", IR_F32, 2, wd), *ct = ir_tensor_new(g, "c", IR_F32, 2, cd);
    wt->data = wv, ct->data = cv;
    ir_tensor *gin[3] = {x, wt, ct}, *gy = act(g, "gy", 2, d, 0.1f, 0);
    ir_node *gm = ir_node_new(g, IR_OP_GEMM, "gm", 3, gin, 1, &gy);
    cr_assert(!tile_supports(v1, g, gm, &why));
    cr_assert(strstr(why, "one value per output column"), "%s", why);
    wt->data = ct->data = NULL; /* the graph does not own them */
    ir_graph_free(g);

    /* a quantized node is also lowered for real: a rescale beyond the pool's shift field is refused */
    g = pool_graph(IR_OP_GLOBAL_AVERAGE_POOL, 16, 7, 7, 1, 0, 0.05f / 1048576.0f);
    cr_assert(!tile_supports(v1, g, g->nodes[0], &why));
    cr_assert(strstr(why, "shift") && strstr(why, "'pool'"), "%s", why);
    ir_graph_free(g);

    conv_spec grp = {1, 8, 8, 8, 8, 3, 1, 1, 4, IR_I8, false, 1}; /* grouped, not depthwise: one conv per group */
    g = conv_graph(&grp);
    cr_assert(tile_supports(v1, g, g->nodes[0], &why), "%s", why);
    ir_graph_free(g);
    tgt_free(nar);
    tgt_free(v1);
}

Test(tiler, allocation_failures_are_clean)
{
    tgt_target *t = load_target("edge-v1-lite");
    bool ok = false;
    for (size_t k = 1; k < 400 && !ok; k++) {
        built b;
        memset(&b, 0, sizeof b);
        b.g = concat_graph();
        make_plan(b.g, &b.plan, false);
        b.sched.n_steps = 1;
        b.sched.steps = npu_arena_alloc(b.g->arena, sizeof *b.sched.steps);
        b.sched.steps[0] = (part_step){IR_UNIT_NPU, 0, b.g->n_nodes};
        npu_alloc_counter cnt = {.fail_at = k};
        npu_alloc a = npu_alloc_counting(&cnt);
        emit_blob_init(&b.consts, a);
        npu_err e;
        npu_status st = tile_build(t, b.g, &b.sched, &b.plan, &b.consts, a, &b.prog, &e);
        ok = st == NPU_OK;
        if (!ok)
            cr_assert_eq(st, NPU_EINTERNAL, "%s", e.msg);
        tile_program_free(&b.prog, a);
        emit_blob_free(&b.consts);
        cr_assert_eq(cnt.live_bytes, 0, "fail at %zu: %zu bytes leaked", k, cnt.live_bytes);
        ir_graph_free(b.g);
    }
    cr_assert(ok, "succeeds once allocations do");
    tgt_free(t);
}

/* x -> conv -> add(x, conv): the add runs inside the conv's tiles where the ISA has a fifth token. */
static ir_graph *residual_graph(void)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 32, 28, 28};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, -6);
    conv_spec cs = {1, 32, 28, 28, 32, 3, 1, 1, 1, IR_I8, false, 1};
    ir_tensor *c = add_conv(g, x, &cs, "conv", 41);
    ir_tensor *y = act(g, "sum", 4, xd, 0.06f, -128);
    ir_tensor *ins[2] = {x, c};
    ir_node *n = ir_node_new(g, IR_OP_ADD, "add", 2, ins, 1, &y);
    n->act.kind = IR_ACT_RELU;
    tg_set_io(g, 1, &x, y);
    return g;
}

Test(tiler, conv_add_fused_where_tokens_allow)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        built b;
        npu_err e;
        cr_assert_eq(build(t, residual_graph(), &b, &e), NPU_OK, "%s", e.msg);
        int counts[TG_COUNTS];
        check_program(t, &b, "residual", counts);
        cr_assert_eq(b.prog.n_layers, 2);
        int64_t wmax = tgt_field_max(t->isa, tgt_insn_for_sem(t->isa, TGT_SEM_SYNC), TGT_F_WAIT);
        bool five = wmax >= 31;
        cr_assert_eq(b.prog.layers[1].fused, five, "%s: fused iff the ISA has a fifth token", t->name);
        cr_assert_eq(b.prog.layers[1].n_words == 0, five);
        if (five) { /* one eltwise per conv tile (in its output stage where the ISA has the epilogue), and the
                     * conv's output never stored */
            cr_assert_eq(counts[TGT_SEM_ELTWISE] + counts[TG_EPI_ELT], b.prog.layers[0].tiles, "%s", t->name);
            cr_assert_eq(counts[TG_EPI_ELT] > 0, has_epi_elt(t), "%s: the epilogue where the ISA has it", t->name);
        }
#ifdef HAVE_NPU_MODEL
        run_functional(t, &b, "residual", 5);
#endif
        built_free(&b);
        tgt_free(t);
    }
}

/* x -> conv1 -> t -> conv2 -> u; z = add(u, x) -> lut -> y, with z planned exactly on t (the
 * memory planner's reuse of a dead input): the fused conv2 + add overwrites its own input as it goes. */
static ir_graph *inplace_graph(ir_tensor **t_out, ir_tensor **z_out)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 64, 32, 32}, td[1] = {256};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, -6);
    conv_spec cs = {1, 64, 32, 32, 64, 3, 1, 1, 1, IR_I8, true, 1};
    ir_tensor *t = add_conv(g, x, &cs, "conv1", 51);
    ir_tensor *u = add_conv(g, t, &cs, "conv2", 52);
    ir_tensor *z = act(g, "sum", 4, xd, 0.06f, -100);
    ir_tensor *ins[2] = {u, x};
    ir_node_new(g, IR_OP_ADD, "add", 2, ins, 1, &z);
    ir_tensor *y = act(g, "y", 4, xd, 1.0f / 256, -128);
    ir_tensor *lt[2] = {z, rand_const(g, "table", IR_I8, 1, td, -128, 127, 53)};
    ir_node_new(g, IR_OP_LUT, "lut", 2, lt, 1, &y);
    tg_set_io(g, 1, &x, y);
    *t_out = t;
    *z_out = z;
    return g;
}

Test(tiler, conv_add_in_place_over_the_conv_input)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        built b;
        npu_err e;
        ir_tensor *tt, *zz;
        cr_assert_eq(build(t, inplace_graph(&tt, &zz), &b, &e), NPU_OK, "%s", e.msg);
        tile_program_free(&b.prog, npu_alloc_default());
        emit_blob_free(&b.consts);
        emit_blob_init(&b.consts, npu_alloc_default());
        b.plan.t[zz->id].offset = b.plan.t[tt->id].offset; /* z reuses t's bytes */
        cr_assert_eq(tile_build(t, b.g, &b.sched, &b.plan, &b.consts, npu_alloc_default(), &b.prog, &e), NPU_OK, "%s",
                     e.msg);
        int counts[TG_COUNTS];
        check_program(t, &b, "inplace", counts);
        bool six = tgt_field_max(t->isa, tgt_insn_for_sem(t->isa, TGT_SEM_SYNC), TGT_F_WAIT) >= 63;
        cr_assert_eq(b.prog.layers[2].fused, six, "%s: fused in place iff the ISA has a sixth token", t->name);
        if (six)
            cr_assert_gt(b.prog.layers[1].tiles, 1, "%s: several row tiles overwrite the input in turn", t->name);
#ifdef HAVE_NPU_MODEL
        run_functional(t, &b, "inplace", 9);
#endif
        built_free(&b);
        tgt_free(t);
    }
}

/* depthwise 3x3 -> pointwise 1x1 (MobileNet): one pipeline, the intermediate stays in SRAM. */
static ir_graph *dw_pw_graph(int64_t stride)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 32, 40, 40};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, -6);
    conv_spec dw = {1, 32, 40, 40, 32, 3, stride, 1, 32, IR_I8, true, 1};
    ir_tensor *d = add_conv(g, x, &dw, "dw", 61);
    int64_t oh = (40 + 2 - 3) / stride + 1;
    conv_spec pw = {1, 32, oh, oh, 48, 1, 1, 0, 1, IR_I8, false, 1};
    ir_tensor *y = add_conv(g, d, &pw, "pw", 62);
    tg_set_io(g, 1, &x, y);
    return g;
}

Test(tiler, depthwise_then_pointwise_cascaded)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        for (int64_t s = 1; s <= 2; s++) {
            tgt_target *t = load_target(targets[ti]);
            built b;
            npu_err e;
            cr_assert_eq(build(t, dw_pw_graph(s), &b, &e), NPU_OK, "%s", e.msg);
            int counts[TG_COUNTS];
            check_program(t, &b, "dw_pw", counts);
            cr_assert(b.prog.layers[1].fused && b.prog.layers[1].n_words == 0, "%s: cascaded", t->name);
            cr_assert_eq(counts[TGT_SEM_DWCONV], counts[TGT_SEM_CONV], "%s: one 1x1 conv per depthwise tile", t->name);
            cr_assert_eq(counts[TGT_SEM_DMA_STORE], b.prog.layers[0].tiles, "%s: only the final tiles are stored",
                         t->name);
            cr_assert_gt(b.prog.layers[1].macs, 0);
#ifdef HAVE_NPU_MODEL
            run_functional(t, &b, "dw_pw", 13);
#endif
            built_free(&b);
            tgt_free(t);
        }
    }
}

/* A failure of the probe itself (memory runs out while lowering the node
 * alone) is the compile's failure, NPU_EINTERNAL naming the node: it used to
 * read as "the NPU cannot run it" and move the node to the host silently. */
Test(tiler, estimate_reports_faults)
{
    tgt_target *v1 = load_target("edge-v1");
    ir_graph *g = conv_graph(&conv_specs[0]);
    const char *why = NULL;
    int64_t cycles = 0;
    npu_err e;
    cr_assert_eq(tile_estimate(v1, g, g->nodes[0], &cycles, &why, &e), NPU_OK, "%s", why ? why : "");
    cr_assert_gt(cycles, 0);
    npu_alloc_counter ctr = {.fail_at = 1};
    npu_alloc keep = g->alloc;
    g->alloc = npu_alloc_counting(&ctr);
    why = NULL;
    npu_status st = tile_estimate(v1, g, g->nodes[0], &cycles, &why, &e);
    g->alloc = keep;
    cr_assert_eq(st, NPU_EINTERNAL, "status %d, reason %s", st, why ? why : "(none)");
    cr_assert(strstr(e.msg, "out of memory") && strstr(e.msg, g->nodes[0]->name), "%s", e.msg);
    cr_assert_eq(ctr.live_bytes, 0);
    tgt_free(v1);
}

/* A stride-1 conv of many output tiles whose slots fit three times over on
 * edge-v1: three output slots, so work j+3's loads wait for store j, and the
 * NPU model (its race check) still agrees with the reference. */
Test(tiler, window_ops_take_a_third_slot_where_it_fits)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        built b;
        npu_err e;
        cr_assert_eq(build(t, conv_graph(&conv_specs[7]), &b, &e), NPU_OK, "%s", e.msg);
        int counts[TG_COUNTS];
        check_program(t, &b, "conv_big", counts);
        int64_t dst[64];
        int n_dst = 0;
        for (size_t off = 0; off < b.prog.n_words;) {
            tgt_decoded d;
            cr_assert_eq(tgt_decode(t->isa, b.prog.words, b.prog.n_words, off, &d, &e), NPU_OK, "%s", e.msg);
            tgt_sem sem = t->isa->insns[d.insn].sem;
            bool seen = false;
            for (int i = 0; i < n_dst; i++)
                seen |= dst[i] == d.v[TGT_F_DST];
            if ((sem == TGT_SEM_CONV || sem == TGT_SEM_DWCONV) && !seen && n_dst < 64)
                dst[n_dst++] = d.v[TGT_F_DST];
            off += (size_t)d.nwords;
        }
        if (b.prog.layers[0].tiles >= 3)
            cr_assert(n_dst == 2 || n_dst == 3, "%s: %d output slots", t->name, n_dst);
        if (ti == 0)
            cr_assert_eq(n_dst, 3, "%s: %d output slots over %d tiles", t->name, n_dst, b.prog.layers[0].tiles);
#ifdef HAVE_NPU_MODEL
        run_functional(t, &b, "conv_big", 7);
#endif
        built_free(&b);
        tgt_free(t);
    }
}

/* An FC whose 16-column weight block does not fit edge-v1-lite's 128 KiB
 * twice (K 6000: 2 x 96 KB; fmnist cnn's fc1, K 3136, did not fit the
 * memory planner's 64 KiB trials): the column tile must go on down to the
 * array's 8 columns. The search once stayed at 16 forever. */
Test(tiler, fc_column_tiles_shrink_below_16_on_an_8_column_array, .timeout = 60)
{
    tgt_target *t = load_target("edge-v1-lite");
    cr_assert_eq(t->p[TGT_P_MAC_COLS], 8, "edge-v1-lite has 8 MAC columns");
    built b;
    npu_err e;
    cr_assert_eq(build(t, gemm_graph(1, 6000, 128, IR_I8), &b, &e), NPU_OK, "%s", e.msg);
    int counts[TG_COUNTS];
    check_program(t, &b, "fc_6000x128", counts);
    cr_assert_geq(counts[TGT_SEM_MATMUL], 16, "column tiles of 8 or fewer: %d matmuls", counts[TGT_SEM_MATMUL]);
#ifdef HAVE_NPU_MODEL
    run_functional(t, &b, "fc_6000x128", 11);
#endif
    built_free(&b);
    tgt_free(t);
}

/* A batch-1 classifier (1024 -> 1000, ResNet-18's fc with twice its inputs)
 * streams a weight block per column tile for a few hundred cycles of MACs:
 * on edge-v1 the blocks after the first two load their tails over the flash
 * bus on channel 1, behind the stores there, and the layer ends sooner than
 * from DRAM alone (placement.flash_stream off). Bit-exact on the model. */
static ir_graph *wide_classifier(void)
{
    return gemm_graph(1, 1024, 1000, IR_I8);
}

Test(tiler, classifier_blocks_stream_over_both_buses)
{
    tgt_target *t = load_target("edge-v1");
    flash_run r[2];
    build_flash_on_off(t, wide_classifier, "fc over both buses", 12, r);
    cr_assert_gt(r[0].counts[TGT_SEM_MATMUL], 2, "column tiles: %d matmuls", r[0].counts[TGT_SEM_MATMUL]);
    cr_assert_gt(r[0].flash, 0, "some weights over the flash bus");
    cr_assert_eq(r[1].flash, 0, "flash_stream off: no flash loads");
    cr_assert_lt(r[0].cycles, r[1].cycles, "both buses: %lld cycles, DRAM alone %lld", (long long)r[0].cycles,
                 (long long)r[1].cycles);
    tgt_free(t);
}

/* n convs at hw x hw (stride 1, same padding), ch[0] -> ch[1] -> ... -> ch[n] channels, conv i k[i] x k[i]. */
static ir_graph *conv_chain(int64_t hw, const int64_t *ch, const int64_t *k, int n)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, ch[0], hw, hw};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, -5), *y = x;
    for (int i = 0; i < n; i++) {
        conv_spec s = {1, ch[i], hw, hw, ch[i + 1], k[i], 1, k[i] / 2, 1, IR_I8, true, 1};
        char name[16];
        snprintf(name, sizeof name, "conv%d", i);
        y = add_conv(g, y, &s, name, 5 + 2 * (uint32_t)i);
    }
    tg_set_io(g, 1, &x, y);
    return g;
}

/* x -> 3x3 conv (c channels) -> 1x1 conv to oc channels */
static ir_graph *two_convs(int64_t c, int64_t hw, int64_t oc)
{
    int64_t ch[3] = {c, c, oc}, k[2] = {3, 1};
    return conv_chain(hw, ch, k, 2);
}

/* A conv whose buffers fit neither above nor below the SRAM the conv before
 * it touches (256 -> 512 channels at 28x28 after a 3x3 conv on edge-v1):
 * its shared buffers and first slots go above that range, the later slots
 * below (tile_sram_place_early), so its first weight block loads while the
 * conv before still runs; placed from 0 it met that range and no constant
 * loaded before the barrier. */
Test(tiler, first_weights_load_beside_the_conv_before)
{
    tgt_target *t = load_target("edge-v1");
    built b;
    int counts[TG_COUNTS];
    build_checked(t, two_convs(256, 28, 512), "two convs", &b, counts);
    cr_assert_eq(b.prog.n_layers, 2);
    int64_t early = loads_before_wait(t, &b.prog.layers[1], &b.prog, TGT_REGION_CONSTANTS, TILE_T_BAR);
    cr_assert_gt(early, 0, "the first weight block before the barrier");
    finish_built(t, &b, "two convs", 63);
    tgt_free(t);
}

/* n 1x1 convs at hw x hw, ch[0] -> ch[1] -> ... -> ch[n] channels (n <= 4). */
static ir_graph *pointwise_chain(int64_t hw, const int64_t *ch, int n)
{
    int64_t k[4] = {1, 1, 1, 1};
    return conv_chain(hw, ch, k, n);
}

/* The middle conv (MobileNetV2's last projection, 960 -> 320 at 7x7, its
 * input in SRAM) streams its weights, each block waiting for a free slot
 * with the DMA idle in between; the conv after it loads its first weights in
 * those gaps, from words inside the middle conv's stream (tile_retro.c),
 * not only after its last load. */
Test(tiler, next_weights_load_in_the_gaps_of_the_conv_before)
{
    tgt_target *t = load_target("edge-v1");
    built b;
    int counts[TG_COUNTS];
    int64_t ch[4] = {32, 960, 320, 1280};
    ir_graph *g = pointwise_chain(7, ch, 3);
    const ir_tensor *mid[2] = {g->nodes[1]->inputs[0], g->nodes[1]->outputs[0]};
    build_resident(t, g, mid, 2, "three 1x1 convs", &b, counts);
    cr_assert_eq(b.prog.n_layers, 3);
    int64_t carried = loads_carried_for(t, &b.prog, &b.prog.layers[1], &b.prog.layers[2]);
    cr_assert_gt(carried, 0, "the next conv's weights load inside the projection's words");
    finish_built(t, &b, "three 1x1 convs", 64);
    tgt_free(t);
}

/* The same with a small conv (320 -> 32) between the projection and the
 * last conv (32 -> 1280): the last one's first weights go into the
 * projection's gaps too, two pipelines back, their SRAM clear of both
 * (tile_retro.c keeps the gaps of the last TILE_GAP_HISTORY pipelines). */
Test(tiler, weights_load_in_the_gaps_two_layers_back)
{
    tgt_target *t = load_target("edge-v1");
    built b;
    int counts[TG_COUNTS];
    int64_t ch[5] = {32, 960, 320, 32, 1280};
    ir_graph *g = pointwise_chain(7, ch, 4);
    const ir_tensor *mid[3] = {g->nodes[1]->inputs[0], g->nodes[1]->outputs[0], g->nodes[2]->outputs[0]};
    build_resident(t, g, mid, 3, "four 1x1 convs", &b, counts);
    cr_assert_eq(b.prog.n_layers, 4);
    int64_t two_back = loads_carried_for(t, &b.prog, &b.prog.layers[1], &b.prog.layers[3]);
    cr_assert_gt(two_back, 0, "the last conv's weights load inside the projection's words");
    cr_assert_gt(loads_carried_for(t, &b.prog, &b.prog.layers[1], &b.prog.layers[2]), 0,
                 "and the small conv's");
    finish_built(t, &b, "four 1x1 convs", 65);
    tgt_free(t);
}

