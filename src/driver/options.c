#include "driver/options.h"

#include <stdlib.h>
#include <string.h>

void drv_print_usage(FILE *out)
{
    fputs("usage: npucc --target NAME|FILE.yaml [--set PATH=VALUE] [--calib DIR] [-o OUT] [--emit npub|c|qdq|listing]\n"
          "             [--wbits 8|4] [--w4-min-fanin N] [--abits 8|4|16] [--calib-method minmax|percentile|kl|mse]\n"
          "             [--percentile P] [--layer-bits NAME=8] [--accuracy-budget DB]\n"
          "             [--precision auto [--budget-cycles N|--budget-ratio R|--target-sqnr DB]]\n"
          "             [--mean M[,M..]] [--std S[,S..]] [--layout nchw|nhwc] [--resize error|nearest|bilinear]\n"
          "             [--[no-]bias-correction] [--cle] [--weight-rounding|--int4-rounding nearest|adaptive|gptq]\n"
          "             [--input-shape NAME=1x3x224x224] [--report] [--stats-json FILE]\n"
          "             [--input-type float32|int8|uint8] [--output-type float32|int8|uint8]\n"
          "             [--partition cost|first-fit|host] [--sign-key FILE]\n"
          "             [--dump-ir] [--dump-after=PASS|all] [--strip] MODEL.onnx\n"
          "       npucc --target NAME|FILE.yaml [--set PATH=VALUE ...] --validate\n",
          out);
}

/* "--name=value" or "--name value": returns the value, advancing *i. */
static const char *option_value(int argc, char **argv, int *i, const char *name, npu_err *err, bool *matched)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    *matched = false;
    if (strncmp(arg, name, n) != 0)
        return NULL;
    if (arg[n] == '=') {
        *matched = true;
        return arg + n + 1;
    }
    if (arg[n] != '\0')
        return NULL;
    *matched = true;
    if (*i + 1 >= argc) {
        npu_fail(err, NPU_EUSAGE, "%s needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

static bool parse_bits(const char *v, int *out)
{
    if (strcmp(v, "8") == 0)
        *out = 8;
    else if (strcmp(v, "4") == 0)
        *out = 4;
    else
        return false;
    return true;
}

/* The parser's state: one option group's helper reads argv[i] and may consume
 * its value, so the groups share the cursor rather than copies of it. */
typedef struct {
    int argc;
    char **argv;
    int i;
    drv_options *o;
    npu_err *err;
    bool method_given; /* int4 activations default to mse unless a method was given */
    bool no_value;     /* the last option lacked its value: a usage error, already in err */
} arg_cursor;

/* true when the current argument is option `name` with its value in v; one
 * without its value is false and sets c->no_value, which ends the parse */
#define VALUE(name) \
    (v = option_value(c->argc, c->argv, &c->i, name, c->err, &m), m && (v || (c->no_value = true, false)))

/* v's index in names[0..n), or n when it is none of them */
static int name_index(const char *v, const char *const *names, int n)
{
    int k = 0;
    while (k < n && strcmp(v, names[k]) != 0)
        k++;
    return k;
}

/* Defaults chosen by measurement (docs/numerics.md, "Post-training quantization"). */
static void set_defaults(drv_options *o)
{
    memset(o, 0, sizeof *o);
    o->wbits = o->abits = 8;
    o->w4_min_fanin = Q_W4_MIN_FANIN_DEFAULT;
    o->percentile = 99.99f;
    o->calib_method = DRV_CALIB_MINMAX;
    o->bias_correction = 0;
    o->int4_rounding = Q_ROUND_GPTQ;
    o->int8_rounding = Q_ROUND_NEAREST;
}

/* What to build and where: --target, -o/--output, --emit, --stats-json, --sign-key, --partition.
 * *matched false when the argument is none of these. */
static npu_status output_option(arg_cursor *c, bool *matched)
{
    drv_options *o = c->o;
    const char *a = c->argv[c->i];
    bool m;
    const char *v;
    *matched = true;
    if (VALUE("--target")) {
        o->target = v;
    } else if (VALUE("--set")) {
        if (o->nsets == DRV_MAX_SETS)
            return npu_fail(c->err, NPU_EUSAGE, "--set: more than %d overrides", DRV_MAX_SETS);
        o->sets[o->nsets++] = v;
    } else if (strcmp(a, "-o") == 0 || VALUE("--output")) {
        if (strcmp(a, "-o") == 0) {
            if (c->i + 1 >= c->argc)
                return npu_fail(c->err, NPU_EUSAGE, "-o needs a value");
            v = c->argv[++c->i];
        }
        o->output = v;
    } else if (VALUE("--emit")) {
        static const char *const names[] = {"npub", "c", "qdq", "listing"};
        int k = name_index(v, names, 4);
        if (k == 4)
            return npu_fail(c->err, NPU_EUSAGE, "--emit: '%s' is not one of npub, c, qdq, listing", v);
        o->emit = (drv_emit)k;
    } else if (VALUE("--section")) {
        if (!v)
            return NPU_EUSAGE;
        for (const char *p = v; *p; p++) /* it becomes a string literal in the C file */
            if (*p == '"' || *p == '\\' || *p < 32 || *p > 126)
                return npu_fail(c->err, NPU_EUSAGE, "--section: '%s' is not a plain section name", v);
        o->c_section = v;
    } else if (VALUE("--align")) {
        if (!v)
            return NPU_EUSAGE;
        char *end;
        unsigned long n = strtoul(v, &end, 10);
        if (*end || end == v || n < 8 || n > 4096 || (n & (n - 1)))
            return npu_fail(c->err, NPU_EUSAGE, "--align: '%s' is not a power of two in 8..4096", v);
        o->c_align = (unsigned)n;
    } else if (VALUE("--stats-json")) {
        o->stats_json = v;
    } else if (VALUE("--sign-key")) {
        if (!v)
            return NPU_EUSAGE;
        o->sign_key = v;
    } else if (VALUE("--partition")) {
        static const char *const names[] = {"cost", "first-fit", "host"}; /* part_mode's order */
        int k = name_index(v, names, 3);
        if (k == 3)
            return npu_fail(c->err, NPU_EUSAGE, "--partition: '%s' is not cost, first-fit or host", v);
        o->partition = k;
    } else {
        *matched = false;
    }
    return NPU_OK;
}

/* The calibration set and how to read it: --calib, --calib-method, --percentile,
 * --mean/--std, --layout, --resize. */
static npu_status calib_option(arg_cursor *c, bool *matched)
{
    drv_options *o = c->o;
    const char *a = c->argv[c->i];
    bool m;
    const char *v;
    *matched = true;
    if (VALUE("--calib")) {
        o->calib_dir = v;
    } else if (VALUE("--calib-method")) {
        static const char *const names[] = {"minmax", "percentile", "kl", "mse"};
        int k = name_index(v, names, 4);
        if (k == 4)
            return npu_fail(c->err, NPU_EUSAGE, "--calib-method: '%s' is not one of minmax, percentile, kl, mse",
                            v);
        o->calib_method = (drv_calib_method)k;
        c->method_given = true;
    } else if (VALUE("--percentile")) {
        char *end;
        double p = strtod(v, &end);
        if (*end || !(p > 50.0 && p <= 100.0))
            return npu_fail(c->err, NPU_EUSAGE, "--percentile: '%s' is not a number in (50, 100]", v);
        o->percentile = (float)p;
    } else if (VALUE("--mean") || VALUE("--std")) {
        bool mean = strncmp(a, "--mean", 6) == 0;
        npu_status st = cal_parse_floats(v, mean ? o->calib_read.mean : o->calib_read.std,
                                         mean ? &o->calib_read.n_mean : &o->calib_read.n_std, c->err);
        if (st != NPU_OK) { /* npu_err_prefix: formatting err->msg into itself garbled it */
            npu_err_prefix(c->err, "%s", mean ? "--mean" : "--std");
            return c->err->code = NPU_EUSAGE;
        }
    } else if (VALUE("--layout")) {
        if (strcmp(v, "nchw") == 0)
            o->calib_read.layout = CAL_LAYOUT_NCHW;
        else if (strcmp(v, "nhwc") == 0)
            o->calib_read.layout = CAL_LAYOUT_NHWC;
        else
            return npu_fail(c->err, NPU_EUSAGE, "--layout: '%s' is not nchw or nhwc", v);
    } else if (VALUE("--resize")) {
        static const char *const names[] = {"error", "nearest", "bilinear"};
        int k = name_index(v, names, 3);
        if (k == 3)
            return npu_fail(c->err, NPU_EUSAGE, "--resize: '%s' is not one of error, nearest, bilinear", v);
        o->calib_read.resize = (cal_resize)(CAL_RESIZE_ERROR + k);
    } else {
        *matched = false;
    }
    return NPU_OK;
}

/* The value of --layer-bits: 8 or 4 (weights), or [w8|w4][a8|a16]. */
static bool parse_layer_value(const char *v, int *wbits, int *abits)
{
    *wbits = *abits = 0;
    if (parse_bits(v, wbits))
        return true;
    if (v[0] == 'w' && (v[1] == '8' || v[1] == '4')) {
        *wbits = v[1] - '0';
        v += 2;
    }
    if (strcmp(v, "a8") == 0)
        *abits = 8;
    else if (strcmp(v, "a16") == 0)
        *abits = 16;
    else if (*v)
        return false;
    return *wbits || *abits;
}

/* --layer-bits NAME=8|4|a16|a8|w4a16|...: one more per-layer override. */
static npu_status add_layer_bits(drv_options *o, const char *v, npu_err *err)
{
    const char *eq = strrchr(v, '=');
    int bits, abits;
    if (!eq || eq == v || !parse_layer_value(eq + 1, &bits, &abits))
        return npu_fail(err, NPU_EUSAGE, "--layer-bits: '%s' is not NAME=8|4|a8|a16|w8a16|w4a16|...", v);
    if (o->n_layer_bits == DRV_MAX_LAYER_BITS)
        return npu_fail(err, NPU_EUSAGE, "--layer-bits: more than %d layers", DRV_MAX_LAYER_BITS);
    size_t len = (size_t)(eq - v);
    drv_layer_bits *lb = &o->layer_bits[o->n_layer_bits++];
    if (len >= sizeof lb->name)
        return npu_fail(err, NPU_EUSAGE, "--layer-bits: layer name too long");
    memcpy(lb->name, v, len);
    lb->name[len] = '\0';
    lb->bits = bits;
    lb->abits = abits;
    return NPU_OK;
}

/* How to quantize: --wbits, --abits, --layer-bits, --accuracy-budget, the
 * rounding options, --[no-]bias-correction, --cle. */
static npu_status quant_option(arg_cursor *c, bool *matched)
{
    drv_options *o = c->o;
    const char *a = c->argv[c->i];
    bool m;
    const char *v;
    *matched = true;
    if (VALUE("--wbits")) {
        if (!parse_bits(v, &o->wbits))
            return npu_fail(c->err, NPU_EUSAGE, "--wbits: '%s' is not 8 or 4", v);
    } else if (VALUE("--abits")) {
        if (strcmp(v, "16") == 0)
            o->abits = 16;
        else if (!parse_bits(v, &o->abits))
            return npu_fail(c->err, NPU_EUSAGE, "--abits: '%s' is not 8, 4 or 16", v);
    } else if (VALUE("--accuracy-budget")) {
        char *end;
        double db = strtod(v, &end);
        if (*end || !(db > 0.0))
            return npu_fail(c->err, NPU_EUSAGE, "--accuracy-budget: '%s' is not a positive SQNR in dB", v);
        o->accuracy_budget_db = db;
    } else if (VALUE("--w4-min-fanin")) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || end == v || n < 0 || n > 1 << 30)
            return npu_fail(c->err, NPU_EUSAGE, "--w4-min-fanin: '%s' is not a count of weights (0 or more)", v);
        o->w4_min_fanin = (int)n;
    } else if (VALUE("--int4-rounding") || VALUE("--weight-rounding")) {
        static const char *const names[] = {"nearest", "adaptive", "gptq"};
        int k = name_index(v, names, 3);
        if (k == 3)
            return npu_fail(c->err, NPU_EUSAGE, "%.*s: '%s' is not nearest, adaptive or gptq",
                            (int)strcspn(a, "="), a, v);
        o->int4_rounding = (q_rounding)(Q_ROUND_NEAREST + k);
        if (a[2] == 'w') /* --weight-rounding: the 8-bit weights too */
            o->int8_rounding = o->int4_rounding;
    } else if (strcmp(a, "--bias-correction") == 0 || strcmp(a, "--no-bias-correction") == 0) {
        o->bias_correction = a[2] != 'n';
    } else if (strcmp(a, "--cle") == 0) {
        o->cle = true;
    } else if (VALUE("--layer-bits")) {
        return add_layer_bits(o, v, c->err);
    } else {
        *matched = false;
    }
    return NPU_OK;
}

/* --precision auto and its goal: --budget-cycles, --budget-ratio, --target-sqnr. */
static npu_status precision_option(arg_cursor *c, bool *matched)
{
    drv_options *o = c->o;
    bool m;
    const char *v;
    char *end = NULL;
    *matched = true;
    if (VALUE("--precision")) {
        if (strcmp(v, "auto") && strcmp(v, "fixed"))
            return npu_fail(c->err, NPU_EUSAGE, "--precision: '%s' is not auto or fixed", v);
        o->precision_auto = !strcmp(v, "auto");
    } else if (VALUE("--budget-cycles")) {
        long long n = strtoll(v, &end, 10);
        if (*end || n <= 0)
            return npu_fail(c->err, NPU_EUSAGE, "--budget-cycles: '%s' is not a positive cycle count", v);
        o->budget_cycles = n;
    } else if (VALUE("--budget-ratio")) {
        double r = strtod(v, &end);
        if (*end || !(r > 0.0) || r > 1e6)
            return npu_fail(c->err, NPU_EUSAGE, "--budget-ratio: '%s' is not a positive ratio", v);
        o->budget_ratio = r;
    } else if (VALUE("--target-sqnr")) {
        double db = strtod(v, &end);
        if (*end || !(db > 0.0) || db > 1000)
            return npu_fail(c->err, NPU_EUSAGE, "--target-sqnr: '%s' is not a positive SQNR in dB", v);
        o->target_sqnr_db = db;
    } else {
        *matched = false;
    }
    return NPU_OK;
}

/* The model's interface: --input-shape, --input-type/--output-type. */
static npu_status io_option(arg_cursor *c, bool *matched)
{
    drv_options *o = c->o;
    const char *a = c->argv[c->i];
    bool m;
    const char *v;
    *matched = true;
    if (VALUE("--input-shape")) {
        if (o->n_input_shapes == DRV_MAX_INPUT_SHAPES)
            return npu_fail(c->err, NPU_EUSAGE, "--input-shape: more than %d inputs", DRV_MAX_INPUT_SHAPES);
        npu_status st = imp_parse_input_shape(v, &o->input_shapes[o->n_input_shapes], c->err);
        if (st != NPU_OK) /* the message starts with "--input-shape 'SPEC'" already */
            return c->err->code = NPU_EUSAGE;
        o->n_input_shapes++;
    } else if (VALUE("--input-type") || VALUE("--output-type")) {
        bool in = a[2] == 'i';
        if (!q_io_type_parse(v, in ? &o->input_type : &o->output_type))
            return npu_fail(c->err, NPU_EUSAGE, "%s: '%s' is not float32, int8 or uint8",
                            in ? "--input-type" : "--output-type", v);
    } else {
        *matched = false;
    }
    return NPU_OK;
}

/* What to show besides the output: --dump-after, --dump-ir, --report,
 * --validate, --strip, -v/--verbose. */
static npu_status debug_option(arg_cursor *c, bool *matched)
{
    drv_options *o = c->o;
    const char *a = c->argv[c->i];
    bool m;
    const char *v;
    *matched = true;
    if (VALUE("--dump-after")) {
        o->dump_after = v;
    } else if (strcmp(a, "--dump-ir") == 0) {
        o->dump_ir = true;
    } else if (strcmp(a, "--report") == 0) {
        o->report = true;
    } else if (strcmp(a, "--validate") == 0) {
        o->validate = true;
    } else if (strcmp(a, "--strip") == 0) {
        o->strip = true;
    } else if (strcmp(a, "--allow-special-files") == 0) {
        o->calib_read.files.allow_special = true; /* the model's and the calibration files */
    } else if (VALUE("--max-nodes")) {
        if (!v)
            return NPU_EUSAGE;
        char *end;
        long long n = strtoll(v, &end, 10);
        if (!*v || *end || n < 1)
            return npu_fail(c->err, NPU_EUSAGE, "--max-nodes: '%s' is not a positive number", v);
        o->max_nodes = n;
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
        o->verbose = true;
    } else {
        *matched = false;
    }
    return NPU_OK;
}
#undef VALUE

/* An argument no group claimed: an unknown option, or the model (only one). */
static npu_status positional(drv_options *o, const char *a, npu_err *err)
{
    if (a[0] == '-' && a[1] != '\0')
        return npu_fail(err, NPU_EUSAGE, "unknown option '%s'", a);
    if (o->model)
        return npu_fail(err, NPU_EUSAGE, "more than one model given ('%s' and '%s')", o->model, a);
    o->model = a;
    return NPU_OK;
}

/* Defaults that depend on other options, then what every run needs. */
static npu_status finish(drv_options *o, bool method_given, npu_err *err)
{
    if (!method_given && o->abits == 4)
        o->calib_method = DRV_CALIB_MSE;
    if (o->help)
        return NPU_OK;
    if (!o->precision_auto && (o->budget_cycles > 0 || o->budget_ratio > 0 || o->target_sqnr_db > 0))
        return npu_fail(err, NPU_EUSAGE, "--budget-cycles, --budget-ratio and --target-sqnr go with --precision auto");
    if (!o->target)
        return npu_fail(err, NPU_EUSAGE, "--target is required");
    if (!o->validate && !o->model)
        return npu_fail(err, NPU_EUSAGE, "no model given");
    return NPU_OK;
}

npu_status drv_parse_args(int argc, char **argv, drv_options *o, npu_err *err)
{
    static npu_status (*const groups[])(arg_cursor *, bool *) = {
        output_option, calib_option, quant_option, precision_option, io_option, debug_option,
    };
    set_defaults(o);
    arg_cursor c = {.argc = argc, .argv = argv, .o = o, .err = err};
    for (c.i = 1; c.i < argc; c.i++) {
        const char *a = argv[c.i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            o->help = true;
            continue;
        }
        bool matched = false;
        for (size_t g = 0; g < sizeof groups / sizeof groups[0] && !matched; g++) {
            npu_status st = groups[g](&c, &matched);
            if (st != NPU_OK)
                return st;
            if (c.no_value)
                return NPU_EUSAGE;
        }
        if (!matched) {
            npu_status st = positional(o, a, err);
            if (st != NPU_OK)
                return st;
        }
    }
    return finish(o, c.method_given, err);
}
