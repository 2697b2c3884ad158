/* The rewrite pipeline: the passes in order, in one table (docs/opt.md).
 * The cleanup group repeats until a round changes nothing: folding a
 * constant can expose a no-op reshape, a merged node can make another fold,
 * and so on. The fusions then run once on the cleaned graph, bnfold before
 * fuse_act so that Conv-BN-Relu ends as one Conv with a fused Relu. */
#include "opt/opt_internal.h"

#include <string.h>

enum { GROUP_CLEANUP, GROUP_FUSE };
enum { MAX_ROUNDS = 16 }; /* a guard only: real graphs settle in two or three */

/* X(name, group): the pipeline, in order.
 *   elide_identity  Identity, Dropout, no-op reshapes removed
 *   constfold       all-constant nodes evaluated (Shape from static shapes)
 *   views           reshape-likes become Reshape(x, constant), chains merged
 *   cse             equal constants, then equal nodes, merged
 *   dce             unused nodes and tensors dropped
 *   fuse_norm       GELU and LayerNorm as PyTorch exports them into Gelu, LayerNormalization
 *   fuse_hswish     Mul(x, HardSigmoid(x)) with HardSwish's constants into HardSwish
 *   reduce_gap      ReduceMean over H and W of NCHW becomes GlobalAveragePool
 *   padfold         a zero Pad on H/W into the Conv/AveragePool reading it
 *   bnfold          BatchNormalization into the Conv/ConvTranspose/Gemm before it
 *   bnconv          a BatchNormalization left over becomes a depthwise 1x1 Conv
 *   gemm_bias       a Gemm's C that is not one value per column: a row of beta * C, or an Add after it
 *   fuse_act        Relu/Clip/LeakyRelu into their producer's ir_act
 *   pool_concat     a max pool of a channel concat becomes the concat of each input's max pool */
#define OPT_PASSES(X)                                                                                      \
    X(elide_identity, GROUP_CLEANUP)                                                                       \
    X(constfold, GROUP_CLEANUP)                                                                            \
    X(views, GROUP_CLEANUP)                                                                                \
    X(cse, GROUP_CLEANUP)                                                                                  \
    X(dce, GROUP_CLEANUP)                                                                                  \
    X(fuse_norm, GROUP_FUSE)                                                                               \
    X(fuse_hswish, GROUP_FUSE)                                                                             \
    X(reduce_gap, GROUP_FUSE)                                                                              \
    X(padfold, GROUP_FUSE)                                                                                 \
    X(bnfold, GROUP_FUSE)                                                                                  \
    X(bnconv, GROUP_FUSE)                                                                                  \
    X(gemm_bias, GROUP_FUSE)                                                                               \
    X(fuse_act, GROUP_FUSE)                                                                            \
    X(pool_concat, GROUP_FUSE)

static const struct pass {
    const char *name;
    opt_pass_fn run;
    int group;
} passes[] = {
#define X(name, group) {#name, opt_##name, group},
    OPT_PASSES(X)
#undef X
};
enum { N_PASSES = sizeof passes / sizeof passes[0] };

static const char *const pass_names[] = {
#define X(name, group) #name,
    OPT_PASSES(X)
#undef X
    NULL,
};

const char *const *opt_pass_names(void)
{
    return pass_names;
}

static const struct pass *find_pass(const char *name, size_t len)
{
    for (int i = 0; i < N_PASSES; i++)
        if (strlen(passes[i].name) == len && strncmp(passes[i].name, name, len) == 0)
            return &passes[i];
    return NULL;
}

bool opt_pass_exists(const char *name)
{
    return name && find_pass(name, strlen(name));
}

static npu_status unknown_pass(const char *name, size_t len, npu_err *err)
{
    char list[256] = "";
    for (int i = 0; i < N_PASSES; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, passes[i].name, sizeof list - strlen(list) - 1);
    }
    return npu_fail(err, NPU_EUSAGE, "unknown pass '%.*s' (passes: %s)", (int)len, name, list);
}

/* disabled[i] for each pass named in the comma-separated list */
static npu_status parse_disabled(const char *list, bool *disabled, npu_err *err)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len) {
            const struct pass *ps = find_pass(p, len);
            if (!ps)
                return unknown_pass(p, len, err);
            disabled[ps - passes] = true;
        }
        p += len + (p[len] == ',');
    }
    return NPU_OK;
}

static npu_status run_one(ir_graph *g, const struct pass *ps, const opt_options *o, bool *changed, npu_err *err)
{
    *changed = false;
    npu_status st = ps->run(g, o, changed, err);
    if (st != NPU_OK)
        return st;
    if (o && o->verify && (st = ir_graph_verify(g, err)) != NPU_OK)
        return npu_err_prefix(err, "graph invalid after pass '%s'", ps->name);
    return NPU_OK;
}

npu_status opt_run_pass(ir_graph *g, const char *name, const opt_options *opts, bool *changed, npu_err *err)
{
    const struct pass *ps = name ? find_pass(name, strlen(name)) : NULL;
    if (!ps)
        return unknown_pass(name ? name : "", name ? strlen(name) : 0, err);
    bool dummy;
    return run_one(g, ps, opts, changed ? changed : &dummy, err);
}

npu_status opt_run(ir_graph *g, const opt_options *opts, npu_err *err)
{
    bool disabled[N_PASSES] = {0};
    npu_status st = parse_disabled(opts ? opts->disable : NULL, disabled, err);
    if (st != NPU_OK)
        return st;
    for (int group = GROUP_CLEANUP; group <= GROUP_FUSE; group++) {
        int rounds = group == GROUP_CLEANUP ? MAX_ROUNDS : 1;
        for (int round = 0; round < rounds; round++) {
            bool any = false;
            for (int i = 0; i < N_PASSES; i++) {
                if (passes[i].group != group || disabled[i])
                    continue;
                bool changed;
                if ((st = run_one(g, &passes[i], opts, &changed, err)) != NPU_OK)
                    return st;
                any |= changed;
                if (opts && opts->after_pass && (round == 0 || changed))
                    opts->after_pass(opts->ud, passes[i].name, g);
            }
            if (!any)
                break;
        }
    }
    return NPU_OK;
}
