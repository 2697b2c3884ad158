/* Blocked SGEMM (GotoBLAS/BLIS loop order: NC columns of B, KC depth,
 * MC rows of A, then NR x MR register tiles), and Gemm / MatMul on it. */
#include <math.h>
#include <string.h>

#include "kernels/nk_nn_internal.h"

/* What a register tile does with its sums: C = alpha * sum (+ C when add);
 * after the last depth block also + bias[row] and the activation. */
typedef struct tile_epi {
    float alpha;
    int add, last;
    const float *bias; /* MR row biases, or NULL */
    nk_act act;
} tile_epi;

/* Register tiles: the full NK_MR x NK_NR one and, on x86-64, 4- and 2-row
 * ones for the bottom edge (a 64-row layer computes 64 rows, not 66). A
 * narrower tile would not pay: the tile's cost is its A broadcasts. */
typedef void (*tile_fn)(int32_t kc, const float *restrict a, const float *restrict b, ptrdiff_t ldb,
                        float *restrict c, ptrdiff_t ldc, const tile_epi *e);
#if NK_MR == 6
#define NK_ROW_N (2 * NK_NR)
#define NK_TILE_NAME tile_6
#define NK_TILE_M 6
#define NK_TILE_N NK_NR
#include "kernels/nk_nn_tile.inc"
#define NK_TILE_NAME tile_4
#define NK_TILE_M 4
#define NK_TILE_N NK_NR
#include "kernels/nk_nn_tile.inc"
#define NK_TILE_NAME tile_2
#define NK_TILE_M 2
#define NK_TILE_N NK_NR
#include "kernels/nk_nn_tile.inc"
/* One row by two panels, for a GEMM of one row (a Linear on one sample)
 * on a B read in place: tile_2 would compute a row of padding. */
#define NK_TILE_NAME tile_row
#define NK_TILE_M 1
#define NK_TILE_N NK_ROW_N
#include "kernels/nk_nn_tile.inc"
static tile_fn pick_tile(int mr, int *mt)
{
    *mt = mr <= 2 ? 2 : mr <= 4 ? 4 : 6;
    return mr <= 2 ? tile_2 : mr <= 4 ? tile_4 : tile_6;
}
#else
#define NK_TILE_NAME tile_full
#define NK_TILE_M NK_MR
#define NK_TILE_N NK_NR
#include "kernels/nk_nn_tile.inc"
static tile_fn pick_tile(int mr, int *mt)
{
    (void)mr;
    *mt = NK_MR;
    return tile_full;
}
#endif

/* Constant-length chunks so that the selects become vector compares and
 * blends (a branch per element mispredicts on real activations). */
#define NK_ACT_LOOP(EXPR)                                \
    do {                                                 \
        ptrdiff_t i = 0;                                 \
        for (; i + 16 <= n; i += 16)                     \
            for (int j = 0; j < 16; j++) {               \
                float x = v[i + j];                      \
                v[i + j] = (EXPR);                       \
            }                                            \
        for (; i < n; i++) {                             \
            float x = v[i];                              \
            v[i] = (EXPR);                               \
        }                                                \
    } while (0)

NK_HOT_CLONES void nk_nn_act_inplace(float *v, ptrdiff_t n, nk_act act)
{
    const float lo = act.lo, hi = act.hi, slope = act.alpha;
    switch (act.kind) {
    case NK_ACT_RELU: NK_ACT_LOOP(nk_relu(x)); break;
    case NK_ACT_CLIP: NK_ACT_LOOP(nk_clip(x, lo, hi)); break;
    case NK_ACT_LEAKY_RELU: NK_ACT_LOOP(nk_leaky_relu(x, slope)); break;
    default: break;
    }
}
#undef NK_ACT_LOOP

/* One register tile at rows i0.., columns j0.. of C, in the smallest tile
 * shape that covers it. A partial tile goes through a buffer: C's part is
 * copied in, the tile computed there, and the valid part copied back. */
static void do_tile(const nk_gemm_core *g, int32_t kc, const float *ap, const float *bp, ptrdiff_t ldb, int32_t i0,
                    int32_t j0, int mr, int nr, int add, int last)
{
    float bias[NK_MR];
    tile_epi e = {g->alpha, add, last, NULL, g->act};
    if (g->row_bias && last) {
        for (int i = 0; i < NK_MR; i++)
            bias[i] = i < mr ? g->row_bias[i0 + i] : 0.0f;
        e.bias = bias;
    }
    float *c = g->c + (ptrdiff_t)i0 * g->ldc + j0;
    int mt;
    tile_fn fn = pick_tile(mr, &mt);
    if (mr == mt && nr == NK_NR) {
        fn(kc, ap, bp, ldb, c, g->ldc, &e);
        return;
    }
    float t[NK_MR * NK_NR];
    if (add)
        for (int i = 0; i < mr; i++)
            memcpy(t + i * NK_NR, c + (ptrdiff_t)i * g->ldc, sizeof(float) * (size_t)nr);
    fn(kc, ap, bp, ldb, t, NK_NR, &e);
    for (int i = 0; i < mr; i++)
        memcpy(c + (ptrdiff_t)i * g->ldc, t + i * NK_NR, sizeof(float) * (size_t)nr);
}

#ifdef NK_ROW_N
/* Columns [j0, j0 + NK_ROW_N) of the single row i0 of C, from B in place;
 * the same sums in the same order as do_tile's. */
static void do_row(const nk_gemm_core *g, int32_t kc, const float *ap, const float *bp, ptrdiff_t ldb, int32_t i0,
                   int32_t j0, int add, int last)
{
    float bias[1];
    tile_epi e = {g->alpha, add, last, NULL, g->act};
    if (g->row_bias && last) {
        bias[0] = g->row_bias[i0];
        e.bias = bias;
    }
    tile_row(kc, ap, bp, ldb, g->c + (ptrdiff_t)i0 * g->ldc + j0, g->ldc, &e);
}
#endif

static int32_t round_up(int32_t v, int32_t to)
{
    return (v + to - 1) / to * to;
}

#define min32 nk_nn_min32

#define NK_ALIGN 64

static float *align_ptr(void *p)
{
    uintptr_t u = (uintptr_t)p;
    return (float *)((u + NK_ALIGN - 1) & ~(uintptr_t)(NK_ALIGN - 1));
}

/* The packed panels of A and B for blocks mc x kc and kc x nc of the tile mr x nr. */
static size_t panels(int32_t m, int32_t n, int32_t k, int32_t mr, int32_t nr, int32_t kcb, int32_t mcb, int32_t ncb)
{
    size_t kc = (size_t)min32(k, kcb);
    size_t a = (size_t)round_up(min32(m, mcb), mr) * kc;
    size_t b = kc * (size_t)round_up(min32(n, ncb), nr);
    return (a + b) * sizeof(float) + 2 * NK_ALIGN;
}

size_t nk_nn_gemm_scratch(int32_t m, int32_t n, int32_t k)
{
    if (m <= 0 || n <= 0 || k <= 0)
        return 0;
    size_t own = panels(m, n, k, NK_MR, NK_NR, NK_KC, NK_MC, NK_NC);
    size_t fw = panels(m, n, k, NK_FW_MR, NK_FW_NR, NK_FW_KC, NK_FW_MC, NK_FW_NC); /* what the firmware checks */
    return own > fw ? own : fw;
}

/* Panel jr of B: read in place, or packed (the partial last one). */
static const float *b_panel(const nk_gemm_core *g, const float *bp, int32_t full, int32_t pc, int32_t jc, int32_t jr,
                            int32_t kc, ptrdiff_t *ldb)
{
    if (jr < full) {
        *ldb = g->ldb_direct;
        return g->b_direct + (ptrdiff_t)pc * g->ldb_direct + jc + jr;
    }
    *ldb = NK_NR;
    return bp + (ptrdiff_t)(jr - full) * kc;
}

/* A block in rows of tiles rather than panel by panel, the same sums:
 * - a shallow product (a 1x1 conv expanding 16 to 32 channels: each output
 *   takes a few steps, and its stores are the cost): each row of tiles
 *   writes its MR rows of C left to right, a few sequential streams, where
 *   panel by panel every tile row wrote its own (96 streams on MobileNetV2's
 *   first expand, 1,303 -> 676 us);
 * - a narrow one (one or two panels: MobileNetV2's 7x7 layers): each tile
 *   of A is read once for both panels instead of once per panel (its last
 *   1x1 conv 551 -> 474 us). */
enum { SHALLOW_K = 32, FEW_PANELS = 2 };

static void block_by_rows(const nk_gemm_core *g, int32_t kc, const float *apan, const float *bp, int32_t full,
                          int32_t pc, int32_t jc, int32_t nc, int32_t ic, int32_t mc, int add, int last)
{
    for (int32_t ir = 0; ir < mc; ir += NK_MR)
        for (int32_t jr = 0; jr < nc; jr += NK_NR) {
            ptrdiff_t ldb;
            const float *bpanel = b_panel(g, bp, full, pc, jc, jr, kc, &ldb);
            do_tile(g, kc, apan + (ptrdiff_t)ir * kc, bpanel, ldb, ic + ir, jc + jr, (int)min32(mc - ir, NK_MR),
                    (int)min32(nc - jr, NK_NR), add, last);
        }
}

void nk_nn_gemm_run(const nk_gemm_core *g, void *scratch)
{
    if (g->m <= 0 || g->n <= 0)
        return;
    if (g->k <= 0) { /* empty sum: C stays (or becomes 0), then bias and act */
        for (int32_t i = 0; i < g->m; i++) {
            float *c = g->c + (ptrdiff_t)i * g->ldc;
            if (!g->accumulate)
                memset(c, 0, sizeof(float) * (size_t)g->n);
            if (g->row_bias)
                for (int32_t j = 0; j < g->n; j++)
                    c[j] += g->row_bias[i];
            nk_nn_act_inplace(c, g->n, g->act);
        }
        return;
    }
    int32_t kcmax = min32(g->k, NK_KC);
    float *ap = align_ptr(scratch);
    float *bp = align_ptr(ap + (size_t)round_up(min32(g->m, NK_MC), NK_MR) * (size_t)kcmax);
    for (int32_t jc = 0; jc < g->n; jc += NK_NC) {
        int32_t nc = min32(g->n - jc, NK_NC);
        for (int32_t pc = 0; pc < g->k; pc += NK_KC) {
            int32_t kc = min32(g->k - pc, NK_KC);
            int add = pc > 0 || g->accumulate, last = pc + kc >= g->k;
            /* A plain B is read in place; only a partial last panel is packed */
            int32_t full = g->b_direct ? nc / NK_NR * NK_NR : 0;
            if (full < nc)
                g->pack_b(g->b_ctx, pc, kc, g->j_off + jc + full, nc - full, bp);
            for (int32_t ic = 0; ic < g->m; ic += NK_MC) {
                int32_t mc = min32(g->m - ic, NK_MC);
                const float *apan = ap;
                if (g->a_packed)
                    apan = g->a_packed + (ptrdiff_t)pc * g->a_rows_up + (ptrdiff_t)(g->a_row0 + ic) * kc;
                else
                    g->pack_a(g->a_ctx, ic, mc, pc, kc, ap);
                if ((kc <= SHALLOW_K || nc <= FEW_PANELS * NK_NR) && mc > 1) {
                    block_by_rows(g, kc, apan, bp, full, pc, jc, nc, ic, mc, add, last);
                    continue;
                }
                for (int32_t jr = 0; jr < nc; jr += NK_NR) {
                    ptrdiff_t ldb;
                    const float *bpanel = b_panel(g, bp, full, pc, jc, jr, kc, &ldb);
#ifdef NK_ROW_N
                    if (mc == 1 && jr + NK_ROW_N <= full) {
                        do_row(g, kc, apan, bpanel, ldb, ic, jc + jr, add, last);
                        jr += NK_ROW_N - NK_NR;
                        continue;
                    }
#endif
                    int nr = (int)min32(nc - jr, NK_NR);
                    for (int32_t ir = 0; ir < mc; ir += NK_MR)
                        do_tile(g, kc, apan + (ptrdiff_t)ir * kc, bpanel, ldb, ic + ir, jc + jr,
                                (int)min32(mc - ir, NK_MR), nr, add, last);
                }
            }
        }
    }
}

size_t nk_nn_prepack_a_floats(int32_t m, int32_t k)
{
    return m > 0 && k > 0 ? (size_t)round_up(m, NK_MR) * (size_t)k : 0;
}

void nk_nn_prepack_a(nk_pack_a_fn pack_a, const void *ctx, int32_t m, int32_t k, float *dst)
{
    for (int32_t pc = 0; pc < k; pc += NK_KC)
        pack_a(ctx, 0, m, pc, min32(k - pc, NK_KC), dst + (ptrdiff_t)pc * round_up(m, NK_MR));
}

/* Splits `units` blocks of `unit` items evenly: items [lo, hi) of part. */
static nk_range split_units(int32_t total, int32_t unit, int part, int parts)
{
    int64_t units = (total + unit - 1) / unit;
    int64_t lo = units * part / parts * unit, hi = units * (part + 1) / parts * unit;
    nk_range r = {(int32_t)(lo < total ? lo : total), (int32_t)(hi < total ? hi : total)};
    return r;
}

void nk_nn_split(int32_t m, int32_t n, int part, int parts, nk_range *rows, nk_range *cols)
{
    *rows = (nk_range){0, m};
    *cols = (nk_range){0, n};
    /* columns while every part gets a few panels: they keep the full tile height */
    if (n >= (int64_t)parts * 4 * NK_NR || m < (int64_t)parts * NK_MR)
        *cols = split_units(n, NK_NR, part, parts);
    else
        *rows = split_units(m, NK_MR, part, parts);
}

void nk_nn_pack_a_mat(const void *ctx, int32_t i0, int32_t mc, int32_t p0, int32_t kc, float *dst)
{
    const nk_mat_src *s = ctx;
    for (int32_t ib = 0; ib < mc; ib += NK_MR, dst += (ptrdiff_t)kc * NK_MR) {
        int rows = (int)min32(mc - ib, NK_MR);
        if (s->trans) { /* A stored k x m: each depth step is a contiguous run of rows */
            for (int32_t p = 0; p < kc; p++) {
                const float *src = s->p + (ptrdiff_t)(p0 + p) * s->ld + i0 + ib;
                float *d = dst + (ptrdiff_t)p * NK_MR;
                int i = 0;
                for (; i < rows; i++)
                    d[i] = src[i];
                for (; i < NK_MR; i++)
                    d[i] = 0.0f;
            }
        } else if (rows == NK_MR) {
            /* MR sequential read streams, contiguous writes */
            const float *src[NK_MR];
            for (int i = 0; i < NK_MR; i++)
                src[i] = s->p + (ptrdiff_t)(i0 + ib + i) * s->ld + p0;
            for (int32_t p = 0; p < kc; p++)
                for (int i = 0; i < NK_MR; i++)
                    dst[(ptrdiff_t)p * NK_MR + i] = src[i][p];
        } else {
            for (int i = 0; i < NK_MR; i++) {
                if (i >= rows) {
                    for (int32_t p = 0; p < kc; p++)
                        dst[(ptrdiff_t)p * NK_MR + i] = 0.0f;
                    continue;
                }
                const float *src = s->p + (ptrdiff_t)(i0 + ib + i) * s->ld + p0;
                for (int32_t p = 0; p < kc; p++)
                    dst[(ptrdiff_t)p * NK_MR + i] = src[p];
            }
        }
    }
}

void nk_nn_pack_b_mat(const void *ctx, int32_t p0, int32_t kc, int32_t j0, int32_t nc, float *dst)
{
    const nk_mat_src *s = ctx;
    for (int32_t jb = 0; jb < nc; jb += NK_NR, dst += (ptrdiff_t)kc * NK_NR) {
        int cols = (int)min32(nc - jb, NK_NR);
        if (!s->trans) { /* B stored k x n: a depth step is a contiguous run of columns */
            for (int32_t p = 0; p < kc; p++) {
                const float *src = s->p + (ptrdiff_t)(p0 + p) * s->ld + j0 + jb;
                float *d = dst + (ptrdiff_t)p * NK_NR;
                int j = 0;
                for (; j < cols; j++)
                    d[j] = src[j];
                for (; j < NK_NR; j++)
                    d[j] = 0.0f;
            }
        } else if (cols == NK_NR) {
            /* NR sequential read streams, contiguous writes (a column at a
             * time would write with a stride of NR floats) */
            const float *src[NK_NR];
            for (int j = 0; j < NK_NR; j++)
                src[j] = s->p + (ptrdiff_t)(j0 + jb + j) * s->ld + p0;
            for (int32_t p = 0; p < kc; p++)
                for (int j = 0; j < NK_NR; j++)
                    dst[(ptrdiff_t)p * NK_NR + j] = src[j][p];
        } else {
            for (int j = 0; j < NK_NR; j++) {
                if (j >= cols) {
                    for (int32_t p = 0; p < kc; p++)
                        dst[(ptrdiff_t)p * NK_NR + j] = 0.0f;
                    continue;
                }
                const float *src = s->p + (ptrdiff_t)(j0 + jb + j) * s->ld + p0;
                for (int32_t p = 0; p < kc; p++)
                    dst[(ptrdiff_t)p * NK_NR + j] = src[p];
            }
        }
    }
}

/* ---- nk_sgemm ------------------------------------------------------------- */

static int sgemm_valid(const nk_sgemm_params *p)
{
    if (p->m < 0 || p->n < 0 || p->k < 0)
        return 0;
    int32_t acols = p->trans_a ? p->m : p->k, bcols = p->trans_b ? p->k : p->n;
    return p->lda >= (acols > 1 ? acols : 1) && p->ldb >= (bcols > 1 ? bcols : 1) &&
           p->ldc >= (p->n > 1 ? p->n : 1);
}

size_t nk_sgemm_scratch_size(const nk_sgemm_params *p)
{
    return sgemm_valid(p) ? nk_nn_gemm_scratch(p->m, p->n, p->k) : 0;
}

nk_status nk_sgemm(const nk_sgemm_params *p, const float *a, const float *b, float *c, void *scratch)
{
    if (!sgemm_valid(p) || (p->m && p->n && (!c || (p->k && (!a || !b || !scratch)))))
        return NK_EARG;
    nk_mat_src as = {a, p->lda, p->trans_a}, bs = {b, p->ldb, p->trans_b};
    nk_gemm_core g = {.m = p->m, .n = p->n, .k = p->k, .pack_a = nk_nn_pack_a_mat, .a_ctx = &as,
                      .pack_b = nk_nn_pack_b_mat, .b_ctx = &bs, .c = c, .ldc = p->ldc, .alpha = p->alpha,
                      .accumulate = p->accumulate, .b_direct = p->trans_b ? NULL : b, .ldb_direct = p->ldb};
    nk_nn_gemm_run(&g, scratch);
    return NK_OK;
}

/* ---- nk_gemm (ONNX Gemm) ---------------------------------------------------- */

static int gemm_valid(const nk_gemm_params *p)
{
    return p->m >= 0 && p->n >= 0 && p->k >= 0 && (p->c_rows == 1 || p->c_rows == p->m) &&
           (p->c_cols == 1 || p->c_cols == p->n);
}

size_t nk_gemm_scratch_size(const nk_gemm_params *p)
{
    return gemm_valid(p) ? nk_nn_gemm_scratch(p->m, p->n, p->k) : 0;
}

nk_status nk_gemm(const nk_gemm_params *p, const float *a, const float *b, const float *c, float *y, void *scratch)
{
    return nk_gemm_part(p, a, b, c, y, scratch, 0, 1);
}

nk_status nk_gemm_part(const nk_gemm_params *p, const float *a, const float *b, const float *c, float *y,
                       void *scratch, int part, int parts)
{
    if (!gemm_valid(p) || parts < 1 || part < 0 || part >= parts ||
        (p->m && p->n && (!y || (p->k && (!a || !b || !scratch)))))
        return NK_EARG;
    nk_range rows, cols;
    nk_nn_split(p->m, p->n, part, parts, &rows, &cols);
    if (rows.hi <= rows.lo || cols.hi <= cols.lo)
        return NK_OK;
    int with_c = c && p->beta != 0.0f;
    if (with_c) /* Y = beta * C first; the product is then added to it, as onnxruntime does */
        for (int32_t i = rows.lo; i < rows.hi; i++) {
            const float *cr = c + (ptrdiff_t)(p->c_rows == 1 ? 0 : i) * p->c_cols;
            float *yr = y + (ptrdiff_t)i * p->n;
            if (p->c_cols == 1)
                for (int32_t j = cols.lo; j < cols.hi; j++)
                    yr[j] = p->beta * cr[0];
            else
                for (int32_t j = cols.lo; j < cols.hi; j++)
                    yr[j] = p->beta * cr[j];
        }
    /* op(A)'s rows from rows.lo: A advances by rows (plain) or columns (transposed) */
    ptrdiff_t lda = p->trans_a ? p->m : p->k, ldb = p->trans_b ? p->k : p->n;
    nk_mat_src as = {a + (p->trans_a ? rows.lo : (ptrdiff_t)rows.lo * lda), lda, p->trans_a},
               bs = {b, ldb, p->trans_b};
    nk_gemm_core g = {.m = rows.hi - rows.lo, .n = cols.hi - cols.lo, .k = p->k, .pack_a = nk_nn_pack_a_mat,
                      .a_ctx = &as, .pack_b = nk_nn_pack_b_mat, .b_ctx = &bs, .j_off = cols.lo,
                      .c = y + (ptrdiff_t)rows.lo * p->n + cols.lo, .ldc = p->n, .alpha = p->alpha,
                      .accumulate = with_c, .act = p->act, .b_direct = p->trans_b ? NULL : b + cols.lo,
                      .ldb_direct = p->n};
    nk_nn_gemm_run(&g, scratch);
    return NK_OK;
}

/* ---- nk_matmul --------------------------------------------------------------- */

typedef struct mm_dims {
    int brank;                 /* output batch rank */
    int64_t bdims[NK_MAX_RANK];
    int64_t astride[NK_MAX_RANK], bstride[NK_MAX_RANK]; /* in matrices; 0 broadcasts */
    int64_t batch, a_batch, b_batch;
    int32_t m, n, k;
} mm_dims;

static int mm_shape(const nk_matmul_params *p, mm_dims *d)
{
    const nk_shape *a = &p->a, *b = &p->b;
    if (a->rank < 2 || b->rank < 2 || a->rank > NK_MAX_RANK || b->rank > NK_MAX_RANK)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] < 0)
            return 0;
    for (int i = 0; i < b->rank; i++)
        if (b->dims[i] < 0)
            return 0;
    d->m = a->dims[a->rank - 2];
    d->k = a->dims[a->rank - 1];
    d->n = b->dims[b->rank - 1];
    if (b->dims[b->rank - 2] != d->k)
        return 0;
    int ra = a->rank - 2, rb = b->rank - 2;
    d->brank = ra > rb ? ra : rb;
    int64_t sa = 1, sb = 1;
    d->batch = d->a_batch = d->b_batch = 1;
    for (int i = d->brank - 1; i >= 0; i--) { /* right-aligned */
        int ia = i - (d->brank - ra), ib = i - (d->brank - rb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return 0;
        d->bdims[i] = da > db ? da : (db > da ? db : da);
        if (da == 0 || db == 0)
            d->bdims[i] = 0;
        d->astride[i] = da == 1 ? 0 : sa;
        d->bstride[i] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
        d->batch *= d->bdims[i];
    }
    d->a_batch = sa;
    d->b_batch = sb;
    return 1;
}

size_t nk_matmul_scratch_size(const nk_matmul_params *p)
{
    mm_dims d;
    if (!mm_shape(p, &d))
        return 0;
    int64_t m = d.b_batch == 1 ? d.a_batch * d.m : d.m;
    if (m > INT32_MAX)
        m = d.m;
    return nk_nn_gemm_scratch((int32_t)m, d.n, d.k);
}

nk_status nk_matmul(const nk_matmul_params *p, const float *a, const float *b, float *y, void *scratch)
{
    mm_dims d;
    if (!mm_shape(p, &d))
        return NK_EARG;
    if (d.batch == 0 || d.m == 0 || d.n == 0)
        return NK_OK;
    if (!a || !b || !y || (d.k && !scratch))
        return NK_EARG;
    nk_sgemm_params sp = {.m = d.m, .n = d.n, .k = d.k, .lda = d.k > 1 ? d.k : 1, .ldb = d.n, .ldc = d.n,
                          .alpha = 1.0f};
    /* One shared right operand (weights): fold A's batch into its rows. */
    if (d.b_batch == 1 && d.a_batch * d.m <= INT32_MAX) {
        sp.m = (int32_t)(d.a_batch * d.m);
        return nk_sgemm(&sp, a, b, y, scratch);
    }
    int64_t idx[NK_MAX_RANK] = {0};
    int64_t ao = 0, bo = 0;
    const int64_t amat = (int64_t)d.m * d.k, bmat = (int64_t)d.k * d.n, ymat = (int64_t)d.m * d.n;
    for (int64_t t = 0; t < d.batch; t++) {
        nk_status st = nk_sgemm(&sp, a + ao * amat, b + bo * bmat, y + t * ymat, scratch);
        if (st != NK_OK)
            return st;
        for (int i = d.brank - 1; i >= 0; i--) { /* odometer over the output batch */
            ao += d.astride[i];
            bo += d.bstride[i];
            if (++idx[i] < d.bdims[i])
                break;
            ao -= d.astride[i] * d.bdims[i];
            bo -= d.bstride[i] * d.bdims[i];
            idx[i] = 0;
        }
    }
    return NK_OK;
}
