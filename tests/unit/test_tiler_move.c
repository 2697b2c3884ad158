/* Slice and Split on the NPU (src/tiler/tile_move.c): on every target, the
 * DMA-only program for a ShuffleNet channel split, crops on H and on W (one
 * row per plane), a crop of a batch (the loop over outer axes), one large
 * enough to need many tiles on the 128 KiB target, and each part of a Split
 * in three along C and along H, bit-exact with the reference. */
#include "tests/support/tiler_graphs.h"
#include "tiler/tile_internal.h"

typedef struct sl_spec {
    const char *what;
    int64_t xd[4], st[4], yd[4];
} sl_spec;

static const sl_spec specs[] = {
    {"channel_half", {1, 16, 8, 8}, {0, 8, 0, 0}, {1, 8, 8, 8}},
    {"crop_hw", {1, 4, 12, 12}, {0, 0, 1, 2}, {1, 4, 10, 7}},
    {"crop_w", {1, 3, 5, 9}, {0, 0, 0, 4}, {1, 3, 5, 5}},
    {"batch_crop", {3, 4, 6, 6}, {1, 1, 2, 0}, {2, 2, 3, 6}},
    {"big", {1, 64, 96, 96}, {0, 16, 0, 0}, {1, 40, 96, 96}},
};

static ir_graph *sl_graph(const sl_spec *s)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    ir_tensor *x = act(g, "x", 4, s->xd, 0.05f, 3), *y = act(g, "y", 4, s->yd, 0.05f, 3);
    ir_node *n = ir_node_new(g, IR_OP_SLICE, "slice", 1, &x, 1, &y);
    int64_t en[4], ax[4] = {0, 1, 2, 3}, sp[4] = {1, 1, 1, 1};
    for (int i = 0; i < 4; i++)
        en[i] = s->st[i] + s->yd[i];
    ir_set_ints(g, n, "starts", 4, s->st);
    ir_set_ints(g, n, "ends", 4, en);
    ir_set_ints(g, n, "axes", 4, ax);
    ir_set_ints(g, n, "steps", 4, sp);
    tg_set_io(g, 1, &x, y);
    return g;
}

Test(tiler_move, slices_on_every_target)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
            built b;
            int counts[TG_COUNTS];
            build_checked(t, sl_graph(&specs[si]), specs[si].what, &b, counts);
            cr_assert_gt(counts[TGT_SEM_DMA_LOAD], 0, "%s: a graph output is copied", specs[si].what);
            cr_assert_eq(compute_count(counts), 0, "%s: DMA only", specs[si].what);
            if (si == sizeof specs / sizeof specs[0] - 1 && !strcmp(t->name, "edge-v1-lite"))
                cr_assert_gt(counts[TGT_SEM_DMA_LOAD], 4, "big on lite: %d loads", counts[TGT_SEM_DMA_LOAD]);
            finish_built(t, &b, specs[si].what, (uint32_t)si * 11 + 7);
        }
        tgt_free(t);
    }
}

/* x -> Split(axis) in sizes 2, 3, 3; part j is the graph output */
static ir_graph *split_graph(int axis, int j)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 8, 8, 6}, sizes[3] = {2, 3, 3};
    ir_tensor *x = act(g, "x", 4, xd, 0.05f, -2), *parts[3];
    for (int k = 0; k < 3; k++) {
        int64_t pd[4] = {1, 8, 8, 6};
        pd[axis] = sizes[k];
        char name[16];
        snprintf(name, sizeof name, "p%d", k);
        parts[k] = act(g, name, 4, pd, 0.05f, -2);
    }
    ir_node *n = ir_node_new(g, IR_OP_SPLIT, "split", 1, &x, 3, parts);
    ir_set_int(g, n, "axis", axis);
    tg_set_io(g, 1, &x, parts[j]);
    return g;
}

Test(tiler_move, every_part_of_a_split_on_every_target)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (int axis = 1; axis <= 2; axis++)
            for (int j = 0; j < 3; j++) {
                char what[64];
                snprintf(what, sizeof what, "split axis %d part %d", axis, j);
                built b;
                int counts[TG_COUNTS];
                build_checked(t, split_graph(axis, j), what, &b, counts);
                cr_assert_eq(compute_count(counts), 0, "%s: DMA only", what);
                finish_built(t, &b, what, (uint32_t)(axis * 3 + j));
            }
        tgt_free(t);
    }
}
