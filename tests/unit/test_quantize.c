/* The float -> quantized graph rewrite: structure and parameters. The
 * numerical agreement with the float graph is checked end to end
 * (tests/e2e) and by test_quantize_numeric below once kernels exist. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "quantize/quantize_internal.h"

typedef struct sample {
    ir_graph *g;
    ir_tensor *x, *w, *b, *c, *p, *y;
} sample;

/* x[1,2,4,4] -> Conv(w[3,2,1,1], b[3], relu) -> c -> MaxPool 2x2 -> p
 *             -> Concat(p, p2 = MaxPool(c)) -> y */
static sample build(void)
{
    sample s;
    ir_graph *g = s.g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {3, 2, 1, 1}, bd[1] = {3}, cd[4] = {1, 3, 4, 4}, pd[4] = {1, 3, 2, 2},
            yd[4] = {1, 6, 2, 2};
    float w[6] = {0.25f, -1.0f, 0.25f, 0.125f, -2.0f, 1.0f}, b[3] = {0.1f, -0.2f, 0.0f};
    s.x = ir_tensor_new(g, "x", IR_F32, 4, xd);
    s.x->flags |= IR_TENSOR_INPUT;
    s.w = ir_const_new(g, "w", IR_F32, 4, wd, w);
    s.b = ir_const_new(g, "b", IR_F32, 1, bd, b);
    s.c = ir_tensor_new(g, "c", IR_F32, 4, cd);
    s.p = ir_tensor_new(g, "p", IR_F32, 4, pd);
    ir_tensor *p2 = ir_tensor_new(g, "p2", IR_F32, 4, pd);
    s.y = ir_tensor_new(g, "y", IR_F32, 4, yd);
    ir_tensor *cin[3] = {s.x, s.w, s.b};
    ir_node *conv = ir_node_new(g, IR_OP_CONV, "conv", 3, cin, 1, &s.c);
    conv->act.kind = IR_ACT_RELU;
    int64_t k[2] = {2, 2};
    ir_node *mp = ir_node_new(g, IR_OP_MAX_POOL, "pool", 1, &s.c, 1, &s.p);
    ir_set_ints(g, mp, "kernel_shape", 2, k);
    ir_set_ints(g, mp, "strides", 2, k);
    ir_node *mp2 = ir_node_new(g, IR_OP_AVERAGE_POOL, "pool2", 1, &s.c, 1, &p2);
    ir_set_ints(g, mp2, "kernel_shape", 2, k);
    ir_set_ints(g, mp2, "strides", 2, k);
    ir_tensor *cat[2] = {s.p, p2};
    ir_node *cc = ir_node_new(g, IR_OP_CONCAT, "cat", 2, cat, 1, &s.y);
    ir_set_int(g, cc, "axis", 1);
    g->inputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->inputs[0] = s.x;
    g->n_inputs = 1;
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->outputs[0] = s.y;
    g->n_outputs = 1;
    return s;
}

static const ir_node *producer_of(const ir_graph *g, const char *tensor)
{
    const ir_tensor *t = ir_graph_find(g, tensor);
    return t ? t->producer : NULL;
}

Test(quantize, params_from_range_make_zero_exact)
{
    float s;
    int32_t zp;
    q_params_from_range(-1.0f, 3.0f, 8, &s, &zp);
    cr_assert_float_eq(s, 4.0f / 255.0f, 1e-9);
    cr_assert_eq(zp, -64, "round(-128 + 1/s) = round(-64.25)");
    /* real zero maps to an integer code exactly */
    cr_assert_float_eq(s * (float)(zp - zp), 0.0f, 0);
    q_params_from_range(0.5f, 2.0f, 8, &s, &zp);
    cr_assert_eq(zp, -128, "a range above zero is widened to include it");
    q_params_from_range(0.0f, 0.0f, 8, &s, &zp);
    cr_assert_gt(s, 0.0f);
}

Test(quantize, conv_pool_concat_rewrite)
{
    sample s = build();
    ir_graph *g = s.g;
    float lo[16] = {0}, hi[16] = {0};
    lo[s.x->id] = -1.0f;
    hi[s.x->id] = 1.0f;
    hi[s.c->id] = 4.0f;
    hi[ir_graph_find(g, "p2")->id] = 2.0f;
    hi[s.y->id] = 4.0f;
    q_options o = {.wbits = 8, .abits = 8};
    npu_err e;
    cr_assert_eq(q_quantize(g, lo, hi, &o, &e), NPU_OK, "%s", e.msg);

    /* x enters through a QuantizeLinear on the host */
    const ir_node *conv = NULL;
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i]->name, "conv") == 0)
            conv = g->nodes[i];
    cr_assert_not_null(conv);
    const ir_tensor *xq = conv->inputs[0];
    cr_assert_eq(xq->dtype, IR_I8);
    cr_assert_eq(xq->producer->op, IR_OP_QUANTIZE_LINEAR);
    cr_assert_eq(xq->producer->unit, IR_UNIT_HOST);
    cr_assert_float_eq(xq->quant->scale[0], 2.0f / 255.0f, 1e-9);

    /* weights: per output channel, symmetric, max |w| -> 127 */
    const ir_tensor *wq = conv->inputs[1];
    cr_assert_eq(wq->dtype, IR_I8);
    cr_assert_eq(wq->quant->axis, 0);
    cr_assert_eq(wq->quant->count, 3);
    float want_s[3] = {1.0f / 127, 0.25f / 127, 2.0f / 127};
    int8_t want_q[6] = {32, -127, 127, 64, -127, 64};
    for (int c = 0; c < 3; c++) {
        cr_assert_float_eq(wq->quant->scale[c], want_s[c], 1e-9, "channel %d", c);
        cr_assert_eq(wq->quant->zero_point[c], 0);
    }
    for (int i = 0; i < 6; i++)
        cr_assert_eq(((int8_t *)wq->data)[i], want_q[i], "weight %d: %d", i, ((int8_t *)wq->data)[i]);
    /* bias: int32 at in_scale * w_scale */
    const ir_tensor *bq = conv->inputs[2];
    cr_assert_eq(bq->dtype, IR_I32);
    for (int c = 0; c < 3; c++) {
        double sc = (2.0 / 255.0) * want_s[c];
        int32_t want = (int32_t)round((c == 0 ? 0.1 : c == 1 ? -0.2 : 0.0) / sc);
        cr_assert_eq(((int32_t *)bq->data)[c], want, "bias %d", c);
    }
    cr_assert_eq(conv->act.kind, IR_ACT_RELU, "the fused activation stays for the kernel's clamp");

    /* max pool inherits its input's parameters; the average pool has its own */
    const ir_node *pool = producer_of(g, "p:q");
    cr_assert_not_null(pool);
    cr_assert(pool->outputs[0]->quant == pool->inputs[0]->quant);
    const ir_node *pool2 = producer_of(g, "p2:q");
    cr_assert_float_eq(pool2->outputs[0]->quant->scale[0], 2.0f / 255.0f, 1e-9);

    /* concat output has its own range [0, 4]: p (inherited [0, 4]) goes in as
     * it is, p2 ([0, 2]) through a requantize */
    const ir_node *cat = producer_of(g, "y:q");
    cr_assert_not_null(cat);
    cr_assert_eq(cat->op, IR_OP_CONCAT);
    cr_assert_eq(cat->inputs[0]->producer->op, IR_OP_MAX_POOL);
    cr_assert_eq(cat->inputs[1]->producer->op, IR_OP_REQUANTIZE);
    for (int i = 0; i < 2; i++)
        cr_assert(q_same_quant(cat->inputs[i]->quant, cat->outputs[0]->quant), "input %d", i);
    /* the graph output stays float, through a DequantizeLinear */
    cr_assert_eq(g->outputs[0], s.y);
    cr_assert_eq(s.y->dtype, IR_F32);
    cr_assert_eq(s.y->producer->op, IR_OP_DEQUANTIZE_LINEAR);
    cr_assert_eq(ir_graph_verify(g, &e), NPU_OK, "%s", e.msg);
    ir_graph_free(g);
}

Test(quantize, int4_weights_are_packed_low_nibble_first)
{
    sample s = build();
    float lo[16] = {0}, hi[16];
    for (int i = 0; i < 16; i++)
        hi[i] = 1.0f;
    q_options o = {.wbits = 4, .abits = 8};
    npu_err e;
    cr_assert_eq(q_quantize(s.g, lo, hi, &o, &e), NPU_OK, "%s", e.msg);
    const ir_node *conv = producer_of(s.g, "c:q");
    const ir_tensor *wq = conv->inputs[1];
    cr_assert_eq(wq->dtype, IR_I4);
    cr_assert_eq(ir_tensor_bytes(wq), 3);
    /* channel 0: 0.25, -1.0 at scale 1/7 -> 2 (1.75 rounded), -7 */
    const uint8_t *p = wq->data;
    cr_assert_eq(p[0] & 0xf, 2);
    cr_assert_eq(p[0] >> 4, (uint8_t)(-7 & 0xf));
    ir_graph_free(s.g);
}

Test(quantize, per_layer_bits_override)
{
    sample s = build();
    float lo[16] = {0}, hi[16];
    for (int i = 0; i < 16; i++)
        hi[i] = 1.0f;
    q_layer_bits lb = {"conv", 8, 0};
    q_options o = {.wbits = 4, .abits = 8, .n_layer_bits = 1, .layer_bits = &lb};
    npu_err e;
    cr_assert_eq(q_quantize(s.g, lo, hi, &o, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(producer_of(s.g, "c:q")->inputs[1]->dtype, IR_I8);
    ir_graph_free(s.g);
}

/* The conv of build() sums 2 weights per output channel: under --wbits 4 a
 * minimum fan-in above 2 keeps it at 8 bits, one of 2 does not, and a
 * --layer-bits entry wins over the rule. */
static ir_dtype conv_weight_dtype(int min_fanin, const q_layer_bits *lb)
{
    sample s = build();
    float lo[16] = {0}, hi[16];
    for (int i = 0; i < 16; i++)
        hi[i] = 1.0f;
    q_options o = {.wbits = 4, .abits = 8, .w4_min_fanin = min_fanin, .n_layer_bits = lb ? 1 : 0, .layer_bits = lb};
    npu_err e;
    cr_assert_eq(q_quantize(s.g, lo, hi, &o, &e), NPU_OK, "%s", e.msg);
    ir_dtype d = producer_of(s.g, "c:q")->inputs[1]->dtype;
    ir_graph_free(s.g);
    return d;
}

Test(quantize, small_fan_in_keeps_8_bit_weights_under_wbits_4)
{
    cr_assert_eq(conv_weight_dtype(3, NULL), IR_I8);
    cr_assert_eq(conv_weight_dtype(2, NULL), IR_I4);
    cr_assert_eq(conv_weight_dtype(0, NULL), IR_I4);
    q_layer_bits lb = {"conv", 4, 0};
    cr_assert_eq(conv_weight_dtype(32, &lb), IR_I4);
}

Test(quantize, rejects_unsupported_bit_widths)
{
    sample s = build();
    float lo[16] = {0}, hi[16] = {0};
    q_options o = {.wbits = 8, .abits = 4};
    npu_err e;
    cr_assert_eq(q_quantize(s.g, lo, hi, &o, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "--abits 4"), "%s", e.msg);
    ir_graph_free(s.g);
}

/* x -> Conv a (relu, [0, 4]) and Conv b ([0, 8]) -> Concat(a, b) ([0, 8]):
 * a's requantization into the concat becomes an npu.Lut right after conv a
 * (the tiler runs it in the conv's output stage), with the same codes. */
Test(quantize, concat_requant_of_a_conv_is_a_lut_after_it)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {1, 2, 1, 1}, bd[1] = {1}, cd[4] = {1, 1, 4, 4}, yd[4] = {1, 2, 4, 4};
    float w[2] = {0.5f, 0.25f}, b[1] = {0.0f};
    ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 4, xd), *a = ir_tensor_new(g, "a", IR_F32, 4, cd);
    ir_tensor *bt = ir_tensor_new(g, "b", IR_F32, 4, cd), *y = ir_tensor_new(g, "y", IR_F32, 4, yd);
    x->flags |= IR_TENSOR_INPUT;
    ir_tensor *ca[3] = {x, ir_const_new(g, "wa", IR_F32, 4, wd, w), ir_const_new(g, "ba", IR_F32, 1, bd, b)};
    ir_tensor *cb[3] = {x, ir_const_new(g, "wb", IR_F32, 4, wd, w), ir_const_new(g, "bb", IR_F32, 1, bd, b)};
    ir_node *conv_a = ir_node_new(g, IR_OP_CONV, "conv_a", 3, ca, 1, &a);
    conv_a->act.kind = IR_ACT_RELU;
    ir_node_new(g, IR_OP_CONV, "conv_b", 3, cb, 1, &bt)->act.kind = IR_ACT_RELU;
    ir_tensor *cat[2] = {a, bt};
    ir_set_int(g, ir_node_new(g, IR_OP_CONCAT, "cat", 2, cat, 1, &y), "axis", 1);
    g->inputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->inputs[0] = x;
    g->n_inputs = 1;
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->outputs[0] = y;
    g->n_outputs = 1;
    float lo[16] = {0}, hi[16] = {0};
    lo[x->id] = -1.0f;
    hi[x->id] = 1.0f;
    hi[a->id] = 4.0f;
    hi[bt->id] = 8.0f;
    hi[y->id] = 8.0f;
    q_options o = {.wbits = 8, .abits = 8};
    npu_err e;
    cr_assert_eq(q_quantize(g, lo, hi, &o, &e), NPU_OK, "%s", e.msg);
    int ia = -1;
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i]->name, "conv_a") == 0)
            ia = i;
    cr_assert(ia >= 0 && ia + 1 < g->n_nodes);
    const ir_node *lut = g->nodes[ia + 1];
    cr_assert_eq(lut->op, IR_OP_LUT, "the Lut follows its conv");
    cr_assert_eq(lut->inputs[0], g->nodes[ia]->outputs[0]);
    const ir_tensor *t = lut->inputs[1];
    cr_assert(t->data && t->dtype == IR_I8 && ir_tensor_numel(t) == 256);
    /* [0, 4] and [0, 8] over 255 steps, both zero points -128: code 2k - 128
     * of a is exactly code k - 128 of the concat */
    for (int k = 0; k < 128; k++)
        cr_assert_eq(((const int8_t *)t->data)[2 * k], k - 128, "code %d", 2 * k - 128);
    cr_assert(q_same_quant(lut->outputs[0]->quant, producer_of(g, "y:q")->outputs[0]->quant));
    cr_assert_eq(ir_graph_verify(g, &e), NPU_OK, "%s", e.msg);
    ir_graph_free(g);
}
