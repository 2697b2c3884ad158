/* npusim --firmware ELF: a customer firmware with the NPU model attached
 * (sim/fwrun.h). */
#include "sim/fwrun.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sim/npu.h"
#include "target/target.h"

typedef struct fwrun {
    const tgt_target *t;
    sim_config cfg;
    npu_model *npu;
    FILE *trace;
    int trace_open;
    uint64_t job_host_start;
} fwrun;

static void on_event(void *ud, const npu_insn_event *e)
{
    fwrun *r = ud;
    double t0 = (double)r->job_host_start / r->cfg.host_hz * 1e6; /* microseconds, as npusim MODEL.npub */
    double ts = t0 + (double)e->start / r->cfg.npu_hz * 1e6, dur = (double)(e->end - e->start) / r->cfg.npu_hz * 1e6;
    fprintf(r->trace,
            "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":\"%s%d\",\"ts\":%.4f,\"dur\":%.4f,"
            "\"args\":{\"word\":%" PRIu32 "}}",
            r->trace_open ? ",\n" : "", r->t->isa->insns[e->insn].name, tgt_unit_name(e->unit),
            tgt_unit_name(e->unit), e->queue, ts, dur, e->word);
    r->trace_open = 1;
}

static npu_status run_job(void *ud, sim_ctx *sim, const sim_npu_job *job, uint64_t *npu_cycles, npu_err *err)
{
    fwrun *r = ud;
    r->job_host_start = job->start_cycle;
    return npu_model_sim_ops()->run(r->npu, sim, job, npu_cycles, err);
}

static const sim_npu_ops run_ops = {run_job};

static npu_status boot(const simfw_options *o, fwrun *r, sim_ctx **s, npu_err *err)
{
    sim_config_default(&r->cfg);
    r->cfg.console = o->console;
    if (o->max_insns)
        r->cfg.max_insns = o->max_insns;
    npu_status st = sim_config_from_target(r->t, &r->cfg, err);
    if (st == NPU_OK)
        st = sim_new(&r->cfg, s, err);
    if (st == NPU_OK)
        st = sim_load_elf_file(*s, o->firmware, err);
    if (st == NPU_OK)
        st = npu_model_new(r->t, npu_alloc_default(), &r->npu, err);
    fw_request req = {.magic = FW_REQ_MAGIC, .version = FW_REQ_VERSION, .command = FW_CMD_SELFCHECK};
    req.arg[0] = o->selfcheck_iters;
    if (st == NPU_OK)
        st = sim_place_request(*s, &req, NULL, err);
    if (st != NPU_OK)
        return st;
    if (o->trace)
        npu_model_set_events(r->npu, on_event, r);
    sim_attach_npu(*s, &run_ops, r);
    return NPU_OK;
}

static void fill_stats(const fwrun *r, const simfw_options *o, simfw_result *res)
{
    const sim_stats *t = &res->run.stats;
    const npu_run_stats *n = npu_model_totals(r->npu);
    npu_stats *s = &res->stats;
    memset(s, 0, sizeof *s);
    snprintf(res->target, sizeof res->target, "%s", r->t->name);
    if (r->t->config_json && strlen(r->t->config_json) < sizeof res->target_config)
        memcpy(res->target_config, r->t->config_json, strlen(r->t->config_json) + 1);
    s->model = o->firmware;
    /* NPU clock cycles, as every figure of npusim */
    s->cycles_total = (uint64_t)((double)t->total_cycles * r->cfg.npu_hz / r->cfg.host_hz + 0.5);
    s->cycles_npu = t->npu_cycles;
    s->cycles_host = s->cycles_total > s->cycles_npu ? s->cycles_total - s->cycles_npu : 0;
    s->clock_mhz = r->cfg.npu_hz / 1e6;
    s->macs = n->macs;
    s->peak_macs_per_cycle = (double)(r->t->p[TGT_P_MAC_ROWS] * r->t->p[TGT_P_MAC_COLS]);
    s->dram_read_bytes = n->dram_read;
    s->dram_write_bytes = n->dram_write;
    s->sram_peak_bytes = n->sram_peak;
}

npu_status simfw_run(const simfw_options *o, simfw_result *res, npu_err *err)
{
    memset(res, 0, sizeof *res);
    tgt_target *t = NULL;
    npu_status st = tgt_load(o->target ? o->target : "edge-v1", &(tgt_opts){.sets = o->sets, .nsets = o->nsets}, &t,
                             err);
    if (st != NPU_OK)
        return st;
    fwrun r = {.t = t, .trace = o->trace};
    sim_ctx *s = NULL;
    st = boot(o, &r, &s, err);
    if (st == NPU_OK && o->trace)
        fputs("{\"traceEvents\":[\n", o->trace);
    if (st == NPU_OK) {
        st = sim_run(s, &res->run, err);
        if (st != NPU_OK) /* a guest fault: name the firmware (boot errors name their file already) */
            npu_err_prefix(err, "%s", o->firmware);
        if (o->trace)
            fputs("\n]}\n", o->trace);
    }
    res->cfg = r.cfg;
    if (r.npu)
        fill_stats(&r, o, res);
    if (r.npu)
        npu_model_free(r.npu);
    sim_free(s);
    tgt_free(t);
    res->stats.target = res->target;
    res->stats.target_config = res->target_config[0] ? res->target_config : NULL;
    return st;
}
