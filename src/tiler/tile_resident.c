/* SRAM-resident operands (docs/tiler.md "SRAM-resident tensors"): a box
 * between a work's SRAM slot and a tensor the memory plan keeps in SRAM
 * (TILE_REGION_SRAM) is not transferred; the computes that would read the
 * slot after the load, or write it before the store, take the tensor's own
 * SRAM address instead. That needs the box to be one dense byte range on
 * both sides (a whole tensor, whole planes, a flat chunk), so that the
 * slot's byte i is the tensor's byte dram + i; or, where the ISA has plane
 * strides (src_cs, dst_cs, b_cs), dense rows in each plane (a row band of
 * every channel): the slot's plane k is then the tensor's plane at
 * dram + k * dram_cs, and a conv or dwconv operand of whole such planes
 * takes the tensor's address and that plane stride. */
#include <string.h>

#include "tiler/tile_internal.h"

enum { MAX_SEGS = 32 };

/* Slot bytes [s0, s1) are the resident bytes [s0 + delta, s1 + delta) of
 * tensor t; with plane > 0, slot plane k ([o + k plane, + plane), o the
 * box's slot origin) is the resident plane at o + delta + k cs. */
typedef struct seg {
    int64_t s0, s1, delta;
    int t;
    int64_t plane, cs, o;
} seg;

typedef struct segs {
    int n;
    seg s[MAX_SEGS];
} segs;

/* The box's SRAM side: its rows and planes one after another. */
static bool sram_dense(const tile_box *b)
{
    return (b->h == 1 || b->sram_hs == b->w) && (b->c == 1 || b->sram_cs == b->h * b->w);
}

static bool box_dense(const tile_box *b)
{
    return sram_dense(b) && (b->h == 1 || b->dram_hs == b->w) && (b->c == 1 || b->dram_cs == b->h * b->w);
}

/* Dense in SRAM, each plane's rows one dense run in the tensor (full rows): a plane-strided segment. */
static bool box_planes(const tile_ctx *c, const tile_box *b)
{
    bool rows = b->h == 1 || b->dram_hs == b->w;
    int64_t most = tile_fmax(c, TGT_SEM_CONV, TGT_F_SRC_CS);
    return sram_dense(b) && rows && b->c > 1 && b->dram_cs >= b->h * b->w && b->dram_cs <= most &&
           b->dram_cs <= tile_fmax(c, TGT_SEM_DWCONV, TGT_F_SRC_CS);
}

static int64_t box_extent(const tile_box *b)
{
    return (b->c - 1) * b->sram_cs + (b->h - 1) * b->sram_hs + b->w;
}

/* The resident root whose SRAM bytes hold address a while the current node
 * runs (the SRAM level reuses bytes over time), or -1. */
static int tensor_at(const tile_ctx *c, int64_t a)
{
    const mp_plan *p = c->plan;
    int pos = -1;
    for (int i = 0; p->node_pos && i < c->g->n_nodes; i++)
        if (c->g->nodes[i] == c->node)
            pos = p->node_pos[i];
    for (int t = 0; t < p->n_tensors; t++) {
        const mp_tensor *m = &p->t[t];
        if (m->level == MP_LEVEL_SRAM && m->alias_of < 0 && m->offset >= 0 && a >= c->sram_base + m->offset &&
            a < c->sram_base + m->offset + m->size && (pos < 0 || (m->first_pos <= pos && pos <= m->last_pos)))
            return t;
    }
    return -1;
}

/* A resident operand that cannot be used in place: in a trial, mark its
 * tensor (the pipeline is then dropped); otherwise the plan was not made
 * for these tiles. */
static npu_status miss(tile_ctx *c, int t, const char *why)
{
    if (c->miss) {
        if (t >= 0)
            c->miss[t] = 1;
        c->miss[c->g->n_tensors] = 1; /* any miss at all */
        c->n_missed++;
        return NPU_OK;
    }
    return tile_fail(c, "tiler bug: SRAM-resident '%s' %s", t >= 0 ? c->g->tensors[t]->name : "?", why);
}

static void drop_overlaps(segs *a, int64_t s0, int64_t s1)
{
    int k = 0;
    for (int i = 0; i < a->n; i++)
        if (a->s[i].s1 <= s0 || a->s[i].s0 >= s1)
            a->s[k++] = a->s[i];
    a->n = k;
}

/* A load or store group boundary list (bound[0..n): the index where each
 * later group starts) after the box at index k was removed: the boundaries
 * after it move down. */
static void drop_box(int *bound, int n, int k)
{
    for (int s = 0; s < n; s++)
        if (bound[s] > k)
            bound[s]--;
}

/* Groups left empty by removals merge into their neighbours (an earlier
 * group's compute then waits or signals for nothing); the count kept. */
static int drop_empty_groups(int *bound, int *comp, int n, int total)
{
    int ns = 0;
    for (int s = 0; s < n; s++) {
        int prev = ns ? bound[ns - 1] : 0;
        if (bound[s] > prev && bound[s] < total)
            bound[ns] = bound[s], comp[ns++] = comp[s];
    }
    return ns;
}

static npu_status add_seg(tile_ctx *c, segs *a, const tile_box *b, bool planes)
{
    int t = tensor_at(c, b->dram);
    if (a->n == MAX_SEGS)
        return miss(c, t, "is read or written in too many pieces at once");
    int64_t bytes = b->c * b->h * b->w, delta = b->dram - b->sram;
    drop_overlaps(a, b->sram, b->sram + bytes);
    for (int i = 0; !planes && i < a->n; i++)
        if (!a->s[i].plane && a->s[i].delta == delta && a->s[i].t == t && a->s[i].s1 == b->sram) {
            a->s[i].s1 += bytes; /* the rest of a flat copy */
            return NPU_OK;
        }
    a->s[a->n++] = (seg){b->sram, b->sram + bytes, delta, t, planes ? b->h * b->w : 0, planes ? b->dram_cs : 0,
                         b->sram};
    return NPU_OK;
}

/* Do two segments map slot bytes alike? */
static bool same_map(const seg *a, const seg *b)
{
    return a->delta == b->delta && a->plane == b->plane && a->cs == b->cs && (!a->plane || a->o == b->o);
}

/* The segment holding [a0, a1): 1 inside one (*map), 0 clear of all, -1 partly (its tensor in *t). */
static int find_seg(const segs *a, int64_t a0, int64_t a1, seg *map, int *t)
{
    for (int i = a->n - 1; i >= 0; i--) {
        const seg *s = &a->s[i];
        if (a1 <= s->s0 || a0 >= s->s1)
            continue;
        *t = s->t;
        if (a0 >= s->s0 && a1 <= s->s1) {
            *map = *s;
            return 1;
        }
        return -1;
    }
    return 0;
}

/* The work's loads: resident ones become segments of `in` (removed), the
 * others clear the segments their slot bytes overwrite. */
static npu_status rewrite_loads(tile_ctx *c, tile_work *w, segs *in)
{
    int k = 0;
    npu_status st = NPU_OK;
    for (int i = 0; i < w->n_load && st == NPU_OK; i++) {
        tile_box *b = &w->load[i];
        if (b->region != TILE_REGION_SRAM) {
            drop_overlaps(in, b->sram, b->sram + box_extent(b));
            w->load[k++] = *b;
            continue;
        }
        bool planes = !box_dense(b) && box_planes(c, b);
        if ((!box_dense(b) && !planes) || c->gate_next) {
            st = miss(c, tensor_at(c, b->dram), "is read as a strided box");
            w->load[k++] = *b;
            continue;
        }
        st = add_seg(c, in, b, planes);
        drop_box(w->split_load, w->n_split, k);
    }
    w->n_load = k;
    w->n_split = drop_empty_groups(w->split_load, w->split_comp, w->n_split, w->n_load);
    return st;
}

static npu_status rewrite_stores(tile_ctx *c, tile_work *w, segs *out)
{
    int k = 0;
    npu_status st = NPU_OK;
    out->n = 0;
    for (int i = 0; i < w->n_store && st == NPU_OK; i++) {
        tile_box *b = &w->store[i];
        if (b->region != TILE_REGION_SRAM) {
            w->store[k++] = *b;
        } else if ((!box_dense(b) && !box_planes(c, b)) || w->n_comp == 0 || c->gate_next) {
            st = miss(c, tensor_at(c, b->dram), "is written as a strided box or by a copy");
            w->store[k++] = *b;
        } else {
            st = add_seg(c, out, b, !box_dense(b));
            drop_box(w->store_split, w->n_store_split, k);
        }
    }
    w->n_store = k;
    w->n_store_split = drop_empty_groups(w->store_split, w->store_comp, w->n_store_split, w->n_store);
    return st;
}

/* Every byte of a store segment must be written by this work's computes. */
static bool covered(const seg *s, const segs *written);

/* A read of [a0, a1) against this work's writes: 0 clear of them; 1 all
 * of them one mapping (a resident one covering it); -1 otherwise. */
static int written_map(const segs *w, int64_t a0, int64_t a1, seg *map, int *t)
{
    bool any = false, mixed = false;
    seg m = {0};
    for (int i = 0; i < w->n; i++) {
        if (a1 <= w->s[i].s0 || a0 >= w->s[i].s1)
            continue;
        if (!any)
            m = w->s[i], *t = w->s[i].t, any = true;
        mixed |= !same_map(&w->s[i], &m);
    }
    if (!any)
        return 0;
    seg want = m;
    want.s0 = a0, want.s1 = a1;
    if (mixed || ((m.delta != 0 || m.plane) && !covered(&want, w)))
        return -1;
    *map = m;
    return 1;
}

/* The mapping of one operand [a0, a1): writes go to a store segment;
 * reads see this work's earlier writes, else a load segment. */
static npu_status operand_map(tile_ctx *c, const tgt_operand *op, int64_t a0, segs *in, const segs *out,
                              segs *written, seg *map)
{
    int64_t a1 = a0 + op->bytes;
    int t = -1, r;
    *map = (seg){0};
    if (op->write) {
        if ((r = find_seg(out, a0, a1, map, &t)) < 0)
            return miss(c, t, "is written in part by one instruction");
        if (written->n < MAX_SEGS) { /* the written bytes, mapped as their segment */
            seg w = r > 0 ? *map : (seg){0}; /* a plane segment's origin stays its box's */
            w.s0 = a0, w.s1 = a1, w.t = t;
            written->s[written->n++] = w;
        }
        return NPU_OK;
    }
    if ((r = written_map(written, a0, a1, map, &t)) != 0)
        return r < 0 ? miss(c, t, "is read in part by one instruction") : NPU_OK;
    if ((r = find_seg(in, a0, a1, map, &t)) < 0)
        return miss(c, t, "is read in part by one instruction");
    return NPU_OK;
}

static bool covered(const seg *s, const segs *written)
{
    int64_t at = s->s0;
    for (bool grew = true; grew && at < s->s1;) {
        grew = false;
        for (int i = 0; i < written->n; i++)
            if (same_map(&written->s[i], s) && written->s[i].s0 <= at && written->s[i].s1 > at)
                at = written->s[i].s1, grew = true;
    }
    return at >= s->s1;
}

/* The plane stride field of a conv or dwconv operand (-1: it has none). */
static int cs_field(const tile_ctx *c, const tile_comp *cp, int addr)
{
    if (cp->sem != TGT_SEM_CONV && cp->sem != TGT_SEM_DWCONV)
        return -1;
    int f = addr == TGT_F_SRC ? TGT_F_SRC_CS : addr == TGT_F_DST ? TGT_F_DST_CS : addr == TGT_F_B ? TGT_F_B_CS : -1;
    return f >= 0 && tgt_insn_field(c->t->isa, tile_insn(c, cp->sem), (tgt_fid)f) ? f : -1;
}

/* Is [a0, a1) written again by a compute of w after its k-th? Only the
 * last write of a byte goes to a resident tensor: an earlier one (a conv's
 * tile that an eltwise then rewrites in place) stays in the slot, so that
 * the resident bytes it would land on (the eltwise's other operand) are
 * still there when read. */
static bool written_later(const tile_ctx *c, const tile_work *w, int k, int64_t a0, int64_t a1)
{
    for (int k2 = k + 1; k2 < w->n_comp; k2++) {
        const tile_comp *cp = &c->comp[w->first_comp + k2];
        tgt_operand ops[TGT_MAX_OPERANDS];
        int nop = tgt_operands(c->t->isa, tile_insn(c, cp->sem), cp->v, ops);
        for (int i = 0; i < nop; i++)
            if (ops[i].write && !ops[i].dram && cp->v[ops[i].addr] < a1 && cp->v[ops[i].addr] + ops[i].bytes > a0)
                return true;
    }
    return false;
}

/* After the rewrite: a compute's resident write must not meet a resident
 * read of a later compute of the work, nor one of its own unless both are
 * the same bytes of an elementwise op (each element read before written),
 * a conv's eltwise epilogue over its operand among them. */
static npu_status check_hazards(tile_ctx *c, const tile_work *w)
{
    for (int k = 0; k < w->n_comp; k++) {
        const tile_comp *cp = &c->comp[w->first_comp + k];
        tgt_operand ops[TGT_MAX_OPERANDS];
        int nop = tgt_operands(c->t->isa, tile_insn(c, cp->sem), cp->v, ops);
        bool elementwise = cp->sem == TGT_SEM_ELTWISE || cp->sem == TGT_SEM_LUT || cp->sem == TGT_SEM_REQUANT;
        for (int i = 0; i < nop; i++) {
            int64_t a0 = cp->v[ops[i].addr], a1 = a0 + ops[i].bytes;
            if (!ops[i].write || ops[i].dram || a0 < c->t->p[TGT_P_SRAM_BYTES])
                continue;
            for (int k2 = k; k2 < w->n_comp; k2++) {
                const tile_comp *cq = &c->comp[w->first_comp + k2];
                tgt_operand rq[TGT_MAX_OPERANDS];
                int nr = tgt_operands(c->t->isa, tile_insn(c, cq->sem), cq->v, rq);
                for (int r = 0; r < nr; r++) {
                    int64_t b0 = cq->v[rq[r].addr], b1 = b0 + rq[r].bytes;
                    if (rq[r].write || rq[r].dram || b1 <= a0 || b0 >= a1)
                        continue;
                    bool epi = cp->v[TGT_F_EPI_ELT] && ops[i].addr == TGT_F_DST && rq[r].addr == TGT_F_B;
                    if (k2 > k || !(elementwise || epi) || b0 != a0 || b1 != a1)
                        return miss(c, tensor_at(c, a0), "would be overwritten while a tile still reads it");
                }
            }
        }
    }
    return NPU_OK;
}

static npu_status rewrite_comps(tile_ctx *c, tile_work *w, segs *in, const segs *out)
{
    segs written = {0};
    npu_status st = NPU_OK;
    for (int k = 0; k < w->n_comp && st == NPU_OK; k++) {
        tile_comp *cp = &c->comp[w->first_comp + k];
        tgt_operand ops[TGT_MAX_OPERANDS];
        int nop = tgt_operands(c->t->isa, tile_insn(c, cp->sem), cp->v, ops);
        int64_t nv[TGT_F_COUNT];
        memcpy(nv, cp->v, sizeof nv);
        for (int i = 0; i < nop && st == NPU_OK; i++) {
            int64_t a0 = cp->v[ops[i].addr];
            seg m;
            if (ops[i].dram || ops[i].bytes <= 0)
                continue;
            bool final = ops[i].write && !written_later(c, w, k, a0, a0 + ops[i].bytes);
            static const segs none = {0};
            st = operand_map(c, &ops[i], a0, in, final || !ops[i].write ? out : &none, &written, &m);
            int64_t to = a0 + m.delta;
            if (st == NPU_OK && m.plane) { /* whole planes of the segment, with a plane stride field */
                int f = cs_field(c, cp, ops[i].addr);
                if (f < 0 || (a0 - m.o) % m.plane || ops[i].bytes % m.plane || ops[i].plane != m.plane)
                    st = miss(c, m.t, "is a band of planes that the instruction cannot address");
                to = m.o + m.delta + (a0 - m.o) / m.plane * m.cs;
                if (st == NPU_OK && nv[f] && nv[f] != m.cs)
                    st = miss(c, m.t, "is read and written through one field");
                if (st == NPU_OK)
                    nv[f] = m.cs;
            }
            if (st == NPU_OK && to != a0 && nv[ops[i].addr] != a0 && nv[ops[i].addr] != to)
                st = miss(c, tensor_at(c, to), "is read and written through one field");
            if (to != a0)
                nv[ops[i].addr] = to;
        }
        memcpy(cp->v, nv, sizeof nv);
    }
    /* slot bytes a compute rewrote (a prologue scaling its input tile in place, whole or chunk by chunk)
     * are no longer the resident tensor's: a later work reading the slot reads them there (a squeeze-excite
     * projection whose channel tiles share the one scaled input) */
    for (int i = 0; i < written.n && st == NPU_OK; i++)
        for (int k = 0; written.s[i].delta == 0 && !written.s[i].plane && k < in->n && st == NPU_OK; k++) {
            const seg *g = &in->s[k], *x = &written.s[i], whole = {g->s0, g->s1, 0, g->t, 0, 0, 0};
            if (g->s1 > x->s0 && g->s0 < x->s1 && !covered(&whole, &written))
                st = miss(c, g->t, "is rewritten in part in its slot"); /* the rest was never loaded there */
        }
    for (int i = 0; i < written.n && st == NPU_OK; i++)
        if (written.s[i].delta == 0 && !written.s[i].plane)
            drop_overlaps(in, written.s[i].s0, written.s[i].s1);
    for (int i = 0; i < out->n && st == NPU_OK; i++)
        if (!covered(&out->s[i], &written))
            st = miss(c, out->s[i].t, "is stored from bytes another tile wrote");
    return st == NPU_OK ? check_hazards(c, w) : st;
}

bool tile_tensor_resident(const tile_ctx *c, const ir_tensor *x)
{
    const mp_plan *p = c->plan;
    return p->sram_bytes > 0 && x && !x->data && x->id >= 0 && x->id < p->n_tensors &&
           p->t[x->id].level == MP_LEVEL_SRAM;
}

bool tile_plane_strides(const tile_ctx *c)
{
    static const tgt_sem sems[] = {TGT_SEM_CONV, TGT_SEM_DWCONV};
    static const tgt_fid fields[] = {TGT_F_SRC_CS, TGT_F_DST_CS, TGT_F_B_CS};
    for (int i = 0; i < 2; i++)
        for (int f = 0; f < 3; f++)
            if (tile_insn(c, sems[i]) < 0 || !tgt_insn_field(c->t->isa, tile_insn(c, sems[i]), fields[f]))
                return false;
    return true;
}

bool tile_resident_io(const tile_ctx *c, const ir_node *n)
{
    for (int j = 0; j < n->n_inputs + n->n_outputs; j++)
        if (tile_tensor_resident(c, j < n->n_inputs ? n->inputs[j] : n->outputs[j - n->n_inputs]))
            return true;
    return false;
}

/* The resident tensor of a work's first box on one (loads or stores), or -1. */
static int resident_of(const tile_ctx *c, const tile_box *b, int n)
{
    for (int i = 0; i < n; i++)
        if (b[i].region == TILE_REGION_SRAM)
            return tensor_at(c, b[i].dram);
    return -1;
}

npu_status tile_resident(tile_ctx *c)
{
    if (c->plan->sram_bytes <= 0)
        return NPU_OK;
    segs in = {0}, out;
    npu_status st = NPU_OK;
    int in_t = -1, out_t = -1; /* a resident tensor the layer reads, writes */
    for (int j = 0; j < c->n_work && st == NPU_OK; j++) {
        tile_work *w = &c->work[j];
        int lt = resident_of(c, w->load, w->n_load), stt = resident_of(c, w->store, w->n_store);
        in_t = lt >= 0 ? lt : in_t, out_t = stt >= 0 ? stt : out_t;
        if (w->n_comp == 0 && (lt >= 0 || stt >= 0)) { /* a copy has no compute to read or write in place */
            st = miss(c, lt >= 0 ? lt : stt, "is copied by DMA");
            continue;
        }
        if (st == NPU_OK)
            st = rewrite_loads(c, w, &in);
        if (st == NPU_OK)
            st = rewrite_stores(c, w, &out);
        if (st == NPU_OK)
            st = rewrite_comps(c, w, &in, &out);
    }
    /* the pipeline wants its works storing alike (tile_stores_alike), and works >= 2 all loading or none */
    for (int j = 1; j < c->n_work && st == NPU_OK; j++) {
        if (!tile_stores_alike(c->work, c->n_work, j))
            st = miss(c, out_t, "is stored by some tiles of a layer and not others");
        else if (j > 2 && (c->work[j].n_load > 0) != (c->work[2].n_load > 0))
            st = miss(c, in_t, "is read in place by some tiles of a layer and not others");
    }
    return st;
}
