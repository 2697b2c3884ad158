/* The chain cascade's plan (tile_cascade3.c: which nodes, bands, chunks,
 * buffer sizes) as its emission (tile_cascade3_emit.c) reads it. Private to
 * those two files. */
#ifndef NPU_TILE_CHAIN_H
#define NPU_TILE_CHAIN_H

#include "tiler/tile_internal.h"

typedef struct chain {
    const ir_node *pre;           /* the model input's QuantizeLinear before the expand (a prologue), or NULL */
    const ir_node *e, *d, *p, *a; /* expand or NULL, depthwise, projection or NULL, eltwise or NULL */
    const ir_node *le, *ld;       /* npu.Luts in the expand's and the depthwise conv's output stage, or NULL */
    const ir_node *gp;            /* a pool of the depthwise output on its tiles, or NULL: the squeeze's
                                     GlobalAveragePool, or split_pool's block AveragePool (docs/opt.md) */
    int64_t pkh, pkw;             /* the block pool's window, its stride too; 0 for the global pool */
    tile_convinfo ce, cd, cp;
    int64_t CI, XH, XW;           /* the block input (the expand's; the depthwise's without one) */
    int64_t H, W, CE, OH, OW, CO; /* the depthwise input and output; CO: channels stored (projection's, or CE) */
    int64_t iwe;                  /* columns of the expand the depthwise reads */
    tile_axis ex;                 /* the block input columns those need (the expand's column pads) */
    int64_t ec, n_chunks;         /* expanded channels per chunk (the last may be fewer), chunks */
    int64_t wbytes;               /* every weight block, resident (build_weights has their order) */
    int64_t wfirst;               /* of them, the first chunk's expand and depthwise blocks */
    int64_t wexp;                 /* of those, the expand's (0 without one): the first load group */
    int64_t oht, ih, eih;         /* rows per band; expanded rows, block input rows of the tallest band */
    int64_t first;                /* rows of the first band, at most oht: a short one loads its input sooner */
    int n_tiles;
    int slots;                    /* of the input and output (and eltwise operand) buffers: 1 to 3 */
    int64_t in_slot, in_f, mid1, mid2, out_slot, res_slot, psum; /* in_f: the prologue's float32 rows in in_slot */
    int64_t pool_slot;            /* the block pool's output of a band, every channel (0 for the global pool) */
    bool epi; /* the eltwise runs in the last projection's output stage (epi_elt), not on the vector unit */
    bool reuse; /* the prologue copies the rows a band shares with the one before from that band's int8 rows */
} chain;

/* Rows of band j: depthwise outputs [y0, y1) read the expanded rows ay
 * (with the depthwise pads at the borders), which read the block input rows
 * ey (with the expand's pads; ey is ay without an expand). */
typedef struct band {
    int64_t y0, y1;
    tile_axis ay, ey;
} band;

static inline band band_of(const chain *q, int64_t j)
{
    const nk_qconv2d_params *k = &q->cd.k, *ke = &q->ce.k;
    band b;
    b.y0 = j ? q->first + (j - 1) * q->oht : 0, b.y1 = tile_min(q->OH, j ? b.y0 + q->oht : q->first);
    b.ay = tile_axis_range(b.y0, b.y1, q->H, k->k_h, k->stride_h, k->dil_h, k->pad_top);
    b.ey = q->e ? tile_axis_range(b.ay.i0, b.ay.i1, q->XH, ke->k_h, ke->stride_h, ke->dil_h, ke->pad_top) : b.ay;
    return b;
}

/* Block input rows band j shares with band j - 1 (its first ones, band j - 1's last), which the prologue
 * copies from band j - 1's int8 rows instead of loading their float32 again; 0 without. */
static inline int64_t shared_rows(const chain *q, int64_t j)
{
    if (!q->reuse || j == 0)
        return 0;
    band a = band_of(q, j - 1), b = band_of(q, j);
    int64_t ov = a.ey.i1 - b.ey.i0;
    return ov > 0 && b.ey.i0 >= a.ey.i0 && ov < b.ey.i1 - b.ey.i0 ? ov : 0;
}

/* The eltwise's operand other than the projection's output. */
static inline const ir_tensor *other_operand(const chain *q)
{
    return q->a->inputs[q->a->inputs[0] == q->p->outputs[0] ? 1 : 0];
}

/* What the expand and the depthwise conv hand on: their Lut's output when
 * the table runs in their output stage (SiLU, h-swish: EfficientNet,
 * MobileNetV3), else their own. */
static inline const ir_tensor *expand_out(const chain *q)
{
    return (q->le ? q->le : q->e)->outputs[0];
}

static inline const ir_tensor *dw_out(const chain *q)
{
    return (q->ld ? q->ld : q->d)->outputs[0];
}

/* The block's input: the expand's, or the depthwise conv's without one. */
static inline const ir_tensor *chain_input(const chain *q)
{
    return (q->e ? q->e : q->d)->inputs[0];
}

/* Channels of chunk k. */
static inline int64_t chunk_ch(const chain *q, int64_t k)
{
    return tile_min(q->ec, q->CE - k * q->ec);
}

/* The chain nd[0..len) as one pipeline: *ok false (nothing decided) when it
 * is none, or no band and chunk plan fits; else q holds the plan. */
npu_status tile_chain_plan(tile_ctx *c, const ir_node *const *nd, int len, chain *q, bool *ok);

#endif
