/* Pre-quantized QDQ models (tests/qdq/gen_qdq.py): q_from_qdq turns them
 * into the integer graph with the model's own scales, and the integer graph
 * agrees with the float evaluation of the QDQ model (which executes the
 * Q/DQ ops) within one step of the output scale. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "import/import.h"
#include "opt/opt.h"
#include "quantize/quantize.h"
#include "ref/ref.h"

static ir_graph *load(const char *file)
{
    char path[1024];
    const char *r = getenv("NPUCC_ROOT");
    snprintf(path, sizeof path, "%s/tests/qdq/%s", r && *r ? r : ".", file);
    ir_graph *g = NULL;
    npu_err err = {0};
    imp_options io = {0};
    cr_assert_eq(imp_load_onnx(path, &io, npu_alloc_default(), &g, &err), NPU_OK, "%s", err.msg);
    opt_options oo = {0};
    cr_assert_eq(opt_run(g, &oo, &err), NPU_OK, "%s", err.msg); /* as npucc: Relu fused into the conv */
    return g;
}

static ir_graph *load_converted(const char *file)
{
    ir_graph *g = load(file);
    npu_err err = {0};
    cr_assert(q_graph_is_qdq(g));
    cr_assert_eq(q_from_qdq(g, &err), NPU_OK, "%s", err.msg);
    return g;
}

static float const_f32(const ir_graph *g, const char *name, int i)
{
    const ir_tensor *t = ir_graph_find(g, name);
    cr_assert(t && t->data && t->dtype == IR_F32, "%s", name);
    return ((const float *)t->data)[i];
}

static ir_node *node_named(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i]->name, name))
            return g->nodes[i];
    cr_assert_fail("no node %s", name);
    return NULL;
}

Test(qdq_import, float_models_are_not_qdq)
{
    ir_graph *g = load("qdq_s8.onnx");
    cr_assert(q_graph_is_qdq(g));
    ir_graph_free(g);
    /* the float model the QDQ one wraps has no Q/DQ: built by hand */
    ir_graph *f = ir_graph_new(npu_alloc_default());
    int64_t d[2] = {1, 4};
    ir_tensor *x = ir_tensor_new(f, "x", IR_F32, 2, d), *y = ir_tensor_new(f, "y", IR_F32, 2, d);
    cr_assert(ir_node_new(f, IR_OP_RELU, "relu", 1, &x, 1, &y));
    cr_assert(!q_graph_is_qdq(f));
    ir_graph_free(f);
}

Test(qdq_import, integer_ops_carry_the_models_scales)
{
    ir_graph *orig = load("qdq_s8.onnx");
    ir_graph *g = load_converted("qdq_s8.onnx");
    int n_q = 0, n_dq = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        n_q += g->nodes[i]->op == IR_OP_QUANTIZE_LINEAR;
        n_dq += g->nodes[i]->op == IR_OP_DEQUANTIZE_LINEAR;
    }
    cr_assert_eq(n_q, 1, "only the graph input's QuantizeLinear stays");
    cr_assert_eq(n_dq, 1, "only the graph output's DequantizeLinear stays");
    const ir_node *c1 = node_named(g, "conv1");
    cr_assert_eq(c1->op, IR_OP_CONV);
    cr_assert_eq(c1->act.kind, IR_ACT_RELU);
    const ir_tensor *x = c1->inputs[0], *w = c1->inputs[1], *b = c1->inputs[2], *y = c1->outputs[0];
    cr_assert_eq(x->dtype, IR_I8);
    cr_assert_eq(x->quant->scale[0], const_f32(orig, "xin_scale", 0));
    cr_assert_eq(w->dtype, IR_I8);
    cr_assert_eq(w->quant->axis, 0);
    cr_assert_eq(w->quant->count, 8);
    for (int c = 0; c < 8; c++) {
        cr_assert_eq(w->quant->scale[c], const_f32(orig, "conv1_ws", c));
        cr_assert_eq(w->quant->zero_point[c], 0);
    }
    /* the weights are the model's codes */
    const ir_tensor *wq = ir_graph_find(orig, "conv1_wq");
    cr_assert(wq && !memcmp(wq->data, w->data, ir_tensor_bytes(w)));
    cr_assert_eq(b->dtype, IR_I32);
    cr_assert(!memcmp(ir_graph_find(orig, "conv1_bq")->data, b->data, ir_tensor_bytes(b)),
              "bias at in_scale * w_scale is taken as is");
    cr_assert_eq(y->dtype, IR_I8);
    cr_assert_eq(y->quant->scale[0], const_f32(orig, "r1_scale", 0));
    cr_assert_eq(y->quant->zero_point[0], *(const int8_t *)ir_graph_find(orig, "r1_zp")->data);
    const ir_node *fc = node_named(g, "fc");
    cr_assert_eq(fc->op, IR_OP_GEMM);
    cr_assert_eq(fc->inputs[0]->dtype, IR_I8);
    cr_assert_eq(fc->outputs[0]->quant->scale[0], const_f32(orig, "y_scale", 0));
    cr_assert_eq(node_named(g, "add")->inputs[1]->quant->scale[0], const_f32(orig, "c2_scale", 0));
    ir_graph_free(orig);
    ir_graph_free(g);
}

static void run(const ir_graph *g, const float *x, float *y)
{
    npu_err err = {0};
    ref_ctx *rc = ref_ctx_new(g, npu_alloc_default(), &err);
    cr_assert(rc, "%s", err.msg);
    const void *ins[1] = {x};
    void *outs[1] = {y};
    cr_assert_eq(ref_ctx_run(rc, ins, outs, &err), NPU_OK, "%s", err.msg);
    ref_ctx_free(rc);
}

Test(qdq_import, integer_graph_matches_the_qdq_model_within_one_step)
{
    ir_graph *f = load("qdq_s8.onnx"), *g = load_converted("qdq_s8.onnx"), *u = load_converted("qdq_u8.onnx");
    float step = const_f32(f, "y_scale", 0);
    enum { N_IN = 3 * 8 * 8, N_OUT = 10, SAMPLES = 50 };
    float x[N_IN], yf[N_OUT], yg[N_OUT], yu[N_OUT];
    unsigned seed = 7;
    int exact = 0;
    for (int s = 0; s < SAMPLES; s++) {
        for (int i = 0; i < N_IN; i++) {
            seed = seed * 1103515245u + 12345u;
            x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
        }
        run(f, x, yf);
        run(g, x, yg);
        run(u, x, yu);
        for (int i = 0; i < N_OUT; i++) {
            cr_assert_leq(fabsf(yf[i] - yg[i]), step * 1.001f, "sample %d logit %d: %g vs %g", s, i, (double)yf[i],
                          (double)yg[i]);
            exact += yf[i] == yg[i];
        }
        /* uint8 activations are int8 ones with the zero point moved: the same integers */
        cr_assert(!memcmp(yg, yu, sizeof yg), "sample %d: uint8 and int8 models differ", s);
    }
    cr_assert_gt(exact, SAMPLES * N_OUT / 2, "most logits are exact (%d of %d)", exact, SAMPLES * N_OUT);
    ir_graph_free(f);
    ir_graph_free(g);
    ir_graph_free(u);
}

Test(qdq_import, asymmetric_weights_are_rejected_naming_the_node)
{
    ir_graph *g = load("qdq_s8.onnx");
    /* a fresh zero point constant (cse shares equal ones between layers) */
    ir_node *dq = node_named(g, "conv2")->inputs[1]->producer;
    cr_assert(dq && dq->op == IR_OP_DEQUANTIZE_LINEAR);
    int8_t z[8] = {3};
    int64_t d = 8;
    cr_assert((dq->inputs[2] = ir_const_new(g, NULL, IR_I8, 1, &d, z)));
    npu_err err = {0};
    cr_assert_eq(q_from_qdq(g, &err), NPU_EUSER);
    cr_assert(strstr(err.msg, "conv2") && strstr(err.msg, "symmetric"), "%s", err.msg);
    ir_graph_free(g);
}

/* Two Muls by one-element int8 constants of the same code and different
 * scales: cse merges the constants, and each Mul must still read its own
 * DequantizeLinear's scale (tests/qdq/qdq_shared_const.onnx, from tests/diff). */
Test(qdq_import, a_constant_two_scales_read_is_split)
{
    ir_graph *g = load("qdq_shared_const.onnx");
    const ir_tensor *c2 = node_named(g, "l2")->inputs[1], *c9 = node_named(g, "l9")->inputs[1];
    cr_assert(c2->producer && c9->producer && c2->producer->inputs[0] == c9->producer->inputs[0],
              "cse shares the int8 constant, so the case tests the split");
    npu_err err = {0};
    cr_assert_eq(q_from_qdq(g, &err), NPU_OK, "%s", err.msg);
    const ir_tensor *q2 = node_named(g, "l2")->inputs[1], *q9 = node_named(g, "l9")->inputs[1];
    cr_assert(q2->data && q9->data && q2->quant && q9->quant);
    cr_assert_float_eq(q2->quant->scale[0], 0.0113367f, 1e-7, "l2 reads %g", q2->quant->scale[0]);
    cr_assert_float_eq(q9->quant->scale[0], 0.00282519f, 1e-8, "l9 reads %g", q9->quant->scale[0]);
    ir_graph_free(g);
}

/* A Split whose parts all keep its input's parameters is the integer Split;
 * with one part at another scale it stays float between the DQ and the Qs. */
Test(qdq_import, a_split_whose_parts_keep_the_scale_is_integer)
{
    ir_graph *g = load_converted("qdq_int_split.onnx");
    const ir_node *sp = node_named(g, "l2");
    cr_assert_eq(sp->op, IR_OP_SPLIT);
    cr_assert(sp->inputs[0]->dtype == IR_I8 && sp->outputs[0]->dtype == IR_I8 && sp->outputs[1]->dtype == IR_I8);
    cr_assert(sp->inputs[0]->quant && sp->outputs[1]->quant &&
              sp->inputs[0]->quant->scale[0] == sp->outputs[1]->quant->scale[0] &&
              sp->inputs[0]->quant->zero_point[0] == sp->outputs[1]->quant->zero_point[0]);
    ir_graph_free(g);
    g = load_converted("qdq_float_split.onnx");
    sp = node_named(g, "l2");
    cr_assert(sp->inputs[0]->dtype == IR_F32 && sp->outputs[0]->dtype == IR_F32);
    ir_graph_free(g);
}

Test(qdq_import, pools_tables_concat_matmul_and_a_float_softmax)
{
    ir_graph *f = load("qdq_ops.onnx"), *g = load_converted("qdq_ops.onnx");
    cr_assert_eq(node_named(g, "pool")->outputs[0]->dtype, IR_I8);
    cr_assert_eq(node_named(g, "sigmoid")->op, IR_OP_LUT);
    cr_assert_eq(node_named(g, "cat")->inputs[0]->producer->op, IR_OP_REQUANTIZE, "DQ -> Q is a requantize");
    const ir_node *mm = node_named(g, "matmul");
    cr_assert_eq(mm->op, IR_OP_GEMM);
    const ir_tensor *w = mm->inputs[1], *wm = ir_graph_find(f, "wm_q");
    cr_assert_eq(w->dims[0], 6);
    cr_assert_eq(w->dims[1], 128);
    for (int c = 0; c < 6; c++) {
        cr_assert_eq(w->quant->scale[c], const_f32(f, "wm_s", c), "axis-1 scales follow the output columns");
        for (int j = 0; j < 128; j++)
            cr_assert_eq(((const int8_t *)w->data)[c * 128 + j], ((const int8_t *)wm->data)[j * 6 + c]);
    }
    const ir_node *sm = node_named(g, "softmax");
    cr_assert_eq(sm->op, IR_OP_SOFTMAX);
    cr_assert_eq(sm->inputs[0]->dtype, IR_F32, "no integer Softmax: it stays float after the DQ");
    float step = const_f32(f, "y_scale", 0);
    enum { N_IN = 4 * 8 * 8, N_OUT = 6 };
    float x[N_IN], yf[N_OUT], yg[N_OUT];
    unsigned seed = 11;
    for (int s = 0; s < 50; s++) {
        for (int i = 0; i < N_IN; i++) {
            seed = seed * 1103515245u + 12345u;
            x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
        }
        run(f, x, yf);
        run(g, x, yg);
        for (int i = 0; i < N_OUT; i++)
            cr_assert_leq(fabsf(yf[i] - yg[i]), step, "sample %d prob %d: %g vs %g", s, i, (double)yf[i],
                          (double)yg[i]);
    }
    ir_graph_free(f);
    ir_graph_free(g);
}

Test(qdq_import, qlinear_ops_equal_their_qdq_twin)
{
    ir_graph *ql = load_converted("qlinear_u8.onnx"), *tw = load_converted("qlinear_twin.onnx");
    ir_graph *tf = load("qlinear_twin.onnx");
    cr_assert_eq(node_named(ql, "conv1")->op, IR_OP_CONV);
    cr_assert_eq(node_named(ql, "matmul")->op, IR_OP_GEMM);
    cr_assert_eq(node_named(ql, "pool")->outputs[0]->quant->scale[0], const_f32(tf, "r1_s", 0),
                 "MaxPool without a Q keeps its input's parameters");
    float step = const_f32(tf, "y_s", 0);
    enum { N_IN = 3 * 8 * 8, N_OUT = 6 };
    float x[N_IN], yq[N_OUT], yt[N_OUT], yf[N_OUT];
    unsigned seed = 3;
    for (int s = 0; s < 50; s++) {
        for (int i = 0; i < N_IN; i++) {
            seed = seed * 1103515245u + 12345u;
            x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
        }
        run(ql, x, yq);
        run(tw, x, yt);
        run(tf, x, yf);
        cr_assert(!memcmp(yq, yt, sizeof yq), "sample %d: QLinear and QDQ forms differ", s);
        for (int i = 0; i < N_OUT; i++)
            cr_assert_leq(fabsf(yf[i] - yt[i]), step * 1.001f, "sample %d out %d: %g vs %g", s, i, (double)yf[i],
                          (double)yt[i]);
    }
    ir_graph_free(ql);
    ir_graph_free(tw);
    ir_graph_free(tf);
}

/* PyTorch's symmetric qint8 (scale amax / 127.5 over [-128, 127]) gives each
 * channel's most negative weight the code -128. The integer graph keeps the
 * model's codes: the import once made them -127, which a differential run
 * (tests/diff, a third of its QDQ nets quantized so) found 2 to 6 steps off
 * onnxruntime in 7 of 47 such models. */
Test(qdq_import, weight_code_minus_128_is_kept)
{
    ir_graph *f = load("qdq_w128.onnx"), *g = load_converted("qdq_w128.onnx");
    const char *names[] = {"conv1", "conv2", "fc"};
    int minus128 = 0;
    for (int i = 0; i < 3; i++) {
        char wn[32];
        snprintf(wn, sizeof wn, "%s_wq", names[i]);
        const ir_tensor *wq = ir_graph_find(f, wn), *w = node_named(g, names[i])->inputs[1];
        cr_assert(wq && w->dtype == IR_I8 && ir_tensor_bytes(w) == ir_tensor_bytes(wq), "%s", names[i]);
        for (size_t k = 0; k < ir_tensor_bytes(wq); k++)
            minus128 += ((const int8_t *)wq->data)[k] == -128;
        cr_assert(!memcmp(wq->data, w->data, ir_tensor_bytes(w)), "%s: the model's codes", names[i]);
    }
    cr_assert_gt(minus128, 0, "the fixture has codes -128");
    float step = const_f32(f, "y_scale", 0), x[3 * 8 * 8], yf[10], yg[10];
    unsigned seed = 11;
    for (int s = 0; s < 20; s++) {
        for (int i = 0; i < 3 * 8 * 8; i++) {
            seed = seed * 1103515245u + 12345u;
            x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
        }
        run(f, x, yf);
        run(g, x, yg);
        for (int i = 0; i < 10; i++)
            cr_assert_leq(fabsf(yf[i] - yg[i]), step * 1.001f, "sample %d logit %d", s, i);
    }
    ir_graph_free(f);
    ir_graph_free(g);
}
