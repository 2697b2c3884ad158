/* Internal to rt/npurt_node*.c: NODE records viewed as their parts, and
 * their parameters as the kernels' structs (the checker and the runner
 * both go through these, so what is checked is what runs). */
#ifndef NPURT_NODE_INTERNAL_H
#define NPURT_NODE_INTERNAL_H

#include <string.h>

#include "rt/npurt_ops_internal.h"

/* Bytes of an element of a NODE slot's dtype; 0 for the packed int4 types. */
static inline uint32_t elem_size(int32_t dt)
{
    static const uint8_t size[10] = {4, 2, 8, 4, 2, 1, 1, 0, 0, 1};
    return dt >= 0 && dt < 10 ? size[dt] : 0;
}

/* nk_dtype of a record dtype (the same order, bool moved down two). */
static inline nk_dtype nk_dt(int32_t dt)
{
    return dt == NPURT_DT_BOOL ? NK_DT_BOOL : (nk_dtype)dt;
}

typedef struct node_view {
    const npurt_rec_header *h;
    const npurt_p_node *node;
    const npurt_p_tshape *ts; /* n_inputs + n_outputs */
    const void *p;            /* the op's parameter words */
    uint32_t at_ts, at_p;     /* their byte offsets in the record */
} node_view;

static inline void view_of(const void *rec, node_view *v)
{
    v->h = rec;
    v->node = (const npurt_p_node *)npurt_rec_params(rec);
    v->ts = (const npurt_p_tshape *)(v->node + 1);
    v->p = v->ts + v->h->n_inputs + v->h->n_outputs;
    v->at_ts = (uint32_t)((const uint8_t *)v->ts - (const uint8_t *)rec);
    v->at_p = (uint32_t)((const uint8_t *)v->p - (const uint8_t *)rec);
}

static inline uint64_t numel(const node_view *v, uint32_t i)
{
    return npurt_shape_numel(&v->ts[i].shape);
}

static inline int32_t dim(const node_view *v, uint32_t i, int d)
{
    return v->ts[i].shape.dims[d];
}

static inline int all_dtype(const node_view *v, uint32_t from, uint32_t to, int32_t dt)
{
    for (uint32_t i = from; i < to; i++)
        if (v->ts[i].dtype != dt && v->ts[i].dtype != -1)
            return 0;
    return 1;
}

static inline int act_ok(const npurt_p_act *a)
{
    return a->kind >= NK_ACT_NONE && a->kind <= NK_ACT_LEAKY_RELU;
}

static inline void to_conv(const npurt_p_n_conv *r, nk_conv_params *k)
{
    *k = (nk_conv_params){r->n, r->c, r->h, r->w, r->m, r->oh, r->ow, r->kh, r->kw, r->group,
                          r->stride_h, r->stride_w, r->dil_h, r->dil_w, r->pad_top, r->pad_left,
                          r->pad_bottom, r->pad_right, r->out_pad_h, r->out_pad_w, npurt_to_act(&r->act)};
}

static inline void to_matmul(const npurt_p_n_matmul *r, nk_matmul_params *k)
{
    npurt_to_shape(&r->a, &k->a);
    npurt_to_shape(&r->b, &k->b);
    k->a.rank = r->a.rank;
    k->b.rank = r->b.rank;
}

static inline void to_pool(const node_view *v, const npurt_p_n_pool *r, nk_pool_params *k)
{
    memset(k, 0, sizeof *k);
    k->n = dim(v, 0, 0);
    k->c = dim(v, 0, 1);
    k->rank = r->rank;
    for (int i = 0; i < r->rank && i < 3; i++) {
        k->in[i] = dim(v, 0, 2 + i);
        k->out[i] = dim(v, 1, 2 + i);
        k->kernel[i] = r->kernel[i];
        k->stride[i] = r->stride[i];
        k->dilation[i] = r->dilation[i];
        k->pad_begin[i] = r->pad_begin[i];
        k->pad_end[i] = r->pad_end[i];
    }
    k->count_include_pad = r->count_include_pad;
}

static inline void to_resize(const node_view *v, const npurt_p_n_resize *r, nk_resize_params *k)
{
    memset(k, 0, sizeof *k);
    k->rank = v->ts[0].shape.rank;
    for (int d = 0; d < k->rank; d++) {
        k->in[d] = dim(v, 0, d);
        k->out[d] = dim(v, 1, d);
        k->scale[d] = r->scale[d];
        k->roi_start[d] = r->roi_start[d];
        k->roi_end[d] = r->roi_end[d];
    }
    k->mode = (nk_resize_mode)r->mode;
    k->coord = (nk_resize_coord)r->coord;
    k->nearest = (nk_resize_nearest)r->nearest;
    k->cubic_a = r->cubic_a;
    k->exclude_outside = r->exclude_outside;
    k->extrapolation_value = r->extrapolation_value;
}

#endif
