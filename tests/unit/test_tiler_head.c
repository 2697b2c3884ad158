/* Tests of the head cascade (src/tiler/tile_cascade_head.c): a conv, the
 * global average pool of its output, a flattening view and the classifier
 * Gemm run as one pipeline over chunks of the conv's output channels, the
 * classifier accumulating each chunk's products in partial sums, so that
 * its weights stream beside the conv's MACs. Where the ISA has seven tokens
 * (the vector unit between two MAC instructions) and it pays; the others
 * run the nodes as before. Functional runs compare the NPU model with the
 * reference bit for bit; the model faults on unordered accesses. */
#include "tests/support/tiler_graphs.h"
#include "tiler/tile_internal.h"

/* x [-> conv 3x3 "pre" [-> conv 1x1 "mid"]] (relu, c channels; n_pre of them) -> conv 1x1 (relu) ->
 * GlobalAveragePool -> Flatten -> Gemm -> y */
static ir_graph *head_graph_ex(int64_t c, int64_t hw, int64_t oc, int64_t n_out, int n_pre)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, c, hw, hw}, fd[2] = {1, oc}, yd[2] = {1, n_out}, wd[2] = {n_out, oc}, bd[1] = {n_out};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, -5);
    conv_spec cs = {1, c, hw, hw, oc, 1, 1, 0, 1, IR_I8, true, 1}, cp = {1, c, hw, hw, c, 3, 1, 1, 1, IR_I8, true, 1};
    pool_spec ps = {IR_OP_GLOBAL_AVERAGE_POOL, 0, 0, 0, false, false};
    conv_spec cm = {1, c, hw, hw, c, 1, 1, 0, 1, IR_I8, true, 1};
    ir_tensor *h = n_pre > 0 ? add_conv(g, x, &cp, "pre", 5) : x;
    h = n_pre > 1 ? add_conv(g, h, &cm, "mid", 6) : h;
    ir_tensor *p = add_pool(g, add_conv(g, h, &cs, "conv", 7), &ps);
    ir_tensor *a = act(g, "flat", 2, fd, p->quant->scale[0], p->quant->zero_point[0]);
    ir_node *fl = ir_node_new(g, IR_OP_FLATTEN, "flatten", 1, &p, 1, &a);
    ir_set_int(g, fl, "axis", 1);
    ir_tensor *w = rand_const(g, "w", IR_I8, 2, wd, -127, 127, 13);
    w->quant = quant(g, (int)n_out, 0.002f, 0.0002f);
    ir_tensor *bias = rand_const(g, "b", IR_I32, 1, bd, -3000, 3000, 14);
    ir_tensor *y = act(g, "y", 2, yd, 0.08f, -7);
    ir_tensor *ins[3] = {a, w, bias};
    ir_set_int(g, ir_node_new(g, IR_OP_GEMM, "fc", 3, ins, 1, &y), "transB", 1);
    tg_set_io(g, 1, &x, y);
    return g;
}

static ir_graph *head_graph(int64_t c, int64_t hw, int64_t oc, int64_t n_out)
{
    return head_graph_ex(c, hw, oc, n_out, 0);
}

Test(tiler_head, classifier_streams_beside_the_conv)
{
    bool cascaded = false;
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        built b;
        int counts[TG_COUNTS];
        build_checked(t, head_graph(256, 14, 256, 1000), "head", &b, counts);
        const tile_layer *L = &b.prog.layers[0];
        cr_assert_eq(b.prog.n_layers, 4);
        if (b.prog.layers[3].fused) {
            cascaded = true;
            cr_assert(has_tokens(t, 7), "%s: the head cascade needs seven tokens", t->name);
            for (int i = 1; i < 4; i++)
                cr_assert(b.prog.layers[i].fused && b.prog.layers[i].n_words == 0, "%s: layer %d inside", t->name, i);
            /* a classifier chunk per conv chunk, several, and only the classifier's output stored */
            cr_assert_eq(counts[TGT_SEM_MATMUL], counts[TGT_SEM_CONV], "%s", t->name);
            cr_assert_eq(counts[TGT_SEM_POOL], counts[TGT_SEM_CONV], "%s", t->name);
            cr_assert_gt(counts[TGT_SEM_CONV], 1, "%s: in chunks", t->name);
            cr_assert_eq(store_bytes(t, L, &b.prog), (int64_t)ir_tensor_bytes(b.g->outputs[0]), "%s", t->name);
            cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_MATMUL, TGT_F_ACC_OUT), counts[TGT_SEM_MATMUL] - 1,
                         "%s: partial sums but for the last chunk", t->name);
        } else { /* the classifier on its own, after the conv (and the pool, cascaded or not) */
            cr_assert(b.prog.layers[3].n_words > 0, "%s", t->name);
        }
        if (!strcmp(t->name, "edge-v1")) /* the classifier's 256 KB beside 12.8M MACs: it pays there */
            cr_assert(b.prog.layers[3].fused, "edge-v1: the head as one pipeline");
        finish_built(t, &b, "head", 61);
        tgt_free(t);
    }
    cr_assert(cascaded, "some target runs the head as one pipeline");
}

/* After a 3x3 conv whose pipeline spans [0, 332 KB) of edge-v1's 512 KiB,
 * the head's 375 KB of buffers fit neither above nor below it; its first
 * chunk's and the shared ones are placed above it and the rest below
 * (tile_sram_place_early), so the first classifier chunk loads while that
 * conv still runs (placed from 0, it overlapped the conv's SRAM and waited). */
Test(tiler_head, first_chunk_loads_beside_the_layer_before)
{
    tgt_target *t = load_target("edge-v1");
    built b;
    int counts[TG_COUNTS];
    build_checked(t, head_graph_ex(640, 7, 1280, 1000, 1), "head after a conv", &b, counts);
    cr_assert_eq(b.prog.n_layers, 5);
    const tile_layer *H = &b.prog.layers[1];
    cr_assert(b.prog.layers[4].fused, "the head as one pipeline");
    int64_t chunk = 1000 * t->p[TGT_P_MAC_COLS]; /* the classifier's weights for the fewest channels a chunk has */
    /* what goes out while the layer before still runs (emit_prefetch) */
    int64_t early = loads_before_wait(t, H, &b.prog, TGT_REGION_CONSTANTS, TILE_T_BAR);
    cr_assert_geq(early, chunk, "the first classifier chunk before the barrier: %lld bytes of constants, want >= %lld",
                  (long long)early, (long long)chunk);
    finish_built(t, &b, "head after a conv", 62);
    tgt_free(t);
}

/* A 3x3 conv and a 1x1 conv (their outputs in SRAM) before the head: the
 * head streams its classifier's weights (DMA-bound), and some of its first
 * weights load before the 1x1 conv starts, in the pieces that go after the
 * 1x1 conv's own prefetch while the 3x3 conv still runs (tile_gap_boundary:
 * the 3x3 conv's last loads end long before it does). None before it with
 * only the gaps between a pipeline's loads. */
/* The head after a 3x3 and a 1x1 conv of c channels at hw x hw (their outputs in SRAM), built. */
static void build_after_two_convs(const tgt_target *t, int64_t c, int64_t hw, int64_t oc, built *b)
{
    int counts[TG_COUNTS];
    ir_graph *g = head_graph_ex(c, hw, oc, 1000, 2);
    const ir_tensor *res[2] = {g->nodes[0]->outputs[0], g->nodes[1]->outputs[0]};
    build_resident(t, g, res, 2, "head after two convs", b, counts);
    cr_assert_eq(b->prog.n_layers, 6);
    cr_assert(b->prog.layers[5].fused, "the head as one pipeline");
}

Test(tiler_head, weights_load_beside_the_conv_two_before)
{
    tgt_target *t = load_target("edge-v1");
    built b;
    build_after_two_convs(t, 128, 14, 256, &b);
    const tile_layer *B = &b.prog.layers[1], *H = &b.prog.layers[2];
    int64_t early = loads_carried_before(t, &b.prog, B, H, TILE_T_BAR);
    cr_assert_gt(early, 0, "the head's weights before the 1x1 conv's barrier wait");
    finish_built(t, &b, "head after two convs", 66);
    tgt_free(t);
}

/* edge-v1 keeps its constants in a DRAM copy and their image stays in flash,
 * each memory on its own bus: a DMA-bound head (MobileNetV2's: 1.69 MB of
 * weights beside 78K cycles of MACs) loads about a fifth of each classifier
 * chunk from flash on channel 1 beside the DRAM loads (placement.flash_stream
 * on), and ends sooner than from DRAM alone (off). Bit-exact on the model,
 * which reads region flash over the flash bus. */
static ir_graph *mobilenet_v2_head(void)
{
    return head_graph(320, 7, 1280, 1000);
}

Test(tiler_head, classifier_streams_over_both_buses)
{
    tgt_target *t = load_target("edge-v1");
    flash_run r[2];
    build_flash_on_off(t, mobilenet_v2_head, "head over both buses", 67, r);
    cr_assert(r[0].last_fused && r[1].last_fused, "the head as one pipeline");
    int64_t all = r[0].flash + r[0].consts;
    cr_assert(r[0].flash * 10 >= all && r[0].flash * 10 <= all * 3,
              "%lld of %lld bytes of weights over the flash bus, want 10%% to 30%%", (long long)r[0].flash,
              (long long)all);
    cr_assert_eq(r[1].flash, 0, "flash_stream off: no flash loads");
    cr_assert(r[0].cycles * 100 <= r[1].cycles * 88, "both buses: %lld cycles, DRAM alone %lld",
              (long long)r[0].cycles, (long long)r[1].cycles);
    tgt_free(t);
}

static bool add_flash_bytes(const tgt_target *t, const tgt_decoded *d, void *ud)
{
    int64_t *n = ud;
    if (t->isa->insns[d->insn].sem == TGT_SEM_DMA_LOAD && d->v[TGT_F_REGION] == TGT_REGION_FLASH)
        *n += d->v[TGT_F_C] * d->v[TGT_F_H] * d->v[TGT_F_W];
    return true;
}

/* MobileNetV2's head after two convs whose outputs stay in SRAM: they use
 * neither DMA channel 1 nor the flash bus, so the classifier weights of the
 * head's second-to-last chunk (64,000 bytes, in a buffer of their own at the
 * top of the SRAM, clear of both convs) load over flash in the convs' words
 * (tile_retro_flash), but for the last bytes that signal FLASHED to its
 * matmul. None did before: the convs stream nothing from flash. */
Test(tiler_head, a_chunk_loads_over_flash_in_the_layers_before)
{
    tgt_target *t = load_target("edge-v1");
    built b;
    build_after_two_convs(t, 320, 7, 1280, &b);
    int64_t before = 0;
    for (int i = 0; i < 2; i++)
        for_each_insn(t, &b.prog.layers[i], &b.prog, add_flash_bytes, &before);
    cr_assert_geq(before, 63000, "a classifier chunk over flash before the head: %lld bytes", (long long)before);
    cr_assert_eq(flash_loads_off_channel_1(t, &b.prog.layers[0], &b.prog) +
                     flash_loads_off_channel_1(t, &b.prog.layers[1], &b.prog), 0, "all on channel 1");
    finish_built(t, &b, "head after two convs", 68);
    tgt_free(t);
}

/* The SRAM level holds more than is live at the head (sized here at 160 KB
 * for tensors of earlier layers; the convs' outputs at its top, the 1x1
 * conv's live into the head, the 3x3 conv's read by the 1x1 conv alone).
 * Below the level's base the head's three slots leave no room for a
 * preloaded classifier chunk (0 bytes over flash before it, before
 * per-layer caps); with the level placed from the top down, the head's
 * tiles may use the SRAM below its own resident tensor, its buffers packed
 * around its preloaded chunks (tile_sram_pack), and the chunks end below
 * the lowest resident tensor of the convs: three chunks load over flash
 * during the convs. */
Test(tiler_head, chunks_load_into_the_level_the_head_frees)
{
    tgt_target *t = load_target("edge-v1");
    built b;
    int counts[TG_COUNTS];
    ir_graph *g = head_graph_ex(320, 7, 1280, 1000, 2);
    memset(&b, 0, sizeof b);
    b.g = g;
    make_plan(g, &b.plan, false);
    b.plan.n_positions = g->n_nodes;
    b.plan.node_pos = npu_arena_alloc(g->arena, sizeof(int) * (size_t)g->n_nodes);
    for (int i = 0; i < g->n_nodes; i++)
        b.plan.node_pos[i] = i;
    mp_tensor *x0 = &b.plan.t[g->nodes[0]->outputs[0]->id], *x1 = &b.plan.t[g->nodes[1]->outputs[0]->id];
    b.plan.sram_bytes = 160 * 1024;
    *x1 = (mp_tensor){MP_REGION_ARENA, b.plan.sram_bytes - x1->size, x1->size, -1, -1, -1, 1, g->n_nodes, false,
                      MP_LEVEL_SRAM, false};
    *x0 = (mp_tensor){MP_REGION_ARENA, x1->offset - x0->size, x0->size, -1, -1, -1, 0, 1, false, MP_LEVEL_SRAM,
                      false};
    npu_err e;
    cr_assert_eq(build_planned(t, g, &b, &e), NPU_OK, "%s", e.msg);
    check_program(t, &b, "head below a level placed from the top", counts);
    cr_assert_eq(b.prog.n_layers, 6);
    cr_assert(b.prog.layers[5].fused, "the head as one pipeline");
    int64_t before = 0;
    for (int i = 0; i < 2; i++)
        for_each_insn(t, &b.prog.layers[i], &b.prog, add_flash_bytes, &before);
    cr_assert_geq(before, 3 * 64000 - 48, "three classifier chunks over flash before the head: %lld bytes",
                  (long long)before);
    finish_built(t, &b, "head below a level placed from the top", 69);
    tgt_free(t);
}

/* tile_sram_pack's rule on a small SRAM: the previous pipeline touches
 * [1024, 5120) and resident tensors lie from 9216 up while it runs; the
 * caller keeps [6144, 7168). Loaded buffers go, largest first, into the
 * tightest range clear of that pipeline ([0, 1024), [5120, 6144), [7168,
 * 9216)), else the tightest other; the others into the tightest other
 * range first; each takes its bytes rounded to 16 and a 16-byte line. */
Test(tiler_head, buffers_pack_around_a_kept_range)
{
    tile_ctx c = {.pending_barrier = true, .pipe_lo = 1024, .pipe_hi = 5120, .pipe_cap = 9216};
    int64_t off[4] = {-1, -1, -1, -1};
    tile_sram_req r[4] = {{900, &off[0]}, {1900, &off[1]}, {3000, &off[2]}, {2500, &off[3]}};
    int rank[4] = {1, 1, 1, 0};
    cr_assert(tile_sram_pack(&c, r, rank, 4, 12288, 6144, 7168, false), "they fit");
    cr_assert_eq(off[0], -1, "a dry run places nothing");
    cr_assert(tile_sram_pack(&c, r, rank, 4, 12288, 6144, 7168, true));
    cr_assert_eq(off[2], 9216, "3000 loaded bytes fit no clear range: the tightest other, [9216, 12288)");
    cr_assert_eq(off[1], 7168, "1900 loaded bytes: the tightest clear range, [7168, 9216)");
    cr_assert_eq(off[0], 0, "900 loaded bytes: the first of the two clear ranges of 1024");
    cr_assert_eq(off[3], 1024, "the unloaded buffer: the other range with room, [1024, 5120)");
    cr_assert_eq(c.sram_used, 9216 + 3000, "the layer's SRAM ends with the last buffer: %lld",
                 (long long)c.sram_used);
    tile_ctx d = {.pending_barrier = true, .pipe_lo = 1024, .pipe_hi = 5120, .pipe_cap = 9216};
    tile_sram_req big[2] = {{5000, &off[0]}, {5000, &off[1]}};
    cr_assert_not(tile_sram_pack(&d, big, rank, 2, 12288, 6144, 7168, true), "no range holds 5000 bytes twice");
    cr_assert_eq(off[0], 0, "nothing placed when they do not fit");
}
