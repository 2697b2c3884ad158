/* npusim: runs the simulated SoC.
 *   npusim [--target NAME|FILE.yaml] [--firmware ELF] [--max-insns N] [--iters N] [--stats]
 *       runs the firmware self-check (today's only mode) on the target's
 *       memory map and clocks (built-in edge-v1 numbers without --target)
 *   npusim MODEL.npub --input X.npy [--input ...] [--output Y.npy] [--stats]
 *          [--stats-json FILE] [--trace FILE.json]
 *       the model path: the options are parsed now, running arrives with the
 *       NPU model and the .npub reader (run_model below is the place).
 * The firmware defaults to fw/npurt.elf next to this executable. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim.h"
#include "target/target.h"

enum { MAX_INPUTS = 16 };

typedef struct opts {
    const char *firmware, *target;
    const char *model;
    const char *inputs[MAX_INPUTS];
    int ninputs;
    const char *output, *stats_json, *trace;
    uint64_t max_insns;
    int have_max_insns;
    uint32_t iters;
    int stats;
} opts;

static void usage(FILE *f)
{
    fprintf(f, "usage: npusim [--target NAME|FILE.yaml] [--firmware ELF] [--max-insns N] [--iters N] [--stats]\n"
               "       npusim MODEL.npub --input X.npy [--input ...] [--output Y.npy] [--stats]\n"
               "              [--stats-json FILE] [--trace FILE.json] [--firmware ELF] [--max-insns N]\n");
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
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if ((v = opt_value(argc, argv, &i, "--firmware"))) {
            o->firmware = v;
        } else if ((v = opt_value(argc, argv, &i, "--target"))) {
            o->target = v;
        } else if ((v = opt_value(argc, argv, &i, "--max-insns"))) {
            if (!parse_u64(v, &o->max_insns))
                return fprintf(stderr, "npusim: --max-insns: '%s' is not a count\n", v), 0;
            o->have_max_insns = 1;
        } else if ((v = opt_value(argc, argv, &i, "--iters"))) {
            if (!parse_u64(v, &u) || u == 0 || u > UINT32_MAX)
                return fprintf(stderr, "npusim: --iters: '%s' is not a count in 1..2^32-1\n", v), 0;
            o->iters = (uint32_t)u;
        } else if ((v = opt_value(argc, argv, &i, "--input"))) {
            if (o->ninputs == MAX_INPUTS)
                return fprintf(stderr, "npusim: more than %d --input files\n", MAX_INPUTS), 0;
            o->inputs[o->ninputs++] = v;
        } else if ((v = opt_value(argc, argv, &i, "--output"))) {
            o->output = v;
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
    if (!o->model && (o->ninputs || o->output || o->stats_json || o->trace))
        return fprintf(stderr, "npusim: --input/--output/--stats-json/--trace need a MODEL.npub\n"), 0;
    return 1;
}

/* fw/npurt.elf next to the executable (build/npusim -> build/fw/npurt.elf). */
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
    if (snprintf(buf, cap, "%s/fw/npurt.elf", slash ? exe : ".") >= (int)cap)
        snprintf(buf, cap, "fw/npurt.elf"); /* absurdly deep path: fall back to the cwd */
    return buf;
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

/* Sets up a context with the firmware loaded and the console on stdout. */
static npu_status open_sim(const opts *o, const char *fw, sim_ctx **s, sim_config *cfg, npu_err *err)
{
    sim_config_default(cfg);
    cfg->console = stdout;
    if (o->have_max_insns)
        cfg->max_insns = o->max_insns;
    *s = NULL;
    if (o->target) {
        tgt_target *t;
        npu_status st = tgt_load(o->target, NULL, &t, err);
        if (st != NPU_OK)
            return st;
        st = sim_config_from_target(t, cfg, err);
        tgt_free(t);
        if (st != NPU_OK)
            return st;
    }
    npu_status st = sim_new(cfg, s, err);
    if (st == NPU_OK && (st = sim_load_elf_file(*s, fw, err)) != NPU_OK) {
        sim_free(*s);
        *s = NULL;
    }
    return st;
}

static int run_selfcheck(const opts *o, const char *fw)
{
    npu_err err;
    npu_err_clear(&err);
    sim_config cfg;
    sim_ctx *s;
    npu_status st = open_sim(o, fw, &s, &cfg, &err);
    if (st != NPU_OK) {
        fprintf(stderr, "npusim: %s\n", err.msg);
        return exit_code(st);
    }
    fw_request req = {.magic = FW_REQ_MAGIC, .version = FW_REQ_VERSION, .command = FW_CMD_SELFCHECK};
    req.arg[0] = o->iters;
    sim_result r;
    if ((st = sim_place_request(s, &req, NULL, &err)) == NPU_OK)
        st = sim_run(s, &r, &err);
    if (st == NPU_OK && o->stats)
        print_stats(&cfg, &r);
    sim_free(s);
    if (st != NPU_OK) {
        fprintf(stderr, "npusim: %s: %s\n", fw, err.msg);
        return exit_code(st);
    }
    if (r.exit_code != 0) {
        fprintf(stderr, "npusim: %s: firmware self-check failed (exit code %d)\n", fw, (int)r.exit_code);
        return 1;
    }
    return 0;
}

static int run_model(const opts *o, const char *fw)
{
    (void)fw;
    if (o->ninputs == 0)
        fprintf(stderr, "npusim: %s: no --input given\n", o->model);
    fprintf(stderr, "npusim: %s: running a .npub is not implemented yet\n", o->model);
    return 1;
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
    return o.model ? run_model(&o, fw) : run_selfcheck(&o, fw);
}
