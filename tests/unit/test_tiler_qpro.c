/* Tests of the quantize prologue (src/tiler/tile_conv.c, tile_conv_pre; the
 * decision in tile_build.c's tile_cascades): a QuantizeLinear of the float32
 * model input whose int8 output only the stem conv reads runs in the conv's
 * tiles. Each tile loads its window as float32, the vector unit's quantize
 * writes the int8 tile the conv reads; the int8 tensor is never stored and
 * the quantize's layer is fused. With four tokens (npu-v1-narrow) the two
 * run apart. Functional runs compare the NPU model with the reference bit
 * for bit (inputs past int8's range and on rounding ties). */
#include "tests/support/tiler_graphs.h"
#include "tiler/tile_internal.h"

/* x (float32) -> QuantizeLinear -> conv (relu) -> y */
static ir_graph *stem_graph(const conv_spec *s)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {s->n, s->c, s->h, s->w};
    ir_tensor *x, *xq = add_quantize(g, xd, &x);
    ir_tensor *y = add_conv(g, xq, s, "stem", 31);
    tg_set_io(g, 1, &x, y);
    return g;
}

static const conv_spec stems[] = {
    {1, 3, 224, 224, 32, 3, 2, 1, 1, IR_I8, true, 1}, /* MobileNetV2's stem: row tiles, halo rows quantized twice */
    {1, 3, 61, 47, 24, 5, 1, 2, 1, IR_I8, true, 1},   /* 5x5, odd sizes, rows != columns */
    {2, 8, 20, 20, 16, 1, 1, 0, 1, IR_I8, false, 1},  /* 1x1, batch 2 */
};

Test(tiler_qpro, stem_conv_quantizes_its_input_tiles)
{
    bool tiled = false;
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        bool five = has_tokens(t, 5);
        for (size_t si = 0; si < sizeof stems / sizeof stems[0]; si++) {
            built b;
            int counts[TG_COUNTS];
            build_checked(t, stem_graph(&stems[si]), "stem", &b, counts);
            cr_assert_eq(b.prog.n_layers, 2);
            const tile_layer *L0 = &b.prog.layers[0], *L1 = &b.prog.layers[1];
            if (five) {
                /* the conv's record carries the words; the quantize ran inside its tiles */
                cr_assert_eq(L0->node->op, IR_OP_CONV, "stem %zu on %s: the conv's record first", si, t->name);
                cr_assert(L0->n_words > 0 && L0->macs > 0);
                cr_assert(L1->node->op == IR_OP_QUANTIZE_LINEAR && L1->fused && L1->n_words == 0,
                          "stem %zu on %s: the quantize is fused", si, t->name);
                cr_assert_geq(counts[TGT_SEM_QUANTIZE], L0->tiles > 1 ? 2 : 1);
                /* nothing but the conv's output is stored: the int8 input has no DRAM pass */
                cr_assert_eq(store_bytes(t, L0, &b.prog), (int64_t)ir_tensor_bytes(b.g->outputs[0]),
                             "stem %zu on %s", si, t->name);
                tiled |= L0->tiles > 1;
            } else {
                cr_assert(L0->node->op == IR_OP_QUANTIZE_LINEAR && !L0->fused && L0->n_words > 0,
                          "stem %zu on %s: four tokens, the quantize runs apart", si, t->name);
                cr_assert(!L1->fused && L1->n_words > 0);
            }
            finish_built(t, &b, "stem", 41 + (uint32_t)si);
        }
        tgt_free(t);
    }
    cr_assert(tiled, "some stem runs in several tiles (halo rows quantized again)");
}

/* With the prologue a tile passes four stages (load, quantize, conv,
 * store): where the SRAM has room each streamed buffer takes a fourth slot,
 * so work j's loads wait for store j - 4 (FREE; docs/tiler.md "A fourth slot"). */
Test(tiler_qpro, four_slots_for_four_stages)
{
    tgt_target *t = load_target("edge-v1");
    built b;
    int counts[TG_COUNTS];
    build_checked(t, stem_graph(&stems[0]), "stem", &b, counts);
    const tile_layer *L = &b.prog.layers[0];
    cr_assert_gt(L->tiles, 4);
    cr_assert_eq(waits_on(t, L, &b.prog, TGT_SEM_DMA_LOAD, TILE_T_FREE), L->tiles - 4,
                 "the loads of every tile from the fifth wait");
    finish_built(t, &b, "stem", 47);
    tgt_free(t);
}

/* int16 output (A16W8): the quantize keeps its own pass. */
Test(tiler_qpro, not_for_int16)
{
    tgt_target *t = load_target("edge-v1");
    conv_spec s = {1, 3, 32, 32, 16, 3, 1, 1, 1, IR_I8, false, 1};
    ir_graph *g = stem_graph(&s);
    ir_tensor *xq = g->nodes[0]->outputs[0];
    xq->dtype = IR_I16;
    xq->quant->zero_point[0] = 0;
    built b;
    npu_err e;
    npu_status st = build(t, g, &b, &e);
    if (st == NPU_OK) { /* lowered: the quantize must not be fused */
        cr_assert_eq(b.prog.layers[0].node->op, IR_OP_QUANTIZE_LINEAR);
        cr_assert(!b.prog.layers[0].fused && !b.prog.layers[1].fused);
    }
    built_free(&b);
    tgt_free(t);
}
