/* Internal to src/emit/hostops*.c: the record builder shared by the
 * dispatcher (hostops.c), the quantized kernels (hostops_quant.c) and the
 * float fallbacks (hostops_float.c). */
#ifndef NPU_EMIT_HOSTOPS_INTERNAL_H
#define NPU_EMIT_HOSTOPS_INTERNAL_H

#include "emit/hostops.h"
#include "kernels/kernels.h"
#include "rt/npurt_ops.h"

/* A record under construction: 32-bit words, grown through the graph's allocator. */
typedef struct emit_hop_buf {
    npu_alloc alloc;
    uint32_t *w;
    size_t n, cap; /* words */
} emit_hop_buf;

typedef struct emit_hop {
    const ir_graph *g;
    const ir_node *n;
    const emit_tensor_map *map;
    emit_hop_buf rb;
    const char *why; /* static reason of a failure, for emit_host_supports */
    npu_err *err;
} emit_hop;

extern const char *const emit_hop_why_params;

static inline bool emit_hop_fits_i32(int64_t v)
{
    return v >= 0 && v <= INT32_MAX;
}

/* Appends bytes (a multiple of 4) to the record. */
npu_status emit_hop_put(emit_hop *b, const void *data, size_t bytes);
/* Fails with a static reason (kept for emit_host_supports). */
npu_status emit_hop_unsupported(emit_hop *b, const char *why);
/* The header and tensor slots; t[i] NULL for an omitted optional input. */
npu_status emit_hop_begin(emit_hop *b, npurt_kernel k, int n_in, int n_out, const ir_tensor *const *t);
npu_status emit_hop_shape(emit_hop *b, const ir_tensor *t, npurt_p_shape *r);
npurt_p_act emit_hop_act(ir_act a);
npu_status emit_hop_copy(emit_hop *b);

/* hostops_quant.c: nodes whose first input is quantized */
npu_status emit_hop_qconv(emit_hop *b);
npu_status emit_hop_qfc(emit_hop *b);
npu_status emit_hop_qbmm(emit_hop *b);
npu_status emit_hop_qpool(emit_hop *b, npurt_kernel k);
npu_status emit_hop_qbinary(emit_hop *b);
npu_status emit_hop_qrequant(emit_hop *b);
npu_status emit_hop_qlut(emit_hop *b);
npu_status emit_hop_qconcat(emit_hop *b);

/* hostops_float.c: f32 ops */
bool emit_hop_all_f32(const ir_node *n, int n_in);
npu_status emit_hop_softmax(emit_hop *b);
/* -1 when op is not a unary op of the host kernels */
int emit_hop_unary_op(ir_op op);
npu_status emit_hop_unary(emit_hop *b, int unary_op);
npu_status emit_hop_binary(emit_hop *b);
npu_status emit_hop_reduce(emit_hop *b);

/* hostops_node.c: every other op npuref runs, as a NODE record */
npu_status emit_hop_node(emit_hop *b);

#endif
