/* Automatic mixed precision for int4 weights: with every layer at 4 bits
 * the output SQNR on the calibration set is below the budget, so layers go
 * back to 8 bits, most sensitive first, until it is met. A layer's
 * sensitivity is the output SQNR lost when it alone has 4-bit weights (the
 * others 8); a layer whose promotion does not raise the SQNR is skipped
 * first.
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
    int *keep;          /* candidates kept at 8 bits so far, in order */
    bool *used;         /* per candidate: kept */
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
        t->bits[nb++] = (q_layer_bits){t->cand[keep8[i]], 8, 0};
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
        if (o->layer_bits[i].wbits && !strcmp(o->layer_bits[i].node, name))
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

/* Sensitivity: the output SQNR lost when the layer alone has 4-bit weights
 * and the others 8 (gain[i], dB; the 4-bit layers interact, so "alone at 8
 * among 4-bit layers" ranks worse). order gets the candidates most
 * sensitive first, ties by graph order. */
static npu_status rank_by_sensitivity(trial_ctx *t, double *gain, int *order)
{
    double all8 = 0;
    for (int i = 0; i < t->n_cand; i++)
        t->keep[i] = i;
    npu_status st = trial(t, t->keep, t->n_cand, &all8);
    for (int i = 0; st == NPU_OK && i < t->n_cand; i++) {
        double s;
        int n = 0;
        for (int j = 0; j < t->n_cand; j++)
            if (j != i)
                t->keep[n++] = j;
        st = trial(t, t->keep, n, &s);
        gain[i] = all8 - s;
        order[i] = i;
    }
    for (int i = 1; st == NPU_OK && i < t->n_cand; i++)
        for (int j = i; j > 0 && gain[order[j]] > gain[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    return st;
}

/* Pass 1 keeps a layer at 8 bits only if that raises the output SQNR
 * (layers interact: one at 8 bits can make the rest worse); pass 2, if the
 * budget is still not met, adds the skipped ones in order. *s starts as the
 * all-4-bit SQNR and ends as the chosen mix's. */
static npu_status keep_at_8(trial_ctx *t, const double *gain, const int *order, double *s, q_mixed_out *out)
{
    const q_mixed_in *in = t->in;
    npu_status st = NPU_OK;
    int *kept = t->keep, nk = 0;
    bool *used = t->used;
    for (int pass = 0; pass < 2 && st == NPU_OK && *s < in->budget_db; pass++)
        for (int r = 0; r < t->n_cand && st == NPU_OK && *s < in->budget_db; r++) {
            int c = order[r];
            if (used[c])
                continue;
            kept[nk] = c;
            double s2;
            if ((st = trial(t, kept, nk + 1, &s2)) != NPU_OK)
                break;
            if (pass == 0 && s2 <= *s)
                continue; /* no help on its own: stays at 4 bits for now */
            used[c] = true;
            nk++;
            *s = s2;
            char why[256];
            snprintf(why, sizeof why,
                     "kept at 8 bits: rank %d of %d by sensitivity (alone at 4 bits it costs %.2f dB); output %.2f dB %s %.2f dB budget",
                     r + 1, t->n_cand, gain[c], *s, *s >= in->budget_db ? ">=" : "<", in->budget_db);
            out->bits[out->n] = (q_layer_bits){t->cand[c], 8, 0};
            if (!(out->why[out->n] = dup_str(t->alloc, why)))
                st = npu_fail(t->err, NPU_EINTERNAL, "out of memory");
            else
                out->n++;
        }
    return st;
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
    t.keep = npu_malloc(alloc, sizeof *t.keep * c1);
    t.used = npu_malloc(alloc, sizeof *t.used * c1);
    if (t.used)
        memset(t.used, 0, sizeof *t.used * c1);
    out->cap = cap;
    out->bits = npu_malloc(alloc, sizeof *out->bits * c1);
    out->why = npu_malloc(alloc, sizeof *out->why * c1);
    npu_status st = NPU_OK;
    if (!t.cand || !t.bits || !gain || !order || !t.keep || !t.used || !out->bits || !out->why)
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
    st = rank_by_sensitivity(&t, gain, order);
    double s = all4;
    if (st == NPU_OK)
        st = keep_at_8(&t, gain, order, &s, out);
    out->sqnr = s;
done:
    npu_free(alloc, t.cand, sizeof *t.cand * c1);
    npu_free(alloc, t.bits, sizeof *t.bits * (c1 + (size_t)in->base->n_layer_bits));
    npu_free(alloc, gain, sizeof *gain * c1);
    npu_free(alloc, order, sizeof *order * c1);
    npu_free(alloc, t.keep, sizeof *t.keep * c1);
    npu_free(alloc, t.used, sizeof *t.used * c1);
    if (st != NPU_OK)
        q_mixed_free(out, alloc);
    return st;
}
