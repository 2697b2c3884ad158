/* Boundaries between float and integer parts of the quantized graph. */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "quantize/quantize_internal.h"

npu_status q_new_int_tensor_bits(q_ctx *c, const ir_tensor *like, ir_quant *q, int bits, ir_tensor **out)
{
    char name[512];
    ir_tensor *t = NULL;
    for (int k = 0; !t && k < 100; k++) {
        snprintf(name, sizeof name, k ? "%s:q%d" : "%s:q", like->name, k);
        if (!ir_graph_find(c->g, name))
            t = ir_tensor_new(c->g, name, bits == 16 ? IR_I16 : IR_I8, like->rank, like->dims);
    }
    if (!t)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory (or names) quantizing '%s'", like->name);
    t->quant = q;
    if (bits == 4)
        t->flags |= IR_TENSOR_INT4_CODES;
    *out = t;
    return NPU_OK;
}

npu_status q_new_int_tensor(q_ctx *c, const ir_tensor *like, ir_quant *q, ir_tensor **out)
{
    return q_new_int_tensor_bits(c, like, q, q_act_bits(c, like), out);
}

/* The bits of an integer activation. */
static int int_bits(const ir_tensor *t)
{
    return t->dtype == IR_I16 ? 16 : (t->flags & IR_TENSOR_INT4_CODES) ? 4 : 8;
}

static ir_tensor *scalar_const(ir_graph *g, ir_dtype dt, const void *v)
{
    return ir_const_new(g, NULL, dt, 0, NULL, v);
}

/* A boundary node (QuantizeLinear / DequantizeLinear) with its scale and
 * zero point as constant inputs, ONNX style, so --emit qdq writes it as is. */
static npu_status boundary(q_ctx *c, ir_op op, ir_tensor *in, ir_tensor *out, const ir_quant *q, ir_unit unit)
{
    float s = q->scale[0];
    int8_t zp = (int8_t)q->zero_point[0];
    int16_t zp16 = (int16_t)q->zero_point[0]; /* ONNX: the zero point has the integer side's type */
    bool i16 = (op == IR_OP_QUANTIZE_LINEAR ? out : in)->dtype == IR_I16;
    ir_tensor *ins[3] = {in, scalar_const(c->g, IR_F32, &s),
                         i16 ? scalar_const(c->g, IR_I16, &zp16) : scalar_const(c->g, IR_I8, &zp)};
    if (!ins[1] || !ins[2])
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    char name[512];
    snprintf(name, sizeof name, "%s:%s", op == IR_OP_QUANTIZE_LINEAR ? "quantize" : "dequantize", out->name);
    ir_node *n = ir_node_new(c->g, op, ir_graph_find(c->g, name) ? NULL : name, 3, ins, 1, &out);
    if (!n)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    n->unit = unit;
    n->unit_reason = unit == IR_UNIT_HOST ? "float boundary" : NULL;
    return NPU_OK;
}

npu_status q_int_version(q_ctx *c, ir_tensor *x, ir_unit unit, ir_tensor **out)
{
    (void)unit;
    if (x->id < c->n_orig_tensors && c->qver[x->id]) {
        *out = c->qver[x->id];
        return NPU_OK;
    }
    if (x->id >= c->n_orig_tensors || x->dtype != IR_F32)
        return npu_fail(c->err, NPU_EINTERNAL, "quantize: '%s' has no integer version", x->name);
    float s;
    int32_t zp;
    q_params_from_range(c->lo[x->id], c->hi[x->id], q_act_bits(c, x), &s, &zp);
    ir_quant *q = q_quant_tensor(c->g, s, zp);
    if (!q)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    npu_status st = q_new_int_tensor(c, x, q, out);
    if (st == NPU_OK && q_act_bits(c, x) == 4) {
        /* QuantizeLinear saturates to int8: an npu.Requantize by the identity
         * clamps the codes to int4 (its input is int8 on the 4-bit scale) */
        ir_tensor *wide;
        if ((st = q_new_int_tensor(c, x, q, &wide)) == NPU_OK) {
            wide->flags &= ~(unsigned)IR_TENSOR_INT4_CODES;
            st = boundary(c, IR_OP_QUANTIZE_LINEAR, x, wide, q, IR_UNIT_HOST);
        }
        char name[512];
        snprintf(name, sizeof name, "%s:clamp4", x->name);
        ir_node *r = st == NPU_OK ? ir_node_new(c->g, IR_OP_REQUANTIZE, ir_graph_find(c->g, name) ? NULL : name, 1,
                                                &wide, 1, out)
                                  : NULL;
        if (st == NPU_OK && !r)
            st = npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    } else if (st == NPU_OK) {
        st = boundary(c, IR_OP_QUANTIZE_LINEAR, x, *out, q, IR_UNIT_HOST);
    }
    if (st == NPU_OK)
        c->qver[x->id] = *out;
    return st;
}

npu_status q_float_version(q_ctx *c, ir_tensor *x, ir_unit unit)
{
    if (x->producer || x->data || (x->flags & IR_TENSOR_INPUT))
        return NPU_OK; /* already float */
    ir_tensor *xq = x->id < c->n_orig_tensors ? c->qver[x->id] : NULL;
    if (!xq)
        return npu_fail(c->err, NPU_EINTERNAL, "quantize: '%s' has neither a float nor an integer producer",
                        x->name);
    return boundary(c, IR_OP_DEQUANTIZE_LINEAR, xq, x, xq->quant, unit);
}

npu_status q_make_float_island(q_ctx *c, ir_node *n)
{
    for (int i = 0; i < n->n_inputs; i++) {
        ir_tensor *x = n->inputs[i];
        if (!x)
            continue;
        npu_status st = q_float_version(c, x, IR_UNIT_HOST);
        if (st != NPU_OK)
            return st;
    }
    if (n->unit == IR_UNIT_NPU) {
        n->unit = IR_UNIT_HOST;
        n->unit_reason = "no integer form of this op: runs in float";
    }
    return NPU_OK;
}

/* A Concat's npu.Requantize of an int8 conv's output (squeezenet's fire
 * modules) as an npu.Lut: a function of the one int8 code, so its 256
 * entries, the requantization evaluated by the reference on every code, give
 * the same outputs; the tiler then runs it in the conv's output stage
 * (epi_lut, docs/tiler.md) instead of a pass over DRAM (q_quantize puts
 * it right after the conv). */
static npu_status requant_as_lut(q_ctx *c, ir_node *r)
{
    ir_tensor *x = r->inputs[0], *y = r->outputs[0];
    const ir_node *p = x->producer;
    if (!p || p->op != IR_OP_CONV || ir_use_count(c->g, x) != 1 || (x->flags & IR_TENSOR_OUTPUT) ||
        x->dtype != IR_I8 || y->dtype != IR_I8 || ((x->flags | y->flags) & IR_TENSOR_INT4_CODES) || !x->quant ||
        !y->quant || x->quant->count != 1 || y->quant->count != 1)
        return NPU_OK;
    int64_t d = 256;
    int8_t codes[256], table[256];
    for (int q = 0; q < 256; q++)
        codes[q] = (int8_t)(q - 128);
    ir_tensor *in = ir_const_new(c->g, NULL, IR_I8, 1, &d, codes);
    ir_tensor *out = ir_tensor_new(c->g, NULL, IR_I8, 1, &d);
    ir_node *probe = in && out ? ir_node_new(c->g, IR_OP_REQUANTIZE, NULL, 1, &in, 1, &out) : NULL;
    if (!probe)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    in->quant = x->quant;
    out->quant = y->quant;
    probe->dead = true;
    npu_status st = ref_eval_node(c->g, probe, c->err);
    if (st != NPU_OK)
        return npu_err_prefix(c->err, "building the lookup table of '%s'", r->name);
    memcpy(table, out->data, sizeof table);
    ir_tensor *tt = ir_const_new(c->g, NULL, IR_I8, 1, &d, table);
    ir_tensor **ni = npu_arena_alloc(c->g->arena, 2 * sizeof *ni);
    if (!tt || !ni)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    ni[0] = x;
    ni[1] = tt;
    r->inputs = ni;
    r->n_inputs = 2;
    r->op = IR_OP_LUT;
    return NPU_OK;
}

npu_status q_concat_inputs(q_ctx *c, ir_node *n)
{
    ir_quant *yq = n->outputs[0]->quant;
    for (int i = 0; i < n->n_inputs; i++) {
        ir_tensor *x = n->inputs[i];
        if (!x || (q_same_quant(x->quant, yq) &&
                   (x->flags & IR_TENSOR_INT4_CODES) == (n->outputs[0]->flags & IR_TENSOR_INT4_CODES)))
            continue;
        ir_tensor *xr;
        npu_status st = q_new_int_tensor_bits(c, x, yq, int_bits(n->outputs[0]), &xr);
        if (st != NPU_OK)
            return st;
        char name[512];
        snprintf(name, sizeof name, "%s:requant%d", n->name, i);
        ir_node *r = ir_node_new(c->g, IR_OP_REQUANTIZE, ir_graph_find(c->g, name) ? NULL : name, 1, &x, 1, &xr);
        if (!r)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        r->unit = n->unit;
        r->unit_reason = n->unit_reason;
        n->inputs[i] = xr;
        if ((st = requant_as_lut(c, r)) != NPU_OK)
            return st;
    }
    return NPU_OK;
}

npu_status q_binary_consts(q_ctx *c, ir_node *n)
{
    for (int i = 0; i < n->n_inputs; i++) {
        ir_tensor *k = n->inputs[i];
        if (!k || !k->data || k->dtype != IR_F32)
            continue;
        const float *v = k->data;
        int64_t cnt = ir_tensor_numel(k);
        float lo = 0, hi = 0;
        for (int64_t j = 0; j < cnt; j++) {
            lo = fminf(lo, v[j]);
            hi = fmaxf(hi, v[j]);
        }
        float s;
        int32_t zp;
        bool a16 = n->outputs[0]->dtype == IR_I16; /* the operands of an int16 op are int16 too */
        q_params_from_range(lo, hi, a16 ? 16 : 8, &s, &zp);
        ir_quant *q = q_quant_tensor(c->g, s, zp);
        ir_tensor *kq = q ? ir_const_new(c->g, NULL, a16 ? IR_I16 : IR_I8, k->rank, k->dims, NULL) : NULL;
        if (!kq)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        if (a16)
            nk_quantize_f32_i16(v, kq->data, (size_t)cnt, s, zp);
        else
            nk_quantize_f32_i8(v, kq->data, (size_t)cnt, s, zp);
        kq->quant = q;
        n->inputs[i] = kq;
    }
    return NPU_OK;
}
