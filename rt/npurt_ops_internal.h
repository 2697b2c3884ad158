/* Internal to rt/npurt_ops*.c: records to kernel parameter structs. The
 * checker and the dispatcher both go through these, so what is checked is
 * what runs. */
#ifndef NPURT_OPS_INTERNAL_H
#define NPURT_OPS_INTERNAL_H

#include "kernels/kernels.h"
#include "rt/npurt_ops.h"

/* Shared by the record checks (rt/npurt_ops.c, rt/npurt_node.c). */
int npurt_fault_at(npurt_fault *f, uint32_t at, const char *msg, int32_t a, int32_t b);
/* A kernel's failure st as the fault of a run (both dispatchers,
 * rt/npurt_ops_run.c and rt/npurt_node_run.c); indexed: the kernel also
 * fails on an index out of range, which the message then names. */
int npurt_kernel_fault(npurt_fault *f, nk_status st, int indexed);
/* a * b saturating far above any tensor size (a wrapped product never matches one). */
uint64_t npurt_mul(uint64_t a, uint64_t b);
int npurt_nonneg(const int32_t *v, int n);
uint64_t npurt_shape_numel(const npurt_p_shape *s);
int npurt_shape_ok(const npurt_p_shape *s);
/* a and b broadcast (numpy) exactly to out. */
int npurt_broadcasts(const npurt_p_shape *a, const npurt_p_shape *b, const npurt_p_shape *out);

/* Bytes per element of a quantized activation: int16 (A16W8) or int8. The
 * kernels' byte offsets and the overlap check's concat slices use it. */
static inline uint32_t npurt_qact_bytes(uint32_t dtype)
{
    return dtype == NPURT_DT_I16 ? 2u : 1u;
}

/* The parameter block of a record (after its tensor slots). */
static inline const void *npurt_rec_params(const void *rec)
{
    const npurt_rec_header *h = rec;
    return npurt_rec_tensors(rec) + h->n_inputs + h->n_outputs;
}

static inline void npurt_to_shape(const npurt_p_shape *r, nk_shape *s)
{
    s->rank = r->rank;
    for (int i = 0; i < NK_MAX_RANK; i++)
        s->dims[i] = i < r->rank ? r->dims[i] : 1;
}

static inline nk_act npurt_to_act(const npurt_p_act *a)
{
    nk_act r = {(nk_act_kind)a->kind, a->lo, a->hi, a->alpha};
    return r;
}

/* mults: the record's int32 mult[n_mults] followed by shift[n_mults]. */
static inline void npurt_to_qconv(const npurt_p_qconv *r, nk_qconv2d_params *p)
{
    const int32_t *m = (const int32_t *)(r + 1);
    p->n = r->n, p->c_in = r->c_in, p->h_in = r->h_in, p->w_in = r->w_in;
    p->c_out = r->c_out, p->h_out = r->h_out, p->w_out = r->w_out;
    p->k_h = r->k_h, p->k_w = r->k_w, p->stride_h = r->stride_h, p->stride_w = r->stride_w;
    p->dil_h = r->dil_h, p->dil_w = r->dil_w;
    p->pad_top = r->pad_top, p->pad_left = r->pad_left, p->pad_bottom = r->pad_bottom,
    p->pad_right = r->pad_right;
    p->groups = r->groups, p->in_zp = r->in_zp, p->out_zp = r->out_zp;
    p->act_min = r->act_min, p->act_max = r->act_max;
    p->w_format = (nk_wformat)r->w_format;
    p->q.n = r->n_mults, p->q.mult = m, p->q.shift = m + r->n_mults;
}

static inline void npurt_to_qfc(const npurt_p_qfc *r, nk_qfc_params *p)
{
    const int32_t *m = (const int32_t *)(r + 1);
    p->batch = r->batch, p->in_features = r->in_features, p->out_features = r->out_features;
    p->in_zp = r->in_zp, p->out_zp = r->out_zp, p->act_min = r->act_min, p->act_max = r->act_max;
    p->w_format = (nk_wformat)r->w_format;
    p->q.n = r->n_mults, p->q.mult = m, p->q.shift = m + r->n_mults;
}

/* Scratch of a transposed QFC: the int8 [N, K] copy of the weights, rounded
 * to 16 bytes, before the kernel's own scratch. */
static inline size_t npurt_qfc_transposed_bytes(const npurt_p_qfc *r)
{
    size_t kn = (size_t)r->in_features * (size_t)r->out_features;
    return r->transpose ? (kn + 15) & ~(size_t)15 : 0;
}

static inline void npurt_to_qbmm(const npurt_p_qbmm *r, nk_qbmm_params *p)
{
    p->batch = r->batch, p->a_batch = r->a_batch, p->b_batch = r->b_batch;
    p->m = r->m, p->k = r->k, p->n = r->n;
    p->a_zp = r->a_zp, p->b_zp = r->b_zp, p->out_zp = r->out_zp;
    p->act_min = r->act_min, p->act_max = r->act_max, p->mult = r->mult, p->shift = r->shift;
}

static inline void npurt_to_qpool(const npurt_p_qpool *r, nk_qpool_params *p)
{
    p->n = r->n, p->c = r->c, p->h_in = r->h_in, p->w_in = r->w_in, p->h_out = r->h_out, p->w_out = r->w_out;
    p->k_h = r->k_h, p->k_w = r->k_w, p->stride_h = r->stride_h, p->stride_w = r->stride_w;
    p->dil_h = r->dil_h, p->dil_w = r->dil_w;
    p->pad_top = r->pad_top, p->pad_left = r->pad_left, p->pad_bottom = r->pad_bottom,
    p->pad_right = r->pad_right;
    p->count_include_pad = r->count_include_pad, p->in_zp = r->in_zp, p->out_zp = r->out_zp;
    p->mult = r->mult, p->shift = r->shift, p->act_min = r->act_min, p->act_max = r->act_max;
}

static inline void npurt_to_qbinary(const npurt_p_qbinary *r, nk_qbinary_params *p)
{
    p->op = (nk_qbin_op)r->op;
    npurt_to_shape(&r->a_shape, &p->a_shape);
    npurt_to_shape(&r->b_shape, &p->b_shape);
    npurt_to_shape(&r->out_shape, &p->out_shape);
    p->a_zp = r->a_zp, p->b_zp = r->b_zp, p->out_zp = r->out_zp, p->left_shift = r->left_shift;
    p->a_mult = r->a_mult, p->a_shift = r->a_shift, p->b_mult = r->b_mult, p->b_shift = r->b_shift;
    p->out_mult = r->out_mult, p->out_shift = r->out_shift, p->act_min = r->act_min, p->act_max = r->act_max;
}

static inline void npurt_to_qrequant(int32_t in_zp, int32_t out_zp, int32_t mult, int32_t shift,
                                     int32_t act_min, int32_t act_max, nk_qrequant_params *p)
{
    p->in_zp = in_zp, p->out_zp = out_zp, p->mult = mult, p->shift = shift;
    p->act_min = act_min, p->act_max = act_max;
}

/* Elements [start, start + n) of a Quantize (f32 -> i8/u8) or Dequantize
 * (i8/u8/i32 -> f32) with one scale and zero point: the QUANTIZE/DEQUANTIZE
 * records' and the run-time-scale NODE record's one conversion. */
static inline nk_status npurt_qdq_span(int quantize, uint32_t in_dt, uint32_t out_dt, const void *x, void *y,
                                       size_t start, size_t n, float s, int32_t z)
{
    if (quantize && out_dt == NPURT_DT_I16)
        return nk_quantize_f32_i16((const float *)x + start, (int16_t *)y + start, n, s, z);
    if (quantize)
        return out_dt == NPURT_DT_I8 ? nk_quantize_f32_i8((const float *)x + start, (int8_t *)y + start, n, s, z)
                                     : nk_quantize_f32_u8((const float *)x + start, (uint8_t *)y + start, n, s, z);
    if (in_dt == NPURT_DT_I16)
        return nk_dequantize_i16_f32((const int16_t *)x + start, (float *)y + start, n, s, z);
    if (in_dt == NPURT_DT_I8)
        return nk_dequantize_i8_f32((const int8_t *)x + start, (float *)y + start, n, s, z);
    if (in_dt == NPURT_DT_U8)
        return nk_dequantize_u8_f32((const uint8_t *)x + start, (float *)y + start, n, s, z);
    const int32_t *q = (const int32_t *)x + start; /* int32 (a bias-scale accumulator), as the reference */
    float *o = (float *)y + start;
    for (size_t i = 0; i < n; i++)
        o[i] = (float)((double)(q[i] - z) * s);
    return NK_OK;
}

#endif
