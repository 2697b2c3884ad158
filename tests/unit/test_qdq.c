/* --emit qdq (src/emit/qdq.c): a small quantized graph (QuantizeLinear, an
 * int4 per-channel Conv with int32 bias and a fused Relu, npu.Lut,
 * npu.Requantize, DequantizeLinear) written as QDQ ONNX, read back by the
 * importer, checked for the expected ops and initializers, and run by the
 * float reference against the integer reference of the original graph. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit/emit.h"
#include "import/import.h"
#include "kernels/nk_quant.h"
#include "ref/ref.h"
#include "tests/support/testgraph.h"

enum { C_IN = 2, C_OUT = 3, H = 5, W = 5, K = 3 };

static ir_tensor *act(ir_graph *g, const char *name, const int64_t *dims, float scale, int32_t zp)
{
    ir_tensor *t = tg_act(g, name, 4, dims, scale, zp);
    cr_assert_not_null(t);
    return t;
}

static ir_tensor *scalar(ir_graph *g, const char *name, ir_dtype dt, const void *v)
{
    return ir_const_new(g, name, dt, 0, NULL, v);
}

/* The Lut's table: any int8 function of the code will do; this one is not
 * linear, so an emitter that replaced the table by DQ -> Q would be caught. */
static int8_t table_value(int i)
{
    return (int8_t)((i * i / 97 + 13 * i) % 256 - 128);
}

/* x f32 -> Q -> Conv(int4 w, i32 b, relu) -> npu.Lut -> npu.Requantize -> DQ -> y f32 */
static ir_graph *sample_graph(void)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    cr_assert_not_null(g);
    g->name = "qdq_sample";
    g->opset = 13;
    int64_t xd[4] = {1, C_IN, H, W}, yd[4] = {1, C_OUT, H, W}, wd[4] = {C_OUT, C_IN, K, K}, bd[1] = {C_OUT};
    int64_t td[1] = {256};
    ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 4, xd);
    float xs = 1.0f / 64;
    int8_t xz = -3;
    ir_tensor *xq = act(g, "x:q", xd, xs, xz);
    ir_tensor *qin[3] = {x, scalar(g, "xs", IR_F32, &xs), scalar(g, "xz", IR_I8, &xz)};
    ir_node_new(g, IR_OP_QUANTIZE_LINEAR, "quantize:x", 3, qin, 1, &xq);

    int8_t wv[C_OUT * C_IN * K * K];
    for (size_t i = 0; i < sizeof wv; i++)
        wv[i] = (int8_t)((int)(i * 5 % 16) - 8); /* the whole int4 range */
    uint8_t wp[(sizeof wv + 1) / 2];
    cr_assert_eq(nk_int4_pack(wv, wp, sizeof wv), NK_OK);
    ir_tensor *w = ir_const_new(g, "w", IR_I4, 4, wd, wp);
    float ws[C_OUT] = {0.02f, 0.035f, 0.011f}, bs[C_OUT];
    for (int c = 0; c < C_OUT; c++)
        bs[c] = xs * ws[c];
    w->quant = tg_quant(g, C_OUT, ws, NULL);
    int32_t bv[C_OUT] = {40, -75, 300};
    ir_tensor *b = ir_const_new(g, "b", IR_I32, 1, bd, bv);
    b->quant = tg_quant(g, C_OUT, bs, NULL);
    ir_tensor *c1 = act(g, "conv:q", yd, 0.02f, -20);
    ir_tensor *cin[3] = {xq, w, b};
    ir_node *conv = ir_node_new(g, IR_OP_CONV, "conv", 3, cin, 1, &c1);
    int64_t ks[2] = {K, K}, ones[2] = {1, 1}, pads[4] = {1, 1, 1, 1};
    ir_set_ints(g, conv, "kernel_shape", 2, ks);
    ir_set_ints(g, conv, "strides", 2, ones);
    ir_set_ints(g, conv, "dilations", 2, ones);
    ir_set_ints(g, conv, "pads", 4, pads);
    ir_set_int(g, conv, "group", 1);
    conv->act.kind = IR_ACT_RELU;

    int8_t tv[256];
    for (int i = 0; i < 256; i++)
        tv[i] = table_value(i);
    ir_tensor *lut = act(g, "lut:q", yd, 0.01f, 0);
    ir_tensor *lin[2] = {c1, ir_const_new(g, "table", IR_I8, 1, td, tv)};
    ir_node_new(g, IR_OP_LUT, "lut", 2, lin, 1, &lut);
    ir_tensor *rq = act(g, "lut:q:q", yd, 0.013f, 7);
    ir_node_new(g, IR_OP_REQUANTIZE, "requant", 1, &lut, 1, &rq);

    ir_tensor *y = ir_tensor_new(g, "y", IR_F32, 4, yd);
    float ys = 0.013f;
    int8_t yz = 7;
    ir_tensor *din[3] = {rq, scalar(g, "ys", IR_F32, &ys), scalar(g, "yz", IR_I8, &yz)};
    ir_node_new(g, IR_OP_DEQUANTIZE_LINEAR, "dequantize:y", 3, din, 1, &y);

    g->inputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->inputs[0] = x;
    g->outputs[0] = y;
    x->flags |= IR_TENSOR_INPUT;
    y->flags |= IR_TENSOR_OUTPUT;
    g->n_inputs = g->n_outputs = 1;
    npu_err e = {0};
    cr_assert_eq(ir_graph_verify(g, &e), NPU_OK, "%s", e.msg);
    return g;
}

static void run(const ir_graph *g, const float *x, float *y)
{
    npu_err e = {0};
    ref_ctx *ctx = ref_ctx_new(g, g->alloc, &e);
    cr_assert_not_null(ctx, "%s", e.msg);
    const void *in[1] = {x};
    void *out[1] = {y};
    cr_assert_eq(ref_ctx_run(ctx, in, out, &e), NPU_OK, "%s", e.msg);
    ref_ctx_free(ctx);
}

static int count_op(const ir_graph *g, ir_op op)
{
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++)
        k += !g->nodes[i]->dead && g->nodes[i]->op == op;
    return k;
}

static const ir_node *find_op(const ir_graph *g, ir_op op)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->op == op)
            return g->nodes[i];
    return NULL;
}

static void tmp_path(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "/tmp/test_qdq_%s_%ld.onnx", tag, (long)getpid());
}

/* g written by emit_qdq and read back by the importer. */
static ir_graph *emit_and_reimport(const ir_graph *g, const char *tag)
{
    char path[256];
    tmp_path(path, sizeof path, tag);
    npu_err e = {0};
    cr_assert_eq(emit_qdq(g, path, &e), NPU_OK, "%s", e.msg);
    ir_graph *back = NULL;
    npu_status st = imp_load_onnx(path, NULL, npu_alloc_default(), &back, &e);
    unlink(path);
    cr_assert_eq(st, NPU_OK, "the QDQ model does not import: %s", e.msg);
    return back;
}

Test(qdq, reimports_with_the_expected_ops_and_runs_within_one_lsb)
{
    ir_graph *g = sample_graph();
    ir_graph *back = emit_and_reimport(g, "sample");

    cr_assert_eq(back->opset, 13);
    cr_assert_eq(back->n_inputs, 1);
    cr_assert_eq(back->n_outputs, 1);
    cr_assert_str_eq(back->inputs[0]->name, "x");
    cr_assert_str_eq(back->outputs[0]->name, "y");
    cr_assert_eq(back->outputs[0]->dtype, IR_F32);
    cr_assert_eq(count_op(back, IR_OP_CONV), 1);
    cr_assert_eq(count_op(back, IR_OP_RELU), 1, "the fused activation is a Relu after the float Conv");
    cr_assert_eq(count_op(back, IR_OP_GATHER), 1, "npu.Lut is a Gather on its table");
    cr_assert_eq(count_op(back, IR_OP_CAST), 1);
    /* the input's Q, the conv's and the requantize's */
    cr_assert_eq(count_op(back, IR_OP_QUANTIZE_LINEAR), 3);
    cr_assert_geq(count_op(back, IR_OP_DEQUANTIZE_LINEAR), 3, "x:q, lut:q and the output are dequantized");
    cr_assert_eq(count_op(back, IR_OP_LUT) + count_op(back, IR_OP_REQUANTIZE), 0, "no npu.* op in ONNX");

    const ir_node *gather = find_op(back, IR_OP_GATHER);
    const ir_tensor *table = gather->inputs[0];
    cr_assert(table->data && table->dtype == IR_I8 && ir_tensor_numel(table) == 256, "the table is an int8 initializer");
    for (int i = 0; i < 256; i++)
        cr_assert_eq(((const int8_t *)table->data)[i], table_value(i), "table[%d]", i);

    /* the weights: int4 unpacked, scaled per output channel (folded or behind a DQ) */
    const ir_node *conv = find_op(back, IR_OP_CONV);
    const ir_tensor *w = conv->inputs[1];
    if (w->data && w->dtype == IR_F32) {
        const ir_tensor *w0 = g->nodes[1]->inputs[1];
        for (int64_t i = 0; i < ir_tensor_numel(w); i++) {
            float want = w0->quant->scale[i / (C_IN * K * K)] * (float)nk_int4_get(w0->data, (size_t)i);
            cr_assert_float_eq(((const float *)w->data)[i], want, 1e-7f, "weight %lld", (long long)i);
        }
    } else {
        cr_assert(w->producer && w->producer->op == IR_OP_DEQUANTIZE_LINEAR, "the weights go through a DQ");
    }

    /* both graphs on the same input: the integer reference and the QDQ form in float */
    enum { N = C_IN * H * W, M = C_OUT * H * W };
    float x[N], want[M], got[M];
    for (int i = 0; i < N; i++)
        x[i] = sinf(0.7f * (float)i) * 1.5f;
    run(g, x, want);
    run(back, x, got);
    int equal = 0;
    for (int i = 0; i < M; i++) {
        float lsb = fabsf(got[i] - want[i]) / 0.013f;
        cr_assert_leq(lsb, 1.001f, "output %d: %g vs %g (%.2f LSB)", i, got[i], want[i], lsb);
        equal += lsb < 1e-3f;
    }
    cr_assert_geq(equal, M * 9 / 10, "only %d of %d outputs equal", equal, M);
    ir_graph_free(back);
    ir_graph_free(g);
}

Test(qdq, refuses_int4_activations)
{
    ir_graph *g = sample_graph();
    g->nodes[2]->outputs[0]->dtype = IR_I4; /* the Lut's output */
    char path[256];
    tmp_path(path, sizeof path, "int4");
    npu_err e = {0};
    cr_assert_eq(emit_qdq(g, path, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "int4 activation") && strstr(e.msg, "lut"), "message: %s", e.msg);
    cr_assert_eq(access(path, F_OK), -1, "nothing is written on an error");
    ir_graph_free(g);
}

Test(qdq, keeps_a_newer_source_opset)
{
    ir_graph *g = sample_graph();
    g->opset = 17;
    ir_graph *back = emit_and_reimport(g, "opset");
    cr_assert_eq(back->opset, 17);
    ir_graph_free(back);
    ir_graph_free(g);
}

/* An opset-12 graph: Unsqueeze's axes attribute becomes an input; Softmax
 * keeps the explicit axis the importer gives old forms. */
Test(qdq, converts_the_forms_opset_13_changed)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    g->opset = 12;
    /* [2, 3] -> [2, 3, 1]: the dims after Softmax's axis are 1, the one old
     * form the importer leaves as it is */
    int64_t xd[2] = {2, 3}, ud[3] = {2, 3, 1}, axes[1] = {2};
    ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 2, xd), *u = ir_tensor_new(g, "u", IR_F32, 3, ud);
    ir_tensor *y = ir_tensor_new(g, "y", IR_F32, 3, ud);
    ir_node *un = ir_node_new(g, IR_OP_UNSQUEEZE, "unsqueeze", 1, &x, 1, &u);
    ir_set_ints(g, un, "axes", 1, axes);
    ir_set_int(g, ir_node_new(g, IR_OP_SOFTMAX, "softmax", 1, &u, 1, &y), "axis", 1);
    g->inputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->inputs[0] = x;
    g->outputs[0] = y;
    g->n_inputs = g->n_outputs = 1;
    ir_graph *back = emit_and_reimport(g, "opset12");
    cr_assert_eq(back->opset, 13);
    const ir_node *sm = find_op(back, IR_OP_SOFTMAX);
    cr_assert_not_null(sm);
    cr_assert_eq(ir_attr_int(sm, "axis", -1), 1);
    float xv[6] = {0.5f, -1, 2, 0, 3, -0.25f}, want[6], got[6];
    run(g, xv, want);
    run(back, xv, got);
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(got[i], want[i], 1e-6f, "element %d: %g vs %g", i, got[i], want[i]);
    ir_graph_free(back);
    ir_graph_free(g);
}
