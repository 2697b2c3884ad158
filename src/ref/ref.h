/* Reference executor: runs an IR graph (float, or quantized after
 * src/quantize) on the portable kernels in kernels/. It is the float oracle
 * (npuref MODEL.onnx), the integer oracle (npuref MODEL.npub), the constant
 * folder, and the calibration engine (through the observer hook). */
#ifndef NPU_REF_H
#define NPU_REF_H

#include "ir/ir.h"

/* One op's adapter from IR node to kernel call. in[i]/out[i] are the data of
 * n->inputs[i]/n->outputs[i] (NULL for an omitted optional input), laid out
 * densely in C order with the tensors' dtypes. scratch holds at least
 * scratch_bytes(n) bytes. */
typedef npu_status (*ref_kernel_fn)(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                                    npu_err *err);
typedef size_t (*ref_scratch_fn)(const ir_node *n);
/* Part `part` of `parts` of run's outputs (a layer split across threads):
 * the parts together write what run writes, bit for bit, each with its own
 * scratch of scratch_bytes(n). */
typedef npu_status (*ref_part_fn)(const ir_node *n, const void *const *in, void *const *out, void *scratch,
                                  const void *pack, int part, int parts, npu_err *err);
/* Bytes of the node's constant weights packed ahead once per context (0:
 * none), and the packing; run_part then gets them as `pack`. */
typedef size_t (*ref_pack_size_fn)(const ir_node *n);
typedef void (*ref_pack_fn)(const ir_node *n, void *dst);
/* The node's multiply-accumulates: whether splitting it pays. */
typedef int64_t (*ref_work_fn)(const ir_node *n);

typedef struct ref_op_entry {
    ir_op op;
    ref_kernel_fn run;
    ref_scratch_fn scratch_bytes; /* NULL: needs none */
} ref_op_entry;

/* The entries whose run can be split across threads: by their run. */
typedef struct ref_split_entry {
    ref_kernel_fn run;
    ref_part_fn run_part;
    ref_work_fn work;
    ref_pack_size_fn pack_size; /* NULL: nothing to pack */
    ref_pack_fn pack;
} ref_split_entry;

/* Entry tables, one per family file, each ended by {IR_OP_COUNT}. */
extern const ref_op_entry ref_ops_nn[];    /* src/ref/ops_nn.c: conv, gemm, matmul, pools, bn, resize */
extern const ref_op_entry ref_ops_elem[];  /* src/ref/ops_elem.c: unary, binary, softmax, reduce */
extern const ref_op_entry ref_ops_shape[]; /* src/ref/ops_shape.c: concat, slice, transpose, gather, ... */
extern const ref_op_entry ref_ops_quant[]; /* src/ref/ops_quant.c: integer ops of the quantized graph */
extern const ref_op_entry ref_ops_norm[];  /* src/ref/ops_norm.c: Gelu, LayerNormalization, npu.Softmax, npu.LayerNorm */
extern const ref_op_entry ref_ops_qnorm[]; /* src/ref/ops_norm.c: integer ReduceMean */
extern const ref_op_entry ref_ops_qdq[];   /* src/ref/ops_qdq.c: QuantizeLinear, DequantizeLinear */
extern const ref_split_entry ref_split_nn[]; /* src/ref/ops_nn.c: Conv, Gemm; ended by {NULL} */

/* The float (or dtype-generic) entry for an op, or NULL. */
const ref_op_entry *ref_lookup(ir_op op);
/* The entry that runs this node: the integer one from ref_ops_quant when its
 * first input is quantized, else ref_lookup(n->op). NULL when none. */
const ref_op_entry *ref_lookup_node(const ir_node *n);

/* Evaluates one node whose inputs are all constant and gives its outputs
 * constant data in the graph's arena (constant folding, import-time shape
 * chains). Output shapes must be inferred first. */
npu_status ref_eval_node(ir_graph *g, ir_node *n, npu_err *err);

/* Called after each node with each of its outputs (calibration observers). */
typedef void (*ref_observer_fn)(void *ud, const ir_node *n, const ir_tensor *t, const void *data);

typedef struct ref_ctx ref_ctx;

/* Prepares buffers for every activation of g and packs its constant Conv
 * weights (g must outlive the context; its constants must not change while
 * the context lives). */
ref_ctx *ref_ctx_new(const ir_graph *g, npu_alloc alloc, npu_err *err);
void ref_ctx_free(ref_ctx *ctx);
void ref_ctx_set_observer(ref_ctx *ctx, ref_observer_fn fn, void *ud);
/* Threads that large layers are split across (default ref_default_threads();
 * 1: none). Outputs are bit for bit the same for any count. */
npu_status ref_ctx_set_threads(ref_ctx *ctx, int threads, npu_err *err);
/* NPUCC_THREADS when it is a positive count, else the online processors. */
int ref_default_threads(void);
/* One inference: inputs[i] holds g->inputs[i] data, outputs[i] receives
 * g->outputs[i] (both dense, C order, tensor dtype). */
npu_status ref_ctx_run(ref_ctx *ctx, const void *const *inputs, void *const *outputs, npu_err *err);

/* Gives inference k's input and output buffers (as ref_ctx_run takes them). */
typedef void (*ref_batch_io_fn)(void *ud, int64_t k, const void **inputs, void **outputs);
/* Inferences 0 .. runs-1 on up to `threads` contexts side by side (src/ref/
 * ref_batch.c), each inference whole on one context: the outputs are those
 * of one ref_ctx_run each, whatever the thread count. On failure, the first
 * failing inference's error. */
npu_status ref_run_batch(const ir_graph *g, npu_alloc alloc, int threads, int64_t runs, ref_batch_io_fn io,
                         void *ud, npu_err *err);

#endif
