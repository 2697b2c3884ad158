/* Host-step records of the quantized kernels: every parameter from
 * src/numerics/numerics.h, so the runtime is bit-exact with npuref. */
#include "emit/hostops_internal.h"

#include <string.h>

#include "numerics/numerics.h"

static void to_rec_shape(const nk_shape *s, npurt_p_shape *r)
{
    memset(r, 0, sizeof *r);
    r->rank = s->rank;
    for (int i = 0; i < s->rank; i++)
        r->dims[i] = s->dims[i];
}

static npu_status put_mults(emit_hop *b, const ir_tensor *x, const ir_tensor *w, const ir_tensor *y)
{
    int c = w->quant->count;
    size_t bytes = sizeof(int32_t) * (size_t)c;
    int32_t *m = npu_malloc(b->rb.alloc, 2 * bytes);
    if (!m)
        return npu_fail(b->err, NPU_EINTERNAL, "out of memory for %d multipliers", c);
    npu_status st = ref_qmults(x, w, y, m, m + c, b->err);
    if (st == NPU_OK)
        st = emit_hop_put(b, m, 2 * bytes);
    else
        b->why = emit_hop_why_params;
    npu_free(b->rb.alloc, m, 2 * bytes);
    return st;
}

static npu_status params_failed(emit_hop *b, npu_status st)
{
    b->why = emit_hop_why_params;
    return st;
}

/* Conv and FC: slots x, w, bias (or none), y; the record; its multipliers. */
static npu_status weighted(emit_hop *b, npurt_kernel k, const void *rec, size_t size)
{
    const ir_node *n = b->n;
    const ir_tensor *bias = n->n_inputs > 2 ? n->inputs[2] : NULL;
    const ir_tensor *t[4] = {n->inputs[0], n->inputs[1], bias, n->outputs[0]};
    if (!t[1]->data || (bias && !bias->data))
        return emit_hop_unsupported(b, "weights and bias must be constants");
    npu_status st;
    if ((st = emit_hop_begin(b, k, 3, 1, t)) || (st = emit_hop_put(b, rec, size)))
        return st;
    return put_mults(b, t[0], t[1], t[3]);
}

npu_status emit_hop_qconv(emit_hop *b)
{
    nk_qconv2d_params p;
    npu_status st = ref_qconv_params(b->n, &p, b->err);
    if (st != NPU_OK)
        return params_failed(b, st);
    npurt_p_qconv r = {p.n, p.c_in, p.h_in, p.w_in, p.c_out, p.h_out, p.w_out, p.k_h, p.k_w,
                       p.stride_h, p.stride_w, p.dil_h, p.dil_w,
                       p.pad_top, p.pad_left, p.pad_bottom, p.pad_right,
                       p.groups, p.in_zp, p.out_zp, p.act_min, p.act_max, (int32_t)p.w_format,
                       b->n->inputs[1]->quant->count};
    return weighted(b, NPURT_K_QCONV, &r, sizeof r);
}

npu_status emit_hop_qfc(emit_hop *b)
{
    ref_qfc_setup f;
    npu_status st = ref_qfc_params(b->n, &f, b->err);
    if (st != NPU_OK)
        return params_failed(b, st);
    const nk_qfc_params *p = &f.p;
    const ir_tensor *w = b->n->inputs[1];
    npurt_p_qfc r = {p->batch, p->in_features, p->out_features, p->in_zp, p->out_zp, p->act_min, p->act_max,
                     (int32_t)p->w_format, f.transpose, w->dtype == IR_I4, w->quant->count};
    return weighted(b, NPURT_K_QFC, &r, sizeof r);
}

npu_status emit_hop_qbmm(emit_hop *b)
{
    const ir_node *n = b->n;
    nk_qbmm_params p;
    npu_status st = ref_qbmm_params(n, &p, b->err);
    if (st != NPU_OK)
        return params_failed(b, st);
    const ir_tensor *t[3] = {n->inputs[0], n->inputs[1], n->outputs[0]};
    npurt_p_qbmm r = {p.batch, p.a_batch, p.b_batch, p.m, p.k, p.n, p.a_zp, p.b_zp, p.out_zp,
                      p.act_min, p.act_max, p.mult, p.shift};
    if ((st = emit_hop_begin(b, NPURT_K_QBMM, 2, 1, t)) == NPU_OK)
        st = emit_hop_put(b, &r, sizeof r);
    return st;
}

npu_status emit_hop_qpool(emit_hop *b, npurt_kernel k)
{
    const ir_node *n = b->n;
    nk_qpool_params p;
    npu_status st = ref_qpool_params(n, &p, b->err);
    if (st != NPU_OK)
        return params_failed(b, st);
    const ir_tensor *t[2] = {n->inputs[0], n->outputs[0]};
    npurt_p_qpool r = {p.n, p.c, p.h_in, p.w_in, p.h_out, p.w_out, p.k_h, p.k_w, p.stride_h, p.stride_w,
                       p.dil_h, p.dil_w, p.pad_top, p.pad_left, p.pad_bottom, p.pad_right,
                       p.count_include_pad, p.in_zp, p.out_zp, p.mult, p.shift, p.act_min, p.act_max};
    if ((st = emit_hop_begin(b, k, 1, 1, t)) == NPU_OK)
        st = emit_hop_put(b, &r, sizeof r);
    return st;
}

npu_status emit_hop_qbinary(emit_hop *b)
{
    const ir_node *n = b->n;
    nk_qbinary_params p;
    npu_status st = ref_qbinary_params(n, &p, b->err);
    if (st != NPU_OK)
        return params_failed(b, st);
    const ir_tensor *t[3] = {n->inputs[0], n->inputs[1], n->outputs[0]};
    npurt_p_qbinary r;
    memset(&r, 0, sizeof r);
    r.op = (int32_t)p.op;
    to_rec_shape(&p.a_shape, &r.a_shape);
    to_rec_shape(&p.b_shape, &r.b_shape);
    to_rec_shape(&p.out_shape, &r.out_shape);
    r.a_zp = p.a_zp, r.b_zp = p.b_zp, r.out_zp = p.out_zp, r.left_shift = p.left_shift;
    r.a_mult = p.a_mult, r.a_shift = p.a_shift, r.b_mult = p.b_mult, r.b_shift = p.b_shift;
    r.out_mult = p.out_mult, r.out_shift = p.out_shift, r.act_min = p.act_min, r.act_max = p.act_max;
    if ((st = emit_hop_begin(b, NPURT_K_QBINARY, 2, 1, t)) == NPU_OK)
        st = emit_hop_put(b, &r, sizeof r);
    return st;
}

npu_status emit_hop_qrequant(emit_hop *b)
{
    const ir_node *n = b->n;
    const ir_tensor *t[2] = {n->inputs[0], n->outputs[0]};
    nk_qrequant_params p;
    npu_status st = ref_qrequant_params(n, t[0], t[1], &p, b->err);
    if (st != NPU_OK)
        return params_failed(b, st);
    int64_t count = ir_tensor_numel(t[1]);
    if (ir_tensor_numel(t[0]) != count || !emit_hop_fits_i32(count))
        return emit_hop_unsupported(b, "npu.Requantize changes the element count");
    npurt_p_qrequant r = {(int32_t)count, p.in_zp, p.out_zp, p.mult, p.shift, p.act_min, p.act_max};
    if ((st = emit_hop_begin(b, NPURT_K_QREQUANT, 1, 1, t)) == NPU_OK)
        st = emit_hop_put(b, &r, sizeof r);
    return st;
}

npu_status emit_hop_qlut(emit_hop *b)
{
    const ir_node *n = b->n;
    const ir_tensor *x = n->inputs[0], *tab = n->n_inputs > 1 ? n->inputs[1] : NULL, *y = n->outputs[0];
    int64_t count = ir_tensor_numel(y);
    bool a16 = x->dtype == IR_I16; /* A16W8: the interpolated 513-entry int16 table */
    if (x->dtype != (a16 ? IR_I16 : IR_I8) || y->dtype != x->dtype || !tab || tab->dtype != x->dtype ||
        ir_tensor_numel(tab) != (a16 ? NK_LUT16_SIZE : 256) || ir_tensor_numel(x) != count ||
        !emit_hop_fits_i32(count))
        return emit_hop_unsupported(b, "npu.Lut needs int8 data and an int8 table of 256 entries "
                                       "(int16: an int16 table of 513)");
    const ir_tensor *t[3] = {x, tab, y};
    npurt_p_qlut r = {(int32_t)count};
    npu_status st = emit_hop_begin(b, NPURT_K_QLUT, 2, 1, t);
    return st == NPU_OK ? emit_hop_put(b, &r, sizeof r) : st;
}

/* As the reference's run_concat: rows of the output along the axis, each
 * input copied when its parameters equal the output's, else requantized. */
npu_status emit_hop_qconcat(emit_hop *b)
{
    const ir_node *n = b->n;
    const ir_tensor *y = n->outputs[0];
    int64_t axis = ir_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += y->rank;
    if (axis < 0 || axis >= y->rank || n->n_inputs < 1 || n->n_inputs > NPURT_REC_MAX_IO)
        return emit_hop_unsupported(b, "Concat axis or input count out of range");
    int64_t outer = 1, inner = 1, total = 0;
    for (int i = 0; i < axis; i++)
        outer *= y->dims[i];
    for (int i = (int)axis + 1; i < y->rank; i++)
        inner *= y->dims[i];
    const ir_tensor *t[NPURT_REC_MAX_IO + 1];
    for (int i = 0; i < n->n_inputs; i++) {
        const ir_tensor *x = n->inputs[i];
        if (!x || x->rank != y->rank)
            return emit_hop_unsupported(b, "Concat inputs must share the output's rank");
        total += x->dims[axis];
        t[i] = x;
    }
    t[n->n_inputs] = y;
    if (total != y->dims[axis] || !emit_hop_fits_i32(outer) || !emit_hop_fits_i32(total * inner))
        return emit_hop_unsupported(b, "Concat input sizes do not add up to the output");
    npurt_p_qconcat r = {(int32_t)outer, (int32_t)(total * inner)};
    npu_status st = emit_hop_begin(b, NPURT_K_QCONCAT, n->n_inputs, 1, t);
    if (st == NPU_OK)
        st = emit_hop_put(b, &r, sizeof r);
    for (int i = 0; st == NPU_OK && i < n->n_inputs; i++) {
        const ir_tensor *x = n->inputs[i];
        nk_qrequant_params p;
        if ((st = ref_qrequant_params(n, x, y, &p, b->err)) != NPU_OK)
            return params_failed(b, st);
        int32_t same = ref_qrequant_is_copy(x, y, &p);
        npurt_p_qconcat_in in = {(int32_t)(x->dims[axis] * inner), same, p.in_zp, p.out_zp, p.mult, p.shift,
                                 p.act_min, p.act_max};
        st = emit_hop_put(b, &in, sizeof in);
    }
    return st;
}
