/* The memory-plan stage, the tiler's entry to it: the planner must know
 * which nodes the tiler cascades, because a cascade keeps its intermediates
 * in SRAM and the planner then gives them no DRAM home.
 *
 * The two-level plan (docs/memplan.md "Two levels"): the SRAM the tiles of
 * a one-level plan leave free is offered to the planner for resident
 * tensors; a trial build then finds the ones the tiles cannot read or write
 * in place (a strided box, a DMA copy), which go back to DRAM, until a
 * trial finds none. */
#include <string.h>

#include "tiler/tile_internal.h"

enum { TRIALS = 4 };

/* Builds plan's program into scratch buffers: the SRAM its tiles use, the
 * static cycles of its layers, the resident tensors it could not use in
 * place (miss, when non-NULL). */
static npu_status trial(const tgt_target *t, ir_graph *g, const part_schedule *sched, const mp_plan *plan,
                        npu_alloc alloc, char *miss, int64_t *sram_peak, int64_t *cycles, npu_err *err)
{
    emit_blob consts; /* offsets only: the weights' bytes were most of a trial's time */
    emit_blob_init_measure(&consts, alloc);
    tile_program prog;
    /* Placed serially: the static schedule credits a layer's buffers placed
     * clear of the one before (clear_base) with more than npusim measures,
     * and choosing the capacity on it kept fewer tensors resident
     * (squeezenet1_1 on edge-v1: 116,640 resident bytes instead of 255,536,
     * 2.14M NPU cycles instead of 2.06M). The real build places them clear. */
    npu_status st = tile_build_ex(t, g, sched, plan, &consts, alloc, miss, true, &prog, err);
    if (st == NPU_OK) {
        *sram_peak = prog.sram_need;
        *cycles = 0;
        for (int i = 0; i < prog.n_layers; i++)
            *cycles += prog.layers[i].cycles;
    }
    tile_program_free(&prog, alloc);
    return st;
}

static bool has_npu_step(const part_schedule *sched)
{
    for (int s = 0; s < sched->n_steps; s++)
        if (sched->steps[s].unit == IR_UNIT_NPU)
            return true;
    return false;
}

/* Splits the quantize prologue pairs (a QuantizeLinear grouped with its
 * conv, tile_conv_pre, and the pool after it, tile_conv_pool) apart; false when there are none
 * whose int8 tensor fits cap bytes. tile_cascades weighs a pair against the
 * two apart with every tensor in DRAM, but apart the int8 tensor between
 * them may be SRAM-resident (the fmnist models: the pair was 0.2% slower),
 * so the planner tries both; where it cannot be resident, the split trial
 * would only repeat tile_cascades' answer at the cost of a whole build
 * (zoo mobilenet_v2's compile: +30% with it at every capacity). */
static bool split_quant_pairs(const ir_graph *g, int64_t cap, int *group)
{
    bool any = false;
    for (int i = 0; i + 1 < g->n_nodes; i++)
        if (group[i] == i && group[i + 1] == i && g->nodes[i]->op == IR_OP_QUANTIZE_LINEAR &&
            (int64_t)ir_tensor_bytes(g->nodes[i]->outputs[0]) <= cap) {
            for (int j = i + 1; j < g->n_nodes && group[j] == i; j++)
                group[j] = i + 1; /* the conv keeps a pool cascaded after it */
            any = true;
        }
    return any;
}

/* Splits the depthwise + 1x1 + eltwise chains without expand (three nodes
 * grouped from a grouped conv, tile_chain) into the depthwise + 1x1 pair and
 * the eltwise apart, where the projection's output fits cap bytes, and the
 * pair too where the depthwise output does. As for the quantize pairs,
 * tile_cascades weighs the chain with every tensor in DRAM; with its
 * tensors in SRAM the chain runs as one band (operands read in place), so
 * the eltwise overlaps nothing, and keeping every tensor live across it can
 * push them out of SRAM (the example CNN on edge-v1-lite: 39,688 -> 49,983
 * cycles). A pair keeps the projection's weights resident, loaded whole
 * before its first band; apart, the projection streams them beside its
 * MACs from the resident depthwise output (MobileNetV2's blocks 15 and 16,
 * 153 KB each: 49,990 cycles as a chain, 34,498 apart). */
static bool split_dw_chains(const ir_graph *g, int64_t cap, int *group)
{
    bool any = false;
    for (int i = 0; i + 2 < g->n_nodes; i++) {
        if (group[i] != i || group[i + 1] != i || group[i + 2] != i || g->nodes[i]->op != IR_OP_CONV ||
            ir_attr_int(g->nodes[i], "group", 1) <= 1 || (int64_t)ir_tensor_bytes(g->nodes[i + 1]->outputs[0]) > cap)
            continue;
        group[i + 2] = i + 2, any = true;
        if ((int64_t)ir_tensor_bytes(g->nodes[i]->outputs[0]) <= cap)
            group[i + 1] = i + 1;
    }
    return any;
}

/* Splits the expand chains whose tables run in the convs' output stages
 * (expand, its Lut, the depthwise conv[, its Lut, ...]: tile_chain) into
 * the expand + Lut and depthwise + Lut pairs, the rest apart, where the
 * expanded tensor fits cap bytes. The chain pays where that tensor is too
 * big for the SRAM (EfficientNet-B0's 96 x 112 x 112 expansion went to
 * DRAM and back); where it fits, the pairs with it resident may be faster,
 * and the chain's live range can push other tensors out. */
static bool split_lut_chains(const ir_graph *g, int64_t cap, int *group)
{
    bool any = false;
    for (int i = 0; i + 2 < g->n_nodes; i++) {
        const ir_node *e = g->nodes[i], *le = g->nodes[i + 1];
        const ir_node *d0 = g->nodes[i + 2]; /* the depthwise conv (not a head cascade's pool) */
        if (group[i] != i || group[i + 1] != i || group[i + 2] != i || e->op != IR_OP_CONV ||
            ir_attr_int(e, "group", 1) != 1 || le->op != IR_OP_LUT || d0->op != IR_OP_CONV ||
            ir_attr_int(d0, "group", 1) <= 1 || (int64_t)ir_tensor_bytes(le->outputs[0]) > cap)
            continue;
        int d = i + 2, k = d + 1;
        group[d] = d;
        if (k < g->n_nodes && group[k] == i && g->nodes[k]->op == IR_OP_LUT)
            group[k++] = d;
        for (; k < g->n_nodes && group[k] == i; k++)
            group[k] = k;
        any = true;
    }
    return any;
}

/* Splits the stem chains (a dense KxK conv grouped with the depthwise conv
 * after it, tile_chain) into the conv alone and the rest (the depthwise +
 * 1x1 pair, or the chain without expand), where the conv's output fits cap
 * bytes: on SRAM-resident operands a stem chain runs as one band and
 * overlaps nothing, so the stem needs this trial to keep them in SRAM. */
static bool split_stem_chains(const ir_graph *g, int64_t cap, int *group)
{
    bool any = false;
    for (int i = 0; i + 1 < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i], *m = g->nodes[i + 1];
        if (group[i + 1] != group[i] || !tile_stem_conv(n) || m->op != IR_OP_CONV || ir_attr_int(m, "group", 1) <= 1 ||
            (int64_t)ir_tensor_bytes(n->outputs[0]) > cap)
            continue;
        for (int j = i + 1; j < g->n_nodes && group[j] == group[i]; j++)
            group[j] = i + 1;
        any = true;
    }
    return any;
}

/* Splits the pool off the chains it ends (tile_chain's pool on the
 * depthwise output's tiles: a squeeze's global pool, or split_pool's block
 * pool before it), where that output fits cap bytes:
 * tile_cascades weighs the pool there against a pass that reads it back
 * from DRAM, but with the output SRAM-resident the pool apart reads it in
 * place, and the chain may then keep it whole (EfficientNet-B0 on
 * edge-v1-wide: block 2.0's 301 KB depthwise output went to DRAM and back,
 * 1,083,450 -> 1,136,478 NPU cycles, without this trial; its stem chain's
 * 401 KB output likewise, 1,075,870 -> 1,090,973 with the block pool in the
 * chain). */
static bool split_gap_tails(const ir_graph *g, int64_t cap, int *group)
{
    bool any = false;
    for (int i = 1; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        bool pool = n->op == IR_OP_GLOBAL_AVERAGE_POOL || n->op == IR_OP_AVERAGE_POOL;
        if (!pool || group[i] == i || group[i - 1] != group[i] || (i + 1 < g->n_nodes && group[i + 1] == group[i]) ||
            ir_use_count(g, n->inputs[0]) < 2 ||
            (int64_t)ir_tensor_bytes(n->inputs[0]) > cap) /* a squeeze: the excitation reads its input too */
            continue;
        group[i] = i;
        any = true;
    }
    return any;
}

enum { SPLIT_QUANT = 1, SPLIT_CHAINS = 2, SPLIT_GAP = 4 };

/* What the capacities tried found: the best plan and its static cycles,
 * and the SRAM level of every plan that built, with the fewest cycles a
 * plan of that level took. */
enum { MAX_LEVELS = 32, REFINE = 4 };
typedef struct found {
    mp_plan *best;
    int64_t cycles;
    int n;
    int64_t level[MAX_LEVELS], at[MAX_LEVELS];
} found;

static void found_plan(found *f, const mp_plan *p, int64_t cycles)
{
    int64_t level = (p->sram_bytes + 15) & ~(int64_t)15;
    int i = 0;
    while (i < f->n && f->level[i] != level)
        i++;
    if (i == f->n && f->n < MAX_LEVELS)
        f->level[f->n] = level, f->at[f->n++] = cycles;
    else if (i < f->n && cycles < f->at[i])
        f->at[i] = cycles;
    if (cycles < f->cycles)
        *f->best = *p, f->cycles = cycles;
}

/* The two-level plan for a capacity of cap bytes into f when it checks
 * and builds with every resident tensor in place (found_plan). cascades:
 * as decided for the SRAM the residents leave (a cascade chosen for the whole SRAM may not fit below them); split
 * (SPLIT_*) runs the quantize prologue pairs apart, the chains (the
 * depthwise chains without expand, the expand chains with tables, the stem
 * chains) apart, or both (nothing to try when a kind asked for has none:
 * with the eltwise epilogue a chain may pay where its quantize pair does
 * not, so the two are tried apart). */
static npu_status at_capacity(const tgt_target *t, ir_graph *g, const part_schedule *sched, npu_alloc alloc,
                              mp_options mo, int64_t cap, const int *cascades, int split, found *f, npu_err *err)
{
    int64_t peak = 0, cycles = 0;
    npu_err e;
    int *group = npu_arena_alloc(g->arena, sizeof(int) * (size_t)(g->n_nodes + 1));
    char *no = npu_arena_alloc(g->arena, (size_t)g->n_tensors + 1);
    char *miss = npu_arena_alloc(g->arena, (size_t)g->n_tensors + 1);
    if (!group || !no || !miss)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    memcpy(group, cascades, sizeof(int) * (size_t)g->n_nodes);
    if ((split & SPLIT_QUANT) && !split_quant_pairs(g, cap, group))
        return NPU_OK;
    if ((split & SPLIT_GAP) && !split_gap_tails(g, cap, group))
        return NPU_OK;
    if (split & SPLIT_CHAINS) { /* every kind of chain, whichever there are */
        bool any = split_dw_chains(g, cap, group);
        any |= split_lut_chains(g, cap, group);
        any |= split_stem_chains(g, cap, group);
        if (!any)
            return NPU_OK;
    }
    memset(no, 0, (size_t)g->n_tensors + 1);
    mo.group = group, mo.no_sram = no, mo.sram_bytes = cap;
    for (int k = 0; k < TRIALS; k++) {
        mp_plan p2;
        npu_status st = mp_plan_graph(g, sched, &mo, &p2, err);
        if (st == NPU_OK)
            st = mp_check(g, &p2, err);
        if (st != NPU_OK || p2.sram_tensors == 0)
            return st;
        memset(miss, 0, (size_t)g->n_tensors + 1);
        if (trial(t, g, sched, &p2, alloc, miss, &peak, &cycles, &e) != NPU_OK)
            return NPU_OK; /* not at this capacity */
        int fresh = 0;
        for (int i = 0; i < g->n_tensors; i++) {
            fresh += miss[i] && !no[i];
            no[i] |= miss[i];
        }
        if (!miss[g->n_tensors]) { /* every resident tensor in place */
            found_plan(f, &p2, cycles);
            return NPU_OK;
        }
        if (!fresh)
            return NPU_OK; /* a miss no tensor can be blamed for */
    }
    return NPU_OK;
}

static bool was_tried(const int64_t *tried, int n, int64_t cap)
{
    for (int k = 0; k < n; k++)
        if (tried[k] == cap)
            return true;
    return false;
}

/* The two-level plans for a capacity of cap bytes, the cascades decided
 * for the SRAM below it, with each kind of split (at_capacity). */
static npu_status at_capacity_splits(const tgt_target *t, ir_graph *g, const part_schedule *sched, npu_alloc alloc,
                                     mp_options mo, int64_t cap, found *f, npu_err *err)
{
    npu_err e;
    tgt_target below = *t;
    below.p[TGT_P_SRAM_BYTES] -= cap;
    int *group = npu_arena_alloc(g->arena, sizeof(int) * (size_t)(g->n_nodes + 1));
    if (!group)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    if (tile_cascades(&below, g, sched, alloc, group, &e) != NPU_OK)
        return NPU_OK;
    npu_status st = NPU_OK;
    /* splitting the chains splits their squeeze pools too: SPLIT_GAP only without SPLIT_CHAINS */
    for (int split = 0; split <= (SPLIT_QUANT | SPLIT_GAP) && st == NPU_OK; split++)
        if (!((split & SPLIT_GAP) && (split & SPLIT_CHAINS)))
            st = at_capacity(t, g, sched, alloc, mo, cap, group, split, f, err);
    return st;
}

/* The two-level plan into *plan when one beats the one-level plan's static
 * cycles; *plan is left alone otherwise. Capacities tried: what the
 * one-level tiles leave, and half and a quarter of the SRAM (smaller tiles,
 * more residents), each with and without the quantize prologue pairs and
 * the depthwise chains, the fewest cycles winning. The cascades are decided
 * for the SRAM below the capacity, but a plan may take less of it, so the
 * levels of the plans found are tried as capacities too, the REFINE best
 * of them: cascades that did not fit below the capacity may fit below the
 * level (EfficientNet-B0's stem chain with its block pool on edge-v1:
 * 188,066 static cycles below half the SRAM against 184,766 apart, 151,668
 * below the 176 KB level a plan there got). Not only the best plan's level:
 * the best before that step need not be the best after it (with the chains'
 * last bands stored by chunk, a quarter of the SRAM won first, 2,309,778
 * static cycles, and the 176 KB level of a plan at half the SRAM then gave
 * 2,242,949; that level was not half the SRAM's best plan's). */
static npu_status two_level(const tgt_target *t, ir_graph *g, const part_schedule *sched, npu_alloc alloc,
                            mp_options mo, mp_plan *plan, npu_err *err)
{
    int64_t peak = 0, sram = t->p[TGT_P_SRAM_BYTES];
    npu_err e;
    found f = {.best = plan};
    if (trial(t, g, sched, plan, alloc, NULL, &peak, &f.cycles, &e) != NPU_OK)
        return NPU_OK; /* the real build will say why */
    int64_t tried[3 + REFINE] = {(sram - peak - 16) & ~(int64_t)15, sram / 2, sram / 4};
    npu_status st = NPU_OK;
    for (int i = 0; i < 3 + REFINE && st == NPU_OK; i++) {
        if (i >= 3) { /* the best level found not tried yet */
            int64_t best = INT64_MAX;
            tried[i] = 0;
            for (int k = 0; k < f.n; k++)
                if (!was_tried(tried, i, f.level[k]) && f.at[k] < best)
                    best = f.at[k], tried[i] = f.level[k];
        }
        if (tried[i] > 0 && !was_tried(tried, i, tried[i]))
            st = at_capacity_splits(t, g, sched, alloc, mo, tried[i], &f, err);
    }
    return st;
}

/* Ops whose NPU lowering addresses every activation through
 * tile_tensor_addr and DMA boxes in element units, so a packed tensor's
 * nibble addresses reach it unchanged. Views, Concat, Split, Slice,
 * Transpose, Gather (aliases and byte copies) and MatMul of two activations
 * are left out. */
static bool a4_op(const ir_node *n)
{
    switch (n->op) {
    case IR_OP_CONV: case IR_OP_GEMM: case IR_OP_MAX_POOL: case IR_OP_AVERAGE_POOL:
    case IR_OP_GLOBAL_AVERAGE_POOL: case IR_OP_GLOBAL_MAX_POOL: case IR_OP_ADD: case IR_OP_SUB:
    case IR_OP_MUL: case IR_OP_MIN: case IR_OP_MAX: case IR_OP_REQUANTIZE: case IR_OP_LUT:
        return true;
    case IR_OP_MATMUL: return n->n_inputs >= 2 && n->inputs[1] && n->inputs[1]->data;
    default: return false;
    }
}

const char *tile_a4_packable(const tgt_target *t, const ir_graph *g)
{
    const tgt_isa *isa = t->isa;
    if (!(t->act_dtypes & TGT_DT_INT4) ||
        !tgt_insn_field(isa, tgt_insn_for_sem(isa, TGT_SEM_DMA_LOAD), TGT_F_A4) ||
        !tgt_insn_field(isa, tgt_insn_for_sem(isa, TGT_SEM_DMA_STORE), TGT_F_A4))
        return NULL;
    char *pk = npu_arena_alloc(g->arena, (size_t)g->n_tensors + 1);
    if (!pk)
        return NULL; /* unpacked: still correct */
    int n = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        const ir_tensor *x = g->tensors[i];
        pk[i] = (x->flags & IR_TENSOR_INT4_CODES) && x->dtype == IR_I8 && !x->data && x->producer &&
                !(x->flags & (IR_TENSOR_INPUT | IR_TENSOR_OUTPUT));
    }
    for (int i = 0; i < g->n_inputs + g->n_outputs; i++) {
        const ir_tensor *x = i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs];
        pk[x->id] = 0; /* the application's bytes */
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *nd = g->nodes[i];
        if (nd->dead || (nd->unit == IR_UNIT_NPU && a4_op(nd)))
            continue;
        for (int j = 0; j < nd->n_inputs + nd->n_outputs; j++) { /* host kernels and byte moves read bytes */
            const ir_tensor *x = j < nd->n_inputs ? nd->inputs[j] : nd->outputs[j - nd->n_inputs];
            if (x)
                pk[x->id] = 0;
        }
    }
    for (int i = 0; i < g->n_tensors; i++)
        n += pk[i];
    return n ? pk : NULL;
}

npu_status tile_memplan(const tgt_target *t, ir_graph *g, const part_schedule *sched, npu_alloc alloc, mp_plan *plan,
                        npu_err *err)
{
    int *group = npu_arena_alloc(g->arena, sizeof(int) * (size_t)(g->n_nodes + 1));
    npu_status st = group ? tile_cascades(t, g, sched, alloc, group, err)
                          : npu_fail(err, NPU_EINTERNAL, "out of memory");
    mp_options mo = {.align = 16, .group = group, .packed = tile_a4_packable(t, g)};
    if (st == NPU_OK)
        st = mp_plan_graph(g, sched, &mo, plan, err);
    if (st == NPU_OK)
        st = mp_check(g, plan, err);
    if (st == NPU_OK && has_npu_step(sched))
        st = two_level(t, g, sched, alloc, mo, plan, err);
    return st;
}
