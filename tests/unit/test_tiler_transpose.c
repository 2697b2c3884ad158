/* Tests of Transpose, Slice and Gather on the NPU (src/tiler/tile_transpose.c, tile_gather.c): the
 * reduced strided view (size-1 axes dropped, adjacent input axes merged), and on every
 * target the DMA-only program for the permutations models export (attention's
 * head split and K^T, ShuffleNet's channel shuffle, a 2-D transpose, a full
 * reversal, one large enough to need many tiles on the 128 KiB target),
 * bit-exact with the reference's Transpose of the same int8 bytes. */
#include "tests/support/tiler_graphs.h"
#include "tiler/tile_internal.h"

typedef struct tr_spec {
    const char *what;
    int rank;
    int64_t xd[5], perm[5];
} tr_spec;

static const tr_spec specs[] = {
    {"heads", 4, {1, 16, 4, 8}, {0, 2, 1, 3}},
    {"k_transposed", 4, {1, 16, 4, 8}, {0, 2, 3, 1}},
    {"shuffle", 5, {1, 2, 8, 5, 5}, {0, 2, 1, 3, 4}},
    {"matrix", 2, {300, 70}, {1, 0}},
    {"rotate", 3, {3, 4, 5}, {2, 0, 1}},
    {"reverse", 4, {2, 3, 4, 5}, {3, 2, 1, 0}},
    {"big", 4, {1, 32, 96, 96}, {0, 1, 3, 2}},
};

static ir_graph *tr_graph(const tr_spec *s)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t yd[5];
    for (int i = 0; i < s->rank; i++)
        yd[i] = s->xd[s->perm[i]];
    ir_tensor *x = act(g, "x", s->rank, s->xd, 0.05f, 3), *y = act(g, "y", s->rank, yd, 0.05f, 3);
    ir_node *n = ir_node_new(g, IR_OP_TRANSPOSE, "tr", 1, &x, 1, &y);
    ir_set_ints(g, n, "perm", s->rank, s->perm);
    tg_set_io(g, 1, &x, y);
    return g;
}

/* output dims and input strides, reduced */
static void reduced(int r, const int64_t *d, const int64_t *st, int want_r, const int64_t *wd, const int64_t *ws)
{
    tile_strided o;
    tile_strided_reduce(r, d, st, &o);
    cr_assert_eq(o.rank, want_r);
    for (int i = 0; i < want_r; i++)
        cr_assert(o.dims[i] == wd[i] && o.stride[i] == ws[i], "axis %d: %lld/%lld", i, (long long)o.dims[i],
                  (long long)o.stride[i]);
}

Test(tiler_transpose, strided_views_reduce)
{
    /* heads: [1,16,4,8] perm [0,2,1,3] reads dims [1,4,16,8] at strides [512,8,32,1] */
    reduced(4, (int64_t[]){1, 4, 16, 8}, (int64_t[]){512, 8, 32, 1}, 3, (int64_t[]){4, 16, 8},
            (int64_t[]){8, 32, 1});
    /* K^T: [1,16,4,8] perm [0,2,3,1]: (4,8) merge into 32 at stride 1, a 2-D transpose */
    reduced(4, (int64_t[]){1, 4, 8, 16}, (int64_t[]){512, 8, 1, 32}, 2, (int64_t[]){32, 16}, (int64_t[]){1, 32});
    /* shuffle: [1,2,8,5,5] perm [0,2,1,3,4]: (5,5) merge */
    reduced(5, (int64_t[]){1, 8, 2, 5, 5}, (int64_t[]){400, 25, 200, 5, 1}, 3, (int64_t[]){8, 2, 25},
            (int64_t[]){25, 200, 1});
    /* a channel slice of [1,8,4,4], channels 2..5: one contiguous run */
    reduced(4, (int64_t[]){1, 4, 4, 4}, (int64_t[]){128, 16, 4, 1}, 1, (int64_t[]){64}, (int64_t[]){1});
    ir_graph *g = tr_graph(&specs[2]);
    ir_set_ints(g, g->nodes[0], "perm", 5, (int64_t[]){0, 2, 2, 3, 4});
    cr_assert_not(tile_transpose_ok(g->nodes[0]), "not a permutation");
    ir_graph_free(g);
}

Test(tiler_transpose, every_permutation_on_every_target)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
            const tr_spec *s = &specs[si];
            built b;
            int counts[TG_COUNTS];
            build_checked(t, tr_graph(s), s->what, &b, counts);
            cr_assert_gt(counts[TGT_SEM_DMA_LOAD], 0);
            cr_assert_eq(compute_count(counts), 0, "%s: DMA only", s->what);
            if (si == sizeof specs / sizeof specs[0] - 1 && !strcmp(t->name, "edge-v1-lite"))
                cr_assert_gt(counts[TGT_SEM_DMA_LOAD], 4, "big on lite: %d loads", counts[TGT_SEM_DMA_LOAD]);
            finish_built(t, &b, s->what, (uint32_t)si * 13 + 5);
        }
        tgt_free(t);
    }
}

/* ---- Gather by constant indices ---- */

typedef struct ga_spec {
    const char *what;
    int rank, axis, n_idx;
    int64_t xd[5], idx[4];
} ga_spec;

static const ga_spec gspecs[] = {
    {"qkv_split", 5, 0, 0, {3, 1, 4, 17, 8}, {1}},     /* n_idx 0: a scalar index */
    {"class_token", 3, 1, 0, {1, 17, 32}, {0}},
    {"last_negative", 3, 1, 0, {2, 17, 32}, {-1}},
    {"several", 3, 1, 4, {2, 6, 5}, {4, 0, 1, 2}},      /* a run (0,1,2) after a single index */
};

static ir_graph *ga_graph(const ga_spec *s)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t yd[8];
    int ry = 0;
    for (int i = 0; i < s->rank; i++) {
        if (i == s->axis && s->n_idx)
            yd[ry++] = s->n_idx;
        else if (i != s->axis)
            yd[ry++] = s->xd[i];
    }
    ir_tensor *x = act(g, "x", s->rank, s->xd, 0.05f, -4), *y = act(g, "y", ry, yd, 0.05f, -4);
    int64_t nd = s->n_idx;
    ir_tensor *ind = ir_const_new(g, "idx", IR_I64, s->n_idx ? 1 : 0, &nd, s->idx);
    ir_tensor *ins[2] = {x, ind};
    ir_node *n = ir_node_new(g, IR_OP_GATHER, "gather", 2, ins, 1, &y);
    ir_set_int(g, n, "axis", s->axis);
    tg_set_io(g, 1, &x, y);
    return g;
}

Test(tiler_transpose, gather_by_constant_indices_on_every_target)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t si = 0; si < sizeof gspecs / sizeof gspecs[0]; si++) {
            built b;
            int counts[TG_COUNTS];
            build_checked(t, ga_graph(&gspecs[si]), gspecs[si].what, &b, counts);
            /* the run of three consecutive indices is one copy: two loads in all */
            if (si == 3)
                cr_assert_eq(counts[TGT_SEM_DMA_LOAD], 2, "%d loads", counts[TGT_SEM_DMA_LOAD]);
            finish_built(t, &b, gspecs[si].what, (uint32_t)si * 17 + 3);
        }
        tgt_free(t);
    }
    ga_spec far = {"out_of_range", 3, 1, 1, {1, 4, 8}, {4}};
    tgt_target *t = load_target("edge-v1");
    ir_graph *g = ga_graph(&far);
    const char *why = NULL;
    cr_assert_not(tile_supports(t, g, g->nodes[0], &why));
    cr_assert(strstr(why, "constant indices"), "%s", why);
    ir_graph_free(g);
    tgt_free(t);
}

/* ---- Slice (normalized: starts/ends/axes/steps over every axis) ---- */

typedef struct sl_spec {
    const char *what;
    int64_t xd[4], st[4], yd[4], sp[4];
} sl_spec;

static const sl_spec sspecs[] = {
    {"channel_half", {1, 8, 6, 6}, {0, 4, 0, 0}, {1, 4, 6, 6}, {1, 1, 1, 1}}, /* ShuffleNet's split: read in place */
    {"columns", {2, 3, 7, 9}, {0, 1, 2, 3}, {2, 2, 4, 5}, {1, 1, 1, 1}},
    {"stepped", {1, 4, 9, 9}, {0, 0, 1, 0}, {1, 4, 4, 5}, {1, 1, 2, 2}},
};

static ir_graph *sl_graph(const sl_spec *s)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    ir_tensor *x = act(g, "x", 4, s->xd, 0.05f, 1), *y = act(g, "y", 4, s->yd, 0.05f, 1);
    ir_node *n = ir_node_new(g, IR_OP_SLICE, "slice", 1, &x, 1, &y);
    int64_t en[4], ax[4] = {0, 1, 2, 3};
    for (int i = 0; i < 4; i++)
        en[i] = s->st[i] + (s->yd[i] - 1) * s->sp[i] + 1;
    ir_set_ints(g, n, "starts", 4, s->st);
    ir_set_ints(g, n, "ends", 4, en);
    ir_set_ints(g, n, "axes", 4, ax);
    ir_set_ints(g, n, "steps", 4, s->sp);
    tg_set_io(g, 1, &x, y);
    return g;
}

Test(tiler_transpose, slices_on_every_target)
{
    for (int ti = 0; ti < N_TARGETS; ti++) {
        tgt_target *t = load_target(targets[ti]);
        for (size_t si = 0; si < sizeof sspecs / sizeof sspecs[0]; si++) {
            built b;
            int counts[TG_COUNTS];
            build_checked(t, sl_graph(&sspecs[si]), sspecs[si].what, &b, counts);
            finish_built(t, &b, sspecs[si].what, (uint32_t)si * 7 + 1);
        }
        tgt_free(t);
    }
    sl_spec back = {"backward", {1, 4, 4, 4}, {0, 0, 0, 3}, {1, 4, 4, 4}, {1, 1, 1, -1}};
    tgt_target *t = load_target("edge-v1");
    ir_graph *g = sl_graph(&back);
    const char *why = NULL;
    cr_assert_not(tile_supports(t, g, g->nodes[0], &why));
    cr_assert(strstr(why, "backward"), "%s", why);
    ir_graph_free(g);
    tgt_free(t);
}
