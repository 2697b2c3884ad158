/* build/npuref end to end on small ONNX models built here with protobuf-c:
 * batch stacking, binding by order and by name, the dtype and shape checks,
 * exit codes, and that a failed run leaves no output file. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/npy.h"
#include "onnx/onnx.pb-c.h"

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/npureftestXXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(npuref, .init = setup, .fini = teardown);

static const char *P(const char *name)
{
    static char buf[8][256];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

/* ---- models ------------------------------------------------------------------- */

typedef struct vi {
    const char *name;
    int rank;
    int64_t dims[4];
} vi;

static Onnx__ValueInfoProto *value_info(const vi *v, Onnx__TypeProto *tp, Onnx__TypeProto__Tensor *tt,
                                        Onnx__TensorShapeProto *sp, Onnx__TensorShapeProto__Dimension *dd,
                                        Onnx__TensorShapeProto__Dimension **dp, Onnx__ValueInfoProto *out)
{
    onnx__value_info_proto__init(out);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sp);
    for (int i = 0; i < v->rank; i++) {
        onnx__tensor_shape_proto__dimension__init(&dd[i]);
        dd[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dd[i].dim_value = v->dims[i];
        dp[i] = &dd[i];
    }
    sp->n_dim = (size_t)v->rank;
    sp->dim = dp;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    out->name = (char *)v->name;
    out->type = tp;
    return out;
}

/* A float model: inputs and outputs as given, one constant "c" [3] = 1, 2, 3,
 * nodes "OP(in0, in1) -> out". */
typedef struct node_spec {
    const char *op, *in0, *in1, *out;
} node_spec;

static void write_model(const char *path, int n_in, const vi *ins, int n_out, const vi *outs, int n_nodes,
                        const node_spec *ns)
{
    Onnx__ValueInfoProto vis[8], *vip_in[4], *vip_out[4];
    Onnx__TypeProto tps[8];
    Onnx__TypeProto__Tensor tts[8];
    Onnx__TensorShapeProto sps[8];
    Onnx__TensorShapeProto__Dimension dds[8][4], *dps[8][4];
    for (int i = 0; i < n_in; i++)
        vip_in[i] = value_info(&ins[i], &tps[i], &tts[i], &sps[i], dds[i], dps[i], &vis[i]);
    for (int i = 0; i < n_out; i++)
        vip_out[i] = value_info(&outs[i], &tps[4 + i], &tts[4 + i], &sps[4 + i], dds[4 + i], dps[4 + i], &vis[4 + i]);
    Onnx__NodeProto nodes[4], *np[4];
    char *nin[4][2], *nout[4][1];
    for (int i = 0; i < n_nodes; i++) {
        onnx__node_proto__init(&nodes[i]);
        nin[i][0] = (char *)ns[i].in0;
        nin[i][1] = (char *)ns[i].in1;
        nout[i][0] = (char *)ns[i].out;
        nodes[i].n_input = 2;
        nodes[i].input = nin[i];
        nodes[i].n_output = 1;
        nodes[i].output = nout[i];
        nodes[i].op_type = (char *)ns[i].op;
        nodes[i].name = (char *)ns[i].out;
        np[i] = &nodes[i];
    }
    Onnx__TensorProto c, *cp = &c;
    onnx__tensor_proto__init(&c);
    int64_t cd[1] = {3};
    float cv[3] = {1, 2, 3};
    c.n_dims = 1;
    c.dims = cd;
    c.has_data_type = 1;
    c.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    c.n_float_data = 3;
    c.float_data = cv;
    c.name = "c";
    Onnx__GraphProto g;
    onnx__graph_proto__init(&g);
    g.name = "g";
    g.n_node = (size_t)n_nodes;
    g.node = np;
    g.n_initializer = 1;
    g.initializer = &cp;
    g.n_input = (size_t)n_in;
    g.input = vip_in;
    g.n_output = (size_t)n_out;
    g.output = vip_out;
    Onnx__OperatorSetIdProto os, *osp = &os;
    onnx__operator_set_id_proto__init(&os);
    os.domain = "";
    os.has_version = 1;
    os.version = 13;
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1;
    m.ir_version = 7;
    m.n_opset_import = 1;
    m.opset_import = &osp;
    m.graph = &g;
    size_t n = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(n);
    onnx__model_proto__pack(&m, buf);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
    free(buf);
}

/* x [1, 3] -> y = x + c, z = x * c */
static const char *model_a(void)
{
    static char path[256];
    strcpy(path, P("a.onnx")); /* P's buffers are reused */
    vi in = {"x", 2, {1, 3}}, out[2] = {{"y", 2, {1, 3}}, {"z", 2, {1, 3}}};
    node_spec ns[2] = {{"Add", "x", "c", "y"}, {"Mul", "x", "c", "z"}};
    write_model(path, 1, &in, 2, out, 2, ns);
    return path;
}

/* a [2, 3], b [1, 3] -> y = a - b */
static const char *model_b(void)
{
    static char path[256];
    strcpy(path, P("b.onnx"));
    vi in[2] = {{"a", 2, {2, 3}}, {"b", 2, {1, 3}}}, out = {"y", 2, {2, 3}};
    node_spec ns = {"Sub", "a", "b", "y"};
    write_model(path, 2, in, 1, &out, 1, &ns);
    return path;
}

/* ---- running the tool ----------------------------------------------------------- */

static char out_text[8192], err_text[8192];

static void slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

/* Runs npuref with the arguments (a shell word list); the exit code. */
static int npuref(const char *fmt, ...)
{
    const char *build = getenv("NPUCC_BUILD");
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s/npuref %s >%s 2>%s", build ? build : "build", args, P("stdout"), P("stderr"));
    int rc = system(cmd);
    slurp(P("stdout"), out_text, sizeof out_text);
    slurp(P("stderr"), err_text, sizeof err_text);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void put_f32(const char *name, int rank, const int64_t *dims, const float *v)
{
    npu_err e;
    cr_assert_eq(npy_write(P(name), NPY_F32, rank, dims, v, &e), NPU_OK, "%s", e.msg);
}

static npy_array get(const char *name)
{
    npy_array a;
    npu_err e;
    cr_assert_eq(npy_read(P(name), npu_alloc_default(), &a, &e), NPU_OK, "%s", e.msg);
    return a;
}

static int exists(const char *name)
{
    return access(P(name), F_OK) == 0;
}

static int files_in_dir(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(npuref, stacks_inferences_and_writes_outputs)
{
    const char *m = model_a();
    const float x[6] = {1, 2, 3, -1, 0.5f, 4};
    put_f32("x.npy", 2, (int64_t[]){2, 3}, x);
    cr_assert_eq(npuref("%s --input %s --output %s --output %s", m, P("x.npy"), P("y.npy"), P("z.npy")), 0, "%s",
                 err_text);
    npy_array y = get("y.npy"), z = get("z.npy");
    cr_assert(y.rank == 2 && y.dims[0] == 2 && y.dims[1] == 3 && y.dtype == NPY_F32);
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(((float *)y.data)[i], x[i] + (float)(i % 3 + 1));
        cr_assert_eq(((float *)z.data)[i], x[i] * (float)(i % 3 + 1));
    }
    npy_free(npu_alloc_default(), &y);
    npy_free(npu_alloc_default(), &z);
    /* float64 is converted */
    const double xd[3] = {0.5, 1, 1.5};
    npu_err e;
    cr_assert_eq(npy_write(P("xd.npy"), NPY_F64, 2, (int64_t[]){1, 3}, xd, &e), NPU_OK);
    cr_assert_eq(npuref("%s --input %s --output %s", m, P("xd.npy"), P("y.npy")), 0, "%s", err_text);
    y = get("y.npy");
    cr_assert(((float *)y.data)[2] == 4.5f);
    npy_free(npu_alloc_default(), &y);
}

Test(npuref, summarizes_outputs_without_a_file)
{
    const char *m = model_a();
    put_f32("x.npy", 2, (int64_t[]){1, 3}, (float[]){1, 2, 3});
    cr_assert_eq(npuref("%s --input %s --output %s", m, P("x.npy"), P("y.npy")), 0, "%s", err_text);
    cr_assert(strstr(out_text, "z: f32 [1, 3]: 1 4 9"), "%s", out_text);
    cr_assert_null(strstr(out_text, "y:"), "%s", out_text);
    cr_assert_eq(npuref("%s --input %s", m, P("x.npy")), 0, "%s", err_text);
    cr_assert(strstr(out_text, "y: f32 [1, 3]: 2 4 6") && strstr(out_text, "z: f32"), "%s", out_text);
}

Test(npuref, binds_by_name_and_reuses_single_inputs)
{
    const char *m = model_b();
    const float a[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, b[3] = {1, 1, 2};
    put_f32("a.npy", 2, (int64_t[]){4, 3}, a);
    put_f32("b.npy", 2, (int64_t[]){1, 3}, b);
    cr_assert_eq(npuref("%s --input b=%s --input a=%s --output %s", m, P("b.npy"), P("a.npy"), P("y.npy")), 0,
                 "%s", err_text);
    npy_array y = get("y.npy");
    cr_assert(y.rank == 2 && y.dims[0] == 4 && y.dims[1] == 3);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(((float *)y.data)[i], a[i] - b[i % 3]);
    npy_free(npu_alloc_default(), &y);
}

Test(npuref, usage_errors_exit_2)
{
    const char *m = model_a();
    put_f32("x.npy", 2, (int64_t[]){1, 3}, (float[]){1, 2, 3});
    cr_assert_eq(npuref("%s", m), 2);
    cr_assert(strstr(err_text, "1 graph input, 0 --input given") && strstr(err_text, "usage:"), "%s", err_text);
    cr_assert_eq(npuref("--input %s", P("x.npy")), 2);
    cr_assert_eq(npuref("%s --input %s --frobnicate", m, P("x.npy")), 2);
    cr_assert(strstr(err_text, "unknown option '--frobnicate'"), "%s", err_text);
    cr_assert_eq(npuref("%s --input %s --input %s", m, P("x.npy"), P("x.npy")), 2);
    cr_assert(strstr(err_text, "1 graph input, 2 --input given"), "%s", err_text);
    cr_assert_eq(npuref("%s --input %s --output %s --output %s --output %s", m, P("x.npy"), P("1.npy"),
                        P("2.npy"), P("3.npy")),
                 2);
    cr_assert_eq(npuref("%s --input", m), 2);
}

Test(npuref, input_mismatches_name_the_file_and_the_input)
{
    const char *m = model_b();
    put_f32("a.npy", 2, (int64_t[]){3, 3}, (float[9]){0});
    put_f32("a4.npy", 2, (int64_t[]){4, 3}, (float[12]){0});
    put_f32("a6.npy", 2, (int64_t[]){6, 3}, (float[18]){0});
    put_f32("b.npy", 2, (int64_t[]){1, 3}, (float[3]){0});
    put_f32("b2.npy", 2, (int64_t[]){2, 3}, (float[6]){0});
    put_f32("b4.npy", 1, (int64_t[]){3}, (float[3]){0});
    npu_err e;
    cr_assert_eq(npy_write(P("bi.npy"), NPY_I32, 2, (int64_t[]){1, 3}, (int32_t[3]){0}, &e), NPU_OK);
    struct {
        const char *a, *b, *msg;
    } c[] = {
        {"a.npy", "b.npy", "a.npy: shape [3, 3] does not fit input 'a' [2, 3]"},
        {"a4.npy", "bi.npy", "bi.npy: input 'b' is f32 ('<f4') in the model, the file holds '<i4'"},
        {"a4.npy", "b4.npy", "b4.npy: shape [3] does not fit input 'b' [1, 3]"},
        {"a6.npy", "b2.npy", "b2.npy: holds 2 inferences for input 'b'"},
        {"missing.npy", "b.npy", "missing.npy: cannot open"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        cr_assert_eq(npuref("%s --input %s --input %s --output %s", m, P(c[i].a), P(c[i].b), P("y.npy")), 1,
                     "case %zu: %s", i, err_text);
        cr_assert(strncmp(err_text, dir, strlen(dir)) == 0 && strstr(err_text, c[i].msg), "case %zu: %s", i,
                  err_text);
        cr_assert(!exists("y.npy"));
    }
}

Test(npuref, a_failed_run_leaves_no_output)
{
    const char *m = model_a();
    put_f32("x.npy", 2, (int64_t[]){1, 3}, (float[]){1, 2, 3});
    int before = files_in_dir();
    cr_assert_eq(npuref("%s --input %s --output %s --output %s", m, P("x.npy"), P("y.npy"), P("nodir/z.npy")), 1);
    cr_assert(strstr(err_text, "nodir/z.npy"), "%s", err_text);
    cr_assert(!exists("y.npy"));
    cr_assert_eq(files_in_dir(), before + 2); /* stdout and stderr of the run only */
}

Test(npuref, bad_models_are_user_errors_naming_the_file)
{
    FILE *f = fopen(P("junk.onnx"), "wb");
    fputs("this is not protobuf", f);
    fclose(f);
    put_f32("x.npy", 2, (int64_t[]){1, 3}, (float[]){1, 2, 3});
    cr_assert_eq(npuref("%s --input %s", P("junk.onnx"), P("x.npy")), 1, "%s", err_text);
    cr_assert(strncmp(err_text, P("junk.onnx"), strlen(P("junk.onnx"))) == 0, "%s", err_text);
    f = fopen(P("m.npub"), "wb");
    fputs("NPUB but not a binary", f);
    fclose(f);
    cr_assert_eq(npuref("%s --input %s", P("m.npub"), P("x.npy")), 1, "%s", err_text);
    cr_assert(strncmp(err_text, P("m.npub"), strlen(P("m.npub"))) == 0 && strstr(err_text, "byte "), "%s",
              err_text);
}
