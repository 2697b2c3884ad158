/* Graph IR: tensors, nodes with typed attributes, a graph kept in
 * topological order. Everything of one graph lives in its arena.
 * Semantics are ONNX's (NCHW) until the quantizer rewrites dtypes. */
#ifndef NPU_IR_H
#define NPU_IR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/alloc.h"
#include "common/status.h"

#define IR_MAX_RANK 8

typedef enum ir_dtype {
    IR_F32,
    IR_F16,
    IR_I64,
    IR_I32,
    IR_I16,
    IR_I8,
    IR_U8,
    IR_I4,
    IR_U4,
    IR_BOOL,
    IR_DTYPE_COUNT
} ir_dtype;

const char *ir_dtype_name(ir_dtype dt);
/* Storage bits of one element (4 for the packed int4 types). */
int ir_dtype_bits(ir_dtype dt);

typedef enum ir_op {
#define IR_OP(id, name) IR_OP_##id,
#include "ir/ops.def"
#undef IR_OP
    IR_OP_COUNT
} ir_op;

const char *ir_op_name(ir_op op);
/* IR_OP_COUNT when the name is not an op we know. */
ir_op ir_op_from_name(const char *onnx_name);
/* Reshape, Flatten, Squeeze, Unsqueeze, Identity: the output is the input's
 * bytes under another shape (partition, memory plan, tiler and emitter all
 * treat them as moving nothing). */
bool ir_op_is_view(ir_op op);

/* Quantization parameters: per tensor (axis == -1, count == 1) or per
 * channel along axis (count == dims[axis]). real = scale * (q - zero_point). */
typedef struct ir_quant {
    int axis;
    int count;
    float *scale;
    int32_t *zero_point;
} ir_quant;

enum {
    IR_TENSOR_INPUT = 1 << 0,  /* a graph input */
    IR_TENSOR_OUTPUT = 1 << 1, /* a graph output */
    IR_TENSOR_INT4_CODES = 1 << 2, /* an IR_I8 activation holding int4 codes (-8..7), one per byte */
};

typedef struct ir_node ir_node;

typedef struct ir_tensor {
    int id;
    const char *name;
    ir_dtype dtype;
    int rank;
    int64_t dims[IR_MAX_RANK];
    bool shape_known;  /* set by shape inference (or for constants/inputs) */
    void *data;        /* constant payload, NULL for activations */
    ir_quant *quant;   /* NULL until quantized */
    ir_node *producer; /* NULL for inputs and constants */
    unsigned flags;
} ir_tensor;

typedef enum ir_attr_kind {
    IR_ATTR_INT,
    IR_ATTR_FLOAT,
    IR_ATTR_STRING,
    IR_ATTR_INTS,
    IR_ATTR_FLOATS,
    IR_ATTR_TENSOR,
} ir_attr_kind;

typedef struct ir_attr {
    const char *name;
    ir_attr_kind kind;
    int64_t i;
    float f;
    const char *s;
    int n; /* element count of ints / floats */
    int64_t *ints;
    float *floats;
    ir_tensor *t; /* IR_ATTR_TENSOR: not registered in the graph */
} ir_attr;

/* An activation fused into its producer by opt/fuse. */
typedef enum ir_act_kind {
    IR_ACT_NONE,
    IR_ACT_RELU,
    IR_ACT_CLIP,       /* min(max(x, lo), hi): Relu6 is CLIP 0..6 */
    IR_ACT_LEAKY_RELU, /* x < 0 ? alpha * x : x */
} ir_act_kind;

typedef struct ir_act {
    ir_act_kind kind;
    float lo, hi, alpha;
} ir_act;

typedef enum ir_unit { IR_UNIT_HOST, IR_UNIT_NPU } ir_unit;

struct ir_node {
    int id;
    ir_op op;
    const char *name;    /* the ONNX node name, or a generated "op_N" */
    int n_inputs;
    ir_tensor **inputs;  /* an omitted optional input is NULL */
    int n_outputs;
    ir_tensor **outputs;
    int n_attrs;
    ir_attr *attrs;
    ir_act act;
    ir_unit unit;            /* set by src/partition */
    const char *unit_reason; /* why it runs on the host (NULL on the NPU) */
    bool dead;           /* marked by rewrites; ir_graph_compact removes it */
};

typedef struct ir_graph {
    npu_arena *arena;
    npu_alloc alloc;
    const char *name;
    int opset;           /* default-domain opset of the source model */
    int n_tensors, cap_tensors;
    ir_tensor **tensors;
    int n_nodes, cap_nodes;
    ir_node **nodes;     /* topological order (see ir_graph_toposort) */
    int n_inputs;
    ir_tensor **inputs;
    int n_outputs;
    ir_tensor **outputs;
    struct ir_name_map *names; /* tensor name -> tensor */
} ir_graph;

ir_graph *ir_graph_new(npu_alloc alloc);
void ir_graph_free(ir_graph *g);

/* A new tensor; name may be NULL for a generated "t_N". rank/dims may be 0/NULL
 * when the shape is not known yet. Names are unique: returns NULL (and does
 * nothing) when the name exists or memory runs out. */
ir_tensor *ir_tensor_new(ir_graph *g, const char *name, ir_dtype dt, int rank, const int64_t *dims);
ir_tensor *ir_graph_find(const ir_graph *g, const char *name);
/* a takes b's name and b a's (a model input keeps its name when another
 * tensor takes its place). */
void ir_swap_names(ir_graph *g, ir_tensor *a, ir_tensor *b);
/* A constant: copies nbytes of data (ir_tensor_bytes) into the arena. */
ir_tensor *ir_const_new(ir_graph *g, const char *name, ir_dtype dt, int rank, const int64_t *dims,
                        const void *data);
void ir_tensor_set_shape(ir_tensor *t, int rank, const int64_t *dims);
int64_t ir_tensor_numel(const ir_tensor *t);
size_t ir_tensor_bytes(const ir_tensor *t); /* rounded up to whole bytes */
bool ir_shape_equal(const ir_tensor *a, const ir_tensor *b);

/* A node appended at the end of the node list; call ir_graph_toposort after
 * inserting out of order. Sets producer of the outputs. */
ir_node *ir_node_new(ir_graph *g, ir_op op, const char *name, int n_in, ir_tensor *const *in, int n_out,
                     ir_tensor *const *out);
/* Replaces every use of old by new in live nodes and graph outputs. */
void ir_replace_uses(ir_graph *g, ir_tensor *old_t, ir_tensor *new_t);
/* Number of live nodes reading t (plus 1 if t is a graph output). */
int ir_use_count(const ir_graph *g, const ir_tensor *t);

/* Attributes. set_* replace an attribute of the same name. */
ir_attr *ir_set_int(ir_graph *g, ir_node *n, const char *name, int64_t v);
ir_attr *ir_set_float(ir_graph *g, ir_node *n, const char *name, float v);
ir_attr *ir_set_string(ir_graph *g, ir_node *n, const char *name, const char *v);
ir_attr *ir_set_ints(ir_graph *g, ir_node *n, const char *name, int count, const int64_t *v);
ir_attr *ir_set_floats(ir_graph *g, ir_node *n, const char *name, int count, const float *v);
ir_attr *ir_set_tensor(ir_graph *g, ir_node *n, const char *name, ir_tensor *t);
const ir_attr *ir_attr_find(const ir_node *n, const char *name);
int64_t ir_attr_int(const ir_node *n, const char *name, int64_t def);
float ir_attr_float(const ir_node *n, const char *name, float def);
const char *ir_attr_string(const ir_node *n, const char *name, const char *def);
/* Number of ints, copying at most max into out; -1 when absent. */
int ir_attr_ints(const ir_node *n, const char *name, int64_t *out, int max);

/* Sorts nodes topologically (stable: keeps the current order where it can).
 * A cycle is an error naming a node on it. */
npu_status ir_graph_toposort(ir_graph *g, npu_err *err);
/* Drops dead nodes and tensors nothing refers to; renumbers ids. */
void ir_graph_compact(ir_graph *g);
/* Checks invariants (every input produced earlier or constant/graph input,
 * producers consistent, shapes known); used by tests and --verify. */
npu_status ir_graph_verify(const ir_graph *g, npu_err *err);

/* Human-readable dump, one node per line:
 *   %conv1 = Conv(%x:f32[1,3,224,224], %w:f32[...] const) {strides=[2,2]} -> f32[1,32,112,112] */
void ir_dump(const ir_graph *g, FILE *out);

/* Binary form of a graph (the .npub "graph" section that `npuref MODEL.npub`
 * runs): every live node and referenced tensor with data, quantization and
 * attributes. Little-endian, versioned; the reader checks every size against
 * the buffer and reports the byte offset of what is wrong. */
npu_status ir_serialize(const ir_graph *g, npu_alloc alloc, void **out, size_t *out_size, npu_err *err);
npu_status ir_deserialize(const void *buf, size_t size, npu_alloc alloc, ir_graph **out, npu_err *err);
/* Where each record of the section starts: tensor_at[id], node_at[i] (byte
 * offsets in the section), so that later checks of the graph can name the
 * place. Lives in the graph's arena. */
typedef struct ir_serial_map {
    int n_tensors, n_nodes;
    size_t *tensor_at;
    size_t *node_at;
} ir_serial_map;
npu_status ir_deserialize_map(const void *buf, size_t size, npu_alloc alloc, ir_graph **out,
                              const ir_serial_map **map, npu_err *err);

/* Shape inference for one node (src/ir/shape.c): sets dtype and dims of its
 * outputs from its inputs and attributes. Errors name the node and op. Inputs
 * whose values matter for the shape (Reshape's shape, Slice's starts, ...)
 * must be constant by then. */
npu_status ir_infer_node(ir_graph *g, ir_node *n, npu_err *err);
npu_status ir_infer_shapes(ir_graph *g, npu_err *err);
/* ONNX TensorProto.DataType number to ir_dtype (Cast's "to", the importer);
 * false for types the IR does not have. */
bool ir_dtype_from_onnx(int onnx_type, ir_dtype *out);

#endif
