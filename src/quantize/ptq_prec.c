/* --precision auto as a step of q_ptq: the options' checks, the search
 * (precision.c) with the activation bits the quantizer has, and the
 * report's lines. */
#include <stdio.h>
#include <string.h>

#include "quantize/quantize_internal.h"

npu_status q_ptq_precision_check(const q_ptq_options *o, const char *model, npu_err *err)
{
    int budgets = (o->budget_cycles > 0) + (o->budget_ratio > 0) + (o->target_sqnr_db > 0);
    if (budgets != 1)
        return npu_fail(err, NPU_EUSER, "%s: --precision auto needs one of --budget-cycles, --budget-ratio and "
                        "--target-sqnr (%d given)", model, budgets);
    if (o->q.wbits != 8 || o->q.abits != 8)
        return npu_fail(err, NPU_EUSER, "%s: --precision auto chooses the bits of every layer: it starts from "
                        "--wbits 8 --abits 8 (given %d and %d)", model, o->q.wbits, o->q.abits);
    if (o->accuracy_budget_db > 0)
        return npu_fail(err, NPU_EUSER, "%s: --precision auto and --accuracy-budget are two searches: give one",
                        model);
    if (!o->cycles)
        return npu_fail(err, NPU_EINTERNAL, "%s: --precision auto without the tiler's cycle estimate", model);
    return NPU_OK;
}

npu_status q_ptq_precision(const q_mixed_in *mi, const q_ptq_options *o, q_prec_out *out, npu_err *err)
{
    /* activation bits to choose from: int8, or A16W8 */
    static const int abits[] = {8, 16};
    q_prec_in in = {.m = *mi, .cycles = o->cycles, .ud = o->cycles_ud, .budget_cycles = o->budget_cycles,
                    .budget_ratio = o->budget_ratio, .target_sqnr_db = o->target_sqnr_db,
                    .n_abits = (int)(sizeof abits / sizeof abits[0]), .abits = abits};
    return q_precision_search(&in, mi->float_g->alloc, out, err);
}

npu_status q_prec_annotate(ir_graph *g, const q_prec_out *p, q_report *r, npu_err *err)
{
    char buf[512];
    for (int i = 0; i < r->n_layers; i++) {
        q_layer_sqnr *l = &r->layers[i];
        for (int k = 0; k < p->n; k++) {
            const q_prec_layer *c = &p->layers[k];
            if (strcmp(c->node, l->node))
                continue;
            /* the choice, then what each option does alone against all-int8 */
            int len = snprintf(buf, sizeof buf, "auto: w%d a%d; alone among w%da%d:", p->opt[c->chosen].wbits,
                               p->opt[c->chosen].abits, p->opt[p->base].wbits, p->opt[p->base].abits);
            for (int o = 0; o < p->n_opt && len < (int)sizeof buf; o++)
                if (o != p->base)
                len += snprintf(buf + len, sizeof buf - (size_t)len, " w%da%d %+.2f dB %+lld cyc", p->opt[o].wbits,
                                p->opt[o].abits, c->gain_db[o], (long long)c->dcycles[o]);
            if (!(l->why8 = npu_arena_strdup(g->arena, buf)))
                return npu_fail(err, NPU_EINTERNAL, "out of memory");
        }
    }
    int n4 = 0, n16 = 0;
    for (int k = 0; k < p->n; k++)
        n4 += p->opt[p->layers[k].chosen].wbits == 4, n16 += p->opt[p->layers[k].chosen].abits == 16;
    char goal[96];
    if (p->budget > 0)
        snprintf(goal, sizeof goal, "budget %lld cycles (%.3fx all-int8)", (long long)p->budget,
                 (double)p->budget / (double)(p->cycles_int8 ? p->cycles_int8 : 1));
    else
        snprintf(goal, sizeof goal, "target %.2f dB", p->target_db);
    char base[128] = "";
    if (p->base)
        snprintf(base, sizeof base, "; all-w%da%d: %lld cycles, %.2f dB", p->opt[p->base].wbits, p->opt[p->base].abits,
                 (long long)p->cycles_base, p->sqnr_base);
    snprintf(buf, sizeof buf,
             "precision auto: %s; chosen: %d of %d layers w4, %d a16; estimated %lld cycles (%.3fx all-int8 %lld), "
             "output SQNR %.2f dB on %s (all-int8 %.2f dB)%s%s",
             goal, n4, p->n, n16, (long long)p->cycles, (double)p->cycles / (double)(p->cycles_int8 ? p->cycles_int8 : 1),
             (long long)p->cycles_int8, p->sqnr, "the search's samples", p->sqnr_int8, base, p->met ? "" : "; NOT MET");
    if (!(r->note = npu_arena_strdup(g->arena, buf)))
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    return NPU_OK;
}
