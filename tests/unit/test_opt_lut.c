/* fuse_lut (src/opt/fuse_lut.c) on hand-built quantized graphs: SiLU as
 * Mul(y, Lut(y)), Lut(Lut(y)) and Add(y, y) become one npu.Lut of y whose
 * outputs equal the original nodes' for all 256 input codes; a node whose
 * inputs are not one tensor's functions stays. */
#include <criterion/criterion.h>
#include <math.h>

#include "opt/opt.h"
#include "ref/ref.h"
#include "tests/support/testgraph.h"

static ir_tensor *table(ir_graph *g, float in_scale, int in_zp, float out_scale, int out_zp)
{
    int8_t t[256];
    for (int i = 0; i < 256; i++) { /* a sigmoid table, as src/quantize/lut.c would build it */
        float x = in_scale * (float)(i - 128 - in_zp), y = 1.0f / (1.0f + expf(-x));
        long q = lrintf(y / out_scale) + out_zp;
        t[i] = (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
    }
    return tg_const(g, NULL, IR_I8, 1, (int64_t[]){256}, t);
}

/* All 256 codes through the graph (every input [256] gets them). */
static void run(const ir_graph *g, int8_t *out)
{
    int8_t in[256];
    for (int i = 0; i < 256; i++)
        in[i] = (int8_t)(i - 128);
    npu_err e = {0};
    ref_ctx *ctx = ref_ctx_new(g, npu_alloc_default(), &e);
    cr_assert_not_null(ctx, "%s", e.msg);
    const void *ins[2] = {in, in};
    void *outs[1] = {out};
    cr_assert_eq(ref_ctx_run(ctx, ins, outs, &e), NPU_OK, "%s", e.msg);
    ref_ctx_free(ctx);
}

static int live_nodes(const ir_graph *g, ir_op op)
{
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++)
        k += !g->nodes[i]->dead && (op == IR_OP_COUNT || g->nodes[i]->op == op);
    return k;
}

/* kind 0: Mul(y, Lut(y)); 1: Lut(Lut(y)); 2: Add(y, y); 3: Mul(y, Lut(other)) (no fusion) */
static ir_graph *build(int kind)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    cr_assert_not_null(g);
    int64_t d[1] = {256};
    ir_tensor *y = tg_act(g, "y", 1, d, 0.05f, 3), *s = tg_act(g, "s", 1, d, 1.0f / 256, -128);
    ir_tensor *z = tg_act(g, "z", 1, d, 0.04f, -20);
    ir_tensor *src = y;
    if (kind == 3) /* the Lut reads another input: z is no function of y alone */
        src = tg_act(g, "o", 1, d, 0.05f, 3);
    tg_node(g, IR_OP_LUT, 2, (ir_tensor *[]){src, table(g, 0.05f, 3, 1.0f / 256, -128)}, 1, (ir_tensor *[]){s});
    if (kind == 0 || kind == 3)
        tg_node(g, IR_OP_MUL, 2, (ir_tensor *[]){y, s}, 1, (ir_tensor *[]){z});
    else if (kind == 1)
        tg_node(g, IR_OP_LUT, 2, (ir_tensor *[]){s, table(g, 1.0f / 256, -128, 0.04f, -20)}, 1, (ir_tensor *[]){z});
    else
        tg_node(g, IR_OP_ADD, 2, (ir_tensor *[]){y, y}, 1, (ir_tensor *[]){z});
    tg_set_io(g, kind == 3 ? 2 : 1, (ir_tensor *[]){y, src}, z);
    return g;
}

static void check(int kind, bool fuses)
{
    ir_graph *g = build(kind);
    int8_t before[256], after[256];
    run(g, before);
    npu_err e = {0};
    bool changed = false;
    cr_assert_eq(opt_fuse_lut(g, &changed, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(changed, fuses, "kind %d", kind);
    cr_assert_eq(ir_graph_verify(g, &e), NPU_OK, "%s", e.msg);
    if (fuses) {
        cr_assert_eq(live_nodes(g, IR_OP_COUNT), 1, "kind %d: one node left", kind);
        cr_assert_eq(live_nodes(g, IR_OP_LUT), 1);
    }
    run(g, after);
    for (int i = 0; i < 256; i++)
        cr_assert_eq(before[i], after[i], "kind %d, code %d: %d before, %d after", kind, i - 128, before[i], after[i]);
    ir_graph_free(g);
}

Test(opt_lut, silu_becomes_one_lut)
{
    check(0, true);
}

Test(opt_lut, lut_of_lut_composes)
{
    check(1, true);
}

Test(opt_lut, binary_of_one_tensor)
{
    check(2, true);
}

Test(opt_lut, lut_of_another_tensor_stays)
{
    check(3, false);
}
