/* The model path of the simulator: lays the binary and its regions out in
 * the SoC's memory, boots the firmware once and hands it one request per
 * inference, and attributes the NPU model's instruction events to layers
 * through the binary's debug section. */
#include "sim/npub_run.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "common/file.h"
#include "format/format.h"
#include "format/npub_sign.h"
#include "rt/npurt_ops.h"
#include "sim/npu.h"
#include "sim/npub_trace.h"
#include "target/target.h"

typedef struct layer_acc {
    uint64_t cycles, macs, dram;
    uint64_t int4_macs, flash; /* for the layer's bound */
    uint64_t sram_read, sram_write, vector; /* for its energy */
    const char *op;            /* from the graph section (fmt_op_name: static) */
    uint64_t job_start, job_end; /* span inside the current job */
    uint64_t job;                /* job number the span belongs to, +1 (0: none yet) */
} layer_acc;

struct simrun {
    npu_alloc alloc;
    const char *path;
    void *blob;
    size_t size;
    npub_view v;        /* the whole file: names, debug ranges */
    void *dev;          /* what goes to flash: the file without its debug and graph sections */
    size_t dev_size;
    npub_view dv;
    tgt_target *t;
    sim_config cfg;
    sim_ctx *sim;
    npu_model *npu;
    uint32_t blob_addr, cmd_addr, req_addr;
    uint32_t flash_blob_addr; /* the blob's flash image when blob_addr is its DRAM copy, else 0 */
    uint32_t region_addr[NPUB_REGION_COUNT];
    uint32_t scratch_addr;
    uint64_t inferences, jobs;
    uint64_t host_cycles, npu_cycles, total_cycles;
    uint64_t dram_read, dram_write, macs;
    npu_energy_counts use; /* every inference's accesses (seconds and host_insns unused) */
    uint64_t load_cycles;  /* the constants' copy to DRAM at load, NPU cycles */
    int32_t *layer_of_word; /* debug range of each command word, -1 for none */
    layer_acc *layers;      /* one per debug range */
    uint32_t base_word;     /* first word of the running job */
    uint64_t job_host_start;
    simtrace *tr;                 /* --trace: NULL when not tracing */
    bool trace_all;
    uint64_t trace_inference;
    uint64_t *step_last;          /* host cycles per step of the last inference */
    bool trace_oom;
    npu_stats_layer *stat_layers; /* filled by simrun_stats */
    uint64_t *step_host;          /* host cycles per step (NPU waits included), summed */
    const char **step_op;         /* op type per step (host steps; static strings) */
    uint64_t run_host;            /* host cycles of npurt_run, summed (boot and open excluded) */
    uint64_t sram_peak_merged;    /* the highest SRAM peak of contexts merged in (simrun_merge) */
};

static bool traced(const simrun *r)
{
    return r->tr && (r->trace_all || r->inferences == r->trace_inference);
}

static void on_event(void *ud, const npu_insn_event *e)
{
    simrun *r = ud;
    uint32_t w = r->base_word + e->word;
    int32_t li = w < r->v.n_commands ? r->layer_of_word[w] : -1;
    r->macs += e->macs;
    r->dram_read += e->dram_read;
    r->dram_write += e->dram_write;
    uint64_t vec = e->unit == TGT_UNIT_VECTOR ? e->sram_write : 0;
    r->use.macs_int8 += e->macs - e->int4_macs, r->use.macs_int4 += e->int4_macs;
    r->use.sram_read += e->sram_read, r->use.sram_write += e->sram_write, r->use.vector += vec;
    r->use.dram += e->dram_read + e->dram_write, r->use.flash += e->flash_read;
    if (li >= 0) {
        layer_acc *L = &r->layers[li];
        if (L->job != r->jobs + 1) {
            L->job = r->jobs + 1;
            L->job_start = e->start;
            L->job_end = e->end;
        }
        if (e->start < L->job_start)
            L->job_start = e->start;
        if (e->end > L->job_end)
            L->job_end = e->end;
        L->macs += e->macs;
        L->int4_macs += e->int4_macs;
        L->dram += e->dram_read + e->dram_write;
        L->flash += e->flash_read;
        L->sram_read += e->sram_read, L->sram_write += e->sram_write, L->vector += vec;
    }
    if (traced(r) && !simtrace_event(r->tr, r->job_host_start, e, li >= 0 ? npub_string(&r->v, r->v.debug[li].name)
                                                                           : NULL))
        r->trace_oom = true;
}

/* Wraps the model's seam to learn where each job's stream starts. */
static npu_status run_job(void *ud, sim_ctx *sim, const sim_npu_job *job, uint64_t *npu_cycles, npu_err *err)
{
    simrun *r = ud;
    r->base_word = job->cmd_base >= r->cmd_addr ? (job->cmd_base - r->cmd_addr) / 4 : 0;
    r->job_host_start = job->start_cycle;
    npu_status st = npu_model_sim_ops()->run(r->npu, sim, job, npu_cycles, err);
    for (uint32_t i = 0; i < r->v.n_debug; i++)
        if (r->layers[i].job == r->jobs + 1)
            r->layers[i].cycles += r->layers[i].job_end - r->layers[i].job_start;
    r->jobs++;
    return st;
}

static const sim_npu_ops run_ops = {run_job};

const npub_view *simrun_view(const simrun *r)
{
    return &r->v;
}

npu_model *simrun_npu(simrun *r)
{
    return r->npu;
}

uint64_t simrun_inferences(const simrun *r)
{
    return r->inferences;
}

/* The host kernels' scratch plus the firmware's per-step cycle table. */
static uint32_t scratch_size(const simrun *r)
{
    return (r->v.memory->scratch_bytes + 15u) / 16u * 16u + 8u * r->v.n_steps + 16u;
}

/* Flash: the binary. DRAM: the regions the binary's memory section sizes,
 * the host scratch, the request block. */
static npu_status place(simrun *r, npu_err *err)
{
    npu_status st = sim_place_flash(r->sim, r->dev, r->dev_size, 64, &r->blob_addr, err);
    const npub_memory *m = r->v.memory;
    for (int i = NPUB_REGION_ARENA; st == NPU_OK && i < NPUB_REGION_COUNT; i++)
        st = sim_place_dram(r->sim, NULL, m->region_bytes[i] ? m->region_bytes[i] : 16, 64, &r->region_addr[i], err);
    if (st == NPU_OK)
        st = sim_place_dram(r->sim, NULL, scratch_size(r), 64, &r->scratch_addr, err);
    fw_request req = {.magic = FW_REQ_MAGIC, .version = FW_REQ_VERSION, .command = FW_CMD_RUN_NPUB};
    if (st == NPU_OK)
        st = sim_place_request(r->sim, &req, &r->req_addr, err);
    if (st != NPU_OK)
        return npu_err_prefix(err, "%s: does not fit the target's memory", r->path);
    if (r->t->p[TGT_P_PLACEMENT_CONSTANTS] == TGT_PLACE_DRAM) {
        /* the loader copies the binary from flash to DRAM once, over the flash bus; the NPU then reads the
         * constants (and the runtime the commands) there, and the flash original over region flash */
        r->flash_blob_addr = r->blob_addr;
        if ((st = sim_place_dram(r->sim, r->dev, r->dev_size, 64, &r->blob_addr, err)) != NPU_OK)
            return npu_err_prefix(err, "%s: the copy of the binary to DRAM does not fit", r->path);
        r->load_cycles = (uint64_t)ceil((double)r->dev_size / tgt_bus_bytes_per_cycle(r->t, TGT_BUS_FLASH)) +
                         (uint64_t)r->t->p[TGT_P_FLASH_LATENCY];
    }
    r->region_addr[NPUB_REGION_CONST] = r->blob_addr + (uint32_t)(r->dv.constants - r->dv.base);
    r->cmd_addr = r->blob_addr + (uint32_t)((const uint8_t *)r->dv.commands - r->dv.base);
    return NPU_OK;
}

/* The device holds what a production build (--strip) holds: the debug and
 * graph sections are for the host tools, and a large model's graph section
 * (its weights again) would not fit the flash. */
static npu_status make_device_blob(simrun *r, npu_err *err)
{
    fmt_section secs[NPUB_SEC_KIND_MAX];
    int n = 0;
    for (uint32_t i = 0; i < r->v.header->section_count; i++) {
        const npub_section *sec = &r->v.sections[i];
        if (sec->kind != NPUB_SEC_DEBUG && sec->kind != NPUB_SEC_GRAPH && sec->kind != NPUB_SEC_TARGET &&
            n < NPUB_SEC_KIND_MAX)
            secs[n++] = (fmt_section){(npub_section_kind)sec->kind, r->v.base + sec->offset, sec->size};
    }
    char name[FMT_TARGET_NAME_CAP];
    fmt_npub_target_name(&r->v, name);
    npu_status st = fmt_npub_assemble(name, r->v.header->target_hash, r->v.header->flags | NPUB_F_STRIPPED, secs,
                                       n, r->alloc, &r->dev, &r->dev_size, err);
    npub_error ne;
    if (st == NPU_OK && npub_open(r->dev, r->dev_size, &r->dv, &ne) != 0)
        st = npu_fail(err, NPU_EINTERNAL, "%s: the stripped copy does not validate: %s", r->path, ne.msg);
    return st;
}

static bool name_is(const char *s, const char *name, size_t len)
{
    return s && strlen(s) == len && memcmp(s, name, len) == 0;
}

/* The first node of a name gives that name's op type. */
static void on_node(void *ud, const char *name, size_t len, const char *op)
{
    simrun *r = ud;
    for (uint32_t d = 0; d < r->v.n_debug; d++)
        if (!r->layers[d].op && name_is(npub_string(&r->v, r->v.debug[d].name), name, len))
            r->layers[d].op = op;
    for (uint32_t i = 0; i < r->v.n_steps; i++) {
        const npub_step *s = &r->v.steps[i];
        if (!r->step_op[i] && s->kind == NPUB_STEP_HOST && name_is(npub_string(&r->v, s->name), name, len))
            r->step_op[i] = op;
    }
}

/* Each layer's and host step's op type, by its node's name in the graph
 * section (a binary with a debug section has one: --strip drops both); a
 * host step without one is named by its kernel. */
static npu_status layer_ops(simrun *r, npu_err *err)
{
    for (uint32_t d = 0; d < r->v.n_debug; d++)
        r->layers[d].op = NULL;
    for (uint32_t i = 0; i < r->v.n_steps; i++)
        r->step_op[i] = NULL;
    if (r->v.graph && r->v.n_debug) {
        npu_status st = fmt_graph_nodes(r->v.graph, r->v.graph_size, on_node, r, err);
        if (st != NPU_OK)
            return st;
    }
    for (uint32_t d = 0; d < r->v.n_debug; d++)
        if (!r->layers[d].op)
            r->layers[d].op = "";
    for (uint32_t i = 0; i < r->v.n_steps; i++) {
        const npub_step *s = &r->v.steps[i];
        if (!r->step_op[i])
            r->step_op[i] = s->kind == NPUB_STEP_HOST ? npurt_kernel_name(s->op) : "";
    }
    return NPU_OK;
}

/* The layer's peak-throughput bound, as the tiler's (src/tiler/tile_build.c)
 * but from what ran: the MACs on the array (int4 ones at the int4 rate) or
 * the bytes over DRAM or flash, whichever takes longest. */
static uint64_t layer_bound(const tgt_target *t, const layer_acc *L, uint64_t n)
{
    double peak = (double)(t->p[TGT_P_MAC_ROWS] * t->p[TGT_P_MAC_COLS]);
    double speedup = t->p[TGT_P_MAC_INT4_SPEEDUP] > 0 ? (double)t->p[TGT_P_MAC_INT4_SPEEDUP] : 1.0;
    double mac = ((double)(L->macs - L->int4_macs) + (double)L->int4_macs / speedup) / peak;
    double dram = (double)L->dram / (double)t->p[TGT_P_DRAM_BYTES_PER_CYCLE];
    double flash = (double)L->flash / (double)t->p[TGT_P_FLASH_BYTES_PER_CYCLE];
    double b = mac > dram ? mac : dram;
    b = b > flash ? b : flash;
    return (uint64_t)ceil(b / (double)n);
}

/* Energy of n inferences' worth of a layer's accesses, per inference, with
 * the static power over its cycles. */
static double layer_energy(const simrun *r, const layer_acc *L, uint64_t n)
{
    npu_energy_counts c = {(L->macs - L->int4_macs) / n, L->int4_macs / n, L->sram_read / n, L->sram_write / n,
                           L->dram / n, L->flash / n, L->vector / n, 0, (double)L->cycles / (double)n / r->cfg.npu_hz};
    npu_energy e;
    tgt_energy(r->t, &c, &e);
    return e.total;
}

/* A host step: its instructions (cycles over the CPI) and its time. */
static double host_energy(const simrun *r, uint64_t host_cycles)
{
    npu_energy_counts c = {.host_insns = (uint64_t)((double)host_cycles / r->t->host_cpi),
                           .seconds = (double)host_cycles / r->cfg.host_hz};
    npu_energy e;
    tgt_energy(r->t, &c, &e);
    return e.total;
}

/* Per inference: every NPU access counted, the host's instructions outside
 * the NPU's time, the static power over the whole inference. */
static void total_energy(const simrun *r, npu_stats *s, uint64_t n)
{
    const npu_energy_counts *u = &r->use;
    double host_per_npu = r->cfg.host_hz / r->cfg.npu_hz;
    npu_energy_counts c = {u->macs_int8 / n, u->macs_int4 / n, u->sram_read / n, u->sram_write / n, u->dram / n,
                           u->flash / n, u->vector / n,
                           (uint64_t)((double)s->cycles_host * host_per_npu / r->t->host_cpi),
                           (double)s->cycles_total / r->cfg.npu_hz};
    tgt_energy(r->t, &c, &s->energy);
    tgt_area(r->t, &s->area);
    s->flash_read_bytes = u->flash / n;
    s->load_cycles = r->load_cycles;
}

static npu_status index_layers(simrun *r, npu_err *err)
{
    size_t nw = r->v.n_commands ? r->v.n_commands : 1, nd = r->v.n_debug ? r->v.n_debug : 1;
    r->layer_of_word = npu_malloc(r->alloc, sizeof(int32_t) * nw);
    r->layers = npu_malloc(r->alloc, sizeof(layer_acc) * nd);
    size_t ns = r->v.n_steps ? r->v.n_steps : 1;
    r->stat_layers = npu_malloc(r->alloc, sizeof(npu_stats_layer) * (nd + ns));
    r->step_host = npu_malloc(r->alloc, sizeof(uint64_t) * ns);
    r->step_op = npu_malloc(r->alloc, sizeof(const char *) * ns);
    r->step_last = npu_malloc(r->alloc, sizeof(uint64_t) * ns);
    if (!r->layer_of_word || !r->layers || !r->stat_layers || !r->step_host || !r->step_op || !r->step_last)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    memset(r->layers, 0, sizeof(layer_acc) * nd);
    memset(r->step_host, 0, sizeof(uint64_t) * ns);
    for (size_t i = 0; i < nw; i++)
        r->layer_of_word[i] = -1;
    for (uint32_t d = 0; d < r->v.n_debug; d++)
        for (uint32_t w = 0; w < r->v.debug[d].word_count; w++)
            r->layer_of_word[r->v.debug[d].first_word + w] = (int32_t)d;
    return layer_ops(r, err);
}

npu_status simrun_open(const char *npub_path, const simrun_options *o, simrun **out, npu_err *err)
{
    npu_alloc a = o->alloc.fn ? o->alloc : npu_alloc_default();
    simrun *r = npu_malloc(a, sizeof *r);
    *out = NULL;
    if (!r)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    memset(r, 0, sizeof *r);
    r->alloc = a;
    r->path = npub_path;
    r->trace_all = o->trace_all;
    r->trace_inference = o->trace_inference;
    if (o->trace && !(r->tr = simtrace_new(a, o->trace, NULL, 0, 0))) {
        simrun_free(r);
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    }
    npu_status st = fmt_npub_read_ex(npub_path, &o->files, a, &r->blob, &r->size, &r->v, err);
    if (st == NPU_OK && o->verify_key)
        st = fmt_npub_verify_key(npub_path, &r->v, o->verify_key, err);
    if (st == NPU_OK && !r->v.memory)
        st = npu_fail(err, NPU_EUSER, "%s: no memory section", npub_path);
    if (st == NPU_OK)
        st = fmt_npub_target_ex(&r->v, r->path, o->target, &(tgt_opts){.sets = o->sets, .nsets = o->nsets},
                                !o->any_target && !o->nsets, &r->t, err);
    if (st == NPU_OK)
        st = make_device_blob(r, err);
    if (st == NPU_OK) {
        sim_config_default(&r->cfg);
        r->cfg.console = o->console;
        if (o->max_insns)
            r->cfg.max_insns = o->max_insns;
        st = sim_config_from_target(r->t, &r->cfg, err);
    }
    if (st == NPU_OK)
        st = sim_new(&r->cfg, &r->sim, err);
    if (st == NPU_OK)
        st = sim_load_elf_file(r->sim, o->firmware, err);
    if (st == NPU_OK)
        st = npu_model_new(r->t, a, &r->npu, err);
    if (st == NPU_OK)
        st = index_layers(r, err);
    if (st == NPU_OK)
        st = place(r, err);
    if (st != NPU_OK) {
        simrun_free(r);
        return st;
    }
    if (r->tr)
        simtrace_bind(r->tr, r->t, r->cfg.host_hz, r->cfg.npu_hz);
    npu_model_set_events(r->npu, on_event, r);
    sim_attach_npu(r->sim, &run_ops, r);
    /* boot and validate once, then one request per inference (docs/runtime.md) */
    sim_set_serve(r->sim, 1);
    *out = r;
    return NPU_OK;
}

void simrun_free(simrun *r)
{
    if (!r)
        return;
    if (r->npu)
        npu_model_free(r->npu);
    if (r->sim)
        sim_free(r->sim);
    if (r->t)
        tgt_free(r->t);
    npu_free(r->alloc, r->layer_of_word, sizeof(int32_t) * (r->v.n_commands ? r->v.n_commands : 1));
    npu_free(r->alloc, r->layers, sizeof(layer_acc) * (r->v.n_debug ? r->v.n_debug : 1));
    size_t ns = r->v.n_steps ? r->v.n_steps : 1;
    npu_free(r->alloc, r->stat_layers, sizeof(npu_stats_layer) * ((r->v.n_debug ? r->v.n_debug : 1) + ns));
    npu_free(r->alloc, r->step_host, sizeof(uint64_t) * ns);
    npu_free(r->alloc, r->step_last, sizeof(uint64_t) * ns);
    simtrace_free(r->tr);
    npu_free(r->alloc, r->step_op, sizeof(const char *) * ns);
    if (r->blob)
        npu_free_file(r->alloc, r->blob, r->size);
    if (r->dev)
        npu_free(r->alloc, r->dev, r->dev_size);
    npu_free(r->alloc, r, sizeof *r);
}

static npu_status write_request(simrun *r, npu_err *err)
{
    const npub_memory *m = r->v.memory;
    fw_request req = {.magic = FW_REQ_MAGIC, .version = FW_REQ_VERSION, .command = FW_CMD_RUN_NPUB};
    req.arg[0] = r->blob_addr;
    req.arg[1] = (uint32_t)r->dev_size;
    req.arg[2] = r->region_addr[NPUB_REGION_INPUT];
    req.arg[3] = r->region_addr[NPUB_REGION_OUTPUT];
    req.arg[4] = r->region_addr[NPUB_REGION_ARENA];
    req.arg[5] = m->region_bytes[NPUB_REGION_ARENA];
    req.arg[6] = r->scratch_addr;
    req.arg[7] = scratch_size(r);
    req.flash_blob = r->flash_blob_addr;
    (void)m;
    sim_set_request_addr(r->sim, r->req_addr);
    return sim_mem_write(r->sim, r->req_addr, &req, sizeof req, err);
}

/* The runtime's own account: host cycles of the inference (from the start
 * of npurt_run, so firmware boot and binary validation are excluded) and of
 * each step. */
static npu_status read_results(simrun *r, npu_err *err)
{
    fw_request req;
    npu_status st = sim_mem_read(r->sim, r->req_addr, &req, sizeof req, err);
    if (st != NPU_OK)
        return st;
    if (req.status == FW_REQ_ST_NEW) /* a firmware of one's own, which runs its own model */
        return npu_fail(err, NPU_EUSER, "%s: the firmware exited without answering the FW_CMD_RUN_NPUB request "
                        "(docs/runtime.md); run a firmware with its own model as npusim --firmware ELF, "
                        "without MODEL.npub", r->path);
    if (req.status != FW_REQ_ST_DONE || req.result[FW_NPUB_RES_STATUS] != 0)
        return npu_fail(err, NPU_EUSER, "%s: the runtime reported failure %u at step %d", r->path,
                        req.result[FW_NPUB_RES_STATUS], (int)req.result[FW_NPUB_RES_STEP]);
    r->run_host += (uint64_t)req.result[FW_NPUB_RES_CYCLES_HI] << 32 | req.result[FW_NPUB_RES_CYCLES_LO];
    uint32_t table = req.result[FW_NPUB_RES_STEP_TABLE], n = r->v.n_steps;
    for (uint32_t i = 0; table && i < n && st == NPU_OK; i++) {
        uint32_t c[2];
        if ((st = sim_mem_read(r->sim, table + 8 * i, c, sizeof c, err)) == NPU_OK)
            r->step_host[i] += r->step_last[i] = (uint64_t)c[1] << 32 | c[0];
    }
    return st;
}

/* The traced inference's steps with this inference's host cycles. */
static npu_status trace_inference(simrun *r, npu_err *err)
{
    uint32_t n = r->v.n_steps;
    simtrace_step *s = npu_malloc(r->alloc, sizeof *s * (n ? n : 1));
    if (!s || r->trace_oom) {
        npu_free(r->alloc, s, sizeof *s * (n ? n : 1));
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory for the trace", r->path);
    }
    for (uint32_t i = 0; i < n; i++)
        s[i] = (simtrace_step){npub_string(&r->v, r->v.steps[i].name), r->step_op[i],
                               r->v.steps[i].kind == NPUB_STEP_NPU, r->step_last[i]};
    simtrace_inference(r->tr, r->inferences, s, n);
    npu_free(r->alloc, s, sizeof *s * (n ? n : 1));
    return NPU_OK;
}

void simrun_trace_end(simrun *r)
{
    simtrace_finish(r->tr);
    r->tr = NULL;
}

npu_status simrun_infer(simrun *r, const void *const *inputs, void *const *outputs, npu_err *err)
{
    const npub_view *v = &r->v;
    npu_status st = NPU_OK;
    for (uint32_t i = 0; st == NPU_OK && i < v->io->n_inputs; i++) {
        const npub_tensor *t = &v->tensors[v->inputs[i]];
        st = sim_mem_write(r->sim, r->region_addr[t->region] + t->offset, inputs[i], t->size, err);
    }
    if (st == NPU_OK)
        st = write_request(r, err);
    sim_result res;
    if (st == NPU_OK)
        st = sim_waiting(r->sim) ? sim_resume(r->sim, &res, err) : sim_run(r->sim, &res, err);
    if (st != NPU_OK)
        return npu_err_prefix(err, "%s", r->path);
    if (res.exit_code != 0)
        return npu_fail(err, NPU_EUSER, "%s: the runtime failed on the simulated host (exit code %d): %s", r->path,
                        (int)res.exit_code, res.msg);
    if ((st = read_results(r, err)) != NPU_OK)
        return st;
    if (traced(r) && (st = trace_inference(r, err)) != NPU_OK)
        return st;
    for (uint32_t j = 0; st == NPU_OK && j < v->io->n_outputs; j++) {
        const npub_tensor *t = &v->tensors[v->outputs[j]];
        st = sim_mem_read(r->sim, r->region_addr[t->region] + t->offset, outputs[j], t->size, err);
    }
    r->host_cycles += res.stats.host_cycles;
    r->npu_cycles += res.stats.npu_cycles;
    r->total_cycles += res.stats.total_cycles;
    r->inferences++;
    return st;
}

/* The runtime's host cycles per step (NPU clock cycles per inference, as
 * the layers'): for a host step its kernel, for an NPU step the launch and
 * the wait for the NPU. */
static void write_steps(void *ud, FILE *out)
{
    const simrun *r = ud;
    uint64_t n = r->inferences ? r->inferences : 1;
    double host_per_npu = r->cfg.npu_hz / r->cfg.host_hz;
    fprintf(out, "\"steps\": [");
    for (uint32_t i = 0; i < r->v.n_steps; i++) {
        const npub_step *st = &r->v.steps[i];
        uint64_t c = (uint64_t)((double)r->step_host[i] / (double)n * host_per_npu + 0.5);
        fprintf(out, "%s\n    {\"step\": %" PRIu32 ", \"kind\": \"%s\", \"name\": ", i ? "," : "", i,
                st->kind == NPUB_STEP_HOST ? "host" : "npu");
        npu_json_string(out, npub_string(&r->v, st->name));
        fprintf(out, ", \"op\": ");
        npu_json_string(out, r->step_op[i]);
        fprintf(out, ", \"host_cycles\": %" PRIu64 "}", c);
    }
    fprintf(out, "%s]", r->v.n_steps ? "\n  " : "");
}

/* Integer sums (and one maximum), so the totals do not depend on how the
 * inferences were split between contexts. */
void simrun_merge(simrun *dst, const simrun *src)
{
    dst->inferences += src->inferences;
    dst->jobs += src->jobs;
    dst->host_cycles += src->host_cycles;
    dst->npu_cycles += src->npu_cycles;
    dst->total_cycles += src->total_cycles;
    dst->dram_read += src->dram_read;
    dst->dram_write += src->dram_write;
    dst->macs += src->macs;
    dst->run_host += src->run_host;
    for (uint32_t i = 0; i < dst->v.n_debug && i < src->v.n_debug; i++) {
        layer_acc *a = &dst->layers[i];
        const layer_acc *b = &src->layers[i];
        a->cycles += b->cycles, a->macs += b->macs, a->dram += b->dram;
        a->int4_macs += b->int4_macs, a->flash += b->flash;
        a->sram_read += b->sram_read, a->sram_write += b->sram_write, a->vector += b->vector;
    }
    npu_energy_counts *u = &dst->use;
    const npu_energy_counts *v = &src->use;
    u->macs_int8 += v->macs_int8, u->macs_int4 += v->macs_int4, u->sram_read += v->sram_read;
    u->sram_write += v->sram_write, u->dram += v->dram, u->flash += v->flash, u->vector += v->vector;
    for (uint32_t i = 0; i < dst->v.n_steps && i < src->v.n_steps; i++)
        dst->step_host[i] += src->step_host[i];
    uint64_t peak = npu_model_totals(src->npu)->sram_peak;
    if (src->sram_peak_merged > peak)
        peak = src->sram_peak_merged;
    if (peak > dst->sram_peak_merged)
        dst->sram_peak_merged = peak;
}

void simrun_stats(simrun *r, npu_stats *s)
{
    memset(s, 0, sizeof *s);
    s->target = r->t->name;
    s->target_config = r->t->config_json;
    s->model = r->path;
    uint64_t n = r->inferences ? r->inferences : 1;
    /* per inference: the figures an architect compares */
    double host_per_npu = r->cfg.npu_hz / r->cfg.host_hz;
    s->cycles_npu = r->npu_cycles / n;
    s->cycles_total = (uint64_t)((double)r->run_host / (double)n * host_per_npu + 0.5);
    s->cycles_host = s->cycles_total > s->cycles_npu ? s->cycles_total - s->cycles_npu : 0;
    s->clock_mhz = r->cfg.npu_hz / 1e6;
    s->macs = r->macs / n;
    s->peak_macs_per_cycle = (double)(r->t->p[TGT_P_MAC_ROWS] * r->t->p[TGT_P_MAC_COLS]);
    s->dram_read_bytes = r->dram_read / n;
    s->dram_write_bytes = r->dram_write / n;
    s->arena_bytes = r->v.memory->region_bytes[NPUB_REGION_ARENA];
    s->sram_peak_bytes = npu_model_totals(r->npu)->sram_peak;
    if (r->sram_peak_merged > s->sram_peak_bytes)
        s->sram_peak_bytes = r->sram_peak_merged;
    s->weights_bytes = r->v.memory->region_bytes[NPUB_REGION_CONST];
    s->arena_lower_bound_bytes = r->v.memory->arena_lower_bound;
    /* in step order: an NPU step's layers from the debug section, a host step as itself */
    int nl = 0;
    for (uint32_t i = 0; i < r->v.n_steps; i++) {
        const npub_step *st = &r->v.steps[i];
        if (st->kind == NPUB_STEP_HOST) {
            uint64_t c = (uint64_t)((double)r->step_host[i] / (double)n * host_per_npu + 0.5);
            r->stat_layers[nl++] = (npu_stats_layer){npub_string(&r->v, st->name), r->step_op[i], "host", c, 0, 0, 0,
                                                     host_energy(r, r->step_host[i] / n), 0};
            continue;
        }
        for (uint32_t d = 0; d < r->v.n_debug; d++) {
            const layer_acc *L = &r->layers[d];
            if (r->v.debug[d].step == i)
                r->stat_layers[nl++] = (npu_stats_layer){npub_string(&r->v, r->v.debug[d].name), L->op, "npu",
                                                         L->cycles / n, L->macs / n, L->dram / n,
                                                         layer_bound(r->t, L, n), layer_energy(r, L, n),
                                                         L->flash / n};
        }
    }
    s->n_layers = nl;
    s->layers = r->stat_layers;
    total_energy(r, s, n);
    s->extra = write_steps;
    s->extra_ud = r;
}
