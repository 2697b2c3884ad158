/* Statistics of the input patches of every Conv / Gemm during calibration:
 * the mean patch (bias correction: the mean output error of a weight error
 * dw is dw . E[p]) and the second moment E[p p^T] (adaptive rounding: the
 * output MSE of dw is dw^T E[p p^T] dw). Patches are taken in the weights'
 * own order (c_in/groups, k_h, k_w), zeros where the window hits padding. */
#include <string.h>

#include "kernels/nk_common.h"
#include "quantize/quantize_internal.h"

enum {
    GRAM_POSITIONS = 64,           /* output positions per sample feeding the second moment, at most */
    GRAM_MIN_POSITIONS = 8,        /* and at least */
    GRAM_MAX_K = 3200,             /* longest patch with a second moment */
    GRAM_BATCH = 128,              /* patches (across samples) added to the second moment at once */
};
#define GRAM_MAX_DOUBLES (16u << 20) /* per layer: 128 MiB */

typedef struct geom {
    int64_t n, c, h, w;            /* input */
    int64_t oh, ow, kh, kw;
    int64_t sh, sw, dh, dw, pt, pl;
    int groups;
} geom;

/* Where one kernel tap reads, the same for every plane of a layer (worked
 * out once per sample: the divisions cost more than a small plane's sums). */
typedef struct tap_span {
    int64_t oy0, oy1, cy; /* output rows (oy0 > oy1: only padding), input row = oy * sh + cy */
    int64_t x0, x1;       /* input columns of the first and last output column */
    int64_t at, cnt;      /* strided columns: the first one's prefix sum in a row (add_tap_sums), and how many */
} tap_span;

struct q_lstats {
    npu_alloc alloc;
    bool means;                    /* the mean patches (bias correction) wanted */
    int n, cap;                    /* layers, and the arrays' length */
    q_layer_stats *l;
    geom *geo;
    int *input_id;                 /* tensor id of each layer's input */
    uint64_t *samples;             /* observations (for the position offset) */
    float **wait;                  /* per layer with a second moment: [groups][GRAM_BATCH][ld] patches waiting */
    int *n_wait;                   /* per layer: patches waiting (in each of its groups) */
    double *rows;                  /* scratch: strided row prefix sums of one input plane */
    int64_t rows_cap;
    int64_t *tap_at;               /* scratch: per kernel tap, its offset in a plane at one position (-1: padding) */
    tap_span *spans;               /* scratch: per kernel tap, where it reads for the mean */
    int64_t taps_cap;
};

/* Begin pad of one spatial axis ("pads" or "auto_pad"). */
static int64_t pad_begin(const ir_node *n, int axis, int rank, int64_t in, int64_t out, int64_t k, int64_t s,
                         int64_t d)
{
    const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
    if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        int64_t total = (out - 1) * s + (k - 1) * d + 1 - in;
        total = total > 0 ? total : 0;
        return !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
    }
    if (!strcmp(ap, "VALID"))
        return 0;
    int64_t pads[2 * IR_MAX_RANK];
    int np = ir_attr_ints(n, "pads", pads, 2 * IR_MAX_RANK);
    return np == 2 * rank ? pads[axis] : 0;
}

static bool conv_geom(const ir_node *n, geom *g)
{
    const ir_tensor *x = n->inputs[0], *w = n->inputs[1], *y = n->outputs[0];
    if ((x->rank != 4 && x->rank != 3) || w->rank != x->rank || y->rank != x->rank)
        return false;
    bool one_d = x->rank == 3;
    int64_t st[2] = {1, 1}, dl[2] = {1, 1};
    int ns = ir_attr_ints(n, "strides", st, 2), nd = ir_attr_ints(n, "dilations", dl, 2);
    if (one_d) {
        st[1] = ns > 0 ? st[0] : 1, st[0] = 1;
        dl[1] = nd > 0 ? dl[0] : 1, dl[0] = 1;
    }
    g->n = x->dims[0], g->c = x->dims[1];
    g->h = one_d ? 1 : x->dims[2], g->w = x->dims[x->rank - 1];
    g->oh = one_d ? 1 : y->dims[2], g->ow = y->dims[y->rank - 1];
    g->kh = one_d ? 1 : w->dims[2], g->kw = w->dims[w->rank - 1];
    g->sh = st[0], g->sw = st[1], g->dh = dl[0], g->dw = dl[1];
    int sr = x->rank - 2;
    g->pt = one_d ? 0 : pad_begin(n, 0, sr, g->h, g->oh, g->kh, g->sh, g->dh);
    g->pl = pad_begin(n, sr - 1, sr, g->w, g->ow, g->kw, g->sw, g->dw);
    g->groups = (int)ir_attr_int(n, "group", 1);
    return g->groups > 0 && g->c % g->groups == 0;
}

/* Row stride of the waiting patches: whole tiles of q_gram_add, zero padded. */
static int64_t wait_ld(int64_t k)
{
    return (k + Q_GRAM_PAD - 1) / Q_GRAM_PAD * Q_GRAM_PAD;
}

static size_t wait_bytes(const q_layer_stats *l)
{
    return sizeof(float) * (size_t)l->groups * GRAM_BATCH * (size_t)wait_ld(l->k);
}

void q_lstats_free(q_lstats *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        q_layer_stats *l = &s->l[i];
        npu_free(s->alloc, l->mean, sizeof(double) * (size_t)(l->groups * l->k));
        if (l->gram)
            npu_free(s->alloc, l->gram, sizeof(double) * (size_t)(l->groups * l->k * l->k));
        if (s->wait && s->wait[i])
            npu_free(s->alloc, s->wait[i], wait_bytes(l));
    }
    size_t c1 = (size_t)(s->cap ? s->cap : 1);
    npu_free(s->alloc, s->l, sizeof *s->l * c1);
    npu_free(s->alloc, s->geo, sizeof *s->geo * c1);
    npu_free(s->alloc, s->input_id, sizeof *s->input_id * c1);
    npu_free(s->alloc, s->samples, sizeof *s->samples * c1);
    npu_free(s->alloc, s->wait, sizeof *s->wait * c1);
    npu_free(s->alloc, s->n_wait, sizeof *s->n_wait * c1);
    npu_free(s->alloc, s->rows, sizeof(double) * (size_t)s->rows_cap);
    npu_free(s->alloc, s->tap_at, sizeof *s->tap_at * (size_t)s->taps_cap);
    npu_free(s->alloc, s->spans, sizeof *s->spans * (size_t)s->taps_cap);
    npu_free(s->alloc, s, sizeof *s);
}

static int64_t gram_positions(int64_t k);

/* Patches a layer's second moment gets per calibration sample. */
static int64_t patches_per_sample(const ir_node *n, const geom *ge, int64_t k)
{
    if (!ge->kh)
        return k ? ir_tensor_numel(n->inputs[0]) / k : 0;
    int64_t npos = ge->oh * ge->ow, want = gram_positions(k);
    return ge->n * (npos < want ? npos : want);
}

q_lstats *q_lstats_new(const ir_graph *g, bool gram, bool means, int64_t n_samples, npu_alloc alloc, npu_err *err)
{
    q_lstats *s = npu_malloc(alloc, sizeof *s);
    if (!s) {
        npu_fail(err, NPU_EINTERNAL, "out of memory");
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->alloc = alloc;
    s->means = means;
    int cap = 0;
    for (int i = 0; i < g->n_nodes; i++)
        cap += !g->nodes[i]->dead && q_classify(g->nodes[i]) == Q_KIND_WEIGHTED;
    size_t c1 = (size_t)(cap ? cap : 1);
    s->cap = cap;
    s->l = npu_malloc(alloc, sizeof *s->l * c1);
    s->geo = npu_malloc(alloc, sizeof *s->geo * c1);
    s->input_id = npu_malloc(alloc, sizeof *s->input_id * c1);
    s->samples = npu_malloc(alloc, sizeof *s->samples * c1);
    s->wait = npu_malloc(alloc, sizeof *s->wait * c1);
    s->n_wait = npu_malloc(alloc, sizeof *s->n_wait * c1);
    if (s->wait)
        memset(s->wait, 0, sizeof *s->wait * c1);
    if (!s->l || !s->geo || !s->input_id || !s->samples || !s->wait || !s->n_wait) {
        q_lstats_free(s);
        npu_fail(err, NPU_EINTERNAL, "out of memory");
        return NULL;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead || q_classify(n) != Q_KIND_WEIGHTED || n->inputs[0]->dtype != IR_F32)
            continue;
        q_layer_stats l = {.node = n->name, .groups = 1};
        geom ge = {0};
        if (n->op == IR_OP_CONV) {
            if (!conv_geom(n, &ge))
                continue;
            l.groups = ge.groups;
            l.k = ge.c / ge.groups * ge.kh * ge.kw;
        } else {
            /* Gemm [M, K], or a MatMul by a constant on [..., K] (a transformer's
             * tokens): the rows of the last axis are the patches */
            l.k = n->inputs[0]->dims[n->inputs[0]->rank - 1];
        }
        size_t nm = (size_t)(l.groups * l.k);
        l.mean = npu_malloc(alloc, sizeof(double) * nm);
        bool want_gram = gram && l.k <= GRAM_MAX_K && (uint64_t)l.groups * (uint64_t)(l.k * l.k) <= GRAM_MAX_DOUBLES;
        /* far fewer patches than inputs: a Gram of rank below k/4 is mostly
         * GPTQ's damping, fitted to a handful of rows, and the costliest to
         * gather (a Gemm on a flattened map: one row per sample). Measured
         * on the fmnist models: dropping those costs no top-1 (docs/numerics.md) */
        if (n_samples > 0 && 4 * n_samples * patches_per_sample(n, &ge, l.k) < l.k)
            want_gram = false;
        if (want_gram)
            l.gram = npu_malloc(alloc, sizeof(double) * nm * (size_t)l.k);
        if (!l.mean || (want_gram && !l.gram)) {
            npu_free(alloc, l.mean, sizeof(double) * nm);
            q_lstats_free(s);
            npu_fail(err, NPU_EINTERNAL, "out of memory for the statistics of '%s'", n->name);
            return NULL;
        }
        memset(l.mean, 0, sizeof(double) * nm); /* gram: set by its first batch (q_gram_add) */
        s->n_wait[s->n] = 0;
        if (l.gram && !(s->wait[s->n] = npu_malloc(alloc, wait_bytes(&l)))) {
            npu_free(alloc, l.mean, sizeof(double) * nm);
            npu_free(alloc, l.gram, sizeof(double) * nm * (size_t)l.k);
            q_lstats_free(s);
            npu_fail(err, NPU_EINTERNAL, "out of memory for the statistics of '%s'", n->name);
            return NULL;
        }
        if (l.gram) /* the padding stays zero */
            memset(s->wait[s->n], 0, wait_bytes(&l));
        s->geo[s->n] = ge;
        s->input_id[s->n] = n->inputs[0]->id;
        s->samples[s->n] = 0;
        s->l[s->n++] = l;
        if (ge.kh && ge.h * (ge.w + ge.sw) > s->rows_cap)
            s->rows_cap = ge.h * (ge.w + ge.sw);
        if (ge.kh * ge.kw > s->taps_cap)
            s->taps_cap = ge.kh * ge.kw;
    }
    if ((s->rows_cap && !(s->rows = npu_malloc(alloc, sizeof(double) * (size_t)s->rows_cap))) ||
        (s->taps_cap && !(s->tap_at = npu_malloc(alloc, sizeof *s->tap_at * (size_t)s->taps_cap))) ||
        (s->taps_cap && !(s->spans = npu_malloc(alloc, sizeof *s->spans * (size_t)s->taps_cap)))) {
        q_lstats_free(s);
        npu_fail(err, NPU_EINTERNAL, "out of memory");
        return NULL;
    }
    return s;
}

/* The upper triangle of gram (k x k) += P^T P (= when !add), P: nb rows of stride ld
 * (>= k rounded up to Q_GRAM_PAD, zero padded). Tiles of GRAM_TR x GRAM_TC
 * entries are summed over the rows in float registers (a batch of patches
 * is short: float keeps ~1e-6 of each sum), then added to the double
 * total: the loads per multiply-add drop from two to about 1/8, which makes
 * it compute-bound rather than the rank-1 update's memory-bound. Entries
 * of the tiles on the diagonal below it are added too (q_lstats_finish
 * mirrors the upper triangle over them). */
enum { GRAM_TR = 8, GRAM_TC = 16 };
_Static_assert(Q_GRAM_PAD % GRAM_TR == 0 && Q_GRAM_PAD % GRAM_TC == 0, "padding covers whole tiles");

NK_HOT_CLONES void q_gram_add(double *gram, int64_t k, const float *p, int64_t ld, int nb, bool add)
{
    for (int64_t i0 = 0; i0 < k; i0 += GRAM_TR)
        for (int64_t j0 = i0 / GRAM_TC * GRAM_TC; j0 < k; j0 += GRAM_TC) {
            float acc[GRAM_TR][GRAM_TC] = {{0}};
            for (int b = 0; b < nb; b++) {
                const float *pb = p + b * ld;
#pragma GCC unroll 8
                for (int r = 0; r < GRAM_TR; r++) {
                    float a = pb[i0 + r];
                    for (int c = 0; c < GRAM_TC; c++) /* fixed length: vectorized */
                        acc[r][c] += a * pb[j0 + c];
                }
            }
            int nr = k - i0 < GRAM_TR ? (int)(k - i0) : GRAM_TR, nc = k - j0 < GRAM_TC ? (int)(k - j0) : GRAM_TC;
            for (int r = 0; r < nr; r++) {
                double *g = gram + (i0 + r) * k + j0;
                for (int c = 0; c < nc; c++)
                    g[c] = add ? g[c] + acc[r][c] : acc[r][c];
            }
        }
}

/* Adds the waiting patches of every group of layer li to its second moment
 * (the first batch sets it: no pass over the whole matrix to zero it). */
static void flush_wait(q_lstats *s, int li)
{
    q_layer_stats *l = &s->l[li];
    int64_t ld = wait_ld(l->k);
    bool first = l->n_gram == (uint64_t)s->n_wait[li];
    for (int gi = 0; gi < l->groups && s->n_wait[li]; gi++)
        q_gram_add(l->gram + (size_t)gi * (size_t)(l->k * l->k), l->k,
                   s->wait[li] + (size_t)gi * GRAM_BATCH * (size_t)ld, ld, s->n_wait[li], !first);
    s->n_wait[li] = 0;
}

/* Where the next patch goes (group 0's; group g's is g * GRAM_BATCH rows on),
 * after a flush when the batch is full. */
static float *next_patch(q_lstats *s, int li)
{
    if (s->n_wait[li] == GRAM_BATCH)
        flush_wait(s, li);
    return s->wait[li] + (size_t)s->n_wait[li] * (size_t)wait_ld(s->l[li].k);
}

/* Output positions per sample in the second moment of a k-input patch: about
 * k (so that ~100 samples give ~100 patches per input), within
 * [GRAM_MIN_POSITIONS, GRAM_POSITIONS]. A depthwise 3x3 layer takes 9, not
 * 64: its patch gathering cost most of mobilenet_v2's statistics, and
 * fewer patches cost no measured accuracy (docs/numerics.md, "Calibration
 * time"). */
static int64_t gram_positions(int64_t k)
{
    return k < GRAM_MIN_POSITIONS ? GRAM_MIN_POSITIONS : k > GRAM_POSITIONS ? GRAM_POSITIONS : k;
}

/* Valid output range [lo, hi] along one axis for kernel offset c (input
 * index = o * stride + c): lo > hi when the tap only ever hits padding. */
static void tap_range(int64_t c, int64_t stride, int64_t in, int64_t out, int64_t *lo, int64_t *hi)
{
    int64_t a = c >= 0 ? 0 : (-c + stride - 1) / stride;
    int64_t b = in - 1 - c < 0 ? -1 : (in - 1 - c) / stride;
    *lo = a;
    *hi = b < out - 1 ? b : out - 1;
}

static void tap_spans(const geom *g, tap_span *sp)
{
    for (int64_t ky = 0; ky < g->kh; ky++)
        for (int64_t kx = 0; kx < g->kw; kx++) {
            tap_span *t = &sp[ky * g->kw + kx];
            int64_t ox0, ox1, cx = kx * g->dw - g->pl;
            t->cy = ky * g->dh - g->pt;
            tap_range(t->cy, g->sh, g->h, g->oh, &t->oy0, &t->oy1);
            tap_range(cx, g->sw, g->w, g->ow, &ox0, &ox1);
            if (ox0 > ox1)
                t->oy1 = t->oy0 - 1;
            if (t->oy0 > t->oy1)
                continue;
            int64_t ix = ox0 * g->sw + cx, res = ix % g->sw;
            t->x0 = ix, t->x1 = ox1 * g->sw + cx, t->cnt = ox1 - ox0 + 1, t->at = ix / g->sw;
            for (int64_t r = 0; r < res; r++) /* where residue res starts in a row */
                t->at += (g->w - r + g->sw - 1) / g->sw + 1;
        }
}

/* Adds to sum[(kh, kw) tap] the sum of the plane over the output positions of
 * every tap: row prefix sums per column residue (mod stride) make each row
 * of a tap O(1), so the mean costs O(h*w + kh*kw*oh) per plane instead of a
 * patch per output position. */
static void add_tap_sums(const geom *g, const float *plane, double *rows, const tap_span *sp, double *sum)
{
    int64_t per_row = g->w + g->sw; /* sw residues, each a prefix of ceil(w / sw) + 1 */
    for (int64_t y = 0; y < g->h; y++) {
        double *r = rows + y * per_row;
        for (int64_t res = 0, at = 0; res < g->sw; res++) {
            double acc = 0;
            r[at++] = 0;
            for (int64_t x = res; x < g->w; x += g->sw) {
                acc += plane[y * g->w + x];
                r[at++] = acc;
            }
        }
    }
    for (int64_t t = 0; t < g->kh * g->kw; t++) {
        double acc = 0;
        for (int64_t oy = sp[t].oy0; oy <= sp[t].oy1; oy++) {
            const double *r = rows + (oy * g->sh + sp[t].cy) * per_row + sp[t].at;
            acc += r[sp[t].cnt] - r[0];
        }
        sum[t] += acc;
    }
}

/* One patch: cg planes (of plane floats each) at the taps' offsets at (-1: padding). */
static void gather(float *restrict p, const float *restrict x, int64_t plane, int64_t cg, const int64_t *restrict at,
                   int64_t taps)
{
    for (int64_t ci = 0; ci < cg; ci++, x += plane, p += taps)
        for (int64_t t = 0; t < taps; t++)
            p[t] = at[t] >= 0 ? x[at[t]] : 0.0f;
}

/* The sum of n floats in 8 interleaved partial sums: a vector, not the one
 * chain of dependent additions of the prefix sums, which made the mean slow. */
NK_HOT_CLONES static double row_total(const float *r, int64_t n)
{
    enum { LANES = 8 };
    double part[LANES] = {0};
    int64_t x = 0;
    for (; x + LANES <= n; x += LANES)
        for (int u = 0; u < LANES; u++) /* fixed length: vectorized */
            part[u] += r[x + u];
    for (int u = 0; x < n; x++, u++)
        part[u] += r[x];
    double t = 0;
    for (int u = 0; u < LANES; u++)
        t += part[u];
    return t;
}

/* add_tap_sums for strides of 1: a tap reads the rectangle [y0, y1] x
 * [x0, x1] of the plane, its total less the rows and the columns outside
 * (next to the padding: few). A 1x1 convolution sums its plane once. */
static void add_tap_sums_unit(const geom *g, const float *plane, const tap_span *sp, double *sum)
{
    double total = row_total(plane, g->h * g->w);
    for (int64_t t = 0; t < g->kh * g->kw; t++) {
        if (sp[t].oy0 > sp[t].oy1)
            continue;
        int64_t y0 = sp[t].oy0 + sp[t].cy, y1 = sp[t].oy1 + sp[t].cy;
        double v = total;
        for (int64_t y = 0; y < g->h; y++)
            if (y < y0 || y > y1)
                v -= row_total(plane + y * g->w, g->w);
        for (int64_t x = 0; x < g->w; x++)
            if (x < sp[t].x0 || x > sp[t].x1)
                for (int64_t y = y0; y <= y1; y++)
                    v -= plane[y * g->w + x];
        sum[t] += v;
    }
}

static void observe_conv(q_lstats *s, int li, const float *x)
{
    q_layer_stats *l = &s->l[li];
    const geom *g = &s->geo[li];
    int64_t cg = g->c / g->groups, npos = g->oh * g->ow, taps = g->kh * g->kw;
    int64_t want = gram_positions(l->k);
    int64_t step = npos > want ? npos / want : 1, off = (int64_t)(s->samples[li] % (uint64_t)step);
    tap_spans(g, s->spans);
    for (int64_t b = 0; b < g->n; b++) {
        const float *img = x + b * g->c * g->h * g->w;
        for (int64_t ci = 0; s->means && ci < g->c; ci++)
            if (g->sh == 1 && g->sw == 1)
                add_tap_sums_unit(g, img + ci * g->h * g->w, s->spans, l->mean + (ci / cg) * l->k + (ci % cg) * taps);
            else
                add_tap_sums(g, img + ci * g->h * g->w, s->rows, s->spans, l->mean + (ci / cg) * l->k + (ci % cg) * taps);
        if (!l->gram)
            continue;
        /* the second moment from a sample of positions: whole patches only there */
        int64_t ld = wait_ld(l->k);
        for (int64_t pos = off; pos < npos; pos += step) {
            int64_t oy = pos / g->ow, ox = pos % g->ow;
            for (int64_t ky = 0; ky < g->kh; ky++) { /* the window once for every channel */
                int64_t iy = oy * g->sh - g->pt + ky * g->dh;
                for (int64_t kx = 0; kx < g->kw; kx++) {
                    int64_t ix = ox * g->sw - g->pl + kx * g->dw;
                    s->tap_at[ky * g->kw + kx] = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w ? iy * g->w + ix : -1;
                }
            }
            float *p = next_patch(s, li);
            for (int gi = 0; gi < g->groups; gi++, p += GRAM_BATCH * ld)
                gather(p, img + gi * cg * g->h * g->w, g->h * g->w, cg, s->tap_at, taps);
            s->n_wait[li]++;
            l->n_gram++;
        }
    }
    l->n += (uint64_t)(g->n * npos);
}

static void observe_fc(q_lstats *s, int li, const ir_tensor *t, const float *x)
{
    q_layer_stats *l = &s->l[li];
    int64_t rows = ir_tensor_numel(t) / l->k;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; s->means && j < l->k; j++)
            l->mean[j] += x[r * l->k + j];
        if (l->gram) {
            memcpy(next_patch(s, li), x + r * l->k, sizeof(float) * (size_t)l->k);
            s->n_wait[li]++;
            l->n_gram++;
        }
    }
    l->n += (uint64_t)rows;
}

void q_lstats_observe(void *ud, const ir_node *n, const ir_tensor *t, const void *data)
{
    (void)n;
    q_lstats *s = ud;
    for (int i = 0; i < s->n; i++) {
        if (s->input_id[i] != t->id)
            continue;
        if (s->geo[i].kh)
            observe_conv(s, i, data);
        else
            observe_fc(s, i, t, data);
        s->samples[i]++;
    }
}

/* g (k x k) = its upper triangle / n, mirrored: in square blocks, so that
 * the column-wise writes of a large matrix stay in cache. */
static void mirror_scaled(double *g, int64_t k, double n)
{
    enum { B = 64 };
    for (int64_t a0 = 0; a0 < k; a0 += B)
        for (int64_t b0 = a0; b0 < k; b0 += B)
            for (int64_t a = a0; a < a0 + B && a < k; a++)
                for (int64_t b = b0 > a ? b0 : a; b < b0 + B && b < k; b++)
                    g[a * k + b] = g[b * k + a] = g[a * k + b] / n;
}

void q_lstats_finish(q_lstats *s)
{
    for (int i = 0; i < s->n; i++) {
        q_layer_stats *l = &s->l[i];
        if (l->gram)
            flush_wait(s, i);
        if (l->gram && !l->n_gram)
            memset(l->gram, 0, sizeof(double) * (size_t)(l->groups * l->k * l->k));
        if (!l->n)
            continue;
        double ng = l->n_gram ? (double)l->n_gram : 1.0, nm = (double)l->n;
        for (int64_t j = 0; j < l->groups * l->k; j++)
            l->mean[j] /= nm;
        if (!l->gram)
            continue;
        for (int gi = 0; gi < l->groups; gi++)
            mirror_scaled(l->gram + (size_t)gi * (size_t)(l->k * l->k), l->k, ng);
    }
}

int q_lstats_count(const q_lstats *s)
{
    return s->n;
}

const q_layer_stats *q_lstats_items(const q_lstats *s)
{
    return s->l;
}
