/* The event model of docs/isa.md "Execution" (docs/npu-model.md): an
 * in-order fetcher issuing into one queue per DMA channel, the MAC array and
 * the vector unit (queue_depth each); counting-semaphore tokens; sync and end
 * at the fetcher; DMA transfers serialized on a DRAM bus and a flash bus.
 *
 * Time only moves to the next completion. At a given cycle, completions go
 * first (their tokens count at once), then starts, oldest instruction first,
 * then fetch. An instruction executes functionally when it starts, so the
 * functional order is the timed order; the race check (npu_hazard.c) makes
 * sure that order is one the tokens guarantee. */
#include <math.h>
#include <string.h>

#include "sim/npu_internal.h"

/* ---- vector clocks and tokens ------------------------------------------------------ */

static void vc_join(uint32_t *to, const uint32_t *from, int nq)
{
    for (int i = 0; i < nq; i++)
        if (from[i] > to[i])
            to[i] = from[i];
}

static bool tokens_ready(const npu_model *m, uint64_t mask)
{
    for (int t = 0; t < m->ntok; t++)
        if ((mask >> t & 1) && m->tok[t].count == 0)
            return false;
    return true;
}

/* Takes one of each token in mask; the clock learns what its producer knew. */
static void tokens_take(npu_model *m, uint64_t mask, uint32_t *vc)
{
    for (int t = 0; t < m->ntok; t++) {
        npum_token *k = &m->tok[t];
        if (!(mask >> t & 1))
            continue;
        k->count--;
        vc_join(vc, k->snap + (size_t)k->head * (size_t)m->nq, m->nq);
        k->head = (k->head + 1) % k->cap;
        k->len--;
    }
}

static npu_status tokens_give(npu_model *m, uint64_t mask, const uint32_t *vc, npu_err *err)
{
    const size_t nq = (size_t)m->nq;
    for (int t = 0; t < m->ntok; t++) {
        npum_token *k = &m->tok[t];
        if (!(mask >> t & 1))
            continue;
        if (k->len == k->cap) { /* grow the ring, unrolling it */
            uint32_t cap = k->cap ? 2 * k->cap : 8;
            uint32_t *p = npu_malloc(m->alloc, (size_t)cap * nq * sizeof *p);
            if (!p)
                return npu_fail(err, NPU_EINTERNAL, "npu: out of memory");
            for (uint32_t i = 0; i < k->len; i++)
                memcpy(p + i * nq, k->snap + ((k->head + i) % k->cap) * nq, nq * sizeof *p);
            npu_free(m->alloc, k->snap, (size_t)k->cap * nq * sizeof *p);
            k->snap = p;
            k->cap = cap;
            k->head = 0;
        }
        uint32_t *cum = m->tok_cum + (size_t)t * nq;
        vc_join(cum, vc, m->nq); /* the k-th take knows the first k signals happened */
        memcpy(k->snap + ((k->head + k->len) % k->cap) * nq, cum, nq * sizeof *cum);
        k->len++;
        k->count++;
    }
    return NPU_OK;
}

/* ---- queues -------------------------------------------------------------------------- */

static npum_insn *ring_at(npu_model *m, int q, uint32_t i)
{
    return &m->ring[(size_t)q * (size_t)m->depth + (m->ring_head[q] + i) % (uint32_t)m->depth];
}

/* Copies an instruction into a slot that owns its own clock storage. */
static void insn_copy(const npu_model *m, npum_insn *to, const npum_insn *from)
{
    uint32_t *vc = to->vc;
    *to = *from;
    to->vc = vc;
    memcpy(vc, from->vc, (size_t)m->nq * sizeof *vc);
}

static bool drained(const npu_model *m)
{
    for (int q = 0; q < m->q_ctrl; q++)
        if (m->ring_len[q] || m->running[q])
            return false;
    return true;
}

/* end, and a sync with drain, wait until every queue and unit is empty. */
static bool drains(const npu_model *m, const npum_insn *x)
{
    return x->unit == TGT_UNIT_CTRL && (m->isa->insns[x->d.insn].sem == TGT_SEM_END || x->d.v[TGT_F_DRAIN]);
}

/* ---- start and completion ------------------------------------------------------------ */

/* How often x uses each bank it touches while it is active (a DMA during its
 * transfer): its SRAM bytes over those cycles and the ports of its banks
 * (sram.port_bytes each per cycle), at most 1. */
static double bank_duty(const npu_model *m, const npum_insn *x, uint64_t cycles)
{
    double nb = (double)__builtin_popcountll(x->banks), port = (double)m->t->p[TGT_P_SRAM_PORT_BYTES];
    double d = (double)(x->sram_read + x->sram_write) / ((double)(cycles ? cycles : 1) * port * nb);
    return d < 1.0 ? d : 1.0;
}

/* SRAM bank conflicts: while another unit is active on a bank r also uses,
 * the two hit it in the same cycle with the product of their duties
 * (accesses spread evenly over each one's banks and cycles), and r, the
 * later one, stalls a cycle each time. r is active over [r->act, r->end). */
static uint64_t bank_stall(const npu_model *m, const npum_insn *r)
{
    if (!r->banks)
        return 0;
    double stall = 0, dr = bank_duty(m, r, r->end - r->act);
    for (int q = 0; q < m->nq; q++) {
        const npum_insn *o = &m->run[q];
        if (q == r->queue || !m->running[q] || !(o->banks & r->banks))
            continue;
        uint64_t lo = o->act > r->act ? o->act : r->act, hi = o->end < r->end ? o->end : r->end;
        if (hi > lo)
            stall += (double)(hi - lo) * (double)__builtin_popcountll(o->banks & r->banks) * dr *
                     bank_duty(m, o, o->end - o->act - o->bank_stall);
    }
    return (uint64_t)stall;
}

/* The other masters' DRAM accesses that reached the bus by cycle until go
 * first, in arrival order (first come, first served; an access arriving
 * while a DMA transfers waits behind it): each holds the bus for its bytes
 * at the bus's rate. */
static void foreign_serve(npu_model *m, uint64_t until)
{
    const npu_mem *mem = m->mem;
    if (!mem || m->foreign_next >= mem->n_dram_foreign)
        return;
    double bpc = tgt_bus_bytes_per_cycle(m->t, TGT_BUS_DRAM);
    uint64_t *free_at = &m->bus_free[NPUM_BUS_DRAM];
    while (m->foreign_next < mem->n_dram_foreign && mem->dram_foreign[m->foreign_next].at <= until) {
        const sim_bus_use *u = &mem->dram_foreign[m->foreign_next++];
        if (*free_at < u->at)
            *free_at = u->at;
        *free_at += (uint64_t)ceil((double)u->bytes / bpc);
        m->st.foreign_dram += u->bytes;
    }
}

static npu_status start(npu_model *m, const npum_insn *x, npu_err *err)
{
    const int q = x->queue, nq = m->nq;
    npum_insn *r = &m->run[q];
    insn_copy(m, r, x);
    vc_join(r->vc, m->queue_vc + (size_t)q * (size_t)nq, nq);
    tokens_take(m, r->wait, r->vc);
    if (drains(m, r)) /* everything fetched before it has completed */
        for (int k = 0; k < m->q_ctrl; k++)
            vc_join(r->vc, m->queue_vc + (size_t)k * (size_t)nq, nq);
    r->seq = ++m->started[q];
    r->vc[q] = r->seq;
    memcpy(m->queue_vc + (size_t)q * (size_t)nq, r->vc, (size_t)nq * sizeof *r->vc);
    r->start = m->now;
    m->st.insns++;
    npu_status st = npum_hazard_check(m, r, err);
    if (st || (st = npum_execute(m, r, err)))
        return st;
    r->act = m->now;
    r->end = m->now + (uint64_t)r->dur;
    if (r->bus != NPUM_BUS_NONE) { /* latency on the channel, then the transfer on the shared bus */
        uint64_t b = m->now + (uint64_t)r->bus_latency;
        if (r->bus == NPUM_BUS_DRAM)
            foreign_serve(m, b);
        if (m->bus_free[r->bus] > b)
            b = m->bus_free[r->bus];
        r->act = b;
        r->end = b + (uint64_t)(r->dur - r->bus_latency);
    }
    r->bank_stall = bank_stall(m, r);
    r->end += r->bank_stall;
    if (r->bus != NPUM_BUS_NONE)
        m->bus_free[r->bus] = r->end; /* a stalled transfer holds the bus */
    m->running[q] = true;
    m->st.macs += r->macs;
    m->st.dram_read += r->dram_read;
    m->st.dram_write += r->dram_write;
    m->st.flash_read += r->flash_read;
    m->st.sram_read += r->sram_read;
    m->st.sram_write += r->sram_write;
    m->st.bank_stall += r->bank_stall;
    if (r->sram_end > m->st.sram_peak)
        m->st.sram_peak = r->sram_end;
    return NPU_OK;
}

static npu_status complete(npu_model *m, int q, npu_err *err)
{
    npum_insn *r = &m->run[q];
    m->running[q] = false;
    npu_status st = tokens_give(m, r->signal, r->vc, err);
    if (st)
        return st;
    m->st.busy[r->unit] += r->end - r->start;
    if (q == m->q_ctrl) {
        vc_join(m->fetch_vc, r->vc, m->nq); /* everything fetched after a sync is ordered after it */
        if (m->isa->insns[r->d.insn].sem == TGT_SEM_END)
            m->done = true;
    }
    if (m->event_fn) {
        npu_insn_event e = {.word = r->word, .index = r->index, .insn = r->d.insn, .unit = r->unit,
                            .queue = r->unit == TGT_UNIT_DMA ? q : 0, .start = r->start, .end = r->end,
                            .macs = r->macs, .dram_read = r->dram_read, .dram_write = r->dram_write,
                            .flash_read = r->flash_read, .int4_macs = r->int4_macs,
                            .sram_read = r->sram_read, .sram_write = r->sram_write, .bank_stall = r->bank_stall};
        m->event_fn(m->event_ud, &e);
    }
    return NPU_OK;
}

/* ---- deadlock ------------------------------------------------------------------------- */

static int token_list(const npu_model *m, uint64_t mask, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int t = 0; t < m->ntok && n + 8 < cap; t++)
        if ((mask >> t & 1) && m->tok[t].count == 0)
            n += (size_t)snprintf(buf + n, cap - n, "%s%d", n ? ", " : "", t);
    return (int)n;
}

/* Nothing runs and nothing can start: name the oldest instruction waiting on a token. */
static npu_status deadlock(npu_model *m, npu_err *err)
{
    const npum_insn *who = NULL;
    int blocked = 0;
    for (int q = 0; q < m->q_ctrl; q++)
        if (m->ring_len[q]) {
            const npum_insn *h = ring_at(m, q, 0);
            blocked++;
            if (!who || h->index < who->index)
                who = h;
        }
    if (m->have_fetch && m->fetch.unit == TGT_UNIT_CTRL && !tokens_ready(m, m->fetch.wait)) {
        blocked++;
        if (!who || m->fetch.index < who->index)
            who = &m->fetch;
    }
    if (!who) /* cannot happen: something is always waiting when the stream is not done */
        return npu_fail(err, NPU_EINTERNAL, "npu: stalled at cycle %llu with nothing waiting",
                        (unsigned long long)m->now);
    char toks[256];
    token_list(m, who->wait, toks, sizeof toks);
    return npum_fault(m, err, who->index, who->word, &who->d,
                      "deadlock at cycle %llu: waits on token %s, which nothing running or able to start will "
                      "signal (%d instruction%s blocked%s)",
                      (unsigned long long)m->now, toks, blocked, blocked == 1 ? "" : "s",
                      m->have_fetch && m->fetch.unit != TGT_UNIT_CTRL ? ", fetch stalled on a full queue" : "");
}

/* ---- the loop ----------------------------------------------------------------------------- */

static void reset(npu_model *m)
{
    const size_t nq = (size_t)m->nq;
    m->now = 0;
    m->done = m->have_fetch = false;
    m->fetch_index = m->fetch_word = 0;
    memset(m->started, 0, nq * sizeof *m->started);
    memset(m->ring_head, 0, nq * sizeof *m->ring_head);
    memset(m->ring_len, 0, nq * sizeof *m->ring_len);
    memset(m->running, 0, nq * sizeof *m->running);
    memset(m->bus_free, 0, sizeof m->bus_free);
    m->foreign_next = 0;
    memset(m->queue_vc, 0, nq * nq * sizeof *m->queue_vc);
    memset(m->fetch_vc, 0, nq * sizeof *m->fetch_vc);
    memset(m->tok_cum, 0, (size_t)m->ntok * nq * sizeof *m->tok_cum);
    for (int t = 0; t < m->ntok; t++)
        m->tok[t].count = m->tok[t].head = m->tok[t].len = 0;
    npum_hazard_reset(m);
}

/* Starts every queue head that can, oldest first; *progress when one did. */
static npu_status start_heads(npu_model *m, bool *progress, npu_err *err)
{
    for (;;) {
        int best = -1;
        for (int q = 0; q < m->q_ctrl; q++) {
            if (m->running[q] || !m->ring_len[q])
                continue;
            const npum_insn *h = ring_at(m, q, 0);
            if (tokens_ready(m, h->wait) && (best < 0 || h->index < ring_at(m, best, 0)->index))
                best = q;
        }
        if (best < 0)
            return NPU_OK;
        npu_status st = start(m, ring_at(m, best, 0), err);
        if (st)
            return st;
        m->ring_head[best] = (m->ring_head[best] + 1) % (uint32_t)m->depth;
        m->ring_len[best]--;
        *progress = true;
    }
}

/* Issues in order until the fetcher stalls: a full queue, a sync or end that
 * cannot start, or a running sync (which holds fetch until it completes). */
static npu_status fetch(npu_model *m, bool *progress, npu_err *err)
{
    while (!m->running[m->q_ctrl] && m->fetch_index < m->n_insns) {
        npum_insn *x = &m->fetch;
        npu_status st;
        if (!m->have_fetch) {
            if ((st = npum_prepare(m, x, err)))
                return st;
            memcpy(x->vc, m->fetch_vc, (size_t)m->nq * sizeof *x->vc);
            m->have_fetch = true;
        }
        if (x->unit == TGT_UNIT_CTRL) {
            if (!tokens_ready(m, x->wait) || (drains(m, x) && !drained(m)))
                return NPU_OK;
            if ((st = start(m, x, err)))
                return st;
        } else {
            if (m->ring_len[x->queue] == (uint32_t)m->depth)
                return NPU_OK;
            insn_copy(m, ring_at(m, x->queue, m->ring_len[x->queue]), x);
            m->ring_len[x->queue]++;
        }
        m->have_fetch = false;
        m->fetch_index++;
        m->fetch_word += (uint32_t)x->d.nwords;
        *progress = true;
    }
    return NPU_OK;
}

npu_status npum_run(npu_model *m, npu_err *err)
{
    reset(m);
    for (;;) {
        npu_status st;
        for (int q = 0; q < m->nq; q++)
            if (m->running[q] && m->run[q].end <= m->now && (st = complete(m, q, err)))
                return st;
        if (m->done) {
            m->st.cycles = m->now;
            return NPU_OK;
        }
        bool progress;
        do {
            progress = false;
            if ((st = start_heads(m, &progress, err)) || (st = fetch(m, &progress, err)))
                return st;
        } while (progress);
        uint64_t next = UINT64_MAX;
        for (int q = 0; q < m->nq; q++)
            if (m->running[q] && m->run[q].end < next)
                next = m->run[q].end;
        if (next == UINT64_MAX)
            return deadlock(m, err);
        m->now = next;
    }
}
