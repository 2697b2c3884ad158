/* Automatic mixed precision for int4 weights: with every layer at 4 bits
 * the output SQNR on the calibration set is below the budget, so layers go
 * back to 8 bits, most sensitive first, until it is met. A layer's
 * sensitivity is the output SQNR gained when it alone has 8-bit weights.
 * Each trial quantizes a copy of the float graph with the same ranges and
 * repairs and compares it with the float graph (report.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quantize/quantize_internal.h"

enum { MIXED_MAX_SAMPLES = 256 };

typedef struct trial_ctx {
    const q_mixed_in *in;
    npu_alloc alloc;
    int n_cand;
    const char **cand;  /* candidate layer names (at 4 bits by default) */
    q_layer_bits *bits; /* the user's overrides, then the trial's */
    npu_err *err;
} trial_ctx;

/* Output SQNR with the candidates in keep8[] (n of them) at 8 bits. */
static npu_status trial(trial_ctx *t, const int *keep8, int n, double *sqnr)
{
    const q_mixed_in *in = t->in;
    int nb = 0;
    for (int i = 0; i < in->base->n_layer_bits; i++)
        t->bits[nb++] = in->base->layer_bits[i];
    for (int i = 0; i < n; i++)
        t->bits[nb++] = (q_layer_bits){t->cand[keep8[i]], 8};
    q_options qo = *in->base;
    qo.n_layer_bits = nb;
    qo.layer_bits = t->bits;
    ir_graph *g;
    npu_status st = ir_deserialize(in->float_ser, in->float_size, t->alloc, &g, t->err);
    if (st != NPU_OK)
        return st;
    float *lo = npu_malloc(t->alloc, sizeof(float) * (size_t)(g->n_tensors + 1));
    float *hi = npu_malloc(t->alloc, sizeof(float) * (size_t)(g->n_tensors + 1));
    size_t nt = (size_t)(g->n_tensors + 1);
    if (!lo || !hi)
        st = npu_fail(t->err, NPU_EINTERNAL, "out of memory");
    for (int i = 0; st == NPU_OK && i < g->n_tensors; i++) {
        const ir_tensor *o = ir_graph_find(in->float_g, g->tensors[i]->name);
        lo[i] = o && o->id < in->n_ranges ? in->lo[o->id] : 0.0f;
        hi[i] = o && o->id < in->n_ranges ? in->hi[o->id] : 0.0f;
    }
    if (st == NPU_OK)
        st = q_quantize(g, lo, hi, &qo, t->err);
    npu_free(t->alloc, lo, sizeof(float) * nt);
    npu_free(t->alloc, hi, sizeof(float) * nt);
    q_report *r = NULL;
    if (st == NPU_OK)
        st = q_compare(in->float_g, g, in->ds, MIXED_MAX_SAMPLES, false, t->alloc, &r, t->err);
    if (st == NPU_OK)
        *sqnr = r->out_sqnr_db;
    q_report_free(r);
    ir_graph_free(g);
    if (st != NPU_OK)
        npu_err_prefix(t->err, "mixed precision");
    return st;
}

static bool overridden(const q_options *o, const char *name)
{
    for (int i = 0; i < o->n_layer_bits; i++)
        if (!strcmp(o->layer_bits[i].node, name))
            return true;
    return false;
}

void q_mixed_free(q_mixed_out *out, npu_alloc alloc)
{
    for (int i = 0; i < out->n; i++)
        npu_free(alloc, out->why[i], strlen(out->why[i]) + 1);
    npu_free(alloc, out->why, sizeof *out->why * (size_t)(out->cap ? out->cap : 1));
    npu_free(alloc, out->bits, sizeof *out->bits * (size_t)(out->cap ? out->cap : 1));
    memset(out, 0, sizeof *out);
}

static char *dup_str(npu_alloc alloc, const char *s)
{
    char *d = npu_malloc(alloc, strlen(s) + 1);
    if (d)
        memcpy(d, s, strlen(s) + 1);
    return d;
}

npu_status q_mixed_search(const q_mixed_in *in, npu_alloc alloc, q_mixed_out *out, npu_err *err)
{
    memset(out, 0, sizeof *out);
    const ir_graph *g = in->float_g;
    int cap = 0;
    for (int i = 0; i < g->n_nodes; i++)
        cap += !g->nodes[i]->dead && q_classify(g->nodes[i]) == Q_KIND_WEIGHTED;
    size_t c1 = (size_t)(cap ? cap : 1);
    trial_ctx t = {.in = in, .alloc = alloc, .err = err};
    t.cand = npu_malloc(alloc, sizeof *t.cand * c1);
    t.bits = npu_malloc(alloc, sizeof *t.bits * (c1 + (size_t)in->base->n_layer_bits));
    double *gain = npu_malloc(alloc, sizeof *gain * c1);
    int *order = npu_malloc(alloc, sizeof *order * c1);
    out->cap = cap;
    out->bits = npu_malloc(alloc, sizeof *out->bits * c1);
    out->why = npu_malloc(alloc, sizeof *out->why * c1);
    npu_status st = NPU_OK;
    if (!t.cand || !t.bits || !gain || !order || !out->bits || !out->why)
        st = npu_fail(err, NPU_EINTERNAL, "out of memory");
    for (int i = 0; st == NPU_OK && i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (!n->dead && q_classify(n) == Q_KIND_WEIGHTED && !overridden(in->base, n->name))
            t.cand[t.n_cand++] = n->name;
    }
    double all4 = 0;
    if (st == NPU_OK && in->base->wbits == 4 && t.n_cand)
        st = trial(&t, NULL, 0, &all4);
    out->sqnr_all4 = all4;
    out->sqnr = all4;
    if (st != NPU_OK || in->base->wbits != 4 || all4 >= in->budget_db || !t.n_cand)
        goto done;
    for (int i = 0; st == NPU_OK && i < t.n_cand; i++) {
        double s;
        st = trial(&t, &i, 1, &s);
        gain[i] = s - all4;
        order[i] = i;
    }
    /* most sensitive first; ties by graph order */
    for (int i = 1; st == NPU_OK && i < t.n_cand; i++)
        for (int j = i; j > 0 && gain[order[j]] > gain[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    double s = all4;
    int k = 0;
    while (st == NPU_OK && k < t.n_cand && s < in->budget_db) {
        k++;
        if ((st = trial(&t, order, k, &s)) != NPU_OK)
            break;
        int c = order[k - 1];
        char why[256];
        snprintf(why, sizeof why, "kept at 8 bits: rank %d of %d by sensitivity (+%.2f dB alone); output %.2f dB %s %.2f dB budget",
                 k, t.n_cand, gain[c], s, s >= in->budget_db ? ">=" : "<", in->budget_db);
        out->bits[out->n] = (q_layer_bits){t.cand[c], 8};
        if (!(out->why[out->n] = dup_str(alloc, why)))
            st = npu_fail(err, NPU_EINTERNAL, "out of memory");
        else
            out->n++;
    }
    out->sqnr = s;
done:
    npu_free(alloc, t.cand, sizeof *t.cand * c1);
    npu_free(alloc, t.bits, sizeof *t.bits * (c1 + (size_t)in->base->n_layer_bits));
    npu_free(alloc, gain, sizeof *gain * c1);
    npu_free(alloc, order, sizeof *order * c1);
    if (st != NPU_OK)
        q_mixed_free(out, alloc);
    return st;
}
