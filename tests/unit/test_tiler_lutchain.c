/* Tests of the expand chain with tables (src/tiler/tile_cascade3.c): an
 * expand 1x1 conv and its npu.Lut, the depthwise conv and its Lut (SiLU,
 * h-swish once quantized: EfficientNet, MobileNetV3), optionally the 1x1
 * projection, as one pipeline over row bands with each table in its conv's
 * output stage (epi_lut). On the targets whose conv and dwconv have the
 * epilogue: every node but the first runs inside the first one's layer,
 * one store (neither the expansion nor the depthwise output goes to DRAM),
 * every expand and depthwise instruction looks its table up; on
 * npu-v1-narrow (no epilogue) the nodes run apart; everywhere, with the NPU
 * model, the output bit for bit against the reference. */
#include "tests/support/tiler_graphs.h"

typedef struct lut_spec {
    int64_t c, h, w, ce, k, stride, out; /* ce: expanded channels; out: the projection's, 0 none */
} lut_spec;

static ir_tensor *add_lut(ir_graph *g, ir_tensor *x, const char *name, const char *table, uint32_t seed)
{
    int64_t td[1] = {256};
    ir_tensor *y = act(g, name, x->rank, x->dims, 0.03f, -20);
    ir_tensor *ins[2] = {x, rand_const(g, table, IR_I8, 1, td, -128, 127, seed)};
    ir_node_new(g, IR_OP_LUT, name, 2, ins, 1, &y);
    return y;
}

static ir_graph *lut_chain_graph(const lut_spec *s)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, s->c, s->h, s->w};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, -6);
    conv_spec e = {1, s->c, s->h, s->w, s->ce, 1, 1, 0, 1, IR_I8, false, 1};
    ir_tensor *y = add_lut(g, add_conv(g, x, &e, "expand", 71), "silu_e", "table_e", 72);
    conv_spec d = {1, s->ce, s->h, s->w, s->ce, s->k, s->stride, s->k / 2, s->ce, IR_I8, false, 1};
    y = add_lut(g, add_conv(g, y, &d, "dw", 73), "silu_d", "table_d", 74);
    if (s->out) {
        conv_spec p = {1, s->ce, y->dims[2], y->dims[3], s->out, 1, 1, 0, 1, IR_I8, false, 1};
        y = add_conv(g, y, &p, "project", 75);
    }
    tg_set_io(g, 1, &x, y);
    return g;
}

static const lut_spec specs[] = {
    {8, 56, 56, 32, 3, 1, 0},   /* 0: EfficientNet's expand + depthwise, the SE after them reads the output */
    {16, 57, 40, 48, 3, 2, 0},  /* 1: stride 2, odd rows */
    {8, 40, 40, 32, 5, 1, 16},  /* 2: 5x5 and the projection (MobileNetV3 without SE) */
    {16, 64, 64, 96, 3, 2, 0},  /* 3: wide: chunks of the expanded channels */
};

static bool has_epilogue(const tgt_target *t)
{
    int cv = tgt_insn_for_sem(t->isa, TGT_SEM_CONV), dw = tgt_insn_for_sem(t->isa, TGT_SEM_DWCONV);
    return tgt_insn_field(t->isa, cv, TGT_F_EPI_LUT) && tgt_insn_field(t->isa, dw, TGT_F_EPI_LUT);
}

Test(tiler_lutchain, expand_and_depthwise_with_their_tables_on_every_target)
{
    bool banded = false, chunked = false;
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
            built b;
            int counts[TG_COUNTS];
            build_checked(t, lut_chain_graph(&specs[si]), "lut chain", &b, counts);
            int n = specs[si].out ? 5 : 4;
            cr_assert_eq(b.prog.n_layers, n);
            const tile_layer *L = &b.prog.layers[0];
            if (has_epilogue(t)) {
                for (int i = 1; i < n; i++)
                    cr_assert(b.prog.layers[i].fused, "spec %zu on %s: node %d inside the expand's pipeline", si,
                              t->name, i);
                cr_assert_eq(store_bytes(t, L, &b.prog), (int64_t)ir_tensor_bytes(b.g->outputs[0]),
                             "spec %zu on %s: one store of the chain's output", si, t->name);
                /* one expand per depthwise (per band and chunk), each looking its table up */
                cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_DWCONV, TGT_F_EPI_LUT), counts[TGT_SEM_DWCONV]);
                cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_CONV, TGT_F_EPI_LUT), counts[TGT_SEM_DWCONV],
                             "spec %zu on %s: the expands have the table, the projections not", si, t->name);
                cr_assert_eq(counts[TGT_SEM_LUT], 0, "spec %zu on %s: no table pass of its own", si, t->name);
                banded |= L->tiles > 1;
                cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_DWCONV, TGT_F_C), L->tiles * specs[si].ce,
                             "spec %zu on %s: each band's depthwise covers every channel once", si, t->name);
                chunked |= counts[TGT_SEM_DWCONV] > L->tiles;
            } else {
                cr_assert(!b.prog.layers[2].fused, "spec %zu on %s: no epilogue, the depthwise apart", si, t->name);
            }
            finish_built(t, &b, "lut chain", 81 + (uint32_t)si);
        }
        tgt_free(t);
    }
    cr_assert(banded, "row bands somewhere");
    cr_assert(chunked, "chunks of the expanded channels somewhere");
}

/* An expansion a second node reads (here: the graph's output too) is no
 * chain: the expand and its table run as a pair, the depthwise apart. */
Test(tiler_lutchain, not_when_the_expansion_is_read_elsewhere)
{
    tgt_target *t = load_target("edge-v1");
    ir_graph *g = lut_chain_graph(&specs[0]);
    g->nodes[1]->outputs[0]->flags |= IR_TENSOR_OUTPUT;
    built b;
    int counts[TG_COUNTS];
    build_checked(t, g, "lut chain, expansion read twice", &b, counts);
    cr_assert(!b.prog.layers[2].fused && b.prog.layers[2].n_words > 0, "the depthwise apart");
    finish_built(t, &b, "lut chain, expansion read twice", 89);
    tgt_free(t);
}
