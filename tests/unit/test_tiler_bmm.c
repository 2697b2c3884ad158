/* Tests of the MatMul of two activations on the NPU (src/tiler/tile_bmm.c):
 * batched, B broadcast, A broadcast, shapes that need M, N and K tiles on the
 * small targets, both zero points non-zero; on every target the program
 * passes the structural checks, B loads dense for the matmul's `bt` mode, and
 * the NPU model's output equals the reference's (nk_qbmm) bit for bit; on an
 * npu-v1 without `bt`, B arrives transposed by one-byte DMA rows instead. */
#include <stdio.h>
#include <unistd.h>

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

/* dma_load instructions with one-byte rows (B's transposing loads) and matmuls in bt mode. */
static void b_loads(const tgt_target *t, const tile_program *p, int *byte_rows, int *bt)
{
    *byte_rows = *bt = 0;
    for (size_t off = 0; off < p->n_words;) {
        tgt_decoded d;
        npu_err e;
        cr_assert_eq(tgt_decode(t->isa, p->words, p->n_words, off, &d, &e), NPU_OK, "%s", e.msg);
        tgt_sem sem = t->isa->insns[d.insn].sem;
        *byte_rows += sem == TGT_SEM_DMA_LOAD && d.v[TGT_F_W] == 1 && d.v[TGT_F_DRAM_CS] == 1;
        *bt += sem == TGT_SEM_MATMUL && d.v[TGT_F_BT];
        off += (size_t)d.nwords;
    }
}

static char *slurp_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* edge-v1 on a copy of npu-v1 without the matmul's bt field (in a temporary directory). */
static tgt_target *edge_v1_without_bt(char *dir)
{
    const char *r = getenv("NPUCC_ROOT");
    char p[1024], q[1200];
    snprintf(p, sizeof p, "%s/isa/npu-v1.yaml", r && *r ? r : ".");
    char *isa = slurp_file(p), *bt = strstr(isa, "      bt:");
    cr_assert_not_null(bt);
    memmove(bt, strchr(bt, '\n') + 1, strlen(strchr(bt, '\n') + 1) + 1);
    snprintf(q, sizeof q, "%s/npu-v1.yaml", dir);
    FILE *f = fopen(q, "wb");
    fputs(isa, f);
    fclose(f);
    snprintf(p, sizeof p, "%s/targets/edge-v1.yaml", r && *r ? r : ".");
    char *tg = slurp_file(p), *at = strstr(tg, "isa: npu-v1");
    cr_assert_not_null(at);
    snprintf(q, sizeof q, "%s/edge-v1.yaml", dir);
    f = fopen(q, "wb");
    fprintf(f, "%.*sisa: %s/npu-v1.yaml%s", (int)(at - tg), tg, dir, at + strlen("isa: npu-v1"));
    fclose(f);
    free(isa);
    free(tg);
    tgt_target *t = NULL;
    npu_err e;
    cr_assert_eq(tgt_load(q, NULL, &t, &e), NPU_OK, "%s", e.msg);
    return t;
}

Test(tiler_bmm, every_shape_on_every_target)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
            const bmm_spec *s = &specs[si];
            built b;
            int counts[TG_COUNTS];
            build_checked(t, bmm_graph(s), s->what, &b, counts);
            cr_assert_gt(counts[TGT_SEM_MATMUL], 0, "%s on %s", s->what, t->name);
            int byte_rows, bt;
            b_loads(t, &b.prog, &byte_rows, &bt);
            cr_assert(bt == counts[TGT_SEM_MATMUL] && byte_rows == 0, "%s on %s: B not loaded dense", s->what, t->name);
            cr_assert_eq(b.prog.layers[0].macs, ir_tensor_numel(b.g->outputs[0]) * s->ad[s->ra - 1]);
            finish_built(t, &b, s->what, (uint32_t)si * 31 + 7);
        }
        tgt_free(t);
    }
}

Test(tiler_bmm, without_bt_the_dma_transposes_b)
{
    char dir[] = "/tmp/npucc_bmm_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    tgt_target *t = edge_v1_without_bt(dir);
    for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
        built b;
        int counts[TG_COUNTS], byte_rows, bt;
        build_checked(t, bmm_graph(&specs[si]), specs[si].what, &b, counts);
        b_loads(t, &b.prog, &byte_rows, &bt);
        cr_assert(byte_rows > 0 && bt == 0, "%s: %d transposing loads", specs[si].what, byte_rows);
        finish_built(t, &b, specs[si].what, (uint32_t)si * 31 + 7);
    }
    tgt_free(t);
    char f[128];
    snprintf(f, sizeof f, "%s/npu-v1.yaml", dir);
    unlink(f);
    snprintf(f, sizeof f, "%s/edge-v1.yaml", dir);
    unlink(f);
    rmdir(dir);
}

Test(tiler_bmm, narrow_target_tiles_m)
{
    tgt_target *t = load_target("edge-v1-narrow");
    ir_graph *g = bmm_graph(&specs[4]);
    built b;
    npu_err e;
    cr_assert_eq(build(t, g, &b, &e), NPU_OK, "%s", e.msg);
    int counts[TG_COUNTS];
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
