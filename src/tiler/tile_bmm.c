/* MatMul of two int8 activations (attention's Q.K^T and .V): Y[b] = A[b] x
 * B[b], batched, an operand of batch 1 broadcast (ref_qbmm_params). An
 * activation B is [k][n] in DRAM. Where the ISA's matmul has `bt` (B stored
 * k x n) its rows load as they lie; otherwise the instruction reads B as
 * n x k, the layout of a layer's weights, and the block is loaded transposed
 * by the DMA itself: one box of n planes (DRAM plane stride 1 byte) of k rows
 * (DRAM row stride n) of one byte, which lands as the dense [n][kc] chunk. Both zero points go to the instruction (in_zp, w_zp),
 * which subtracts them before multiplying, so the int32 sum is nk_qbmm's;
 * the per-column table holds bias 0 and the one multiplier, kept resident.
 * Tiles: per batch, column tiles of N (B block loaded once each) x row tiles
 * of M (A rows chunk-major [chunk][m][kc], as tile_fc), K split with partial
 * sums when a field or the SRAM needs it. */
#include <string.h>

#include "numerics/numerics.h"
#include "tiler/tile_internal.h"

static int64_t al16(int64_t v)
{
    return (v + 15) & ~(int64_t)15;
}

typedef struct bmm {
    nk_qbmm_params p;
    bool bt; /* the ISA's matmul reads B as k x n: loaded dense, not transposed */
    int64_t mt, nt, kc, n_k, n_m, n_n;
    int a_slots, b_slots, out_slots;
} bmm;

/* Distinct A and B tiles the loop order loads (each a reload when > 1). */
static void slots(bmm *f)
{
    int64_t all = f->p.batch * f->n_n * f->n_m;
    int64_t a_loads = f->n_m > 1 ? all : f->p.a_batch > 1 ? f->p.batch : 1;
    int64_t b_loads = f->p.b_batch > 1 || f->n_n > 1 ? f->p.batch * f->n_n : 1;
    f->a_slots = a_loads > 1 ? 2 : 1;
    f->b_slots = b_loads > 1 ? 2 : 1;
    f->out_slots = f->p.batch * f->n_m * f->n_n > 1 ? 2 : 1;
}

static int64_t sram_bytes(const bmm *f)
{
    int64_t K = f->p.k;
    return 16 * 6 + f->a_slots * f->mt * K + f->b_slots * f->nt * K + f->out_slots * f->mt * f->nt +
           (f->n_k > 1 ? 4 * f->mt * f->nt : 0) + al16(12 * f->nt);
}

/* The largest tiles that fit: fewest K chunks, then widest N, then tallest M.
 * At most 4 chunks: a work's loads (a box per chunk of B) stay within
 * TILE_MAX_LOADS. */
static bool choose(const tile_ctx *c, bmm *f)
{
    int64_t kmax = tile_fmax(c, TGT_SEM_MATMUL, TGT_F_K), nmax = tile_fmax(c, TGT_SEM_MATMUL, TGT_F_N);
    int64_t mmax = tile_fmax(c, TGT_SEM_MATMUL, TGT_F_M), K = f->p.k;
    for (int64_t nk = tile_cdiv(K, kmax); nk <= K && nk <= 4; nk *= 2) {
        f->kc = tile_cdiv(K, nk);
        f->n_k = tile_cdiv(K, f->kc);
        for (f->nt = tile_min(f->p.n, nmax); f->nt >= 1; f->nt = f->nt / 2) {
            for (f->mt = tile_min(f->p.m, mmax); f->mt >= 1; f->mt = f->mt > 1 ? tile_cdiv(f->mt, 2) : 0) {
                f->n_m = tile_cdiv(f->p.m, f->mt), f->n_n = tile_cdiv(f->p.n, f->nt);
                slots(f);
                if (sram_bytes(f) <= c->t->p[TGT_P_SRAM_BYTES])
                    return true;
            }
        }
    }
    return false;
}

/* The qtab: bias 0 and the one multiplier for nt columns, little-endian. */
static npu_status qtab_const(tile_ctx *c, const bmm *f, int64_t *off)
{
    size_t bytes = (size_t)al16(12 * f->nt);
    uint8_t *q = npu_malloc(c->alloc, bytes);
    if (!q)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    memset(q, 0, bytes);
    for (int64_t j = 0; j < f->nt; j++)
        for (int by = 0; by < 4; by++) {
            q[12 * j + 4 + by] = (uint8_t)((uint32_t)f->p.mult >> (8 * by));
            q[12 * j + 8 + by] = (uint8_t)((uint32_t)f->p.shift >> (8 * by));
        }
    npu_status st = tile_const_add(c, q, bytes, off);
    npu_free(c->alloc, q, bytes);
    return st;
}

typedef struct bmm_addr {
    int ar, br, yr;
    int64_t aoff, boff, yoff;
    int64_t a_s[2], b_s[2], out_s[2], psum, q_s, q_off;
} bmm_addr;

static npu_status place(tile_ctx *c, const ir_node *n, const bmm *f, bmm_addr *d)
{
    npu_status st;
    if ((st = tile_tensor_addr(c, n->inputs[0], &d->ar, &d->aoff)) != NPU_OK ||
        (st = tile_tensor_addr(c, n->inputs[1], &d->br, &d->boff)) != NPU_OK ||
        (st = tile_tensor_addr(c, n->outputs[0], &d->yr, &d->yoff)) != NPU_OK || (st = qtab_const(c, f, &d->q_off)))
        return st;
    tile_sram_req rq[8];
    int nr = 0;
    d->a_s[1] = d->b_s[1] = d->out_s[1] = d->psum = -1;
    for (int i = 0; i < f->a_slots; i++)
        rq[nr++] = (tile_sram_req){f->mt * f->p.k, &d->a_s[i]};
    for (int i = 0; i < f->b_slots; i++)
        rq[nr++] = (tile_sram_req){f->nt * f->p.k, &d->b_s[i]};
    for (int i = 0; i < f->out_slots; i++)
        rq[nr++] = (tile_sram_req){f->mt * f->nt, &d->out_s[i]};
    if (f->n_k > 1)
        rq[nr++] = (tile_sram_req){4 * f->mt * f->nt, &d->psum};
    rq[nr++] = (tile_sram_req){al16(12 * f->nt), &d->q_s};
    return tile_sram_place(c, rq, nr, "tiler bug: planned buffers exceed the SRAM");
}

/* Rows [m0, m0+mt) of A[ia], chunk-major, into sram. */
static void load_a(tile_work *wk, const bmm *f, const bmm_addr *d, int64_t ia, int64_t m0, int64_t mt, int64_t sram)
{
    int64_t K = f->p.k, full = K / f->kc, last = K - full * f->kc;
    int64_t src = d->aoff + ia * f->p.m * K + m0 * K;
    if (full)
        tile_load(wk, (tile_box){d->ar, src, sram, full, mt, f->kc, K, f->kc, f->kc, mt * f->kc});
    if (last)
        tile_load(wk, (tile_box){d->ar, src + full * f->kc, sram + full * mt * f->kc, 1, mt, last, K, last, last,
                                 mt * last});
}

/* Columns [n0, n0+nt) of B[ib] ([k][n] in DRAM) as chunks: [kc][nt] rows
 * as they lie (bt), or [nt][kc], which the DMA transposes (one-byte rows). */
static void load_b(tile_work *wk, const bmm *f, const bmm_addr *d, int64_t ib, int64_t n0, int64_t nt, int64_t sram)
{
    int64_t N = f->p.n, K = f->p.k;
    for (int64_t k0 = 0, pos = 0; k0 < K; k0 += f->kc) {
        int64_t kc = tile_min(f->kc, K - k0), src = d->boff + ib * K * N + k0 * N + n0;
        if (f->bt)
            tile_load(wk, (tile_box){d->br, src, sram + pos, 1, kc, nt, N, kc * N, nt, kc * nt});
        else
            tile_load(wk, (tile_box){d->br, src, sram + pos, nt, kc, 1, N, 1, 1, kc});
        pos += nt * kc;
    }
}

static npu_status computes(tile_ctx *c, tile_work *wk, const bmm *f, const bmm_addr *d, int64_t a, int64_t b,
                           int64_t dst, int64_t mt, int64_t nt)
{
    for (int64_t k = 0, wpos = 0; k < f->n_k; k++) {
        int64_t kc = tile_min(f->kc, f->p.k - k * f->kc);
        tile_comp *cp = tile_comp_new(c, wk, TGT_SEM_MATMUL);
        if (!cp)
            return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        int64_t *v = cp->v;
        v[TGT_F_SRC] = a + k * mt * f->kc, v[TGT_F_DST] = dst, v[TGT_F_WGT] = b + wpos, v[TGT_F_QTAB] = d->q_s;
        v[TGT_F_M] = mt, v[TGT_F_K] = kc, v[TGT_F_N] = nt;
        v[TGT_F_IN_ZP] = f->p.a_zp, v[TGT_F_W_ZP] = f->p.b_zp, v[TGT_F_OUT_ZP] = f->p.out_zp;
        v[TGT_F_BT] = f->bt;
        v[TGT_F_CLAMP_LO] = f->p.act_min, v[TGT_F_CLAMP_HI] = f->p.act_max;
        if (f->n_k > 1)
            v[TGT_F_PSUM] = d->psum, v[TGT_F_ACC_IN] = k > 0, v[TGT_F_ACC_OUT] = k < f->n_k - 1;
        wpos += nt * kc;
    }
    return NPU_OK;
}

npu_status tile_bmm(tile_ctx *c, const ir_node *n)
{
    bmm f = {0};
    bmm_addr d;
    npu_status st = ref_qbmm_params(n, &f.p, c->err);
    if (st != NPU_OK)
        return npu_err_prefix(c->err, "node '%s'", n->name);
    if (f.p.b_zp != 0 && !tgt_insn_field(c->t->isa, tile_insn(c, TGT_SEM_MATMUL), TGT_F_W_ZP))
        return tile_fail(c, "the matmul of %s has no w_zp field (B's zero point)", c->t->isa->name);
    f.bt = tgt_insn_field(c->t->isa, tile_insn(c, TGT_SEM_MATMUL), TGT_F_BT) != NULL;
    if (!choose(c, &f))
        return tile_fail(c, "no matmul tile fits the SRAM (%lld bytes)", (long long)c->t->p[TGT_P_SRAM_BYTES]);
    if ((st = place(c, n, &f, &d)) != NPU_OK)
        return st;
    int64_t la = -1, lb = -1, n_a = 0, n_b = 0, cur_a = d.a_s[0], cur_b = d.b_s[0], t = 0;
    for (int64_t i = 0; i < f.p.batch && st == NPU_OK; i++)
        for (int64_t nj = 0; nj < f.n_n && st == NPU_OK; nj++)
            for (int64_t mi = 0; mi < f.n_m && st == NPU_OK; mi++, t++) {
                int64_t ia = f.p.a_batch > 1 ? i : 0, ib = f.p.b_batch > 1 ? i : 0;
                int64_t m0 = mi * f.mt, mt = tile_min(f.mt, f.p.m - m0), n0 = nj * f.nt, nt = tile_min(f.nt, f.p.n - n0);
                int64_t ka = f.n_m > 1 ? (i * f.n_n + nj) * f.n_m + mi : ia, kb = ib * f.n_n + nj;
                tile_work *wk = tile_work_new(c);
                if (!wk)
                    return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
                if (t == 0)
                    tile_load_flat(c, wk, TGT_REGION_CONSTANTS, d.q_off, d.q_s, al16(12 * f.nt));
                if (ka != la) {
                    cur_a = d.a_s[n_a++ % f.a_slots];
                    load_a(wk, &f, &d, ia, m0, mt, cur_a);
                    la = ka;
                }
                if (kb != lb) {
                    cur_b = d.b_s[n_b++ % f.b_slots];
                    load_b(wk, &f, &d, ib, n0, nt, cur_b);
                    lb = kb;
                }
                int64_t dst = d.out_s[t % f.out_slots];
                st = computes(c, wk, &f, &d, cur_a, cur_b, dst, mt, nt);
                tile_store(wk, (tile_box){d.yr, d.yoff + i * f.p.m * f.p.n + m0 * f.p.n + n0, dst, 1, mt, nt,
                                          f.p.n, 0, nt, 0});
            }
    return st == NPU_OK ? tile_pipeline(c) : st;
}
