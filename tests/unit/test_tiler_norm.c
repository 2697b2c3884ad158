/* The tiler's row-wise ops (src/tiler/tile_norm.c): npu.Softmax and
 * npu.LayerNorm graphs on every target, lowered, checked instruction by
 * instruction, run on the NPU model against the reference bit for bit (and
 * the static estimate against the model's cycles); rows too long for a
 * target's w field are refused with the reason. ReduceMean over a run of
 * consecutive axes lowers to the average pool of a view, the same way. */
#include "kernels/nk_norm.h"
#include "tests/support/tiler_graphs.h"

/* rows x len int8 rows through npu.Softmax (softmax) or npu.LayerNorm */
static ir_graph *row_graph(bool softmax, int64_t rows, int64_t len)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[3] = {1, rows, len};
    ir_tensor *x = act(g, "x", 3, d, 0.06f, 3);
    ir_tensor *y = softmax ? act(g, "y", 3, d, 0.6f / 255, -128) : act(g, "y", 3, d, 0.04f, -5);
    ir_tensor *tab;
    if (softmax) {
        int64_t td = 256;
        tab = ir_const_new(g, "exp", IR_I32, 1, &td, NULL);
        cr_assert_eq(nk_qsoftmax_table(0.06f, tab->data), NK_OK);
    } else {
        int64_t td[2] = {len, 3};
        float *gm = malloc(sizeof(float) * (size_t)len), *bt = malloc(sizeof(float) * (size_t)len);
        for (int64_t j = 0; j < len; j++)
            gm[j] = 0.6f + 0.001f * (float)(j % 500), bt[j] = 0.002f * (float)(j % 300) - 0.3f;
        tab = ir_const_new(g, "cols", IR_I32, 2, td, NULL);
        cr_assert_eq(nk_qlayernorm_cols(gm, bt, (int32_t)len, 0.04f, tab->data), NK_OK);
        free(gm), free(bt);
    }
    ir_tensor *ins[2] = {x, tab};
    ir_node *n = ir_node_new(g, softmax ? IR_OP_QSOFTMAX : IR_OP_QLAYER_NORM, softmax ? "sm" : "ln", 2, ins, 1, &y);
    if (!softmax)
        ir_set_int(g, n, "eps_q", nk_qlayernorm_eps(1e-5f, 0.06f, (int32_t)len));
    tg_set_io(g, 1, &x, y);
    return g;
}

Test(tiler_norm, rows_on_every_target)
{
    /* few short rows, many rows over several bands, long rows */
    const int64_t shapes[][2] = {{3, 10}, {700, 64}, {9, 3000}};
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (int sm = 0; sm < 2; sm++)
            for (size_t k = 0; k < 3; k++) {
                char what[64];
                snprintf(what, sizeof what, "%s %lldx%lld", sm ? "softmax" : "layernorm", (long long)shapes[k][0],
                         (long long)shapes[k][1]);
                ir_graph *g = row_graph(sm, shapes[k][0], shapes[k][1]);
                const char *why = NULL;
                cr_assert(tile_supports(t, g, g->nodes[0], &why), "%s on %s: %s", what, t->name, why);
                built b;
                npu_err e;
                cr_assert_eq(build(t, g, &b, &e), NPU_OK, "%s on %s: %s", what, t->name, e.msg);
                int counts[TG_COUNTS];
                check_program(t, &b, what, counts);
                int want = sm ? TGT_SEM_SOFTMAX : TGT_SEM_LAYERNORM;
                cr_assert_gt(counts[want], 0, "%s on %s", what, t->name);
                if (shapes[k][0] == 700)
                    cr_assert_gt(counts[want], 1, "%s on %s: bands overlap DMA", what, t->name);
                run_functional(t, &b, what, 17u * (uint32_t)k + (uint32_t)sm);
                built_free(&b);
            }
        tgt_free(t);
    }
}

Test(tiler_norm, rows_longer_than_the_w_field_are_refused)
{
    tgt_target *nar = load_target("edge-v1-narrow"), *v1 = load_target("edge-v1");
    ir_graph *g = row_graph(true, 2, 5000);
    const char *why = NULL;
    cr_assert(!tile_supports(nar, g, g->nodes[0], &why));
    cr_assert(strstr(why, "5000") && strstr(why, "softmax w field") && strstr(why, "npu-v1-narrow"), "%s", why);
    cr_assert(tile_supports(v1, g, g->nodes[0], &why), "%s", why);
    ir_graph_free(g);
    tgt_free(nar);
    tgt_free(v1);
}

/* ReduceMean(x, axes) with keepdims, quantized */
static ir_graph *reduce_graph(int rank, const int64_t *xd, int na, const int64_t *axes)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t yd[8];
    for (int i = 0; i < rank; i++)
        yd[i] = xd[i];
    for (int i = 0; i < na; i++)
        yd[axes[i]] = 1;
    ir_tensor *x = act(g, "x", rank, xd, 0.05f, -4), *y = act(g, "y", rank, yd, 0.011f, 9);
    ir_node *n = ir_node_new(g, IR_OP_REDUCE_MEAN, "mean", 1, &x, 1, &y);
    ir_set_ints(g, n, "axes", na, axes);
    tg_set_io(g, 1, &x, y);
    return g;
}

Test(tiler_norm, reduce_mean_as_a_pool_on_every_target)
{
    /* a ViT's mean over tokens, a global average pool, a middle run with a tail */
    const int64_t d0[3] = {1, 17, 64}, a0[1] = {1}, d1[4] = {1, 40, 5, 5}, a1[2] = {2, 3};
    const int64_t d2[4] = {2, 3, 6, 10}, a2[2] = {1, 2};
    struct { int rank; const int64_t *d; int na; const int64_t *a; } cases[] = {
        {3, d0, 1, a0}, {4, d1, 2, a1}, {4, d2, 2, a2}};
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t k = 0; k < 3; k++) {
            char what[32];
            snprintf(what, sizeof what, "reduce_mean %zu", k);
            ir_graph *g = reduce_graph(cases[k].rank, cases[k].d, cases[k].na, cases[k].a);
            const char *why = NULL;
            cr_assert(tile_supports(t, g, g->nodes[0], &why), "%s on %s: %s", what, t->name, why);
            cr_assert(tile_int_supported(t, g, g->nodes[0]), "%s on %s", what, t->name);
            built b;
            npu_err e;
            cr_assert_eq(build(t, g, &b, &e), NPU_OK, "%s on %s: %s", what, t->name, e.msg);
            int counts[TG_COUNTS];
            check_program(t, &b, what, counts);
            cr_assert_gt(counts[TGT_SEM_POOL], 0, "%s on %s", what, t->name);
            run_functional(t, &b, what, 31u * (uint32_t)k + 5u);
            built_free(&b);
        }
        tgt_free(t);
    }
}

Test(tiler_norm, reduce_mean_refusals)
{
    tgt_target *nar = load_target("edge-v1-narrow");
    const char *why = NULL;
    const int64_t d[4] = {1, 4, 6, 10}, gaps[2] = {1, 3}, one[1] = {1};
    ir_graph *g = reduce_graph(4, d, 2, gaps); /* axes 1 and 3: not one run */
    cr_assert(!tile_supports(nar, g, g->nodes[0], &why));
    cr_assert(strstr(why, "consecutive"), "%s", why);
    cr_assert(!tile_int_supported(nar, g, g->nodes[0]));
    ir_graph_free(g);
    const int64_t tall[3] = {1, 300, 8};
    g = reduce_graph(3, tall, 1, one); /* a 300x1 window: narrow's kh field stops at 32 */
    cr_assert(!tile_supports(nar, g, g->nodes[0], &why));
    cr_assert(strstr(why, "300x1") && strstr(why, "npu-v1-narrow"), "%s", why);
    cr_assert(!tile_int_supported(nar, g, g->nodes[0]), "stays float, for the host");
    ir_graph_free(g);
    tgt_free(nar);
}
