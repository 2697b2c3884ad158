/* NODE records (rt/npurt_node*.c): the host fallback of every op without a
 * dedicated record. A float graph of them (tests/support/npurt_bin.h:
 * node_graph) must run bit-exactly like the reference executor, and
 * hostile records (shapes that disagree with their tensors, parameters that
 * would index outside them, every truncation, every byte flipped) must be
 * rejected or stay in bounds (ASan). */
#include "tests/support/npurt_bin.h"

Test(npurt_node, float_and_data_movement_ops_match_reference)
{
    ir_graph *g = node_graph();
    float *x = random_input(32, 3);
    const void *in[1] = {x};
    check_graph(g, in);
    asm_state *a = asm_new(g);
    int nodes = 0;
    for (uint32_t s = 0; s < a->n_steps; s++)
        nodes += a->steps[s].op == NPURT_K_NODE;
    cr_assert_eq(nodes, (int)a->n_steps - 1, "every step but the Transpose is a NODE record");
    asm_delete(a);
    free(x);
    ir_graph_free(g);
}

/* Integer, bool and mixed-dtype elementwise ops: Max of three int32 inputs
 * (pairwise through scratch), Pow of int32 by float, Equal, Not, Cast. */
Test(npurt_node, integer_and_bool_ops_match_reference)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[2] = {3, 4}, row[1] = {4};
    ir_tensor *x = fact(g, "x", 2, d), *xi = ir_tensor_new(g, "xi", IR_I32, 2, d);
    ir_tensor *mx = ir_tensor_new(g, "mx", IR_I32, 2, d), *pw = ir_tensor_new(g, "pw", IR_I32, 2, d);
    ir_tensor *eq = ir_tensor_new(g, "eq", IR_BOOL, 2, d), *nt = ir_tensor_new(g, "nt", IR_BOOL, 2, d);
    ir_tensor *y = fact(g, "y", 2, d);
    ir_tensor *sc = tg_const(g, "ten", IR_F32, 0, NULL, (float[]){10.0f}), *xs = fact(g, "xs", 2, d);
    ir_tensor *mul_in[2] = {x, sc};
    node(g, IR_OP_MUL, "scale", 2, mul_in, xs);
    ir_set_int(g, node(g, IR_OP_CAST, "toint", 1, &xs, xi), "to", 6);
    ir_tensor *mx_in[3] = {xi, ir_const_new(g, "r", IR_I32, 1, row, (int32_t[]){-3, 0, 2, 5}),
                           ir_const_new(g, "z", IR_I32, 0, NULL, (int32_t[]){-1})};
    node(g, IR_OP_MAX, "max3", 3, mx_in, mx);
    ir_tensor *pw_in[2] = {mx, tg_const(g, "e", IR_F32, 0, NULL, (float[]){2.0f})};
    node(g, IR_OP_POW, "pow", 2, pw_in, pw);
    ir_tensor *eq_in[2] = {pw, ir_const_new(g, "one", IR_I32, 0, NULL, (int32_t[]){1})};
    node(g, IR_OP_EQUAL, "eq", 2, eq_in, eq);
    node(g, IR_OP_NOT, "not", 1, &eq, nt);
    ir_tensor *wh_in[3] = {nt, x, sc};
    node(g, IR_OP_WHERE, "where", 3, wh_in, y);
    tg_set_io(g, 1, &x, y);
    float *xv = random_input(12, 8);
    const void *in[1] = {xv};
    check_graph(g, in);
    free(xv);
    ir_graph_free(g);
}

Test(npurt_node, every_record_truncation_is_rejected)
{
    ir_graph *g = node_graph();
    expect_truncations_rejected(g);
    ir_graph_free(g);
}

Test(npurt_node, corrupted_records_are_rejected_or_run_in_bounds)
{
    ir_graph *g = node_graph();
    int rejected, ran;
    expect_flips_safe(g, &rejected, &ran);
    cr_log_info("%d rejected, %d ran", rejected, ran);
    cr_assert_gt(rejected, 0);
    cr_assert_gt(ran, 0, "changes to parameter values the kernels accept still run");
    ir_graph_free(g);
}

/* The node block of a NODE step: its slot shapes and parameter words. */
static npurt_p_tshape *tshapes(asm_state *a, uint32_t step)
{
    npurt_rec_header *h = rec_of(a, step);
    uint32_t *slots = (uint32_t *)(h + 1);
    return (npurt_p_tshape *)((npurt_p_node *)(slots + h->n_inputs + h->n_outputs) + 1);
}

static void *words(asm_state *a, uint32_t step)
{
    npurt_rec_header *h = rec_of(a, step);
    return tshapes(a, step) + h->n_inputs + h->n_outputs;
}

typedef void (*mutate_fn)(asm_state *a);

static void expect_rejected(mutate_fn mutate, uint32_t step, const char *node_name, const char *what)
{
    ir_graph *g = node_graph();
    asm_state *a = asm_new(g);
    mutate(a);
    size_t size;
    void *blob = assemble(a, &size);
    npub_view v;
    npub_error pe;
    cr_assert_eq(npurt_open(blob, size, &v, &pe), -1, "a broken record was accepted (%s)", what);
    char prefix[96];
    snprintf(prefix, sizeof prefix, "step %u (node '%s'", step, node_name);
    cr_assert(strstr(pe.msg, prefix), "'%s' does not name '%s'", pe.msg, prefix);
    cr_assert(strstr(pe.msg, what), "'%s' does not say '%s'", pe.msg, what);
    free(blob);
    asm_delete(a);
    ir_graph_free(g);
}

/* the record's shapes of the input and output (consistent with each other)
 * say more elements than their tensors hold */
static void bigger_input(asm_state *a)
{
    tshapes(a, NODE_STEP_BN)[0].shape.dims[3] = 5;
    tshapes(a, NODE_STEP_BN)[5].shape.dims[3] = 5;
}
/* int32 indices where the tensor holds int64 */
static void other_dtype(asm_state *a)
{
    tshapes(a, NODE_STEP_GATHER)[1].dtype = NPURT_DT_I32;
}
/* the conv reads an input larger than the slot's shape (kept consistent) */
static void conv_reads_more(asm_state *a)
{
    ((npurt_p_n_conv *)words(a, NODE_STEP_CONV))->h = 5;
}
static void slice_past_the_end(asm_state *a)
{
    ((npurt_p_n_slice *)words(a, NODE_STEP_SLICE))->start[2] = 5;
}
static void slice_before_the_start(asm_state *a)
{
    ((npurt_p_n_slice *)words(a, NODE_STEP_SLICE))->start[2] = 1; /* reads 1, then -1 */
}
static void gather_axis(asm_state *a)
{
    *(int32_t *)words(a, NODE_STEP_GATHER) = 4;
}
static void unknown_op(asm_state *a)
{
    ((npurt_p_node *)tshapes(a, NODE_STEP_BN) - 1)->op = 99;
}
static void wrong_word_count(asm_state *a)
{
    ((npurt_p_node *)tshapes(a, NODE_STEP_BN) - 1)->n_words = 1;
}

Test(npurt_node, open_rejects_records_that_would_leave_their_tensors)
{
    expect_rejected(bigger_input, NODE_STEP_BN, "bn", "bytes");
    expect_rejected(other_dtype, NODE_STEP_GATHER, "gather", "dtype");
    expect_rejected(conv_reads_more, NODE_STEP_CONV, "conv", "disagree");
    expect_rejected(slice_past_the_end, NODE_STEP_SLICE, "slice", "outside");
    expect_rejected(slice_before_the_start, NODE_STEP_SLICE, "slice", "outside");
    expect_rejected(gather_axis, NODE_STEP_GATHER, "gather", "axis");
    expect_rejected(unknown_op, NODE_STEP_BN, "bn", "unknown node op");
    expect_rejected(wrong_word_count, NODE_STEP_BN, "bn", "parameter words");
}

/* Indices are data: one out of range stops the step with an error, it is
 * never read through. */
Test(npurt_node, gather_index_out_of_range_fails_the_step)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[2] = {4, 3}, nd[1] = {2}, yd[2] = {2, 3};
    ir_tensor *idx = ir_tensor_new(g, "idx", IR_I64, 1, nd), *y = fact(g, "y", 2, yd);
    uint32_t seed = 2;
    ir_tensor *in[2] = {fconst(g, "data", 2, d, &seed), idx};
    node(g, IR_OP_GATHER, "gather", 2, in, y);
    tg_set_io(g, 1, &idx, y);
    asm_state *a = asm_new(g);
    size_t size;
    void *blob = assemble(a, &size);
    npub_view v;
    npub_error pe;
    cr_assert_eq(npurt_open(blob, size, &v, &pe), 0, "%s", pe.msg);
    npurt_env env;
    env_alloc(&v, &env);
    const npub_tensor *t = &v.tensors[v.inputs[0]];
    int64_t bad[2] = {1, 4};
    memcpy(env.region[t->region] + t->offset, bad, sizeof bad);
    cr_assert_eq(npurt_run(&v, &env, &pe), -1);
    cr_assert(strstr(pe.msg, "step 0 (node 'gather'") && strstr(pe.msg, "out of range"), "%s", pe.msg);
    int64_t good[2] = {-1, 0};
    memcpy(env.region[t->region] + t->offset, good, sizeof good);
    cr_assert_eq(npurt_run(&v, &env, &pe), 0, "%s", pe.msg);
    env_free(&env);
    free(blob);
    asm_delete(a);
    ir_graph_free(g);
}
