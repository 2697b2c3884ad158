/* npusim --trace for a model run (the contract in sim/npub_trace.h).
 *
 * Where things go: pid 1 "host" (tid 1: the runtime's steps, tid 2: the
 * inferences), pid 2 "NPU" (a tid per unit queue), pid 3 "buses" (a tid per
 * memory and DMA channel, so that one track's events never overlap), pid 4
 * "counters". Host steps are laid back to back from the runtime's per-step
 * cycle counts, anchored so that the first NPU step starts at its job's
 * doorbell: the host timeline has no other clock. */
#include "sim/npub_trace.h"

#include <inttypes.h>
#include <string.h>

#include "common/stats.h"
#include "target/target.h"

enum { PID_HOST = 1, PID_NPU = 2, PID_BUS = 3, PID_CNT = 4 };
enum { TID_STEPS = 1, TID_INFER = 2, MAX_QUEUES = 16, N_BINS = 200 };
enum { MEM_DRAM, MEM_FLASH, MEM_COUNT };

typedef struct tev {
    npu_insn_event e;
    uint64_t job_host_start;
    const char *layer;
} tev;

struct simtrace {
    npu_alloc a;
    FILE *out;
    const tgt_target *t;
    double host_hz, npu_hz;
    tev *ev;
    size_t n, cap;
    int any;            /* an event written: the next one needs a comma */
    uint64_t t0;        /* host cycle where the inference being written starts */
    double off_us;      /* where it starts in the trace: after the inferences before it */
    unsigned used_unit[TGT_UNIT_COUNT]; /* bit set of queues seen, for the thread names */
    unsigned used_bus[MEM_COUNT];
    double bins[MEM_COUNT + 1][N_BINS]; /* counters: bytes per memory, then MACs */
};

simtrace *simtrace_new(npu_alloc a, FILE *out, const tgt_target *t, double host_hz, double npu_hz)
{
    simtrace *tr = npu_malloc(a, sizeof *tr);
    if (!tr)
        return NULL;
    memset(tr, 0, sizeof *tr);
    *tr = (simtrace){.a = a, .out = out, .t = t, .host_hz = host_hz, .npu_hz = npu_hz};
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", out);
    return tr;
}

void simtrace_bind(simtrace *tr, const tgt_target *t, double host_hz, double npu_hz)
{
    tr->t = t;
    tr->host_hz = host_hz;
    tr->npu_hz = npu_hz;
}

int simtrace_event(simtrace *tr, uint64_t job_host_start, const npu_insn_event *e, const char *layer)
{
    if (tr->n == tr->cap) {
        size_t cap = tr->cap ? tr->cap * 2 : 1024;
        tev *ev = npu_malloc(tr->a, sizeof *ev * cap);
        if (!ev)
            return 0;
        if (tr->n)
            memcpy(ev, tr->ev, sizeof *ev * tr->n);
        npu_free(tr->a, tr->ev, sizeof *ev * tr->cap);
        tr->ev = ev;
        tr->cap = cap;
    }
    tr->ev[tr->n++] = (tev){*e, job_host_start, layer};
    return 1;
}

static void sep(simtrace *tr)
{
    fputs(tr->any ? ",\n" : "", tr->out);
    tr->any = 1;
}

static int queue_of(const npu_insn_event *e)
{
    return e->queue >= 0 && e->queue < MAX_QUEUES ? e->queue : MAX_QUEUES - 1;
}

static int npu_tid(const npu_insn_event *e)
{
    return 10 + (int)e->unit * MAX_QUEUES + queue_of(e);
}

static int bus_tid(int mem, int q)
{
    return 10 + mem * MAX_QUEUES + q;
}

/* Microseconds from time 0 of a host cycle plus NPU cycles. */
static double us(const simtrace *tr, uint64_t host, uint64_t npu)
{
    return tr->off_us + ((double)host - (double)tr->t0) / tr->host_hz * 1e6 + (double)npu / tr->npu_hz * 1e6;
}

static void x_event(simtrace *tr, const char *name, const char *cat, int pid, int tid, double ts, double dur)
{
    sep(tr);
    fputs("{\"name\":", tr->out);
    npu_json_string(tr->out, name);
    fprintf(tr->out, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.4f,\"dur\":%.4f,\"args\":{", cat,
            pid, tid, ts, dur);
}

/* The runtime's steps back to back from the anchor; returns the inference's end. */
static double write_steps(simtrace *tr, uint64_t n, uint64_t run_start, const simtrace_step *s, uint32_t ns)
{
    uint64_t at = run_start;
    for (uint32_t i = 0; i < ns; i++) {
        x_event(tr, s[i].name, s[i].npu ? "npu_step" : "host_step", PID_HOST, TID_STEPS, us(tr, at, 0),
                (double)s[i].host_cycles / tr->host_hz * 1e6);
        fprintf(tr->out, "\"step\":%" PRIu32 ",\"kind\":\"%s\",\"op\":", i, s[i].npu ? "npu" : "host");
        npu_json_string(tr->out, s[i].op ? s[i].op : "");
        fprintf(tr->out, ",\"host_cycles\":%" PRIu64 ",\"inference\":%" PRIu64 "}}", s[i].host_cycles, n);
        at += s[i].host_cycles;
    }
    char name[48];
    snprintf(name, sizeof name, "inference %" PRIu64, n);
    x_event(tr, name, "inference", PID_HOST, TID_INFER, us(tr, run_start, 0),
            (double)(at - run_start) / tr->host_hz * 1e6);
    fprintf(tr->out, "\"inference\":%" PRIu64 "}}", n);
    return us(tr, at, 0);
}

static void write_npu(simtrace *tr, const tev *v)
{
    const npu_insn_event *e = &v->e;
    double ts = us(tr, v->job_host_start, e->start), dur = (double)(e->end - e->start) / tr->npu_hz * 1e6;
    x_event(tr, tr->t->isa->insns[e->insn].name, tgt_unit_name(e->unit), PID_NPU, npu_tid(e), ts, dur);
    fprintf(tr->out, "\"word\":%" PRIu32 ",\"layer\":", e->word);
    npu_json_string(tr->out, v->layer ? v->layer : "");
    fprintf(tr->out, ",\"macs\":%" PRIu64 "}}", e->macs);
    tr->used_unit[e->unit] |= 1u << queue_of(e);
    uint64_t bytes[MEM_COUNT] = {e->dram_read + e->dram_write, e->flash_read};
    for (int m = 0; m < MEM_COUNT; m++) {
        if (!bytes[m])
            continue;
        char name[64];
        snprintf(name, sizeof name, "%s %" PRIu64 " B", e->dram_write && m == MEM_DRAM ? "write" : "read", bytes[m]);
        x_event(tr, name, m == MEM_DRAM ? "dram" : "flash", PID_BUS, bus_tid(m, queue_of(e)), ts, dur);
        fprintf(tr->out, "\"bytes\":%" PRIu64 ",\"read_bytes\":%" PRIu64 ",\"write_bytes\":%" PRIu64 ",\"layer\":",
                bytes[m], m == MEM_DRAM ? e->dram_read : e->flash_read, m == MEM_DRAM ? e->dram_write : 0);
        npu_json_string(tr->out, v->layer ? v->layer : "");
        fputs("}}", tr->out);
        tr->used_bus[m] |= 1u << queue_of(e);
    }
}

/* Spreads an event's quantity over the bins its span covers, in proportion. */
static void spread(double *bin, double t0, double width, double ts, double dur, double q)
{
    if (dur <= 0) {
        int b = (int)((ts - t0) / width);
        bin[b < 0 ? 0 : b >= N_BINS ? N_BINS - 1 : b] += q;
        return;
    }
    for (int b = (int)((ts - t0) / width); b < N_BINS && b * width + t0 < ts + dur; b++) {
        if (b < 0)
            continue;
        double lo = t0 + b * width, hi = lo + width;
        double o = (hi < ts + dur ? hi : ts + dur) - (lo > ts ? lo : ts);
        if (o > 0)
            bin[b] += q * o / dur;
    }
}

static void counter(simtrace *tr, const char *name, double ts, const char *key, double v)
{
    sep(tr);
    fprintf(tr->out, "{\"name\":\"%s\",\"ph\":\"C\",\"pid\":%d,\"tid\":0,\"ts\":%.4f,\"args\":{\"%s\":%.6g}}", name,
            PID_CNT, ts, key, v);
}

/* Bandwidth per memory and MAC utilization over N_BINS bins of the inference. */
static void write_counters(simtrace *tr, double start, double end)
{
    double (*bins)[N_BINS] = tr->bins;
    double width = (end - start) / N_BINS;
    if (width <= 0 || !tr->n)
        return;
    memset(tr->bins, 0, sizeof tr->bins);
    for (size_t i = 0; i < tr->n; i++) {
        const npu_insn_event *e = &tr->ev[i].e;
        double ts = us(tr, tr->ev[i].job_host_start, e->start), dur = (double)(e->end - e->start) / tr->npu_hz * 1e6;
        spread(bins[MEM_DRAM], start, width, ts, dur, (double)(e->dram_read + e->dram_write));
        spread(bins[MEM_FLASH], start, width, ts, dur, (double)e->flash_read);
        spread(bins[MEM_COUNT], start, width, ts, dur, (double)e->macs);
    }
    double peak = (double)(tr->t->p[TGT_P_MAC_ROWS] * tr->t->p[TGT_P_MAC_COLS]);
    double cycles = width * 1e-6 * tr->npu_hz;
    for (int b = 0; b <= N_BINS; b++) { /* the last sample returns every counter to 0 */
        double ts = start + b * width;
        int in = b < N_BINS;
        counter(tr, "DRAM bandwidth", ts, "GB/s", in ? bins[MEM_DRAM][b] / (width * 1e-6) / 1e9 : 0);
        counter(tr, "flash bandwidth", ts, "GB/s", in ? bins[MEM_FLASH][b] / (width * 1e-6) / 1e9 : 0);
        counter(tr, "MAC utilization", ts, "%", in && peak > 0 ? 100.0 * bins[MEM_COUNT][b] / (peak * cycles) : 0);
    }
}

void simtrace_inference(simtrace *tr, uint64_t n, const simtrace_step *steps, uint32_t n_steps)
{
    /* the anchor: the first NPU step starts at the first job's doorbell */
    uint64_t before = 0, run_start = 0;
    uint32_t s0 = 0;
    while (s0 < n_steps && !steps[s0].npu)
        before += steps[s0++].host_cycles;
    if (tr->n && s0 < n_steps)
        run_start = tr->ev[0].job_host_start > before ? tr->ev[0].job_host_start - before : 0;
    tr->t0 = run_start; /* each inference's host clock starts afresh: it is placed after the one before */
    double end = write_steps(tr, n, run_start, steps, n_steps);
    for (size_t i = 0; i < tr->n; i++)
        write_npu(tr, &tr->ev[i]);
    for (size_t i = 0; i < tr->n; i++) { /* an NPU job may outlast its step's host count by the launch */
        double e = us(tr, tr->ev[i].job_host_start, tr->ev[i].e.end);
        if (e > end)
            end = e;
    }
    write_counters(tr, us(tr, run_start, 0), end);
    tr->n = 0;
    tr->off_us = end;
}

static void meta(simtrace *tr, const char *what, int pid, int tid, const char *name)
{
    sep(tr);
    fprintf(tr->out, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"ts\":0,\"args\":{\"name\":", what, pid,
            tid);
    npu_json_string(tr->out, name);
    fputs("}}", tr->out);
}

void simtrace_finish(simtrace *tr)
{
    if (!tr)
        return;
    meta(tr, "process_name", PID_HOST, 0, "host (runtime steps)");
    meta(tr, "process_name", PID_NPU, 0, "NPU units");
    meta(tr, "process_name", PID_BUS, 0, "memory buses (bytes per transfer)");
    meta(tr, "process_name", PID_CNT, 0, "counters");
    meta(tr, "thread_name", PID_HOST, TID_STEPS, "host steps");
    meta(tr, "thread_name", PID_HOST, TID_INFER, "inferences");
    meta(tr, "thread_name", PID_CNT, 0, "counters");
    char name[64];
    for (int u = 0; u < TGT_UNIT_COUNT; u++)
        for (int q = 0; q < MAX_QUEUES; q++)
            if (tr->used_unit[u] & 1u << q) {
                snprintf(name, sizeof name, "%s%d", tgt_unit_name((tgt_unit)u), q);
                npu_insn_event e = {.unit = (tgt_unit)u, .queue = q};
                meta(tr, "thread_name", PID_NPU, npu_tid(&e), name);
            }
    for (int m = 0; m < MEM_COUNT; m++)
        for (int q = 0; q < MAX_QUEUES; q++)
            if (tr->used_bus[m] & 1u << q) {
                snprintf(name, sizeof name, "%s bus (dma%d)", m == MEM_DRAM ? "DRAM" : "flash", q);
                meta(tr, "thread_name", PID_BUS, bus_tid(m, q), name);
            }
    fputs("\n]}\n", tr->out);
    simtrace_free(tr);
}

void simtrace_free(simtrace *tr)
{
    if (!tr)
        return;
    npu_free(tr->a, tr->ev, sizeof *tr->ev * tr->cap);
    npu_free(tr->a, tr, sizeof *tr);
}
