/* The readable form of a .npub: what --emit listing writes and npudis
 * prints. Works from a validated npub_view only, so it shows exactly what
 * the runtime will see. */
#include <inttypes.h>

#include "emit/emit.h"
#include "ir/ir.h"

static const char *const region_names[NPUB_REGION_COUNT] = {"const", "arena", "input", "output"};

typedef struct labels {
    const npub_view *v;
} labels;

/* The source node of a debug range starting at word off. */
static const char *label_at(void *ud, size_t off)
{
    const labels *l = ud;
    for (uint32_t i = 0; i < l->v->n_debug; i++)
        if (l->v->debug[i].first_word == off)
            return npub_string(l->v, l->v->debug[i].name);
    return NULL;
}

static void print_tensor(const npub_view *v, uint32_t i, FILE *out)
{
    const npub_tensor *t = &v->tensors[i];
    fprintf(out, "  t%-4" PRIu32 " %-10s [", i, t->dtype < IR_DTYPE_COUNT ? ir_dtype_name((ir_dtype)t->dtype) : "?");
    for (int d = 0; d < t->rank; d++)
        fprintf(out, "%s%" PRId32, d ? "," : "", t->dims[d]);
    fprintf(out, "] %s+0x%" PRIx32 " %" PRIu32 " B", region_names[t->region], t->offset, t->size);
    if (t->has_quant)
        fprintf(out, " s=%g z=%" PRId32, (double)t->scale, t->zero_point);
    if (t->alias_of != NPUB_NONE)
        fprintf(out, " in t%" PRIu32, t->alias_of);
    fprintf(out, "  %s\n", npub_string(v, t->name));
}

npu_status emit_listing(const npub_view *v, const tgt_isa *isa, FILE *out, npu_err *err)
{
    const npub_header *h = v->header;
    fprintf(out, "npub v%u for target %.24s (hash %016" PRIx64 "), %" PRIu32 " bytes%s\n", h->version, h->target,
            h->target_hash, h->file_size, (h->flags & NPUB_F_STRIPPED) ? ", stripped" : "");
    if (v->memory) {
        const npub_memory *m = v->memory;
        fprintf(out, "memory: const %" PRIu32 " B, arena %" PRIu32 " B, input %" PRIu32 " B, output %" PRIu32
                     " B, SRAM peak %" PRIu32 " B, host scratch %" PRIu32 " B\n",
                m->region_bytes[0], m->region_bytes[1], m->region_bytes[2], m->region_bytes[3], m->sram_peak_bytes,
                m->scratch_bytes);
    }
    fprintf(out, "tensors (%" PRIu32 "):\n", v->n_tensors);
    for (uint32_t i = 0; i < v->n_tensors; i++)
        print_tensor(v, i, out);
    if (v->io) {
        fprintf(out, "inputs:");
        for (uint32_t i = 0; i < v->io->n_inputs; i++)
            fprintf(out, " t%" PRIu32, v->inputs[i]);
        fprintf(out, "\noutputs:");
        for (uint32_t i = 0; i < v->io->n_outputs; i++)
            fprintf(out, " t%" PRIu32, v->outputs[i]);
        fprintf(out, "\n");
    }
    fprintf(out, "steps (%" PRIu32 "):\n", v->n_steps);
    for (uint32_t i = 0; i < v->n_steps; i++) {
        const npub_step *s = &v->steps[i];
        if (s->kind == NPUB_STEP_NPU)
            fprintf(out, "  %3" PRIu32 " npu   words %06" PRIx32 "..%06" PRIx32 "  %s\n", i, s->a, s->a + s->b,
                    npub_string(v, s->name));
        else
            fprintf(out, "  %3" PRIu32 " host  kernel %-3u params %" PRIu32 "+%" PRIu32 "  %s\n", i, s->op, s->a,
                    s->b, npub_string(v, s->name));
    }
    fprintf(out, "commands (%" PRIu32 " words):\n", v->n_commands);
    labels l = {v};
    return tgt_disasm(isa, v->commands, v->n_commands, out, v->n_debug ? label_at : NULL, &l, err);
}
