/* The float kernels' parameters of an IR node (ONNX attributes and shapes)
 * for the nn family (kernels/nk_nn.h): the reference runs the kernels on
 * them and the host NODE records (src/emit/hostops_node.c) carry them, so
 * both run a kernel on the same parameters. Messages name the attribute or
 * tensor at fault; the caller prefixes the node name and op type. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "kernels/nk_nn.h"
#include "numerics/numerics.h"

enum { MAX_SPATIAL = 3 };

/* Input i (or output when out) exists and is float32 with a known shape. */
static npu_status need_f32(const ir_tensor *t, const char *what, npu_err *err)
{
    if (!t)
        return npu_fail(err, NPU_EUSER, "missing %s", what);
    if (t->dtype != IR_F32)
        return npu_fail(err, NPU_EUSER, "%s '%s' is %s; the float reference takes f32 only", what, t->name,
                        ir_dtype_name(t->dtype));
    if (!t->shape_known)
        return npu_fail(err, NPU_EUSER, "%s '%s' has no known shape", what, t->name);
    return NPU_OK;
}

static const ir_tensor *opt_in(const ir_node *n, int i)
{
    return i < n->n_inputs ? n->inputs[i] : NULL;
}

static bool fits32(int64_t v)
{
    return v >= 0 && v <= INT32_MAX;
}

/* ---- shared geometry: kernel, strides, dilations, pads, auto_pad ----------- */

typedef struct geom {
    int sr; /* spatial rank */
    int64_t in[MAX_SPATIAL], out[MAX_SPATIAL], k[MAX_SPATIAL], s[MAX_SPATIAL], d[MAX_SPATIAL];
    int64_t pb[MAX_SPATIAL], pe[MAX_SPATIAL], op[MAX_SPATIAL]; /* op: ConvTranspose output_padding */
} geom;

static npu_status read_ints(const ir_node *n, const char *name, int count, int64_t def, int64_t *out, npu_err *err)
{
    int64_t tmp[2 * MAX_SPATIAL];
    int got = ir_attr_ints(n, name, tmp, 2 * MAX_SPATIAL);
    if (got < 0 || got == 0) {
        for (int i = 0; i < count; i++)
            out[i] = def;
        return NPU_OK;
    }
    if (got != count)
        return npu_fail(err, NPU_EUSER, "attribute %s has %d values, expected %d", name, got, count);
    memcpy(out, tmp, sizeof(int64_t) * (size_t)count);
    return NPU_OK;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Reads strides, dilations and pads (resolving auto_pad; for ConvTranspose
 * also output_padding and output_shape) for g->sr spatial dims whose
 * in, k and out are already set. */
static npu_status read_geom(const ir_node *n, bool transpose, geom *g, npu_err *err)
{
    npu_status st;
    int64_t pads[2 * MAX_SPATIAL];
    if ((st = read_ints(n, "strides", g->sr, 1, g->s, err)) || (st = read_ints(n, "dilations", g->sr, 1, g->d, err)) ||
        (st = read_ints(n, "pads", 2 * g->sr, 0, pads, err)))
        return st;
    if (transpose && (st = read_ints(n, "output_padding", g->sr, 0, g->op, err)))
        return st;
    if (!transpose)
        for (int i = 0; i < g->sr; i++)
            g->op[i] = 0;
    for (int i = 0; i < g->sr; i++) {
        if (g->s[i] < 1 || g->d[i] < 1 || g->s[i] > INT32_MAX || g->d[i] > INT32_MAX)
            return npu_fail(err, NPU_EUSER, "strides and dilations must be positive");
        g->pb[i] = pads[i];
        g->pe[i] = pads[g->sr + i];
        if (g->pb[i] < 0 || g->pe[i] < 0 || g->pb[i] > INT32_MAX || g->pe[i] > INT32_MAX)
            return npu_fail(err, NPU_EUSER, "attribute pads must be non-negative");
    }
    const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
    bool upper = strcmp(ap, "SAME_UPPER") == 0, lower = strcmp(ap, "SAME_LOWER") == 0;
    if (strcmp(ap, "VALID") == 0) {
        for (int i = 0; i < g->sr; i++)
            g->pb[i] = g->pe[i] = 0;
    } else if (!upper && !lower && strcmp(ap, "NOTSET") != 0) {
        return npu_fail(err, NPU_EUSER, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
    }
    int64_t oshape[IR_MAX_RANK];
    int nos = transpose ? ir_attr_ints(n, "output_shape", oshape, IR_MAX_RANK) : -1;
    if (nos > 0 && nos < g->sr)
        return npu_fail(err, NPU_EUSER, "attribute output_shape has %d values for %d spatial dims", nos, g->sr);
    for (int i = 0; i < g->sr; i++) {
        int64_t ek = (g->k[i] - 1) * g->d[i] + 1, total;
        if (transpose && (nos > 0 || upper || lower)) {
            /* ONNX ConvTranspose: total padding from the wanted output size */
            int64_t want = nos > 0 ? oshape[nos - g->sr + i] : g->in[i] * g->s[i];
            total = g->s[i] * (g->in[i] - 1) + g->op[i] + ek - want;
            int64_t half = floor_div(total, 2);
            g->pb[i] = upper ? half : total - half;
            g->pe[i] = total - g->pb[i];
        } else if (!transpose && (upper || lower)) {
            int64_t out = (g->in[i] + g->s[i] - 1) / g->s[i];
            total = (out - 1) * g->s[i] + ek - g->in[i];
            if (total < 0)
                total = 0;
            g->pb[i] = upper ? total / 2 : total - total / 2;
            g->pe[i] = total - g->pb[i];
        }
        if (transpose && g->pe[i] < 0) { /* a larger output than the natural one is output padding */
            g->op[i] -= g->pe[i];
            g->pe[i] = 0;
        }
    }
    return NPU_OK;
}

/* ---- Conv, ConvTranspose --------------------------------------------------------- */

npu_status ref_conv_params(const ir_node *n, bool transpose, nk_conv_params *p, npu_err *err)
{
    npu_status st;
    const ir_tensor *x = opt_in(n, 0), *w = opt_in(n, 1), *b = opt_in(n, 2), *y = n->n_outputs ? n->outputs[0] : NULL;
    if ((st = need_f32(x, "input X", err)) || (st = need_f32(w, "weights W", err)) ||
        (b && (st = need_f32(b, "bias B", err))) || (st = need_f32(y, "output Y", err)))
        return st;
    if (x->rank != 3 && x->rank != 4)
        return npu_fail(err, NPU_EUSER, "input X has rank %d; only 1-D and 2-D convolutions are supported",
                        x->rank);
    if (w->rank != x->rank || y->rank != x->rank)
        return npu_fail(err, NPU_EUSER, "weights W and output Y must have the rank of X (%d)", x->rank);
    int64_t group = ir_attr_int(n, "group", 1);
    geom g = {.sr = x->rank - 2};
    for (int i = 0; i < g.sr; i++) {
        g.in[i] = x->dims[2 + i];
        g.k[i] = w->dims[2 + i];
        g.out[i] = y->dims[2 + i];
    }
    int64_t ks[MAX_SPATIAL];
    int nk = ir_attr_ints(n, "kernel_shape", ks, MAX_SPATIAL);
    if (nk > 0 && (nk != g.sr || memcmp(ks, g.k, sizeof(int64_t) * (size_t)g.sr) != 0))
        return npu_fail(err, NPU_EUSER, "attribute kernel_shape does not match the weights' shape");
    if ((st = read_geom(n, transpose, &g, err)))
        return st;
    int64_t c = x->dims[1], m = transpose ? w->dims[1] * group : w->dims[0];
    if (group < 1 || c % group || m % group || (transpose ? w->dims[0] != c : w->dims[1] * group != c))
        return npu_fail(err, NPU_EUSER, "weights W %s do not fit %" PRId64 " input channels in %" PRId64 " groups",
                        w->name, c, group);
    if (y->dims[0] != x->dims[0] || y->dims[1] != m)
        return npu_fail(err, NPU_EUSER, "output Y has the wrong batch or channel count");
    if (b && (b->rank != 1 || b->dims[0] != m))
        return npu_fail(err, NPU_EUSER, "bias B must have %" PRId64 " elements", m);
    for (int i = 0; i < g.sr; i++) {
        int64_t ek = (g.k[i] - 1) * g.d[i] + 1, want;
        if (transpose)
            want = g.s[i] * (g.in[i] - 1) + g.op[i] + ek - g.pb[i] - g.pe[i];
        else
            want = g.in[i] + g.pb[i] + g.pe[i] < ek ? 0 : (g.in[i] + g.pb[i] + g.pe[i] - ek) / g.s[i] + 1;
        if (want != g.out[i])
            return npu_fail(err, NPU_EUSER, "output Y spatial dim %d is %" PRId64 ", the attributes give %" PRId64, i,
                            g.out[i], want);
    }
    int64_t all[] = {x->dims[0], c, m, group, g.in[0], g.out[0], g.k[0], g.in[g.sr - 1], g.out[g.sr - 1],
                     g.k[g.sr - 1], g.op[0], g.op[g.sr - 1]};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!fits32(all[i]))
            return npu_fail(err, NPU_EUSER, "a dimension exceeds the kernels' 32-bit range");
    int h = g.sr == 2; /* index of the width dim; 1-D runs as height 1 */
    *p = (nk_conv_params){.n = (int32_t)x->dims[0], .c = (int32_t)c, .m = (int32_t)m, .group = (int32_t)group,
                          .h = h ? (int32_t)g.in[0] : 1, .w = (int32_t)g.in[h],
                          .oh = h ? (int32_t)g.out[0] : 1, .ow = (int32_t)g.out[h],
                          .kh = h ? (int32_t)g.k[0] : 1, .kw = (int32_t)g.k[h],
                          .stride_h = h ? (int32_t)g.s[0] : 1, .stride_w = (int32_t)g.s[h],
                          .dil_h = h ? (int32_t)g.d[0] : 1, .dil_w = (int32_t)g.d[h],
                          .pad_top = h ? (int32_t)g.pb[0] : 0, .pad_left = (int32_t)g.pb[h],
                          .pad_bottom = h ? (int32_t)g.pe[0] : 0, .pad_right = (int32_t)g.pe[h],
                          .out_pad_h = h ? (int32_t)g.op[0] : 0, .out_pad_w = (int32_t)g.op[h],
                          .act = ref_nk_act(n->act)};
    return NPU_OK;
}

/* ---- Gemm, MatMul ------------------------------------------------------------------ */

npu_status ref_gemm_params(const ir_node *n, nk_gemm_params *p, npu_err *err)
{
    npu_status st;
    const ir_tensor *a = opt_in(n, 0), *b = opt_in(n, 1), *c = opt_in(n, 2), *y = n->n_outputs ? n->outputs[0] : NULL;
    if ((st = need_f32(a, "input A", err)) || (st = need_f32(b, "input B", err)) ||
        (c && (st = need_f32(c, "input C", err))) || (st = need_f32(y, "output Y", err)))
        return st;
    if (a->rank != 2 || b->rank != 2 || y->rank != 2)
        return npu_fail(err, NPU_EUSER, "Gemm takes 2-D A and B");
    int ta = ir_attr_int(n, "transA", 0) != 0, tb = ir_attr_int(n, "transB", 0) != 0;
    int64_t m = a->dims[ta], k = a->dims[!ta], n_ = b->dims[!tb];
    if (b->dims[tb] != k)
        return npu_fail(err, NPU_EUSER, "A and B disagree on K (%" PRId64 " vs %" PRId64 ")", k, b->dims[tb]);
    if (y->dims[0] != m || y->dims[1] != n_)
        return npu_fail(err, NPU_EUSER, "output Y must be %" PRId64 "x%" PRId64, m, n_);
    if (!fits32(m) || !fits32(n_) || !fits32(k))
        return npu_fail(err, NPU_EUSER, "a dimension exceeds the kernels' 32-bit range");
    int64_t cr = 1, cc = 1;
    if (c) {
        if (c->rank > 2)
            return npu_fail(err, NPU_EUSER, "input C has rank %d", c->rank);
        if (c->rank >= 1)
            cc = c->dims[c->rank - 1];
        if (c->rank == 2)
            cr = c->dims[0];
        if ((cr != 1 && cr != m) || (cc != 1 && cc != n_))
            return npu_fail(err, NPU_EUSER, "input C does not broadcast to %" PRId64 "x%" PRId64, m, n_);
    }
    *p = (nk_gemm_params){.m = (int32_t)m, .n = (int32_t)n_, .k = (int32_t)k, .trans_a = ta, .trans_b = tb,
                          .alpha = ir_attr_float(n, "alpha", 1.0f), .beta = ir_attr_float(n, "beta", 1.0f),
                          .c_rows = (int32_t)cr, .c_cols = (int32_t)cc, .act = ref_nk_act(n->act)};
    return NPU_OK;
}

npu_status ref_matmul_params(const ir_node *n, nk_matmul_params *p, npu_err *err)
{
    npu_status st;
    const ir_tensor *a = opt_in(n, 0), *b = opt_in(n, 1), *y = n->n_outputs ? n->outputs[0] : NULL;
    if ((st = need_f32(a, "input A", err)) || (st = need_f32(b, "input B", err)) ||
        (st = need_f32(y, "output Y", err)))
        return st;
    if (a->rank < 1 || b->rank < 1)
        return npu_fail(err, NPU_EUSER, "MatMul inputs must have rank >= 1");
    /* numpy: a 1-D A is a row (1, K), a 1-D B a column (K, 1); that dim is dropped from Y */
    if (a->rank > NK_MAX_RANK || b->rank > NK_MAX_RANK)
        return npu_fail(err, NPU_EUSER, "MatMul inputs have rank above %d", NK_MAX_RANK);
    for (int i = 0; i < a->rank; i++)
        if (!fits32(a->dims[i]))
            return npu_fail(err, NPU_EUSER, "a dimension exceeds the kernels' 32-bit range");
    for (int i = 0; i < b->rank; i++)
        if (!fits32(b->dims[i]))
            return npu_fail(err, NPU_EUSER, "a dimension exceeds the kernels' 32-bit range");
    nk_shape sa = {.rank = a->rank == 1 ? 2 : a->rank}, sb = {.rank = b->rank == 1 ? 2 : b->rank};
    for (int i = 0; i < a->rank; i++) /* right-aligned: a 1-D A lands in dims[1] after a leading 1 */
        sa.dims[sa.rank - a->rank + i] = (int32_t)a->dims[i];
    if (a->rank == 1)
        sa.dims[0] = 1;
    for (int i = 0; i < b->rank; i++) /* left-aligned: a 1-D B lands in dims[0] before a trailing 1 */
        sb.dims[i] = (int32_t)b->dims[i];
    if (b->rank == 1)
        sb.dims[1] = 1;
    if (sa.dims[sa.rank - 1] != sb.dims[sb.rank - 2])
        return npu_fail(err, NPU_EUSER, "A and B disagree on K (%d vs %d)", (int)sa.dims[sa.rank - 1],
                        (int)sb.dims[sb.rank - 2]);
    /* Y: broadcast batch, then M (unless A was 1-D), then N (unless B was 1-D) */
    int br = (sa.rank > sb.rank ? sa.rank : sb.rank) - 2;
    int64_t want[IR_MAX_RANK + 2];
    int wr = 0;
    for (int i = 0; i < br; i++) {
        int ia = i - (br - (sa.rank - 2)), ib = i - (br - (sb.rank - 2));
        int64_t da = ia >= 0 ? sa.dims[ia] : 1, db = ib >= 0 ? sb.dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return npu_fail(err, NPU_EUSER, "batch dims of A and B do not broadcast");
        want[wr++] = da == 1 ? db : da;
    }
    if (a->rank > 1)
        want[wr++] = sa.dims[sa.rank - 2];
    if (b->rank > 1)
        want[wr++] = sb.dims[sb.rank - 1];
    if (wr != y->rank || memcmp(want, y->dims, sizeof(int64_t) * (size_t)wr) != 0)
        return npu_fail(err, NPU_EUSER, "output Y '%s' does not have the broadcast shape of A x B", y->name);
    p->a = sa;
    p->b = sb;
    return NPU_OK;
}

/* ---- BatchNormalization -------------------------------------------------------------- */

npu_status ref_batchnorm_params(const ir_node *n, nk_batchnorm_params *p, npu_err *err)
{
    npu_status st;
    const ir_tensor *x = opt_in(n, 0), *y = n->n_outputs ? n->outputs[0] : NULL;
    static const char *const names[] = {"input X", "scale", "bias B", "input_mean", "input_var"};
    for (int i = 0; i < 5; i++)
        if ((st = need_f32(opt_in(n, i), names[i], err)))
            return st;
    if ((st = need_f32(y, "output Y", err)))
        return st;
    if (ir_attr_int(n, "training_mode", 0) != 0)
        return npu_fail(err, NPU_EUSER, "training_mode=1 is not supported (inference only)");
    for (int i = 1; i < n->n_outputs; i++)
        if (n->outputs[i])
            return npu_fail(err, NPU_EUSER, "the running mean/var outputs (training) are not supported");
    if (x->rank < 2 || !ir_shape_equal(x, y))
        return npu_fail(err, NPU_EUSER, "input X must have rank >= 2 and the shape of Y");
    for (int i = 1; i < 5; i++)
        if (n->inputs[i]->rank != 1 || n->inputs[i]->dims[0] != x->dims[1])
            return npu_fail(err, NPU_EUSER, "%s must have %" PRId64 " elements", names[i], x->dims[1]);
    int64_t spatial = 1;
    for (int i = 2; i < x->rank; i++)
        spatial *= x->dims[i];
    if (!fits32(x->dims[0]) || !fits32(x->dims[1]))
        return npu_fail(err, NPU_EUSER, "a dimension exceeds the kernels' 32-bit range");
    *p = (nk_batchnorm_params){.n = (int32_t)x->dims[0], .c = (int32_t)x->dims[1], .spatial = spatial,
                               .epsilon = ir_attr_float(n, "epsilon", 1e-5f), .act = ref_nk_act(n->act)};
    return NPU_OK;
}

/* ---- pools ------------------------------------------------------------------------------ */

npu_status ref_pool_params(const ir_node *n, nk_pool_params *p, npu_err *err)
{
    npu_status st;
    const ir_tensor *x = opt_in(n, 0), *y = n->n_outputs ? n->outputs[0] : NULL;
    if ((st = need_f32(x, "input X", err)) || (st = need_f32(y, "output Y", err)))
        return st;
    if (x->rank < 3 || x->rank > 2 + MAX_SPATIAL || y->rank != x->rank)
        return npu_fail(err, NPU_EUSER, "input X has rank %d; pools take 1-D to 3-D spatial inputs", x->rank);
    geom g = {.sr = x->rank - 2};
    int64_t ks[MAX_SPATIAL];
    if (ir_attr_ints(n, "kernel_shape", ks, MAX_SPATIAL) != g.sr)
        return npu_fail(err, NPU_EUSER, "attribute kernel_shape must have %d values", g.sr);
    for (int i = 0; i < g.sr; i++) {
        g.in[i] = x->dims[2 + i];
        g.k[i] = ks[i];
        g.out[i] = y->dims[2 + i];
        if (g.k[i] < 1)
            return npu_fail(err, NPU_EUSER, "attribute kernel_shape must be positive");
    }
    if ((st = read_geom(n, false, &g, err)))
        return st;
    if (y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1])
        return npu_fail(err, NPU_EUSER, "output Y has the wrong batch or channel count");
    bool ceil_mode = ir_attr_int(n, "ceil_mode", 0) != 0;
    memset(p, 0, sizeof *p);
    for (int i = 0; i < g.sr; i++) {
        int64_t span = g.in[i] + g.pb[i] + g.pe[i] - ((g.k[i] - 1) * g.d[i] + 1);
        int64_t want = span < 0 ? 0 : (ceil_mode ? (span + g.s[i] - 1) / g.s[i] : span / g.s[i]) + 1;
        /* ceil_mode: onnxruntime and PyTorch drop a last window that starts past
         * the input and its begin padding; older shape inference keeps it. */
        bool dropped = ceil_mode && want > 1 && (want - 1) * g.s[i] >= g.in[i] + g.pb[i];
        if (want != g.out[i] && !(dropped && want - 1 == g.out[i]))
            return npu_fail(err, NPU_EUSER, "output Y spatial dim %d is %" PRId64 ", the attributes give %" PRId64, i,
                            g.out[i], dropped ? want - 1 : want);
        if (!fits32(g.in[i]) || !fits32(g.out[i]) || !fits32(g.k[i]))
            return npu_fail(err, NPU_EUSER, "a dimension exceeds the kernels' 32-bit range");
        p->in[i] = (int32_t)g.in[i];
        p->out[i] = (int32_t)g.out[i];
        p->kernel[i] = (int32_t)g.k[i];
        p->stride[i] = (int32_t)g.s[i];
        p->dilation[i] = (int32_t)g.d[i];
        p->pad_begin[i] = (int32_t)g.pb[i];
        p->pad_end[i] = (int32_t)g.pe[i];
    }
    if (!fits32(x->dims[0]) || !fits32(x->dims[1]))
        return npu_fail(err, NPU_EUSER, "a dimension exceeds the kernels' 32-bit range");
    p->n = (int32_t)x->dims[0];
    p->c = (int32_t)x->dims[1];
    p->rank = g.sr;
    p->count_include_pad = ir_attr_int(n, "count_include_pad", 0) != 0;
    p->storage_order = ir_attr_int(n, "storage_order", 0) != 0;
    return NPU_OK;
}

npu_status ref_global_pool_params(const ir_node *n, nk_global_pool_params *p, npu_err *err)
{
    npu_status st;
    const ir_tensor *x = opt_in(n, 0), *y = n->n_outputs ? n->outputs[0] : NULL;
    if ((st = need_f32(x, "input X", err)) || (st = need_f32(y, "output Y", err)))
        return st;
    if (x->rank < 3 || y->rank != x->rank || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1] ||
        ir_tensor_numel(y) != x->dims[0] * x->dims[1])
        return npu_fail(err, NPU_EUSER, "input X must be (N, C, spatial...) and Y (N, C, 1, ...)");
    if (!fits32(x->dims[0]) || !fits32(x->dims[1]))
        return npu_fail(err, NPU_EUSER, "a dimension exceeds the kernels' 32-bit range");
    int64_t sp = 1;
    for (int i = 2; i < x->rank; i++)
        sp *= x->dims[i];
    *p = (nk_global_pool_params){(int32_t)x->dims[0], (int32_t)x->dims[1], sp};
    return NPU_OK;
}

/* ---- Resize, Upsample --------------------------------------------------------------------- */

typedef struct name_val {
    const char *name;
    int val;
} name_val;

static npu_status pick(const char *what, const char *s, const name_val *tab, int *out, npu_err *err)
{
    for (const name_val *t = tab; t->name; t++)
        if (strcmp(s, t->name) == 0) {
            *out = t->val;
            return NPU_OK;
        }
    return npu_fail(err, NPU_EUSER, "%s '%s' is not supported", what, s);
}

static const name_val modes[] = {
    {"nearest", NK_RESIZE_NEAREST}, {"linear", NK_RESIZE_LINEAR}, {"bilinear", NK_RESIZE_LINEAR},
    {"cubic", NK_RESIZE_CUBIC},     {NULL, 0},
};
static const name_val coords[] = {
    {"half_pixel", NK_COORD_HALF_PIXEL},
    {"pytorch_half_pixel", NK_COORD_PYTORCH_HALF_PIXEL},
    {"align_corners", NK_COORD_ALIGN_CORNERS},
    {"asymmetric", NK_COORD_ASYMMETRIC},
    {"tf_half_pixel_for_nn", NK_COORD_TF_HALF_PIXEL_FOR_NN},
    {"tf_crop_and_resize", NK_COORD_TF_CROP_AND_RESIZE},
    {NULL, 0},
};
static const name_val nearests[] = {
    {"round_prefer_floor", NK_NEAREST_ROUND_PREFER_FLOOR},
    {"round_prefer_ceil", NK_NEAREST_ROUND_PREFER_CEIL},
    {"floor", NK_NEAREST_FLOOR},
    {"ceil", NK_NEAREST_CEIL},
    {NULL, 0},
};

/* Shapes and attributes; the scale values are filled in by the caller
 * (they come from input data). */
static npu_status resize_params(const ir_node *n, bool upsample, nk_resize_params *p, npu_err *err)
{
    npu_status st;
    const ir_tensor *x = opt_in(n, 0), *y = n->n_outputs ? n->outputs[0] : NULL;
    if ((st = need_f32(x, "input X", err)) || (st = need_f32(y, "output Y", err)))
        return st;
    if (x->rank < 1 || x->rank > NK_MAX_RANK || y->rank != x->rank)
        return npu_fail(err, NPU_EUSER, "input X and output Y must have the same rank (1 to %d)", NK_MAX_RANK);
    memset(p, 0, sizeof *p);
    p->rank = x->rank;
    for (int d = 0; d < x->rank; d++) {
        if (!fits32(x->dims[d]) || !fits32(y->dims[d]) || x->dims[d] < 1)
            return npu_fail(err, NPU_EUSER, "input X must not be empty and dims must fit 32 bits");
        p->in[d] = (int32_t)x->dims[d];
        p->out[d] = (int32_t)y->dims[d];
        p->scale[d] = 0.0f; /* out / in, unless scales are given */
        p->roi_start[d] = 0.0f;
        p->roi_end[d] = 1.0f;
    }
    int v = 0;
    if ((st = pick("mode", ir_attr_string(n, "mode", "nearest"), modes, &v, err)))
        return st;
    p->mode = (nk_resize_mode)v;
    /* Upsample and Resize-10 (X, scales) predate the coordinate attributes:
     * asymmetric coordinates, nearest by floor (ceil when downsampling), as
     * onnxruntime runs them */
    if (upsample || n->n_inputs == 2) {
        if (p->mode == NK_RESIZE_CUBIC)
            return npu_fail(err, NPU_EUSER, "mode 'cubic' needs Resize-11 or later");
        p->coord = NK_COORD_ASYMMETRIC;
        p->nearest = NK_NEAREST_SIMPLE;
        return NPU_OK;
    }
    if (ir_attr_find(n, "axes") ||
        strcmp(ir_attr_string(n, "keep_aspect_ratio_policy", "stretch"), "stretch") != 0)
        return npu_fail(err, NPU_EUSER, "attributes axes and keep_aspect_ratio_policy (Resize-18) are not supported");
    if ((st = pick("coordinate_transformation_mode", ir_attr_string(n, "coordinate_transformation_mode", "half_pixel"),
                   coords, &v, err)))
        return st;
    p->coord = (nk_resize_coord)v;
    if ((st = pick("nearest_mode", ir_attr_string(n, "nearest_mode", "round_prefer_floor"), nearests, &v, err)))
        return st;
    p->nearest = (nk_resize_nearest)v;
    p->cubic_a = ir_attr_float(n, "cubic_coeff_a", -0.75f);
    p->exclude_outside = ir_attr_int(n, "exclude_outside", 0) != 0;
    p->extrapolation_value = ir_attr_float(n, "extrapolation_value", 0.0f);
    if (ir_attr_int(n, "antialias", 0) != 0)
        return npu_fail(err, NPU_EUSER, "antialias=1 is not supported");
    return NPU_OK;
}

/* A float vector input (scales, roi) of `count` values; f32 only. */
static npu_status float_values(const ir_tensor *t, const void *data, int count, const char *what, float *out,
                               npu_err *err)
{
    if (t->dtype != IR_F32 || ir_tensor_numel(t) != count)
        return npu_fail(err, NPU_EUSER, "%s '%s' must be %d float32 values", what, t->name, count);
    if (!data)
        return npu_fail(err, NPU_EUSER, "%s '%s' has no value", what, t->name);
    memcpy(out, data, sizeof(float) * (size_t)count);
    return NPU_OK;
}

npu_status ref_resize_params(const ir_node *n, const void *const *in, nk_resize_params *out, npu_err *err)
{
    nk_resize_params p;
    bool upsample = n->op == IR_OP_UPSAMPLE;
    npu_status st = resize_params(n, upsample, &p, err);
    if (st)
        return st;
    /* Resize-11+: (X, roi, scales, sizes); Resize-10 and Upsample-9: (X, scales);
     * Upsample-7: attribute scales. An empty tensor counts as absent. */
    int iscale = n->n_inputs == 2 ? 1 : 2, iroi = n->n_inputs == 2 ? -1 : 1, isize = 3;
    const ir_tensor *ts = opt_in(n, iscale), *tr = iroi > 0 ? opt_in(n, iroi) : NULL, *tz = opt_in(n, isize);
    float scales[NK_MAX_RANK];
    bool have_scales = false;
    if (ts && ir_tensor_numel(ts) > 0) {
        if ((st = float_values(ts, in[iscale], p.rank, "scales", scales, err)))
            return st;
        have_scales = true;
    } else if (upsample && ir_attr_find(n, "scales") && ir_attr_find(n, "scales")->kind == IR_ATTR_FLOATS) {
        const ir_attr *a = ir_attr_find(n, "scales");
        if (a->n != p.rank)
            return npu_fail(err, NPU_EUSER, "attribute scales must have %d values", p.rank);
        memcpy(scales, a->floats, sizeof(float) * (size_t)p.rank);
        have_scales = true;
    }
    if (tz && ir_tensor_numel(tz) > 0) {
        if (have_scales)
            return npu_fail(err, NPU_EUSER, "only one of scales and sizes may be given");
        if (tz->dtype != IR_I64 || ir_tensor_numel(tz) != p.rank || !in[isize])
            return npu_fail(err, NPU_EUSER, "sizes '%s' must be %d int64 values", tz->name, p.rank);
        const int64_t *sz = in[isize];
        for (int d = 0; d < p.rank; d++)
            if (sz[d] != p.out[d])
                return npu_fail(err, NPU_EUSER, "sizes disagree with the shape of output Y");
    } else if (have_scales) {
        for (int d = 0; d < p.rank; d++) {
            if (!(scales[d] > 0.0f) || isinf(scales[d]))
                return npu_fail(err, NPU_EUSER, "scales must be positive");
            p.scale[d] = scales[d];
        }
    } else {
        return npu_fail(err, NPU_EUSER, "one of scales and sizes must be given");
    }
    if (p.coord == NK_COORD_TF_CROP_AND_RESIZE) {
        float roi[2 * NK_MAX_RANK];
        if (!tr || ir_tensor_numel(tr) == 0)
            return npu_fail(err, NPU_EUSER, "tf_crop_and_resize needs the roi input");
        if ((st = float_values(tr, in[iroi], 2 * p.rank, "roi", roi, err)))
            return st;
        for (int d = 0; d < p.rank; d++) {
            p.roi_start[d] = roi[d];
            p.roi_end[d] = roi[p.rank + d];
        }
    }
    *out = p;
    return NPU_OK;
}

npu_status ref_resize_shape_params(const ir_node *n, nk_resize_params *p, npu_err *err)
{
    return resize_params(n, n->op == IR_OP_UPSAMPLE, p, err);
}
