/* Tests of the stem chain (src/tiler/tile_cascade3.c with a KxK expand and
 * the quantize prologue, decided in tile_decide.c): the model input's
 * QuantizeLinear, a strided 3x3 stem conv with pads, the depthwise conv
 * after it and the 1x1 projection run as one pipeline over row bands, the
 * vector unit quantizing each band's float32 rows for the MAC array; the
 * stem's output never goes to DRAM. Checked: where it is taken (MobileNetV2's
 * stem shape on edge-v1), the tokens (each quantize waits for its loads, each
 * stem conv for its quantize through CHAIN), one store of the projection's
 * output, the rows a band shares with the band before copied, not loaded
 * again, the stem without the prologue as a chain of its own; on every
 * target, the output bit for bit against the reference on the NPU model. */
#include "tests/support/tiler_graphs.h"

typedef struct stem_spec {
    int64_t c, h, w;      /* the float32 input */
    int64_t sc, k, s, p;  /* the stem conv: channels, window, stride, pads */
    int64_t out;          /* the projection's channels (0: no projection) */
    bool quantize;        /* the input float32, quantized on the NPU; else int8 */
} stem_spec;

/* x -> [QuantizeLinear] -> stem kxk/s (relu) -> depthwise 3x3 (relu) -> [project 1x1] -> z */
static ir_graph *stem_graph(const stem_spec *s)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, s->c, s->h, s->w};
    ir_tensor *x, *y = s->quantize ? add_quantize(g, xd, &x) : (x = act(g, "x", 4, xd, 0.02f, -3));
    conv_spec e = {1, s->c, s->h, s->w, s->sc, s->k, s->s, s->p, 1, IR_I8, true, 1};
    y = add_conv(g, y, &e, "stem", 41);
    conv_spec d = {1, s->sc, y->dims[2], y->dims[3], s->sc, 3, 1, 1, s->sc, IR_I8, true, 1};
    y = add_conv(g, y, &d, "dw", 43);
    if (s->out) {
        conv_spec p = {1, s->sc, y->dims[2], y->dims[3], s->out, 1, 1, 0, 1, IR_I8, false, 1};
        y = add_conv(g, y, &p, "project", 47);
    }
    tg_set_io(g, 1, &x, y);
    return g;
}

static const stem_spec specs[] = {
    {3, 224, 224, 32, 3, 2, 1, 16, true}, /* 0: MobileNetV2's stem and first block */
    {3, 97, 75, 32, 3, 2, 1, 16, true},   /* 1: odd rows and columns: a bottom band ending on a pad */
    {3, 96, 96, 16, 3, 1, 1, 24, true},   /* 2: stride 1 */
    {3, 224, 224, 32, 3, 2, 1, 16, false}, /* 3: int8 input: the stem chain without the prologue */
    {3, 160, 160, 32, 3, 2, 1, 0, true},  /* 4: no projection */
    {8, 96, 96, 16, 3, 2, 1, 16, true},   /* 5: eight planes: each band loads its shared rows again */
};

/* The stem's pipeline when the nodes after the first are fused into it: its layer, else NULL. */
static const tile_layer *joined(const built *b)
{
    for (int i = 1; i < b->prog.n_layers; i++)
        if (!b->prog.layers[i].fused)
            return NULL;
    return &b->prog.layers[0];
}

Test(tiler_stem, stem_chain_on_every_target)
{
    int with_pre = 0, without = 0;
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
            const stem_spec *s = &specs[si];
            built b;
            int counts[TG_COUNTS];
            build_checked(t, stem_graph(s), "stem chain", &b, counts);
            const tile_layer *L = joined(&b);
            if (L) {
                int64_t n = L->tiles;
                cr_assert_gt(n, 1, "spec %zu on %s: bands", si, t->name);
                cr_assert_eq(store_bytes(t, L, &b.prog), (int64_t)ir_tensor_bytes(b.g->outputs[0]),
                             "spec %zu on %s: one store of the output, nothing else", si, t->name);
                cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_DWCONV, TGT_F_C), n * s->sc,
                             "spec %zu on %s: each band's depthwise covers every channel once", si, t->name);
                cr_assert_eq(counts[TGT_SEM_CONV], counts[TGT_SEM_DWCONV] * (s->out ? 2 : 1),
                             "spec %zu on %s: a stem conv (and a projection) per depthwise chunk", si, t->name);
            }
            if (L && s->quantize) {
                with_pre++;
                int64_t n = L->tiles, copies = field_sum(t, L, &b.prog, TGT_SEM_REQUANT, TGT_F_COPY);
                cr_assert(has_tokens(t, 5), "spec %zu on %s: the prologue's CHAIN", si, t->name);
                /* the bands after the first share rows with the one before (3x3 windows): with few planes
                 * each copies them and quantizes the rest, plane by plane (all but a last band inside the
                 * one before it); else one quantize per band */
                int64_t sharing = copies / s->c;
                cr_assert(s->c <= 4 ? copies % s->c == 0 && sharing >= n - 2 && sharing <= n - 1 : copies == 0,
                          "spec %zu on %s: %lld copies, %lld bands", si, t->name, (long long)copies, (long long)n);
                cr_assert_eq(counts[TGT_SEM_REQUANT], copies, "spec %zu on %s: requants are copies", si, t->name);
                cr_assert_eq(counts[TGT_SEM_QUANTIZE], n - sharing + copies, "spec %zu on %s: quantizes", si,
                             t->name);
                /* each band's first prologue instruction waits for its loads (LOADED), each stem conv for the
                 * band's last quantize (CHAIN) */
                cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_QUANTIZE, TGT_F_WAIT) +
                                 field_sum(t, L, &b.prog, TGT_SEM_REQUANT, TGT_F_WAIT), n * 1);
                cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_CONV, TGT_F_WAIT), n * 16);
            }
            without += L && !s->quantize;
            finish_built(t, &b, "stem chain", 81 + (uint32_t)si);
        }
        tgt_free(t);
    }
    cr_assert_geq(with_pre, 2, "the quantize, stem, depthwise and projection as one pipeline somewhere");
    cr_assert_geq(without, 1, "the stem chain without the prologue somewhere");
}

typedef struct band_rows {
    int n;
    int64_t h[64];
} band_rows;

static bool store_rows(const tgt_target *t, const tgt_decoded *d, void *ud)
{
    band_rows *r = ud;
    if (t->isa->insns[d->insn].sem == TGT_SEM_DMA_STORE && r->n < 64)
        r->h[r->n++] = d->v[TGT_F_H];
    return true;
}

/* On edge-v1 MobileNetV2's stem takes it: the 401 KB stem output no longer
 * goes to DRAM and back, and the static schedule beats the quantize + conv
 * pair and the depthwise + 1x1 pair apart. Its bands are DMA-bound (float32
 * rows in): after the last band's rows have loaded only its MAC work and
 * store are left, so the band search also tries a few rows fewer than the
 * largest, and a short last band wins (16 rows each before; on the zoo
 * model, whose SRAM level leaves less for the tiles, eight bands of 13 rows
 * and one of 8 instead of eight of 14: 3.2K cycles fewer). */
Test(tiler_stem, taken_on_mobilenet_v2s_stem)
{
    tgt_target *t = load_target("edge-v1");
    built b;
    int counts[TG_COUNTS];
    build_checked(t, stem_graph(&specs[0]), "mobilenet stem", &b, counts);
    const tile_layer *L = joined(&b);
    cr_assert(L, "one pipeline");
    cr_assert_eq(L->node->op, IR_OP_QUANTIZE_LINEAR);
    /* the float32 input, each row once (the rows a band shares with the one before are copied from that
     * band's int8 rows), the weights and the output, not the stem's output */
    int64_t once = 4 * 3 * 224 * 224 + 16 * 112 * 112;
    cr_assert(L->dram_bytes >= once && L->dram_bytes < once + 4096, "%lld", (long long)L->dram_bytes);
    cr_assert_lt(L->cycles, 133196, "%lld: the quantize + conv pair alone took 133,196", (long long)L->cycles);
    band_rows r = {0};
    for_each_insn(t, L, &b.prog, store_rows, &r);
    cr_assert_gt(r.n, 1, "bands");
    cr_assert_lt(r.h[r.n - 1], r.h[0], "the last band (%lld rows) shorter than the first (%lld)", (long long)r.h[r.n - 1],
                 (long long)r.h[0]);
    built_free(&b);
    tgt_free(t);
}
