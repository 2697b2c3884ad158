/* Tests of the inverted-residual cascade (src/tiler/tile_cascade3.c): expand
 * 1x1 -> depthwise -> project 1x1 (-> residual add) as one pipeline over row
 * bands, on every target: which nodes run inside the first one's tiles, what
 * goes to DRAM, band edges (padding, strides, halos), the SRAM and field
 * limits that make it fall back, and the memory planner's side (the
 * intermediates get no DRAM home, mp_check accepts that and nothing else).
 * Functional runs compare the NPU model with the reference bit for bit; the
 * model also faults on unordered overlapping accesses. */
#include "memplan/memplan.h"
#include "tests/support/tiler_graphs.h"
#include "tiler/tile_internal.h"

typedef struct block_spec {
    int64_t c, h, w, expand, k, stride, out; /* out: projection channels, 0 = no projection */
    bool add;                                /* residual add of the block input (stride 1, out == c) */
} block_spec;

/* x -> expand 1x1 (relu) -> depthwise kxk (relu) [-> project 1x1 [-> add(x)]]; mid[] gets the intermediates. */
static ir_graph *block_graph(const block_spec *s, ir_tensor **mid)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, s->c, s->h, s->w};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, -6);
    int64_t ce = s->c * s->expand;
    conv_spec e = {1, s->c, s->h, s->w, ce, 1, 1, 0, 1, IR_I8, true, 1};
    ir_tensor *y = mid[0] = add_conv(g, x, &e, "expand", 71);
    conv_spec d = {1, ce, s->h, s->w, ce, s->k, s->stride, s->k / 2, ce, IR_I8, true, 1};
    y = mid[1] = add_conv(g, y, &d, "dw", 73);
    if (s->out) {
        conv_spec p = {1, ce, y->dims[2], y->dims[3], s->out, 1, 1, 0, 1, IR_I8, false, 1};
        y = mid[2] = add_conv(g, y, &p, "project", 75);
    }
    if (s->add) {
        ir_tensor *z = act(g, "sum", 4, xd, 0.06f, -2);
        ir_tensor *ins[2] = {y, x};
        ir_node_new(g, IR_OP_ADD, "add", 2, ins, 1, &z);
        y = z;
    }
    tg_set_io(g, 1, &x, y);
    return g;
}

static const block_spec blocks[] = {
    {16, 40, 40, 6, 3, 1, 16, true},  /* 0: the stride-1 block with its residual add */
    {16, 37, 37, 6, 3, 2, 24, false}, /* 1: stride 2, odd rows: the last band clips the bottom padding */
    {16, 90, 75, 4, 5, 2, 16, false}, /* 2: 5x5, halo of 3 rows, rows != columns */
    {24, 30, 30, 6, 3, 1, 0, false},  /* 3: expand -> depthwise only: the depthwise output is stored */
    {8, 9, 9, 3, 3, 1, 8, true},      /* 4: one band */
};

Test(tiler_cascade, inverted_residual_on_every_target)
{
    bool banded[sizeof blocks / sizeof blocks[0]] = {false};
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
            const block_spec *s = &blocks[bi];
            ir_tensor *mid[3];
            built b;
            npu_err e;
            cr_assert_eq(build(t, block_graph(s, mid), &b, &e), NPU_OK, "block %zu on %s: %s", bi, t->name, e.msg);
            int counts[TG_COUNTS];
            check_program(t, &b, "block", counts);
            int stages = 2 + (s->out ? 1 : 0), n = stages + (s->add ? 1 : 0);
            bool with_add = s->add && has_tokens(t, 5);
            cr_assert_eq(b.prog.n_layers, n);
            for (int i = 1; i < stages; i++)
                cr_assert(b.prog.layers[i].fused && b.prog.layers[i].n_words == 0, "block %zu on %s: layer %d fused",
                          bi, t->name, i);
            if (s->add)
                cr_assert_eq(b.prog.layers[n - 1].fused, with_add, "block %zu on %s: the add inside iff 5 tokens", bi,
                             t->name);
            int tiles = b.prog.layers[0].tiles;
            /* per band every expanded channel once (in one chunk or several), an expand per depthwise */
            cr_assert_eq(field_sum(t, &b.prog.layers[0], &b.prog, TGT_SEM_DWCONV, TGT_F_C), tiles * mid[0]->dims[1],
                         "block %zu on %s: each band's depthwise covers every channel once", bi, t->name);
            cr_assert_eq(counts[TGT_SEM_CONV], (s->out ? 2 : 1) * counts[TGT_SEM_DWCONV], "block %zu on %s", bi,
                         t->name);
            if (with_add) /* one add per band, in the last projection's output stage where the ISA has it */
                cr_assert_eq(counts[has_epi_elt(t) ? TG_EPI_ELT : TGT_SEM_ELTWISE], tiles);
            /* the intermediates never go to DRAM: the cascade stores its output alone, each byte once */
            int64_t out_bytes = (int64_t)ir_tensor_bytes(s->add && !with_add ? mid[stages - 1] : b.g->outputs[0]);
            cr_assert_eq(store_bytes(t, &b.prog.layers[0], &b.prog), out_bytes, "block %zu on %s", bi, t->name);
            if (bi != 4 && !strcmp(t->name, "edge-v1-lite"))
                cr_assert(tiles > 1 || counts[TGT_SEM_DWCONV] > tiles, "block %zu: split in bands or chunks", bi);
            banded[bi] |= tiles > 1;
#ifdef HAVE_NPU_MODEL
            run_functional(t, &b, "block", 17 + (uint32_t)bi);
#endif
            built_free(&b);
        }
        tgt_free(t);
    }
    for (size_t bi = 0; bi < 4; bi++) /* band edges: the top and bottom padding, the halo between bands */
        cr_assert(banded[bi], "block %zu runs in several bands somewhere", bi);
}

/* 768 expanded channels: more than npu-v1-narrow's 256-channel fields, so
 * each band runs in channel chunks with the projection accumulating partial
 * sums; on edge-v1-lite the resident weights alone nearly fill the SRAM, so
 * nothing fits and the convs run apart, as without the cascade. */
Test(tiler_cascade, channel_chunks_and_fallback)
{
    block_spec s = {64, 14, 14, 12, 3, 1, 64, false};
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        ir_tensor *mid[3];
        built b;
        int counts[TG_COUNTS];
        build_checked(t, block_graph(&s, mid), "wide block", &b, counts);
        bool fits = t->p[TGT_P_SRAM_BYTES] >= 512 * 1024;
        cr_assert_eq(b.prog.layers[1].fused, fits, "%s: cascaded iff the weights fit", t->name);
        if (fits) { /* the first band's later computes wait for their own weight groups, not all of them */
            const tile_layer *L = &b.prog.layers[0];
            int64_t waits = field_sum(t, L, &b.prog, TGT_SEM_CONV, TGT_F_WAIT) +
                            field_sum(t, L, &b.prog, TGT_SEM_DWCONV, TGT_F_WAIT);
            cr_assert_gt(waits, L->tiles, "%s: load groups", t->name);
        }
        if (!strcmp(t->name, "edge-v1-narrow")) {
            cr_assert_gt(counts[TGT_SEM_DWCONV], b.prog.layers[0].tiles, "channel chunks");
            cr_assert_eq(field_sum(t, &b.prog.layers[0], &b.prog, TGT_SEM_CONV, TGT_F_ACC_OUT),
                         counts[TGT_SEM_CONV] / 2 - b.prog.layers[0].tiles, "partial sums but for each band's last");
        }
#ifdef HAVE_NPU_MODEL
        run_functional(t, &b, "wide block", 23);
#endif
        built_free(&b);
        tgt_free(t);
    }
}

/* Expand -> depthwise without a projection over 768 channels: where a band
 * runs in channel chunks (npu-v1-narrow's 256-channel fields, at least),
 * the last band stores each group of chunks once its depthwise conv is
 * done, not the whole band after its last compute, every byte still once
 * (docs/tiler.md "The chains' last band, chunk by chunk"). */
Test(tiler_cascade, last_band_stores_by_chunk)
{
    block_spec s = {64, 14, 14, 12, 3, 1, 0, false};
    bool chunked = false;
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        ir_tensor *mid[3];
        built b;
        int counts[TG_COUNTS];
        build_checked(t, block_graph(&s, mid), "chunked block", &b, counts);
        const tile_layer *L = &b.prog.layers[0];
        if (b.prog.layers[1].fused && counts[TGT_SEM_DWCONV] > L->tiles) {
            chunked = true;
            cr_assert_gt(counts[TGT_SEM_DMA_STORE], L->tiles, "%s: the last band's stores by chunk", t->name);
        }
        cr_assert_eq(store_bytes(t, L, &b.prog), (int64_t)ir_tensor_bytes(b.g->outputs[0]), "%s", t->name);
        finish_built(t, &b, "chunked block", 29);
        tgt_free(t);
    }
    cr_assert(chunked, "some target runs the block in channel chunks");
}

/* stem conv -> block (no add) -> tail conv, so the block's input and output both live in the arena. */
static ir_graph *framed_block(ir_tensor **x_out, ir_tensor **z_out)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 8, 20, 20};
    ir_tensor *in = act(g, "in", 4, xd, 0.04f, -6);
    conv_spec stem = {1, 8, 20, 20, 16, 3, 1, 1, 1, IR_I8, true, 1};
    ir_tensor *x = add_conv(g, in, &stem, "stem", 81);
    conv_spec e = {1, 16, 20, 20, 96, 1, 1, 0, 1, IR_I8, true, 1};
    conv_spec d = {1, 96, 20, 20, 96, 3, 1, 1, 96, IR_I8, true, 1};
    conv_spec p = {1, 96, 20, 20, 16, 1, 1, 0, 1, IR_I8, false, 1};
    conv_spec tail = {1, 16, 20, 20, 8, 1, 1, 0, 1, IR_I8, true, 1};
    ir_tensor *z = add_conv(g, add_conv(g, add_conv(g, x, &e, "expand", 83), &d, "dw", 85), &p, "project", 87);
    ir_tensor *y = add_conv(g, z, &tail, "tail", 89);
    tg_set_io(g, 1, &in, y);
    *x_out = x, *z_out = z;
    return g;
}

/* A plan made without the cascades that puts the block's output on its input
 * (right for the convs apart: the expand has read it all before the
 * projection writes): the band-by-band cascade would overwrite rows later
 * bands still read, so the convs run apart. */
Test(tiler_cascade, not_on_a_plan_that_overlaps_its_input)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        ir_tensor *x, *z;
        built b;
        npu_err e;
        cr_assert_eq(build(t, framed_block(&x, &z), &b, &e), NPU_OK, "%s", e.msg);
        cr_assert(b.prog.layers[2].fused && b.prog.layers[3].fused, "%s: cascaded on a clear plan", t->name);
        tile_program_free(&b.prog, npu_alloc_default());
        emit_blob_free(&b.consts);
        emit_blob_init(&b.consts, npu_alloc_default());
        b.plan.t[z->id].offset = b.plan.t[x->id].offset;
        cr_assert_eq(tile_build(t, b.g, &b.sched, &b.plan, &b.consts, npu_alloc_default(), &b.prog, &e), NPU_OK,
                     "%s: %s", t->name, e.msg);
        int counts[TG_COUNTS];
        check_program(t, &b, "overlapping plan", counts);
        cr_assert(!b.prog.layers[2].fused, "%s: apart", t->name);
#ifdef HAVE_NPU_MODEL
        run_functional(t, &b, "overlapping plan", 37);
#endif
        built_free(&b);
        tgt_free(t);
    }
}

/* The schedule's single NPU step, planned by the memory planner told of the cascades. */
static npu_status plan_with_groups(const tgt_target *t, built *b, bool groups, npu_err *e)
{
    ir_graph *g = b->g;
    int *group = npu_arena_alloc(g->arena, sizeof(int) * (size_t)g->n_nodes);
    npu_status st = tile_cascades(t, g, &b->sched, npu_alloc_default(), group, e);
    mp_options mo = {.align = 16, .group = groups ? group : NULL};
    if (st == NPU_OK)
        st = mp_plan_graph(g, &b->sched, &mo, &b->plan, e);
    if (st == NPU_OK)
        st = mp_check(g, &b->plan, e);
    return st;
}

Test(tiler_cascade, intermediates_have_no_dram_home)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        ir_tensor *mid[3];
        built b;
        npu_err e;
        cr_assert_eq(build(t, block_graph(&blocks[0], mid), &b, &e), NPU_OK, "%s", e.msg);
        cr_assert_eq(plan_with_groups(t, &b, false, &e), NPU_OK, "%s", e.msg);
        int64_t arena_apart = b.plan.region_bytes[MP_REGION_ARENA];
        cr_assert_eq(plan_with_groups(t, &b, true, &e), NPU_OK, "%s: %s", t->name, e.msg);
        bool five = has_tokens(t, 5);
        for (int i = 0; i < 3; i++)
            cr_assert_eq(b.plan.t[mid[i]->id].in_sram, i < 2 || five, "%s: intermediate %d", t->name, i);
        cr_assert_eq(b.plan.t[mid[0]->id].offset, -1);
        cr_assert_lt(b.plan.region_bytes[MP_REGION_ARENA], arena_apart, "%s: the arena shrinks", t->name);
        tile_program_free(&b.prog, npu_alloc_default());
        emit_blob_free(&b.consts);
        emit_blob_init(&b.consts, npu_alloc_default());
        cr_assert_eq(tile_build(t, b.g, &b.sched, &b.plan, &b.consts, npu_alloc_default(), &b.prog, &e), NPU_OK,
                     "%s: %s", t->name, e.msg);
        int counts[TG_COUNTS];
        check_program(t, &b, "planned block", counts);
        cr_assert(b.prog.layers[1].fused && b.prog.layers[2].fused);
#ifdef HAVE_NPU_MODEL
        run_functional(t, &b, "planned block", 29);
#endif
        /* a tensor kept in SRAM that a cascade does not hide is refused */
        b.plan.t[b.g->outputs[0]->id].in_sram = true;
        cr_assert_neq(mp_check(b.g, &b.plan, &e), NPU_OK);
        cr_assert(strstr(e.msg, "kept in SRAM"), "%s", e.msg);
        built_free(&b);
        tgt_free(t);
    }
}

static bool note_dw_rows(const tgt_target *t, const tgt_decoded *d, void *ud)
{
    int64_t *rows = ud; /* the first depthwise conv's output rows, the most of any */
    if (t->isa->insns[d->insn].sem == TGT_SEM_DWCONV) {
        rows[0] = rows[0] ? rows[0] : d->v[TGT_F_OH];
        rows[1] = d->v[TGT_F_OH] > rows[1] ? d->v[TGT_F_OH] : rows[1];
    }
    return true;
}

/* MobileNetV2's block 2 (16 -> 96 -> 24 channels, stride 2, 112x112): its
 * input comes from DRAM, so nothing hides the first band's load, and the
 * bands are MAC-bound: a short first band starts the MAC array sooner and
 * the next band's load runs beside it (docs/tiler.md "A short first band";
 * edge-v1: 6.4K cycles exposed before, 1.4K after). */
Test(tiler_cascade, short_first_band_where_its_load_is_exposed)
{
    tgt_target *t = load_target("edge-v1");
    block_spec s = {16, 112, 112, 6, 3, 2, 24, false};
    ir_tensor *mid[3];
    built b;
    int counts[TG_COUNTS];
    build_checked(t, block_graph(&s, mid), "block 2", &b, counts);
    cr_assert(b.prog.layers[1].fused && b.prog.layers[2].fused, "cascaded");
    int64_t rows[2] = {0, 0};
    for_each_insn(t, &b.prog.layers[0], &b.prog, note_dw_rows, rows);
    cr_assert(rows[0] > 0 && rows[0] < rows[1], "a first band of %lld rows, the tallest %lld", (long long)rows[0],
              (long long)rows[1]);
    finish_built(t, &b, "block 2", 41);
    tgt_free(t);
}

/* Two of MobileNetV2's 14x14 blocks (96 -> 576 -> 96 with the residual
 * add), the tensor between them in SRAM, 347 KiB of tile SRAM: the second
 * chain's weights (about 120 KB) do not fit clear of the first chain's
 * SRAM, nor do its first chunk's expand and depthwise blocks (18.6 KB);
 * the expand's block alone (15.5 KB), its first load group then, does, in
 * a buffer of its own, and loads before the barrier (docs/tiler.md
 * "Session 26"; nothing did when all the weights were one buffer, nor with
 * both first blocks as the first group). */
Test(tiler_cascade, first_weight_group_loads_beside_the_chain_before)
{
    tgt_target *t = load_target("edge-v1");
    t->p[TGT_P_SRAM_BYTES] = 347 * 1024; /* as below an SRAM level: all the weights do not fit above */
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 96, 14, 14};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, -6), *y = x, *between = NULL;
    for (int k = 0; k < 2; k++) {
        conv_spec e = {1, 96, 14, 14, 576, 1, 1, 0, 1, IR_I8, true, 1};
        conv_spec d = {1, 576, 14, 14, 576, 3, 1, 1, 576, IR_I8, true, 1};
        conv_spec p = {1, 576, 14, 14, 96, 1, 1, 0, 1, IR_I8, false, 1};
        ir_tensor *z = add_conv(g, add_conv(g, add_conv(g, y, &e, k ? "expand1" : "expand0", 91 + k), &d,
                                            k ? "dw1" : "dw0", 93 + k),
                                &p, k ? "project1" : "project0", 95 + k);
        ir_tensor *sum = act(g, k ? "sum1" : "sum0", 4, xd, 0.06f, -2), *ins[2] = {z, y};
        ir_node_new(g, IR_OP_ADD, k ? "add1" : "add0", 2, ins, 1, &sum);
        between = k ? between : sum;
        y = sum;
    }
    tg_set_io(g, 1, &x, y);
    built b;
    int counts[TG_COUNTS];
    const ir_tensor *res[1] = {between};
    build_resident(t, g, res, 1, "two blocks", &b, counts);
    cr_assert_eq(b.prog.n_layers, 8);
    const tile_layer *second = &b.prog.layers[4];
    cr_assert(second->n_words > 0 && b.prog.layers[5].fused, "the second block cascades");
    int64_t early = loads_before_wait(t, second, &b.prog, TGT_REGION_CONSTANTS, TILE_T_BAR);
    cr_assert_gt(early, 0, "the second chain's first weight group before the barrier");
    /* that group is the first expand's block alone: the first depthwise conv waits for its own */
    cr_assert_geq(waits_on(t, second, &b.prog, TGT_SEM_DWCONV, TILE_T_LOADED), 1, "the depthwise block apart");
    finish_built(t, &b, "two blocks", 43);
    tgt_free(t);
}
