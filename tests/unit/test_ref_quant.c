/* Reference adapters of the quantized graph (src/ref/ops_quant.c): small IR
 * graphs built by hand from the golden cases of tests/fixtures/gen_qkernels.py
 * run through ref_ctx and must reproduce the kernels' expected outputs bit for
 * bit, with the multipliers derived from the tensors' scales. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ref/ref.h"
#include "tests/data/qkernels/qk_conv.h"
#include "tests/data/qkernels/qk_elem.h"
#include "tests/data/qkernels/qk_matmul.h"
#include "tests/data/qkernels/qk_pool.h"
#include "tests/data/qkernels/qk_requant.h"
#include "tests/support/testgraph.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static ir_tensor *act(ir_graph *g, const char *name, int rank, const int64_t *dims, float scale, int32_t zp)
{
    ir_tensor *t = tg_act(g, name, rank, dims, scale, zp);
    cr_assert_not_null(t);
    return t;
}

/* Runs g on inputs and compares its one output with want. */
static void run_and_compare(ir_graph *g, const void *const *inputs, const int8_t *want, size_t n, const char *name)
{
    npu_err e = {0};
    ref_ctx *ctx = ref_ctx_new(g, g->alloc, &e);
    cr_assert_not_null(ctx, "%s: %s", name, e.msg);
    int8_t *got = malloc(n + 1);
    got[n] = 0x5A;
    void *outs[1] = {got};
    npu_status st = ref_ctx_run(ctx, inputs, outs, &e);
    cr_assert_eq(st, NPU_OK, "%s: %s", name, e.msg);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s: element %zu: %d vs %d", name, i, got[i], want[i]);
    cr_assert_eq(got[n], 0x5A, "%s: wrote past the output", name);
    free(got);
    ref_ctx_free(ctx);
}

/* Runs g and returns the status (the message in e). */
static npu_status run_status(ir_graph *g, const void *const *inputs, size_t out_bytes, npu_err *e)
{
    ref_ctx *ctx = ref_ctx_new(g, g->alloc, e);
    cr_assert_not_null(ctx, "%s", e->msg);
    void *buf = calloc(out_bytes + 16, 1);
    void *outs[1] = {buf};
    npu_status st = ref_ctx_run(ctx, inputs, outs, e);
    free(buf);
    ref_ctx_free(ctx);
    return st;
}

/* The float activation whose quantized clamp is exactly [lo, hi]. */
static ir_act clamp_act(int32_t lo, int32_t hi, float scale, int32_t zp)
{
    ir_act a = {IR_ACT_NONE, 0, 0, 0};
    if (lo == -128 && hi == 127)
        return a;
    if (lo == zp && hi == 127) {
        a.kind = IR_ACT_RELU;
        return a;
    }
    a.kind = IR_ACT_CLIP;
    a.lo = (float)(lo - zp) * scale;
    a.hi = (float)(hi - zp) * scale;
    nk_act k = {NK_ACT_CLIP, a.lo, a.hi, 0};
    int32_t l2, h2;
    cr_assert_eq(nk_quant_act_range(k, scale, zp, -128, 127, &l2, &h2), NK_OK);
    cr_assert(l2 == lo && h2 == hi, "clip bounds do not round-trip: %d %d vs %d %d", l2, h2, lo, hi);
    return a;
}

/* ---- conv ----------------------------------------------------------------- */

static ir_graph *conv_graph(const qk_conv_case *c, ir_tensor **x_out)
{
    const nk_qconv2d_params *p = &c->p;
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {p->n, p->c_in, p->h_in, p->w_in}, yd[4] = {p->n, p->c_out, p->h_out, p->w_out};
    int64_t wd[4] = {p->c_out, p->c_in / p->groups, p->k_h, p->k_w}, bd[1] = {p->c_out};
    ir_tensor *x = act(g, "x", 4, xd, c->in_scale, p->in_zp);
    ir_tensor *y = act(g, "y", 4, yd, c->out_scale, p->out_zp);
    ir_tensor *w = ir_const_new(g, "w", p->w_format == NK_W_I4 ? IR_I4 : IR_I8, 4, wd, c->w);
    cr_assert_eq(ir_tensor_bytes(w), c->w_bytes);
    w->quant = tg_quant(g, c->n_wscales, c->w_scales, NULL);
    ir_tensor *ins[3] = {x, w, NULL};
    if (c->bias) {
        ins[2] = ir_const_new(g, "b", IR_I32, 1, bd, c->bias);
        float bs = c->in_scale * c->w_scales[0];
        ins[2]->quant = tg_quant(g, 1, &bs, NULL);
    }
    ir_node *n = ir_node_new(g, IR_OP_CONV, "conv", c->bias ? 3 : 2, ins, 1, &y);
    int64_t st[2] = {p->stride_h, p->stride_w}, dl[2] = {p->dil_h, p->dil_w};
    int64_t pads[4] = {p->pad_top, p->pad_left, p->pad_bottom, p->pad_right};
    ir_set_ints(g, n, "strides", 2, st);
    ir_set_ints(g, n, "dilations", 2, dl);
    ir_set_ints(g, n, "pads", 4, pads);
    ir_set_int(g, n, "group", p->groups);
    n->act = clamp_act(p->act_min, p->act_max, c->out_scale, p->out_zp);
    tg_set_io(g, 1, &x, y);
    *x_out = x;
    return g;
}

Test(ref_quant, conv_golden)
{
    for (size_t i = 0; i < COUNT(qk_conv_cases); i++) {
        const qk_conv_case *c = &qk_conv_cases[i];
        ir_tensor *x;
        ir_graph *g = conv_graph(c, &x);
        cr_assert_eq(ref_lookup_node(g->nodes[0]), &ref_ops_quant[0], "%s: a quantized conv runs in integers",
                     c->name);
        const void *in[1] = {c->in};
        run_and_compare(g, in, c->expected, c->out_count, c->name);
        ir_graph_free(g);
    }
}

Test(ref_quant, conv_auto_pad_same)
{
    /* k3_pad1 has pads 1 on every side at stride 1: SAME_UPPER gives the same */
    const qk_conv_case *c = &qk_conv_cases[0];
    cr_assert_str_eq(c->name, "k3_pad1");
    ir_tensor *x;
    ir_graph *g = conv_graph(c, &x);
    ir_node *n = g->nodes[0];
    int64_t none[4] = {0, 0, 0, 0};
    ir_set_ints(g, n, "pads", 4, none);
    ir_set_string(g, n, "auto_pad", "SAME_UPPER");
    const void *in[1] = {c->in};
    run_and_compare(g, in, c->expected, c->out_count, "auto_pad");
    ir_graph_free(g);
}

Test(ref_quant, conv_errors)
{
    const qk_conv_case *c = &qk_conv_cases[1];
    const void *in[1] = {c->in};
    npu_err e;
    ir_tensor *x;

    ir_graph *g = conv_graph(c, &x);
    g->nodes[0]->act.kind = IR_ACT_LEAKY_RELU;
    cr_assert_eq(run_status(g, in, c->out_count, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "LeakyRelu") && strstr(e.msg, "conv"), "%s", e.msg);
    ir_graph_free(g);

    g = conv_graph(c, &x);
    g->nodes[0]->inputs[1]->quant->zero_point[0] = 3;
    cr_assert_eq(run_status(g, in, c->out_count, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "symmetric"), "%s", e.msg);
    ir_graph_free(g);

    g = conv_graph(c, &x);
    g->outputs[0]->dims[3] += 1; /* not the conv's output size */
    cr_assert_eq(run_status(g, in, c->out_count + 64, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "rejected"), "%s", e.msg);
    ir_graph_free(g);

    g = conv_graph(c, &x);
    g->outputs[0]->quant->scale[0] = 0.0f;
    cr_assert_eq(run_status(g, in, c->out_count, &e), NPU_EUSER);
    ir_graph_free(g);

    g = conv_graph(c, &x);
    g->nodes[0]->inputs[1]->quant->count = 3; /* neither per tensor nor per channel */
    cr_assert_eq(run_status(g, in, c->out_count, &e), NPU_EUSER);
    ir_graph_free(g);
}

/* ---- Gemm, MatMul ---------------------------------------------------------- */

/* transposed: MatMul with weights [K, N] instead of Gemm transB=1 [N, K]. */
static ir_graph *fc_graph(const qk_fc_case *c, bool transposed, ir_tensor **x_out)
{
    const nk_qfc_params *p = &c->p;
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t K = p->in_features, N = p->out_features;
    int64_t xd[2] = {p->batch, K}, yd[2] = {p->batch, N}, wd[2] = {N, K}, bd[1] = {N};
    ir_tensor *x = act(g, "x", 2, xd, c->in_scale, p->in_zp);
    ir_tensor *y = act(g, "y", 2, yd, c->out_scale, p->out_zp);
    bool i4 = p->w_format == NK_W_I4;
    ir_tensor *w;
    if (!transposed) {
        w = ir_const_new(g, "w", i4 ? IR_I4 : IR_I8, 2, wd, c->w);
    } else {
        int8_t *v = malloc((size_t)(K * N)), *t = malloc((size_t)(K * N));
        if (i4)
            nk_int4_unpack(c->w, v, (size_t)(K * N));
        else
            memcpy(v, c->w, (size_t)(K * N));
        for (int64_t o = 0; o < N; o++)
            for (int64_t k = 0; k < K; k++)
                t[k * N + o] = v[o * K + k];
        int64_t td[2] = {K, N};
        w = ir_const_new(g, "w", i4 ? IR_I4 : IR_I8, 2, td, NULL);
        if (i4)
            cr_assert_eq(nk_int4_pack(t, w->data, (size_t)(K * N)), NK_OK);
        else
            memcpy(w->data, t, (size_t)(K * N));
        free(v);
        free(t);
    }
    w->quant = tg_quant(g, c->n_wscales, c->w_scales, NULL);
    ir_tensor *ins[3] = {x, w, c->bias ? ir_const_new(g, "b", IR_I32, 1, bd, c->bias) : NULL};
    ir_node *n = ir_node_new(g, transposed ? IR_OP_MATMUL : IR_OP_GEMM, "fc", c->bias ? 3 : 2, ins, 1, &y);
    if (!transposed)
        ir_set_int(g, n, "transB", 1);
    n->act = clamp_act(p->act_min, p->act_max, c->out_scale, p->out_zp);
    tg_set_io(g, 1, &x, y);
    *x_out = x;
    return g;
}

Test(ref_quant, gemm_and_matmul_golden)
{
    for (size_t i = 0; i < COUNT(qk_fc_cases); i++) {
        const qk_fc_case *c = &qk_fc_cases[i];
        for (int t = 0; t < 2; t++) {
            if (t == 1 && c->bias) /* MatMul has no bias input: only the bias-free cases */
                continue;
            ir_tensor *x;
            ir_graph *g = fc_graph(c, t == 1, &x);
            const void *in[1] = {c->in};
            run_and_compare(g, in, c->expected, c->out_count, c->name);
            ir_graph_free(g);
        }
    }
}

Test(ref_quant, gemm_needs_folded_alpha)
{
    const qk_fc_case *c = &qk_fc_cases[0];
    ir_tensor *x;
    ir_graph *g = fc_graph(c, false, &x);
    ir_set_float(g, g->nodes[0], "alpha", 2.0f);
    const void *in[1] = {c->in};
    npu_err e;
    cr_assert_eq(run_status(g, in, c->out_count, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "alpha"), "%s", e.msg);
    ir_graph_free(g);
}

Test(ref_quant, matmul_of_activations_golden)
{
    for (size_t i = 0; i < COUNT(qk_bmm_cases); i++) {
        const qk_bmm_case *c = &qk_bmm_cases[i];
        const nk_qbmm_params *p = &c->p;
        ir_graph *g = ir_graph_new(npu_alloc_default());
        int64_t ad[3] = {p->a_batch, p->m, p->k}, bd[3] = {p->b_batch, p->k, p->n}, yd[3] = {p->batch, p->m, p->n};
        ir_tensor *a = act(g, "a", 3, ad, c->a_scale, p->a_zp), *b = act(g, "b", 3, bd, c->b_scale, p->b_zp);
        ir_tensor *y = act(g, "y", 3, yd, c->out_scale, p->out_zp);
        ir_tensor *ins[2] = {a, b};
        ir_node_new(g, IR_OP_MATMUL, "mm", 2, ins, 1, &y);
        tg_set_io(g, 2, ins, y);
        const void *in[2] = {c->a, c->b};
        run_and_compare(g, in, c->expected, c->out_count, c->name);
        ir_graph_free(g);
    }
}

/* ---- pools ------------------------------------------------------------------ */

Test(ref_quant, pools_golden)
{
    for (size_t i = 0; i < COUNT(qk_pool_cases); i++) {
        const qk_pool_case *c = &qk_pool_cases[i];
        const nk_qpool_params *p = &c->p;
        ir_graph *g = ir_graph_new(npu_alloc_default());
        int64_t xd[4] = {p->n, p->c, p->h_in, p->w_in}, yd[4] = {p->n, p->c, p->h_out, p->w_out};
        ir_tensor *x = act(g, "x", 4, xd, c->in_scale, p->in_zp);
        ir_tensor *y = act(g, "y", 4, yd, c->out_scale, p->out_zp);
        ir_op op = c->kind == 0 ? IR_OP_MAX_POOL : c->kind == 1 ? IR_OP_AVERAGE_POOL : IR_OP_GLOBAL_AVERAGE_POOL;
        ir_node *n = ir_node_new(g, op, "pool", 1, &x, 1, &y);
        if (c->kind != 2) {
            int64_t k[2] = {p->k_h, p->k_w}, st[2] = {p->stride_h, p->stride_w}, dl[2] = {p->dil_h, p->dil_w};
            int64_t pads[4] = {p->pad_top, p->pad_left, p->pad_bottom, p->pad_right};
            ir_set_ints(g, n, "kernel_shape", 2, k);
            ir_set_ints(g, n, "strides", 2, st);
            ir_set_ints(g, n, "pads", 4, pads);
            if (c->kind == 0)
                ir_set_ints(g, n, "dilations", 2, dl);
            ir_set_int(g, n, "ceil_mode", c->ceil_mode);
            ir_set_int(g, n, "count_include_pad", p->count_include_pad);
        }
        n->act = clamp_act(p->act_min, p->act_max, c->out_scale, p->out_zp);
        tg_set_io(g, 1, &x, y);
        const void *in[1] = {c->in};
        run_and_compare(g, in, c->expected, c->out_count, c->name);
        ir_graph_free(g);
    }
}

Test(ref_quant, global_max_pool)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 2, 3, 3}, yd[4] = {1, 2, 1, 1};
    ir_tensor *x = act(g, "x", 4, xd, 0.1f, 5), *y = act(g, "y", 4, yd, 0.1f, 5);
    ir_node_new(g, IR_OP_GLOBAL_MAX_POOL, "gmp", 1, &x, 1, &y);
    tg_set_io(g, 1, &x, y);
    int8_t v[18] = {1, 9, -3, 4, 5, 6, 7, 8, 0, -100, -50, -7, -8, -9, -60, -70, -80, -128};
    int8_t want[2] = {9, -7};
    const void *in[1] = {v};
    run_and_compare(g, in, want, 2, "global max");
    ir_graph_free(g);
}

/* ---- elementwise ------------------------------------------------------------- */

static int64_t *dims64(const nk_shape *s, int64_t *d)
{
    for (int i = 0; i < s->rank; i++)
        d[i] = s->dims[i];
    return d;
}

Test(ref_quant, binary_golden)
{
    static const ir_op ops[] = {[NK_QADD] = IR_OP_ADD, [NK_QSUB] = IR_OP_SUB, [NK_QMUL] = IR_OP_MUL,
                                [NK_QMIN] = IR_OP_MIN, [NK_QMAX] = IR_OP_MAX};
    for (size_t i = 0; i < COUNT(qk_bin_cases); i++) {
        const qk_bin_case *c = &qk_bin_cases[i];
        const nk_qbinary_params *p = &c->p;
        ir_graph *g = ir_graph_new(npu_alloc_default());
        int64_t ad[8], bd[8], yd[8];
        ir_tensor *a = act(g, "a", p->a_shape.rank, dims64(&p->a_shape, ad), c->a_scale, p->a_zp);
        ir_tensor *b = act(g, "b", p->b_shape.rank, dims64(&p->b_shape, bd), c->b_scale, p->b_zp);
        ir_tensor *y = act(g, "y", p->out_shape.rank, dims64(&p->out_shape, yd), c->out_scale, p->out_zp);
        ir_tensor *ins[2] = {a, b};
        ir_node *n = ir_node_new(g, ops[p->op], "bin", 2, ins, 1, &y);
        n->act = clamp_act(p->act_min, p->act_max, c->out_scale, p->out_zp);
        tg_set_io(g, 2, ins, y);
        const void *in[2] = {c->a, c->b};
        run_and_compare(g, in, c->expected, c->out_count, c->name);
        ir_graph_free(g);
    }
}

Test(ref_quant, add_with_a_constant)
{
    /* the quantizer turns a float constant operand into an int8 constant */
    const qk_bin_case *c = &qk_bin_cases[1]; /* [2,3,4,4] + [1,3,1,1] */
    const nk_qbinary_params *p = &c->p;
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t ad[8], bd[8], yd[8];
    ir_tensor *a = act(g, "a", 4, dims64(&p->a_shape, ad), c->a_scale, p->a_zp);
    ir_tensor *b = ir_const_new(g, "b", IR_I8, 4, dims64(&p->b_shape, bd), c->b);
    b->quant = tg_quant(g, 1, &c->b_scale, &p->b_zp);
    ir_tensor *y = act(g, "y", 4, dims64(&p->out_shape, yd), c->out_scale, p->out_zp);
    ir_tensor *ins[2] = {a, b};
    ir_node *n = ir_node_new(g, IR_OP_ADD, "add", 2, ins, 1, &y);
    n->act = clamp_act(p->act_min, p->act_max, c->out_scale, p->out_zp);
    tg_set_io(g, 1, &a, y);
    const void *in[1] = {c->a};
    run_and_compare(g, in, c->expected, c->out_count, c->name);
    ir_graph_free(g);
}

/* ---- requantize, LUT, concat, reshape ----------------------------------------- */

Test(ref_quant, requantize_golden)
{
    for (size_t i = 0; i < COUNT(qk_rq_cases); i++) {
        const qk_rq_case *c = &qk_rq_cases[i];
        ir_graph *g = ir_graph_new(npu_alloc_default());
        int64_t d[1] = {(int64_t)c->count};
        ir_tensor *x = act(g, "x", 1, d, c->in_scale, c->p.in_zp), *y = act(g, "y", 1, d, c->out_scale, c->p.out_zp);
        ir_node *n = ir_node_new(g, IR_OP_REQUANTIZE, "rq", 1, &x, 1, &y);
        n->act = clamp_act(c->p.act_min, c->p.act_max, c->out_scale, c->p.out_zp);
        tg_set_io(g, 1, &x, y);
        const void *in[1] = {c->in};
        run_and_compare(g, in, c->expected, c->count, c->name);
        ir_graph_free(g);
    }
}

Test(ref_quant, lut)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int8_t table[256], x[300], want[300];
    for (int i = 0; i < 256; i++)
        table[i] = (int8_t)(127 - i);
    for (int i = 0; i < 300; i++) {
        x[i] = (int8_t)(i * 13);
        want[i] = (int8_t)(127 - (x[i] + 128));
    }
    int64_t d[2] = {3, 100}, td[1] = {256};
    ir_tensor *xt = act(g, "x", 2, d, 0.1f, 0), *y = act(g, "y", 2, d, 1.0f / 256, -128);
    ir_tensor *ins[2] = {xt, ir_const_new(g, "table", IR_I8, 1, td, table)};
    ir_node_new(g, IR_OP_LUT, "lut", 2, ins, 1, &y);
    tg_set_io(g, 1, &xt, y);
    const void *in[1] = {x};
    run_and_compare(g, in, want, 300, "lut");
    ir_graph_free(g);
}

Test(ref_quant, concat_requantizes_inputs_of_other_scales)
{
    const qk_rq_case *r = &qk_rq_cases[0]; /* full range: no clamp */
    cr_assert(r->p.act_min == -128 && r->p.act_max == 127);
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t ad[1] = {5}, bd[1] = {(int64_t)r->count}, yd[1] = {5 + (int64_t)r->count};
    ir_tensor *a = act(g, "a", 1, ad, r->out_scale, r->p.out_zp); /* already at the output's parameters */
    ir_tensor *b = act(g, "b", 1, bd, r->in_scale, r->p.in_zp);
    ir_tensor *y = act(g, "y", 1, yd, r->out_scale, r->p.out_zp);
    ir_tensor *ins[2] = {a, b};
    ir_node *n = ir_node_new(g, IR_OP_CONCAT, "cat", 2, ins, 1, &y);
    ir_set_int(g, n, "axis", 0);
    tg_set_io(g, 2, ins, y);
    int8_t av[5] = {-128, -1, 0, 1, 127};
    int8_t *want = malloc(5 + r->count);
    memcpy(want, av, 5);
    memcpy(want + 5, r->expected, r->count);
    const void *in[2] = {av, r->in};
    run_and_compare(g, in, want, 5 + r->count, "concat");
    free(want);
    ir_graph_free(g);
}

Test(ref_quant, concat_inner_axis_copies)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t ad[3] = {2, 3, 2}, bd[3] = {2, 1, 2}, yd[3] = {2, 4, 2};
    ir_tensor *a = act(g, "a", 3, ad, 0.5f, 3), *b = act(g, "b", 3, bd, 0.5f, 3), *y = act(g, "y", 3, yd, 0.5f, 3);
    ir_tensor *ins[2] = {a, b};
    ir_node *n = ir_node_new(g, IR_OP_CONCAT, "cat", 2, ins, 1, &y);
    ir_set_int(g, n, "axis", -2);
    tg_set_io(g, 2, ins, y);
    int8_t av[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, bv[4] = {-1, -2, -3, -4};
    int8_t want[16] = {1, 2, 3, 4, 5, 6, -1, -2, 7, 8, 9, 10, 11, 12, -3, -4};
    const void *in[2] = {av, bv};
    run_and_compare(g, in, want, 16, "concat axis 1");
    ir_graph_free(g);
}

Test(ref_quant, reshape_and_flatten_copy)
{
    for (int k = 0; k < 2; k++) {
        ir_graph *g = ir_graph_new(npu_alloc_default());
        int64_t xd[4] = {1, 2, 2, 3}, yd[2] = {1, 12}, sd[1] = {2}, shape[2] = {1, 12};
        ir_tensor *x = act(g, "x", 4, xd, 0.25f, -4), *y = act(g, "y", 2, yd, 0.25f, -4);
        ir_tensor *ins[2] = {x, ir_const_new(g, "shape", IR_I64, 1, sd, shape)};
        ir_node_new(g, k ? IR_OP_FLATTEN : IR_OP_RESHAPE, "r", k ? 1 : 2, ins, 1, &y);
        tg_set_io(g, 1, &x, y);
        int8_t v[12] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -128};
        const void *in[1] = {v};
        run_and_compare(g, in, v, 12, k ? "flatten" : "reshape");
        y->quant->scale[0] = 0.5f;
        npu_err e;
        cr_assert_eq(run_status(g, in, 12, &e), NPU_EUSER, "a reshape may not change the scale");
        ir_graph_free(g);
    }
}

Test(ref_quant, missing_output_quant_is_an_error)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t d[1] = {4};
    ir_tensor *x = act(g, "x", 1, d, 0.1f, 0), *y = ir_tensor_new(g, "y", IR_I8, 1, d);
    ir_node_new(g, IR_OP_REQUANTIZE, "rq", 1, &x, 1, &y);
    tg_set_io(g, 1, &x, y);
    int8_t v[4] = {0};
    const void *in[1] = {v};
    npu_err e;
    cr_assert_eq(run_status(g, in, 4, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "'y'") && strstr(e.msg, "rq"), "%s", e.msg);
    ir_graph_free(g);
}
