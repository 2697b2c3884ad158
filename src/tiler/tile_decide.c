/* tile_cascades: which consecutive nodes of an NPU step run as one pipeline,
 * each candidate lowered for real into a throw-away context (docs/tiler.md
 * "Which nodes cascade"); tile_try_node lowers one node the same way. */
#include <string.h>

#include "tiler/tile_internal.h"

/* A throw-away context: every activation at offset 0 of the arena, its own
 * constants. Lowering into it finds whatever tile_build would refuse. */
typedef struct scratch {
    mp_plan plan;
    int64_t *coff;
    emit_blob consts;
    npu_err err;
    tile_ctx c;
} scratch;

static void scratch_entry(scratch *s, int i)
{
    memset(&s->plan.t[i], 0, sizeof s->plan.t[i]);
    s->plan.t[i].region = MP_REGION_ARENA;
    s->plan.t[i].alias_of = -1;
    s->coff[i] = -1;
}

/* With only non-NULL, just the entries of only's tensors are set (the others
 * are never read for it): filling all of them for every node that
 * tile_try_node asks about made long graphs quadratic. */
static npu_status scratch_init(scratch *s, const tgt_target *t, const ir_graph *g, npu_alloc a, const ir_node *only)
{
    memset(s, 0, sizeof *s);
    npu_err_clear(&s->err);
    s->plan.n_tensors = g->n_tensors;
    s->plan.t = npu_malloc(a, sizeof *s->plan.t * (size_t)(g->n_tensors + 1));
    s->coff = npu_malloc(a, sizeof(int64_t) * (size_t)(g->n_tensors + 1));
    emit_blob_init_measure(&s->consts, a);
    s->c = (tile_ctx){.t = t, .g = g, .plan = &s->plan, .consts = &s->consts, .alloc = a, .err = &s->err,
                      .const_off = s->coff, .last_kind = -1, .pipe_cap = INT64_MAX, .prev_cap = INT64_MAX};
    if (!s->plan.t || !s->coff)
        return npu_fail(&s->err, NPU_EINTERNAL, "out of memory");
    if (only) {
        for (int j = 0; j < only->n_inputs; j++)
            if (only->inputs[j] && only->inputs[j]->id >= 0 && only->inputs[j]->id < g->n_tensors)
                scratch_entry(s, only->inputs[j]->id);
        for (int j = 0; j < only->n_outputs; j++)
            if (only->outputs[j] && only->outputs[j]->id >= 0 && only->outputs[j]->id < g->n_tensors)
                scratch_entry(s, only->outputs[j]->id);
        return NPU_OK;
    }
    for (int i = 0; i < g->n_tensors; i++)
        scratch_entry(s, i);
    return NPU_OK;
}

/* Starts a new stream in the scratch context, for node n. */
static void scratch_reset(scratch *s, const ir_node *n)
{
    s->c.n_words = 0;
    memset(&s->c.s, 0, sizeof s->c.s);
    s->c.pending_barrier = false;
    s->c.last_kind = -1;
    s->c.node = n;
    npu_err_clear(&s->err);
    tile_layer_begin(&s->c);
}

static void scratch_free(scratch *s, npu_alloc a, int n_tensors)
{
    npu_free(a, s->plan.t, sizeof *s->plan.t * (size_t)(n_tensors + 1));
    npu_free(a, s->coff, sizeof(int64_t) * (size_t)(n_tensors + 1));
    npu_free(a, s->c.words, sizeof *s->c.words * s->c.cap_words);
    npu_free(a, s->c.work, sizeof *s->c.work * (size_t)s->c.cap_work);
    npu_free(a, s->c.comp, sizeof *s->c.comp * (size_t)s->c.cap_comp);
    npu_free(a, s->c.gaps, sizeof *s->c.gaps * (size_t)s->c.cap_gaps);
    npu_free(a, s->c.moves, sizeof *s->c.moves * (size_t)s->c.cap_moves);
    emit_blob_free(&s->consts);
}

/* Lowers one quantized node against a throw-away plan and constants:
 * whatever tile_build would refuse for it, with the message, and the
 * static schedule's cycles of its instructions. tile_supports and
 * tile_estimate ask this of quantized nodes. */
npu_status tile_try_node(const tgt_target *t, const ir_graph *g, const ir_node *n, int64_t *cycles,
                         const char **reason, npu_err *err)
{
    npu_alloc a = g->alloc.fn ? g->alloc : npu_alloc_default();
    scratch s;
    npu_status st = scratch_init(&s, t, g, a, n);
    if (st == NPU_OK) {
        scratch_reset(&s, n);
        st = tile_lower_node(&s.c, n);
        if (cycles)
            *cycles = s.c.s.end;
    }
    scratch_free(&s, a, g->n_tensors);
    if (st == NPU_OK)
        return NPU_OK;
    if (st != NPU_EUSER) /* out of memory or a tiler bug: the compile's failure, not the node's */
        return npu_fail(err, st, "node '%s' (%s): %s", n->name, ir_op_name(n->op), s.err.msg);
    if (reason) {
        const char *m = npu_arena_strdup(g->arena, s.err.msg);
        *reason = m ? m : "no legal NPU tile";
    }
    return NPU_EUSER;
}

/* A depthwise conv n whose output only the 1x1 conv m reads (stride 1, no
 * padding, one group): the shape tile_dw_pw cascades. */
static bool dw_pw_shape(const tile_ctx *c, const ir_node *n, const ir_node *m)
{
    if (n->op != IR_OP_CONV || m->op != IR_OP_CONV)
        return false;
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    if (x->rank != 4 || m->inputs[0] != y || m->n_inputs < 2 || !m->inputs[1] || m->inputs[1]->rank != 4)
        return false;
    int64_t g = ir_attr_int(n, "group", 1);
    if (g <= 1 || g != x->dims[1] || y->dims[1] != x->dims[1] || ir_attr_int(m, "group", 1) != 1)
        return false;
    const ir_tensor *w = m->inputs[1];
    int64_t st[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
    ir_attr_ints(m, "strides", st, 2);
    ir_attr_ints(m, "pads", pads, 4);
    const char *ap = ir_attr_string(m, "auto_pad", "NOTSET");
    if (w->dims[2] != 1 || w->dims[3] != 1 || st[0] != 1 || st[1] != 1 || pads[0] || pads[1] || pads[2] ||
        pads[3] || (strcmp(ap, "NOTSET") && strcmp(ap, "VALID")))
        return false;
    return ir_use_count(c->g, y) == 1 && !(y->flags & IR_TENSOR_OUTPUT);
}

/* Lowers the cascade nd[0..len): an inverted-residual chain (or a depthwise
 * conv, its projection and eltwise), a depthwise + 1x1 pair, a conv + pool,
 * a conv's epilogue or prologue; *done false (nothing emitted) when it does
 * not apply. */
npu_status tile_lower_cascade(tile_ctx *c, const ir_node *const *nd, int len, bool *done)
{
    *done = false;
    for (int i = 0; i < len; i++)
        if (tile_node_a16(nd[i]))
            return NPU_OK; /* int16 layers run one by one (no int16 cascade) */
    npu_status st = tile_chain(c, nd, len, done);
    if (st == NPU_OK && !*done && len >= 3 && nd[len - 1]->op == IR_OP_GEMM) /* a conv, its pool, the classifier */
        st = tile_head(c, nd, len, done);
    if (st == NPU_OK && !*done && len == 2 && dw_pw_shape(c, nd[0], nd[1]))
        st = tile_dw_pw(c, nd[0], nd[1], done);
    if (st == NPU_OK && !*done && len == 2) /* the pool after a conv on the vector unit, band by band */
        st = tile_conv_pool(c, NULL, nd[0], nd[1], done);
    if (st == NPU_OK && !*done && len == 3) /* the same, the conv's input quantized on its tiles */
        st = tile_conv_pool(c, nd[0], nd[1], nd[2], done);
    if (st == NPU_OK && !*done && len == 2) /* an activation table in the conv's output stage */
        st = tile_conv_lut(c, nd[0], nd[1], done);
    if (st == NPU_OK && !*done && len == 2) /* a squeeze-excite scale on the conv's input tiles */
        st = tile_conv_pre(c, nd[0], nd[1], done);
    return st;
}

/* The static schedule's cycles of nd[0..n) lowered one by one into s;
 * INT64_MAX when one of them has no lowering of its own. */
static npu_status apart_cycles(scratch *s, const ir_node *const *nd, int n, int64_t *cycles)
{
    *cycles = 0;
    for (int i = 0; i < n; i++) {
        scratch_reset(s, nd[i]);
        npu_status st = tile_lower_node(&s->c, nd[i]);
        if (st == NPU_EUSER) {
            *cycles = INT64_MAX;
            return NPU_OK;
        }
        if (st != NPU_OK)
            return st;
        *cycles += s->c.s.end;
    }
    return NPU_OK;
}

/* A chain whose last node rides on the others' tiles (tile_chain: the
 * eltwise of a depthwise + 1x1 + eltwise chain without expand, or a squeeze's
 * global pool) pays only when its static schedule ends before its
 * alternative's: the first len - 1 nodes as one cascade (a depthwise + 1x1
 * pair as tile_dw_pw cascades it, or the nodes apart) and the last node's
 * own pass, every tensor in DRAM (the memory planner tries the chain split
 * where its tensors may stay in SRAM instead, tile_memplan.c). *pays false
 * leaves s's schedule undefined. */
static npu_status tail_pays(scratch *s, const ir_node *const *nd, int len, bool *pays)
{
    int64_t chain = s->c.s.end, head = INT64_MAX, tail = 0;
    bool done = false;
    scratch_reset(s, nd[0]);
    npu_status st = tile_lower_cascade(&s->c, nd, len - 1, &done);
    if (st == NPU_OK && done)
        head = s->c.s.end;
    if (st == NPU_EUSER || (st == NPU_OK && !done))
        st = apart_cycles(s, nd, len - 1, &head);
    if (st == NPU_OK)
        st = apart_cycles(s, nd + len - 1, 1, &tail);
    *pays = head == INT64_MAX || tail == INT64_MAX || chain < head + tail;
    return st;
}

static npu_status cascade_at(scratch *s, const ir_node *const *nd, int max, int *len);

bool tile_stem_conv(const ir_node *n)
{
    if (n->op != IR_OP_CONV || ir_attr_int(n, "group", 1) != 1 || n->n_inputs < 2 || !n->inputs[1] ||
        n->inputs[1]->rank != 4)
        return false;
    int64_t st[2] = {1, 1};
    ir_attr_ints(n, "strides", st, 2);
    return n->inputs[1]->dims[2] * n->inputs[1]->dims[3] > 1 || st[0] > 1 || st[1] > 1;
}

/* A chain of tile_chain headed by a stem's KxK conv, or by the model input's quantize (the prologue). */
static bool stem_chain(const ir_node *const *nd, int len)
{
    int k = len >= 3 && nd[0]->op == IR_OP_QUANTIZE_LINEAR ? 1 : 0;
    bool head = k ? nd[1]->op == IR_OP_CONV && ir_attr_int(nd[1], "group", 1) == 1 : tile_stem_conv(nd[0]);
    return len >= 2 && head && nd[k + 1]->op == IR_OP_CONV && ir_attr_int(nd[k + 1], "group", 1) > 1;
}

/* The static cycles of nd[0..) as tile_cascades decides them (the longest
 * cascade at each node, else the node alone), of at most max nodes, until
 * n are covered (*covered, at least n); INT64_MAX when a node has no
 * lowering of its own. s's schedule is left undefined. */
static npu_status greedy_cycles(scratch *s, const ir_node *const *nd, int n, int max, int64_t *cyc, int *covered)
{
    npu_status st = NPU_OK;
    int i = 0;
    *cyc = 0;
    while (i < n && st == NPU_OK && *cyc < INT64_MAX) {
        int len = 0;
        int64_t one = 0;
        st = max - i >= 2 ? cascade_at(s, nd + i, max - i, &len) : NPU_OK;
        if (st == NPU_OK && len >= 2)
            *cyc += s->c.s.end, i += len;
        else if (st == NPU_OK && (st = apart_cycles(s, nd + i, 1, &one)) == NPU_OK)
            *cyc = one == INT64_MAX ? INT64_MAX : *cyc + one, i++;
    }
    *covered = i;
    return st;
}

/* A stem chain (s's schedule, len nodes of at most max) pays only when it
 * ends at least 1% before each alternative over the same nodes, every
 * tensor in DRAM: its first node alone and the rest as tile_cascades
 * decides it, and with a prologue the quantize + conv pair and the rest
 * (edge-v1-lite: the four nodes of MobileNetV2's stem ran 498,144 cycles,
 * the pair and the depthwise + 1x1 pair 485,473). The margin: on
 * edge-v1-wide the stem chain's 28,713 static cycles against 28,714 apart
 * ran 105 cycles slower on the NPU model. *pays false leaves s undefined. */
static npu_status stem_chain_pays(scratch *s, const ir_node *const *nd, int len, int max, bool *pays)
{
    int64_t joint = s->c.s.end;
    npu_status st = NPU_OK;
    *pays = true;
    for (int head = 1; head <= (nd[0]->op == IR_OP_QUANTIZE_LINEAR ? 2 : 1) && st == NPU_OK && *pays; head++) {
        int64_t h = INT64_MAX, rest = 0, extra = 0;
        int covered = 0;
        bool done = false;
        scratch_reset(s, nd[0]);
        if (head == 1)
            st = apart_cycles(s, nd, 1, &h);
        else if ((st = tile_lower_cascade(&s->c, nd, 2, &done)) == NPU_OK && done)
            h = s->c.s.end;
        if (st == NPU_EUSER)
            st = NPU_OK, h = INT64_MAX;
        if (st != NPU_OK || h == INT64_MAX)
            continue; /* no such alternative */
        st = greedy_cycles(s, nd + head, len - head, max - head, &rest, &covered);
        if (st == NPU_OK && covered + head > len) /* the alternative's last cascade reaches past the chain */
            st = apart_cycles(s, nd + len, covered + head - len, &extra);
        if (st == NPU_OK && rest < INT64_MAX && extra < INT64_MAX)
            *pays = (joint + extra) * 100 <= (h + rest) * 99;
    }
    return st;
}

/* A chain's last node a pool on the depthwise output's tiles: a squeeze's
 * global pool, or a block pool after the depthwise conv (or its Lut). */
static bool pool_tail(const ir_node *const *nd, int l)
{
    const ir_node *p = nd[l - 1], *d = nd[l - 2];
    if (d->op == IR_OP_LUT && l >= 4)
        d = nd[l - 3];
    return p->op == IR_OP_GLOBAL_AVERAGE_POOL ||
           (p->op == IR_OP_AVERAGE_POOL && d->op == IR_OP_CONV && ir_attr_int(d, "group", 1) > 1);
}

/* A head cascade (tile_head: a conv, its pool, the classifier) pays only
 * when its static schedule ends 5% before the nodes before the classifier
 * as tile_cascades would lower them and the classifier apart, every tensor
 * in DRAM (the margin: on edge-v1-wide EfficientNet-B0's head won by 4.7%
 * statically and ran 3.4K cycles slower on npusim). *pays false leaves s's
 * schedule undefined. */
static npu_status head_pays(scratch *s, const ir_node *const *nd, int len, bool *pays)
{
    int64_t joint = s->c.s.end, rest = 0, fc = 0;
    int covered = 0;
    npu_status st = greedy_cycles(s, nd, len - 1, len - 1, &rest, &covered);
    if (st == NPU_OK)
        st = apart_cycles(s, nd + len - 1, 1, &fc);
    *pays = rest == INT64_MAX || fc == INT64_MAX || joint * 20 < (rest + fc) * 19;
    return st;
}

/* The longest cascade that lowers at nd[0] (at most max nodes): *len its
 * nodes, 0 none; s's schedule is then the last one lowered, the cascade's. */
static npu_status cascade_at(scratch *s, const ir_node *const *nd, int max, int *len)
{
    *len = 0;
    for (int l = max < 6 ? max : 6; l >= 2; l--) {
        bool done = false;
        scratch_reset(s, nd[0]);
        npu_status st = tile_lower_cascade(&s->c, nd, l, &done);
        /* NPU_EUSER from the lowering is "no legal cascade" (no tile fits, a field
         * overflows): the nodes run apart. Anything else (a tiler bug, out of
         * memory, a code of another kind) is not swallowed. */
        if (st == NPU_EUSER)
            continue;
        /* three nodes from a grouped conv (the chain without expand) or a squeeze's pool last: against the
         * rest and the last apart; a stem chain against its alternatives */
        bool tail = (l == 3 && ir_attr_int(nd[0], "group", 1) > 1) || (l >= 3 && pool_tail(nd, l));
        bool stem = !tail && stem_chain(nd, l), head = !tail && !stem && nd[l - 1]->op == IR_OP_GEMM;
        if (st == NPU_OK && done && (tail || stem || head)) {
            bool pays = false;
            st = tail ? tail_pays(s, nd, l, &pays) : stem ? stem_chain_pays(s, nd, l, max, &pays)
                                                          : head_pays(s, nd, l, &pays);
            if (st != NPU_OK)
                return st;
            if (!pays)
                continue;
            scratch_reset(s, nd[0]); /* the chain's schedule again */
            if ((st = tile_lower_cascade(&s->c, nd, l, &done)) != NPU_OK)
                return st;
        }
        if (st != NPU_OK || done) {
            *len = done ? l : 0;
            return st;
        }
    }
    return NPU_OK;
}

/* A quantize prologue (nd[0] the QuantizeLinear, nd[1] its conv, nd[2] the
 * pool cascaded after it, if *len is 3) drops the int8 tensor's store and
 * reload and the quantize's own pass, but the conv's tiles load 4 bytes per
 * input element, halo rows again: it is kept only when the static schedule
 * ends before the nodes' apart (the conv with the cascade it heads on its
 * own, if any). When that cascade reaches past this one (a stem chain with
 * its pool against the prologue chain without it), the nodes it covers
 * beyond are counted apart on this side. */
static npu_status quant_pre_pays(scratch *s, const ir_node *const *nd, int max, int *len)
{
    int64_t joint = s->c.s.end, apart = 0, extra = 0;
    int own = 0;
    npu_status st = max > 2 ? cascade_at(s, nd + 1, max - 1, &own) : NPU_OK;
    if (st != NPU_OK) {
        *len = 0;
        return st;
    }
    apart = own ? s->c.s.end : 0;
    for (int i = 0; i < *len && st == NPU_OK; i++) {
        if (i >= 1 && i < 1 + own)
            continue; /* in the conv's own cascade */
        scratch_reset(s, nd[i]);
        st = tile_lower_node(&s->c, nd[i]);
        apart += s->c.s.end;
    }
    if (st == NPU_OK && 1 + own > *len)
        st = apart_cycles(s, nd + *len, 1 + own - *len, &extra);
    if (st == NPU_EUSER) /* a node alone has no tile: the cascade is the only way */
        st = NPU_OK, apart = INT64_MAX;
    if (extra == INT64_MAX || joint + extra >= apart)
        *len = 0;
    return st;
}

npu_status tile_cascades(const tgt_target *t, const ir_graph *g, const part_schedule *sched, npu_alloc alloc,
                         int *group, npu_err *err)
{
    for (int i = 0; i < g->n_nodes; i++)
        group[i] = i;
    scratch s;
    npu_status st = scratch_init(&s, t, g, alloc, NULL);
    s.c.deciding = true;
    for (int k = 0; k < sched->n_steps && st == NPU_OK; k++) {
        const part_step *ps = &sched->steps[k];
        if (ps->unit != IR_UNIT_NPU)
            continue;
        for (int i = 0; i + 1 < ps->count && st == NPU_OK; i++) {
            const ir_node *const *nd = (const ir_node *const *)&g->nodes[ps->first + i];
            int len = 0;
            st = cascade_at(&s, nd, ps->count - i, &len);
            int whole = len;
            if (st == NPU_OK && len >= 2 && nd[0]->op == IR_OP_QUANTIZE_LINEAR)
                st = quant_pre_pays(&s, nd, ps->count - i, &len);
            /* a prologue chain with a pool on its tiles that does not pay may pay without the pool, against
             * the same nodes apart (edge-v1-lite: EfficientNet-B0's stem chain) */
            if (st == NPU_OK && !len && whole >= 4 && nd[0]->op == IR_OP_QUANTIZE_LINEAR && pool_tail(nd, whole) &&
                (st = cascade_at(&s, nd, whole - 1, &len)) == NPU_OK && len >= 2)
                st = quant_pre_pays(&s, nd, len, &len);
            for (int j = 0; j < len && st == NPU_OK; j++)
                group[ps->first + i + j] = ps->first + i;
            i += len > 0 ? len - 1 : 0;
        }
    }
    if (st != NPU_OK)
        npu_fail(err, st, "%s", s.err.msg);
    scratch_free(&s, alloc, g->n_tensors);
    return st;
}
