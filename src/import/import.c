/* ONNX importer entry points: reading the file, unpacking the protobuf with
 * the caller's allocator, model-level checks, --input-shape parsing. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "import/imp_internal.h"

/* ---- messages ---------------------------------------------------------------- */

npu_status imp_fail(imp_ctx *c, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return npu_fail(c->err, NPU_EUSER, "%s: %s", c->path, msg);
}

npu_status imp_node_fail(imp_ctx *c, const char *node, const char *op, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return npu_fail(c->err, NPU_EUSER, "%s: node '%s' (%s, opset %d): %s", c->path, node, op, c->opset, msg);
}

npu_status imp_oom(imp_ctx *c)
{
    return npu_fail(c->err, NPU_EINTERNAL, "%s: out of memory", c->path);
}

/* ---- --input-shape ------------------------------------------------------------ */

npu_status imp_parse_input_shape(const char *spec, imp_input_shape *out, npu_err *err)
{
    const char *eq = strrchr(spec, '=');
    memset(out, 0, sizeof *out);
    if (!eq || eq == spec)
        return npu_fail(err, NPU_EUSAGE, "--input-shape '%s': expected NAME=DIMS, e.g. input=1x3x224x224", spec);
    size_t nl = (size_t)(eq - spec);
    if (nl >= IMP_NAME_MAX)
        return npu_fail(err, NPU_EUSAGE, "--input-shape: the name is longer than %d characters", IMP_NAME_MAX - 1);
    memcpy(out->name, spec, nl);
    const char *p = eq + 1;
    if (!*p)
        return npu_fail(err, NPU_EUSAGE, "--input-shape '%s': no dimensions after '='", spec);
    for (;;) {
        if (out->rank == IR_MAX_RANK)
            return npu_fail(err, NPU_EUSAGE, "--input-shape '%s': more than %d dimensions", spec, IR_MAX_RANK);
        int64_t v = 0;
        const char *start = p;
        while (*p >= '0' && *p <= '9') {
            if (v > (IMP_MAX_NUMEL - (*p - '0')) / 10)
                return npu_fail(err, NPU_EUSAGE, "--input-shape '%s': dimension too large", spec);
            v = v * 10 + (*p++ - '0');
        }
        if (p == start || v < 1)
            return npu_fail(err, NPU_EUSAGE, "--input-shape '%s': dimensions must be positive integers joined by 'x'",
                            spec);
        out->dims[out->rank++] = v;
        if (!*p)
            return NPU_OK;
        if (*p++ != 'x')
            return npu_fail(err, NPU_EUSAGE, "--input-shape '%s': dimensions must be positive integers joined by 'x'",
                            spec);
    }
}

/* ---- protobuf with our allocator ----------------------------------------------- */

/* protobuf-c frees without a size; npu_alloc wants one: keep it in a header. */
typedef struct pb_alloc {
    npu_alloc a;
    bool failed;
} pb_alloc;

enum { PB_HDR = 16 };

static void *pb_alloc_fn(void *ud, size_t size)
{
    pb_alloc *p = ud;
    unsigned char *m = size <= SIZE_MAX - PB_HDR ? npu_malloc(p->a, size + PB_HDR) : NULL;
    if (!m) {
        p->failed = true;
        return NULL;
    }
    memcpy(m, &size, sizeof size);
    return m + PB_HDR;
}

static void pb_free_fn(void *ud, void *ptr)
{
    pb_alloc *p = ud;
    if (!ptr)
        return;
    unsigned char *m = (unsigned char *)ptr - PB_HDR;
    size_t size;
    memcpy(&size, m, sizeof size);
    npu_free(p->a, m, size + PB_HDR);
}

/* ---- the model ------------------------------------------------------------------- */

static npu_status check_model(imp_ctx *c, const Onnx__ModelProto *m)
{
    if (!m->graph || !m->has_ir_version)
        return imp_fail(c, "not an ONNX model (no %s)", m->graph ? "ir_version" : "graph");
    if (m->ir_version < IMP_IR_VERSION_MIN || m->ir_version > IMP_IR_VERSION_MAX)
        return imp_fail(c, "ir_version %lld is not supported (supported: %d to %d)", (long long)m->ir_version,
                        IMP_IR_VERSION_MIN, IMP_IR_VERSION_MAX);
    /* the version as stored (int64): 0 and 2^40 both printed as -1 before */
    int64_t opset = 0;
    bool found = false;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx")) {
            found = true;
            opset = o->has_version ? o->version : 0;
        }
    }
    if (!found)
        return imp_fail(c, "the model imports no default-domain opset (opset_import)");
    if (opset < IMP_OPSET_MIN || opset > IMP_OPSET_MAX)
        return imp_fail(c, "opset %lld is not supported (supported: %d to %d; convert the model with "
                           "onnx.version_converter)",
                        (long long)opset, IMP_OPSET_MIN, IMP_OPSET_MAX);
    c->opset = (int)opset;
    return NPU_OK;
}

npu_status imp_load_onnx_buffer(const void *data, size_t size, const char *path, const imp_options *opt,
                                npu_alloc alloc, ir_graph **out, npu_err *err)
{
    imp_ctx ctx = {.path = path, .opt = opt, .err = err}, *c = &ctx;
    *out = NULL;
    if (size == 0)
        return imp_fail(c, "the file is empty");
    npu_status st = imp_wire_check(c, data, size);
    if (st)
        return st;
    pb_alloc pa = {.a = alloc};
    ProtobufCAllocator pballoc = {pb_alloc_fn, pb_free_fn, &pa};
    Onnx__ModelProto *m = onnx__model_proto__unpack(&pballoc, size, data);
    if (!m)
        return pa.failed ? imp_oom(c) : imp_fail(c, "not a valid ONNX file (protobuf-c cannot unpack it)");
    st = check_model(c, m);
    int64_t max_nodes = opt && opt->max_nodes > 0 ? opt->max_nodes : IMP_MAX_NODES_DEFAULT;
    if (!st && (int64_t)m->graph->n_node > max_nodes)
        st = imp_fail(c, "%zu nodes, over the limit of %lld nodes per graph (--max-nodes)", m->graph->n_node,
                      (long long)max_nodes);
    if (!st) {
        c->gp = m->graph;
        if (!(c->g = ir_graph_new(alloc)))
            st = imp_oom(c);
    }
    if (!st) {
        c->g->opset = c->opset;
        st = imp_build_graph(c);
    }
    onnx__model_proto__free_unpacked(m, &pballoc);
    if (st) {
        ir_graph_free(c->g);
        /* names from a corrupt file may hold control bytes: keep the terminal sane */
        for (char *p = err ? err->msg : ""; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '?';
        return st;
    }
    *out = c->g;
    return NPU_OK;
}

npu_status imp_load_onnx(const char *path, const imp_options *opt, npu_alloc alloc, ir_graph **out, npu_err *err)
{
    *out = NULL;
    void *buf;
    size_t size;
    npu_status st = npu_read_file_ex(path, opt ? &opt->files : NULL, alloc, &buf, &size, err);
    if (st != NPU_OK)
        return st;
    st = imp_load_onnx_buffer(buf, size, path, opt, alloc, out, err);
    npu_free_file(alloc, buf, size);
    return st;
}
