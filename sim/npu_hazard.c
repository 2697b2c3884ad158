/* The unsynchronized-access check. Two instructions that touch overlapping
 * memory, one of them writing, must be ordered by what the hardware
 * guarantees whatever the timing: the order of one queue, and tokens (a take
 * is ordered after the signal it consumes), transitively, with sync ordering
 * everything fetched after it. Vector clocks carry that relation: entry q of
 * an instruction's clock is how many instructions of queue q are ordered
 * before it (itself included). An instruction that happens not to overlap in
 * time with a conflicting one, but only by luck of the timing, is a race:
 * another target's numbers would expose it, so it faults here.
 *
 * Boxes are in nibbles (host address x 2), so that a4 DMA boxes, whose
 * DRAM side is int4 codes two per byte, may meet inside a byte without a
 * race. Started instructions are kept as entries in buckets of the 4 KiB pages
 * they touch, so an instruction is compared only with what shares a page
 * with it. An entry leaves a bucket when a later instruction ordered after
 * it covers its bytes on that page (a race with the old one would be a race
 * with the new one), and everywhere once every queue with work left has
 * started an instruction ordered after it (nothing later can race it). */
#include <string.h>

#include "sim/npu_internal.h"

npum_box npum_box_nib(int64_t base, int64_t c, int64_t cs, int64_t h, int64_t hs, int64_t w)
{
    if ((h == 1 || hs == w) && (c == 1 || cs == h * w))
        return (npum_box){base, 1, 0, 1, 0, c * h * w};
    return (npum_box){base, c, cs, h, hs, w};
}

npum_box npum_box_make(int64_t base, int64_t c, int64_t cs, int64_t h, int64_t hs, int64_t w)
{
    return npum_box_nib(2 * base, c, 2 * cs, h, 2 * hs, 2 * w);
}

static int64_t box_end(const npum_box *b)
{
    return b->base + (b->c - 1) * b->cs + (b->h - 1) * b->hs + b->w;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return -floor_div(-a, b);
}

/* Does a row of b intersect [r0, r1)? Rows of plane z start at o + y*hs. */
static bool rows_hit(const npum_box *b, int64_t r0, int64_t r1)
{
    for (int64_t z = 0; z < b->c; z++) {
        int64_t o = b->base + z * b->cs;
        if (b->h == 1 || b->hs == 0) {
            if (o < r1 && o + b->w > r0)
                return true;
            continue;
        }
        /* o + y*hs < r1 and o + y*hs + w > r0 */
        int64_t lo = ceil_div(r0 - b->w - o + 1, b->hs), hi = floor_div(r1 - 1 - o, b->hs);
        if (lo < 0)
            lo = 0;
        if (hi > b->h - 1)
            hi = b->h - 1;
        if (lo <= hi)
            return true;
    }
    return false;
}

enum { BOX_BUDGET = 1 << 20 }; /* rows x planes beyond which overlap is assumed */

bool npum_box_overlap(const npum_box *a, const npum_box *b)
{
    if (a->base >= box_end(b) || b->base >= box_end(a))
        return false;
    if (a->c * a->h * b->c > b->c * b->h * a->c) {
        const npum_box *t = a;
        a = b;
        b = t;
    }
    if (a->c * a->h * b->c > BOX_BUDGET)
        return true; /* conservative */
    for (int64_t z = 0; z < a->c; z++)
        for (int64_t y = 0; y < a->h; y++) {
            int64_t r0 = a->base + z * a->cs + y * a->hs;
            if (rows_hit(b, r0, r0 + a->w))
                return true;
        }
    return false;
}

/* ---- entries and page buckets ----------------------------------------------------------- */

enum { PAGE_BITS = 13, ROWS_MAX = 4096 }; /* 2^13 nibbles: 4 KiB pages */

void npum_hazard_reset(npu_model *m)
{
    m->ent_used = m->nfree = 0;
    for (size_t i = 0; i < m->tab_cap; i++) {
        m->tab[i].page = NPUM_NO_PAGE;
        m->tab[i].n = 0;
    }
    m->tab_used = 0;
}

void npum_hazard_free(npu_model *m)
{
    for (size_t i = 0; i < m->tab_cap; i++)
        npu_free(m->alloc, m->tab[i].ids, m->tab[i].cap * sizeof(uint32_t));
    npu_free(m->alloc, m->tab, m->tab_cap * sizeof *m->tab);
    npu_free(m->alloc, m->ent, m->ent_cap * sizeof *m->ent);
    npu_free(m->alloc, m->ent_free, m->ent_free_cap * sizeof *m->ent_free);
    npu_free(m->alloc, m->pages, m->pages_cap * sizeof *m->pages);
}

static size_t slot_of(const npu_model *m, int64_t page)
{
    return (size_t)(((uint64_t)page * 0x9E3779B97F4A7C15ull) >> 20) & (m->tab_cap - 1);
}

static npum_bucket *find(const npu_model *m, int64_t page)
{
    if (!m->tab_cap)
        return NULL;
    for (size_t i = slot_of(m, page);; i = (i + 1) & (m->tab_cap - 1)) {
        if (m->tab[i].page == page)
            return &m->tab[i];
        if (m->tab[i].page == NPUM_NO_PAGE)
            return NULL;
    }
}

static bool grow_table(npu_model *m)
{
    size_t cap = m->tab_cap ? 2 * m->tab_cap : 256, ocap = m->tab_cap;
    npum_bucket *t = npu_malloc(m->alloc, cap * sizeof *t), *old = m->tab;
    if (!t)
        return false;
    for (size_t i = 0; i < cap; i++)
        t[i] = (npum_bucket){NPUM_NO_PAGE, NULL, 0, 0};
    m->tab = t;
    m->tab_cap = cap;
    for (size_t i = 0; i < ocap; i++) {
        if (old[i].page == NPUM_NO_PAGE) {
            npu_free(m->alloc, old[i].ids, old[i].cap * sizeof(uint32_t));
            continue;
        }
        size_t j = slot_of(m, old[i].page);
        while (t[j].page != NPUM_NO_PAGE)
            j = (j + 1) & (cap - 1);
        t[j] = old[i];
    }
    npu_free(m->alloc, old, ocap * sizeof *old);
    return true;
}

static npum_bucket *get(npu_model *m, int64_t page)
{
    npum_bucket *b = find(m, page);
    if (b)
        return b;
    if (2 * (m->tab_used + 1) > m->tab_cap && !grow_table(m))
        return NULL;
    size_t i = slot_of(m, page);
    while (m->tab[i].page != NPUM_NO_PAGE)
        i = (i + 1) & (m->tab_cap - 1);
    m->tab[i].page = page;
    m->tab[i].n = 0;
    m->tab_used++;
    return &m->tab[i];
}

static bool push_id(npu_model *m, npum_bucket *b, uint32_t id)
{
    uint32_t *p = npum_grow(m, b->ids, &b->cap, sizeof *p, b->n + 1, 8);
    if (!p)
        return false;
    b->ids = p;
    b->ids[b->n++] = id;
    return true;
}

static void unref(npu_model *m, uint32_t id)
{
    if (--m->ent[id].refs == 0)
        m->ent_free[m->nfree++] = id;
}

static bool new_entry(npu_model *m, uint32_t *id)
{
    if (m->nfree) {
        *id = m->ent_free[--m->nfree];
        return true;
    }
    npum_entry *e = npum_grow(m, m->ent, &m->ent_cap, sizeof *e, (size_t)m->ent_used + 1, 256);
    if (!e)
        return false;
    m->ent = e;
    uint32_t *f = npum_grow(m, m->ent_free, &m->ent_free_cap, sizeof *f, m->ent_cap, 256); /* room for all */
    if (!f)
        return false;
    m->ent_free = f;
    *id = m->ent_used++;
    return true;
}

/* The pages a box touches (a superset for boxes of very many rows) into
 * m->pages from *n on; consecutive repeats are dropped. */
static bool add_pages(npu_model *m, const npum_box *b, size_t *n)
{
    int64_t rows = b->c * b->h, last = NPUM_NO_PAGE;
    int64_t planes = rows <= ROWS_MAX ? b->c : (b->c <= ROWS_MAX ? b->c : 1);
    for (int64_t z = 0; z < planes; z++)
        for (int64_t y = 0; y < (rows <= ROWS_MAX ? b->h : 1); y++) {
            int64_t lo = b->base + z * b->cs + y * b->hs, hi = lo + b->w;
            if (rows > ROWS_MAX) /* a whole plane, or the whole extent */
                hi = b->c <= ROWS_MAX ? lo + (b->h - 1) * b->hs + b->w : box_end(b);
            for (int64_t p = lo >> PAGE_BITS; p <= (hi - 1) >> PAGE_BITS; p++) {
                if (p == last)
                    continue;
                int64_t *q = npum_grow(m, m->pages, &m->pages_cap, sizeof *q, *n + 1, 1024);
                if (!q)
                    return false;
                m->pages = q;
                m->pages[(*n)++] = last = p;
            }
        }
    return true;
}

/* ---- the check ------------------------------------------------------------------------------ */

/* Nothing from now on can race e: x (being checked, so still to come) and
 * every later instruction of each queue are ordered after it. */
static bool retired(const npu_model *m, const npum_insn *x, const npum_entry *e)
{
    for (int q = 0; q < m->q_ctrl; q++)
        if (m->started[q] - (q == x->queue) < m->queued_total[q] &&
            m->queue_vc[(size_t)q * (size_t)m->nq + (size_t)e->queue] < e->seq)
            return false;
    return true;
}

static bool box_eq(const npum_box *a, const npum_box *b)
{
    return a->base == b->base && a->c == b->c && a->cs == b->cs && a->h == b->h && a->hs == b->hs && a->w == b->w;
}

/* Does x (ordered after e) cover e's bytes on page [p0, p1), as a writer where e writes? */
static bool dominated(const npum_entry *e, const npum_insn *x, int64_t p0, int64_t p1)
{
    for (int i = 0; i < e->nacc; i++) {
        const npum_access *a = &e->acc[i];
        int64_t lo = a->box.base > p0 ? a->box.base : p0, end = box_end(&a->box), hi = end < p1 ? end : p1;
        if (lo >= hi)
            continue;
        bool covered = false;
        for (int j = 0; j < x->nacc && !covered; j++) {
            const npum_access *b = &x->acc[j];
            covered = (b->write || !a->write) &&
                      (box_eq(&a->box, &b->box) ||
                       (b->box.c == 1 && b->box.h == 1 && b->box.base <= lo && hi <= b->box.base + b->box.w));
        }
        if (!covered)
            return false;
    }
    return true;
}

static npu_status race(npu_model *m, const npum_insn *x, const npum_entry *a, const npum_access *xa,
                       const npum_access *aa, npu_err *err)
{
    tgt_decoded d;
    npu_err e;
    char dis[400] = "?", where[80];
    if (!tgt_decode(m->isa, m->words, m->nwords, a->word, &d, &e))
        tgt_format(m->isa, &d, dis, sizeof dis);
    int64_t lo = xa->box.base > aa->box.base ? xa->box.base : aa->box.base;
    npum_where(m, lo / 2, where, sizeof where);
    return npum_fault(m, err, x->index, x->word, &x->d,
                      "unsynchronized access: it %s %s (%s) at cycle %llu, which instruction %u (word %u) `%s` %s "
                      "(%s), and no token or queue order puts instruction %u before it",
                      xa->write ? "writes" : "reads", where, tgt_fid_name(xa->field), (unsigned long long)x->start,
                      a->index, a->word, dis, aa->write ? "writes" : "reads", tgt_fid_name(aa->field), a->index);
}

/* Compares access p of x with the entries of one bucket, dropping retired ones. */
static npu_status check_bucket(npu_model *m, const npum_insn *x, int p, npum_bucket *b, npu_err *err)
{
    const npum_access *xa = &x->acc[p];
    const uint64_t stamp = (uint64_t)x->index * TGT_MAX_OPERANDS + (uint64_t)p + 1;
    uint32_t k = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        uint32_t id = b->ids[i];
        npum_entry *e = &m->ent[id];
        if (retired(m, x, e)) {
            unref(m, id);
            continue;
        }
        b->ids[k++] = id;
        if (e->stamp == stamp || x->vc[e->queue] >= e->seq)
            continue; /* compared already, or ordered before x */
        e->stamp = stamp;
        for (int q = 0; q < e->nacc; q++)
            if ((xa->write || e->acc[q].write) && npum_box_overlap(&xa->box, &e->acc[q].box))
                return race(m, x, e, xa, &e->acc[q], err); /* the job ends: the bucket need not be tidy */
    }
    b->n = k;
    return NPU_OK;
}

/* Registers x in the bucket of page pg, dropping the entries it covers. */
static bool insert(npu_model *m, const npum_insn *x, uint32_t id, int64_t pg)
{
    npum_bucket *b = get(m, pg);
    if (!b)
        return false;
    int64_t p0 = pg << PAGE_BITS, p1 = p0 + ((int64_t)1 << PAGE_BITS);
    uint32_t k = 0;
    bool here = false;
    for (uint32_t i = 0; i < b->n; i++) {
        uint32_t other = b->ids[i];
        const npum_entry *e = &m->ent[other];
        if (other != id && x->vc[e->queue] >= e->seq && dominated(e, x, p0, p1)) {
            unref(m, other);
            continue;
        }
        here |= other == id;
        b->ids[k++] = other;
    }
    b->n = k;
    if (here)
        return true;
    m->ent[id].refs++;
    return push_id(m, b, id);
}

npu_status npum_hazard_check(npu_model *m, const npum_insn *x, npu_err *err)
{
    size_t starts[TGT_MAX_OPERANDS + 1], n = 0;
    for (int p = 0; p < x->nacc; p++) {
        starts[p] = n;
        if (!add_pages(m, &x->acc[p].box, &n))
            return npu_fail(err, NPU_EINTERNAL, "npu: out of memory");
    }
    starts[x->nacc] = n;
    for (int p = 0; p < x->nacc; p++)
        for (size_t i = starts[p]; i < starts[p + 1]; i++) {
            npum_bucket *b = find(m, m->pages[i]);
            npu_status st = b ? check_bucket(m, x, p, b, err) : NPU_OK;
            if (st)
                return st;
        }
    if (!x->nacc)
        return NPU_OK;
    uint32_t id;
    if (!new_entry(m, &id))
        return npu_fail(err, NPU_EINTERNAL, "npu: out of memory");
    npum_entry *e = &m->ent[id];
    *e = (npum_entry){.index = x->index, .word = x->word, .seq = x->seq, .queue = x->queue, .nacc = x->nacc};
    memcpy(e->acc, x->acc, sizeof e->acc);
    for (size_t i = 0; i < n; i++)
        if (!insert(m, x, id, m->pages[i]))
            return npu_fail(err, NPU_EINTERNAL, "npu: out of memory");
    if (e->refs == 0) /* cannot happen: x is in the bucket of each page it touches */
        m->ent_free[m->nfree++] = id;
    return NPU_OK;
}
