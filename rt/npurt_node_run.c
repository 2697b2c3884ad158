/* NODE records: a checked record (rt/npurt_node.c) to its kernel call, as
 * the reference adapter of the same op calls it (src/ref/ops_nn.c,
 * ops_shape.c, ops_elem.c), so results are bit-exact with npuref. */
#include "rt/npurt_node_internal.h"

static void shapes_of(const node_view *v, nk_shape *s)
{
    for (uint32_t i = 0; i < v->h->n_inputs + v->h->n_outputs; i++)
        npurt_to_shape(&v->ts[i].shape, &s[i]);
}

static void apply_act(const npurt_p_act *r, float *y, uint64_t n)
{
    nk_act a = npurt_to_act(r);
    if (a.kind != NK_ACT_NONE)
        for (uint64_t i = 0; i < n; i++)
            y[i] = nk_act_apply(a, y[i]);
}

static nk_status run_nn(const node_view *v, void *const *d, void *scratch)
{
    switch (v->node->op) {
    case NPURT_N_CONV:
    case NPURT_N_CONV_T: {
        nk_conv_params k;
        to_conv(v->p, &k);
        return v->node->op == NPURT_N_CONV ? nk_conv(&k, d[0], d[1], d[2], d[3], scratch)
                                           : nk_conv_transpose(&k, d[0], d[1], d[2], d[3], scratch);
    }
    case NPURT_N_GEMM: {
        const npurt_p_n_gemm *r = v->p;
        nk_gemm_params g = {r->m, r->n, r->k, r->trans_a, r->trans_b, r->alpha, r->beta,
                            r->c_rows, r->c_cols, npurt_to_act(&r->act)};
        return nk_gemm(&g, d[0], d[1], d[2], d[3], scratch);
    }
    case NPURT_N_MATMUL: {
        const npurt_p_n_matmul *r = v->p;
        nk_matmul_params k;
        to_matmul(r, &k);
        nk_status st = nk_matmul(&k, d[0], d[1], d[2], scratch);
        if (st == NK_OK) /* the kernel has no activation: as the reference's ref_apply_act */
            apply_act(&r->act, d[2], numel(v, 2));
        return st;
    }
    case NPURT_N_BATCHNORM: {
        const npurt_p_n_bn *r = v->p;
        int32_t n = dim(v, 0, 0), c = dim(v, 0, 1);
        uint64_t all = numel(v, 0), nc = (uint64_t)n * (uint64_t)c;
        nk_batchnorm_params k = {n, c, nc ? (int64_t)(all / nc) : 0, r->epsilon, npurt_to_act(&r->act)};
        return nk_batchnorm(&k, d[0], d[1], d[2], d[3], d[4], d[5]);
    }
    case NPURT_N_MAXPOOL:
    case NPURT_N_AVGPOOL: {
        nk_pool_params k;
        to_pool(v, v->p, &k);
        return v->node->op == NPURT_N_MAXPOOL ? nk_maxpool(&k, d[0], d[1], NULL) : nk_avgpool(&k, d[0], d[1]);
    }
    case NPURT_N_GAVGPOOL:
    case NPURT_N_GMAXPOOL: {
        int32_t n = dim(v, 0, 0), c = dim(v, 0, 1);
        uint64_t nc = (uint64_t)n * (uint64_t)c;
        nk_global_pool_params k = {n, c, nc ? (int64_t)(numel(v, 0) / nc) : 0};
        return v->node->op == NPURT_N_GAVGPOOL ? nk_global_avgpool(&k, d[0], d[1])
                                               : nk_global_maxpool(&k, d[0], d[1]);
    }
    default: {
        nk_resize_params k;
        to_resize(v, v->p, &k);
        return nk_resize(&k, d[0], d[1], scratch);
    }
    }
}

static nk_status run_shape(const node_view *v, void *const *d)
{
    nk_shape s[2 * NPURT_REC_MAX_IO];
    shapes_of(v, s);
    uint32_t ni = v->h->n_inputs, no = v->h->n_outputs;
    size_t es = elem_size(v->ts[0].dtype);
    const int32_t *w = v->p;
    switch (v->node->op) {
    case NPURT_N_SLICE: {
        const npurt_p_n_slice *r = v->p;
        nk_slice_params k = {.elem_size = es};
        for (int i = 0; i < NK_MAX_RANK; i++) {
            k.start[i] = r->start[i];
            k.step[i] = r->step[i];
        }
        return nk_slice(&k, &s[0], d[0], &s[1], d[1]);
    }
    case NPURT_N_CONCAT: {
        nk_concat_params k = {w[0], (int)ni, es};
        return nk_concat(&k, s, (const void *const *)d, &s[ni], d[ni]);
    }
    case NPURT_N_SPLIT: {
        nk_split_params k = {w[0], (int)no, es};
        return nk_split(&k, &s[0], d[0], &s[1], d + 1);
    }
    case NPURT_N_PAD: {
        const npurt_p_n_pad *r = v->p;
        uint32_t y = v->h->n_inputs;
        const void *value = y > 1 && d[1] ? d[1] : (const void *)r->value;
        nk_pad_params k = {.mode = (nk_pad_mode)r->mode, .value = value, .elem_size = es};
        for (int i = 0; i < NK_MAX_RANK; i++) {
            k.begin[i] = r->begin[i];
            k.end[i] = r->end[i];
        }
        return nk_pad(&k, &s[0], d[0], &s[y], d[y]);
    }
    case NPURT_N_GATHER: {
        nk_gather_params k = {w[0], v->ts[1].dtype == NPURT_DT_I64, es};
        return nk_gather(&k, &s[0], d[0], d[1], (int64_t)numel(v, 1), d[2], NULL);
    }
    case NPURT_N_EXPAND: return nk_expand(es, &s[0], d[0], &s[1], d[1]);
    default: return nk_tile(es, &s[0], d[0], &s[1], d[1]);
    }
}

static nk_status binary(const npurt_p_n_binary *r, int32_t dt, const nk_shape *s, const void *a, const void *b,
                        void *y)
{
    nk_binary_params k = {(nk_binop)r->op, npurt_to_act(&r->act)};
    return dt == NPURT_DT_F32 ? nk_binary_f32(&k, &s[0], a, &s[1], b, &s[2], y)
                              : nk_binary_int(&k, nk_dt(dt), &s[0], a, &s[1], b, &s[2], y);
}

/* Pow of a base by an exponent of another dtype as the reference's run_pow:
 * an integer base by a float exponent in float, truncated back; otherwise
 * the exponent cast to the base's dtype. */
static nk_status run_binary(const node_view *v, const nk_shape *s, void *const *d, void *scratch)
{
    const npurt_p_n_binary *r = v->p;
    int32_t xt = v->ts[0].dtype, et = v->ts[1].dtype;
    if (xt == et)
        return binary(r, xt, s, d[0], d[1], d[2]);
    int64_t na = (int64_t)numel(v, 0), nb = (int64_t)numel(v, 1), ny = (int64_t)numel(v, 2);
    uint8_t *sa = scratch, *sb = sa + 4 * na, *sy = sb + 8 * nb;
    nk_status st;
    if (xt != NPURT_DT_F32 && et == NPURT_DT_F32) {
        nk_cast(nk_dt(xt), d[0], NK_DT_F32, sa, na);
        if ((st = binary(r, NPURT_DT_F32, s, sa, d[1], sy)) != NK_OK)
            return st;
        return nk_cast(NK_DT_F32, sy, nk_dt(xt), d[2], ny);
    }
    nk_cast(nk_dt(et), d[1], nk_dt(xt), sb, nb);
    return binary(r, xt, s, d[0], sb, d[2]);
}

/* Max/Min of 1 or 3+ inputs as the reference's run_variadic: pairwise,
 * alternating between scratch and the output so that the last step writes
 * the output; the activation applies to the result only. */
static nk_status run_variadic(const node_view *v, void *const *d, void *scratch)
{
    const npurt_p_n_binary *r = v->p;
    uint32_t ni = v->h->n_inputs;
    int32_t dt = v->ts[0].dtype;
    nk_shape acc, s, next;
    npurt_to_shape(&v->ts[0].shape, &acc);
    if (ni == 1) {
        memmove(d[1], d[0], (size_t)(numel(v, 1) * elem_size(dt)));
        if (dt == NPURT_DT_F32)
            apply_act(&r->act, d[1], numel(v, 1));
        return NK_OK;
    }
    const void *prev = d[0];
    uint32_t steps = ni - 1;
    for (uint32_t k = 1; k < ni; k++) {
        npurt_to_shape(&v->ts[k].shape, &s);
        nk_status st = nk_shape_broadcast(&acc, &s, &next);
        void *dst = (steps - k) % 2 == 0 ? d[ni] : scratch;
        if (k == steps)
            npurt_to_shape(&v->ts[ni].shape, &next);
        npurt_p_n_binary step = *r;
        if (k < steps)
            step.act.kind = NK_ACT_NONE;
        nk_shape sh[3] = {acc, s, next};
        if (st != NK_OK || (st = binary(&step, dt, sh, prev, d[k], dst)) != NK_OK)
            return st;
        acc = next;
        prev = dst;
    }
    return NK_OK;
}

/* Clip as the reference: f32 by nk_unary_f32 with the bounds from the
 * slots (else the record's), then the activation; integers as Max and Min
 * against each bound given. */
static nk_status run_clip(const node_view *v, void *const *d)
{
    const npurt_p_n_clip *r = v->p;
    int32_t dt = v->ts[0].dtype;
    uint64_t n = numel(v, 0);
    if (dt == NPURT_DT_F32) {
        nk_unary_params p = {NK_UN_CLIP, 0.0f, 0.0f, d[1] ? *(const float *)d[1] : r->lo,
                             d[2] ? *(const float *)d[2] : r->hi};
        nk_status st = nk_unary_f32(&p, d[0], d[3], (int64_t)n);
        if (st == NK_OK)
            apply_act(&r->act, d[3], n);
        return st;
    }
    if (d[3] != d[0])
        memmove(d[3], d[0], (size_t)(n * elem_size(dt)));
    nk_shape xs, one = {.rank = 0};
    npurt_to_shape(&v->ts[0].shape, &xs);
    for (int i = 1; i <= 2; i++) {
        nk_binary_params p = {i == 1 ? NK_BIN_MAX : NK_BIN_MIN, {NK_ACT_NONE, 0, 0, 0}};
        nk_status st = d[i] ? nk_binary_int(&p, nk_dt(dt), &xs, d[3], &one, d[i], &xs, d[3]) : NK_OK;
        if (st != NK_OK)
            return st;
    }
    return NK_OK;
}

static nk_status run_elem(const node_view *v, void *const *d, void *scratch)
{
    if (v->node->op == NPURT_N_VARIADIC)
        return run_variadic(v, d, scratch);
    nk_shape s[4];
    shapes_of(v, s);
    const int32_t *w = v->p;
    int32_t dt = v->ts[0].dtype;
    uint64_t n = numel(v, 0);
    switch (v->node->op) {
    case NPURT_N_WHERE: return nk_where(elem_size(v->ts[1].dtype), &s[0], d[0], &s[1], d[1], &s[2], d[2], &s[3], d[3]);
    case NPURT_N_COMPARE: return nk_compare((nk_cmpop)w[0], nk_dt(dt), &s[0], d[0], &s[1], d[1], &s[2], d[2]);
    case NPURT_N_CAST: return nk_cast(nk_dt(dt), d[0], nk_dt(v->ts[1].dtype), d[1], (int64_t)n);
    case NPURT_N_NOT: return nk_not(d[0], d[1], (int64_t)n);
    case NPURT_N_BINARY: return run_binary(v, s, d, scratch);
    case NPURT_N_UNARY_INT:
        return dt == NPURT_DT_I32 ? nk_unary_i32((nk_unop)w[0], d[0], d[1], (int64_t)n)
                                  : nk_unary_i64((nk_unop)w[0], d[0], d[1], (int64_t)n);
    case NPURT_N_CLIP: return run_clip(v, d);
    default: { /* Dropout in inference (or training at ratio 0): a copy, and a mask of all true */
        uint32_t ni = v->h->n_inputs;
        const uint8_t *train = ni > 2 ? d[2] : NULL;
        const float *ratio = ni > 1 ? d[1] : NULL;
        if (train && *train && !(ratio && *ratio == 0.0f))
            return NK_EUNSUPPORTED; /* training mode drops at random: the reference refuses it too */
        if (d[ni] != d[0])
            memmove(d[ni], d[0], (size_t)(n * elem_size(dt)));
        if (v->h->n_outputs > 1 && d[ni + 1])
            memset(d[ni + 1], 1, (size_t)numel(v, ni + 1));
        return NK_OK;
    }
    }
}

static nk_status run_norm(const node_view *v, void *const *d)
{
    if (v->node->op == NPURT_N_GELU) {
        nk_gelu_f32(d[0], d[1], (int64_t)numel(v, 0), *(const int32_t *)v->p);
        return NK_OK;
    }
    const npurt_p_n_layernorm *r = v->p;
    const npurt_p_shape *x = &v->ts[0].shape;
    nk_layernorm_params k = {1, 1, (int64_t)numel(v, 1), v->ts[2].dtype == -1 ? 1 : (int64_t)numel(v, 2), r->epsilon};
    for (int i = 0; i < x->rank; i++)
        *(i < r->axis ? &k.outer : &k.len) *= x->dims[i];
    return nk_layernorm_f32(&k, d[0], d[1], v->ts[2].dtype == -1 ? NULL : d[2], d[3], d[4], d[5]);
}

/* The zero point k of a run-time Quantize/DequantizeLinear (0 when absent). */
static int32_t qdq_zp(const node_view *v, const void *z, uint64_t k)
{
    if (!z)
        return 0;
    int32_t dt = v->ts[2].dtype;
    return dt == NPURT_DT_I8 ? ((const int8_t *)z)[k] : dt == NPURT_DT_U8 ? ((const uint8_t *)z)[k] : ((const int32_t *)z)[k];
}

static nk_status run_qdq(const node_view *v, void *const *d)
{
    const npurt_p_n_qdq *r = v->p;
    uint64_t total = numel(v, 0), n = numel(v, 1), inner = total;
    if (n > 1) {
        inner = 1;
        for (int i = r->axis + 1; i < v->ts[0].shape.rank; i++)
            inner *= (uint64_t)dim(v, 0, i);
    }
    const float *scale = d[1];
    for (uint64_t at = 0; inner && at < total; at += inner) {
        uint64_t k = (at / inner) % n;
        int32_t z = qdq_zp(v, v->ts[2].dtype == -1 ? NULL : d[2], k);
        nk_status st = npurt_qdq_span(r->quantize, (uint32_t)v->ts[0].dtype, (uint32_t)v->ts[3].dtype, d[0], d[3],
                                      (size_t)at, (size_t)inner, scale[k], z);
        if (st != NK_OK)
            return st;
    }
    return NK_OK;
}

int npurt_node_run(const void *rec, void *const *d, void *scratch, npurt_fault *f)
{
    node_view v;
    view_of(rec, &v);
    nk_status st;
    switch (v.node->op) {
    case NPURT_N_CONV:
    case NPURT_N_CONV_T:
    case NPURT_N_GEMM:
    case NPURT_N_MATMUL:
    case NPURT_N_BATCHNORM:
    case NPURT_N_MAXPOOL:
    case NPURT_N_AVGPOOL:
    case NPURT_N_GAVGPOOL:
    case NPURT_N_GMAXPOOL:
    case NPURT_N_RESIZE: st = run_nn(&v, d, scratch); break;
    case NPURT_N_SLICE:
    case NPURT_N_CONCAT:
    case NPURT_N_SPLIT:
    case NPURT_N_PAD:
    case NPURT_N_GATHER:
    case NPURT_N_EXPAND:
    case NPURT_N_TILE: st = run_shape(&v, d); break;
    case NPURT_N_LAYERNORM:
    case NPURT_N_GELU: st = run_norm(&v, d); break;
    case NPURT_N_QDQ: st = run_qdq(&v, d); break;
    default: st = run_elem(&v, d, scratch); break;
    }
    return st == NK_OK ? 0 : npurt_kernel_fault(f, st, 1);
}
