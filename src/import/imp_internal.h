/* Importer internals shared by the files of src/import; not for other modules. */
#ifndef NPU_IMP_INTERNAL_H
#define NPU_IMP_INTERNAL_H

#include "import/import.h"
#include "onnx/onnx.pb-c.h"

/* Largest element count of a tensor the importer accepts (as shape.c). */
#define IMP_MAX_NUMEL ((int64_t)1 << 40)
/* ModelProto ir_version range. IR 3 introduced opset_import; the system's
 * onnx.proto is IR 8, and IR 9 to 11 only add types and fields that opsets
 * 11 to 17 do not use. A later IR may carry fields protobuf-c would skip. */
#define IMP_IR_VERSION_MIN 3
#define IMP_IR_VERSION_MAX 11
/* Import-time folding evaluates a node only when its outputs fit in this. */
#define IMP_FOLD_MAX_BYTES ((size_t)64 << 20)

typedef struct imp_ctx {
    const char *path;
    const imp_options *opt;
    ir_graph *g;
    npu_err *err;
    int opset;
    const Onnx__GraphProto *gp;
} imp_ctx;

/* "PATH: MSG" as a user error. */
npu_status imp_fail(imp_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "PATH: node 'NAME' (OP, opset N): MSG" as a user error. */
npu_status imp_node_fail(imp_ctx *c, const char *node, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
npu_status imp_oom(imp_ctx *c);

/* imp_wire.c: bounds the nesting depth and explains a truncated or
 * corrupt file (byte offsets, field names) before protobuf-c unpacks it. */
npu_status imp_wire_check(imp_ctx *c, const void *data, size_t size);

/* imp_tensor.c: TensorProto data and ValueInfo types. */
const char *imp_onnx_dtype_name(int onnx_type);
/* A constant from a TensorProto: registered in the graph under name when
 * reg is true, else a free-standing tensor for an attribute. what names it
 * in messages ("initializer 'w'"). */
npu_status imp_tensor(imp_ctx *c, const Onnx__TensorProto *tp, const char *name, bool reg, const char *what,
                      ir_tensor **out);

/* imp_schema.c: per-op, per-opset inputs, outputs and attributes. */
/* Checks op support, arity and attributes of an ONNX node; *op receives
 * the IR op. name is the node's (possibly generated) name. */
npu_status imp_check_node(imp_ctx *c, const Onnx__NodeProto *np, const char *name, ir_op *op);
/* Converts the (already checked) attributes onto an IR node. */
npu_status imp_convert_attrs(imp_ctx *c, const Onnx__NodeProto *np, ir_node *n);

/* imp_graph.c: the graph from a GraphProto, shapes inferred, constants folded. */
npu_status imp_build_graph(imp_ctx *c);

#endif
