/* Statistics of the input patches of every Conv / Gemm during calibration:
 * the mean patch (bias correction: the mean output error of a weight error
 * dw is dw . E[p]) and the second moment E[p p^T] (adaptive rounding: the
 * output MSE of dw is dw^T E[p p^T] dw). Patches are taken in the weights'
 * own order (c_in/groups, k_h, k_w), zeros where the window hits padding. */
#include <string.h>

#include "quantize/quantize_internal.h"

enum {
    GRAM_POSITIONS = 64,           /* output positions per sample feeding the second moment */
    GRAM_MAX_K = 3200,             /* longest patch with a second moment */
};
#define GRAM_MAX_DOUBLES (16u << 20) /* per layer: 128 MiB */

typedef struct geom {
    int64_t n, c, h, w;            /* input */
    int64_t oh, ow, kh, kw;
    int64_t sh, sw, dh, dw, pt, pl;
    int groups;
} geom;

struct q_lstats {
    npu_alloc alloc;
    int n, cap;                    /* layers, and the arrays' length */
    q_layer_stats *l;
    geom *geo;
    int *input_id;                 /* tensor id of each layer's input */
    uint64_t *samples;             /* observations (for the position offset) */
    double *patch;                 /* scratch: one patch */
    int64_t patch_cap;
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

void q_lstats_free(q_lstats *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        q_layer_stats *l = &s->l[i];
        npu_free(s->alloc, l->mean, sizeof(double) * (size_t)(l->groups * l->k));
        if (l->gram)
            npu_free(s->alloc, l->gram, sizeof(double) * (size_t)(l->groups * l->k * l->k));
    }
    size_t c1 = (size_t)(s->cap ? s->cap : 1);
    npu_free(s->alloc, s->l, sizeof *s->l * c1);
    npu_free(s->alloc, s->geo, sizeof *s->geo * c1);
    npu_free(s->alloc, s->input_id, sizeof *s->input_id * c1);
    npu_free(s->alloc, s->samples, sizeof *s->samples * c1);
    npu_free(s->alloc, s->patch, sizeof(double) * (size_t)s->patch_cap);
    npu_free(s->alloc, s, sizeof *s);
}

q_lstats *q_lstats_new(const ir_graph *g, bool gram, npu_alloc alloc, npu_err *err)
{
    q_lstats *s = npu_malloc(alloc, sizeof *s);
    if (!s) {
        npu_fail(err, NPU_EINTERNAL, "out of memory");
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->alloc = alloc;
    int cap = 0;
    for (int i = 0; i < g->n_nodes; i++)
        cap += !g->nodes[i]->dead && q_classify(g->nodes[i]) == Q_KIND_WEIGHTED;
    size_t c1 = (size_t)(cap ? cap : 1);
    s->cap = cap;
    s->l = npu_malloc(alloc, sizeof *s->l * c1);
    s->geo = npu_malloc(alloc, sizeof *s->geo * c1);
    s->input_id = npu_malloc(alloc, sizeof *s->input_id * c1);
    s->samples = npu_malloc(alloc, sizeof *s->samples * c1);
    if (!s->l || !s->geo || !s->input_id || !s->samples) {
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
            l.k = n->inputs[0]->dims[1];
        }
        size_t nm = (size_t)(l.groups * l.k);
        l.mean = npu_malloc(alloc, sizeof(double) * nm);
        bool want_gram = gram && l.k <= GRAM_MAX_K && (uint64_t)l.groups * (uint64_t)(l.k * l.k) <= GRAM_MAX_DOUBLES;
        if (want_gram)
            l.gram = npu_malloc(alloc, sizeof(double) * nm * (size_t)l.k);
        if (!l.mean || (want_gram && !l.gram)) {
            npu_free(alloc, l.mean, sizeof(double) * nm);
            q_lstats_free(s);
            npu_fail(err, NPU_EINTERNAL, "out of memory for the statistics of '%s'", n->name);
            return NULL;
        }
        memset(l.mean, 0, sizeof(double) * nm);
        if (l.gram)
            memset(l.gram, 0, sizeof(double) * nm * (size_t)l.k);
        s->geo[s->n] = ge;
        s->input_id[s->n] = n->inputs[0]->id;
        s->samples[s->n] = 0;
        s->l[s->n++] = l;
        if (l.k > s->patch_cap)
            s->patch_cap = l.k;
    }
    if (s->patch_cap && !(s->patch = npu_malloc(alloc, sizeof(double) * (size_t)s->patch_cap))) {
        q_lstats_free(s);
        npu_fail(err, NPU_EINTERNAL, "out of memory");
        return NULL;
    }
    return s;
}

static void add_gram(double *gram, const double *p, int64_t k)
{
    for (int64_t i = 0; i < k; i++) {
        double pi = p[i];
        if (pi == 0.0)
            continue;
        double *row = gram + i * k;
        for (int64_t j = i; j < k; j++) /* upper triangle; mirrored in q_lstats_finish */
            row[j] += pi * p[j];
    }
}

static void observe_conv(q_lstats *s, int li, const float *x)
{
    q_layer_stats *l = &s->l[li];
    const geom *g = &s->geo[li];
    int64_t cg = g->c / g->groups, npos = g->oh * g->ow;
    int64_t step = npos > GRAM_POSITIONS ? npos / GRAM_POSITIONS : 1, off = (int64_t)(s->samples[li] % (uint64_t)step);
    double *p = s->patch;
    for (int64_t b = 0; b < g->n; b++)
        for (int gi = 0; gi < g->groups; gi++) {
            double *mean = l->mean + gi * l->k, *gram = l->gram ? l->gram + (size_t)gi * (size_t)(l->k * l->k) : NULL;
            for (int64_t pos = 0; pos < npos; pos++) {
                int64_t oy = pos / g->ow, ox = pos % g->ow;
                int64_t at = 0;
                for (int64_t ci = 0; ci < cg; ci++) {
                    const float *plane = x + ((b * g->c) + gi * cg + ci) * g->h * g->w;
                    for (int64_t ky = 0; ky < g->kh; ky++) {
                        int64_t iy = oy * g->sh - g->pt + ky * g->dh;
                        for (int64_t kx = 0; kx < g->kw; kx++) {
                            int64_t ix = ox * g->sw - g->pl + kx * g->dw;
                            double v = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w ? plane[iy * g->w + ix] : 0.0;
                            p[at] = v;
                            mean[at++] += v;
                        }
                    }
                }
                if (gram && pos % step == off) {
                    add_gram(gram, p, l->k);
                    l->n_gram += gi == 0;
                }
            }
        }
    l->n += (uint64_t)(g->n * npos);
}

static void observe_fc(q_lstats *s, int li, const ir_tensor *t, const float *x)
{
    q_layer_stats *l = &s->l[li];
    int64_t rows = ir_tensor_numel(t) / l->k;
    double *p = s->patch;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < l->k; j++) {
            p[j] = x[r * l->k + j];
            l->mean[j] += p[j];
        }
        if (l->gram)
            add_gram(l->gram, p, l->k);
    }
    l->n_gram += (uint64_t)rows;
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

void q_lstats_finish(q_lstats *s)
{
    for (int i = 0; i < s->n; i++) {
        q_layer_stats *l = &s->l[i];
        if (!l->n)
            continue;
        double ng = l->n_gram ? (double)l->n_gram : 1.0, nm = (double)l->n;
        for (int64_t j = 0; j < l->groups * l->k; j++)
            l->mean[j] /= nm;
        if (!l->gram)
            continue;
        for (int gi = 0; gi < l->groups; gi++) {
            double *gm = l->gram + (size_t)gi * (size_t)(l->k * l->k);
            for (int64_t a = 0; a < l->k; a++)
                for (int64_t b = a; b < l->k; b++) {
                    double v = gm[a * l->k + b] / ng;
                    gm[a * l->k + b] = gm[b * l->k + a] = v;
                }
        }
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
