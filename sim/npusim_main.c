/* npusim: runs the simulated SoC.
 *   npusim [--target NAME|FILE.yaml] [--firmware ELF] [--max-insns N] [--iters N] [--stats]
 *          [--stats-json FILE] [--trace FILE.json]
 *       runs a firmware (the built-in one's self-check, or one's own) on the
 *       target's SoC (edge-v1 without --target) with the NPU model attached
 *   npusim MODEL.npub --input X.npy [--input ...] [--output Y.npy ...] [--stats]
 *          [--stats-json FILE] [--trace FILE.json] [-j N]
 *       runs a compiled model: the firmware (libnpurt) on the emulated host
 *       drives the NPU model; outputs, a summary (--stats), --stats-json and
 *       a Chrome trace of the first inference (--trace). A binary built for
 *       another version of its target is refused unless --any-target.
 * The firmware defaults to fw/npurt.elf next to this executable, else
 * ../share/npucc/fw/npurt.elf from it (an installed prefix). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/npy.h"
#include "common/stats.h"
#include "sim/fwrun.h"
#include "sim/npub_run.h"
#include "sim/sim.h"
#include "target/target.h"
#include "man/npusim_help.h" /* build/gen: docs/cli.md, "## npusim" */

enum { MAX_INPUTS = 16, MAX_SETS = 64 };

typedef struct opts {
    const char *firmware, *target;
    const char *model;
    const char *inputs[MAX_INPUTS];
    int ninputs;
    const char *outputs[MAX_INPUTS]; /* graph outputs in order; the rest are not written */
    int noutputs;
    const char *stats_json, *trace;
    int trace_all;          /* --trace-all */
    uint64_t trace_inference; /* --trace-inference N */
    uint64_t max_insns;
    int have_max_insns;
    uint32_t iters;
    int stats;
    int any_target;
    const char *verify_key; /* --verify-key FILE */
    int strict;             /* --strict: NaN/Inf in a float input is an error, not a warning */
    npu_read_opts files;    /* --allow-special-files */
    int threads;            /* -j N; 0: simrun_default_threads */
    int nsets;              /* --set PATH=VALUE target overrides */
    const char *sets[MAX_SETS];
} opts;

static void usage(FILE *f)
{
    fprintf(f, "usage: npusim [--target NAME|FILE.yaml] [--firmware ELF] [--max-insns N] [--iters N] [--stats]\n"
               "              [--stats-json FILE] [--trace FILE.json]\n"
               "       npusim MODEL.npub --input X.npy [--input ...] [--output Y.npy ...] [--stats]\n"
               "              [--stats-json FILE] [--trace FILE.json] [--firmware ELF] [--max-insns N]\n"
               "              [--target NAME|FILE.yaml] [--set PATH=VALUE] [--any-target] [--verify-key FILE]\n");
}

static int parse_u64(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-')
        return 0;
    *v = x;
    return 1;
}

/* Accepts "--opt value" and "--opt=value"; returns the value or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != '\0' || *i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

static int parse_args(int argc, char **argv, opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        uint64_t u;
        if (!strcmp(a, "--stats")) {
            o->stats = 1;
        } else if (!strcmp(a, "--any-target")) {
            o->any_target = 1;
        } else if (!strcmp(a, "--trace-all")) {
            o->trace_all = 1;
        } else if ((v = opt_value(argc, argv, &i, "--trace-inference"))) {
            if (!parse_u64(v, &o->trace_inference))
                return fprintf(stderr, "npusim: --trace-inference: '%s' is not an inference index\n", v), 0;
        } else if (!strcmp(a, "--strict")) {
            o->strict = 1;
        } else if (!strcmp(a, "--allow-special-files")) {
            o->files.allow_special = true;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(npusim_help, stdout);
            exit(0);
        } else if ((v = opt_value(argc, argv, &i, "--firmware"))) {
            o->firmware = v;
        } else if ((v = opt_value(argc, argv, &i, "--target"))) {
            o->target = v;
        } else if ((v = opt_value(argc, argv, &i, "--set"))) {
            if (o->nsets == MAX_SETS)
                return fprintf(stderr, "npusim: more than %d --set overrides\n", MAX_SETS), 0;
            o->sets[o->nsets++] = v;
        } else if ((v = opt_value(argc, argv, &i, "--verify-key"))) {
            o->verify_key = v;
        } else if ((v = opt_value(argc, argv, &i, "--max-insns"))) {
            if (!parse_u64(v, &o->max_insns))
                return fprintf(stderr, "npusim: --max-insns: '%s' is not a count\n", v), 0;
            o->have_max_insns = 1;
        } else if ((v = opt_value(argc, argv, &i, "--iters"))) {
            if (!parse_u64(v, &u) || u == 0 || u > UINT32_MAX)
                return fprintf(stderr, "npusim: --iters: '%s' is not a count in 1..2^32-1\n", v), 0;
            o->iters = (uint32_t)u;
        } else if ((v = opt_value(argc, argv, &i, "-j"))) {
            if (!parse_u64(v, &u) || u == 0 || u > 64)
                return fprintf(stderr, "npusim: -j: '%s' is not a thread count in 1..64\n", v), 0;
            o->threads = (int)u;
        } else if ((v = opt_value(argc, argv, &i, "--input"))) {
            if (o->ninputs == MAX_INPUTS)
                return fprintf(stderr, "npusim: more than %d --input files\n", MAX_INPUTS), 0;
            o->inputs[o->ninputs++] = v;
        } else if ((v = opt_value(argc, argv, &i, "--output"))) {
            if (o->noutputs == MAX_INPUTS)
                return fprintf(stderr, "npusim: more than %d --output files\n", MAX_INPUTS), 0;
            o->outputs[o->noutputs++] = v;
        } else if ((v = opt_value(argc, argv, &i, "--stats-json"))) {
            o->stats_json = v;
        } else if ((v = opt_value(argc, argv, &i, "--trace"))) {
            o->trace = v;
        } else if (a[0] == '-') {
            return fprintf(stderr, "npusim: unknown or incomplete option '%s'\n", a), 0;
        } else if (!o->model) {
            o->model = a;
        } else {
            return fprintf(stderr, "npusim: more than one model: '%s' and '%s'\n", o->model, a), 0;
        }
    }
    if (!o->model && (o->ninputs || o->noutputs))
        return fprintf(stderr, "npusim: --input/--output need a MODEL.npub\n"), 0;
    return 1;
}

/* fw/npurt.elf next to the executable (in the build tree: build/npusim ->
 * build/fw/npurt.elf), else the install's <exe>/../share/npucc/fw/npurt.elf. */
static const char *default_firmware(const char *argv0, char *buf, size_t cap)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0)
        exe[n] = '\0';
    else
        snprintf(exe, sizeof exe, "%s", argv0);
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    const char *dir = slash ? exe : ".";
    if (snprintf(buf, cap, "%s/fw/npurt.elf", dir) >= (int)cap)
        snprintf(buf, cap, "fw/npurt.elf"); /* absurdly deep path: fall back to the cwd */
    char share[4096 + 32];
    if (access(buf, R_OK) != 0 && snprintf(share, sizeof share, "%s/../share/npucc/fw/npurt.elf", dir) < (int)cap &&
        access(share, R_OK) == 0)
        memcpy(buf, share, strlen(share) + 1);
    return buf; /* neither readable: the error names the build-tree place */
}

static void print_stats(const sim_config *cfg, const sim_result *r)
{
    const sim_stats *t = &r->stats;
    printf("host:   %" PRIu64 " instructions, %" PRIu64 " cycles at CPI %.2f, %" PRIu64 " stall cycles\n", t->insns,
           t->host_cycles, cfg->host_cpi, t->stall_cycles);
    printf("npu:    %" PRIu64 " jobs, %" PRIu64 " cycles at %.0f MHz\n", t->npu_jobs, t->npu_cycles, cfg->npu_hz / 1e6);
    printf("total:  %" PRIu64 " cycles, %.3f ms at %.0f MHz\n", t->total_cycles, t->time_s * 1e3, cfg->host_hz / 1e6);
    printf("blocks: %" PRIu64 " executed, %" PRIu64 " distinct\n", t->blocks, t->block_kinds);
}

static int exit_code(npu_status st)
{
    return st == NPU_OK ? 0 : (int)st;
}

/* Without a model: the firmware on the target's SoC with the NPU model
 * attached (sim/fwrun.h). The built-in firmware runs its self-check; a
 * firmware of one's own runs to its EXIT write, and its exit code decides. */
static int run_firmware(const opts *o, const char *fw)
{
    npu_err err;
    npu_err_clear(&err);
    char tmp[4200] = "";
    FILE *trace = NULL;
    if (o->trace) {
        snprintf(tmp, sizeof tmp, "%s.tmp", o->trace);
        if (!(trace = fopen(tmp, "w")))
            return fprintf(stderr, "npusim: %s: cannot write: %s\n", o->trace, strerror(errno)), 1;
    }
    simfw_options so = {.firmware = fw, .target = o->target, .sets = o->sets, .nsets = o->nsets, .max_insns = o->have_max_insns ? o->max_insns : 0,
                        .console = stdout, .trace = trace, .selfcheck_iters = o->iters};
    static simfw_result r; /* large: not on the stack */
    npu_status st = simfw_run(&so, &r, &err);
    if (st == NPU_OK && o->stats)
        print_stats(&r.cfg, &r.run);
    if (st == NPU_OK && o->stats_json)
        st = npu_stats_save_json(&r.stats, o->stats_json, &err);
    if (trace) {
        bool bad = fclose(trace) != 0;
        if (st == NPU_OK && (bad || rename(tmp, o->trace) != 0))
            st = npu_fail(&err, NPU_EUSER, "%s: cannot write the trace", o->trace);
        if (st != NPU_OK)
            remove(tmp);
    }
    if (st != NPU_OK) {
        fprintf(stderr, "npusim: %s\n", err.msg);
        return exit_code(st);
    }
    if (r.run.exit_code != 0) {
        if (o->firmware)
            fprintf(stderr, "npusim: %s: the firmware exited with code %d\n", fw, (int)r.run.exit_code);
        else
            fprintf(stderr, "npusim: %s: firmware self-check failed (exit code %d)\n", fw, (int)r.run.exit_code);
        return 1;
    }
    return 0;
}

static bool npy_of_dtype(uint32_t dt, npy_dtype *out)
{
    switch (dt) {
    case NPUB_DT_F32: *out = NPY_F32; return true;
    case NPUB_DT_I8: *out = NPY_I8; return true;
    case NPUB_DT_U8: *out = NPY_U8; return true;
    case NPUB_DT_I32: *out = NPY_I32; return true;
    case NPUB_DT_I64: *out = NPY_I64; return true;
    case NPUB_DT_I16: *out = NPY_I16; return true;
    case NPUB_DT_F16: *out = NPY_F16; return true;
    case NPUB_DT_BOOL: *out = NPY_BOOL; return true;
    default: return false;
    }
}

/* The binary's inputs and outputs for --stats-json "io" (its IO types, or
 * its tensors' in a file without them). */
static int stats_io(const npub_view *v, npu_stats_io *io, int cap)
{
    int n = 0;
    for (uint32_t i = 0; i < v->io->n_inputs + v->io->n_outputs && n < cap; i++, n++) {
        const npub_tensor *t = &v->tensors[v->inputs[i]];
        const npub_io_type *r = v->io_types ? &v->io_types[i] : NULL;
        bool q = r ? r->has_quant : t->has_quant && (t->dtype == NPUB_DT_I8 || t->dtype == NPUB_DT_U8);
        io[n] = (npu_stats_io){.name = npub_string(v, t->name), .kind = i < v->io->n_inputs ? "input" : "output",
                               .dtype = npu_stats_dtype_name(t->dtype), .rank = t->rank};
        for (int d = 0; d < t->rank; d++)
            io[n].dims[d] = t->dims[d];
        io[n].quantized = q;
        io[n].scale = q ? (r ? r->scale : t->scale) : 0;
        io[n].zero_point = q ? (r ? r->zero_point : t->zero_point) : 0;
    }
    return n;
}

/* Checks an input file against the binary's input tensor; *runs = the
 * number of inferences it holds (its first dimension / the model's batch). */
static npu_status check_input(const char *file, const npub_tensor *t, npy_array *a, int64_t *runs, npu_err *err)
{
    npy_dtype want;
    if (!npy_of_dtype(t->dtype, &want))
        return npu_fail(err, NPU_EUSER, "%s: the model input has a dtype npusim cannot feed", file);
    if (a->dtype == NPY_F64 && want == NPY_F32) {
        for (int64_t i = 0, n = npy_numel(a); i < n; i++)
            ((float *)a->data)[i] = (float)((double *)a->data)[i];
        a->dtype = NPY_F32;
    }
    if (a->dtype != want)
        return npu_fail(err, NPU_EUSER, "%s: holds '%s', the model input is '%s'", file, npy_dtype_descr(a->dtype),
                        npy_dtype_descr(want));
    if (t->rank == 0 && a->rank == 0) { /* a scalar input: one inference */
        *runs = 1;
        return NPU_OK;
    }
    bool ok = a->rank == t->rank && t->rank > 0;
    for (int d = 1; ok && d < t->rank; d++)
        ok = a->dims[d] == t->dims[d];
    if (ok && t->dims[0] == 0 && a->dims[0] == 0) { /* an empty input: one inference */
        *runs = 1;
        return NPU_OK;
    }
    if (!ok || a->dims[0] == 0 || t->dims[0] == 0 || a->dims[0] % t->dims[0] != 0) {
        char want_s[128] = "", got_s[128] = "";
        for (int d = 0; d < t->rank; d++)
            snprintf(want_s + strlen(want_s), sizeof want_s - strlen(want_s), "%s%d", d ? "x" : "", (int)t->dims[d]);
        for (int d = 0; d < a->rank; d++)
            snprintf(got_s + strlen(got_s), sizeof got_s - strlen(got_s), "%s%lld", d ? "x" : "",
                     (long long)a->dims[d]);
        return npu_fail(err, NPU_EUSER, "%s: shape %s does not fit the model input %s (the first dimension may be "
                        "a multiple of %d)", file, got_s, want_s, (int)t->dims[0]);
    }
    *runs = a->dims[0] / t->dims[0];
    return NPU_OK;
}

static void print_model_stats(const npu_stats *s, uint64_t n)
{
    printf("inferences: %" PRIu64 "\n", n);
    printf("cycles:     %" PRIu64 " per inference (NPU %" PRIu64 ", host %" PRIu64 ") = %.3f ms at %.0f MHz\n",
           s->cycles_total, s->cycles_npu, s->cycles_host, npu_stats_time_ms(s), s->clock_mhz);
    printf("MACs:       %" PRIu64 ", utilization %.1f%% of %.0f MACs/cycle over NPU time\n", s->macs,
           100.0 * npu_stats_mac_utilization(s), s->peak_macs_per_cycle);
    printf("DRAM:       %" PRIu64 " B read, %" PRIu64 " B written per inference\n", s->dram_read_bytes,
           s->dram_write_bytes);
    printf("flash:      %" PRIu64 " B read per inference; %" PRIu64 " NPU cycles at load\n", s->flash_read_bytes,
           s->load_cycles);
    printf("memory:     arena %" PRIu64 " B (lower bound %" PRIu64 " B), weights %" PRIu64 " B, SRAM peak %" PRIu64
           " B\n", s->arena_bytes, s->arena_lower_bound_bytes, s->weights_bytes, s->sram_peak_bytes);
    const npu_energy *e = &s->energy;
    printf("energy:     %.1f nJ per inference (MAC %.1f, SRAM %.1f, DRAM %.1f, flash %.1f, vector %.1f, host %.1f, "
           "static %.1f)\n", e->total, e->mac, e->sram, e->dram, e->flash, e->vector, e->host, e->leak);
    printf("area:       %.3f mm^2 (MAC %.3f, SRAM %.3f, vector %.3f, DMA %.3f, control %.3f, host %.3f)\n",
           s->area.total, s->area.mac, s->area.sram, s->area.vector, s->area.dma, s->area.ctrl, s->area.host);
    uint64_t bound = 0;
    for (int i = 0; i < s->n_layers; i++)
        bound += s->layers[i].bound_cycles;
    printf("bound:      %" PRIu64 " NPU cycles at peak MAC or DRAM rate, per layer summed (NPU time %.2fx)\n", bound,
           bound ? (double)s->cycles_npu / (double)bound : 0.0);
    printf("%-40s %-16s %12s %12s %12s %12s %12s\n", "layer", "op", "cycles", "bound", "MACs", "DRAM B", "energy nJ");
    for (int i = 0; i < s->n_layers; i++) {
        const npu_stats_layer *L = &s->layers[i];
        printf("%-40.40s %-16.16s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12.1f\n", L->name, L->op,
               L->cycles, L->bound_cycles, L->macs, L->dram_bytes, L->energy_nj);
    }
}

typedef struct model_run {
    simrun *r;
    npy_array in[MAX_INPUTS];
    void *out[MAX_INPUTS];
    size_t out_bytes[MAX_INPUTS];
    FILE *trace;
    char trace_tmp[4200];
    npu_alloc alloc; /* the tools' allocator (NPUCC_FAIL_ALLOC) */
} model_run;

typedef struct batch_io {
    const opts *o;
    const npub_view *v;
    model_run *m;
    const int64_t *k;
} batch_io;

/* Inference n's slices of the stacked inputs and outputs. */
static void infer_io(void *ud, int64_t n, const void **ins, void **outs)
{
    const batch_io *b = ud;
    for (int i = 0; i < b->o->ninputs; i++)
        ins[i] = (const uint8_t *)b->m->in[i].data + (b->k[i] > 1 ? (size_t)n * b->v->tensors[b->v->inputs[i]].size : 0);
    for (uint32_t j = 0; j < b->v->io->n_outputs; j++)
        outs[j] = (uint8_t *)b->m->out[j] + (size_t)n * b->v->tensors[b->v->outputs[j]].size;
}

static npu_status run_model_inner(const opts *o, const char *fw, model_run *m, npu_err *err)
{
    npu_alloc a = m->alloc;
    if (o->trace) {
        snprintf(m->trace_tmp, sizeof m->trace_tmp, "%s.tmp", o->trace);
        if (!(m->trace = fopen(m->trace_tmp, "w")))
            return npu_fail(err, NPU_EUSER, "%s: cannot write: %s", o->trace, strerror(errno));
    }
    simrun_options so = {.firmware = fw, .target = o->target, .any_target = o->any_target, .verify_key = o->verify_key,
                         .sets = o->sets, .nsets = o->nsets, .trace_all = o->trace_all,
                         .trace_inference = o->trace_inference,
                         .files = o->files, .alloc = a,
                         .max_insns = o->have_max_insns ? o->max_insns : 0, .console = stdout, .trace = m->trace};
    npu_status st = simrun_open(o->model, &so, &m->r, err);
    if (st != NPU_OK)
        return st;
    const npub_view *v = simrun_view(m->r);
    if ((uint32_t)o->ninputs != v->io->n_inputs)
        return npu_fail(err, NPU_EUSAGE, "npusim: %s has %u input%s, %d --input given", o->model, v->io->n_inputs,
                        v->io->n_inputs == 1 ? "" : "s", o->ninputs);
    if (v->io->n_outputs > MAX_INPUTS)
        return npu_fail(err, NPU_EUSER, "%s: more than %d outputs", o->model, MAX_INPUTS);
    int64_t runs = 1, k[MAX_INPUTS];
    for (int i = 0; i < o->ninputs; i++) {
        char msg[512];
        if ((st = npy_read_ex(o->inputs[i], &o->files, a, &m->in[i], err)))
            return st;
        if (npy_nonfinite_message(&m->in[i], o->inputs[i], msg, sizeof msg)) {
            if (o->strict)
                return npu_fail(err, NPU_EUSER, "%s (--strict)", msg);
            fprintf(stderr, "npusim: warning: %s\n", msg);
        }
        if ((st = check_input(o->inputs[i], &v->tensors[v->inputs[i]], &m->in[i], &k[i], err)))
            return st;
        if (k[i] > 1 && runs > 1 && k[i] != runs)
            return npu_fail(err, NPU_EUSER, "%s: holds %lld inferences, another input %lld", o->inputs[i],
                            (long long)k[i], (long long)runs);
        if (k[i] > runs)
            runs = k[i];
    }
    for (uint32_t j = 0; j < v->io->n_outputs; j++) {
        m->out_bytes[j] = (size_t)v->tensors[v->outputs[j]].size * (size_t)runs;
        if (!(m->out[j] = npu_malloc(a, m->out_bytes[j] ? m->out_bytes[j] : 1)))
            return npu_fail(err, NPU_EINTERNAL, "out of memory");
    }
    batch_io bio = {o, v, m, k};
    /* the trace is context 0's: a trace past the first inference needs every inference there */
    int threads = o->trace && (o->trace_all || o->trace_inference) ? 1 : o->threads ? o->threads
                                                                               : simrun_default_threads();
    if (o->trace && o->trace_inference >= (uint64_t)runs)
        return npu_fail(err, NPU_EUSAGE, "npusim: --trace-inference %" PRIu64 ": the input holds %lld inferences",
                        o->trace_inference, (long long)runs);
    st = simrun_batch(m->r, o->model, &so, threads, runs, infer_io, &bio, err);
    if (st != NPU_OK)
        return st;
    npu_stats s;
    simrun_stats(m->r, &s);
    npu_stats_io io[2 * MAX_INPUTS];
    s.n_io = stats_io(v, io, 2 * MAX_INPUTS);
    s.io = io;
    if ((uint32_t)o->noutputs > v->io->n_outputs)
        return npu_fail(err, NPU_EUSER, "%s: %d --output files for %u outputs", o->model, o->noutputs,
                        (unsigned)v->io->n_outputs);
    for (int j = 0; j < o->noutputs; j++) {
        const npub_tensor *t = &v->tensors[v->outputs[j]];
        int64_t dims[NPUB_MAX_RANK] = {0};
        for (int d = 0; d < t->rank; d++)
            dims[d] = t->dims[d];
        dims[0] *= runs;
        npy_dtype dt = NPY_F32;
        if (!npy_of_dtype(t->dtype, &dt))
            return npu_fail(err, NPU_EUSER, "%s: output dtype cannot be written as .npy", o->model);
        if ((st = npy_write(o->outputs[j], dt, t->rank, dims, m->out[j], err)) != NPU_OK)
            return st;
    }
    if (o->stats)
        print_model_stats(&s, simrun_inferences(m->r));
    if (o->stats_json && (st = npu_stats_save_json(&s, o->stats_json, err)) != NPU_OK)
        return st;
    if (m->trace) {
        simrun_trace_end(m->r);
        bool bad = fclose(m->trace) != 0;
        m->trace = NULL;
        if (bad || rename(m->trace_tmp, o->trace) != 0)
            return npu_fail(err, NPU_EUSER, "%s: cannot write the trace", o->trace);
    }
    return NPU_OK;
}

static int run_model(const opts *o, const char *fw)
{
    npu_err err;
    npu_err_clear(&err);
    /* a model without inputs (all constants) runs without --input; a count that differs is an error below */
    static model_run m; /* large: not on the stack */
    npu_alloc_counter count;
    bool counting = npu_alloc_from_env(&m.alloc, &count);
    npu_status st = run_model_inner(o, fw, &m, &err);
    npu_alloc a = m.alloc;
    for (int i = 0; i < MAX_INPUTS; i++) {
        npy_free(a, &m.in[i]);
        if (m.out[i])
            npu_free(a, m.out[i], m.out_bytes[i] ? m.out_bytes[i] : 1);
    }
    if (m.trace) { /* failed: never leave a partial trace */
        fclose(m.trace);
        remove(m.trace_tmp);
    }
    simrun_free(m.r);
    if (st != NPU_OK)
        fprintf(stderr, "%s\n", err.msg);
    npu_alloc_report("npusim", &count, counting);
    return exit_code(st);
}

int main(int argc, char **argv)
{
    opts o = {0};
    if (!parse_args(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    char buf[4096];
    const char *fw = o.firmware ? o.firmware : default_firmware(argv[0], buf, sizeof buf);
    return o.model ? run_model(&o, fw) : run_firmware(&o, fw);
}
