/* Host-step dispatch: a checked record (rt/npurt_ops.c) to its kernel call.
 * Each case does what the reference adapter of the same node does
 * (src/ref/ops_quant.c, ops_qdq.c, ops_elem.c), on parameters the compiler
 * derived with the same functions, so results are bit-exact with npuref. */
#include "rt/npurt_ops_internal.h"

#include <string.h>

static int run_qdq(uint32_t kernel, const npurt_p_qdq *p, uint32_t in_dt, uint32_t out_dt, const void *x,
                   void *y, npurt_fault *f)
{
    const float *scale = (const float *)(p + 1);
    const int32_t *zp = (const int32_t *)(scale + p->n_scales);
    size_t total = p->count, chunk = p->n_scales > 1 ? p->inner : total;
    uint32_t k = 0;
    for (size_t start = 0; start < total; start += chunk, k = (k + 1) % p->n_scales) {
        nk_status st =
            npurt_qdq_span(kernel == NPURT_K_QUANTIZE, in_dt, out_dt, x, y, start, chunk, scale[k], zp[k]);
        if (st != NK_OK)
            return npurt_kernel_fault(f, st, 0);
    }
    return 0;
}

static int run_qfc(const npurt_p_qfc *r, void *const *d, void *scratch, npurt_fault *f)
{
    nk_qfc_params p;
    npurt_to_qfc(r, &p);
    const void *w = d[1];
    char *rest = scratch;
    if (r->transpose) { /* [K, N] -> [N, K], unpacking int4 on the way, as the reference does */
        size_t K = (size_t)r->in_features, N = (size_t)r->out_features;
        int8_t *t = scratch;
        for (size_t k = 0; k < K; k++)
            for (size_t j = 0; j < N; j++)
                t[j * K + k] = r->w_i4 ? nk_int4_get(d[1], k * N + j) : ((const int8_t *)d[1])[k * N + j];
        w = t;
        rest += npurt_qfc_transposed_bytes(r);
    }
    nk_status st = nk_qfc(&p, d[0], w, d[2], d[3], rest);
    return st == NK_OK ? 0 : npurt_kernel_fault(f, st, 0);
}

static int run_qconcat(const npurt_rec_header *h, const npurt_p_qconcat *r, void *const *d, npurt_fault *f)
{
    const npurt_p_qconcat_in *in = (const npurt_p_qconcat_in *)(r + 1);
    int8_t *dst = d[h->n_inputs];
    size_t off = 0, row = (size_t)r->row;
    for (uint32_t i = 0; i < h->n_inputs; i++) {
        const int8_t *src = d[i];
        size_t chunk = (size_t)in[i].chunk;
        nk_qrequant_params p;
        npurt_to_qrequant(in[i].in_zp, in[i].out_zp, in[i].mult, in[i].shift, in[i].act_min, in[i].act_max,
                          &p);
        for (size_t o = 0; o < (size_t)r->outer; o++) {
            int8_t *to = dst + o * row + off;
            if (in[i].same)
                memcpy(to, src + o * chunk, chunk);
            else if (nk_qrequant(&p, src + o * chunk, to, chunk) != NK_OK)
                return npurt_kernel_fault(f, NK_EARG, 0);
        }
        off += chunk;
    }
    return 0;
}

static int run_unary(const npurt_p_unary *r, const float *x, float *y)
{
    nk_unary_params p = {(nk_unop)r->op, r->alpha, r->beta, r->lo, r->hi};
    nk_unary_f32(&p, x, y, r->count);
    nk_act a = npurt_to_act(&r->act);
    if (a.kind != NK_ACT_NONE) /* a fused activation after the op, as ref_apply_act */
        for (int32_t i = 0; i < r->count; i++)
            y[i] = nk_act_apply(a, y[i]);
    return 0;
}

int npurt_rec_run(const void *rec, void *const *d, const uint8_t *dtypes, void *scratch, npurt_fault *f)
{
    const npurt_rec_header *h = rec;
    const void *p = npurt_rec_params(rec);
    nk_status st = NK_OK;
    switch (h->kernel) {
    case NPURT_K_QUANTIZE:
    case NPURT_K_DEQUANTIZE: return run_qdq(h->kernel, p, dtypes[0], dtypes[1], d[0], d[1], f);
    case NPURT_K_QCONV: {
        nk_qconv2d_params k;
        npurt_to_qconv(p, &k);
        st = nk_qconv2d(&k, d[0], d[1], d[2], d[3], scratch);
        break;
    }
    case NPURT_K_QFC: return run_qfc(p, d, scratch, f);
    case NPURT_K_QBMM: {
        nk_qbmm_params k;
        npurt_to_qbmm(p, &k);
        st = nk_qbmm(&k, d[0], d[1], d[2], scratch);
        break;
    }
    case NPURT_K_QMAXPOOL:
    case NPURT_K_QAVGPOOL:
    case NPURT_K_QGLOBALAVGPOOL: {
        nk_qpool_params k;
        npurt_to_qpool(p, &k);
        st = h->kernel == NPURT_K_QMAXPOOL   ? nk_qmaxpool(&k, d[0], d[1])
             : h->kernel == NPURT_K_QAVGPOOL ? nk_qavgpool(&k, d[0], d[1])
                                             : nk_qglobal_avgpool(&k, d[0], d[1]);
        break;
    }
    case NPURT_K_QBINARY: {
        nk_qbinary_params k;
        npurt_to_qbinary(p, &k);
        st = nk_qbinary(&k, d[0], d[1], d[2]);
        break;
    }
    case NPURT_K_QREQUANT: {
        const npurt_p_qrequant *r = p;
        nk_qrequant_params k;
        npurt_to_qrequant(r->in_zp, r->out_zp, r->mult, r->shift, r->act_min, r->act_max, &k);
        st = nk_qrequant(&k, d[0], d[1], (size_t)r->count);
        break;
    }
    case NPURT_K_QLUT: nk_lut_apply_i8(d[1], d[0], d[2], (size_t)((const npurt_p_qlut *)p)->count); break;
    case NPURT_K_QCONCAT: return run_qconcat(h, p, d, f);
    case NPURT_K_COPY:
        if (d[1] != d[0])
            memmove(d[1], d[0], ((const npurt_p_copy *)p)->bytes);
        break;
    case NPURT_K_SOFTMAX: {
        const npurt_p_softmax *r = p;
        nk_softmax_params k = {r->outer, r->len, r->inner, r->log};
        st = nk_softmax_f32(&k, d[0], d[1]);
        break;
    }
    case NPURT_K_UNARY_F32: return run_unary(p, d[0], d[1]);
    case NPURT_K_BINARY_F32: {
        const npurt_p_binary *r = p;
        nk_binary_params k = {(nk_binop)r->op, npurt_to_act(&r->act)};
        nk_shape as, bs, ys;
        npurt_to_shape(&r->a_shape, &as);
        npurt_to_shape(&r->b_shape, &bs);
        npurt_to_shape(&r->out_shape, &ys);
        st = nk_binary_f32(&k, &as, d[0], &bs, d[1], &ys, d[2]);
        break;
    }
    case NPURT_K_TRANSPOSE: {
        const npurt_p_transpose *r = p;
        nk_transpose_params k;
        memset(&k, 0, sizeof k);
        k.elem_size = (size_t)r->elem_size;
        for (int i = 0; i < NK_MAX_RANK; i++)
            k.perm[i] = r->perm[i];
        nk_shape xs;
        npurt_to_shape(&r->in_shape, &xs);
        st = nk_transpose(&k, &xs, d[0], d[1]);
        break;
    }
    case NPURT_K_REDUCE_F32: {
        const npurt_p_reduce *r = p;
        nk_shape xs;
        npurt_to_shape(&r->x_shape, &xs);
        st = nk_reduce_f32((nk_reduce_op)r->op, &xs, d[0], r->axes_mask, d[1]);
        nk_act a = npurt_to_act(&r->act);
        float *y = d[1];
        for (int32_t i = 0; st == NK_OK && a.kind != NK_ACT_NONE && i < r->out_count; i++)
            y[i] = nk_act_apply(a, y[i]);
        break;
    }
    case NPURT_K_NODE: return npurt_node_run(rec, d, scratch, f);
    default: f->msg = "unknown kernel id %d", f->a = (int32_t)h->kernel, f->b = 0, f->at = 4; return -1;
    }
    return st == NK_OK ? 0 : npurt_kernel_fault(f, st, 0);
}
