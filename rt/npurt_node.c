/* NODE records (rt/npurt_ops.h): one record kind for the ops without a
 * dedicated record. The record carries every slot's dtype and shape; the
 * checks tie each shape to its tensor's size and the op's parameters to the
 * shapes, so the kernel (which checks its own geometry: windows, pads,
 * broadcasts) never indexes outside a tensor. The run mirrors the reference
 * adapter of the same op (src/ref/ops_*.c) on the same kernels. */
#include "rt/npurt_node_internal.h"

typedef struct nspec {
    const char *name;
    int32_t n_in, n_out;  /* -1: one or more */
    int32_t words;        /* parameter words */
    uint32_t optional;    /* bit i: slot i may be empty */
} nspec;

#define W(t) ((int32_t)(sizeof(t) / 4))

static const nspec nspecs[NPURT_N_COUNT] = {
    [NPURT_N_CONV] = {"CONV", 3, 1, W(npurt_p_n_conv), 1u << 2},
    [NPURT_N_CONV_T] = {"CONV_T", 3, 1, W(npurt_p_n_conv), 1u << 2},
    [NPURT_N_GEMM] = {"GEMM", 3, 1, W(npurt_p_n_gemm), 1u << 2},
    [NPURT_N_MATMUL] = {"MATMUL", 2, 1, W(npurt_p_n_matmul), 0},
    [NPURT_N_BATCHNORM] = {"BATCHNORM", 5, 1, W(npurt_p_n_bn), 0},
    [NPURT_N_MAXPOOL] = {"MAXPOOL", 1, 1, W(npurt_p_n_pool), 0},
    [NPURT_N_AVGPOOL] = {"AVGPOOL", 1, 1, W(npurt_p_n_pool), 0},
    [NPURT_N_GAVGPOOL] = {"GAVGPOOL", 1, 1, 0, 0},
    [NPURT_N_GMAXPOOL] = {"GMAXPOOL", 1, 1, 0, 0},
    [NPURT_N_RESIZE] = {"RESIZE", 1, 1, W(npurt_p_n_resize), 0},
    [NPURT_N_SLICE] = {"SLICE", 1, 1, W(npurt_p_n_slice), 0},
    [NPURT_N_CONCAT] = {"CONCAT", -1, 1, 1, 0},
    [NPURT_N_SPLIT] = {"SPLIT", 1, -1, 1, 0},
    [NPURT_N_PAD] = {"PAD", -1, 1, W(npurt_p_n_pad), 1u << 1},
    [NPURT_N_GATHER] = {"GATHER", 2, 1, 1, 0},
    [NPURT_N_EXPAND] = {"EXPAND", 1, 1, 0, 0},
    [NPURT_N_TILE] = {"TILE", 1, 1, 0, 0},
    [NPURT_N_WHERE] = {"WHERE", 3, 1, 0, 0},
    [NPURT_N_COMPARE] = {"COMPARE", 2, 1, 1, 0},
    [NPURT_N_CAST] = {"CAST", 1, 1, 0, 0},
    [NPURT_N_NOT] = {"NOT", 1, 1, 0, 0},
    [NPURT_N_BINARY] = {"BINARY", 2, 1, W(npurt_p_n_binary), 0},
    [NPURT_N_UNARY_INT] = {"UNARY_INT", 1, 1, 1, 0},
    [NPURT_N_DROPOUT] = {"DROPOUT", -1, -1, 0, 0x3fu},
    [NPURT_N_VARIADIC] = {"VARIADIC", -1, 1, W(npurt_p_n_binary), 0},
    [NPURT_N_CLIP] = {"CLIP", 3, 1, W(npurt_p_n_clip), 0x6u},
};

const char *npurt_node_op_name(int32_t op)
{
    return op > 0 && op < NPURT_N_COUNT && nspecs[op].name ? nspecs[op].name : "?";
}

/* ---- structural checks ---- */

static int bad(npurt_fault *f, const node_view *v, const char *msg)
{
    return npurt_fault_at(f, v->at_p, msg, v->node->op, 0);
}

static int scratch_of(size_t need, uint32_t *scratch)
{
    if (need > 0x7fffffffu)
        return -1;
    *scratch = (uint32_t)need;
    return 0;
}

static int check_conv(const node_view *v, uint32_t *scratch, npurt_fault *f)
{
    const npurt_p_n_conv *r = v->p;
    int tr = v->node->op == NPURT_N_CONV_T;
    if (!all_dtype(v, 0, 4, NPURT_DT_F32) || !act_ok(&r->act))
        return bad(f, v, "a float convolution takes f32 tensors");
    if (r->group <= 0 || r->c % r->group || r->m % r->group || !npurt_nonneg(&r->n, 9))
        return bad(f, v, "bad convolution groups or sizes");
    uint64_t x = npurt_mul(npurt_mul((uint64_t)r->n, (uint64_t)r->c), npurt_mul((uint64_t)r->h, (uint64_t)r->w));
    uint64_t kk = npurt_mul((uint64_t)r->kh, (uint64_t)r->kw);
    uint64_t w = tr ? npurt_mul(npurt_mul((uint64_t)r->c, (uint64_t)(r->m / r->group)), kk)
                    : npurt_mul(npurt_mul((uint64_t)r->m, (uint64_t)(r->c / r->group)), kk);
    uint64_t y = npurt_mul(npurt_mul((uint64_t)r->n, (uint64_t)r->m), npurt_mul((uint64_t)r->oh, (uint64_t)r->ow));
    if (numel(v, 0) != x || numel(v, 1) != w || (v->ts[2].dtype != -1 && numel(v, 2) != (uint64_t)r->m) ||
        numel(v, 3) != y)
        return bad(f, v, "the convolution's sizes disagree with its tensors' shapes");
    nk_conv_params k;
    to_conv(r, &k);
    return scratch_of(tr ? nk_conv_transpose_scratch_size(&k) : nk_conv_scratch_size(&k), scratch)
               ? bad(f, v, "convolution too large")
               : 0;
}

static int check_gemm(const node_view *v, uint32_t *scratch, npurt_fault *f)
{
    const npurt_p_n_gemm *r = v->p;
    if (!all_dtype(v, 0, 4, NPURT_DT_F32) || !act_ok(&r->act) || !npurt_nonneg(&r->m, 3))
        return bad(f, v, "Gemm takes f32 tensors of non-negative sizes");
    uint64_t m = (uint64_t)r->m, n = (uint64_t)r->n, k = (uint64_t)r->k;
    if ((r->c_rows != 1 && r->c_rows != r->m) || (r->c_cols != 1 && r->c_cols != r->n) ||
        numel(v, 0) != npurt_mul(m, k) || numel(v, 1) != npurt_mul(k, n) || numel(v, 3) != npurt_mul(m, n) ||
        (v->ts[2].dtype != -1 && numel(v, 2) != npurt_mul((uint64_t)r->c_rows, (uint64_t)r->c_cols)))
        return bad(f, v, "Gemm's sizes disagree with its tensors' shapes");
    nk_gemm_params g = {r->m, r->n, r->k, r->trans_a, r->trans_b, r->alpha, r->beta,
                        r->c_rows, r->c_cols, npurt_to_act(&r->act)};
    return scratch_of(nk_gemm_scratch_size(&g), scratch) ? bad(f, v, "Gemm too large") : 0;
}

static int check_matmul(const node_view *v, uint32_t *scratch, npurt_fault *f)
{
    const npurt_p_n_matmul *r = v->p;
    const npurt_p_shape *a = &r->a, *b = &r->b;
    if (!all_dtype(v, 0, 3, NPURT_DT_F32) || !act_ok(&r->act) || !npurt_shape_ok(a) || !npurt_shape_ok(b) ||
        a->rank < 2 || b->rank < 2)
        return bad(f, v, "MatMul takes f32 operands of rank 2 or more");
    if (npurt_shape_numel(a) != numel(v, 0) || npurt_shape_numel(b) != numel(v, 1) ||
        a->dims[a->rank - 1] != b->dims[b->rank - 2])
        return bad(f, v, "MatMul's operand shapes disagree with its tensors");
    npurt_p_shape ab = *a, bb = *b, yb; /* the batch dims, broadcast */
    ab.rank -= 2;
    bb.rank -= 2;
    yb.rank = ab.rank > bb.rank ? ab.rank : bb.rank;
    nk_shape as, bs, ys;
    npurt_to_shape(&ab, &as);
    npurt_to_shape(&bb, &bs);
    if (nk_shape_broadcast(&as, &bs, &ys) != NK_OK)
        return bad(f, v, "MatMul's batch dims do not broadcast");
    for (int i = 0; i < yb.rank; i++)
        yb.dims[i] = ys.dims[i];
    uint64_t y = npurt_mul(npurt_shape_numel(&yb),
                           npurt_mul((uint64_t)a->dims[a->rank - 2], (uint64_t)b->dims[b->rank - 1]));
    if (numel(v, 2) != y)
        return bad(f, v, "MatMul's output has the wrong size");
    nk_matmul_params k;
    to_matmul(r, &k);
    return scratch_of(nk_matmul_scratch_size(&k), scratch) ? bad(f, v, "MatMul too large") : 0;
}

/* Pools, global pools, BatchNormalization, Resize. */
static int check_nn(const node_view *v, uint32_t *scratch, npurt_fault *f)
{
    const npurt_p_shape *x = &v->ts[0].shape, *y = &v->ts[v->h->n_inputs].shape;
    int32_t op = v->node->op;
    if (!all_dtype(v, 0, v->h->n_inputs + 1, NPURT_DT_F32))
        return bad(f, v, "this op takes f32 tensors");
    if (op == NPURT_N_BATCHNORM) {
        const npurt_p_n_bn *r = v->p;
        if (x->rank < 2 || !act_ok(&r->act) || numel(v, 5) != numel(v, 0))
            return bad(f, v, "BatchNormalization takes (N, C, ...) and gives the same size");
        for (uint32_t i = 1; i < 5; i++)
            if (numel(v, i) != (uint64_t)x->dims[1])
                return bad(f, v, "BatchNormalization's parameters need one value per channel");
        return 0;
    }
    if (op == NPURT_N_RESIZE) {
        const npurt_p_n_resize *r = v->p;
        if (x->rank < 1 || y->rank != x->rank || r->mode < 0 || r->mode > NK_RESIZE_CUBIC || r->coord < 0 ||
            r->coord > NK_COORD_TF_CROP_AND_RESIZE || r->nearest < 0 || r->nearest > NK_NEAREST_SIMPLE)
            return bad(f, v, "bad Resize parameters");
        for (int d = 0; d < x->rank; d++)
            if (x->dims[d] < 1)
                return bad(f, v, "Resize of an empty input");
        nk_resize_params k;
        to_resize(v, r, &k);
        return scratch_of(nk_resize_scratch_size(&k), scratch) ? bad(f, v, "Resize too large") : 0;
    }
    if (x->rank < 3 || y->rank != x->rank || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1])
        return bad(f, v, "a pool takes (N, C, spatial...) to (N, C, spatial...)");
    if (op == NPURT_N_GAVGPOOL || op == NPURT_N_GMAXPOOL)
        return numel(v, 1) == npurt_mul((uint64_t)x->dims[0], (uint64_t)x->dims[1])
                   ? 0
                   : bad(f, v, "a global pool gives one value per channel");
    const npurt_p_n_pool *r = v->p;
    if (r->rank != x->rank - 2 || r->rank > 3 || r->count_include_pad < 0 || r->count_include_pad > 1)
        return bad(f, v, "the pool's rank disagrees with its input");
    for (int i = 0; i < r->rank; i++)
        if (r->kernel[i] < 1 || r->stride[i] < 1 || r->dilation[i] < 1 || r->pad_begin[i] < 0 ||
            r->pad_end[i] < 0)
            return bad(f, v, "bad pool window");
    return 0;
}

static int same_rank_dtype(const node_view *v, uint32_t a, uint32_t b)
{
    return v->ts[a].dtype == v->ts[b].dtype && v->ts[a].shape.rank == v->ts[b].shape.rank;
}

/* Concat's inputs (or Split's outputs) differ from the whole only along axis. */
static int check_parts(const node_view *v, npurt_fault *f)
{
    int split = v->node->op == NPURT_N_SPLIT;
    uint32_t n = v->h->n_inputs + v->h->n_outputs, whole = split ? 0 : n - 1;
    int32_t axis = *(const int32_t *)v->p, rank = v->ts[whole].shape.rank;
    if (axis < 0 || axis >= rank)
        return bad(f, v, "axis out of range");
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i == whole)
            continue;
        if (!same_rank_dtype(v, i, whole))
            return bad(f, v, "the parts differ in dtype or rank from the whole");
        for (int d = 0; d < rank; d++)
            if (d != axis && dim(v, i, d) != dim(v, whole, d))
                return bad(f, v, "the parts differ from the whole off the axis");
        sum += (uint64_t)dim(v, i, axis);
    }
    return sum == (uint64_t)dim(v, whole, axis) ? 0 : bad(f, v, "the parts do not add up to the whole");
}

static int check_slice(const node_view *v, npurt_fault *f)
{
    const npurt_p_n_slice *r = v->p;
    if (!same_rank_dtype(v, 0, 1))
        return bad(f, v, "Slice keeps the dtype and rank");
    for (int d = 0; d < v->ts[0].shape.rank; d++) {
        int64_t in = dim(v, 0, d), out = dim(v, 1, d), s = r->start[d], st = r->step[d];
        int64_t last = s + (out - 1) * st;
        if (st == 0 || (out > 0 && (s < 0 || s >= in || last < 0 || last >= in)))
            return bad(f, v, "the slice reads outside its input");
    }
    return 0;
}

static int check_pad(const node_view *v, npurt_fault *f)
{
    const npurt_p_n_pad *r = v->p;
    uint32_t y = v->h->n_inputs;
    if (y > 2 || !same_rank_dtype(v, 0, y) || r->mode < NK_PAD_CONSTANT || r->mode > NK_PAD_EDGE ||
        elem_size(v->ts[0].dtype) > 8 ||
        (y == 2 && v->ts[1].dtype != -1 && (v->ts[1].dtype != v->ts[0].dtype || numel(v, 1) != 1)))
        return bad(f, v, "Pad keeps the dtype and rank; its value is one element of that dtype");
    for (int d = 0; d < v->ts[0].shape.rank; d++) {
        int64_t in = dim(v, 0, d);
        if ((int64_t)r->begin[d] + in + r->end[d] != dim(v, y, d) ||
            (r->mode != NK_PAD_CONSTANT && in == 0 && (r->begin[d] || r->end[d])))
            return bad(f, v, "the pads do not give the output shape");
    }
    return 0;
}

static int check_gather(const node_view *v, npurt_fault *f)
{
    int32_t axis = *(const int32_t *)v->p, rank = v->ts[0].shape.rank;
    if (axis < 0 || axis >= rank || v->ts[0].dtype != v->ts[2].dtype ||
        (v->ts[1].dtype != NPURT_DT_I32 && v->ts[1].dtype != NPURT_DT_I64))
        return bad(f, v, "bad Gather axis or dtypes");
    uint64_t outer = 1, inner = 1;
    for (int d = 0; d < rank; d++)
        if (d != axis)
            *(d < axis ? &outer : &inner) = npurt_mul(d < axis ? outer : inner, (uint64_t)dim(v, 0, d));
    return numel(v, 2) == npurt_mul(npurt_mul(outer, numel(v, 1)), inner) ? 0
                                                                          : bad(f, v, "Gather's output size");
}

/* Broadcasting ops: Where, compares, binary, Expand. */
static int check_bcast(const node_view *v, uint32_t *scratch, npurt_fault *f)
{
    const npurt_p_tshape *t = v->ts;
    int32_t op = v->node->op, dt = t[1].dtype;
    if (op == NPURT_N_EXPAND)
        return t[0].dtype == t[1].dtype && npurt_broadcasts(&t[0].shape, &t[1].shape, &t[1].shape)
                   ? 0
                   : bad(f, v, "Expand's input does not broadcast to its output");
    if (op == NPURT_N_WHERE) {
        npurt_p_shape ab;
        nk_shape as, bs, s;
        npurt_to_shape(&t[1].shape, &as);
        npurt_to_shape(&t[2].shape, &bs);
        if (t[0].dtype != NPURT_DT_BOOL || t[2].dtype != dt || t[3].dtype != dt ||
            !npurt_shape_ok(&t[1].shape) || !npurt_shape_ok(&t[2].shape) ||
            nk_shape_broadcast(&as, &bs, &s) != NK_OK)
            return bad(f, v, "Where takes a bool condition and two inputs of the output's dtype");
        ab.rank = s.rank;
        memcpy(ab.dims, s.dims, sizeof ab.dims);
        return npurt_broadcasts(&t[0].shape, &ab, &t[3].shape) ? 0 : bad(f, v, "Where's shapes do not broadcast");
    }
    dt = t[0].dtype;
    const npurt_p_n_binary *r = v->p;
    int mixed_pow = op == NPURT_N_BINARY && r->op == NK_BIN_POW && t[1].dtype != dt && t[2].dtype == dt;
    if ((t[1].dtype != dt && !mixed_pow) || !npurt_broadcasts(&t[0].shape, &t[1].shape, &t[2].shape))
        return bad(f, v, "the inputs differ in dtype or do not broadcast to the output");
    if (op == NPURT_N_COMPARE) {
        int32_t c = *(const int32_t *)v->p;
        return t[2].dtype == NPURT_DT_BOOL && c >= NK_CMP_EQUAL && c <= NK_CMP_GREATER &&
                       dt != NPURT_DT_F16 && dt != NPURT_DT_I16
                   ? 0
                   : bad(f, v, "a compare gives bool from f32, i64, i32, i8, u8 or bool");
    }
    int is_f = dt == NPURT_DT_F32, is_i = dt >= NPURT_DT_I64 && dt <= NPURT_DT_U8;
    int32_t et = t[1].dtype;
    if (t[2].dtype != dt || r->op < NK_BIN_ADD || r->op > NK_BIN_PRELU || !act_ok(&r->act) ||
        !(is_f || (is_i && r->op != NK_BIN_PRELU && r->act.kind == NK_ACT_NONE)) ||
        (mixed_pow && !(et == NPURT_DT_F32 || (et >= NPURT_DT_I64 && et <= NPURT_DT_U8))))
        return bad(f, v, "a binary op takes f32 or integers of one dtype (Pow: an exponent of another)");
    /* mixed Pow, as the reference: the operands cast in scratch (its layout) */
    uint64_t need = mixed_pow ? 4 * numel(v, 0) + 8 * numel(v, 1) + 4 * numel(v, 2) : 0;
    return scratch_of(need, scratch) ? bad(f, v, "Pow too large") : 0;
}

/* Tile, Cast, Not, integer Neg/Abs, Dropout. */
static int check_misc(const node_view *v, npurt_fault *f)
{
    const npurt_p_tshape *t = v->ts;
    switch (v->node->op) {
    case NPURT_N_TILE:
        if (!same_rank_dtype(v, 0, 1))
            return bad(f, v, "Tile keeps the dtype and rank");
        for (int d = 0; d < t[0].shape.rank; d++)
            if (dim(v, 0, d) == 0 ? dim(v, 1, d) != 0 : dim(v, 1, d) % dim(v, 0, d) != 0)
                return bad(f, v, "Tile's output is not a whole number of copies");
        return 0;
    case NPURT_N_CAST: return numel(v, 0) == numel(v, 1) ? 0 : bad(f, v, "Cast keeps the element count");
    case NPURT_N_NOT:
        return t[0].dtype == NPURT_DT_BOOL && t[1].dtype == NPURT_DT_BOOL && numel(v, 0) == numel(v, 1)
                   ? 0
                   : bad(f, v, "Not takes and gives bool");
    case NPURT_N_UNARY_INT: {
        int32_t u = *(const int32_t *)v->p;
        return (t[0].dtype == NPURT_DT_I32 || t[0].dtype == NPURT_DT_I64) && t[1].dtype == t[0].dtype &&
                       numel(v, 0) == numel(v, 1) && (u == NK_UN_NEG || u == NK_UN_ABS)
                   ? 0
                   : bad(f, v, "integer Neg or Abs of i32 or i64");
    }
    case NPURT_N_DROPOUT: {
        uint32_t ni = v->h->n_inputs, y = ni, m = ni + 1;
        if (ni > 3 || v->h->n_outputs > 2 || t[0].dtype == -1 || t[0].dtype != t[y].dtype ||
            numel(v, 0) != numel(v, y) ||
            (ni > 1 && t[1].dtype != -1 && (t[1].dtype != NPURT_DT_F32 || numel(v, 1) != 1)) ||
            (ni > 2 && t[2].dtype != -1 && (t[2].dtype != NPURT_DT_BOOL || numel(v, 2) != 1)) ||
            (v->h->n_outputs == 2 && t[m].dtype != -1 && (t[m].dtype != NPURT_DT_BOOL || numel(v, m) != numel(v, y))))
            return bad(f, v, "Dropout copies its input and gives an optional bool mask");
        return 0;
    }
    case NPURT_N_CLIP: {
        const npurt_p_n_clip *r = v->p;
        int32_t dt = t[0].dtype;
        if (!(dt == NPURT_DT_F32 || (dt >= NPURT_DT_I64 && dt <= NPURT_DT_U8 && r->act.kind == NK_ACT_NONE)) ||
            !act_ok(&r->act) || t[3].dtype != dt || numel(v, 0) != numel(v, 3))
            return bad(f, v, "Clip keeps an f32 or integer dtype");
        for (uint32_t i = 1; i < 3; i++)
            if (t[i].dtype != -1 && (t[i].dtype != dt || numel(v, i) != 1))
                return bad(f, v, "Clip's bounds are one value of the input's dtype");
        return 0;
    }
    default: return bad(f, v, "unknown node op %d");
    }
}

/* Max/Min of 1 or 3+ inputs: every step's broadcast fits the output, the last is it. */
static int check_variadic(const node_view *v, uint32_t *scratch, npurt_fault *f)
{
    const npurt_p_n_binary *r = v->p;
    uint32_t ni = v->h->n_inputs;
    int32_t dt = v->ts[0].dtype;
    if ((r->op != NK_BIN_MAX && r->op != NK_BIN_MIN) || !act_ok(&r->act) ||
        !(dt == NPURT_DT_F32 || (dt >= NPURT_DT_I64 && dt <= NPURT_DT_U8 && r->act.kind == NK_ACT_NONE)) ||
        !all_dtype(v, 0, ni + 1, dt))
        return bad(f, v, "Max/Min of f32 or integer inputs of one dtype");
    nk_shape acc, s, next, y;
    npurt_to_shape(&v->ts[0].shape, &acc);
    npurt_to_shape(&v->ts[ni].shape, &y);
    for (uint32_t k = 1; k < ni; k++) {
        npurt_to_shape(&v->ts[k].shape, &s);
        if (nk_shape_broadcast(&acc, &s, &next) != NK_OK)
            return bad(f, v, "the inputs do not broadcast");
        acc = next;
    }
    if (ni == 1 ? numel(v, 0) != numel(v, 1) : acc.rank != y.rank || memcmp(acc.dims, y.dims, sizeof(int32_t) * (size_t)y.rank))
        return bad(f, v, "the inputs do not broadcast to the output");
    return scratch_of(ni > 2 ? numel(v, ni) * elem_size(dt) : 0, scratch) ? bad(f, v, "too large") : 0;
}

static int check_op(const node_view *v, uint32_t *scratch, npurt_fault *f)
{
    switch (v->node->op) {
    case NPURT_N_CONV:
    case NPURT_N_CONV_T: return check_conv(v, scratch, f);
    case NPURT_N_GEMM: return check_gemm(v, scratch, f);
    case NPURT_N_MATMUL: return check_matmul(v, scratch, f);
    case NPURT_N_BATCHNORM:
    case NPURT_N_MAXPOOL:
    case NPURT_N_AVGPOOL:
    case NPURT_N_GAVGPOOL:
    case NPURT_N_GMAXPOOL:
    case NPURT_N_RESIZE: return check_nn(v, scratch, f);
    case NPURT_N_SLICE: return check_slice(v, f);
    case NPURT_N_CONCAT:
    case NPURT_N_SPLIT: return check_parts(v, f);
    case NPURT_N_PAD: return check_pad(v, f);
    case NPURT_N_GATHER: return check_gather(v, f);
    case NPURT_N_EXPAND:
    case NPURT_N_WHERE:
    case NPURT_N_COMPARE:
    case NPURT_N_BINARY: return check_bcast(v, scratch, f);
    case NPURT_N_VARIADIC: return check_variadic(v, scratch, f);
    default: return check_misc(v, f);
    }
}

int npurt_node_check(const void *rec, uint32_t size, uint32_t *scratch, npurt_fault *f)
{
    const npurt_rec_header *h = rec;
    *scratch = 0;
    uint32_t n = h->n_inputs + h->n_outputs, at = (uint32_t)sizeof *h + 4u * n;
    if (h->n_inputs > NPURT_REC_MAX_IO || h->n_outputs > NPURT_REC_MAX_IO || !h->n_inputs || !h->n_outputs)
        return npurt_fault_at(f, 12, "%d inputs and %d outputs", (int32_t)h->n_inputs, (int32_t)h->n_outputs);
    if ((uint64_t)at + sizeof(npurt_p_node) > size)
        return npurt_fault_at(f, at, "truncated: %d bytes", (int32_t)size, 0);
    node_view v;
    view_of(rec, &v);
    int32_t op = v.node->op;
    if (op <= 0 || op >= NPURT_N_COUNT)
        return npurt_fault_at(f, at, "unknown node op %d", op, 0);
    const nspec *s = &nspecs[op];
    if ((s->n_in >= 0 && h->n_inputs != (uint32_t)s->n_in) || (s->n_out >= 0 && h->n_outputs != (uint32_t)s->n_out))
        return npurt_fault_at(f, 12, "%d inputs and %d outputs: not what this op takes", (int32_t)h->n_inputs,
                              (int32_t)h->n_outputs);
    if (v.node->n_words != s->words)
        return npurt_fault_at(f, at + 4, "%d parameter words, the op has %d", v.node->n_words, s->words);
    uint64_t total = (uint64_t)v.at_p + 4u * (uint64_t)s->words;
    if (total != size)
        return npurt_fault_at(f, at, "record of %d bytes, its parts make %d", (int32_t)size,
                              total > 0x7fffffff ? INT32_MAX : (int32_t)total);
    for (uint32_t i = 0; i < n; i++) {
        const npurt_p_tshape *t = &v.ts[i];
        uint32_t ta = v.at_ts + i * (uint32_t)sizeof *t;
        if (t->dtype == -1 ? !(i < 32 && (s->optional >> i) & 1) : !elem_size(t->dtype))
            return npurt_fault_at(f, ta, "slot %d: dtype %d is not one this op takes there", (int32_t)i, t->dtype);
        if (!npurt_shape_ok(&t->shape))
            return npurt_fault_at(f, ta, "slot %d: bad shape", (int32_t)i, 0);
    }
    return check_op(&v, scratch, f);
}

int npurt_node_check_tensors(const npub_view *pv, const void *rec, npurt_fault *f)
{
    node_view v;
    view_of(rec, &v);
    const uint32_t *slot = npurt_rec_tensors(rec);
    for (uint32_t i = 0; i < v.h->n_inputs + v.h->n_outputs; i++) {
        uint32_t at = (uint32_t)sizeof *v.h + 4u * i;
        const npurt_p_tshape *t = &v.ts[i];
        if ((slot[i] == NPUB_NONE) != (t->dtype == -1))
            return npurt_fault_at(f, at, "tensor slot %d: empty in one place and not the other", (int32_t)i, 0);
        if (slot[i] == NPUB_NONE)
            continue;
        if (slot[i] >= pv->n_tensors)
            return npurt_fault_at(f, at, "tensor slot %d names tensor %d, out of range", (int32_t)i,
                                  (int32_t)slot[i]);
        const npub_tensor *nt = &pv->tensors[slot[i]];
        if (nt->dtype != t->dtype)
            return npurt_fault_at(f, at, "tensor slot %d has dtype %d, not the record's", (int32_t)i, nt->dtype);
        if ((uint64_t)nt->size != npurt_mul(npurt_shape_numel(&t->shape), elem_size(t->dtype)))
            return npurt_fault_at(f, at, "tensor slot %d holds %d bytes, not what the kernel uses", (int32_t)i,
                                  (int32_t)nt->size);
        if (i >= v.h->n_inputs && nt->region == NPUB_REGION_CONST)
            return npurt_fault_at(f, at, "output slot %d is a constant tensor", (int32_t)i, 0);
    }
    return 0;
}
