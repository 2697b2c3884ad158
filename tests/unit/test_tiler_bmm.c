/* Tests of the MatMul of two activations on the NPU (src/tiler/tile_bmm.c):
 * batched, B broadcast, A broadcast, shapes that need M, N and K tiles on the
 * small targets, both zero points non-zero; on every target the program
 * passes the structural checks, B arrives transposed by one-byte DMA rows,
 * and the NPU model's output equals the reference's (nk_qbmm) bit for bit. */
#include "tests/support/tiler_graphs.h"

typedef struct bmm_spec {
    const char *what;
    int ra, rb;
    int64_t ad[4], bd[4];
} bmm_spec;

static const bmm_spec specs[] = {
    {"batched", 4, 4, {2, 4, 8, 16}, {2, 4, 16, 8}},
    {"b_broadcast", 3, 2, {4, 8, 16}, {16, 8}},
    {"a_broadcast", 2, 3, {5, 24}, {3, 24, 7}},
    {"attention", 4, 4, {1, 2, 65, 16}, {1, 2, 16, 65}},
    {"tiles", 2, 2, {300, 700}, {700, 300}}, /* M tiles on narrow (m field 256), SRAM-bound on lite */
};

/* y = MatMul(a, b), a and b graph inputs with their own zero points. */
static ir_graph *bmm_graph(const bmm_spec *s)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    const int64_t *ad = s->ad, *bd = s->bd;
    int ry = s->ra > s->rb ? s->ra : s->rb;
    int64_t yd[4];
    for (int i = 0; i < ry - 2; i++) {
        int ia = i - (ry - s->ra), ib = i - (ry - s->rb);
        int64_t x = ia >= 0 ? ad[ia] : 1, z = ib >= 0 ? bd[ib] : 1;
        yd[i] = x > z ? x : z;
    }
    yd[ry - 2] = ad[s->ra - 2], yd[ry - 1] = bd[s->rb - 1];
    ir_tensor *a = act(g, "a", s->ra, ad, 0.02f, 5), *b = act(g, "b", s->rb, bd, 0.03f, -9);
    /* the output scale of a sum of k products of about a quarter of the range each */
    float ys = 0.02f * 0.03f * 127.0f * 2.0f * (float)ad[s->ra - 1] / 16.0f;
    ir_tensor *y = act(g, "y", ry, yd, ys, 3);
    ir_tensor *ins[2] = {a, b};
    ir_node_new(g, IR_OP_MATMUL, "mm", 2, ins, 1, &y);
    tg_set_io(g, 2, ins, y);
    return g;
}

/* dma_load instructions with one-byte rows: B's transposing loads. */
static int byte_row_loads(const tgt_target *t, const tile_program *p)
{
    int n = 0;
    for (size_t off = 0; off < p->n_words;) {
        tgt_decoded d;
        npu_err e;
        cr_assert_eq(tgt_decode(t->isa, p->words, p->n_words, off, &d, &e), NPU_OK, "%s", e.msg);
        n += t->isa->insns[d.insn].sem == TGT_SEM_DMA_LOAD && d.v[TGT_F_W] == 1 && d.v[TGT_F_DRAM_CS] == 1;
        off += (size_t)d.nwords;
    }
    return n;
}

Test(tiler_bmm, every_shape_on_every_target)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
            const bmm_spec *s = &specs[si];
            built b;
            int counts[TGT_SEM_COUNT];
            build_checked(t, bmm_graph(s), s->what, &b, counts);
            cr_assert_gt(counts[TGT_SEM_MATMUL], 0, "%s on %s", s->what, t->name);
            cr_assert_gt(byte_row_loads(t, &b.prog), 0, "%s on %s: B not loaded transposed", s->what, t->name);
            cr_assert_eq(b.prog.layers[0].macs, ir_tensor_numel(b.g->outputs[0]) * s->ad[s->ra - 1]);
            finish_built(t, &b, s->what, (uint32_t)si * 31 + 7);
        }
        tgt_free(t);
    }
}

Test(tiler_bmm, narrow_target_tiles_m)
{
    tgt_target *t = load_target("edge-v1-narrow");
    ir_graph *g = bmm_graph(&specs[4]);
    built b;
    npu_err e;
    cr_assert_eq(build(t, g, &b, &e), NPU_OK, "%s", e.msg);
    int counts[TGT_SEM_COUNT];
    check_program(t, &b, "tiles", counts);
    /* 300 rows exceed the 256 of npu-v1-narrow's m field */
    cr_assert_geq(counts[TGT_SEM_MATMUL], 2, "%d matmuls", counts[TGT_SEM_MATMUL]);
    built_free(&b);
    tgt_free(t);
}

Test(tiler_bmm, partly_broadcast_batches_stay_on_the_host)
{
    tgt_target *t = load_target("edge-v1");
    bmm_spec s = {"partial", 4, 4, {2, 4, 8, 16}, {1, 4, 16, 8}};
    ir_graph *g = bmm_graph(&s);
    const char *why = NULL;
    cr_assert_not(tile_supports(t, g, g->nodes[0], &why));
    cr_assert(strstr(why, "two activations"), "%s", why);
    ir_graph_free(g);
    tgt_free(t);
}
