/* Gemm / MatMul by constant weights: out[M, N] = A[M, K] x B[N, K]^T.
 * Tiles split N (one weight block per column tile, streamed and double
 * buffered), M (rows of A) and, when a row of weights does not fit a field
 * or the SRAM, K (partial sums in SRAM). A tile of A is stored chunk-major
 * ([chunk][m][kc]) so that every matmul reads a dense m x kc operand. */
#include <string.h>

#include "numerics/numerics.h"
#include "tiler/tile_internal.h"

static int64_t al16(int64_t v)
{
    return (v + 15) & ~(int64_t)15;
}

typedef struct fc {
    int64_t M, K, N;
    bool transpose, w4;
    int64_t es; /* activation bytes: 2 for int16 (A16W8: no partial sums) */
    const ir_tensor *wt;
    int64_t mt, nt, kc, n_k;
} fc;

static int64_t chunk_bytes(const fc *f, int64_t nt, int64_t kc)
{
    return al16(f->w4 ? (nt * kc + 1) / 2 : nt * kc);
}

static int64_t block_bytes(const fc *f, int64_t nt)
{
    int64_t b = 0;
    for (int64_t k = 0; k < f->n_k; k++)
        b += chunk_bytes(f, nt, tile_min(f->kc, f->K - k * f->kc));
    return b + al16(12 * nt);
}

static bool fits(const tile_ctx *c, fc *f)
{
    f->n_k = tile_cdiv(f->K, f->kc);
    int64_t n_m = tile_cdiv(f->M, f->mt), n_n = tile_cdiv(f->N, f->nt);
    int64_t in = f->mt * f->K * f->es, wb = block_bytes(f, f->nt), out = f->mt * f->nt * f->es;
    if (f->es == 2 && f->n_k > 1)
        return false;
    int64_t total = 64 + (n_m > 1 ? 2 : 1) * in + (n_n > 1 ? 2 : 1) * wb + (n_m * n_n > 1 ? 2 : 1) * out +
                    (f->n_k > 1 ? 4 * out : 0);
    return total <= c->t->p[TGT_P_SRAM_BYTES];
}

/* The next, smaller column tile: half, 16-aligned while above the array's
 * columns. It must shrink: with 8 columns (edge-v1-lite) al16(16 / 2) is
 * 16 again, and a layer whose 16-column block did not fit searched forever. */
static int64_t next_nt(int64_t nt, int64_t cols)
{
    int64_t h = nt > cols ? al16(nt / 2) : nt / 2;
    return h < nt ? h : nt / 2;
}

static bool choose(const tile_ctx *c, fc *f)
{
    int64_t kmax = tile_fmax(c, TGT_SEM_MATMUL, TGT_F_K), nmax = tile_fmax(c, TGT_SEM_MATMUL, TGT_F_N);
    int64_t mmax = tile_fmax(c, TGT_SEM_MATMUL, TGT_F_M), cols = c->t->p[TGT_P_MAC_COLS];
    for (int64_t nk = tile_cdiv(f->K, kmax); nk <= f->K; nk *= 2) {
        f->kc = tile_cdiv(f->K, nk);
        if (f->w4 && f->kc % 2)
            f->kc++;
        if (f->kc > kmax)
            continue;
        for (f->nt = tile_min(f->N, nmax); f->nt >= 1; f->nt = next_nt(f->nt, cols)) {
            f->nt = tile_min(f->nt, tile_min(f->N, nmax));
            for (f->mt = tile_min(f->M, mmax); f->mt >= 1; f->mt = f->mt > 1 ? tile_cdiv(f->mt, 2) : 0)
                if (fits(c, f))
                    return true;
            if (f->nt == 1)
                break;
        }
    }
    return false;
}

static int8_t bval(const fc *f, int64_t j, int64_t t)
{
    int64_t idx = f->transpose ? t * f->N + j : j * f->K + t;
    return f->wt->dtype == IR_I4 ? nk_int4_get(f->wt->data, (size_t)idx) : ((const int8_t *)f->wt->data)[idx];
}

static npu_status build_block(tile_ctx *c, const ir_node *n, const fc *f, int64_t n0, int64_t nt, int64_t *off)
{
    int64_t size = block_bytes(f, nt);
    if (c->consts->measure)
        return tile_block_reserve(c, n, n0, nt, size, off);
    uint8_t *blk = npu_malloc(c->alloc, (size_t)size);
    int8_t *tmp = npu_malloc(c->alloc, (size_t)(nt * f->kc + 1));
    npu_status st = NPU_OK;
    if (!blk || !tmp) {
        st = npu_fail(c->err, NPU_EINTERNAL, "out of memory");
        goto done;
    }
    memset(blk, 0, (size_t)size);
    int64_t pos = 0;
    for (int64_t k = 0; k < f->n_k; k++) {
        int64_t t0 = k * f->kc, kc = tile_min(f->kc, f->K - t0), e = 0;
        for (int64_t j = 0; j < nt; j++)
            for (int64_t t = 0; t < kc; t++)
                tmp[e++] = bval(f, n0 + j, t0 + t);
        if (f->w4 ? nk_int4_pack(tmp, blk + pos, (size_t)e) != NK_OK : (memcpy(blk + pos, tmp, (size_t)e), false)) {
            st = tile_fail(c, "int4 weights out of range");
            goto done;
        }
        pos += chunk_bytes(f, nt, kc);
    }
    if ((st = tile_qtab(c, n, n0, nt, blk + pos)) == NPU_OK)
        st = tile_const_add(c, blk, (size_t)size, off);
done:
    npu_free(c->alloc, blk, (size_t)size);
    npu_free(c->alloc, tmp, (size_t)(nt * f->kc + 1));
    return st;
}

npu_status tile_fc_chunks(tile_ctx *c, const ir_node *n, int64_t kc, bool build, int64_t *off, int64_t *chunk,
                          int64_t *bytes)
{
    ref_qfc_setup s;
    npu_status st = ref_qfc_params(n, &s, c->err);
    if (st != NPU_OK)
        return npu_err_prefix(c->err, "node '%s'", n->name);
    fc f = {.M = s.p.batch, .K = s.p.in_features, .N = s.p.out_features, .transpose = s.transpose,
            .wt = n->inputs[1], .es = 1, .kc = kc};
    f.n_k = tile_cdiv(f.K, kc);
    *chunk = chunk_bytes(&f, f.N, kc);
    *bytes = block_bytes(&f, f.N);
    return build ? build_block(c, n, &f, 0, f.N, off) : NPU_OK;
}

npu_status tile_matmul(tile_ctx *c, const ir_node *n)
{
    ref_qfc_setup s;
    npu_status st = ref_qfc_params(n, &s, c->err);
    if (st != NPU_OK)
        return npu_err_prefix(c->err, "node '%s'", n->name);
    fc f = {.M = s.p.batch, .K = s.p.in_features, .N = s.p.out_features, .transpose = s.transpose,
            .wt = n->inputs[1]};
    f.es = ref_is_a16(n->inputs[0]) ? 2 : 1;
    f.w4 = f.wt->dtype == IR_I4 && tile_w4_ok(c->t, 2) && f.K % 2 == 0 &&
           tgt_insn_field(c->t->isa, tile_insn(c, TGT_SEM_MATMUL), TGT_F_W4);
    if (!choose(c, &f))
        return tile_fail(c, "no matmul tile fits the SRAM (%lld bytes)", (long long)c->t->p[TGT_P_SRAM_BYTES]);
    int xr, yr;
    int64_t xoff, yoff;
    if ((st = tile_tensor_addr(c, n->inputs[0], &xr, &xoff)) != NPU_OK ||
        (st = tile_tensor_addr(c, n->outputs[0], &yr, &yoff)) != NPU_OK)
        return st;
    int64_t n_m = tile_cdiv(f.M, f.mt), n_n = tile_cdiv(f.N, f.nt), tiles = n_m * n_n;
    int64_t *blk = npu_malloc(c->alloc, sizeof(int64_t) * (size_t)n_n);
    if (!blk)
        return npu_fail(c->err, NPU_EINTERNAL, "out of memory");
    for (int64_t j = 0; j < n_n && st == NPU_OK; j++)
        st = build_block(c, n, &f, j * f.nt, tile_min(f.nt, f.N - j * f.nt), &blk[j]);
    int in_slots = n_m > 1 ? 2 : 1, w_slots = n_n > 1 ? 2 : 1, out_slots = tiles > 1 ? 2 : 1;
    int64_t in_s[2] = {-1, -1}, w_s[2] = {-1, -1}, out_s[2] = {-1, -1}, psum = 0, wb = block_bytes(&f, f.nt);
    tile_sram_req rq[7];
    bool early[7] = {0}; /* the first weight slot: clear of the layer before where only it fits so */
    int nr = 0;
    for (int i = 0; i < in_slots; i++)
        rq[nr++] = (tile_sram_req){f.mt * f.K * f.es, &in_s[i]};
    for (int i = 0; i < w_slots; i++)
        early[nr] = i == 0, rq[nr++] = (tile_sram_req){wb, &w_s[i]};
    for (int i = 0; i < out_slots; i++)
        rq[nr++] = (tile_sram_req){f.mt * f.nt * f.es, &out_s[i]};
    if (f.n_k > 1)
        rq[nr++] = (tile_sram_req){4 * f.mt * f.nt, &psum};
    if (st == NPU_OK)
        st = tile_sram_place_early(c, rq, nr, early, "tiler bug: planned buffers exceed the SRAM");
    int64_t prev_m = -1, in_loads = 0, cur_in = in_s[0];
    for (int64_t t = 0; t < tiles && st == NPU_OK; t++) {
        int64_t nj = t / n_m, mi = t % n_m; /* column tiles outer: each weight block loads once */
        int64_t m0 = mi * f.mt, mt = tile_min(f.mt, f.M - m0), n0 = nj * f.nt, nt = tile_min(f.nt, f.N - n0);
        tile_work *wk = tile_work_new(c);
        if (!wk) {
            st = npu_fail(c->err, NPU_EINTERNAL, "out of memory");
            break;
        }
        if (mi != prev_m) {
            cur_in = in_s[in_loads++ % in_slots];
            int64_t full = f.K / f.kc, last = f.K - full * f.kc, e = f.es;
            if (full)
                tile_load(wk, (tile_box){xr, xoff + m0 * f.K * e, cur_in, full, mt, f.kc * e, f.K * e, f.kc * e,
                                         f.kc * e, mt * f.kc * e});
            if (last)
                tile_load(wk, (tile_box){xr, xoff + m0 * f.K + full * f.kc, cur_in + full * mt * f.kc, 1, mt, last,
                                         f.K, last, last, mt * last});
            prev_m = mi;
        }
        int64_t cur_w = w_s[nj % w_slots];
        if (mi == 0 && (nj == 0 || n_n > 1))
            tile_load_flat(c, wk, TGT_REGION_CONSTANTS, blk[nj], cur_w, block_bytes(&f, nt));
        int64_t dst = out_s[t % out_slots], wpos = 0;
        for (int64_t k = 0; k < f.n_k; k++) {
            int64_t kc = tile_min(f.kc, f.K - k * f.kc);
            tile_comp *cp = tile_comp_new(c, wk, TGT_SEM_MATMUL);
            if (!cp) {
                st = npu_fail(c->err, NPU_EINTERNAL, "out of memory");
                break;
            }
            int64_t *v = cp->v;
            v[TGT_F_SRC] = cur_in + k * mt * f.kc, v[TGT_F_DST] = dst;
            v[TGT_F_WGT] = cur_w + wpos, v[TGT_F_QTAB] = cur_w + block_bytes(&f, nt) - al16(12 * nt);
            v[TGT_F_M] = mt, v[TGT_F_K] = kc, v[TGT_F_N] = nt, v[TGT_F_W4] = f.w4;
            v[TGT_F_IN_ZP] = s.p.in_zp, v[TGT_F_OUT_ZP] = s.p.out_zp;
            v[TGT_F_CLAMP_LO] = s.p.act_min, v[TGT_F_CLAMP_HI] = s.p.act_max;
            if (f.es == 2) /* int16 bounds in their own word */
                v[TGT_F_A16] = 1, v[TGT_F_CLAMP16_LO] = s.p.act_min, v[TGT_F_CLAMP16_HI] = s.p.act_max,
                v[TGT_F_CLAMP_LO] = -128, v[TGT_F_CLAMP_HI] = 127;
            if (f.n_k > 1) {
                v[TGT_F_PSUM] = psum, v[TGT_F_ACC_IN] = k > 0, v[TGT_F_ACC_OUT] = k < f.n_k - 1;
            }
            wpos += chunk_bytes(&f, nt, kc);
        }
        tile_store(wk, (tile_box){yr, yoff + (m0 * f.N + n0) * f.es, dst, 1, mt, nt * f.es, f.N * f.es, 0, nt * f.es,
                                  0});
    }
    npu_free(c->alloc, blk, sizeof(int64_t) * (size_t)n_n);
    return st == NPU_OK ? tile_pipeline(c) : st;
}
