/* The reference adapters' node -> kernel-parameter readers, shared with
 * the host-step emitter (src/emit/hostops_node.c) so that a host step runs
 * the kernel on exactly the parameters npuref uses. in[] is the nodes'
 * input data where a parameter comes from an input (constants when
 * compiled). */
#ifndef NPU_REF_PARAMS_H
#define NPU_REF_PARAMS_H

#include "kernels/kernels.h"
#include "ref/ref.h"

/* The nk_binop of Add, Sub, Mul, Div, Pow, Max, Min, PRelu (the reference's and the host NODE records'). */
nk_binop ref_binop(ir_op op);
npu_status ref_conv_params(const ir_node *n, bool transpose, nk_conv_params *p, npu_err *err);
npu_status ref_gemm_params(const ir_node *n, nk_gemm_params *p, npu_err *err);
npu_status ref_matmul_params(const ir_node *n, nk_matmul_params *p, npu_err *err);
npu_status ref_pool_params(const ir_node *n, nk_pool_params *p, npu_err *err);
npu_status ref_global_pool_params(const ir_node *n, nk_global_pool_params *p, npu_err *err);
npu_status ref_resize_params(const ir_node *n, const void *const *in, nk_resize_params *p, npu_err *err);
npu_status ref_slice_params(const ir_node *n, const void *const *in, const ir_tensor *x, nk_slice_params *p,
                            npu_err *err);
/* p->value is left unset: *value holds the constant (es bytes). */
npu_status ref_pad_params(const ir_node *n, const void *const *in, size_t es, nk_pad_params *p, uint64_t *value,
                          npu_err *err);

#endif
