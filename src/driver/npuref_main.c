/* npuref: runs a model on the reference kernels (docs/cli.md).
 *   npuref MODEL.onnx --input X.npy [--input ...] [--output Y.npy ...]
 *          [--input-shape NAME=1x3x224x224] [--no-opt] [-j N]
 * Inputs bind to the graph inputs in order (or by name: --input NAME=X.npy).
 * An input whose first dimension is k times the model's batch runs k
 * inferences (inputs with k = 1 are reused by every run) and the outputs are
 * stacked along dimension 0; -j N runs them on N threads (each inference
 * whole on one context, so the outputs do not depend on N). Outputs bind in order to --output files; the
 * others are summarized on stdout. Every output is written to a temporary
 * file first and renamed only when all are written, so a failed run leaves
 * none. Exit codes: 0 ok, 1 user error, 2 usage, 3 internal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "format/format.h"
#include "format/npub_sign.h"
#include "common/npy.h"
#include "rt/npub.h"
#include "import/import.h"
#include "opt/opt.h"
#include "ref/ref.h"
#include "ref/ref_check.h"
#include "man/npuref_help.h" /* build/gen: docs/cli.md, "## npuref" */

enum { MAX_FILES = 64, MAX_SHAPES = 16 };

typedef struct args {
    const char *model;
    int n_in, n_out, n_shapes;
    const char *in[MAX_FILES], *out[MAX_FILES];
    imp_input_shape shapes[MAX_SHAPES];
    int no_opt;
    const char *verify_key; /* --verify-key FILE: the .npub's full tag must hold */
    bool strict;            /* --strict: non-finite float inputs are an error, not a warning */
    npu_read_opts files;    /* --allow-special-files */
    int threads;            /* -j N; 0: ref_default_threads() */
} args;

static void usage(FILE *f)
{
    fputs("usage: npuref MODEL.onnx|MODEL.npub --input X.npy [--input ...] [--output Y.npy ...]\n"
          "              [--input-shape NAME=1x3x224x224] [--no-opt] [--verify-key FILE]\n"
          "  --input [NAME=]X.npy   one per graph input, in order (or by name)\n"
          "  --output [NAME=]Y.npy  graph outputs, in order (or by name); the rest are summarized\n"
          "  --input-shape N=DxD..  fixes the dynamic dimensions of input N\n"
          "  --no-opt               skip the graph rewrites\n"
          "  -j N                   N threads (default: NPUCC_THREADS, else all cores)\n"
          "  --verify-key FILE      refuse a .npub not signed with this key (npucc --sign-key)\n"
          "  --strict               refuse NaN/Inf in float inputs (default: a warning)\n"
          "  --allow-special-files  read FIFOs and devices too (default: regular files only)\n",
          f);
}

static npu_status parse_args(int argc, char **argv, args *a, npu_err *err)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int takes = !strcmp(s, "--input") || !strcmp(s, "--output") || !strcmp(s, "--input-shape") ||
                    !strcmp(s, "--verify-key") || !strcmp(s, "-j");
        if (takes && i + 1 >= argc)
            return npu_fail(err, NPU_EUSAGE, "npuref: %s needs a value", s);
        if (!strcmp(s, "--input") || !strcmp(s, "--output")) {
            int *n = s[2] == 'i' ? &a->n_in : &a->n_out;
            if (*n == MAX_FILES)
                return npu_fail(err, NPU_EUSAGE, "npuref: more than %d %s files", MAX_FILES, s);
            (s[2] == 'i' ? a->in : a->out)[(*n)++] = argv[++i];
        } else if (!strcmp(s, "--input-shape")) {
            if (a->n_shapes == MAX_SHAPES)
                return npu_fail(err, NPU_EUSAGE, "npuref: more than %d --input-shape", MAX_SHAPES);
            npu_status st = imp_parse_input_shape(argv[++i], &a->shapes[a->n_shapes++], err);
            if (st) {
                npu_err_prefix(err, "npuref"); /* the message names --input-shape */
                return err->code = NPU_EUSAGE;
            }
        } else if (!strcmp(s, "-j")) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 1 || v > 64)
                return npu_fail(err, NPU_EUSAGE, "npuref: -j needs a thread count 1..64, got '%s'", argv[i]);
            a->threads = (int)v;
        } else if (!strcmp(s, "--verify-key")) {
            a->verify_key = argv[++i];
        } else if (!strcmp(s, "--no-opt")) {
            a->no_opt = 1;
        } else if (!strcmp(s, "--strict")) {
            a->strict = true;
        } else if (!strcmp(s, "--allow-special-files")) {
            a->files.allow_special = true;
        } else if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            fputs(npuref_help, stdout);
            exit(0);
        } else if (s[0] == '-' && s[1]) {
            return npu_fail(err, NPU_EUSAGE, "npuref: unknown option '%s'", s);
        } else if (a->model) {
            return npu_fail(err, NPU_EUSAGE, "npuref: more than one model ('%s', '%s')", a->model, s);
        } else {
            a->model = s;
        }
    }
    if (!a->model)
        return npu_fail(err, NPU_EUSAGE, "npuref: no model given");
    return NPU_OK;
}

/* "NAME=FILE" binds by name when NAME is one of the tensors; else it is a
 * file name (which may contain '='). Returns the index, or -1. */
static int bind_name(const char *spec, ir_tensor *const *ts, int n, const char **file)
{
    const char *eq = strrchr(spec, '=');
    *file = spec;
    if (!eq)
        return -1;
    for (int i = 0; i < n; i++)
        if (strlen(ts[i]->name) == (size_t)(eq - spec) && !strncmp(ts[i]->name, spec, (size_t)(eq - spec))) {
            *file = eq + 1;
            return i;
        }
    return -1;
}

/* Binds spec[k] to tensors in order or by name: file[i] for tensor i. */
static npu_status bind(const char *what, const char *const *spec, int n_spec, ir_tensor *const *ts, int n,
                       const char **file, npu_err *err)
{
    for (int i = 0; i < n; i++)
        file[i] = NULL;
    for (int k = 0; k < n_spec; k++) {
        const char *f;
        int i = bind_name(spec[k], ts, n, &f);
        if (i < 0)
            i = k;
        if (i >= n)
            return npu_fail(err, NPU_EUSAGE, "npuref: %d %s files for %d graph %ss", n_spec, what, n, what);
        if (file[i])
            return npu_fail(err, NPU_EUSAGE, "npuref: two %s files for '%s'", what, ts[i]->name);
        file[i] = f;
    }
    return NPU_OK;
}

static bool npy_of_ir(ir_dtype dt, npy_dtype *out)
{
    static const int map[IR_DTYPE_COUNT] = {
        [IR_F32] = NPY_F32, [IR_F16] = NPY_F16, [IR_I64] = NPY_I64, [IR_I32] = NPY_I32, [IR_I16] = NPY_I16,
        [IR_I8] = NPY_I8,   [IR_U8] = NPY_U8,   [IR_I4] = -1,       [IR_U4] = -1,       [IR_BOOL] = NPY_BOOL,
    };
    if ((unsigned)dt >= IR_DTYPE_COUNT || map[dt] < 0)
        return false;
    *out = (npy_dtype)map[dt];
    return true;
}

static void shape_str(char *buf, size_t cap, int rank, const int64_t *dims)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)dims[i]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

/* Checks one input file against its graph input; *runs gets k (the file
 * holds k inferences). Converts f64 to f32 in place. */
static npu_status check_input(const char *file, const ir_tensor *t, npy_array *a, int64_t *runs, npu_err *err)
{
    npy_dtype want;
    if (!npy_of_ir(t->dtype, &want))
        return npu_fail(err, NPU_EUSER, "%s: input '%s' has dtype %s, which npuref cannot feed", file, t->name,
                        ir_dtype_name(t->dtype));
    if (a->dtype == NPY_F64 && want == NPY_F32) {
        int64_t n = npy_numel(a);
        for (int64_t i = 0; i < n; i++)
            ((float *)a->data)[i] = (float)((double *)a->data)[i];
        a->dtype = NPY_F32;
    }
    if (a->dtype != want)
        return npu_fail(err, NPU_EUSER, "%s: input '%s' is %s ('%s') in the model, the file holds '%s'", file,
                        t->name, ir_dtype_name(t->dtype), npy_dtype_descr(want), npy_dtype_descr(a->dtype));
    bool same_rest = a->rank == t->rank;
    for (int d = 1; d < t->rank && same_rest; d++)
        same_rest = a->dims[d] == t->dims[d];
    int64_t b = t->rank ? t->dims[0] : 1, n = a->rank ? a->dims[0] : 1;
    if (!same_rest || (t->rank && (b <= 0 ? n != b : n % b != 0 || n == 0))) {
        char ms[256], fs[256];
        shape_str(ms, sizeof ms, t->rank, t->dims);
        shape_str(fs, sizeof fs, a->rank, a->dims);
        return npu_fail(err, NPU_EUSER,
                        "%s: shape %s does not fit input '%s' %s (the first dimension may be a multiple of %lld)",
                        file, fs, t->name, ms, (long long)b);
    }
    *runs = b > 0 ? n / b : 1;
    return NPU_OK;
}

static void summarize(const ir_tensor *t, int rank, const int64_t *dims, const void *data, int64_t count)
{
    char s[256];
    shape_str(s, sizeof s, rank, dims);
    printf("%s: %s %s:", t->name, ir_dtype_name(t->dtype), s);
    for (int64_t i = 0; i < count && i < 8; i++) {
        switch (t->dtype) {
        case IR_F32: printf(" %.6g", (double)((const float *)data)[i]); break;
        case IR_I64: printf(" %lld", (long long)((const int64_t *)data)[i]); break;
        case IR_I32: printf(" %d", ((const int32_t *)data)[i]); break;
        case IR_I16: printf(" %d", ((const int16_t *)data)[i]); break;
        case IR_I8: printf(" %d", ((const int8_t *)data)[i]); break;
        case IR_U8:
        case IR_BOOL: printf(" %u", ((const uint8_t *)data)[i]); break;
        default: printf(" 0x%04x", ((const uint16_t *)data)[i]); break;
        }
    }
    printf("%s\n", count > 8 ? " ..." : "");
}

/* Everything main owns, freed in one place. */
typedef struct run {
    npu_alloc alloc;
    ir_graph *g;
    npy_array in[MAX_FILES];
    void *out[MAX_FILES];
    size_t out_bytes[MAX_FILES];
    npy_pending pend[MAX_FILES];
} run;

static void run_free(run *r)
{
    for (int i = 0; i < MAX_FILES; i++) {
        npy_free(r->alloc, &r->in[i]);
        if (r->out[i])
            npu_free(r->alloc, r->out[i], r->out_bytes[i]);
        npy_discard(&r->pend[i]);
    }
    if (r->g)
        ir_graph_free(r->g);
}

/* The quantized graph a compiled model carries (its GRAPH section), checked
 * all the way down (ref/ref_check.h): the integer oracle npusim must match. */
static npu_status load_npub_graph(const char *path, const char *key_path, const npu_read_opts *ro, npu_alloc alloc, ir_graph **g,
                                  npu_err *err)
{
    void *buf = NULL;
    size_t size = 0;
    npub_view v;
    npu_status st = fmt_npub_read_ex(path, ro, alloc, &buf, &size, &v, err);
    if (st != NPU_OK)
        return st;
    if (key_path)
        st = fmt_npub_verify_key(path, &v, key_path, err);
    if (st == NPU_OK && !v.graph)
        st = npu_fail(err, NPU_EUSER, "%s: the binary is stripped (no graph section): compile without --strip",
                      path);
    else if (st == NPU_OK &&
             (st = ref_load_graph_section(v.graph, v.graph_size, v.sec[NPUB_SEC_GRAPH]->offset, alloc, g, err)))
        npu_err_prefix(err, "%s", path);
    npu_free_file(alloc, buf, size);
    return st;
}

/* NaN or Inf in a float input: a warning, or under --strict an error. */
static npu_status check_finite(const args *a, const char *file, const npy_array *x, npu_err *err)
{
    char msg[512];
    if (!npy_nonfinite_message(x, file, msg, sizeof msg))
        return NPU_OK;
    if (a->strict)
        return npu_fail(err, NPU_EUSER, "%s (--strict)", msg);
    fprintf(stderr, "npuref: warning: %s\n", msg);
    return NPU_OK;
}

/* Inference n's slices of the input and output arrays (ref_batch_io_fn). */
typedef struct batch_io {
    const ir_graph *g;
    run *r;
    const int64_t *k; /* per input: the inferences its file holds */
} batch_io;

static void batch_buffers(void *ud, int64_t n, const void **ins, void **outs)
{
    const batch_io *b = ud;
    for (int i = 0; i < b->g->n_inputs; i++)
        ins[i] = (const uint8_t *)b->r->in[i].data + (b->k[i] > 1 ? (size_t)n * ir_tensor_bytes(b->g->inputs[i]) : 0);
    for (int j = 0; j < b->g->n_outputs; j++)
        outs[j] = (uint8_t *)b->r->out[j] + (size_t)n * ir_tensor_bytes(b->g->outputs[j]);
}

static npu_status run_model(const args *a, run *r, npu_err *err)
{
    size_t len = strlen(a->model);
    bool npub = len >= 5 && !strcmp(a->model + len - 5, ".npub");
    if (a->verify_key && !npub)
        return npu_fail(err, NPU_EUSAGE, "npuref: --verify-key applies to a .npub, not '%s'", a->model);
    imp_options io = {.n_input_shapes = a->n_shapes, .input_shapes = a->shapes, .files = a->files};
    npu_status st = npub ? load_npub_graph(a->model, a->verify_key, &a->files, r->alloc, &r->g, err)
                         : imp_load_onnx(a->model, &io, r->alloc, &r->g, err);
    if (st)
        return st;
    ir_graph *g = r->g;
    if (!npub && !a->no_opt && (st = opt_run(g, NULL, err)))
        return npu_err_prefix(err, "%s", a->model);
    if (g->n_inputs > MAX_FILES || g->n_outputs > MAX_FILES)
        return npu_fail(err, NPU_EUSER, "%s: more than %d graph inputs or outputs", a->model, MAX_FILES);
    const char *in_file[MAX_FILES], *out_file[MAX_FILES];
    if (a->n_in != g->n_inputs)
        return npu_fail(err, NPU_EUSAGE, "npuref: %s has %d graph input%s, %d --input given", a->model, g->n_inputs,
                        g->n_inputs == 1 ? "" : "s", a->n_in);
    if ((st = bind("input", a->in, a->n_in, g->inputs, g->n_inputs, in_file, err)) ||
        (st = bind("output", a->out, a->n_out, g->outputs, g->n_outputs, out_file, err)))
        return st;
    int64_t runs = 1, k[MAX_FILES];
    int first = -1;
    for (int i = 0; i < g->n_inputs; i++) {
        if ((st = npy_read_ex(in_file[i], &a->files, r->alloc, &r->in[i], err)) ||
            (st = check_finite(a, in_file[i], &r->in[i], err)) ||
            (st = check_input(in_file[i], g->inputs[i], &r->in[i], &k[i], err)))
            return st;
        if (k[i] > 1 && runs > 1 && k[i] != runs)
            return npu_fail(err, NPU_EUSER, "%s: holds %lld inferences for input '%s', %s holds %lld", in_file[i],
                            (long long)k[i], g->inputs[i]->name, in_file[first], (long long)runs);
        if (k[i] > 1 && runs == 1)
            runs = k[i], first = i;
    }
    for (int j = 0; j < g->n_outputs; j++) {
        npy_dtype dt;
        if (!npy_of_ir(g->outputs[j]->dtype, &dt))
            return npu_fail(err, NPU_EUSER, "%s: output '%s' has dtype %s, which .npy cannot hold", a->model,
                            g->outputs[j]->name, ir_dtype_name(g->outputs[j]->dtype));
        r->out_bytes[j] = ir_tensor_bytes(g->outputs[j]) * (size_t)runs;
        if (!(r->out[j] = npu_malloc(r->alloc, r->out_bytes[j] ? r->out_bytes[j] : 1)))
            return npu_fail(err, NPU_EINTERNAL, "out of memory for output '%s'", g->outputs[j]->name);
        if (!r->out_bytes[j])
            r->out_bytes[j] = 1;
    }
    batch_io bio = {g, r, k};
    if ((st = ref_run_batch(g, r->alloc, a->threads ? a->threads : ref_default_threads(), runs, batch_buffers, &bio,
                            err)))
        return npu_err_prefix(err, "%s", a->model);
    /* stage every output, then move them all in place */
    for (int j = 0; j < g->n_outputs; j++) {
        const ir_tensor *t = g->outputs[j];
        int64_t dims[IR_MAX_RANK];
        int rank = t->rank;
        memcpy(dims, t->dims, sizeof dims);
        if (runs > 1 && rank == 0)
            rank = 1, dims[0] = runs;
        else if (runs > 1)
            dims[0] *= runs;
        npy_dtype dt = NPY_F32;
        npy_of_ir(t->dtype, &dt); /* checked above */
        if (out_file[j]) {
            if ((st = npy_stage(out_file[j], dt, rank, dims, r->out[j], &r->pend[j], err)))
                return st;
        } else {
            summarize(t, rank, dims, r->out[j], ir_tensor_numel(t) * runs);
        }
    }
    for (int j = 0; j < g->n_outputs; j++)
        if (out_file[j] && (st = npy_commit(&r->pend[j], err)))
            return st;
    return NPU_OK;
}

int main(int argc, char **argv)
{
    args a;
    npu_err err;
    npu_err_clear(&err);
    if (parse_args(argc, argv, &a, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        usage(stderr);
        return NPU_EUSAGE;
    }
    static run r; /* large (the staging paths): not on the stack */
    npu_alloc_counter count;
    bool counting = npu_alloc_from_env(&r.alloc, &count);
    npu_status st = run_model(&a, &r, &err);
    run_free(&r);
    npu_alloc_report("npuref", &count, counting);
    if (st) {
        fprintf(stderr, "%s\n", err.msg);
        if (st == NPU_EUSAGE)
            usage(stderr);
        return st == NPU_EUSER || st == NPU_EUSAGE ? (int)st : NPU_EINTERNAL;
    }
    return 0;
}
