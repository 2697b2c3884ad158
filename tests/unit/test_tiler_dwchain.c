/* Tests of the depthwise chain without expand (src/tiler/tile_cascade3.c,
 * decided in tile_decide.c): depthwise kxk -> project 1x1 -> residual add
 * as one pipeline over row bands, the add on the vector unit after each
 * band's projection. On every target: which layers fuse (npu-v1-narrow has
 * four tokens: the depthwise + 1x1 pair cascades, the add runs apart), that
 * neither the depthwise nor the projection output goes to DRAM and the add
 * has no pass of its own, band edges (pads, stride 2), and, with the NPU
 * model, the output bit for bit against the reference. */
#include "tests/support/tiler_graphs.h"

typedef struct dw_spec {
    int64_t c, h, w, k, stride, out; /* out: the projection's channels */
} dw_spec;

/* x -> depthwise kxk (relu) -> project 1x1 -> add(x or a second input r); *mid the projection's output. */
static ir_graph *dw_graph(const dw_spec *s, ir_tensor **mid)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, s->c, s->h, s->w};
    ir_tensor *in[2] = {act(g, "x", 4, xd, 0.04f, -6), NULL};
    conv_spec d = {1, s->c, s->h, s->w, s->c, s->k, s->stride, s->k / 2, s->c, IR_I8, true, 1};
    ir_tensor *y = add_conv(g, in[0], &d, "dw", 91);
    conv_spec p = {1, s->c, y->dims[2], y->dims[3], s->out, 1, 1, 0, 1, IR_I8, false, 1};
    y = *mid = add_conv(g, y, &p, "project", 93);
    bool same = s->stride == 1 && s->out == s->c; /* the residual is the block's input, else a second input */
    if (!same)
        in[1] = act(g, "r", 4, y->dims, 0.03f, 5);
    ir_tensor *z = act(g, "sum", 4, y->dims, 0.06f, -2);
    ir_tensor *ins[2] = {same ? in[0] : in[1], y};
    ir_node_new(g, IR_OP_ADD, "add", 2, ins, 1, &z);
    tg_set_io(g, same ? 1 : 2, in, z);
    return g;
}

static const dw_spec specs[] = {
    {16, 56, 56, 3, 1, 16}, /* 0: the example CNN's block at twice the size */
    {32, 28, 28, 3, 1, 32}, /* 1: wider */
    {24, 45, 30, 5, 1, 24}, /* 2: 5x5, a halo of 4 rows, odd rows */
    {16, 57, 40, 3, 2, 24}, /* 3: stride 2, the residual a second input, odd rows */
};

Test(tiler_dwchain, dw_project_add_on_every_target)
{
    bool banded = false;
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
            ir_tensor *mid;
            built b;
            int counts[TG_COUNTS];
            build_checked(t, dw_graph(&specs[si], &mid), "dw chain", &b, counts);
            cr_assert_eq(b.prog.n_layers, 3);
            bool five = has_tokens(t, 5);
            const tile_layer *L = &b.prog.layers[0];
            cr_assert(b.prog.layers[1].fused, "spec %zu on %s: the projection inside the depthwise's pipeline", si,
                      t->name);
            cr_assert_eq(b.prog.layers[2].fused, five, "spec %zu on %s: the add inside iff 5 tokens", si, t->name);
            if (five) {
                /* one store of the add's output, each byte once: neither intermediate goes to DRAM, and the
                 * add has no pass of its own (its words are the chain's) */
                cr_assert_eq(store_bytes(t, L, &b.prog), (int64_t)ir_tensor_bytes(b.g->outputs[0]), "spec %zu on %s",
                             si, t->name);
                cr_assert_eq(b.prog.layers[2].n_words, 0);
                cr_assert_eq(counts[TGT_SEM_ELTWISE] + counts[TG_EPI_ELT], L->tiles, "spec %zu on %s: one add per band",
                             si, t->name);
                cr_assert_eq(counts[TGT_SEM_ELTWISE], has_epi_elt(t) ? 0 : L->tiles, "spec %zu on %s: the add in "
                             "the projection's output stage where the ISA has the epilogue", si, t->name);
                cr_assert_eq(counts[TGT_SEM_CONV], counts[TGT_SEM_DWCONV], "spec %zu on %s: no expand", si, t->name);
                cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_DWCONV, TGT_F_C), L->tiles * specs[si].c,
                             "spec %zu on %s: each band's depthwise covers every channel once", si, t->name);
                banded |= L->tiles > 1;
            } else { /* the pair's own store, then the add's pass over DRAM */
                cr_assert_eq(store_bytes(t, L, &b.prog), (int64_t)ir_tensor_bytes(mid), "spec %zu on %s", si, t->name);
            }
            finish_built(t, &b, "dw chain", 61 + (uint32_t)si);
        }
        tgt_free(t);
    }
    cr_assert(banded, "row bands somewhere");
}

/* A projection whose output a second node reads too (here: the graph's
 * output) is no chain: the add would be the only one to see it. The
 * depthwise + 1x1 pair still cascades; the add runs apart. */
Test(tiler_dwchain, not_when_the_projection_output_is_read_elsewhere)
{
    tgt_target *t = load_target("edge-v1");
    ir_tensor *mid;
    ir_graph *g = dw_graph(&specs[0], &mid);
    mid->flags |= IR_TENSOR_OUTPUT;
    built b;
    int counts[TG_COUNTS];
    build_checked(t, g, "dw chain, projection read twice", &b, counts);
    cr_assert(b.prog.layers[1].fused, "the pair");
    cr_assert(!b.prog.layers[2].fused && b.prog.layers[2].n_words > 0, "the add apart");
    finish_built(t, &b, "dw chain, projection read twice", 65);
    tgt_free(t);
}

/* A grouped conv that is not depthwise (two channels per group) heads no
 * chain: the nodes run apart, the add inside the projection's tiles. */
Test(tiler_dwchain, not_after_a_grouped_conv)
{
    tgt_target *t = load_target("edge-v1");
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 16, 28, 28};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, -6);
    conv_spec d = {1, 16, 28, 28, 16, 3, 1, 1, 8, IR_I8, true, 1};
    conv_spec p = {1, 16, 28, 28, 16, 1, 1, 0, 1, IR_I8, false, 1};
    ir_tensor *y = add_conv(g, add_conv(g, x, &d, "grouped", 95), &p, "project", 97);
    ir_tensor *z = act(g, "sum", 4, xd, 0.06f, -2);
    ir_tensor *ins[2] = {x, y};
    ir_node_new(g, IR_OP_ADD, "add", 2, ins, 1, &z);
    tg_set_io(g, 1, &x, z);
    built b;
    int counts[TG_COUNTS];
    build_checked(t, g, "grouped conv", &b, counts);
    cr_assert_eq(b.prog.n_layers, 3);
    cr_assert(!b.prog.layers[1].fused, "the grouped conv and the projection apart");
    cr_assert_eq(counts[TGT_SEM_DWCONV], 0);
    finish_built(t, &b, "grouped conv", 67);
    tgt_free(t);
}
