/* Static figures of a compiled model: the tiler's per-layer estimates, the
 * memory plan, the sizes of the binary, in the --stats-json contract. */
#include "driver/report.h"

#include <string.h>

#include "common/stats.h"

static const tile_layer *layer_of(const tile_program *p, const ir_node *n)
{
    for (int i = 0; p && i < p->n_layers; i++)
        if (p->layers[i].node == n)
            return &p->layers[i];
    return NULL;
}

/* The model's inputs and outputs as the binary binds them (--stats-json "io"). */
static void io_stats(const ir_graph *g, npu_stats_io *io)
{
    for (int i = 0; i < g->n_inputs + g->n_outputs; i++) {
        const ir_tensor *t = i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs];
        npu_stats_io *p = &io[i];
        *p = (npu_stats_io){.name = t->name, .kind = i < g->n_inputs ? "input" : "output",
                            .dtype = npu_stats_dtype_name(t->dtype), .rank = t->rank};
        for (int d = 0; d < t->rank && d < 8; d++)
            p->dims[d] = t->dims[d];
        if ((t->dtype == IR_I8 || t->dtype == IR_U8) && t->quant && t->quant->count == 1) {
            p->quantized = true;
            p->scale = t->quant->scale[0];
            p->zero_point = t->quant->zero_point[0];
        }
    }
}

typedef struct part_json {
    const ir_graph *g;
    const part_result *part;
} part_json;

static void write_partition(void *ud, FILE *out)
{
    const part_json *p = ud;
    part_write_json(p->g, p->part, out);
}

npu_status drv_report(const drv_options *o, const tgt_target *t, const ir_graph *g, const part_result *part,
                      const mp_plan *plan,
                      const tile_program *prog, const emit_info *info, FILE *out, npu_err *err)
{
    npu_alloc a = npu_alloc_default();
    size_t nl = (size_t)g->n_nodes, np = (size_t)plan->n_tensors;
    npu_stats_layer *layers = npu_malloc(a, sizeof *layers * (nl ? nl : 1));
    npu_stats_buffer *bufs = npu_malloc(a, sizeof *bufs * (np ? np : 1));
    if (!layers || !bufs) {
        npu_free(a, layers, sizeof *layers * (nl ? nl : 1));
        npu_free(a, bufs, sizeof *bufs * (np ? np : 1));
        return npu_fail(err, NPU_EINTERNAL, "out of memory for the report");
    }
    npu_stats s;
    memset(&s, 0, sizeof s);
    s.target = t->name;
    s.target_config = t->config_json;
    s.model = o->model;
    s.clock_mhz = t->npu_clock_mhz;
    s.peak_macs_per_cycle = (double)(t->p[TGT_P_MAC_ROWS] * t->p[TGT_P_MAC_COLS]);
    int n_layers = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        const tile_layer *l = n->unit == IR_UNIT_NPU ? layer_of(prog, n) : NULL;
        npu_stats_layer *L = &layers[n_layers++];
        *L = (npu_stats_layer){n->name, ir_op_name(n->op), n->unit == IR_UNIT_NPU ? "npu" : "host", 0, 0, 0, 0};
        if (l) {
            L->cycles = (uint64_t)l->cycles, L->macs = (uint64_t)l->macs;
            L->dram_bytes = (uint64_t)l->dram_bytes, L->bound_cycles = (uint64_t)l->bound_cycles;
            s.cycles_npu += L->cycles;
            s.macs += L->macs;
            s.dram_read_bytes += L->dram_bytes; /* the static estimate does not split reads and writes */
        }
    }
    s.cycles_total = s.cycles_npu + s.cycles_host;
    int n_plan = 0;
    for (int i = 0; i < plan->n_tensors; i++) {
        const mp_tensor *p = &plan->t[i];
        if (p->region != MP_REGION_ARENA || p->offset < 0)
            continue;
        bufs[n_plan++] = (npu_stats_buffer){g->tensors[i]->name, (uint64_t)p->offset, (uint64_t)p->size, p->first,
                                            p->last, p->alias_of >= 0 ? g->tensors[p->alias_of]->name : NULL};
    }
    s.arena_bytes = (uint64_t)plan->region_bytes[MP_REGION_ARENA];
    s.arena_lower_bound_bytes = (uint64_t)plan->arena_lower_bound;
    s.sram_peak_bytes = prog ? (uint64_t)prog->sram_peak : 0;
    s.weights_bytes = info->weights_bytes;
    s.n_plan = n_plan, s.plan = bufs;
    s.n_layers = n_layers, s.layers = layers;
    part_json pj = {g, part};
    if (part && part->info) {
        s.extra = write_partition;
        s.extra_ud = &pj;
    }
    size_t nio = (size_t)(g->n_inputs + g->n_outputs);
    npu_stats_io *io = npu_malloc(a, sizeof *io * (nio ? nio : 1));
    if (io) {
        io_stats(g, io);
        s.n_io = (int)nio, s.io = io;
    }
    npu_status st = io ? NPU_OK : npu_fail(err, NPU_EINTERNAL, "out of memory for the report");
    if (st == NPU_OK && o->report) {
        fprintf(out, "\nestimate (static): %llu NPU cycles, %.3f ms at %.0f MHz, %llu MACs, utilization %.1f%%\n",
                (unsigned long long)s.cycles_npu, npu_stats_time_ms(&s), s.clock_mhz, (unsigned long long)s.macs,
                100.0 * npu_stats_mac_utilization(&s));
        mp_report(plan, out); /* arena, bound, concats, splits */
        fprintf(out, "weights %llu B, SRAM peak %llu B, host scratch %u B\n", (unsigned long long)s.weights_bytes,
                (unsigned long long)s.sram_peak_bytes, info->scratch_bytes);
    }
    if (st == NPU_OK && o->stats_json)
        st = npu_stats_save_json(&s, o->stats_json, err);
    npu_free(a, io, sizeof *io * (nio ? nio : 1));
    npu_free(a, layers, sizeof *layers * (nl ? nl : 1));
    npu_free(a, bufs, sizeof *bufs * (np ? np : 1));
    return st;
}
