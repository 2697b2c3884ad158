/* The importer robustness suite: every model of tests/import/ (written by
 * tests/import/gen_models.py) through imp_load_onnx, checked against
 * tests/import/cases.txt; what the IR holds for the accepted edge cases;
 * deterministic mutations of a valid model (no crash, no leak, an error
 * always has a message); every allocation failing in turn.
 * Data files are found under $NPUCC_ROOT (set by the Makefile) or ".". */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import.h"
#include "onnx/onnx.pb-c.h"

/* ---- helpers ------------------------------------------------------------------ */

static void model_path(char *buf, size_t cap, const char *file)
{
    const char *r = getenv("NPUCC_ROOT");
    snprintf(buf, cap, "%s/tests/import/%s", r && *r ? r : ".", file);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s (run from the repo or set NPUCC_ROOT)", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert_geq(n, 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Loads tests/import/FILE with an optional --input-shape, through a counting
 * allocator so that every case also checks that nothing leaks. */
static npu_status load(const char *file, const char *shape, ir_graph **g, npu_err *err, char *path, size_t cap)
{
    model_path(path, cap, file);
    imp_input_shape is;
    imp_options opt = {0};
    if (shape && strcmp(shape, "-")) {
        cr_assert_eq(imp_parse_input_shape(shape, &is, err), NPU_OK, "%s", err->msg);
        opt.n_input_shapes = 1;
        opt.input_shapes = &is;
    }
    npu_err_clear(err);
    return imp_load_onnx(path, &opt, npu_alloc_default(), g, err);
}

static ir_graph *load_ok(const char *file, const char *shape)
{
    char path[1024];
    npu_err err;
    ir_graph *g = NULL;
    npu_status st = load(file, shape, &g, &err, path, sizeof path);
    cr_assert_eq(st, NPU_OK, "%s: %s", file, err.msg);
    cr_assert_not_null(g);
    return g;
}

static const ir_tensor *must_find(const ir_graph *g, const char *name)
{
    const ir_tensor *t = ir_graph_find(g, name);
    cr_assert_not_null(t, "tensor '%s' is not in the graph", name);
    return t;
}

/* ---- the table ------------------------------------------------------------------ */

enum { MAX_FIELDS = 12 };

/* Splits a line of cases.txt at " | " in place; returns the field count. */
static int split_fields(char *line, char **f)
{
    int n = 0;
    line[strcspn(line, "\n")] = '\0';
    for (char *p = line; p && n < MAX_FIELDS;) {
        f[n++] = p;
        char *sep = strstr(p, " | ");
        if (sep) {
            *sep = '\0';
            p = sep + 3;
        } else {
            p = NULL;
        }
    }
    return n;
}

static bool check_case(char **f, int nf)
{
    char path[1024];
    npu_err err;
    ir_graph *g = NULL;
    npu_status st = load(f[0], f[2], &g, &err, path, sizeof path);
    bool good = true;
    if (!strcmp(f[1], "ok")) {
        cr_expect_eq(st, NPU_OK, "%s (--input-shape %s): expected success, got %d: %s", f[0], f[2], st, err.msg);
        good = st == NPU_OK && g;
    } else {
        cr_assert_str_eq(f[1], "user", "cases.txt: unknown status '%s'", f[1]);
        cr_expect_eq(st, NPU_EUSER, "%s: expected a user error, got %d: %s", f[0], st, err.msg);
        cr_expect_null(g, "%s: a failed import returned a graph", f[0]);
        good = st == NPU_EUSER && !g;
        size_t pl = strlen(path);
        if (strncmp(err.msg, path, pl) || strncmp(err.msg + pl, ": ", 2)) {
            cr_expect_fail("%s: the message does not start with '%s: ': %s", f[0], path, err.msg);
            good = false;
        }
        for (int i = 3; i < nf; i++)
            if (!strstr(err.msg, f[i])) {
                cr_expect_fail("%s: message lacks \"%s\": %s", f[0], f[i], err.msg);
                good = false;
            }
    }
    ir_graph_free(g);
    return good;
}

Test(import, table_of_cases)
{
    char path[1024];
    model_path(path, sizeof path, "cases.txt");
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "cannot open %s", path);
    char line[2048];
    int n = 0, errors = 0, passed = 0;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char *f[MAX_FIELDS];
        int nf = split_fields(line, f);
        cr_assert_geq(nf, 3, "cases.txt: malformed line: %s", line);
        n++;
        errors += !strcmp(f[1], "user");
        passed += check_case(f, nf);
    }
    fclose(fp);
    /* issue 2 asks for at least 20 malformed or unsupported models */
    cr_expect_geq(errors, 25, "only %d error cases", errors);
    cr_expect_eq(passed, n, "%d of %d cases failed", n - passed, n);
}

/* ---- what the accepted models hold ------------------------------------------------ */

/* w in float_data must hold what the same seed puts in raw_data. */
Test(import, typed_fields_equal_raw_data)
{
    ir_graph *typed = load_ok("typed_initializers.onnx", NULL);
    ir_graph *raw = load_ok("initializer_as_input.onnx", NULL);
    const ir_tensor *wt = must_find(typed, "w"), *wr = must_find(raw, "w");
    cr_assert_not_null(wt->data);
    cr_assert_not_null(wr->data);
    cr_assert_eq(wt->dtype, IR_F32);
    cr_assert_eq(ir_tensor_numel(wt), 54);
    cr_assert(ir_shape_equal(wt, wr));
    cr_assert_eq(memcmp(wt->data, wr->data, 54 * sizeof(float)), 0);
    const float *b = must_find(typed, "b")->data;
    cr_assert(b[0] == 0.5f && b[1] == -0.5f && b[2] == 0.0f);
    /* int32_data carries int8 values; an initializer may be a graph output */
    const ir_tensor *q = must_find(typed, "q");
    cr_assert_eq(q->dtype, IR_I8);
    const int8_t *qv = q->data;
    cr_assert(qv[0] == -128 && qv[1] == 0 && qv[2] == 127);
    /* int64_data shaped the Reshape */
    const ir_tensor *r = must_find(typed, "r");
    cr_assert(r->rank == 2 && r->dims[0] == 3 && r->dims[1] == 16, "r is %dD", r->rank);
    cr_assert_eq(typed->n_outputs, 3);
    ir_graph_free(typed);
    ir_graph_free(raw);
}

Test(import, initializer_listed_as_input_is_a_constant)
{
    ir_graph *g = load_ok("initializer_as_input.onnx", NULL);
    cr_assert_eq(g->n_inputs, 1);
    cr_assert_str_eq(g->inputs[0]->name, "x");
    const ir_tensor *w = must_find(g, "w"), *b = must_find(g, "b");
    cr_assert(w->data && b->data);
    cr_assert_eq(w->flags & IR_TENSOR_INPUT, 0u);
    ir_graph_free(g);
}

Test(import, constant_value_float_and_value_ints)
{
    ir_graph *g = load_ok("constant_values.onnx", NULL);
    const ir_tensor *y = g->outputs[0];
    cr_assert(y->rank == 2 && y->dims[0] == 3 && y->dims[1] == 2);
    /* the Mul keeps its scalar constant operand */
    const ir_tensor *half = must_find(g, "half");
    cr_assert_eq(half->dtype, IR_F32);
    cr_assert_eq(half->rank, 0);
    cr_assert_float_eq(*(const float *)half->data, 0.5f, 0);
    ir_graph_free(g);
}

static void expect_dims(const char *file, int64_t h, int64_t w)
{
    ir_graph *g = load_ok(file, NULL);
    const ir_tensor *y = g->outputs[0];
    cr_expect(y->rank == 4 && y->dims[2] == h && y->dims[3] == w, "%s: y is %lldx%lld, expected %lldx%lld", file,
              (long long)y->dims[2], (long long)y->dims[3], (long long)h, (long long)w);
    ir_graph_free(g);
}

/* ceil_mode drops a last window that starts past the input (onnxruntime,
 * PyTorch), unless the model declares the output with it (ONNX's shape
 * inference before 1.16); SAME_UPPER gives ceil(in / stride) whatever
 * ceil_mode says. */
Test(import, pool_ceil_mode_output_sizes)
{
    expect_dims("pool_ceil_drop.onnx", 2, 3);
    expect_dims("pool_ceil_declared_kept.onnx", 3, 3);
    expect_dims("pool_same_ceil.onnx", 3, 3);
}

Test(import, input_shape_fixes_a_dynamic_dimension)
{
    ir_graph *g = load_ok("dynamic_dim.onnx", "x=1x2x4x4");
    cr_assert_eq(g->n_inputs, 1);
    const ir_tensor *x = g->inputs[0];
    cr_assert(x->rank == 4 && x->dims[0] == 1 && x->dims[1] == 2 && x->dims[3] == 4);
    const ir_tensor *y = g->outputs[0];
    cr_assert(y->rank == 4 && y->dims[1] == 3 && y->dims[2] == 4);
    ir_graph_free(g);
}

Test(import, missing_file)
{
    char path[1024];
    npu_err err;
    ir_graph *g = NULL;
    cr_assert_eq(load("no_such_model.onnx", NULL, &g, &err, path, sizeof path), NPU_EUSER);
    cr_assert(strstr(err.msg, "no_such_model.onnx: cannot open"), "%s", err.msg);
    cr_assert_null(g);
}

/* ---- mutations ------------------------------------------------------------------- */

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* NPUCC_FUZZ_SCALE=N runs N times as many random mutations (longer hunts). */
static int fuzz_scale(void)
{
    const char *e = getenv("NPUCC_FUZZ_SCALE");
    int n = e ? atoi(e) : 1;
    return n > 0 ? n : 1;
}

/* One import of a mutated buffer: OK, or a user error whose message starts
 * with the name; never an internal error; nothing left allocated. */
static void import_mutant(const unsigned char *data, size_t len, const char *what, size_t k, int *n_ok)
{
    npu_alloc_counter cnt = {0};
    npu_err err;
    npu_err_clear(&err);
    ir_graph *g = NULL;
    npu_status st = imp_load_onnx_buffer(data, len, "mut.onnx", NULL, npu_alloc_counting(&cnt), &g, &err);
    if (st == NPU_OK) {
        cr_assert_not_null(g, "%s %zu: OK without a graph", what, k);
        cr_assert_eq(ir_graph_verify(g, &err), NPU_OK, "%s %zu: %s", what, k, err.msg);
        ++*n_ok;
    } else {
        cr_assert_eq(st, NPU_EUSER, "%s %zu: status %d: %s", what, k, st, err.msg);
        cr_assert_null(g);
        cr_assert(!strncmp(err.msg, "mut.onnx: ", 10) && strlen(err.msg) > 12, "%s %zu: message '%s'", what, k,
                  err.msg);
        for (const char *p = err.msg; *p; p++)
            cr_assert((unsigned char)*p >= 0x20 && *p != 0x7f, "%s %zu: a control byte in '%s'", what, k, err.msg);
    }
    ir_graph_free(g);
    cr_assert_eq(cnt.live_bytes, 0, "%s %zu: %zu bytes leaked", what, k, cnt.live_bytes);
}

Test(import, mutations_never_crash, .timeout = 120)
{
    char path[1024];
    size_t len;
    model_path(path, sizeof path, "fuzz_seed.onnx");
    unsigned char *seed = slurp(path, &len);
    unsigned char *m = malloc(len + 8);
    cr_assert_not_null(m);
    int n_ok = 0, total = 0;
    import_mutant(seed, len, "seed", 0, &n_ok);
    cr_assert_eq(n_ok, 1, "the seed model itself must import");
    /* every truncation */
    for (size_t cut = 0; cut < len; cut++, total++)
        import_mutant(seed, cut, "truncated at", cut, &n_ok);
    /* every byte: low bit, high bit, all ones, zero */
    static const unsigned char flips[] = {0x01, 0x80, 0xff};
    for (size_t i = 0; i < len; i++) {
        for (size_t f = 0; f < sizeof flips + 1; f++, total++) {
            memcpy(m, seed, len);
            m[i] = f < sizeof flips ? (unsigned char)(m[i] ^ flips[f]) : 0;
            import_mutant(m, len, "byte flip at", i, &n_ok);
        }
    }
    /* random multi-byte mutations, fixed seed: 1-4 bytes set to random
     * values, sometimes with the tail cut off */
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (int k = 0; k < 3000 * fuzz_scale(); k++, total++) {
        memcpy(m, seed, len);
        int nb = 1 + (int)(xorshift(&s) % 4);
        for (int j = 0; j < nb; j++)
            m[xorshift(&s) % len] = (unsigned char)xorshift(&s);
        size_t ml = xorshift(&s) % 8 ? len : (size_t)(xorshift(&s) % len);
        import_mutant(m, ml, "random mutation", (size_t)k, &n_ok);
    }
    cr_log_info("%d mutants of %zu bytes: %d imported, %d rejected", total, len, n_ok - 1, total - n_ok + 1);
    cr_expect_gt(total - n_ok, total / 4, "most mutants should be rejected");
    free(m);
    free(seed);
}

/* Every allocation of an import failing in turn: an out-of-memory error,
 * nothing leaked, until the import needs no more. */
static void each_allocation_failing(const char *file)
{
    char path[1024];
    size_t len;
    model_path(path, sizeof path, file);
    unsigned char *seed = slurp(path, &len);
    npu_status st = NPU_EINTERNAL;
    size_t fail_at;
    for (fail_at = 1; st != NPU_OK && fail_at < 100000; fail_at++) {
        npu_alloc_counter cnt = {.fail_at = fail_at};
        npu_err err;
        ir_graph *g = NULL;
        st = imp_load_onnx_buffer(seed, len, "seed.onnx", NULL, npu_alloc_counting(&cnt), &g, &err);
        if (st != NPU_OK) {
            cr_assert_eq(st, NPU_EINTERNAL, "%s, allocation %zu failing: %d: %s", file, fail_at, st, err.msg);
            cr_assert(strstr(err.msg, "out of memory"), "%s, allocation %zu failing: %s", file, fail_at, err.msg);
            cr_assert_null(g);
        }
        ir_graph_free(g);
        cr_assert_eq(cnt.live_bytes, 0, "%s, allocation %zu failing: %zu bytes leaked", file, fail_at,
                     cnt.live_bytes);
    }
    cr_assert_eq(st, NPU_OK);
    size_t needed = fail_at - 2; /* the last run failed none of its allocations */
    cr_log_info("%s: the import makes %zu allocations", file, needed);
    cr_assert_gt(needed, 10, "an import takes more than a few allocations");
    free(seed);
}

Test(import, each_allocation_failing, .timeout = 120)
{
    each_allocation_failing("fuzz_seed.onnx");
    each_allocation_failing("fuzz_seed_shapes.onnx");
}

/* ---- structured mutations ----------------------------------------------------------- */

/* Values that break shape arithmetic: signs, zero, overflow, off by one. */
static const int64_t odd_ints[] = {0, 1, -1, 2, -2, 3, 4, 5, 7, 64, 255, 1 << 16, INT32_MAX, INT32_MIN,
                                   (int64_t)1 << 40, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1};
static const float odd_floats[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1e30f, -1e30f, 1e-30f, 3.0f};

static int64_t odd_int(uint64_t *s)
{
    return odd_ints[xorshift(s) % (sizeof odd_ints / sizeof odd_ints[0])];
}

/* One change to the unpacked model, made in place: only values are
 * overwritten and pointers swapped, so free_unpacked still frees each
 * allocation once. Returns false when the chosen part does not exist. */
static bool mutate_model(Onnx__ModelProto *m, uint64_t *s)
{
    Onnx__GraphProto *g = m->graph;
    switch (xorshift(s) % 9) {
    case 0: { /* an attribute value */
        Onnx__NodeProto *n = g->node[xorshift(s) % g->n_node];
        if (!n->n_attribute)
            return false;
        Onnx__AttributeProto *a = n->attribute[xorshift(s) % n->n_attribute];
        if (a->n_ints)
            a->ints[xorshift(s) % a->n_ints] = odd_int(s);
        else if (a->n_floats)
            a->floats[xorshift(s) % a->n_floats] = odd_floats[xorshift(s) % (sizeof odd_floats / sizeof odd_floats[0])];
        else if (a->t && a->t->n_dims)
            a->t->dims[xorshift(s) % a->t->n_dims] = odd_int(s);
        else
            a->i = odd_int(s);
        return true;
    }
    case 1: { /* a constant's value (shapes, axes, pads, indices) */
        Onnx__TensorProto *t = g->initializer[xorshift(s) % g->n_initializer];
        if (t->n_int64_data)
            t->int64_data[xorshift(s) % t->n_int64_data] = odd_int(s);
        else if (t->n_float_data)
            t->float_data[xorshift(s) % t->n_float_data] =
                odd_floats[xorshift(s) % (sizeof odd_floats / sizeof odd_floats[0])];
        else
            return false;
        return true;
    }
    case 2: { /* a constant's dims or dtype */
        Onnx__TensorProto *t = g->initializer[xorshift(s) % g->n_initializer];
        if (t->n_dims && xorshift(s) % 2)
            t->dims[xorshift(s) % t->n_dims] = odd_int(s);
        else
            t->data_type = (int32_t)(xorshift(s) % 17);
        return true;
    }
    case 3: { /* an input dimension */
        Onnx__TensorShapeProto *sh = g->input[0]->type->tensor_type->shape;
        sh->dim[xorshift(s) % sh->n_dim]->dim_value = odd_int(s);
        return true;
    }
    case 4: { /* two node inputs swapped (rewires the graph, may make cycles) */
        Onnx__NodeProto *a = g->node[xorshift(s) % g->n_node], *b = g->node[xorshift(s) % g->n_node];
        if (!a->n_input || !b->n_input)
            return false;
        char **x = &a->input[xorshift(s) % a->n_input], **y = &b->input[xorshift(s) % b->n_input];
        char *t = *x;
        *x = *y;
        *y = t;
        return true;
    }
    case 5: { /* an input swapped with an output */
        Onnx__NodeProto *a = g->node[xorshift(s) % g->n_node], *b = g->node[xorshift(s) % g->n_node];
        if (!a->n_input || !b->n_output)
            return false;
        char **x = &a->input[xorshift(s) % a->n_input], **y = &b->output[xorshift(s) % b->n_output];
        char *t = *x;
        *x = *y;
        *y = t;
        return true;
    }
    case 6: { /* two op types swapped */
        Onnx__NodeProto *a = g->node[xorshift(s) % g->n_node], *b = g->node[xorshift(s) % g->n_node];
        char *t = a->op_type;
        a->op_type = b->op_type;
        b->op_type = t;
        return true;
    }
    case 7: { /* a node's last input or output dropped (counts are restored before freeing) */
        Onnx__NodeProto *n = g->node[xorshift(s) % g->n_node];
        if (xorshift(s) % 2 && n->n_input)
            n->n_input--;
        else if (n->n_output)
            n->n_output--;
        return true;
    }
    default: /* another opset in range (Softmax, Squeeze, Split, ... change form) */
        m->opset_import[0]->version = IMP_OPSET_MIN + (int64_t)(xorshift(s) % (IMP_OPSET_MAX - IMP_OPSET_MIN + 1));
        return true;
    }
}

static void structured_mutations(const char *file, int count, uint64_t seed_state)
{
    count *= fuzz_scale();
    char path[1024];
    size_t len;
    model_path(path, sizeof path, file);
    unsigned char *seed = slurp(path, &len);
    uint64_t s = seed_state;
    int n_ok = 0, total = 0;
    for (int k = 0; k < count; k++) {
        Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, seed);
        cr_assert_not_null(m, "%s does not unpack", file);
        size_t counts[64][2], nn = m->graph->n_node;
        cr_assert_leq(nn, 64);
        for (size_t j = 0; j < nn; j++)
            counts[j][0] = m->graph->node[j]->n_input, counts[j][1] = m->graph->node[j]->n_output;
        int changes = 1 + (int)(xorshift(&s) % 3);
        for (int j = 0; j < changes; j++)
            mutate_model(m, &s);
        size_t ml = onnx__model_proto__get_packed_size(m);
        unsigned char *buf = malloc(ml + 1);
        cr_assert_not_null(buf);
        onnx__model_proto__pack(m, buf);
        for (size_t j = 0; j < nn; j++)
            m->graph->node[j]->n_input = counts[j][0], m->graph->node[j]->n_output = counts[j][1];
        onnx__model_proto__free_unpacked(m, NULL);
        import_mutant(buf, ml, file, (size_t)k, &n_ok);
        total++;
        free(buf);
    }
    cr_log_info("%s: %d structured mutants: %d imported", file, total, n_ok);
    cr_expect_gt(n_ok, 0, "%s: no mutant imported; the mutations are too coarse", file);
    cr_expect_lt(n_ok, total, "%s: every mutant imported; the mutations change nothing", file);
    free(seed);
}

Test(import, structured_mutations_shapes, .timeout = 300)
{
    structured_mutations("fuzz_seed_shapes.onnx", 4000, 0x2545f4914f6cdd1du);
}

Test(import, structured_mutations_conv, .timeout = 300)
{
    structured_mutations("fuzz_seed.onnx", 2000, 0x853c49e6748fea9bu);
}
