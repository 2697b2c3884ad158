/* Shared by the passes of src/opt/ only; other modules use opt.h. */
#ifndef NPU_OPT_INTERNAL_H
#define NPU_OPT_INTERNAL_H

#include "opt/opt.h"

/* A pass rewrites g in place, sets *changed when it did anything, and leaves
 * the graph compacted and in topological order. */
typedef npu_status (*opt_pass_fn)(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);

npu_status opt_elide_identity(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_constfold(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_views(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_cse(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_dce(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_padfold(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_bnfold(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_reduce_gap(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_padfold(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_bnconv(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_fuse_norm(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_fuse_act(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_fuse_hswish(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_pool_concat(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);
npu_status opt_gemm_bias(ir_graph *g, const opt_options *o, bool *changed, npu_err *err);

/* An inference BatchNormalization as y = x * s + t per channel (bnfold.c):
 * false when it is not one (training_mode, non-constant or non-f32
 * parameters, a used mean/var output). s, t in the graph's arena. */
typedef struct opt_bn_coef {
    int64_t c;     /* channels */
    double *s, *t; /* per channel scale and shift */
} opt_bn_coef;
bool opt_bn_coefficients(ir_graph *g, const ir_node *bn, opt_bn_coef *k);

/* ---- helpers (src/opt/util.c) ---- */

/* A compile-time constant: has data and is not a graph input (which the
 * caller may override). */
bool opt_is_const(const ir_tensor *t);
bool opt_is_graph_output(const ir_graph *g, const ir_tensor *t);
/* A constant integer tensor (i64 or i32) as int64: its element count, copying
 * at most max; -1 when t is not one. */
int opt_const_ints(const ir_tensor *t, int64_t *out, int max);
/* A constant one-element float tensor. */
bool opt_const_scalar(const ir_tensor *t, float *out);

/* A new constant named "<base>_<suffix>" (or with a number appended until
 * the name is free); copies data when non-NULL. NULL when out of memory. */
ir_tensor *opt_const_new(ir_graph *g, const char *base, const char *suffix, ir_dtype dt, int rank,
                         const int64_t *dims, const void *data);

/* Node n computes out == in (same dtype and shape): removes n, rewiring its
 * readers to in, or, when out is a graph output, renaming in's producer's
 * result to out so the output keeps its name. False (nothing done) when
 * neither is possible. */
bool opt_bypass(ir_graph *g, ir_node *n, ir_tensor *in, ir_tensor *out);

/* The only live node reading t when exactly one does and t is not a graph
 * output; NULL otherwise. */
ir_node *opt_single_user(const ir_graph *g, const ir_tensor *t);

/* Reshape-like ops: pure reinterpretations of contiguous data. */
bool opt_is_reshape_like(ir_op op);
/* Rewrites n (a reshape-like node with a known output shape) into
 * Reshape(src, <constant of its output dims>), the canonical view. Sets
 * *changed when n was not already that. NPU_EINTERNAL when out of memory. */
npu_status opt_make_static_reshape(ir_graph *g, ir_node *n, ir_tensor *src, bool *changed, npu_err *err);

/* After a reader moved off t: drops t's reshape-like producer, and so on up
 * its chain, while nothing reads them any more. */
void opt_drop_unused_views(ir_graph *g, ir_tensor *t);

/* Replaces the node's inputs by a new array of count entries (arena). */
bool opt_set_inputs(ir_graph *g, ir_node *n, int count, ir_tensor *const *in);

#endif
