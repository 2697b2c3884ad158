/* ONNX importer: ModelProto (protobuf-c, generated from the system's
 * onnx.proto at build time) to graph IR with every shape inferred. */
#ifndef NPU_IMPORT_H
#define NPU_IMPORT_H

#include "ir/ir.h"

/* --input-shape NAME=1x3x224x224: fixes a dynamic dimension of an input. */
typedef struct imp_input_shape {
    const char *name;
    int rank;
    int64_t dims[IR_MAX_RANK];
} imp_input_shape;

typedef struct imp_options {
    int n_input_shapes;
    const imp_input_shape *input_shapes;
} imp_options;

/* Parses "NAME=1x3x224x224" (the command-line form). */
npu_status imp_parse_input_shape(const char *spec, imp_input_shape *out, npu_err *err);

/* Loads path into a new graph (*out, freed with ir_graph_free). Errors start
 * with the path and name the node and op type where one is involved. */
npu_status imp_load_onnx(const char *path, const imp_options *opt, npu_alloc alloc, ir_graph **out,
                         npu_err *err);
/* The same from bytes in memory; path is only used in messages. */
npu_status imp_load_onnx_buffer(const void *data, size_t size, const char *path, const imp_options *opt,
                                npu_alloc alloc, ir_graph **out, npu_err *err);

#endif
