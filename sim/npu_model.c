/* The NPU model: lifetime, preparation of each fetched instruction (decode,
 * tgt_check, timing, the memory it touches with the region checks), fault
 * messages, and the sim_npu_ops seam. docs/npu-model.md. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sim/npu_internal.h"

/* ---- faults ------------------------------------------------------------------ */

npu_status npum_fault(npu_model *m, npu_err *err, uint32_t index, uint32_t word, const tgt_decoded *d,
                      const char *fmt, ...)
{
    char what[768], dis[512] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (d)
        tgt_format(m->isa, d, dis, sizeof dis);
    if (d)
        return npu_fail(err, NPU_EUSER, "npu: instruction %u (word %u) `%s`: %s", index, word, dis, what);
    return npu_fail(err, NPU_EUSER, "npu: instruction %u (word %u): %s", index, word, what);
}

void npum_where(const npu_model *m, int64_t addr, char *buf, size_t cap)
{
    int64_t s = (int64_t)(intptr_t)m->sram;
    if (addr >= s && addr < s + (int64_t)m->sram_size) {
        snprintf(buf, cap, "SRAM 0x%llx", (unsigned long long)(addr - s));
        return;
    }
    for (int r = 0; m->mem && r < TGT_REGION_COUNT; r++) {
        const npu_mem_region *g = &m->mem->region[r];
        int64_t b = (int64_t)(intptr_t)g->ptr;
        if (g->ptr && addr >= b && addr < b + (int64_t)g->size) {
            snprintf(buf, cap, "%s+0x%llx", tgt_enum_name(TGT_F_REGION, r), (unsigned long long)(addr - b));
            return;
        }
    }
    snprintf(buf, cap, "host address 0x%llx", (unsigned long long)addr);
}

void *npum_grow(npu_model *m, void *p, size_t *cap, size_t elem, size_t need, size_t first)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : first;
    while (c < need)
        c *= 2;
    void *q = npu_realloc(m->alloc, p, *cap * elem, c * elem);
    if (q)
        *cap = c;
    return q;
}

void *npum_scratch(npu_model *m, size_t n)
{
    void *p = npum_grow(m, m->scratch, &m->scratch_size, 1, n, 4096);
    if (p)
        m->scratch = p;
    return p;
}

/* ---- lifetime ------------------------------------------------------------------ */

static int mask_width(const tgt_isa *isa)
{
    int w = 0;
    for (int i = 0; i < isa->ninsns; i++)
        for (int k = 0; k < isa->insns[i].nfields; k++) {
            const tgt_field *f = &isa->insns[i].fields[k];
            if ((f->fid == TGT_F_WAIT || f->fid == TGT_F_SIGNAL) && f->width > w)
                w = f->width;
        }
    return w;
}

npu_status npu_model_new(const tgt_target *t, npu_alloc alloc, npu_model **out, npu_err *err)
{
    *out = NULL;
    if (!alloc.fn)
        alloc = npu_alloc_default();
    int ntok = mask_width(t->isa);
    if (ntok > NPUM_MAX_TOKENS)
        return npu_fail(err, NPU_EUSER, "npu: target %s: %d tokens, the model handles at most %d", t->name, ntok,
                        NPUM_MAX_TOKENS);
    npu_model *m = npu_malloc(alloc, sizeof *m);
    if (!m)
        return npu_fail(err, NPU_EINTERNAL, "npu: out of memory");
    memset(m, 0, sizeof *m);
    m->t = t;
    m->isa = t->isa;
    m->alloc = alloc;
    m->ntok = ntok;
    m->nch = (int)t->p[TGT_P_DMA_CHANNELS];
    m->q_mac = m->nch;
    m->q_vec = m->nch + 1;
    m->q_ctrl = m->nch + 2;
    m->nq = m->nch + 3;
    m->depth = (int)t->p[TGT_P_QUEUE_DEPTH];
    m->sram_size = (size_t)t->p[TGT_P_SRAM_BYTES];
    size_t nq = (size_t)m->nq, slots = nq * (size_t)m->depth + nq + 1;
    m->sram = npu_malloc(alloc, m->sram_size);
    m->queued_total = npu_malloc(alloc, 4 * nq * sizeof(uint32_t));
    m->ring = npu_malloc(alloc, nq * (size_t)m->depth * sizeof *m->ring);
    m->run = npu_malloc(alloc, nq * sizeof *m->run);
    m->running = npu_malloc(alloc, nq * sizeof *m->running);
    m->vc_pool = npu_malloc(alloc, (slots + nq + 1 + (size_t)ntok) * nq * sizeof(uint32_t));
    if (!m->sram || !m->queued_total || !m->ring || !m->run || !m->running || !m->vc_pool) {
        npu_model_free(m);
        return npu_fail(err, NPU_EINTERNAL, "npu: out of memory");
    }
    memset(m->sram, 0, m->sram_size);
    m->started = m->queued_total + nq;
    m->ring_head = m->started + nq;
    m->ring_len = m->ring_head + nq;
    uint32_t *vc = m->vc_pool;
    for (size_t i = 0; i < nq * (size_t)m->depth; i++, vc += nq)
        m->ring[i].vc = vc;
    for (size_t i = 0; i < nq; i++, vc += nq)
        m->run[i].vc = vc;
    m->fetch.vc = vc;
    vc += nq;
    m->queue_vc = vc;
    vc += nq * nq;
    m->fetch_vc = vc;
    vc += nq;
    m->tok_cum = vc;
    *out = m;
    return NPU_OK;
}

/* nk_parallel's run through the model's pool. */
static void pool_run(void *ud, void (*fn)(void *ctx, int part, int parts), void *ctx)
{
    npu_pool_run(ud, fn, ctx);
}

npu_status npu_model_set_threads(npu_model *m, int threads, npu_err *err)
{
    npu_pool_free(m->pool);
    m->pool = NULL;
    m->par = (nk_parallel){0};
    if (threads <= 1)
        return NPU_OK;
    if (!(m->pool = npu_pool_new(threads, m->alloc)))
        return npu_fail(err, NPU_EINTERNAL, "npu: out of memory for %d threads", threads);
    m->par = (nk_parallel){pool_run, m->pool, npu_pool_threads(m->pool), NPUM_PAR_MIN_MACS};
    return NPU_OK;
}

void npu_model_free(npu_model *m)
{
    if (!m)
        return;
    npu_alloc a = m->alloc;
    npu_pool_free(m->pool);
    size_t nq = (size_t)m->nq, slots = nq * (size_t)m->depth + nq + 1;
    for (int i = 0; i < m->ntok; i++)
        npu_free(a, m->tok[i].snap, (size_t)m->tok[i].cap * nq * sizeof(uint32_t));
    npum_hazard_free(m);
    npu_free(a, m->vc_pool, (slots + nq + 1 + (size_t)m->ntok) * nq * sizeof(uint32_t));
    npu_free(a, m->running, nq * sizeof *m->running);
    npu_free(a, m->run, nq * sizeof *m->run);
    npu_free(a, m->ring, nq * (size_t)m->depth * sizeof *m->ring);
    npu_free(a, m->queued_total, 4 * nq * sizeof(uint32_t));
    npu_free(a, m->sram, m->sram_size);
    npu_free(a, m->scratch, m->scratch_size);
    npu_free(a, m->epi_b, m->epi_b_cap);
    npu_free(a, m->cs_src, m->cs_src_cap);
    npu_free(a, m->cs_dst, m->cs_dst_cap);
    npu_free(a, m->pk, m->pk_cap);
    npu_free(a, m->pk_in, m->pk_in_cap);
    npu_free(a, m->words_buf, m->words_cap * sizeof(uint32_t));
    npu_free(a, m, sizeof *m);
}

void npu_model_set_events(npu_model *m, npu_event_fn fn, void *ud)
{
    m->event_fn = fn;
    m->event_ud = ud;
}

const npu_run_stats *npu_model_totals(const npu_model *m)
{
    return &m->totals;
}

uint8_t *npu_model_sram(npu_model *m)
{
    return m->sram;
}

size_t npu_model_sram_size(const npu_model *m)
{
    return m->sram_size;
}

/* ---- preparing an instruction ------------------------------------------------------ */

static int queue_of(const npu_model *m, tgt_unit u, int64_t ch)
{
    switch (u) {
    case TGT_UNIT_DMA: return (int)ch;
    case TGT_UNIT_MAC: return m->q_mac;
    case TGT_UNIT_VECTOR: return m->q_vec;
    default: return m->q_ctrl;
    }
}

/* The DRAM side of a DMA: the region's checks, then its box. */
static npu_status dma_dram(npu_model *m, npum_insn *x, const tgt_operand *op, npu_err *err)
{
    const int64_t *v = x->d.v;
    int64_t r = v[TGT_F_REGION];
    const char *rn = tgt_enum_name(TGT_F_REGION, r);
    const npu_mem_region *g = r >= 0 && r < TGT_REGION_COUNT ? &m->mem->region[r] : NULL;
    const char *side = r == TGT_REGION_FLASH ? "flash" : "DRAM";
    if (!g)
        return npum_fault(m, err, x->index, x->word, &x->d, "bad region %lld", (long long)r);
    if (!g->ptr)
        return npum_fault(m, err, x->index, x->word, &x->d, "region %s is not mapped for this job", rn);
    bool a4 = v[TGT_F_A4] != 0; /* dram and the extent in nibbles */
    uint64_t lo = (uint64_t)v[TGT_F_DRAM], hi = lo + (uint64_t)op->bytes;
    if (a4)
        lo /= 2, hi = (hi + 1) / 2;
    if (hi > g->size)
        return npum_fault(m, err, x->index, x->word, &x->d, "%s access [0x%llx, 0x%llx) outside region %s (size 0x%llx)",
                          side, (unsigned long long)lo, (unsigned long long)hi, rn, (unsigned long long)g->size);
    if (op->write && !g->writable)
        return npum_fault(m, err, x->index, x->word, &x->d, "write to read-only region %s at [0x%llx, 0x%llx)", rn,
                          (unsigned long long)lo, (unsigned long long)hi);
    npum_access *a = &x->acc[x->nacc++];
    if (a4)
        a->box = npum_box_nib(2 * (int64_t)(intptr_t)g->ptr + v[TGT_F_DRAM], v[TGT_F_C], v[TGT_F_DRAM_CS],
                              v[TGT_F_H], v[TGT_F_DRAM_HS], v[TGT_F_W]);
    else
        a->box = npum_box_make((int64_t)(intptr_t)(g->ptr + lo), v[TGT_F_C], v[TGT_F_DRAM_CS], v[TGT_F_H],
                               v[TGT_F_DRAM_HS], v[TGT_F_W]);
    a->write = op->write;
    a->sram = false;
    a->field = op->addr;
    x->bus = tgt_region_bus(m->t, r) == TGT_BUS_FLASH ? NPUM_BUS_FLASH : NPUM_BUS_DRAM;
    uint64_t bytes = (uint64_t)tgt_dma_bus_bytes(v);
    if (op->write)
        x->dram_write = bytes;
    else if (x->bus == NPUM_BUS_FLASH)
        x->flash_read = bytes;
    else
        x->dram_read = bytes;
    return NPU_OK;
}

/* Elementwise semantics may write over an input of the same place and size. */
static bool in_place_ok(tgt_sem s, const npum_access *w, const npum_access *r)
{
    bool same = w->box.base == r->box.base && w->box.w == r->box.w;
    if (s == TGT_SEM_ELTWISE || s == TGT_SEM_LUT || s == TGT_SEM_REQUANT)
        return same && r->field != TGT_F_TABLE;
    if (same && w->field == TGT_F_DST && r->field == TGT_F_B) /* the eltwise epilogue over its operand */
        return true;
    return same && w->field == TGT_F_PSUM && r->field == TGT_F_PSUM; /* accumulating partial sums */
}

/* The banks an SRAM box spans (contiguous banks of sram.bytes / banks) and
 * its bytes, for the conflict model and the energy. */
static void note_sram(const npu_model *m, npum_insn *x, const npum_access *a)
{
    const npum_box *b = &a->box; /* in nibbles */
    int64_t lo = b->base / 2 - (int64_t)(intptr_t)m->sram, bytes = b->c * b->h * b->w / 2;
    int64_t hi = lo + ((b->c - 1) * b->cs + (b->h - 1) * b->hs + b->w) / 2; /* one past the last byte */
    int64_t nb = m->t->p[TGT_P_SRAM_BANKS], bank = m->t->p[TGT_P_SRAM_BYTES] / nb;
    if (bytes <= 0 || hi <= lo)
        return;
    for (int64_t k = lo / bank; k <= (hi - 1) / bank && k < nb; k++)
        x->banks |= 1ull << k;
    if (a->write)
        x->sram_write += (uint64_t)bytes;
    else
        x->sram_read += (uint64_t)bytes;
}

static npu_status resolve_operands(npu_model *m, npum_insn *x, npu_err *err)
{
    const tgt_insn *in = &m->isa->insns[x->d.insn];
    const int64_t *v = x->d.v;
    tgt_operand ops[TGT_MAX_OPERANDS];
    int n = tgt_operands(m->isa, x->d.insn, v, ops);
    int64_t sram = (int64_t)(intptr_t)m->sram;
    x->nacc = 0;
    x->bus = NPUM_BUS_NONE;
    for (int i = 0; i < n; i++) {
        if (ops[i].bytes <= 0)
            continue;
        if (ops[i].dram) {
            npu_status st = dma_dram(m, x, &ops[i], err);
            if (st)
                return st;
            continue;
        }
        npum_access *a = &x->acc[x->nacc++];
        int64_t at = v[ops[i].addr];
        if (in->sem == TGT_SEM_DMA_LOAD || in->sem == TGT_SEM_DMA_STORE)
            a->box = npum_box_make(sram + at, v[TGT_F_C], v[TGT_F_SRAM_CS], v[TGT_F_H], v[TGT_F_SRAM_HS], v[TGT_F_W]);
        else if (ops[i].planes) /* planes apart: the bytes between them are not touched */
            a->box = npum_box_make(sram + at, ops[i].planes, ops[i].cs, 1, 0, ops[i].plane);
        else
            a->box = npum_box_make(sram + at, 1, 0, 1, 0, ops[i].bytes);
        a->write = ops[i].write;
        a->sram = true;
        a->field = ops[i].addr;
        if ((uint64_t)(at + ops[i].bytes) > x->sram_end)
            x->sram_end = (uint64_t)(at + ops[i].bytes);
        note_sram(m, x, a);
    }
    /* a unit reading what it is overwriting gives whatever its datapath order gives: refuse it */
    for (int i = 0; i < x->nacc; i++)
        for (int j = 0; j < x->nacc; j++) {
            const npum_access *w = &x->acc[i], *r = &x->acc[j];
            if (i == j || !w->write || r->write || !w->sram || !r->sram || !npum_box_overlap(&w->box, &r->box) ||
                in_place_ok(in->sem, w, r))
                continue;
            char a[64], b[64];
            npum_where(m, w->box.base / 2, a, sizeof a);
            npum_where(m, r->box.base / 2, b, sizeof b);
            return npum_fault(m, err, x->index, x->word, &x->d, "output %s (%s) overlaps input %s (%s)",
                              tgt_fid_name(w->field), a, tgt_fid_name(r->field), b);
        }
    return NPU_OK;
}

static uint64_t macs_of(tgt_sem s, const int64_t *v)
{
#define V(f) ((uint64_t)v[TGT_F_##f])
    switch (s) {
    case TGT_SEM_CONV: return V(OC) * V(OH) * V(OW) * V(IC) * V(KH) * V(KW);
    case TGT_SEM_DWCONV: return V(C) * V(OH) * V(OW) * V(KH) * V(KW);
    case TGT_SEM_MATMUL: return V(M) * V(N) * V(K);
    default: return 0;
    }
#undef V
}

npu_status npum_prepare(npu_model *m, npum_insn *x, npu_err *err)
{
    npu_err e;
    uint32_t *vc = x->vc;
    memset(x, 0, sizeof *x);
    x->vc = vc;
    x->index = m->fetch_index;
    x->word = m->fetch_word;
    if (tgt_decode(m->isa, m->words, m->nwords, x->word, &x->d, &e))
        return npum_fault(m, err, x->index, x->word, NULL, "%s", e.msg);
    const tgt_insn *in = &m->isa->insns[x->d.insn];
    if (tgt_check(m->t, x->d.insn, x->d.v, &e))
        return npum_fault(m, err, x->index, x->word, &x->d, "%s", e.msg);
    if (tgt_timing(m->t, x->d.insn, x->d.v, &x->dur, &e))
        return npum_fault(m, err, x->index, x->word, &x->d, "%s", e.msg);
    x->unit = in->unit;
    x->queue = queue_of(m, in->unit, x->d.v[TGT_F_CH]);
    x->wait = (uint64_t)x->d.v[TGT_F_WAIT];
    x->signal = (uint64_t)x->d.v[TGT_F_SIGNAL];
    x->macs = macs_of(in->sem, x->d.v);
    x->int4_macs = x->d.v[TGT_F_W4] ? x->macs : 0;
    npu_status st = resolve_operands(m, x, err);
    if (st)
        return st;
    if (x->bus != NPUM_BUS_NONE) {
        int64_t lat = m->t->p[x->bus == NPUM_BUS_FLASH ? TGT_P_FLASH_LATENCY : TGT_P_DRAM_LATENCY];
        x->bus_latency = lat < x->dur ? lat : x->dur;
    }
    return NPU_OK;
}

/* ---- one job ------------------------------------------------------------------- */

/* Decodes the whole stream once: faults on an undecodable word before anything
 * runs, counts each queue's instructions (the race check's retirement needs to
 * know which queues have work left) and finds `end`. */
static npu_status prescan(npu_model *m, npu_err *err)
{
    memset(m->queued_total, 0, (size_t)m->nq * sizeof(uint32_t));
    uint32_t index = 0;
    for (size_t off = 0; off < m->nwords; index++) {
        tgt_decoded d;
        npu_err e;
        if (tgt_decode(m->isa, m->words, m->nwords, off, &d, &e))
            return npum_fault(m, err, index, (uint32_t)off, NULL, "%s", e.msg);
        const tgt_insn *in = &m->isa->insns[d.insn];
        if (in->unit == TGT_UNIT_DMA && d.v[TGT_F_CH] >= m->nch)
            return npum_fault(m, err, index, (uint32_t)off, &d, "DMA channel %lld, the target has %d",
                              (long long)d.v[TGT_F_CH], m->nch);
        m->queued_total[queue_of(m, in->unit, d.v[TGT_F_CH])]++;
        if (in->sem == TGT_SEM_END) {
            m->n_insns = index + 1;
            return NPU_OK;
        }
        off += (size_t)d.nwords;
    }
    return npu_fail(err, NPU_EUSER, "npu: the command stream (%zu words, %u instructions) has no end instruction",
                    m->nwords, index);
}

static void add_stats(npu_run_stats *to, const npu_run_stats *s)
{
    to->cycles += s->cycles;
    for (int u = 0; u < TGT_UNIT_COUNT; u++)
        to->busy[u] += s->busy[u];
    to->macs += s->macs;
    to->dram_read += s->dram_read;
    to->dram_write += s->dram_write;
    to->flash_read += s->flash_read;
    to->sram_read += s->sram_read;
    to->sram_write += s->sram_write;
    to->bank_stall += s->bank_stall;
    to->foreign_dram += s->foreign_dram;
    to->insns += s->insns;
    if (s->sram_peak > to->sram_peak)
        to->sram_peak = s->sram_peak;
}

npu_status npu_model_exec(npu_model *m, const npu_mem *mem, const uint32_t *words, size_t n_words,
                          npu_run_stats *st, npu_err *err)
{
    static const npu_mem unmapped; /* mem NULL: no region */
    m->mem = mem ? mem : &unmapped;
    m->words = words;
    m->nwords = n_words;
    memset(&m->st, 0, sizeof m->st);
    npu_status s = prescan(m, err);
    if (!s) {
        s = npum_run(m, err);
        if (s)
            m->st.cycles = m->now; /* up to the fault */
    }
    add_stats(&m->totals, &m->st);
    if (st)
        *st = m->st;
    m->mem = NULL;
    m->words = NULL;
    return s;
}

/* ---- the simulator seam ------------------------------------------------------------- */

static npu_status sim_run_job(void *ctx, sim_ctx *sim, const sim_npu_job *job, uint64_t *npu_cycles, npu_err *err)
{
    npu_model *m = ctx;
    *npu_cycles = 0;
    if (job->cmd_len % 4 || job->cmd_len == 0)
        return npu_fail(err, NPU_EUSER, "npu: command stream length %u is not a positive multiple of 4 bytes",
                        job->cmd_len);
    const uint8_t *cmd = sim_mem_ptr(sim, job->cmd_base, job->cmd_len, 0);
    if (!cmd)
        return npu_fail(err, NPU_EUSER, "npu: command stream [0x%08x, +0x%x) is not in ROM, flash or DRAM",
                        job->cmd_base, job->cmd_len);
    size_t n = job->cmd_len / 4;
    uint32_t *wb = npum_grow(m, m->words_buf, &m->words_cap, sizeof *wb, n, 1024);
    if (!wb)
        return npu_fail(err, NPU_EINTERNAL, "npu: out of memory");
    m->words_buf = wb;
    for (size_t i = 0; i < n; i++) /* little-endian guest words, possibly unaligned */
        m->words_buf[i] = (uint32_t)cmd[4 * i] | (uint32_t)cmd[4 * i + 1] << 8 | (uint32_t)cmd[4 * i + 2] << 16 |
                          (uint32_t)cmd[4 * i + 3] << 24;
    npu_mem mem;
    memset(&mem, 0, sizeof mem);
    for (int r = 0; r < TGT_REGION_COUNT; r++) {
        const sim_region *g = &job->region[r];
        if (!g->size)
            continue;
        bool ro = r == TGT_REGION_CONSTANTS || r == TGT_REGION_FLASH;
        uint8_t *p = ro ? NULL : sim_mem_ptr(sim, g->base, g->size, 1);
        mem.region[r].writable = p != NULL;
        if (!p)
            p = sim_mem_ptr(sim, g->base, g->size, 0);
        if (!p)
            return npu_fail(err, NPU_EUSER, "npu: region %s [0x%08x, +0x%x) is not in ROM, flash or DRAM",
                            tgt_enum_name(TGT_F_REGION, r), g->base, g->size);
        mem.region[r].ptr = p;
        mem.region[r].size = g->size;
    }
    mem.dram_foreign = job->host_dram;
    mem.n_dram_foreign = job->n_host_dram;
    npu_run_stats st;
    npu_status s = npu_model_exec(m, &mem, m->words_buf, n, &st, err);
    *npu_cycles = st.cycles;
    return s;
}

static const sim_npu_ops sim_ops = {sim_run_job};

const sim_npu_ops *npu_model_sim_ops(void)
{
    return &sim_ops;
}
