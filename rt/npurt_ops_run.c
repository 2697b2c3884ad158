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

/* An int16 (A16W8) kernel call: the activation slots a and b (b < 0: none) are
 * all int16 (1), all int8 (0), or mixed (-1: a fault, the widths would overrun). */
static int a16_of(const uint8_t *dtypes, int a, int b)
{
    int x = dtypes[a] == NPURT_DT_I16, y = b < 0 ? x : dtypes[b] == NPURT_DT_I16;
    return x == y ? x : -1;
}

#define A16_CHECK(w) \
    if ((w) < 0)     \
    return npurt_fault_at(f, 0, "int8 and int16 activations in one integer kernel", 0, 0)

static int run_qfc(const npurt_p_qfc *r, void *const *d, int a16, void *scratch, npurt_fault *f)
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
    nk_status st = a16 ? nk_qfc_a16(&p, d[0], w, d[2], d[3]) : nk_qfc(&p, d[0], w, d[2], d[3], rest);
    return st == NK_OK ? 0 : npurt_kernel_fault(f, st, 0);
}

static int run_qconcat(const npurt_rec_header *h, const npurt_p_qconcat *r, void *const *d, const uint8_t *dtypes,
                       npurt_fault *f)
{
    const npurt_p_qconcat_in *in = (const npurt_p_qconcat_in *)(r + 1);
    int8_t *dst = d[h->n_inputs];
    int es = (int)npurt_qact_bytes(dtypes[h->n_inputs]);
    size_t off = 0, row = (size_t)r->row * (size_t)es;
    for (uint32_t i = 0; i < h->n_inputs; i++) {
        const int8_t *src = d[i];
        size_t chunk = (size_t)in[i].chunk * (size_t)es;
        A16_CHECK(a16_of(dtypes, (int)i, (int)h->n_inputs));
        nk_qrequant_params p;
        npurt_to_qrequant(in[i].in_zp, in[i].out_zp, in[i].mult, in[i].shift, in[i].act_min, in[i].act_max,
                          &p);
        for (size_t o = 0; o < (size_t)r->outer; o++) {
            int8_t *to = dst + o * row + off;
            if (in[i].same && to == src + o * chunk)
                continue; /* written in its slice by the memory plan: nothing to copy (a
                             * requantization there runs in place, element by element) */
            if (in[i].same)
                memcpy(to, src + o * chunk, chunk);
            else if (nk_qrequant_x(&p, src + o * chunk, es, to, es, chunk / (size_t)es) != NK_OK)
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

/* ---- one function per kernel, so that an op table links only its own ------- */

#define KSIG const void *rec, void *const *d, const uint8_t *dtypes, void *scratch, npurt_fault *f
#define KDONE(st) return (st) == NK_OK ? 0 : npurt_kernel_fault(f, (st), 0)

static int k_qdq(KSIG)
{
    (void)scratch;
    const npurt_rec_header *h = rec;
    return run_qdq(h->kernel, npurt_rec_params(rec), dtypes[0], dtypes[1], d[0], d[1], f);
}

static int k_qconv(KSIG)
{
    nk_qconv2d_params k;
    npurt_to_qconv(npurt_rec_params(rec), &k);
    int a16 = a16_of(dtypes, 0, 3);
    A16_CHECK(a16);
    KDONE(a16 ? nk_qconv2d_a16(&k, d[0], d[1], d[2], d[3]) : nk_qconv2d(&k, d[0], d[1], d[2], d[3], scratch));
}

static int k_qfc(KSIG)
{
    int a16 = a16_of(dtypes, 0, 3);
    A16_CHECK(a16);
    return run_qfc(npurt_rec_params(rec), d, a16, scratch, f);
}

static int k_qbmm(KSIG)
{
    (void)dtypes;
    nk_qbmm_params k;
    npurt_to_qbmm(npurt_rec_params(rec), &k);
    KDONE(nk_qbmm(&k, d[0], d[1], d[2], scratch));
}

static int k_qpool(KSIG)
{
    (void)scratch;
    const npurt_rec_header *h = rec;
    nk_qpool_params k;
    npurt_to_qpool(npurt_rec_params(rec), &k);
    int a16 = a16_of(dtypes, 0, 1);
    A16_CHECK(a16);
    if (a16)
        KDONE(h->kernel == NPURT_K_QMAXPOOL   ? nk_qmaxpool_a16(&k, d[0], d[1])
              : h->kernel == NPURT_K_QAVGPOOL ? nk_qavgpool_a16(&k, d[0], d[1])
                                              : nk_qglobal_avgpool_a16(&k, d[0], d[1]));
    KDONE(h->kernel == NPURT_K_QMAXPOOL   ? nk_qmaxpool(&k, d[0], d[1])
          : h->kernel == NPURT_K_QAVGPOOL ? nk_qavgpool(&k, d[0], d[1])
                                          : nk_qglobal_avgpool(&k, d[0], d[1]));
}

static int k_qbinary(KSIG)
{
    (void)scratch;
    nk_qbinary_params k;
    npurt_to_qbinary(npurt_rec_params(rec), &k);
    int a16 = a16_of(dtypes, 0, 1) == a16_of(dtypes, 0, 2) ? a16_of(dtypes, 0, 1) : -1;
    A16_CHECK(a16);
    KDONE(a16 ? nk_qbinary_a16(&k, d[0], d[1], d[2]) : nk_qbinary(&k, d[0], d[1], d[2]));
}

static int k_qrequant(KSIG)
{
    (void)scratch;
    const npurt_p_qrequant *r = npurt_rec_params(rec);
    nk_qrequant_params k;
    npurt_to_qrequant(r->in_zp, r->out_zp, r->mult, r->shift, r->act_min, r->act_max, &k);
    /* the one kernel between widths: int8 <-> int16 (A16W8 layer boundaries) */
    KDONE(nk_qrequant_x(&k, d[0], (int)npurt_qact_bytes(dtypes[0]), d[1], (int)npurt_qact_bytes(dtypes[1]),
                        (size_t)r->count));
}

static int k_qlut(KSIG)
{
    (void)scratch;
    size_t count = (size_t)((const npurt_p_qlut *)npurt_rec_params(rec))->count;
    int a16 = a16_of(dtypes, 0, 2);
    A16_CHECK(a16);
    if (a16) /* the checker tied an int16 input to the 513-entry int16 table */
        nk_lut_apply_i16(d[1], d[0], d[2], count);
    else
        nk_lut_apply_i8(d[1], d[0], d[2], count);
    return 0;
}

static int k_qconcat(KSIG)
{
    (void)scratch;
    return run_qconcat(rec, npurt_rec_params(rec), d, dtypes, f);
}

static int k_copy(KSIG)
{
    (void)dtypes, (void)scratch, (void)f;
    if (d[1] != d[0])
        memmove(d[1], d[0], ((const npurt_p_copy *)npurt_rec_params(rec))->bytes);
    return 0;
}

static int k_softmax(KSIG)
{
    (void)dtypes, (void)scratch;
    const npurt_p_softmax *r = npurt_rec_params(rec);
    nk_softmax_params k = {r->outer, r->len, r->inner, r->log};
    KDONE(nk_softmax_f32(&k, d[0], d[1]));
}

static int k_unary(KSIG)
{
    (void)dtypes, (void)scratch, (void)f;
    return run_unary(npurt_rec_params(rec), d[0], d[1]);
}

static int k_binary(KSIG)
{
    (void)dtypes, (void)scratch;
    const npurt_p_binary *r = npurt_rec_params(rec);
    nk_binary_params k = {(nk_binop)r->op, npurt_to_act(&r->act)};
    nk_shape as, bs, ys;
    npurt_to_shape(&r->a_shape, &as);
    npurt_to_shape(&r->b_shape, &bs);
    npurt_to_shape(&r->out_shape, &ys);
    KDONE(nk_binary_f32(&k, &as, d[0], &bs, d[1], &ys, d[2]));
}

static int k_transpose(KSIG)
{
    (void)dtypes, (void)scratch;
    const npurt_p_transpose *r = npurt_rec_params(rec);
    nk_transpose_params k;
    memset(&k, 0, sizeof k);
    k.elem_size = (size_t)r->elem_size;
    for (int i = 0; i < NK_MAX_RANK; i++)
        k.perm[i] = r->perm[i];
    nk_shape xs;
    npurt_to_shape(&r->in_shape, &xs);
    KDONE(nk_transpose(&k, &xs, d[0], d[1]));
}

static int k_reduce(KSIG)
{
    (void)dtypes, (void)scratch;
    const npurt_p_reduce *r = npurt_rec_params(rec);
    nk_shape xs;
    npurt_to_shape(&r->x_shape, &xs);
    nk_status st = nk_reduce_f32((nk_reduce_op)r->op, &xs, d[0], r->axes_mask, d[1]);
    nk_act a = npurt_to_act(&r->act);
    float *y = d[1];
    for (int32_t i = 0; st == NK_OK && a.kind != NK_ACT_NONE && i < r->out_count; i++)
        y[i] = nk_act_apply(a, y[i]);
    KDONE(st);
}

static int k_node(KSIG)
{
    (void)dtypes;
    return npurt_node_run(rec, d, scratch, f);
}

#define FIXED(name, id, fn) \
    const npurt_op npurt_op_##name = {id, npurt_rec_check_fixed, npurt_rec_check_tensors_fixed, fn}
FIXED(quantize, NPURT_K_QUANTIZE, k_qdq);
FIXED(dequantize, NPURT_K_DEQUANTIZE, k_qdq);
FIXED(qconv, NPURT_K_QCONV, k_qconv);
FIXED(qfc, NPURT_K_QFC, k_qfc);
FIXED(qbmm, NPURT_K_QBMM, k_qbmm);
FIXED(qmaxpool, NPURT_K_QMAXPOOL, k_qpool);
FIXED(qavgpool, NPURT_K_QAVGPOOL, k_qpool);
FIXED(qglobalavgpool, NPURT_K_QGLOBALAVGPOOL, k_qpool);
FIXED(qbinary, NPURT_K_QBINARY, k_qbinary);
FIXED(qrequant, NPURT_K_QREQUANT, k_qrequant);
FIXED(qlut, NPURT_K_QLUT, k_qlut);
FIXED(qconcat, NPURT_K_QCONCAT, k_qconcat);
FIXED(copy, NPURT_K_COPY, k_copy);
FIXED(softmax, NPURT_K_SOFTMAX, k_softmax);
FIXED(unary_f32, NPURT_K_UNARY_F32, k_unary);
FIXED(binary_f32, NPURT_K_BINARY_F32, k_binary);
FIXED(transpose, NPURT_K_TRANSPOSE, k_transpose);
FIXED(reduce_f32, NPURT_K_REDUCE_F32, k_reduce);
const npurt_op npurt_op_node = {NPURT_K_NODE, npurt_rec_check, npurt_rec_check_tensors, k_node};

static const npurt_op *const by_id[NPURT_K_COUNT] = {
    NULL, &npurt_op_quantize, &npurt_op_dequantize, &npurt_op_qconv, &npurt_op_qfc, &npurt_op_qbmm,
    &npurt_op_qmaxpool, &npurt_op_qavgpool, &npurt_op_qglobalavgpool, &npurt_op_qbinary, &npurt_op_qrequant,
    &npurt_op_qlut, &npurt_op_qconcat, &npurt_op_copy, &npurt_op_softmax, &npurt_op_unary_f32,
    &npurt_op_binary_f32, &npurt_op_transpose, &npurt_op_reduce_f32, &npurt_op_node,
};
_Static_assert(NPURT_K_NODE == 19 && NPURT_K_COUNT == 20, "by_id lists every kernel in id order");

int npurt_rec_run(const void *rec, void *const *d, const uint8_t *dtypes, void *scratch, npurt_fault *f)
{
    const npurt_rec_header *h = rec;
    if (h->kernel == 0 || h->kernel >= NPURT_K_COUNT)
        return npurt_fault_at(f, 4, "unknown kernel id %d", (int32_t)h->kernel, 0);
    return by_id[h->kernel]->run(rec, d, dtypes, scratch, f);
}

const npurt_op npurt_op_any = {0, npurt_rec_check, npurt_rec_check_tensors, npurt_rec_run};
const npurt_op *const npurt_ops_all[] = {&npurt_op_any, NULL};

const npurt_op *npurt_ops_find(const npurt_op *const *ops, uint32_t kernel)
{
    for (; ops && *ops; ops++)
        if ((*ops)->kernel == kernel || (*ops)->kernel == 0)
            return *ops;
    return NULL;
}
