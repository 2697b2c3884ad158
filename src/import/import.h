/* ONNX importer: ModelProto (protobuf-c, generated from the system's
 * onnx.proto at build time) to graph IR with every shape inferred.
 * What is accepted and how it is normalized: docs/import.md. */
#ifndef NPU_IMPORT_H
#define NPU_IMPORT_H

#include "common/file.h"
#include "ir/ir.h"

/* Default-domain opsets the importer accepts. */
#define IMP_OPSET_MIN 11
#define IMP_OPSET_MAX 17
#define IMP_NAME_MAX 256

/* --input-shape NAME=1x3x224x224: fixes the dynamic dimensions of an input. */
typedef struct imp_input_shape {
    char name[IMP_NAME_MAX];
    int rank;
    int64_t dims[IR_MAX_RANK];
} imp_input_shape;

/* The most nodes a graph may have (--max-nodes): the compile-time limit
 * on graph size, checked before any node is built. */
#define IMP_MAX_NODES_DEFAULT 1000000

typedef struct imp_options {
    int n_input_shapes;
    const imp_input_shape *input_shapes;
    npu_read_opts files; /* the model file: regular only unless allowed, the read cap */
    int64_t max_nodes;   /* 0: IMP_MAX_NODES_DEFAULT */
} imp_options;

/* Parses "NAME=1x3x224x224" (the command-line form; the last '=' separates
 * the name, so names may contain '='). */
npu_status imp_parse_input_shape(const char *spec, imp_input_shape *out, npu_err *err);

/* Loads path into a new graph (*out, freed with ir_graph_free). Errors start
 * with the path and name the node and op type where one is involved.
 * opt may be NULL. */
npu_status imp_load_onnx(const char *path, const imp_options *opt, npu_alloc alloc, ir_graph **out,
                         npu_err *err);
/* The same from bytes in memory; path is only used in messages. */
npu_status imp_load_onnx_buffer(const void *data, size_t size, const char *path, const imp_options *opt,
                                npu_alloc alloc, ir_graph **out, npu_err *err);

#endif
