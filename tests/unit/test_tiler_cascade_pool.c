/* Tests of the conv + pool cascade (src/tiler/tile_cascade_pool.c): a conv
 * whose output only a MaxPool or AveragePool reads runs with it as one
 * pipeline, the pool on the vector unit after the conv's tile through CHAIN
 * (a global average pool too).
 * On every target: which layers fuse (npu-v1-narrow has four tokens: apart),
 * that the conv's output never goes to DRAM, band edges (the pools' pads,
 * ceil_mode, halo rows), and, with the NPU model, the output
 * bit for bit against the reference. */
#include "tests/support/tiler_graphs.h"

typedef struct pair_spec {
    conv_spec conv;
    pool_spec pool;
} pair_spec;

/* x -> conv -> pool; *mid gets the conv's output. */
static ir_graph *pair_graph(const pair_spec *s, ir_tensor **mid)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, s->conv.c, s->conv.h, s->conv.w};
    ir_tensor *x = act(g, "x", 4, xd, 0.04f, -6);
    ir_tensor *y = *mid = add_conv(g, x, &s->conv, "conv", 41);
    ir_tensor *z = add_pool(g, y, &s->pool);
    tg_set_io(g, 1, &x, z);
    return g;
}

static const pair_spec pairs[] = {
    /* 0: ResNet's stem at a quarter of the size: 7x7/2 conv, 3x3/2 max pool with its pads, halo rows */
    {{1, 3, 112, 112, 32, 7, 2, 3, 1, IR_I8, true, 1}, {IR_OP_MAX_POOL, 3, 2, 1, false, false}},
    /* 1: SqueezeNet's stem: 3x3/2 conv without pads, 3x3/2 max pool in ceil_mode (an odd plane) */
    {{1, 3, 101, 101, 64, 3, 2, 0, 1, IR_I8, true, 1}, {IR_OP_MAX_POOL, 3, 2, 0, true, false}},
    /* 2: the example CNN's conv2 and pool2: 2x2/2, no halo */
    {{1, 16, 14, 14, 32, 3, 1, 1, 1, IR_I8, true, 1}, {IR_OP_MAX_POOL, 2, 2, 0, false, false}},
    /* 3: an average pool counting its pads, stride 1, int4 weights */
    {{1, 24, 48, 40, 48, 3, 1, 1, 1, IR_I4, false, 1}, {IR_OP_AVERAGE_POOL, 3, 1, 1, false, true}},
    /* 4: a depthwise conv into an average pool */
    {{1, 64, 60, 60, 64, 3, 1, 1, 64, IR_I8, true, 1}, {IR_OP_AVERAGE_POOL, 2, 2, 0, false, false}},
    /* 5: SqueezeNet's classifier: a 1x1 conv into the global average pool (channel chunks of whole planes) */
    {{1, 128, 13, 13, 250, 1, 1, 0, 1, IR_I8, true, 1}, {IR_OP_GLOBAL_AVERAGE_POOL, 0, 0, 0, false, false}},
};

Test(tiler_cascade_pool, conv_then_pool_on_every_target)
{
    bool banded = false;
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t pi = 0; pi < sizeof pairs / sizeof pairs[0]; pi++) {
            ir_tensor *mid;
            built b;
            int counts[TG_COUNTS];
            build_checked(t, pair_graph(&pairs[pi], &mid), "conv + pool", &b, counts);
            cr_assert_eq(b.prog.n_layers, 2);
            bool five = has_tokens(t, 5);
            cr_assert_eq(b.prog.layers[1].fused, five, "pair %zu on %s: the pool inside the conv's pipeline iff 5 "
                         "tokens", pi, t->name);
            if (five) {
                const tile_layer *L = &b.prog.layers[0];
                /* the conv's output never goes to DRAM: the cascade stores the pool's output alone, once */
                cr_assert_eq(store_bytes(t, L, &b.prog), (int64_t)ir_tensor_bytes(b.g->outputs[0]), "pair %zu on %s",
                             pi, t->name);
                cr_assert_eq(counts[TGT_SEM_POOL], L->tiles, "pair %zu on %s: one pool per work", pi, t->name);
                cr_assert_eq(counts[TGT_SEM_CONV] + counts[TGT_SEM_DWCONV], L->tiles);
                banded |= L->tiles > 1 && store_bytes(t, L, &b.prog) / L->tiles < (int64_t)mid->dims[1] *
                                                                                     b.g->outputs[0]->dims[2] *
                                                                                     b.g->outputs[0]->dims[3];
            }
            finish_built(t, &b, "conv + pool", 51 + (uint32_t)pi);
        }
        tgt_free(t);
    }
    cr_assert(banded, "row bands somewhere");
}

/* A conv whose output a second node reads too (here: the graph's output)
 * is not cascaded: the pool would be the only one to see it. */
Test(tiler_cascade_pool, not_when_the_conv_output_is_read_elsewhere)
{
    tgt_target *t = load_target("edge-v1");
    ir_tensor *mid;
    ir_graph *g = pair_graph(&pairs[2], &mid);
    mid->flags |= IR_TENSOR_OUTPUT;
    built b;
    npu_err e;
    cr_assert_eq(build(t, g, &b, &e), NPU_OK, "%s", e.msg);
    cr_assert(!b.prog.layers[1].fused, "apart");
    tile_program_free(&b.prog, npu_alloc_default());
    emit_blob_free(&b.consts);
    ir_graph_free(b.g);
    tgt_free(t);
}
