/* Static figures of a compiled model: the tiler's per-layer estimates, the
 * memory plan, the sizes of the binary, in the --stats-json contract. */
#include "driver/report.h"

#include <string.h>

#include "common/stats.h"
#include "driver/estimate.h"

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

/* A layer's accesses: its command words decoded (NPU), or the host model's
 * instructions (host); adds them to the inference's. */
static double layer_energy(const tgt_target *t, const tile_program *prog, const tile_layer *l, uint64_t host_cycles,
                           uint64_t cycles, npu_stats *s, npu_energy_counts *all)
{
    drv_moved mv = {0};
    if (l)
        drv_count_words(t, prog->words, l->first_word, l->n_words, &mv);
    uint64_t macs = l ? (uint64_t)l->macs : 0;
    npu_energy_counts c = {mv.int4 ? 0 : macs, mv.int4 ? macs : 0, mv.sram_read, mv.sram_write,
                           mv.dram_read + mv.dram_write, mv.flash, mv.vector,
                           (uint64_t)((double)host_cycles * t->host_clock_mhz / t->npu_clock_mhz / t->host_cpi),
                           (double)cycles / (t->npu_clock_mhz * 1e6)};
    s->dram_read_bytes += mv.dram_read;
    s->dram_write_bytes += mv.dram_write;
    s->flash_read_bytes += mv.flash;
    all->macs_int8 += c.macs_int8, all->macs_int4 += c.macs_int4, all->sram_read += c.sram_read;
    all->sram_write += c.sram_write, all->dram += c.dram, all->flash += c.flash, all->vector += c.vector;
    all->host_insns += c.host_insns;
    npu_energy e;
    tgt_energy(t, &c, &e);
    return e.total;
}

/* memory.plan: every arena buffer with its steps, positions and level. */
static void plan_stats(const ir_graph *g, const mp_plan *plan, npu_stats_buffer *bufs, npu_stats *s)
{
    int n_plan = 0;
    for (int i = 0; i < plan->n_tensors; i++) {
        const mp_tensor *p = &plan->t[i];
        if (p->region != MP_REGION_ARENA || p->offset < 0)
            continue;
        bufs[n_plan++] = (npu_stats_buffer){g->tensors[i]->name, (uint64_t)p->offset, (uint64_t)p->size, p->first,
                                            p->last, p->alias_of >= 0 ? g->tensors[p->alias_of]->name : NULL,
                                            p->first_pos, p->last_pos, p->level == MP_LEVEL_SRAM ? "sram" : "dram",
                                            p->packed};
    }
    s->n_plan = n_plan, s->plan = bufs;
    s->arena_bytes = (uint64_t)plan->region_bytes[MP_REGION_ARENA];
    s->arena_lower_bound_bytes = (uint64_t)plan->arena_lower_bound;
    s->sram_resident_bytes = (uint64_t)plan->sram_bytes;
    s->sram_resident_lower_bound_bytes = (uint64_t)plan->sram_lower_bound;
}

npu_status drv_report(const drv_options *o, const tgt_target *t, const ir_graph *g, const part_result *part,
                      const part_schedule *sched, const mp_plan *plan,
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
    part_host_model hm = drv_host_model(t);
    npu_energy_counts all = {0};
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        const tile_layer *l = n->unit == IR_UNIT_NPU ? layer_of(prog, n) : NULL;
        npu_stats_layer *L = &layers[n_layers++];
        *L = (npu_stats_layer){n->name, ir_op_name(n->op), n->unit == IR_UNIT_NPU ? "npu" : "host", 0, 0, 0, 0, 0, 0};
        uint64_t host = n->unit == IR_UNIT_NPU ? 0 : (uint64_t)part_host_cycles(&hm, n);
        if (l) {
            L->cycles = (uint64_t)l->cycles, L->macs = (uint64_t)l->macs;
            L->dram_bytes = (uint64_t)l->dram_bytes, L->bound_cycles = (uint64_t)l->bound_cycles;
            s.cycles_npu += L->cycles;
            s.macs += L->macs;
        } else if (n->unit != IR_UNIT_NPU) {
            L->cycles = host;
            s.cycles_host += host;
        }
        uint64_t f0 = s.flash_read_bytes;
        L->energy_nj = layer_energy(t, prog, l, host, L->cycles, &s, &all);
        L->flash_bytes = s.flash_read_bytes - f0;
    }
    int npu_steps = 0;
    for (int i = 0; sched && i < sched->n_steps; i++)
        npu_steps += sched->steps[i].unit == IR_UNIT_NPU;
    s.cycles_host += drv_runtime_host_cycles(&hm, npu_steps);
    s.cycles_total = s.cycles_npu + s.cycles_host;
    all.host_insns = (uint64_t)((double)s.cycles_host / hm.npu_per_host_cycle / t->host_cpi);
    all.seconds = (double)s.cycles_total / (t->npu_clock_mhz * 1e6);
    tgt_energy(t, &all, &s.energy);
    tgt_area(t, &s.area);
    plan_stats(g, plan, bufs, &s);
    s.sram_peak_bytes = prog ? (uint64_t)prog->sram_peak : 0;
    s.weights_bytes = info->weights_bytes;
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
        fprintf(out, "\nestimate (static): %llu NPU cycles, %llu host, %.3f ms at %.0f MHz, %llu MACs, "
                "utilization %.1f%%\n", (unsigned long long)s.cycles_npu, (unsigned long long)s.cycles_host,
                npu_stats_time_ms(&s), s.clock_mhz, (unsigned long long)s.macs, 100.0 * npu_stats_mac_utilization(&s));
        fprintf(out, "energy %.1f nJ per inference (MAC %.1f, SRAM %.1f, DRAM %.1f, flash %.1f, vector %.1f, host %.1f, "
                "static %.1f), area %.3f mm^2\n", s.energy.total, s.energy.mac, s.energy.sram, s.energy.dram,
                s.energy.flash, s.energy.vector, s.energy.host, s.energy.leak, s.area.total);
        mp_report(plan, out); /* arena, bound, concats, splits */
        mp_report_homes(plan, g, out);
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
