/* int4 activations (--abits 4): int4 codes -8..7 held one per byte
 * (IR_TENSOR_INT4_CODES), scales from the ranges over 15 steps, every clamp
 * within -8..7, and the rejection where the target declares no int4
 * activations. npusim = npuref on these graphs is tests/e2e/run.sh's. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "numerics/numerics.h"
#include "quantize/quantize_internal.h"
#include "target/target.h"
#include "tests/support/testgraph.h"

typedef struct a4_graph {
    ir_graph *g;
    ir_tensor *x, *c, *a, *sg, *p, *q, *y;
} a4_graph;

enum { N_T = 32 };

/* x[1,2,4,4] -> Conv 1x1 (relu) -> c;  a = c + x;  sg = Sigmoid(a);
 * p = MaxPool2x2(c);  q = AvgPool2x2(sg);  y = Concat(p, q) */
static a4_graph build(void)
{
    a4_graph s;
    ir_graph *g = s.g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {2, 2, 1, 1}, bd[1] = {2}, pd[4] = {1, 2, 2, 2}, yd[4] = {1, 4, 2, 2};
    float w[4] = {0.5f, -1.0f, 1.5f, 0.25f}, b[2] = {0.1f, -0.2f};
    s.x = ir_tensor_new(g, "x", IR_F32, 4, xd);
    s.x->flags |= IR_TENSOR_INPUT;
    s.c = ir_tensor_new(g, "c", IR_F32, 4, xd);
    s.a = ir_tensor_new(g, "a", IR_F32, 4, xd);
    s.sg = ir_tensor_new(g, "sg", IR_F32, 4, xd);
    s.p = ir_tensor_new(g, "p", IR_F32, 4, pd);
    s.q = ir_tensor_new(g, "q", IR_F32, 4, pd);
    s.y = ir_tensor_new(g, "y", IR_F32, 4, yd);
    s.y->flags |= IR_TENSOR_OUTPUT;
    ir_tensor *cin[3] = {s.x, ir_const_new(g, "w", IR_F32, 4, wd, w), ir_const_new(g, "b", IR_F32, 1, bd, b)};
    ir_node *conv = ir_node_new(g, IR_OP_CONV, "conv", 3, cin, 1, &s.c);
    conv->act.kind = IR_ACT_RELU;
    ir_node_new(g, IR_OP_ADD, "add", 2, (ir_tensor *[]){s.c, s.x}, 1, &s.a);
    ir_node_new(g, IR_OP_SIGMOID, "sig", 1, &s.a, 1, &s.sg);
    int64_t k[2] = {2, 2};
    ir_node *mp = ir_node_new(g, IR_OP_MAX_POOL, "mpool", 1, &s.c, 1, &s.p);
    ir_node *ap = ir_node_new(g, IR_OP_AVERAGE_POOL, "apool", 1, &s.sg, 1, &s.q);
    for (int i = 0; i < 2; i++) {
        ir_node *n = i ? ap : mp;
        ir_set_ints(g, n, "kernel_shape", 2, k);
        ir_set_ints(g, n, "strides", 2, k);
    }
    ir_node *cat = ir_node_new(g, IR_OP_CONCAT, "cat", 2, (ir_tensor *[]){s.p, s.q}, 1, &s.y);
    ir_set_int(g, cat, "axis", 1);
    tg_set_io(g, 1, &s.x, s.y);
    return s;
}

static void ranges(const a4_graph *s, float *lo, float *hi)
{
    for (int i = 0; i < N_T; i++)
        lo[i] = hi[i] = 0.0f;
    lo[s->x->id] = -1.0f, hi[s->x->id] = 1.0f;
    hi[s->c->id] = 4.0f;
    lo[s->a->id] = -1.0f, hi[s->a->id] = 5.0f;
    hi[s->sg->id] = 1.0f;
    hi[s->q->id] = 1.0f;
    hi[s->y->id] = 2.0f; /* below p's [0, 4]: p is requantized into the concat */
}

/* int4 graph input and output too (the default keeps those two int8) */
static const q_options a4_opts = {.wbits = 8, .abits = 4, .target_file = "targets/edge-v1-wide.yaml",
                                  .target_int4_acts = true, .int4_io = true};

static const ir_node *node_named(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead && !strcmp(g->nodes[i]->name, name))
            return g->nodes[i];
    cr_assert_fail("no node '%s'", name);
    return NULL;
}

/* The scale and zero point asymmetric 4-bit quantization of [lo, hi] gives:
 * 15 steps over the range (which contains 0), real 0 on an integer code. */
static void assert_a4_params(const ir_tensor *t, float lo, float hi)
{
    cr_assert(t->flags & IR_TENSOR_INT4_CODES, "%s: not marked int4", t->name);
    cr_assert_eq(t->dtype, IR_I8, "%s: int4 codes are held one per byte", t->name);
    float s = t->quant->scale[0];
    int32_t zp = t->quant->zero_point[0];
    cr_assert_float_eq(s, (hi - lo) / 15.0f, 1e-7, "%s: scale %g", t->name, (double)s);
    cr_assert(zp >= -8 && zp <= 7, "%s: zero point %d", t->name, zp);
    /* the code range covers [lo, hi] within half a step */
    cr_assert_leq(s * (float)(-8 - zp), lo + 0.5f * s + 1e-6f, "%s", t->name);
    cr_assert_geq(s * (float)(7 - zp), hi - 0.5f * s - 1e-6f, "%s", t->name);
}

Test(quantize_a4, scales_flags_and_clamps)
{
    a4_graph s = build();
    float lo[N_T], hi[N_T];
    ranges(&s, lo, hi);
    npu_err e;
    cr_assert_eq(q_quantize(s.g, lo, hi, &a4_opts, &e), NPU_OK, "%s", e.msg);
    ir_graph *g = s.g;

    /* the input: QuantizeLinear (int8 saturation) then a clamp to -8..7 */
    const ir_node *conv = node_named(g, "conv");
    const ir_tensor *xq = conv->inputs[0];
    assert_a4_params(xq, -1.0f, 1.0f);
    const ir_node *clamp = xq->producer;
    cr_assert_eq(clamp->op, IR_OP_REQUANTIZE);
    const ir_tensor *wide = clamp->inputs[0];
    cr_assert_eq(wide->producer->op, IR_OP_QUANTIZE_LINEAR);
    cr_assert_not(wide->flags & IR_TENSOR_INT4_CODES, "QuantizeLinear's output holds int8 codes");
    cr_assert(q_same_quant(wide->quant, xq->quant), "the clamp keeps the scale");
    nk_qrequant_params rq;
    cr_assert_eq(ref_qrequant_params(clamp, wide, xq, &rq, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(rq.act_min, -8);
    cr_assert_eq(rq.act_max, 7);

    /* conv + relu: [0, 4] -> zero point -8, the relu clamp is -8..7 */
    assert_a4_params(conv->outputs[0], 0.0f, 4.0f);
    cr_assert_eq(conv->outputs[0]->quant->zero_point[0], -8);
    nk_qconv2d_params cp;
    cr_assert_eq(ref_qconv_params(conv, &cp, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(cp.act_min, -8);
    cr_assert_eq(cp.act_max, 7);
    /* the bias is at in_scale * w_scale, as at 8 bits */
    const ir_tensor *bq = conv->inputs[2];
    double bs = (double)xq->quant->scale[0] * (double)conv->inputs[1]->quant->scale[0];
    cr_assert_eq(((int32_t *)bq->data)[0], (int32_t)lround(0.1 / bs));

    /* the residual add: own range, clamp -8..7 */
    const ir_node *add = node_named(g, "add");
    assert_a4_params(add->outputs[0], -1.0f, 5.0f);
    nk_qbinary_params bp;
    cr_assert_eq(ref_qbinary_params(add, &bp, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(bp.act_min, -8);
    cr_assert_eq(bp.act_max, 7);

    /* sigmoid: fixed output 1/16, zero point -8 ([0, 1) over 16 codes);
     * the table maps each int4 input code to its quantized sigmoid */
    const ir_node *sig = node_named(g, "sig");
    cr_assert_eq(sig->op, IR_OP_LUT);
    const ir_tensor *sq = sig->outputs[0];
    cr_assert(sq->flags & IR_TENSOR_INT4_CODES);
    cr_assert_float_eq(sq->quant->scale[0], 1.0f / 16.0f, 0);
    cr_assert_eq(sq->quant->zero_point[0], -8);
    const int8_t *table = sig->inputs[1]->data;
    const ir_quant *aq = sig->inputs[0]->quant;
    for (int i = 0; i < 256; i++)
        cr_assert(table[i] >= -8 && table[i] <= 7, "entry %d = %d", i, table[i]);
    for (int code = -8; code <= 7; code++) {
        float v = 1.0f / (1.0f + expf(-aq->scale[0] * (float)(code - aq->zero_point[0])));
        int want = (int)lrintf(v * 16.0f) - 8; /* v / (1/16) is exact; nearest, clamped */
        want = want > 7 ? 7 : want;
        cr_assert_leq(abs(table[code + 128] - want), 1, "code %d: %d, want about %d", code, table[code + 128],
                      want);
    }

    /* max pool inherits; the concat requantizes p into its own range */
    const ir_node *mp = node_named(g, "mpool");
    cr_assert(mp->outputs[0]->quant == mp->inputs[0]->quant);
    cr_assert(mp->outputs[0]->flags & IR_TENSOR_INT4_CODES);
    const ir_node *cat = node_named(g, "cat");
    assert_a4_params(cat->outputs[0], 0.0f, 2.0f);
    cr_assert_eq(cat->inputs[0]->producer->op, IR_OP_REQUANTIZE);
    cr_assert(cat->inputs[0]->flags & IR_TENSOR_INT4_CODES);

    /* every integer activation but QuantizeLinear's output holds int4 codes */
    for (int i = 0; i < g->n_tensors; i++) {
        const ir_tensor *t = g->tensors[i];
        if (t->dtype == IR_I8 && !t->data && t != wide)
            cr_assert(t->flags & IR_TENSOR_INT4_CODES, "%s", t->name);
    }
    /* the model's input and output stay float */
    cr_assert_eq(g->inputs[0]->dtype, IR_F32);
    cr_assert_eq(g->outputs[0]->dtype, IR_F32);
    ir_graph_free(g);
}

Test(quantize_a4, graph_input_and_output_stay_int8_by_default)
{
    a4_graph s = build();
    float lo[N_T], hi[N_T];
    ranges(&s, lo, hi);
    q_options o = a4_opts;
    o.int4_io = false;
    npu_err e;
    cr_assert_eq(q_quantize(s.g, lo, hi, &o, &e), NPU_OK, "%s", e.msg);
    /* the input: QuantizeLinear straight into the conv, 8-bit scale */
    const ir_node *conv = node_named(s.g, "conv");
    const ir_tensor *xq = conv->inputs[0];
    cr_assert_eq(xq->producer->op, IR_OP_QUANTIZE_LINEAR);
    cr_assert_not(xq->flags & IR_TENSOR_INT4_CODES);
    cr_assert_float_eq(xq->quant->scale[0], 2.0f / 255.0f, 1e-9);
    /* inside: int4 */
    assert_a4_params(conv->outputs[0], 0.0f, 4.0f);
    /* the output (the concat's) at 8 bits: [0, 2] over 255 steps, clamp -128..127 */
    const ir_node *cat = node_named(s.g, "cat");
    const ir_tensor *yq = cat->outputs[0];
    cr_assert_not(yq->flags & IR_TENSOR_INT4_CODES);
    cr_assert_float_eq(yq->quant->scale[0], 2.0f / 255.0f, 1e-9);
    nk_qrequant_params rq;
    cr_assert_eq(ref_qrequant_params(cat, cat->inputs[1], yq, &rq, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(rq.act_min, -128);
    cr_assert_eq(rq.act_max, 127);
    ir_graph_free(s.g);
}

Test(quantize_a4, ops_that_inherit_keep_their_inputs_codes)
{
    /* x -> MaxPool -> p -> Conv -> y: the pool of the int8 graph input
     * stays int8 (its scale is the input's), the conv's output is int4 */
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t xd[4] = {1, 1, 4, 4}, pd[4] = {1, 1, 2, 2}, wd[4] = {1, 1, 1, 1}, k[2] = {2, 2};
    ir_tensor *x = ir_tensor_new(g, "x", IR_F32, 4, xd), *p = ir_tensor_new(g, "p", IR_F32, 4, pd);
    x->flags |= IR_TENSOR_INPUT;
    ir_tensor *y = ir_tensor_new(g, "y", IR_F32, 4, pd), *h = ir_tensor_new(g, "h", IR_F32, 4, pd);
    ir_node *mp = ir_node_new(g, IR_OP_MAX_POOL, "mpool", 1, &x, 1, &p);
    ir_set_ints(g, mp, "kernel_shape", 2, k);
    ir_set_ints(g, mp, "strides", 2, k);
    ir_tensor *cin[2] = {p, ir_const_new(g, "w", IR_F32, 4, wd, (float[]){0.5f})};
    ir_node_new(g, IR_OP_CONV, "conv", 2, cin, 1, &h);
    ir_node *mp2 = ir_node_new(g, IR_OP_MAX_POOL, "mpool2", 1, &h, 1, &y);
    int64_t one[2] = {1, 1};
    ir_set_ints(g, mp2, "kernel_shape", 2, one);
    tg_set_io(g, 1, &x, y);
    float lo[8] = {0}, hi[8] = {0};
    lo[x->id] = lo[p->id] = -1.0f, hi[x->id] = hi[p->id] = 1.0f;
    lo[h->id] = lo[y->id] = -0.5f, hi[h->id] = hi[y->id] = 0.5f;
    q_options o = a4_opts;
    o.int4_io = false;
    npu_err e;
    cr_assert_eq(q_quantize(g, lo, hi, &o, &e), NPU_OK, "%s", e.msg);
    const ir_node *pool = node_named(g, "mpool"), *pool2 = node_named(g, "mpool2");
    cr_assert_not(pool->outputs[0]->flags & IR_TENSOR_INT4_CODES, "the int8 input's pool holds int8 codes");
    nk_qpool_params pp;
    cr_assert_eq(ref_qpool_params(pool, &pp, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(pp.act_max, 127, "no int4 clamp on an int8 scale");
    cr_assert(node_named(g, "conv")->outputs[0]->flags & IR_TENSOR_INT4_CODES);
    cr_assert(pool2->outputs[0]->flags & IR_TENSOR_INT4_CODES, "the graph output inherits int4 codes");
    cr_assert_eq(ref_qpool_params(pool2, &pp, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(pp.act_max, 7);
    ir_graph_free(g);
}

typedef struct code_watch {
    int n_int4, bad;
} code_watch;

static void watch(void *ud, const ir_node *n, const ir_tensor *t, const void *data)
{
    (void)n;
    code_watch *w = ud;
    if (t->dtype != IR_I8 || !(t->flags & IR_TENSOR_INT4_CODES))
        return;
    w->n_int4++;
    const int8_t *v = data;
    for (int64_t i = 0; i < ir_tensor_numel(t); i++)
        w->bad += v[i] < -8 || v[i] > 7;
}

Test(quantize_a4, codes_stay_within_int4_beyond_the_calibrated_range)
{
    a4_graph s = build();
    float lo[N_T], hi[N_T];
    ranges(&s, lo, hi);
    npu_err e;
    cr_assert_eq(q_quantize(s.g, lo, hi, &a4_opts, &e), NPU_OK, "%s", e.msg);
    ref_ctx *rc = ref_ctx_new(s.g, npu_alloc_default(), &e);
    cr_assert_not_null(rc, "%s", e.msg);
    code_watch w = {0};
    ref_ctx_set_observer(rc, watch, &w);
    float x[32], y[16];
    uint32_t seed = 7;
    for (int rep = 0; rep < 20; rep++) {
        for (int i = 0; i < 32; i++) { /* three times the calibrated [-1, 1] */
            seed = seed * 1664525u + 1013904223u;
            x[i] = 6.0f * ((float)(seed >> 8) / 16777216.0f) - 3.0f;
        }
        const void *in[1] = {x};
        void *out[1] = {y};
        cr_assert_eq(ref_ctx_run(rc, in, out, &e), NPU_OK, "%s", e.msg);
    }
    cr_assert_geq(w.n_int4, 20 * 8, "every int4 activation observed (%d)", w.n_int4);
    cr_assert_eq(w.bad, 0, "%d codes outside -8..7", w.bad);
    ref_ctx_free(rc);
    ir_graph_free(s.g);
}

Test(quantize_a4, eight_bit_activations_are_not_marked)
{
    a4_graph s = build();
    float lo[N_T], hi[N_T];
    ranges(&s, lo, hi);
    q_options o = {.wbits = 8, .abits = 8};
    npu_err e;
    cr_assert_eq(q_quantize(s.g, lo, hi, &o, &e), NPU_OK, "%s", e.msg);
    for (int i = 0; i < s.g->n_tensors; i++)
        cr_assert_not(s.g->tensors[i]->flags & IR_TENSOR_INT4_CODES, "%s", s.g->tensors[i]->name);
    nk_qconv2d_params cp;
    cr_assert_eq(ref_qconv_params(node_named(s.g, "conv"), &cp, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(cp.act_max, 127);
    ir_graph_free(s.g);
}

Test(quantize_a4, rejected_where_the_target_declares_none)
{
    tgt_target *t8, *t4;
    npu_err e;
    cr_assert_eq(tgt_load("targets/edge-v1.yaml", NULL, &t8, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(tgt_load("targets/edge-v1-wide.yaml", NULL, &t4, &e), NPU_OK, "%s", e.msg);
    cr_assert_not(t8->act_dtypes & TGT_DT_INT4, "edge-v1: int8 activations only");
    cr_assert(t4->act_dtypes & TGT_DT_INT4, "edge-v1-wide declares int4 activations");

    a4_graph s = build();
    float lo[N_T], hi[N_T];
    ranges(&s, lo, hi);
    q_options o = {.wbits = 4, .abits = 4, .target_file = t8->file, .target_int4_acts = false};
    cr_assert_eq(q_quantize(s.g, lo, hi, &o, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "targets/edge-v1.yaml") && strstr(e.msg, "--abits 4") && strstr(e.msg, "int4"), "%s",
              e.msg);
    /* q_ptq refuses before calibrating (the directory is never opened) */
    q_ptq_options po = {.calib_dir = "/nonexistent", .range = {CAL_MSE, 99.99, 4}, .q = o};
    cr_assert_eq(q_ptq(s.g, &po, NULL, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "targets/edge-v1.yaml"), "%s", e.msg);
    /* other widths are refused whatever the target */
    q_options o3 = {.wbits = 8, .abits = 3, .target_int4_acts = true};
    cr_assert_eq(q_check_bits(&o3, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "--abits 3"), "%s", e.msg);
    q_options ok = {.wbits = 4, .abits = 4, .target_file = t4->file, .target_int4_acts = true};
    cr_assert_eq(q_check_bits(&ok, &e), NPU_OK, "%s", e.msg);
    ir_graph_free(s.g);
    tgt_free(t8);
    tgt_free(t4);
}
