/* --precision auto: each Conv/Gemm's weight bits (4/8) and activation bits
 * (8/16, A16W8) chosen under a cycle budget or an output-SQNR target
 * (docs/numerics.md, "Precision by budget").
 *
 * Measured, not modelled: every (layer, option) pair is one trial, the graph
 * quantized with that layer alone changed from the base configuration
 * (every layer w8 at the widest activation bits: an int16 layer among int8
 * ones gains nothing, its input is int8 already), run against float on the
 * calibration set: the output noise it adds. Cycles come from the tiler's
 * estimate of each layer's own node in the configurations where every layer
 * takes one option (cost_model). The noises are taken as additive (HAWQ's
 * assumption), so a choice is a multiple-choice knapsack; it is solved by
 * its Lagrangian relaxation (each layer picks the option minimizing
 * noise + lambda * cycles, lambda swept, then filled to the budget), the
 * best few configurations are quantized and costed for real, and the best
 * measured one within the budget is kept, all-int8 among them when it fits
 * (so the choice is never worse than all-int8 at a budget all-int8 meets). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quantize/quantize_internal.h"

enum { PREC_MAX_SAMPLES = 64, PREC_LAMBDAS = 97, PREC_VERIFY = 8 };

typedef struct prec_ctx {
    const q_prec_in *in;
    npu_alloc alloc;
    npu_err *err;
    int n_cand, n_opt;
    int base;            /* the option the trials change one layer from: w8 at the widest activations */
    double s_base;       /* output SQNR and cycles with every candidate at the base option */
    int64_t c_base;
    int64_t *node_cyc;   /* when set, eval's cycles of each candidate's own node */
    const char **cand;
    q_prec_opt opt[Q_PREC_MAX_OPTS];
    q_layer_bits *bits;  /* the user's overrides, then the trial's */
    double *dnoise;      /* [cand][opt] output noise (relative energy) added, against all-int8 */
    int64_t *dcyc;       /* [cand][opt] cycles added */
    double *gain;        /* [cand][opt] output SQNR (dB) alone minus all-int8's */
} prec_ctx;

static double lin(double db)
{
    return isinf(db) ? 0.0 : pow(10.0, -db / 10.0);
}

/* Quantizes a copy of the float graph with choice[] (per candidate, an
 * option index; NULL: all option 0), then its output SQNR on the
 * calibration set and its cycles (the sum of the tiler's estimate over the
 * nodes the NPU can run). */
static npu_status eval(prec_ctx *p, const int *choice, double *sqnr, int64_t *cycles)
{
    const q_prec_in *in = p->in;
    const q_options *base = in->m.base;
    int nb = 0;
    for (int i = 0; i < base->n_layer_bits; i++)
        p->bits[nb++] = base->layer_bits[i];
    for (int i = 0; i < p->n_cand; i++) {
        q_prec_opt o = p->opt[choice ? choice[i] : 0];
        p->bits[nb++] = (q_layer_bits){.node = p->cand[i], .wbits = o.wbits, .abits = o.abits};
    }
    q_options qo = *base;
    qo.n_layer_bits = nb;
    qo.layer_bits = p->bits;
    ir_graph *g = NULL;
    npu_status st = q_quantize_copy(&in->m, &qo, p->alloc, &g, p->err);
    q_report *r = NULL;
    if (st == NPU_OK)
        st = q_compare(in->m.float_g, g, in->m.ds, PREC_MAX_SAMPLES, false, p->alloc, &r, p->err);
    if (st == NPU_OK) {
        *sqnr = r->out_sqnr_db;
        *cycles = 0;
        for (int i = 0; i < g->n_nodes && st == NPU_OK; i++) {
            int64_t c = 0;
            npu_status cs = g->nodes[i]->dead ? NPU_EUSER : in->cycles(in->ud, g, g->nodes[i], &c, p->err);
            if (cs == NPU_OK)
                *cycles += c;
            else if (cs != NPU_EUSER)
                st = cs;
            for (int k = 0; p->node_cyc && k < p->n_cand; k++)
                if (!strcmp(p->cand[k], g->nodes[i]->name))
                    p->node_cyc[k] = c;
        }
    }
    q_report_free(r);
    ir_graph_free(g);
    if (st != NPU_OK)
        npu_err_prefix(p->err, "--precision auto");
    return st;
}

/* The single-layer trials: dnoise, dcyc and gain of every (candidate, option). */
static npu_status measure(prec_ctx *p, int *choice, double s0)
{
    npu_status st = NPU_OK;
    for (int i = 0; i < p->n_cand; i++)
        choice[i] = p->base;
    for (int i = 0; st == NPU_OK && i < p->n_cand; i++) {
        int b = i * p->n_opt + p->base;
        p->dnoise[b] = 0, p->dcyc[b] = 0, p->gain[b] = 0;
        for (int o = 0; st == NPU_OK && o < p->n_opt; o++) {
            if (o == p->base)
                continue;
            double s;
            int64_t c;
            choice[i] = o;
            st = eval(p, choice, &s, &c);
            p->dnoise[i * p->n_opt + o] = lin(s) - lin(s0);
            p->gain[i * p->n_opt + o] = s - s0;
        }
        choice[i] = p->base;
    }
    return st;
}

/* The cycles of each (layer, option) against the base: its own node's
 * estimate in the configuration where every candidate takes that option,
 * minus the same in the all-base one, plus an equal share of what the other
 * nodes' estimates change between the two (pools, adds, tables follow
 * their inputs' width). Single-layer trials would cost the npu.Requantize
 * at the width boundaries they create, which a run of layers at one width
 * does not have. */
static npu_status cost_model(prec_ctx *p, int *choice)
{
    size_t nc = (size_t)(p->n_cand ? p->n_cand : 1);
    int64_t *own = npu_malloc(p->alloc, sizeof(int64_t) * nc * (size_t)p->n_opt);
    if (!own)
        return npu_fail(p->err, NPU_EINTERNAL, "out of memory");
    int64_t total[Q_PREC_MAX_OPTS];
    npu_status st = NPU_OK;
    for (int o = 0; o < p->n_opt && st == NPU_OK; o++) {
        for (int i = 0; i < p->n_cand; i++)
            choice[i] = o;
        p->node_cyc = own + (size_t)o * nc;
        memset(p->node_cyc, 0, sizeof(int64_t) * nc);
        double s;
        st = eval(p, choice, &s, &total[o]);
    }
    p->node_cyc = NULL;
    for (int o = 0; o < p->n_opt && st == NPU_OK; o++) {
        int64_t other = total[o] - total[p->base];
        for (int i = 0; i < p->n_cand; i++)
            other -= own[(size_t)o * nc + (size_t)i] - own[(size_t)p->base * nc + (size_t)i];
        for (int i = 0; i < p->n_cand; i++)
            p->dcyc[i * p->n_opt + o] = own[(size_t)o * nc + (size_t)i] - own[(size_t)p->base * nc + (size_t)i] +
                                        other / p->n_cand;
    }
    for (int i = 0; i < p->n_cand; i++)
        choice[i] = p->base;
    npu_free(p->alloc, own, sizeof(int64_t) * nc * (size_t)p->n_opt);
    return st;
}

/* Each layer's option minimizing noise + lambda * cycles; the predicted
 * noise and cycles of the whole. */
static void relax(const prec_ctx *p, double lambda, int *choice, double *noise, int64_t *cyc)
{
    *noise = 0;
    *cyc = 0;
    for (int i = 0; i < p->n_cand; i++) {
        int best = p->base;
        double bv = 0;
        for (int o = 0; o < p->n_opt; o++) {
            double v = p->dnoise[i * p->n_opt + o] + lambda * (double)p->dcyc[i * p->n_opt + o];
            if (v < bv) {
                bv = v;
                best = o;
            }
        }
        choice[i] = best;
        *noise += p->dnoise[i * p->n_opt + best];
        *cyc += p->dcyc[i * p->n_opt + best];
    }
}

/* Spends what the relaxation left of the budget: single-layer changes that
 * lower the predicted noise and keep the predicted cycles within slack,
 * the largest noise drop per cycle first (a free one first of all). */
static void fill(const prec_ctx *p, int *choice, double *noise, int64_t *cyc, int64_t slack)
{
    for (;;) {
        int bi = -1, bo = 0;
        double bscore = 0;
        for (int i = 0; i < p->n_cand; i++) {
            const double *dn = &p->dnoise[i * p->n_opt];
            const int64_t *dc = &p->dcyc[i * p->n_opt];
            for (int o = 0; o < p->n_opt; o++) {
                double gain = dn[choice[i]] - dn[o];
                int64_t more = dc[o] - dc[choice[i]];
                if (gain <= 0 || *cyc + more > slack)
                    continue;
                double score = more <= 0 ? INFINITY : gain / (double)more;
                if (bi < 0 || score > bscore) {
                    bi = i, bo = o, bscore = score;
                }
            }
        }
        if (bi < 0)
            return;
        *noise += p->dnoise[bi * p->n_opt + bo] - p->dnoise[bi * p->n_opt + choice[bi]];
        *cyc += p->dcyc[bi * p->n_opt + bo] - p->dcyc[bi * p->n_opt + choice[bi]];
        choice[bi] = bo;
    }
}

typedef struct prec_plan {
    int *choice;
    double noise;  /* predicted, relative to the base configuration */
    int64_t cyc;   /* predicted, relative to the base configuration */
} prec_plan;

/* Distinct configurations of the lambda sweep (each filled up to the
 * budget), ordered by preference: with a budget the lowest predicted noise
 * first, with a target the fewest predicted cycles first among those that
 * meet it. Returns how many. */
static int plans(const prec_ctx *p, double s0, int64_t c0, int64_t budget, prec_plan *out, int *scratch)
{
    /* fills to a fraction of the budget too: the npu.Requantize at width
     * boundaries costs cycles the per-layer model does not see */
    static const double margin[] = {1.0, 0.97, 0.94, 0.90, 0.85, 0.80};
    int n = 0;
    (void)scratch;
    double target = lin(p->in->target_sqnr_db) - lin(s0);
    double scale = (lin(s0) > 0 ? lin(s0) : 1e-12) / (double)(c0 > 0 ? c0 : 1);
    for (int k = 0; k < PREC_LAMBDAS * 6 && n < PREC_LAMBDAS; k++) {
        int kl = k / 6, km = k % 6;
        if (budget <= 0 && km)
            continue;
        double lambda = kl == 0 ? 0.0 : scale * pow(10.0, (kl - PREC_LAMBDAS / 2) / 8.0);
        int64_t slack = (int64_t)(margin[km] * (double)budget) - c0;
        prec_plan pl = {.choice = out[n].choice}; /* out[n] is free: kept only when new */
        relax(p, lambda, pl.choice, &pl.noise, &pl.cyc);
        if (budget > 0 && pl.cyc > slack && kl < PREC_LAMBDAS - 1)
            continue; /* the largest lambda's (the cheapest plan) stays: the fallback of a budget too small */
        if (budget > 0)
            fill(p, pl.choice, &pl.noise, &pl.cyc, slack);
        bool dup = false;
        for (int j = 0; j < n && !dup; j++)
            dup = !memcmp(out[j].choice, pl.choice, sizeof(int) * (size_t)p->n_cand);
        if (dup)
            continue;
        out[n].noise = pl.noise;
        out[n].cyc = pl.cyc;
        /* insertion by preference */
        for (int j = n++; j > 0; j--) {
            const prec_plan *a = &out[j], *b = &out[j - 1];
            bool better = budget > 0 ? a->noise < b->noise
                                     : (a->noise <= target) != (b->noise <= target) ? a->noise <= target
                                     : a->noise <= target ? a->cyc < b->cyc : a->noise < b->noise;
            if (!better)
                break;
            prec_plan t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    }
    return n;
}

/* Quantizes and costs plan k; takes it when it is the best so far: the
 * best SQNR within the budget (or the fewest cycles meeting the target);
 * while nothing fits, the fewest cycles (or the best SQNR). */
static npu_status try_plan(prec_ctx *p, const prec_plan *pl, int64_t budget, bool *have, q_prec_out *out, int *best)
{
    double s;
    int64_t c;
    npu_status st = eval(p, pl->choice, &s, &c);
    if (st != NPU_OK)
        return st;
    out->evaluated++;
    bool ok = budget > 0 ? c <= budget : s >= p->in->target_sqnr_db;
    bool take = ok ? !*have || (budget > 0 ? s > out->sqnr : c < out->cycles)
                   : !*have && (budget > 0 ? c < out->cycles : s > out->sqnr);
    if (take) {
        *have |= ok;
        out->sqnr = s, out->cycles = c;
        memcpy(best, pl->choice, sizeof(int) * (size_t)p->n_cand);
    }
    return NPU_OK;
}

/* The preferred plans measured; all-int8 is the starting point. With a
 * budget that none of them meets, the plan of fewest predicted cycles too. */
static npu_status verify(prec_ctx *p, prec_plan *pl, int n, double s0, int64_t c0, int64_t budget, q_prec_out *out,
                         int *best)
{
    bool have = budget <= 0 ? s0 >= p->in->target_sqnr_db : c0 <= budget;
    out->sqnr = s0, out->cycles = c0;
    memset(best, 0, sizeof(int) * (size_t)p->n_cand);
    if (p->base) { /* the base configuration, measured already, competes as a plan would */
        bool ok = budget > 0 ? p->c_base <= budget : p->s_base >= p->in->target_sqnr_db;
        if (ok && (!have || (budget > 0 ? p->s_base > out->sqnr : p->c_base < out->cycles))) {
            have = true;
            out->sqnr = p->s_base, out->cycles = p->c_base;
            for (int i = 0; i < p->n_cand; i++)
                best[i] = p->base;
        }
    }
    npu_status st = NPU_OK;
    for (int k = 0; k < n && k < PREC_VERIFY && st == NPU_OK; k++)
        st = try_plan(p, &pl[k], budget, &have, out, best);
    int cheapest = 0;
    for (int k = 1; k < n; k++)
        cheapest = pl[k].cyc < pl[cheapest].cyc ? k : cheapest;
    if (st == NPU_OK && !have && budget > 0 && cheapest >= PREC_VERIFY)
        st = try_plan(p, &pl[cheapest], budget, &have, out, best);
    out->met = have;
    return st;
}

static npu_status fill_out(prec_ctx *p, const int *best, q_prec_out *out)
{
    out->n = p->n_cand;
    out->layers = npu_malloc(p->alloc, sizeof *out->layers * (size_t)(p->n_cand ? p->n_cand : 1));
    out->bits = npu_malloc(p->alloc, sizeof *out->bits * (size_t)(p->n_cand ? p->n_cand : 1));
    if (!out->layers || !out->bits)
        return npu_fail(p->err, NPU_EINTERNAL, "out of memory");
    out->n_opt = p->n_opt;
    out->base = p->base;
    out->sqnr_base = p->s_base, out->cycles_base = p->c_base;
    memcpy(out->opt, p->opt, sizeof p->opt);
    for (int i = 0; i < p->n_cand; i++) {
        int o = best[i];
        q_prec_layer *l = &out->layers[i];
        *l = (q_prec_layer){.node = p->cand[i], .chosen = o};
        for (int k = 0; k < p->n_opt; k++) {
            l->gain_db[k] = p->gain[i * p->n_opt + k];
            l->dcycles[k] = p->dcyc[i * p->n_opt + k];
        }
        out->bits[i] = (q_layer_bits){.node = p->cand[i], .wbits = p->opt[o].wbits, .abits = p->opt[o].abits};
    }
    return NPU_OK;
}

static bool overridden(const q_options *o, const char *name)
{
    for (int i = 0; i < o->n_layer_bits; i++)
        if (!strcmp(o->layer_bits[i].node, name))
            return true;
    return false;
}

static npu_status run(prec_ctx *p, q_prec_out *out)
{
    const q_prec_in *in = p->in;
    size_t nc = (size_t)(p->n_cand ? p->n_cand : 1), no = nc * (size_t)p->n_opt;
    int *choice = npu_malloc(p->alloc, sizeof(int) * nc * (PREC_LAMBDAS + 2));
    prec_plan *pl = npu_malloc(p->alloc, sizeof *pl * PREC_LAMBDAS);
    p->dnoise = npu_malloc(p->alloc, sizeof(double) * no);
    p->gain = npu_malloc(p->alloc, sizeof(double) * no);
    p->dcyc = npu_malloc(p->alloc, sizeof(int64_t) * no);
    npu_status st = NPU_OK;
    if (!choice || !pl || !p->dnoise || !p->gain || !p->dcyc)
        st = npu_fail(p->err, NPU_EINTERNAL, "out of memory");
    double s0 = 0;
    int64_t c0 = 0;
    if (st == NPU_OK)
        st = eval(p, NULL, &s0, &c0);
    out->sqnr_int8 = s0, out->cycles_int8 = c0;
    int64_t budget = in->budget_cycles > 0 ? in->budget_cycles
                   : in->budget_ratio > 0  ? (int64_t)floor(in->budget_ratio * (double)c0)
                                           : 0;
    out->budget = budget;
    out->target_db = in->target_sqnr_db;
    p->s_base = s0, p->c_base = c0;
    for (size_t i = 0; i < nc; i++)
        choice[i] = p->base;
    if (st == NPU_OK && p->base)
        st = eval(p, choice, &p->s_base, &p->c_base);
    if (st == NPU_OK)
        st = measure(p, choice, p->s_base);
    if (st == NPU_OK)
        st = cost_model(p, choice);
    int n = 0;
    for (int k = 0; k < PREC_LAMBDAS; k++)
        pl[k].choice = choice + nc * (size_t)(k + 1);
    if (st == NPU_OK)
        n = plans(p, p->s_base, p->c_base, budget, pl, choice);
    int *best = choice; /* the sweep's scratch is free again */
    if (st == NPU_OK)
        st = verify(p, pl, n, s0, c0, budget, out, best);
    if (st == NPU_OK)
        st = fill_out(p, best, out);
    npu_free(p->alloc, choice, choice ? sizeof(int) * nc * (PREC_LAMBDAS + 2) : 0);
    npu_free(p->alloc, pl, pl ? sizeof *pl * PREC_LAMBDAS : 0);
    npu_free(p->alloc, p->dnoise, p->dnoise ? sizeof(double) * no : 0);
    npu_free(p->alloc, p->gain, p->gain ? sizeof(double) * no : 0);
    npu_free(p->alloc, p->dcyc, p->dcyc ? sizeof(int64_t) * no : 0);
    return st;
}

npu_status q_precision_search(const q_prec_in *in, npu_alloc alloc, q_prec_out *out, npu_err *err)
{
    memset(out, 0, sizeof *out);
    const ir_graph *g = in->m.float_g;
    prec_ctx p = {.in = in, .alloc = alloc, .err = err};
    for (int w = 0; w < 2; w++)
        for (int a = 0; a < in->n_abits && p.n_opt < Q_PREC_MAX_OPTS; a++)
            p.opt[p.n_opt++] = (q_prec_opt){w ? 4 : 8, in->abits[a]};
    for (int o = 0; o < p.n_opt; o++) /* the base: 8-bit weights, the widest activations */
        p.base = p.opt[o].wbits == 8 && p.opt[o].abits > p.opt[p.base].abits ? o : p.base;
    int cap = 0;
    for (int i = 0; i < g->n_nodes; i++)
        cap += !g->nodes[i]->dead && q_classify(g->nodes[i]) == Q_KIND_WEIGHTED;
    size_t c1 = (size_t)(cap ? cap : 1);
    p.cand = npu_malloc(alloc, sizeof *p.cand * c1);
    p.bits = npu_malloc(alloc, sizeof *p.bits * (c1 + (size_t)in->m.base->n_layer_bits));
    npu_status st = NPU_OK;
    if (!p.cand || !p.bits)
        st = npu_fail(err, NPU_EINTERNAL, "out of memory");
    for (int i = 0; st == NPU_OK && i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (!n->dead && q_classify(n) == Q_KIND_WEIGHTED && !overridden(in->m.base, n->name))
            p.cand[p.n_cand++] = n->name;
    }
    if (st == NPU_OK)
        st = run(&p, out);
    npu_free(alloc, p.cand, p.cand ? sizeof *p.cand * c1 : 0);
    npu_free(alloc, p.bits, p.bits ? sizeof *p.bits * (c1 + (size_t)in->m.base->n_layer_bits) : 0);
    if (st != NPU_OK)
        q_prec_free(out, alloc);
    return st;
}

void q_prec_free(q_prec_out *out, npu_alloc alloc)
{
    size_t n = (size_t)(out->n ? out->n : 1);
    npu_free(alloc, out->layers, out->layers ? sizeof *out->layers * n : 0);
    npu_free(alloc, out->bits, out->bits ? sizeof *out->bits * n : 0);
    memset(out, 0, sizeof *out);
}
