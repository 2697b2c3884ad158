/* Calibration sets of models with several inputs (calib/dataset.c,
 * cal_dataset_open_inputs): files STEM.INPUT.EXT, one per input and stem. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "quantize/quantize.h"
#include "tests/support/calibfiles.h"
#include "tests/support/testgraph.h"

enum { N = 6 };
static const int64_t dims[2] = {1, N};

/* sample s of input k: every value 10 k + s (+ i / 100) */
static void write_sample(const char *dir, const char *stem, const char *tag, int k, int s)
{
    float v[N];
    for (int i = 0; i < N; i++)
        v[i] = (float)(10 * k + s) + (float)i / 100.0f;
    char name[64];
    snprintf(name, sizeof name, "%s.%s.npy", stem, tag);
    tf_write_npy(dir, name, NPY_F32, 2, dims, v);
}

static npu_status open2(const char *dir, cal_dataset **d, npu_err *e)
{
    /* "in.a" is not a file-name-safe tag: its files are STEM.in_a.EXT */
    cal_input_spec specs[2] = {{"in.a", 2, dims, NULL, 0}, {"b", 2, dims, NULL, 0}};
    return cal_dataset_open_inputs(dir, specs, 2, NULL, npu_alloc_default(), d, e);
}

static void expect_open_error(const char *dir, const char *part1, const char *part2)
{
    cal_dataset *d = NULL;
    npu_err e;
    cr_assert_eq(open2(dir, &d, &e), NPU_EUSER, "opening %s should fail", dir);
    cr_assert_null(d);
    cr_expect(strstr(e.msg, part1) && strstr(e.msg, part2), "message '%s' names '%s' and '%s'", e.msg, part1, part2);
}

Test(calib_multi, tag_of_an_input_name)
{
    char t[64];
    cal_input_tag("images:0/x", t, sizeof t);
    cr_expect_str_eq(t, "images_0_x");
    cal_input_tag("mask-1_b", t, sizeof t);
    cr_expect_str_eq(t, "mask-1_b");
}

Test(calib_multi, files_of_one_stem_make_one_sample)
{
    const char *d = tf_tmpdir();
    const char *stems[3] = {"s0", "s1", "s2"};
    for (int s = 0; s < 3; s++) {
        write_sample(d, stems[s], "in_a", 0, s);
        write_sample(d, stems[s], "b", 1, s);
    }
    cal_dataset *ds;
    npu_err e;
    cr_assert_eq(open2(d, &ds, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(cal_dataset_count(ds), 3);
    for (int pass = 0; pass < 2; pass++) {
        for (int s = 0; s < 3; s++) {
            const float *xs[CAL_MAX_INPUTS] = {0};
            cr_assert_eq(cal_dataset_next_inputs(ds, xs, &e), NPU_OK, "%s", e.msg);
            cr_assert(xs[0] && xs[1]);
            cr_expect_float_eq(xs[0][0], (float)s, 1e-6, "input 0 of sample %d", s);
            cr_expect_float_eq(xs[1][3], (float)(10 + s) + 0.03f, 1e-6, "input 1 of sample %d", s);
        }
        const float *end[CAL_MAX_INPUTS] = {0};
        cr_assert_eq(cal_dataset_next_inputs(ds, end, &e), NPU_OK);
        cr_expect_null(end[0]);
        cal_dataset_rewind(ds);
    }
    cal_dataset_close(ds);
}

Test(calib_multi, a_stem_without_a_file_for_an_input_is_an_error)
{
    const char *d = tf_tmpdir();
    write_sample(d, "s0", "in_a", 0, 0);
    write_sample(d, "s0", "b", 1, 0);
    write_sample(d, "s1", "in_a", 0, 1);
    expect_open_error(d, "s1", "'b'");
}

Test(calib_multi, a_file_that_names_no_input_is_an_error)
{
    const char *d = tf_tmpdir();
    write_sample(d, "s0", "in_a", 0, 0);
    write_sample(d, "s0", "b", 1, 0);
    write_sample(d, "s0", "c", 2, 0);
    expect_open_error(d, "s0.c.npy", "names no input");
}

Test(calib_multi, a_wrong_shape_names_the_file_and_the_input)
{
    const char *d = tf_tmpdir();
    write_sample(d, "s0", "in_a", 0, 0);
    float v[N + 1] = {0};
    tf_write_npy(d, "s0.b.npy", NPY_F32, 2, (int64_t[]){1, N + 1}, v);
    expect_open_error(d, "s0.b.npy", "'b'");
}

/* x1 in [-1, 1], x2 in [-8, 8] -> Add: each input gets its own scale */
Test(calib_multi, every_input_is_calibrated_on_its_own_data)
{
    const char *d = tf_tmpdir();
    uint32_t seed = 5;
    for (int s = 0; s < 8; s++) {
        float a[N], b[N];
        for (int i = 0; i < N; i++) {
            a[i] = tf_rnd(&seed);
            b[i] = 8.0f * tf_rnd(&seed);
        }
        a[0] = 1.0f, b[0] = 8.0f, a[1] = -1.0f, b[1] = -8.0f;
        char na[32], nb[32];
        snprintf(na, sizeof na, "%02d.x1.npy", s);
        snprintf(nb, sizeof nb, "%02d.x2.npy", s);
        tf_write_npy(d, na, NPY_F32, 2, dims, a);
        tf_write_npy(d, nb, NPY_F32, 2, dims, b);
    }
    ir_graph *g = ir_graph_new(npu_alloc_default());
    ir_tensor *in[2] = {tg_tensor(g, "x1", IR_F32, 2, dims), tg_tensor(g, "x2", IR_F32, 2, dims)};
    ir_tensor *y = tg_tensor(g, "y", IR_F32, 2, dims);
    ir_node_new(g, IR_OP_ADD, "add", 2, in, 1, &y);
    tg_set_io(g, 2, in, y);
    q_ptq_options o = {.calib_dir = d, .range = {CAL_MINMAX, 99.99, 8}, .q = {.wbits = 8, .abits = 8}};
    q_ptq_result r;
    npu_err e;
    cr_assert_eq(q_ptq(g, &o, &r, &e), NPU_OK, "%s", e.msg);
    cr_expect_eq(r.samples, 8);
    float scale[2] = {0};
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        for (int k = 0; k < 2; k++)
            if (!n->dead && n->op == IR_OP_QUANTIZE_LINEAR && n->inputs[0] == g->inputs[k] && n->outputs[0]->quant)
                scale[k] = n->outputs[0]->quant->scale[0];
    }
    cr_expect_float_eq(scale[0], 2.0f / 255.0f, 1e-6, "x1's scale %g", scale[0]);
    cr_expect_float_eq(scale[1], 16.0f / 255.0f, 1e-5, "x2's scale %g", scale[1]);
    ir_graph_free(g);
}

Test(calib_multi, a_non_float_input_is_refused_by_name)
{
    const char *d = tf_tmpdir();
    write_sample(d, "s0", "x", 0, 0);
    ir_graph *g = ir_graph_new(npu_alloc_default());
    ir_tensor *in[2] = {tg_tensor(g, "x", IR_F32, 2, dims), tg_tensor(g, "ids", IR_U4, 2, dims)};
    ir_tensor *y = tg_tensor(g, "y", IR_F32, 2, dims);
    ir_node_new(g, IR_OP_ADD, "add", 2, in, 1, &y);
    tg_set_io(g, 2, in, y);
    q_ptq_options o = {.calib_dir = d, .range = {CAL_MINMAX, 99.99, 8}, .q = {.wbits = 8, .abits = 8}};
    npu_err e;
    cr_assert_eq(q_ptq(g, &o, NULL, &e), NPU_EUSER);
    cr_expect(strstr(e.msg, "'ids'") && strstr(e.msg, "float, integer and bool"), "%s", e.msg);
    ir_graph_free(g);
}
