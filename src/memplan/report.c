/* mp_report: the --report lines of the memory plan. */
#include "memplan/memplan.h"

void mp_report(const mp_plan *p, FILE *out)
{
    int64_t arena = p->region_bytes[MP_REGION_ARENA], lb = p->arena_lower_bound;
    fprintf(out, "memory: arena %lld bytes (lower bound %lld, %.3fx), inputs %lld, outputs %lld\n", (long long)arena,
            (long long)lb, lb ? (double)arena / (double)lb : 1.0, (long long)p->region_bytes[MP_REGION_INPUT],
            (long long)p->region_bytes[MP_REGION_OUTPUT]);
    fprintf(out, "concats: %d of %d written in place; %lld bytes copied (%lld without elision)\n", p->concats_elided,
            p->concats, (long long)p->concat_bytes_copied, (long long)p->concat_bytes_without_elision);
    if (p->sram_tensors) {
        fprintf(out, "memory: SRAM level %lld bytes (lower bound %lld), %d resident buffers\n", (long long)p->sram_bytes,
                (long long)p->sram_lower_bound, p->sram_tensors);
    }
    if (p->splits)
        fprintf(out, "splits: %d of %d read in place\n", p->splits_in_place, p->splits);
}

void mp_report_homes(const mp_plan *p, const ir_graph *g, FILE *out)
{
    int n = 0;
    for (int t = 0; t < p->n_tensors && t < g->n_tensors; t++) {
        const mp_tensor *m = &p->t[t];
        if (m->region != MP_REGION_ARENA || (m->offset < 0 && !m->in_sram))
            continue;
        const char *home = m->in_sram ? "sram (cascade)" : m->level == MP_LEVEL_SRAM ? "sram" : "dram";
        fprintf(out, "%s%s %s", n++ ? ", " : "homes: ", g->tensors[t]->name, home);
    }
    if (n)
        fputc('\n', out);
}
