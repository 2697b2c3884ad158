/* Target-independent graph rewrites (docs/opt.md). Each pass is a file in
 * src/opt/; src/opt/pipeline.c lists them, in order, in one table. Every pass
 * keeps the graph valid (ir_graph_verify holds after it) and compacted. */
#ifndef NPU_OPT_H
#define NPU_OPT_H

#include <stdbool.h>

#include "ir/ir.h"

/* Called after a pass ran (the driver's --dump-after=PASS). Passes of the
 * fixpoint group run several rounds: the callback sees a pass's first round
 * and every later round that changed the graph. */
typedef void (*opt_after_pass_fn)(void *ud, const char *pass, const ir_graph *g);

typedef struct opt_options {
    opt_after_pass_fn after_pass; /* NULL: none */
    void *ud;
    /* Comma-separated pass names to skip ("cse,fuse_act"); NULL or "" skips
     * none. An unknown name is an NPU_EUSAGE error listing the known ones. */
    const char *disable;
    /* Run ir_graph_verify after every pass (tests, --verify); a failure is
     * NPU_EINTERNAL naming the pass. */
    bool verify;
    /* constfold does not create a constant larger than this (bytes) when it
     * would grow constant storage, unless a consumer needs its value at
     * compile time (a shape input). 0: OPT_FOLD_LIMIT_DEFAULT. */
    size_t fold_limit_bytes;
} opt_options;

#define OPT_FOLD_LIMIT_DEFAULT ((size_t)64 * 1024)

/* Runs the default pipeline (opts may be NULL: defaults). */
npu_status opt_run(ir_graph *g, const opt_options *opts, npu_err *err);

/* Runs one pass by name, once (tests, tools). *changed (may be NULL) says
 * whether the graph changed. An unknown name is NPU_EUSAGE. */
npu_status opt_run_pass(ir_graph *g, const char *name, const opt_options *opts, bool *changed, npu_err *err);

/* On the quantized graph (after src/quantize): an elementwise node whose
 * inputs are one int8 tensor y and npu.Luts of y (SiLU: Mul(y, Lut(y)))
 * becomes one npu.Lut of y, bit-identical (src/opt/fuse_lut.c). */
npu_status opt_fuse_lut(ir_graph *g, bool *changed, npu_err *err);

/* Can the target's NPU average-pool a kh x kw window at this stride? */
typedef bool (*opt_pool_ok_fn)(void *ud, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w);

/* Target-dependent, on the float graph before calibration: a
 * GlobalAveragePool whose window `ok` refuses becomes an AveragePool over
 * equal blocks and the global pool of the block means, where `ok` takes
 * both (src/opt/split_pool.c). */
npu_status opt_split_pool(ir_graph *g, opt_pool_ok_fn ok, void *ud, bool *changed, npu_err *err);

/* The pass names in pipeline order, NULL-terminated. */
const char *const *opt_pass_names(void);
bool opt_pass_exists(const char *name);

#endif
