/* Tests of the quantize prologue inside the conv + pool cascade
 * (src/tiler/tile_cascade_pool.c with a QuantizeLinear; the skewed pipeline
 * of tile_emit.c): the model input's quantize, the stem conv and the pool
 * after it run as one pipeline, vector unit (quantize), MAC array (conv),
 * vector unit (pool). Checked: where it is taken, the tokens (the conv waits
 * CHAIN, the pool CHAIN_VEC: one consumer queue per token), band j+1's
 * quantize issued before band j's pool (or every conv would wait for the
 * previous pool), one store of the pool's output; on every target, the
 * output bit for bit against the reference on the NPU model. */
#include "tests/support/tiler_graphs.h"

typedef struct stem_spec {
    conv_spec conv;
    pool_spec pool;
} stem_spec;

/* x (float32) -> QuantizeLinear -> conv -> pool -> z */
static ir_graph *stem_graph(const stem_spec *s)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, s->conv.c, s->conv.h, s->conv.w};
    ir_tensor *x, *xq = add_quantize(g, xd, &x);
    ir_tensor *z = add_pool(g, add_conv(g, xq, &s->conv, "stem", 61), &s->pool);
    tg_set_io(g, 1, &x, z);
    return g;
}

static const stem_spec stems[] = {
    /* ResNet-18's stem at half size: 7x7/2 conv, 3x3/2 max pool with pads */
    {{1, 3, 112, 112, 64, 7, 2, 3, 1, IR_I8, true, 1}, {IR_OP_MAX_POOL, 3, 2, 1, false, false}},
    /* SqueezeNet's stem: 3x3/2 conv without pads, 3x3/2 max pool in ceil_mode */
    {{1, 3, 113, 113, 64, 3, 2, 0, 1, IR_I8, true, 1}, {IR_OP_MAX_POOL, 3, 2, 0, true, false}},
    /* an average pool, odd sizes (a smaller plane on edge-v1-wide puts every buffer in one of its
     * 256 KiB banks: the model's bank stalls, which the static schedule does not see, then take it
     * past the 1.6x that run_functional allows; docs/tiler.md) */
    {{1, 3, 91, 75, 32, 3, 1, 1, 1, IR_I8, false, 1}, {IR_OP_AVERAGE_POOL, 2, 2, 0, false, false}},
};

/* The semantics of the layer's compute instructions in issue order (at most cap). */
static int comp_order(const tgt_target *t, const tile_layer *L, const tile_program *p, tgt_sem *out, int cap)
{
    int n = 0;
    for (size_t off = L->first_word; off < (size_t)L->first_word + L->n_words;) {
        tgt_decoded d;
        npu_err e;
        cr_assert_eq(tgt_decode(t->isa, p->words, p->n_words, off, &d, &e), NPU_OK, "%s", e.msg);
        tgt_sem s = t->isa->insns[d.insn].sem;
        if ((s == TGT_SEM_QUANTIZE || s == TGT_SEM_CONV || s == TGT_SEM_POOL) && n < cap)
            out[n++] = s;
        off += (size_t)d.nwords;
    }
    return n;
}

Test(tiler_qpool, quantize_conv_pool_on_every_target)
{
    int joined = 0;
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t si = 0; si < sizeof stems / sizeof stems[0]; si++) {
            built b;
            int counts[TG_COUNTS];
            build_checked(t, stem_graph(&stems[si]), "quantize + conv + pool", &b, counts);
            cr_assert_eq(b.prog.n_layers, 3);
            const tile_layer *L = &b.prog.layers[0];
            bool one = b.prog.layers[1].fused && b.prog.layers[2].fused;
            cr_assert(!one || has_tokens(t, 7), "stem %zu on %s: vector, MAC, vector needs 7 tokens", si, t->name);
            if (one) {
                joined++;
                int64_t n = L->tiles;
                cr_assert_gt(n, 1, "stem %zu on %s: bands", si, t->name);
                cr_assert_eq(store_bytes(t, L, &b.prog), (int64_t)ir_tensor_bytes(b.g->outputs[0]));
                cr_assert(counts[TGT_SEM_QUANTIZE] == n && counts[TGT_SEM_CONV] == n && counts[TGT_SEM_POOL] == n,
                          "stem %zu on %s: one quantize, conv and pool per band", si, t->name);
                /* each quantize waits for its loads, each conv for its quantize (CHAIN), each pool
                 * for its conv (CHAIN_VEC): one consumer queue per token */
                cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_QUANTIZE, TGT_F_WAIT), n * 1);
                cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_CONV, TGT_F_WAIT), n * 16);
                cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_POOL, TGT_F_WAIT), n * 64);
                tgt_sem seq[8];
                int k = comp_order(t, L, &b.prog, seq, 8);
                cr_assert(k >= 4 && seq[0] == TGT_SEM_QUANTIZE && seq[1] == TGT_SEM_CONV && seq[2] == TGT_SEM_QUANTIZE &&
                              seq[3] == TGT_SEM_POOL,
                          "stem %zu on %s: band 1's quantize goes out before band 0's pool", si, t->name);
            } else {
                cr_assert(!b.prog.layers[1].fused || !has_tokens(t, 7), "stem %zu on %s", si, t->name);
            }
            finish_built(t, &b, "quantize + conv + pool", 71 + (uint32_t)si);
        }
        tgt_free(t);
    }
    cr_assert_geq(joined, 3, "the three nodes run as one pipeline somewhere");
}

/* On edge-v1 the ResNet-like stem takes it: its MACs hide the float32 input's load. */
Test(tiler_qpool, taken_where_the_macs_hide_the_float_load)
{
    tgt_target *t = load_target("edge-v1");
    built b;
    int counts[TG_COUNTS];
    build_checked(t, stem_graph(&stems[0]), "resnet stem", &b, counts);
    cr_assert(b.prog.layers[1].fused && b.prog.layers[2].fused, "one pipeline");
    cr_assert_eq(b.prog.layers[0].node->op, IR_OP_QUANTIZE_LINEAR);
    built_free(&b);
    tgt_free(t);
}
