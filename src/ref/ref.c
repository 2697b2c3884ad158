/* Reference executor core: op lookup, single-node evaluation, whole-graph runs. */
#include "ref/ref.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/npu_pool.h"

static const ref_op_entry *find_in(const ref_op_entry *table, ir_op op)
{
    for (; table->op != IR_OP_COUNT; table++)
        if (table->op == op)
            return table;
    return NULL;
}

/* A node computes in integers when its first input carries quantization
 * parameters (the quantizer's graph); otherwise in float. */
static bool is_quantized(const ir_node *n)
{
    return n->n_inputs > 0 && n->inputs[0] && n->inputs[0]->quant;
}

const ref_op_entry *ref_lookup_node(const ir_node *n)
{
    if (is_quantized(n)) {
        const ref_op_entry *e = find_in(ref_ops_quant, n->op);
        if (!e)
            e = find_in(ref_ops_qnorm, n->op);
        if (e)
            return e;
    }
    return ref_lookup(n->op);
}

const ref_op_entry *ref_lookup(ir_op op)
{
    const ref_op_entry *e = find_in(ref_ops_nn, op);
    if (!e)
        e = find_in(ref_ops_elem, op);
    if (!e)
        e = find_in(ref_ops_shape, op);
    if (!e)
        e = find_in(ref_ops_qdq, op);
    if (!e)
        e = find_in(ref_ops_norm, op);
    return e;
}

static npu_status run_node(const ir_node *n, const void *const *in, void *const *out, npu_alloc alloc,
                           void **scratch, size_t *scratch_cap, npu_err *err)
{
    const ref_op_entry *e = ref_lookup_node(n);
    if (!e || !e->run)
        return npu_fail(err, NPU_EUSER, "node '%s' (%s): the reference executor cannot run this op", n->name,
                        ir_op_name(n->op));
    size_t need = e->scratch_bytes ? e->scratch_bytes(n) : 0;
    if (need > *scratch_cap) {
        void *p = npu_realloc(alloc, *scratch, *scratch_cap, need);
        if (!p)
            return npu_fail(err, NPU_EINTERNAL, "node '%s' (%s): out of memory for %zu bytes of scratch",
                            n->name, ir_op_name(n->op), need);
        *scratch = p;
        *scratch_cap = need;
    }
    npu_status st = e->run(n, in, out, *scratch, err);
    if (st != NPU_OK && !strstr(err->msg, n->name))
        npu_err_prefix(err, "node '%s' (%s)", n->name, ir_op_name(n->op));
    return st;
}

enum { REF_MAX_IO = 64 };

npu_status ref_eval_node(ir_graph *g, ir_node *n, npu_err *err)
{
    if (n->n_inputs > REF_MAX_IO || n->n_outputs > REF_MAX_IO)
        return npu_fail(err, NPU_EUSER, "node '%s' (%s): too many inputs or outputs", n->name, ir_op_name(n->op));
    const void *in[REF_MAX_IO];
    void *out[REF_MAX_IO];
    for (int i = 0; i < n->n_inputs; i++) {
        ir_tensor *t = n->inputs[i];
        if (t && !t->data)
            return npu_fail(err, NPU_EINTERNAL, "node '%s' (%s): input '%s' is not constant", n->name,
                            ir_op_name(n->op), t->name);
        in[i] = t ? t->data : NULL;
    }
    for (int i = 0; i < n->n_outputs; i++) {
        ir_tensor *t = n->outputs[i];
        out[i] = NULL;
        if (!t)
            continue;
        if (!t->shape_known)
            return npu_fail(err, NPU_EINTERNAL, "node '%s' (%s): output '%s' has no shape", n->name,
                            ir_op_name(n->op), t->name);
        size_t nb = ir_tensor_bytes(t);
        if (!(t->data = npu_arena_alloc(g->arena, nb ? nb : 1)))
            return npu_fail(err, NPU_EINTERNAL, "out of memory folding '%s'", n->name);
        out[i] = t->data;
    }
    void *scratch = NULL;
    size_t cap = 0;
    npu_status st = run_node(n, in, out, g->alloc, &scratch, &cap, err);
    npu_free(g->alloc, scratch, cap);
    if (st != NPU_OK)
        for (int i = 0; i < n->n_outputs; i++)
            if (n->outputs[i])
                n->outputs[i]->data = NULL;
    return st;
}

enum { REF_MAX_PARTS = 64 };

/* Below this many multiply-accumulates a layer runs whole: handing it out
 * costs more than it saves. */
#define REF_SPLIT_MIN_WORK (int64_t)(1 << 20)

struct ref_ctx {
    const ir_graph *g;
    int n_tensors;    /* of g when the context was made */
    npu_alloc alloc;
    void **bufs;      /* per tensor id: constant data, or an activation buffer */
    bool *owned;      /* per tensor id: bufs[i] allocated by the context */
    size_t *sizes;
    void *scratch;    /* part 0's; sized at creation, reused by every inference */
    size_t scratch_cap;
    ref_observer_fn observer;
    void *observer_ud;
    int threads;
    npu_pool *pool;                       /* NULL until a layer is split */
    void *part_scratch[REF_MAX_PARTS];    /* parts 1 ..; [0] unused */
    size_t part_cap[REF_MAX_PARTS];
    npu_err *part_err;                    /* threads of them */
    int n_nodes;                          /* of g when the context was made */
    void **packs;                         /* per node: its weights packed ahead, or NULL */
    size_t *pack_bytes;
};

int ref_default_threads(void)
{
    const char *e = getenv("NPUCC_THREADS");
    char *end;
    long v = e ? strtol(e, &end, 10) : 0;
    if (e && *e && !*end && v > 0)
        return v > REF_MAX_PARTS ? REF_MAX_PARTS : (int)v;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > REF_MAX_PARTS ? REF_MAX_PARTS : (int)n;
}

/* n's entry among the splittable ones (NULL: none); *scratch its scratch
 * size, *splits whether it is large enough to split. */
static const ref_split_entry *split_of(const ir_node *n, size_t *scratch, bool *splits)
{
    const ref_op_entry *e = n->dead ? NULL : ref_lookup_node(n);
    *scratch = e && e->scratch_bytes ? e->scratch_bytes(n) : 0;
    *splits = false;
    for (const ref_split_entry *s = ref_split_nn; e && s->run; s++)
        if (s->run == e->run) {
            *splits = s->work(n) >= REF_SPLIT_MIN_WORK;
            return s;
        }
    return NULL;
}

static void free_parts(ref_ctx *ctx)
{
    npu_pool_free(ctx->pool);
    ctx->pool = NULL;
    for (int i = 1; i < REF_MAX_PARTS; i++) {
        npu_free(ctx->alloc, ctx->part_scratch[i], ctx->part_cap[i]);
        ctx->part_scratch[i] = NULL;
        ctx->part_cap[i] = 0;
    }
    npu_free(ctx->alloc, ctx->part_err, sizeof(npu_err) * (size_t)ctx->threads);
    ctx->part_err = NULL;
}

/* The per-tensor tables have one slot at least (a graph may have no
 * tensors), and are freed with the size they were allocated with. */
static size_t tensor_slots(int n_tensors)
{
    return (size_t)(n_tensors ? n_tensors : 1);
}

void ref_ctx_free(ref_ctx *ctx)
{
    if (!ctx)
        return;
    free_parts(ctx);
    if (ctx->packs)
        for (int k = 0; k < ctx->n_nodes; k++)
            npu_free(ctx->alloc, ctx->packs[k], ctx->pack_bytes[k]);
    npu_free(ctx->alloc, ctx->packs, sizeof(void *) * (size_t)(ctx->n_nodes + 1));
    npu_free(ctx->alloc, ctx->pack_bytes, sizeof(size_t) * (size_t)(ctx->n_nodes + 1));
    if (ctx->bufs)
        for (int i = 0; i < ctx->n_tensors; i++)
            if (ctx->owned[i])
                npu_free(ctx->alloc, ctx->bufs[i], ctx->sizes[i]);
    size_t n = tensor_slots(ctx->n_tensors);
    npu_free(ctx->alloc, ctx->bufs, sizeof(void *) * n);
    npu_free(ctx->alloc, ctx->owned, sizeof(bool) * n);
    npu_free(ctx->alloc, ctx->sizes, sizeof(size_t) * n);
    npu_free(ctx->alloc, ctx->scratch, ctx->scratch_cap);
    npu_free(ctx->alloc, ctx, sizeof *ctx);
}

/* The largest scratch any live node asks for, and that of the splittable ones. */
static void max_scratch(const ir_graph *g, size_t *all, size_t *split)
{
    *all = *split = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        size_t need;
        bool splits;
        split_of(g->nodes[k], &need, &splits);
        *all = need > *all ? need : *all;
        if (splits)
            *split = need > *split ? need : *split;
    }
}

npu_status ref_ctx_set_threads(ref_ctx *ctx, int threads, npu_err *err)
{
    threads = threads < 1 ? 1 : threads > REF_MAX_PARTS ? REF_MAX_PARTS : threads;
    free_parts(ctx);
    ctx->threads = 1;
    if (threads == 1)
        return NPU_OK;
    size_t all, split;
    max_scratch(ctx->g, &all, &split);
    if (!split) /* nothing to split */
        return NPU_OK;
    ctx->part_err = npu_malloc(ctx->alloc, sizeof(npu_err) * (size_t)threads);
    bool ok = ctx->part_err && (ctx->pool = npu_pool_new(threads, ctx->alloc));
    for (int i = 1; ok && i < threads; i++) {
        ctx->part_scratch[i] = npu_malloc(ctx->alloc, split);
        ok = ctx->part_scratch[i] != NULL;
        ctx->part_cap[i] = ok ? split : 0;
    }
    ctx->threads = threads;
    if (!ok) {
        free_parts(ctx);
        ctx->threads = 1;
        return npu_fail(err, NPU_EINTERNAL, "out of memory for %d threads' scratch", threads);
    }
    return NPU_OK;
}

static npu_status ctx_buffers(ref_ctx *ctx, npu_err *err)
{
    const ir_graph *g = ctx->g;
    size_t n = tensor_slots(g->n_tensors);
    ctx->bufs = npu_malloc(ctx->alloc, sizeof(void *) * n);
    ctx->owned = npu_malloc(ctx->alloc, sizeof(bool) * n);
    ctx->sizes = npu_malloc(ctx->alloc, sizeof(size_t) * n);
    if (!ctx->bufs || !ctx->owned || !ctx->sizes) {
        npu_free(ctx->alloc, ctx->bufs, sizeof(void *) * n);
        npu_free(ctx->alloc, ctx->owned, sizeof(bool) * n);
        npu_free(ctx->alloc, ctx->sizes, sizeof(size_t) * n);
        ctx->bufs = NULL;
        ctx->owned = NULL; /* freed just above: ref_ctx_free must not free them again */
        ctx->sizes = NULL;
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    }
    memset(ctx->bufs, 0, sizeof(void *) * n);
    memset(ctx->owned, 0, sizeof(bool) * n);
    memset(ctx->sizes, 0, sizeof(size_t) * n);
    for (int i = 0; i < g->n_tensors; i++) {
        const ir_tensor *t = g->tensors[i];
        if (t->id != i)
            return npu_fail(err, NPU_EINTERNAL, "tensor ids out of date (compact the graph first)");
        if (t->data) {
            ctx->bufs[i] = t->data;
            continue;
        }
        size_t nb = ir_tensor_bytes(t);
        ctx->sizes[i] = nb ? nb : 1;
        ctx->bufs[i] = npu_malloc(ctx->alloc, ctx->sizes[i]);
        ctx->owned[i] = true;
        if (!ctx->bufs[i])
            return npu_fail(err, NPU_EINTERNAL, "out of memory for tensor '%s' (%zu bytes)", t->name, nb);
    }
    return NPU_OK;
}

/* Packs the constant weights of the nodes that take them ahead, once. */
static npu_status ctx_packs(ref_ctx *ctx, npu_err *err)
{
    const ir_graph *g = ctx->g;
    size_t n = (size_t)g->n_nodes + 1;
    ctx->n_nodes = g->n_nodes;
    ctx->packs = npu_malloc(ctx->alloc, sizeof(void *) * n);
    ctx->pack_bytes = npu_malloc(ctx->alloc, sizeof(size_t) * n);
    if (!ctx->packs || !ctx->pack_bytes) {
        npu_free(ctx->alloc, ctx->packs, sizeof(void *) * n);
        npu_free(ctx->alloc, ctx->pack_bytes, sizeof(size_t) * n);
        ctx->packs = NULL;
        ctx->pack_bytes = NULL;
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    }
    memset(ctx->packs, 0, sizeof(void *) * n);
    memset(ctx->pack_bytes, 0, sizeof(size_t) * n);
    for (int k = 0; k < g->n_nodes; k++) {
        size_t need;
        bool splits;
        const ir_node *nd = g->nodes[k];
        const ref_split_entry *e = split_of(nd, &need, &splits);
        size_t bytes = e && e->pack_size ? e->pack_size(nd) : 0;
        if (!bytes)
            continue;
        if (!(ctx->packs[k] = npu_malloc(ctx->alloc, bytes)))
            return npu_fail(err, NPU_EINTERNAL, "node '%s' (%s): out of memory for %zu bytes of packed weights",
                            nd->name, ir_op_name(nd->op), bytes);
        ctx->pack_bytes[k] = bytes;
        e->pack(nd, ctx->packs[k]);
    }
    return NPU_OK;
}

ref_ctx *ref_ctx_new(const ir_graph *g, npu_alloc alloc, npu_err *err)
{
    ref_ctx *ctx = npu_malloc(alloc, sizeof *ctx);
    if (!ctx) {
        npu_fail(err, NPU_EINTERNAL, "out of memory");
        return NULL;
    }
    memset(ctx, 0, sizeof *ctx);
    ctx->g = g;
    ctx->n_tensors = g->n_tensors;
    ctx->alloc = alloc;
    ctx->threads = 1;
    size_t all, split;
    max_scratch(g, &all, &split);
    /* one scratch for every node and inference: no allocation (nor fresh
     * pages to fault in) once the first inference has run */
    if (ctx_buffers(ctx, err) != NPU_OK || ctx_packs(ctx, err) != NPU_OK ||
        (all && !(ctx->scratch = npu_malloc(alloc, all)) &&
         npu_fail(err, NPU_EINTERNAL, "out of memory for %zu bytes of scratch", all)) ||
        ref_ctx_set_threads(ctx, ref_default_threads(), err) != NPU_OK) {
        ref_ctx_free(ctx);
        return NULL;
    }
    ctx->scratch_cap = all;
    return ctx;
}

void ref_ctx_set_observer(ref_ctx *ctx, ref_observer_fn fn, void *ud)
{
    ctx->observer = fn;
    ctx->observer_ud = ud;
}

typedef struct split_job {
    ref_ctx *ctx;
    const ref_split_entry *e;
    const ir_node *n;
    const void *const *in;
    void *const *out;
    const void *pack;
    npu_status st[REF_MAX_PARTS];
} split_job;

static void split_part(void *ud, int part, int parts)
{
    split_job *j = ud;
    void *scratch = part ? j->ctx->part_scratch[part] : j->ctx->scratch;
    j->st[part] = j->e->run_part(j->n, j->in, j->out, scratch, j->pack, part, parts, &j->ctx->part_err[part]);
}

/* A large splittable layer across the context's threads, one with packed
 * weights on the calling thread, any other whole. */
static npu_status ctx_node(ref_ctx *ctx, int k, const ir_node *n, const void *const *in, void *const *out,
                           npu_err *err)
{
    size_t need = 0;
    bool splits;
    const ref_split_entry *e = split_of(n, &need, &splits);
    const void *pack = ctx->packs[k];
    splits = splits && ctx->threads > 1 && need <= ctx->part_cap[1];
    if (!e || (!splits && !pack) || need > ctx->scratch_cap)
        return run_node(n, in, out, ctx->alloc, &ctx->scratch, &ctx->scratch_cap, err);
    split_job j = {.ctx = ctx, .e = e, .n = n, .in = in, .out = out, .pack = pack};
    npu_err *errs = &ctx->part_err[0], one;
    if (splits) {
        npu_pool_run(ctx->pool, split_part, &j);
    } else {
        j.st[0] = e->run_part(n, in, out, ctx->scratch, pack, 0, 1, &one);
        errs = &one;
    }
    for (int p = 0; p < (splits ? ctx->threads : 1); p++)
        if (j.st[p] != NPU_OK) { /* the lowest failing part: the same error for any timing */
            *err = errs[p];
            if (!strstr(err->msg, n->name))
                npu_err_prefix(err, "node '%s' (%s)", n->name, ir_op_name(n->op));
            return j.st[p];
        }
    return NPU_OK;
}

npu_status ref_ctx_run(ref_ctx *ctx, const void *const *inputs, void *const *outputs, npu_err *err)
{
    const ir_graph *g = ctx->g;
    if (g->n_tensors != ctx->n_tensors || g->n_nodes != ctx->n_nodes)
        return npu_fail(err, NPU_EINTERNAL, "the graph changed after its reference context was made");
    for (int i = 0; i < g->n_inputs; i++) {
        const ir_tensor *t = g->inputs[i];
        if (ctx->owned[t->id])
            memcpy(ctx->bufs[t->id], inputs[i], ir_tensor_bytes(t));
    }
    for (int k = 0; k < g->n_nodes; k++) {
        const ir_node *n = g->nodes[k];
        if (n->dead)
            continue;
        if (n->n_inputs > REF_MAX_IO || n->n_outputs > REF_MAX_IO)
            return npu_fail(err, NPU_EUSER, "node '%s' (%s): too many inputs or outputs", n->name,
                            ir_op_name(n->op));
        const void *in[REF_MAX_IO];
        void *out[REF_MAX_IO];
        for (int i = 0; i < n->n_inputs; i++)
            in[i] = n->inputs[i] ? ctx->bufs[n->inputs[i]->id] : NULL;
        for (int i = 0; i < n->n_outputs; i++)
            out[i] = n->outputs[i] ? ctx->bufs[n->outputs[i]->id] : NULL;
        npu_status st = ctx_node(ctx, k, n, in, out, err);
        if (st != NPU_OK)
            return st;
        if (ctx->observer)
            for (int i = 0; i < n->n_outputs; i++)
                if (n->outputs[i])
                    ctx->observer(ctx->observer_ud, n, n->outputs[i], out[i]);
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const ir_tensor *t = g->outputs[i];
        memcpy(outputs[i], ctx->bufs[t->id], ir_tensor_bytes(t));
    }
    return NPU_OK;
}
