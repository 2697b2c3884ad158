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
 * Started instructions stay "active" until every queue with work left has
 * started an instruction ordered after them: nothing later can race them. */
#include <string.h>

#include "sim/npu_internal.h"

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

static bool retired(const npu_model *m, const npum_active *a)
{
    for (int q = 0; q < m->q_ctrl; q++)
        if (m->started[q] < m->queued_total[q] && m->queue_vc[(size_t)q * (size_t)m->nq + (size_t)a->queue] < a->seq)
            return false;
    return true;
}

static npu_status race(npu_model *m, const npum_insn *x, const npum_active *a, const npum_access *xa,
                       const npum_access *aa, npu_err *err)
{
    tgt_decoded d;
    npu_err e;
    char dis[400] = "?", where[80];
    if (!tgt_decode(m->isa, m->words, m->nwords, a->word, &d, &e))
        tgt_format(m->isa, &d, dis, sizeof dis);
    int64_t lo = xa->box.base > aa->box.base ? xa->box.base : aa->box.base;
    npum_where(m, lo, where, sizeof where);
    return npum_fault(m, err, x->index, x->word, &x->d,
                      "unsynchronized access: it %s %s (%s) at cycle %llu, which instruction %u (word %u) `%s` %s "
                      "(%s), and no token or queue order puts instruction %u before it",
                      xa->write ? "writes" : "reads", where, tgt_fid_name(xa->field), (unsigned long long)x->start,
                      a->index, a->word, dis, aa->write ? "writes" : "reads", tgt_fid_name(aa->field), a->index);
}

npu_status npum_hazard_check(npu_model *m, const npum_insn *x, npu_err *err)
{
    size_t k = 0;
    for (size_t i = 0; i < m->nactive; i++)
        if (!retired(m, &m->active[i]))
            m->active[k++] = m->active[i];
    m->nactive = k;
    for (size_t i = 0; i < m->nactive; i++) {
        const npum_active *a = &m->active[i];
        if (x->vc[a->queue] >= a->seq)
            continue; /* ordered before x */
        for (int p = 0; p < x->nacc; p++)
            for (int q = 0; q < a->nacc; q++)
                if ((x->acc[p].write || a->acc[q].write) && npum_box_overlap(&x->acc[p].box, &a->acc[q].box))
                    return race(m, x, a, &x->acc[p], &a->acc[q], err);
    }
    if (!x->nacc)
        return NPU_OK;
    if (m->nactive == m->active_cap) {
        size_t cap = m->active_cap ? 2 * m->active_cap : 64;
        npum_active *p = npu_realloc(m->alloc, m->active, m->active_cap * sizeof *p, cap * sizeof *p);
        if (!p)
            return npu_fail(err, NPU_EINTERNAL, "npu: out of memory");
        m->active = p;
        m->active_cap = cap;
    }
    npum_active *a = &m->active[m->nactive++];
    a->index = x->index;
    a->word = x->word;
    a->queue = x->queue;
    a->seq = x->seq;
    a->nacc = x->nacc;
    memcpy(a->acc, x->acc, sizeof a->acc);
    return NPU_OK;
}
