/* tile_build: every NPU step of the schedule becomes one command stream
 * (ending with `end`); every node in it a layer record. */
#include <string.h>

#include "numerics/numerics.h"
#include "tiler/tile_internal.h"

npu_status tile_qtab(tile_ctx *c, const ir_node *n, int64_t c0, int64_t cnt, uint8_t *out)
{
    if (!out && c->qtab_ok == n)
        return NPU_OK;
    const ir_tensor *x = n->inputs[0], *w = n->inputs[1], *y = n->outputs[0];
    const ir_tensor *b = n->n_inputs > 2 ? n->inputs[2] : NULL;
    int nq = w->quant->count;
    int32_t *mult = npu_malloc(c->alloc, sizeof(int32_t) * 2 * (size_t)nq);
    if (!mult)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    int32_t *shift = mult + nq;
    npu_status st = ref_qmults(x, w, y, mult, shift, c->err);
    for (int64_t i = 0; i < cnt && st == NPU_OK && out; i++) {
        int64_t o = c0 + i;
        int32_t e[3];
        e[0] = b && b->data ? ((const int32_t *)b->data)[o] : 0;
        e[1] = mult[nq == 1 ? 0 : o];
        e[2] = shift[nq == 1 ? 0 : o];
        for (int k = 0; k < 3; k++)
            for (int by = 0; by < 4; by++)
                out[12 * i + 4 * k + by] = (uint8_t)((uint32_t)e[k] >> (8 * by));
    }
    npu_free(c->alloc, mult, sizeof(int32_t) * 2 * (size_t)nq);
    if (st != NPU_OK)
        return npu_err_prefix(c->err, "node '%s'", n->name);
    if (!out)
        c->qtab_ok = n;
    return NPU_OK;
}

npu_status tile_block_reserve(tile_ctx *c, const ir_node *n, int64_t c0, int64_t cnt, int64_t size, int64_t *off)
{
    npu_status st = tile_qtab(c, n, c0, cnt, NULL);
    return st != NPU_OK ? st : tile_const_add(c, NULL, (size_t)size, off);
}

npu_status tile_lower_node(tile_ctx *c, const ir_node *n)
{
    /* nothing to tile: the sizes below would divide by zero ([1, 0, 4, 4] hit SIGFPE) */
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j] && ir_tensor_numel(n->outputs[j]) == 0)
            return tile_fail(c, "output '%s' has no elements (a zero-size dimension): nothing for the NPU to do",
                             n->outputs[j]->name);
    switch (n->op) {
    case IR_OP_CONV: return tile_conv(c, n);
    case IR_OP_GEMM:
    case IR_OP_MATMUL: return ref_q_is_bmm(n) ? tile_bmm(c, n) : tile_matmul(c, n);
    case IR_OP_MAX_POOL:
    case IR_OP_AVERAGE_POOL:
    case IR_OP_GLOBAL_AVERAGE_POOL:
    case IR_OP_GLOBAL_MAX_POOL:
    case IR_OP_REDUCE_MEAN: return tile_pool(c, n);
    case IR_OP_ADD:
    case IR_OP_SUB:
    case IR_OP_MUL:
    case IR_OP_MIN:
    case IR_OP_MAX: return tile_eltwise(c, n);
    case IR_OP_LUT:
    case IR_OP_REQUANTIZE: return tile_unary(c, n);
    case IR_OP_CONCAT: return tile_concat(c, n);
    case IR_OP_TRANSPOSE: return tile_transpose(c, n);
    case IR_OP_GATHER: return tile_gather(c, n);
    case IR_OP_SLICE: /* step 1: box copies of any size (tile_move.c); other forward steps: a strided view */
        return tile_move_shape(n) ? tile_move(c, n) : tile_slice(c, n);
    case IR_OP_QSOFTMAX:
    case IR_OP_QLAYER_NORM: return tile_rownorm(c, n);
    case IR_OP_QUANTIZE_LINEAR: return tile_quantize(c, n);
    case IR_OP_SPLIT: return tile_move(c, n);
    default:
        if (ir_op_is_view(n->op))
            return tile_view(c, n);
        return tile_fail(c, "the NPU tiler has no lowering for this op");
    }
}

static bool same_place(const mp_plan *p, const ir_tensor *a, const ir_tensor *b)
{
    return p->t[a->id].region == p->t[b->id].region && p->t[a->id].level == p->t[b->id].level &&
           p->t[a->id].offset == p->t[b->id].offset && p->t[a->id].packed == p->t[b->id].packed;
}

static bool overlap(const mp_plan *p, const ir_tensor *a, const ir_tensor *b)
{
    const mp_tensor *x = &p->t[a->id], *y = &p->t[b->id];
    return x->region == y->region && x->level == y->level && x->offset < y->offset + y->size && y->offset < x->offset + x->size;
}

/* The plan position of the first node of node i's cascade (mp_plan.pos_group), or -1 when the plan has none. */
static int planned_group(const mp_plan *p, const ir_graph *g, int i)
{
    int q = p->pos_group && p->node_pos && i >= 0 && i < g->n_nodes ? p->node_pos[i] : -1;
    return q >= 0 && q < p->n_positions ? p->pos_group[q] : -1;
}

/* May the cascade nd[0..len) run on this plan? Planned as one (its
 * intermediates in SRAM, or with a home where a node after it reads them:
 * a squeeze's pool last), its tensors are live across it; otherwise its
 * output, written band by band while its inputs are still read, must lie
 * clear of every input in DRAM. */
static bool plan_allows(const tile_ctx *c, const ir_node *const *nd, int len)
{
    const mp_plan *p = c->plan;
    int g0 = planned_group(p, c->g, nd[0]->id);
    bool one = len > 1 && g0 >= 0 && g0 == p->node_pos[nd[0]->id];
    for (int i = 1; one && i < len; i++)
        one = planned_group(p, c->g, nd[i]->id) == g0;
    if (one)
        return true;
    const ir_tensor *z = nd[len - 1]->outputs[0];
    if (z->id >= p->n_tensors || p->t[z->id].offset < 0)
        return false;
    for (int i = 0; i < len; i++)
        for (int j = 0; j < nd[i]->n_inputs; j++) {
            const ir_tensor *x = nd[i]->inputs[j];
            if (x && !x->data && (x->id >= p->n_tensors || overlap(p, z, x)))
                return false;
        }
    return true;
}

/* The eltwise m's operand other than conv n's output, when m can take n's
 * output tile by tile (m alone reads it, equal shapes, an int8 operand of one
 * scale) and m's output and that operand have homes that allow it (clear of
 * each other, or exactly one on the other); NULL otherwise. */
static const ir_tensor *fused_operand(const tile_ctx *c, const ir_node *n, const ir_node *m)
{
    if (m->op != IR_OP_ADD && m->op != IR_OP_SUB && m->op != IR_OP_MUL && m->op != IR_OP_MIN && m->op != IR_OP_MAX)
        return NULL;
    const ir_tensor *y = n->outputs[0], *z = m->outputs[0];
    if (n->op != IR_OP_CONV || m->n_inputs != 2 || m->n_outputs != 1 || (m->inputs[0] == y) == (m->inputs[1] == y))
        return NULL;
    const ir_tensor *o = m->inputs[m->inputs[0] == y ? 1 : 0];
    if (ir_use_count(c->g, y) != 1 || (y->flags & IR_TENSOR_OUTPUT) || !ir_shape_equal(o, z) || !ir_shape_equal(y, z))
        return NULL;
    if (!o->quant || o->quant->count != 1 || o->dtype != IR_I8 || y->rank != 4)
        return NULL;
    const mp_plan *p = c->plan;
    if (z->id >= p->n_tensors || p->t[z->id].offset < 0)
        return NULL;
    if (!o->data && (o->id >= p->n_tensors || p->t[o->id].offset < 0))
        return NULL;
    return !o->data && overlap(p, z, o) && !same_place(p, z, o) ? NULL : o;
}

/* Can the eltwise m run inside the tiles of conv n? m reads n's output and
 * nothing else does, the shapes are equal (no broadcast), and the ISA has a
 * token for the conv -> eltwise hand-over. m's output is written tile by tile
 * while the conv still reads: it must lie clear of the other operand or
 * exactly on it, and clear of the conv's input or exactly on it (then the
 * conv runs in row order with a sixth token, see tile_conv_fused).
 * 0: no; 1: fuse; 2: fuse, in place over the conv's input. */
static int fusable(const tile_ctx *c, const ir_node *n, const ir_node *m)
{
    if (tile_tokens(c->t) < 5 || tile_insn(c, TGT_SEM_ELTWISE) < 0 || !fused_operand(c, n, m))
        return 0;
    const mp_plan *p = c->plan;
    const ir_tensor *z = m->outputs[0], *x = n->inputs[0];
    if (x->id >= p->n_tensors)
        return 0;
    if (!overlap(p, z, x))
        return 1;
    int64_t st[2] = {1, 1};
    ir_attr_ints(n, "strides", st, 2);
    bool over_input = same_place(p, z, x) && ir_shape_equal(x, z) && st[0] == 1 && st[1] == 1 &&
                      ir_attr_int(n, "group", 1) == 1 && tile_tokens(c->t) >= 6;
    return over_input ? 2 : 0;
}

static npu_status end_stream(tile_ctx *c)
{
    int insn = tile_insn(c, TGT_SEM_END);
    int64_t v[TGT_F_COUNT];
    tgt_defaults(c->t->isa, insn, v);
    v[TGT_F_WAIT] = c->pending_barrier ? TILE_T_BAR : 0;
    c->pending_barrier = false;
    return tile_emit(c, TGT_SEM_END, v);
}

/* Peak-throughput bound of a layer: MACs on the array (int4 faster) or bytes over DRAM. */
static int64_t bound_cycles(const tgt_target *t, const ir_node *n, int64_t macs, int64_t bytes)
{
    int64_t peak = t->p[TGT_P_MAC_ROWS] * t->p[TGT_P_MAC_COLS];
    bool w4 = n->n_inputs > 1 && n->inputs[1] && n->inputs[1]->dtype == IR_I4 &&
              tgt_insn_field(t->isa, tgt_insn_for_sem(t->isa, TGT_SEM_CONV), TGT_F_W4);
    if (w4)
        peak *= t->p[TGT_P_MAC_INT4_SPEEDUP];
    int64_t a = tile_cdiv(macs, peak), b = tile_cdiv(bytes, t->p[TGT_P_DRAM_BYTES_PER_CYCLE]);
    return a > b ? a : b;
}

static int64_t node_macs(const ir_node *n)
{
    const ir_tensor *y = n->outputs[0];
    if (n->op == IR_OP_CONV) {
        const ir_tensor *w = n->inputs[1];
        return ir_tensor_numel(y) * (ir_tensor_numel(w) / w->dims[0]);
    }
    if (n->op == IR_OP_GEMM || n->op == IR_OP_MATMUL) {
        const ir_tensor *x = n->inputs[0];
        return ir_tensor_numel(y) * x->dims[x->rank - 1];
    }
    return 0;
}

static npu_status grow_layers(tile_ctx *c, tile_program *out, int *cap)
{
    if (out->n_layers < *cap)
        return NPU_OK;
    int ncap = *cap ? *cap * 2 : 32;
    tile_layer *nl = npu_realloc(c->alloc, out->layers, sizeof *nl * (size_t)*cap, sizeof *nl * (size_t)ncap);
    if (!nl)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    out->layers = nl;
    *cap = ncap;
    return NPU_OK;
}

/* The cascades the plan was made for (mp_plan.pos_group), else tile_cascades decides them. */
static npu_status plan_cascades(tile_ctx *c, const part_schedule *sched, int *group)
{
    const ir_graph *g = c->g;
    const mp_plan *p = c->plan;
    if (!p->pos_group || !p->node_pos || p->n_positions <= 0)
        return tile_cascades(c->t, g, sched, c->alloc, group, c->err);
    for (int i = 0; i < g->n_nodes; i++) {
        int q0 = planned_group(p, g, i);
        group[i] = i;
        if (q0 >= 0 && q0 != p->node_pos[i]) /* the node at the group's first position */
            for (int k = 0; k < g->n_nodes; k++)
                if (p->node_pos[k] == q0)
                    group[i] = k;
    }
    return NPU_OK;
}

/* The eltwise right after a squeeze-excite prologue pair (nd[0..len), the
 * cascade at ps->first + k: a Mul, the projection conv) that can run in the
 * conv's output stage (epi_elt; fused_operand's placement rules, its output
 * clear of the Mul's inputs): MBConv's residual add. NULL when there is
 * none: the add then runs apart (the pair takes CHAIN for its prologue, so
 * a vector-unit add could not join it). */
static const ir_node *pre_epi_after(const tile_ctx *c, const part_step *ps, const int *group, int k,
                                    const ir_node *const *nd, int len)
{
    int j = ps->first + k + len;
    if (len != 2 || k + len >= ps->count || group[j] != j || (k + len + 1 < ps->count && group[j + 1] == j))
        return NULL;
    const ir_node *m = nd[0], *n = nd[1], *a = nd[2];
    if (m->op == IR_OP_QUANTIZE_LINEAR || !tile_conv_pre_ok(c, m, n) || !tile_epi_elt_ok(c) ||
        !plan_allows(c, nd, len) || !fused_operand(c, n, a))
        return NULL;
    /* the add's output, written band by band, clear of what the Mul still reads (the conv's own input,
     * the Mul's output, lives only in the tiles) */
    for (int q = 0; q < m->n_inputs; q++)
        if (!m->inputs[q]->data && overlap(c->plan, a->outputs[0], m->inputs[q]))
            return NULL;
    return a;
}

/* The current layer put `added` words at word `at` of an earlier one's
 * (tile_retro.c): the layer holding that place grows, the records from
 * `at` on (this one's too, and fused ones of no words) move. */
static void moved_words(tile_program *out, size_t at, size_t added)
{
    for (int i = 0; i < out->n_layers; i++) {
        tile_layer *r = &out->layers[i];
        if (r->first_word >= at)
            r->first_word += (uint32_t)added;
        else if (r->n_words && r->first_word + r->n_words >= at)
            r->n_words += (uint32_t)added;
    }
}

/* lay_cap: the SRAM below the resident tensors live at any of the layer's nodes (pos_cap). */
static void layer_cap(tile_ctx *c, const ir_node *const *nd, int n)
{
    const mp_plan *p = c->plan;
    if (!c->pos_cap)
        return;
    int64_t cap = INT64_MAX;
    for (int i = 0; i < n; i++) {
        int q = nd[i]->id >= 0 && nd[i]->id < c->g->n_nodes ? p->node_pos[nd[i]->id] : -1;
        cap = tile_min(cap, q >= 0 && q < p->n_positions ? c->pos_cap[q] : c->sram_base);
    }
    c->lay_cap = cap;
}

/* pos_cap (tile_ctx) from the plan: the lowest resident root live at each
 * position, the whole SRAM where none is. NULL where the plan has no level
 * or is planned by step. */
static npu_status pos_caps(tile_ctx *c, int64_t sram)
{
    const mp_plan *p = c->plan;
    if (p->sram_bytes <= 0 || p->by_step || !p->node_pos || p->n_positions <= 0)
        return NPU_OK;
    c->pos_cap = npu_malloc(c->alloc, sizeof *c->pos_cap * (size_t)p->n_positions);
    if (!c->pos_cap)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    for (int q = 0; q < p->n_positions; q++)
        c->pos_cap[q] = sram & ~(int64_t)15;
    for (int t = 0; t < p->n_tensors; t++) {
        const mp_tensor *m = &p->t[t];
        if (m->level != MP_LEVEL_SRAM || m->alias_of >= 0 || m->offset < 0 || m->first_pos < 0)
            continue;
        for (int q = m->first_pos; q <= m->last_pos && q < p->n_positions; q++)
            c->pos_cap[q] = tile_min(c->pos_cap[q], c->sram_base + m->offset);
    }
    return NPU_OK;
}

/* Lowers the node at ps->first + *k into one layer, with the cascade or the
 * fused partner that runs inside its tiles; each node it takes in gets a
 * fused layer of no words, and *k moves past them. */
static npu_status lower_layer(tile_ctx *c, const part_step *ps, const int *group, tile_program *out, int *cap_layers,
                              int *k)
{
    const ir_graph *g = c->g;
    const ir_node *n = g->nodes[ps->first + *k];
    npu_status st;
    c->node = n;
    if ((st = grow_layers(c, out, cap_layers)) != NPU_OK)
        return st;
    tile_layer *L = &out->layers[out->n_layers++];
    memset(L, 0, sizeof *L);
    L->node = n;
    L->first_word = (uint32_t)c->n_words;
    c->n_moves = 0;
    int64_t t0 = c->s.end;
    c->lay_dram_bytes = c->lay_sram = 0;
    c->lay_tiles = 0;
    tile_layer_begin(c);
    const ir_node *m = *k + 1 < ps->count ? g->nodes[ps->first + *k + 1] : NULL;
    const ir_node *const *nd = (const ir_node *const *)&g->nodes[ps->first + *k];
    int len = 1, extra = 0; /* nodes of the cascade starting here; those run inside n's tiles */
    while (*k + len < ps->count && group[ps->first + *k + len] == ps->first + *k)
        len++;
    bool fuse = false;
    const ir_node *after = pre_epi_after(c, ps, group, *k, nd, len);
    bool cascade = !after && len > 1 && plan_allows(c, nd, len);
    int how = !after && !cascade && m ? fusable(c, n, m) : 0;
    const ir_node *span[] = {n, after ? nd[1] : m, after};
    layer_cap(c, cascade ? nd : span, cascade ? len : after ? 3 : how > 0 ? 2 : 1);
    if (after) { /* the prologue pair and the residual add in the conv's output stage */
        st = tile_conv_pre_epi(c, nd[0], nd[1], after);
        fuse = true, extra = 2;
    } else if (cascade) {
        st = tile_lower_cascade(c, nd, len, &fuse);
        if (st == NPU_OK && !fuse)
            st = tile_fail(c, "tiler bug: the cascade of %d nodes planned for it does not lower", len);
        extra = len - 1;
    } else if (m) {
        fuse = how > 0;
        extra = 1;
        if (fuse)
            st = tile_conv_fused(c, n, m, how == 2, &fuse);
    }
    if (!fuse && st == NPU_OK)
        st = tile_lower_node(c, n);
    for (int i = 0; i < c->n_moves; i++)
        moved_words(out, c->moves[i].at, c->moves[i].added);
    L->n_words = (uint32_t)(c->n_words - L->first_word);
    L->cycles = c->s.end - t0;
    L->dram_bytes = c->lay_dram_bytes;
    L->tiles = c->lay_tiles;
    L->sram_bytes = c->lay_sram;
    L->macs = node_macs(n);
    L->bound_cycles = bound_cycles(c->t, n, L->macs, L->dram_bytes);
    for (int e = 0; fuse && e < extra && st == NPU_OK; e++) { /* ran inside n's tiles: no words */
        if ((st = grow_layers(c, out, cap_layers)) != NPU_OK)
            break;
        L = &out->layers[out->n_layers++];
        memset(L, 0, sizeof *L);
        L->node = g->nodes[ps->first + *k + 1];
        L->first_word = (uint32_t)c->n_words;
        L->fused = true;
        L->macs = node_macs(L->node);
        (*k)++;
    }
    if (st == NPU_OK && fuse && len == 2 && tile_conv_pre_ok(c, nd[0], nd[1])) {
        /* a prologue pair: the conv's record carries the words (per-layer statistics name the conv) */
        tile_layer *a = &out->layers[out->n_layers - 1 - extra], *b = a + 1;
        a->node = nd[1], b->node = nd[0];
        a->macs = node_macs(nd[1]), b->macs = 0;
        a->bound_cycles = bound_cycles(c->t, nd[1], a->macs, a->dram_bytes);
    }
    return st;
}

/* The NPU step s of the schedule as one segment: one stream of words, its
 * layers in order. */
static npu_status lower_segment(tile_ctx *c, const part_schedule *sched, int s, const int *group, tile_program *out,
                                int *cap_layers)
{
    const part_step *ps = &sched->steps[s];
    npu_status st = NPU_OK;
    tile_segment *seg = &out->segments[out->n_segments++];
    seg->step = s;
    seg->first_word = (uint32_t)c->n_words;
    memset(&c->s, 0, sizeof c->s);
    c->pending_barrier = false;
    c->last_kind = -1;
    tile_gaps_reset(c);
    for (int k = 0; k < ps->count && st == NPU_OK; k++)
        st = lower_layer(c, ps, group, out, cap_layers, &k);
    c->node = NULL;
    if (st == NPU_OK)
        st = end_stream(c);
    seg->n_words = (uint32_t)(c->n_words - seg->first_word);
    return st;
}

/* The words, layers and segments cut to their exact sizes, so that
 * tile_program_free knows what it frees; *cap_layers and *n_npu follow what
 * was reallocated, for the caller's frees on failure. */
static npu_status exact_sizes(tile_ctx *c, tile_program *out, int *cap_layers, int *n_npu)
{
    npu_alloc alloc = c->alloc;
    uint32_t *w = npu_realloc(alloc, c->words, sizeof *c->words * c->cap_words,
                              sizeof *w * (c->n_words ? c->n_words : 1));
    if (w)
        c->words = w, c->cap_words = c->n_words ? c->n_words : 1;
    tile_layer *l = npu_realloc(alloc, out->layers, sizeof *l * (size_t)*cap_layers,
                                sizeof *l * (size_t)(out->n_layers ? out->n_layers : 1));
    if (l)
        out->layers = l, *cap_layers = out->n_layers ? out->n_layers : 1;
    tile_segment *sg = npu_realloc(alloc, out->segments, sizeof *sg * (size_t)(*n_npu + 1),
                                   sizeof *sg * (size_t)(out->n_segments ? out->n_segments : 1));
    if (sg)
        out->segments = sg, *n_npu = (out->n_segments ? out->n_segments : 1) - 1;
    if (!w || !l || !sg)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    return NPU_OK;
}

npu_status tile_build(const tgt_target *t, const ir_graph *g, const part_schedule *sched, const mp_plan *plan,
                      emit_blob *consts, npu_alloc alloc, tile_program *out, npu_err *err)
{
    return tile_build_ex(t, g, sched, plan, consts, alloc, NULL, false, out, err);
}

npu_status tile_build_ex(const tgt_target *t, const ir_graph *g, const part_schedule *sched, const mp_plan *plan,
                         emit_blob *consts, npu_alloc alloc, char *miss, bool serial, tile_program *out,
                         npu_err *err)
{
    memset(out, 0, sizeof *out);
    /* the SRAM level sits at the top of the SRAM; the tiles get what lies below it */
    tgt_target below = *t;
    int64_t level = (plan->sram_bytes + 15) & ~(int64_t)15;
    below.p[TGT_P_SRAM_BYTES] = (t->p[TGT_P_SRAM_BYTES] - level) & ~(int64_t)15;
    if (level > 0 && below.p[TGT_P_SRAM_BYTES] <= 0)
        return npu_fail(err, NPU_EINTERNAL, "tiler: the SRAM level (%lld bytes) leaves no SRAM for tiles",
                        (long long)level);
    tile_ctx c = {.t = &below, .t_full = t, .g = g, .plan = plan, .consts = consts, .alloc = alloc, .err = err,
                  .sram_base = below.p[TGT_P_SRAM_BYTES], .below = &below, .miss = miss, .serial = serial,
                  .pipe_cap = INT64_MAX, .prev_cap = INT64_MAX};
    c.const_off = npu_malloc(alloc, sizeof(int64_t) * (size_t)(g->n_tensors + 1));
    int *group = npu_malloc(alloc, sizeof(int) * (size_t)(g->n_nodes + 1));
    int n_npu = 0;
    for (int s = 0; s < sched->n_steps; s++)
        n_npu += sched->steps[s].unit == IR_UNIT_NPU;
    out->segments = npu_malloc(alloc, sizeof *out->segments * (size_t)(n_npu + 1));
    npu_status st = !c.const_off || !out->segments || !group ? npu_fail(err, NPU_EINTERNAL, "out of memory")
                                                             : plan_cascades(&c, sched, group);
    if (st == NPU_OK)
        st = pos_caps(&c, t->p[TGT_P_SRAM_BYTES]);
    int n_pos = c.pos_cap ? plan->n_positions : 0;
    if (st != NPU_OK) {
        npu_free(alloc, c.pos_cap, sizeof *c.pos_cap * (size_t)n_pos);
        npu_free(alloc, c.const_off, sizeof(int64_t) * (size_t)(g->n_tensors + 1));
        npu_free(alloc, out->segments, sizeof *out->segments * (size_t)(n_npu + 1));
        npu_free(alloc, group, sizeof(int) * (size_t)(g->n_nodes + 1));
        out->segments = NULL;
        return st;
    }
    for (int i = 0; i <= g->n_tensors; i++)
        c.const_off[i] = -1;
    int cap_layers = 0;
    for (int s = 0; s < sched->n_steps && st == NPU_OK; s++)
        if (sched->steps[s].unit == IR_UNIT_NPU)
            st = lower_segment(&c, sched, s, group, out, &cap_layers);
    npu_free(alloc, c.pos_cap, sizeof *c.pos_cap * (size_t)n_pos);
    npu_free(alloc, c.const_off, sizeof(int64_t) * (size_t)(g->n_tensors + 1));
    npu_free(alloc, group, sizeof(int) * (size_t)(g->n_nodes + 1));
    npu_free(alloc, c.work, sizeof *c.work * (size_t)c.cap_work);
    npu_free(alloc, c.comp, sizeof *c.comp * (size_t)c.cap_comp);
    npu_free(alloc, c.gaps, sizeof *c.gaps * (size_t)c.cap_gaps);
    npu_free(alloc, c.moves, sizeof *c.moves * (size_t)c.cap_moves);
    if (st == NPU_OK)
        st = exact_sizes(&c, out, &cap_layers, &n_npu);
    if (st != NPU_OK) {
        npu_free(alloc, c.words, sizeof *c.words * c.cap_words);
        npu_free(alloc, out->layers, sizeof *out->layers * (size_t)cap_layers);
        npu_free(alloc, out->segments, sizeof *out->segments * (size_t)(n_npu + 1));
        memset(out, 0, sizeof *out);
        return st;
    }
    out->words = c.words;
    out->n_words = c.n_words;
    out->sram_peak = c.sram_peak;
    out->sram_need = c.need_peak;
    return NPU_OK;
}

void tile_program_free(tile_program *p, npu_alloc alloc)
{
    if (!p)
        return;
    npu_free(alloc, p->words, sizeof *p->words * (p->n_words ? p->n_words : 1));
    npu_free(alloc, p->layers, sizeof *p->layers * (size_t)(p->n_layers ? p->n_layers : 1));
    npu_free(alloc, p->segments, sizeof *p->segments * (size_t)(p->n_segments ? p->n_segments : 1));
    memset(p, 0, sizeof *p);
}
