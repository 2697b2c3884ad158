/* Internals of the NPU model (sim/npu*.c); not for other modules.
 *
 * npu_model.c   lifetime, instruction preparation (decode, checks, operands), faults, the sim seam
 * npu_exec.c    the functional semantics of each instruction (kernels/nk_quant.h)
 * npu_timing.c  the event loop: fetch, queues, tokens, DRAM bus, deadlock
 * npu_hazard.c  vector clocks and the unsynchronized-access check */
#ifndef SIM_NPU_INTERNAL_H
#define SIM_NPU_INTERNAL_H

#include "common/npu_pool.h"
#include "kernels/nk_qfast.h"
#include "kernels/nk_quant.h"
#include "sim/npu.h"

enum { NPUM_MAX_TOKENS = 64 };

/* A 3-D set of nibbles in host memory: c planes of h rows of w nibbles; a
 * dense range is c = h = 1. Addresses are host addresses x 2, so aliasing
 * regions are seen as what they are. */
typedef struct npum_box {
    int64_t base, c, cs, h, hs, w;
} npum_box;

typedef struct npum_access {
    npum_box box;
    bool write;
    bool sram; /* else a DRAM region */
    tgt_fid field;
} npum_access;

enum { NPUM_BUS_NONE = -1, NPUM_BUS_DRAM = 0, NPUM_BUS_FLASH = 1, NPUM_BUS_COUNT = 2 };

/* One fetched instruction, ready to start. */
typedef struct npum_insn {
    uint32_t index, word;
    tgt_decoded d;
    tgt_unit unit;
    int queue;    /* model queue: 0..channels-1 DMA, then MAC, vector, ctrl */
    uint32_t seq; /* 1-based position in its queue, set at start */
    int64_t dur;  /* tgt_timing */
    uint64_t wait, signal;
    int nacc;
    npum_access acc[TGT_MAX_OPERANDS];
    int bus;             /* NPUM_BUS_*: the memory a DMA transfers over */
    int64_t bus_latency; /* the part of dur before the transfer */
    uint64_t macs, dram_read, dram_write, flash_read, sram_end;
    uint64_t int4_macs; /* macs at the int4 rate (w4 set) */
    uint64_t banks;     /* SRAM banks its operands touch, a bit each */
    uint64_t sram_read, sram_write; /* SRAM bytes (energy) */
    uint64_t bank_stall; /* cycles lost to bank conflicts */
    uint64_t act;        /* when it starts using SRAM: start, or a DMA's transfer start */
    uint64_t start, end;
    uint32_t *vc; /* vector clock (nq entries): at fetch, then at start */
} npum_insn;

/* A started instruction the race check still compares later ones with,
 * referenced from the page buckets its accesses touch. */
typedef struct npum_entry {
    uint32_t index, word, seq;
    int queue;
    int nacc;
    npum_access acc[TGT_MAX_OPERANDS];
    uint32_t refs;  /* bucket references; the entry is free at 0 */
    uint64_t stamp; /* the last (instruction, access) compared with it */
} npum_entry;

/* The entries touching one 4 KiB page of host memory (open addressing). */
typedef struct npum_bucket {
    int64_t page; /* NPUM_NO_PAGE: an empty slot (ids kept for reuse) */
    uint32_t *ids;
    size_t n, cap;
} npum_bucket;

#define NPUM_NO_PAGE INT64_MIN

/* Snapshots of a token's producers' clocks, consumed in order. */
typedef struct npum_token {
    uint32_t count;
    uint32_t *snap; /* cap snapshots of nq entries, a ring */
    uint32_t head, len, cap;
} npum_token;

/* A conv instruction below this many MACs (some 20 us of VNNI) runs on one
 * thread: waking the pool's workers and waiting for them costs about that. */
enum { NPUM_PAR_MIN_MACS = 1 << 21 };

struct npu_model {
    const tgt_target *t;
    const tgt_isa *isa;
    npu_alloc alloc;
    npu_event_fn event_fn;
    void *event_ud;
    uint8_t *sram;
    size_t sram_size;
    int nch, nq, q_mac, q_vec, q_ctrl, depth, ntok;
    void *scratch; /* kernel scratch, grown to the largest need */
    size_t scratch_size;
    /* the last conv's im2col, kept for the next conv over the same input
     * (nk_qconv2d_fast_packed): its parameters, SRAM source and a copy of
     * the source bytes, which a reuse must match */
    void *pk;
    size_t pk_cap;
    int8_t *pk_in;
    size_t pk_in_cap, pk_in_len;
    nk_qconv2d_params pk_p;
    int64_t pk_src;
    bool pk_valid;
    npu_pool *pool;      /* npu_model_set_threads: NULL for one thread */
    nk_parallel par;     /* its hook for the kernels */
    int8_t *epi_b;       /* the eltwise epilogue's operand as it was before its conv wrote dst */
    size_t epi_b_cap;
    /* conv and dwconv with plane strides (src_cs, dst_cs) run on dense
     * copies: the input gathered, the output scattered after the epilogue;
     * src_view / dst_view are where the running conv reads and writes */
    int8_t *cs_src, *cs_dst;
    size_t cs_src_cap, cs_dst_cap;
    const int8_t *src_view;
    int8_t *dst_view;
    uint32_t *words_buf; /* the sim seam's copy of a command stream */
    size_t words_cap;
    npu_run_stats totals;

    /* per job */
    const npu_mem *mem;
    const uint32_t *words;
    size_t nwords;
    npu_run_stats st;
    uint64_t now;
    uint32_t *queued_total; /* per queue: instructions of the stream (prescan) */
    uint32_t *started;      /* per queue */
    npum_insn *ring;        /* nq * depth fetched, not started */
    uint32_t *ring_head, *ring_len;
    npum_insn *run;         /* nq: the running instruction of each unit */
    bool *running;
    npum_insn fetch;        /* decoded at the fetcher, not yet issued */
    bool have_fetch, done;
    uint32_t fetch_index, fetch_word, n_insns;
    uint64_t bus_free[NPUM_BUS_COUNT];
    size_t foreign_next; /* the first of mem->dram_foreign not yet on the bus */
    npum_token tok[NPUM_MAX_TOKENS];
    uint32_t *vc_pool;  /* clocks of ring, run and fetch slots */
    uint32_t *queue_vc; /* nq x nq: clock of the last instruction started on each queue */
    uint32_t *fetch_vc; /* clock the fetcher has learned from completed syncs */
    uint32_t *tok_cum;  /* ntok x nq: join of each token's producers so far */
    npum_entry *ent; /* race check: entries, their free list, page buckets, a page list */
    size_t ent_cap, ent_free_cap;
    uint32_t ent_used, *ent_free, nfree;
    npum_bucket *tab;
    size_t tab_cap, tab_used;
    int64_t *pages;
    size_t pages_cap;
};

/* npu_model.c */
npu_status npum_fault(npu_model *m, npu_err *err, uint32_t index, uint32_t word, const tgt_decoded *d,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Decodes, checks and resolves the instruction at the fetcher into *x. */
npu_status npum_prepare(npu_model *m, npum_insn *x, npu_err *err);
/* Grows array p of *cap elements of elem bytes to hold need, doubling from
 * first; NULL (p intact) when allocation fails. */
void *npum_grow(npu_model *m, void *p, size_t *cap, size_t elem, size_t need, size_t first);
/* Scratch of at least n bytes (16-byte aligned), NULL when allocation fails. */
void *npum_scratch(npu_model *m, size_t n);
/* Copies c planes of `plane` bytes between a dense buffer and SRAM planes cs apart (conv's plane strides). */
void npum_planes_copy(int8_t *dense, uint8_t *sram, int64_t c, int64_t plane, int64_t cs, bool to_sram);
/* "SRAM 0x40" or "arena+0x1000" for a host address the job maps. */
void npum_where(const npu_model *m, int64_t addr, char *buf, size_t cap);

/* npu_exec.c: runs x's semantics on SRAM and the regions. */
npu_status npum_execute(npu_model *m, const npum_insn *x, npu_err *err);
/* npu_exec_epi.c: the eltwise epilogue of conv x (epi_elt, docs/isa.md). Before the conv: checks the
 * parameter block at etab and reads the operand at b (*b, valid until the next call); after it: combines
 * the int8 result at dst with *b in place, by nk_qbinary as eltwise does. */
/* The kernel op of eltwise's op field (npu_exec.c): the eltwise instruction's and the epilogue's. */
nk_qbin_op npum_elt_op(int64_t op);
npu_status npum_epi_elt_read(npu_model *m, const npum_insn *x, const int8_t **b, npu_err *err);
npu_status npum_epi_elt_apply(npu_model *m, const npum_insn *x, const int8_t *b, npu_err *err);
/* npu_exec_norm.c: the row-wise softmax and layernorm */
npu_status npum_exec_softmax(npu_model *m, const npum_insn *x, npu_err *err);
/* The per-channel table: {int32 bias, mult, shift} little-endian per channel,
 * unpacked into int32 arrays behind kscratch bytes of kernel scratch (npu_exec.c). */
typedef struct qtab {
    int32_t *bias, *mult, *shift;
    void *kscratch;
} qtab;
npu_status npum_load_qtab(npu_model *m, const npum_insn *x, int32_t n, size_t kscratch, bool need_mult, qtab *q,
                          npu_err *err);
/* dma_load / dma_store, a4 included (npu_exec_dma.c). */
npu_status npum_exec_dma(npu_model *m, const npum_insn *x, bool load, npu_err *err);
/* An instruction with int16 activations (a16 / in16; npu_exec_a16.c). */
npu_status npum_exec_a16(npu_model *m, const npum_insn *x, npu_err *err);
npu_status npum_exec_layernorm(npu_model *m, const npum_insn *x, npu_err *err);

/* npu_timing.c: the event loop over the stream set up in m. */
npu_status npum_run(npu_model *m, npu_err *err);

/* npu_hazard.c */
/* A box in nibbles (the race check's unit) from one in bytes, dense ones
 * normalized to one row (so equal sets compare equal); npum_box_nib from
 * one already in nibbles (an a4 DMA's DRAM side: 2 x host address + dram). */
npum_box npum_box_make(int64_t base, int64_t c, int64_t cs, int64_t h, int64_t hs, int64_t w);
npum_box npum_box_nib(int64_t base, int64_t c, int64_t cs, int64_t h, int64_t hs, int64_t w);
bool npum_box_overlap(const npum_box *a, const npum_box *b);
void npum_hazard_reset(npu_model *m);
void npum_hazard_free(npu_model *m);
/* At x's start (its clock set): retires what every queue is ordered after,
 * checks x against the rest, then remembers x. */
npu_status npum_hazard_check(npu_model *m, const npum_insn *x, npu_err *err);

#endif
