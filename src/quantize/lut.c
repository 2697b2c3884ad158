/* Unary ops on one int8 input become a 256-entry table. The table is
 * computed by running the op's own float kernel on the 256 dequantized
 * input codes, so the float and integer definitions cannot drift apart. */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "numerics/numerics.h"
#include "quantize/quantize_internal.h"

/* int16 input (A16W8): the 513 entries of the interpolated table and the
 * midpoints between them, x = in_scale * 64 k for k = -512..512. */
enum { LUT16_POINTS = 2 * NK_LUT16_SIZE - 1 };

npu_status q_lut(q_ctx *c, ir_node *n, const ir_tensor *y)
{
    ir_graph *g = c->g;
    const ir_quant *xq = n->inputs[0]->quant, *yq = n->outputs[0]->quant;
    bool a16 = n->inputs[0]->dtype == IR_I16;
    int64_t d = a16 ? LUT16_POINTS : 256;
    float codes[LUT16_POINTS];
    if (a16)
        for (int k = 0; k < LUT16_POINTS; k++)
            codes[k] = xq->scale[0] * 64.0f * (float)(k - NK_LUT16_SIZE + 1);
    else
        for (int q = -128; q < 128; q++)
            codes[q + 128] = xq->scale[0] * (float)(q - xq->zero_point[0]);
    ir_tensor *in = ir_const_new(g, NULL, IR_F32, 1, &d, codes);
    ir_tensor *out = ir_tensor_new(g, NULL, IR_F32, 1, &d);
    if (!in || !out)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    ir_tensor *ins[8] = {in};
    int nin = n->n_inputs < 8 ? n->n_inputs : 8;
    for (int i = 1; i < nin; i++)
        ins[i] = n->inputs[i];
    ir_node *probe = ir_node_new(g, n->op, NULL, nin, ins, 1, &out);
    if (!probe)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    probe->attrs = n->attrs;
    probe->n_attrs = n->n_attrs;
    probe->dead = true;
    npu_status st = ref_eval_node(g, probe, c->err);
    if (st != NPU_OK)
        return npu_err_prefix(c->err, "building the lookup table of '%s' for '%s'", n->name, y->name);
    /* every int8 index gets an entry (an int4 input only reaches -8..7);
     * values within the output's code range */
    int32_t qmin, qmax;
    ref_act_code_range(n->outputs[0], &qmin, &qmax);
    int8_t table[256];
    int16_t table16[NK_LUT16_SIZE];
    const float *f = out->data;
    ir_tensor *tt;
    if (a16) {
        int64_t d16 = NK_LUT16_SIZE;
        if (nk_lut_build_i16(table16, f, yq->scale[0]) != NK_OK)
            return npu_fail(c->err, NPU_EUSER, "building the int16 lookup table of '%s': bad output scale", n->name);
        tt = ir_const_new(g, NULL, IR_I16, 1, &d16, table16);
    } else {
        for (int i = 0; i < 256; i++)
            table[i] = (int8_t)nk_quantize_value(f[i], yq->scale[0], yq->zero_point[0], qmin, qmax);
        tt = ir_const_new(g, NULL, IR_I8, 1, &d, table);
    }
    ir_tensor **ni = npu_arena_alloc(g->arena, 2 * sizeof *ni);
    if (!tt || !ni)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    ni[0] = n->inputs[0];
    ni[1] = tt;
    n->inputs = ni;
    n->n_inputs = 2;
    n->op = IR_OP_LUT;
    n->attrs = NULL;
    n->n_attrs = 0;
    return NPU_OK;
}
