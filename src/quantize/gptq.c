/* GPTQ weight rounding (Frantar et al. 2022) for one group of a Conv/Gemm.
 *
 * The output error of a weight error d (one output channel, k inputs) is
 * d^T H d, H = E[p p^T] of the layer's input patches (their covariance when
 * bias correction follows). GPTQ quantizes the inputs one after the other and
 * moves each one's rounding error onto the inputs not yet quantized, through
 * the Cholesky factor of H^-1. The same sequence is Babai's nearest plane
 * walk on a factor H = M^T M with M lower triangular ("The geometry of LLM
 * quantization: GPTQ as Babai's nearest plane algorithm", 2025): with d_0..d_{i-1} fixed, the
 * code of input i minimizes |(M d)_i| = |M_ii d_i + sum_{j<i} M_ij d_j|.
 * That needs one Cholesky factorization of H and no inverse: M is the
 * anti-transpose of the Cholesky factor of H with its rows and columns
 * reversed. The objective sum_i (M d)_i^2 comes for free, so the scale of
 * each channel is chosen on it among a few clipping factors (int4), all
 * walked at once. */
#include <math.h>
#include <string.h>

#include "kernels/nk_common.h"
#include "quantize/quantize_internal.h"

enum {
    DAMP_TRIES = 4, /* the dampening grows tenfold each time H + damp I is not positive definite */
};
#define GPTQ_DAMP 0.01 /* of the mean diagonal (the paper's choice) */

npu_status q_gptq_init(q_gptq *gq, int64_t k, npu_alloc alloc, npu_err *err)
{
    memset(gq, 0, sizeof *gq);
    gq->alloc = alloc;
    gq->k = k;
    size_t kk = (size_t)(k ? k : 1);
    gq->m = npu_malloc(alloc, sizeof(double) * kk * kk);
    gq->d = npu_malloc(alloc, sizeof(double) * kk * Q_GPTQ_COLS);
    gq->codes = npu_malloc(alloc, kk * Q_GPTQ_COLS);
    gq->w = npu_malloc(alloc, sizeof(float) * kk * Q_GPTQ_COLS);
    if (!gq->m || !gq->d || !gq->codes || !gq->w) {
        q_gptq_free(gq);
        return npu_fail(err, NPU_EINTERNAL, "out of memory for the GPTQ factor (%lld inputs)", (long long)k);
    }
    return NPU_OK;
}

void q_gptq_free(q_gptq *gq)
{
    size_t kk = (size_t)(gq->k ? gq->k : 1);
    npu_free(gq->alloc, gq->m, sizeof(double) * kk * kk);
    npu_free(gq->alloc, gq->d, sizeof(double) * kk * Q_GPTQ_COLS);
    npu_free(gq->alloc, gq->codes, kk * Q_GPTQ_COLS);
    npu_free(gq->alloc, gq->w, sizeof(float) * kk * Q_GPTQ_COLS);
    memset(gq, 0, sizeof *gq);
}

/* The two hot loops are NK_HOT_CLONES (kernels/nk_common.h): the SIMD
 * width changes speed only, never the rounding. */

enum { CHOL_BLOCK = Q_GPTQ_COLS, LANES = 8 }; /* the panel is the k x Q_GPTQ_COLS scratch d */

/* a[c] -= sum_t coef[t] * p[t][c] for c in [c0, c1), t < nb (p rows of length ld). */
NK_HOT_CLONES
static void update_row(double *restrict a, const double *restrict p, int64_t ld, const double *restrict coef, int nb,
                       int64_t c0, int64_t c1)
{
    int64_t c = c0;
    for (; c + LANES <= c1; c += LANES) { /* LANES columns in registers, all terms in turn */
        double v[LANES];
        memcpy(v, a + c, sizeof v);
        for (int t = 0; t < nb; t++) {
            double f = coef[t];
            const double *pt = p + t * ld + c;
            for (int u = 0; u < LANES; u++) /* fixed length: vectorized */
                v[u] -= f * pt[u];
        }
        memcpy(a + c, v, sizeof v);
    }
    for (; c < c1; c++)
        for (int t = 0; t < nb; t++)
            a[c] -= coef[t] * p[t * ld + c];
}

/* update_row for UPD_ROWS rows r0.. at once over the columns [c0, c0 +
 * UPD_COLS) (all at or below the diagonal): the panel's columns are loaded
 * once for all the rows. The same terms in the same order as update_row:
 * the same result. */
enum { UPD_ROWS = 4, UPD_COLS = 16 };
NK_HOT_CLONES
static void update_tile(double *restrict a, int64_t k, int64_t r0, const double *restrict p, int nb, int64_t c0)
{
    double v[UPD_ROWS][UPD_COLS];
    for (int r = 0; r < UPD_ROWS; r++)
        memcpy(v[r], a + (r0 + r) * k + c0, sizeof v[r]);
    for (int t = 0; t < nb; t++) {
        const double *pt = p + t * k;
#pragma GCC unroll 4
        for (int r = 0; r < UPD_ROWS; r++) {
            double f = pt[r0 + r];
#pragma GCC unroll 16
            for (int u = 0; u < UPD_COLS; u++) /* fixed length: vectorized */
                v[r][u] -= f * pt[c0 + u];
        }
    }
    for (int r = 0; r < UPD_ROWS; r++)
        memcpy(a + (r0 + r) * k + c0, v[r], sizeof v[r]);
}

/* A22 -= L21 L21^T on the lower triangle of rows [r0, k), the block's
 * columns laid out as the rows of panel (nb x k). */
static void update_trailing(double *a, int64_t k, int64_t r0, const double *panel, int nb)
{
    for (int64_t r = r0; r < k; r += UPD_ROWS) {
        int64_t c = r0;
        if (r + UPD_ROWS <= k)
            for (; c + UPD_COLS <= r + 1; c += UPD_COLS) /* whole tiles on or left of every row's diagonal */
                update_tile(a, k, r, panel, nb, c);
        for (int64_t i = r; i < r + UPD_ROWS && i < k; i++) {
            double coef[CHOL_BLOCK];
            for (int t = 0; t < nb; t++)
                coef[t] = panel[t * k + i];
            update_row(a + i * k, panel, k, coef, nb, c, i + 1);
        }
    }
}

/* In place: the lower triangle of a (k x k, row-major) becomes L with
 * A = L L^T (right-looking, CHOL_BLOCK columns at a time; panel: scratch of
 * CHOL_BLOCK x k). False when A is not (numerically) positive definite. */
static bool cholesky(double *a, int64_t k, double *panel)
{
    for (int64_t j0 = 0; j0 < k; j0 += CHOL_BLOCK) {
        int nb = k - j0 < CHOL_BLOCK ? (int)(k - j0) : CHOL_BLOCK;
        /* the block's columns, for every row below: only the terms inside the block remain */
        for (int64_t i = j0; i < k; i++) {
            double *ri = a + i * k;
            for (int64_t j = j0; j < j0 + nb && j <= i; j++) {
                const double *rj = a + j * k;
                double s = ri[j];
                for (int64_t t = j0; t < j; t++)
                    s -= ri[t] * rj[t];
                if (j < i) {
                    ri[j] = s / rj[j];
                } else {
                    if (!(s > 0))
                        return false;
                    ri[i] = sqrt(s);
                }
            }
        }
        /* the rest: A22 -= L21 L21^T, through the block's columns laid out as rows */
        int64_t r0 = j0 + nb;
        for (int64_t r = r0; r < k; r++)
            for (int t = 0; t < nb; t++)
                panel[t * k + r] = a[r * k + j0 + t];
        update_trailing(a, k, r0, panel, nb);
    }
    return true;
}

bool q_gptq_factor(q_gptq *gq, const double *h)
{
    int64_t k = gq->k;
    double mean_diag = 0;
    for (int64_t j = 0; j < k; j++)
        mean_diag += h[j * k + j];
    mean_diag /= (double)(k ? k : 1);
    gq->ready = false;
    if (!(mean_diag > 0) || !isfinite(mean_diag))
        return false; /* no signal at all: nothing to weigh errors by */
    double damp = GPTQ_DAMP * mean_diag;
    for (int t = 0; t < DAMP_TRIES && !gq->ready; t++, damp *= 10) {
        /* J H J (rows and columns reversed), dampened; a dead input (H_jj = 0)
         * keeps only the dampening: it neither takes nor gives error */
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = 0; j <= i; j++)
                gq->m[i * k + j] = h[(k - 1 - i) * k + (k - 1 - j)] + (i == j ? damp : 0.0);
        gq->ready = cholesky(gq->m, k, gq->d);
    }
    if (!gq->ready)
        return false;
    /* J H J = L L^T gives H = (J L J)(J L J)^T = M^T M with M = (J L J)^T,
     * M_ij = L_{k-1-j, k-1-i}: an anti-transpose, which keeps the lower
     * triangle and swaps its entries in pairs */
    enum { B = 64 }; /* in square blocks: the partners of a block are a block, in cache together */
    double *m = gq->m;
    for (int64_t i0 = 0; i0 < k; i0 += B)
        for (int64_t j0 = 0; j0 <= i0; j0 += B)
            for (int64_t i = i0; i < i0 + B && i < k; i++)
                for (int64_t j = j0; j < j0 + B && j <= i; j++) {
                    int64_t i2 = k - 1 - j, j2 = k - 1 - i;
                    if (i2 * k + j2 > i * k + j) {
                        double t = m[i * k + j];
                        m[i * k + j] = m[i2 * k + j2];
                        m[i2 * k + j2] = t;
                    }
                }
    return true;
}

static int8_t clamp_code(double r, int qmax)
{
    return (int8_t)(r < -qmax ? -qmax : r > qmax ? qmax : r);
}

/* acc[c] += sum_{j0<=j<j1} row[j] d[j][c]: the errors so far, spread onto input i. */
NK_HOT_CLONES
static void spread(const double *restrict row, const double *restrict d, int64_t j0, int64_t j1, double *restrict acc)
{
    double a[Q_GPTQ_COLS]; /* local: kept in registers */
    memcpy(a, acc, sizeof a);
    for (int64_t j = j0; j < j1; j++) {
        double mij = row[j];
        const double *dj = d + j * Q_GPTQ_COLS;
        for (int c = 0; c < Q_GPTQ_COLS; c++)
            a[c] += mij * dj[c];
    }
    memcpy(acc, a, sizeof a);
}

/* The lazy batch of GPTQ: acc[r] = spread over j < i0 for the SPREAD_ROWS
 * rows i0.. at once, each d[j] loaded once for all of them; the rows then
 * finish on the inputs of their own block (in walk). Same terms, same
 * order as spread: the same result. */
enum { SPREAD_ROWS = 4 };
NK_HOT_CLONES
static void spread_block(const double *restrict m, int64_t k, int64_t i0, const double *restrict d,
                         double acc[SPREAD_ROWS][Q_GPTQ_COLS])
{
    double a[SPREAD_ROWS][Q_GPTQ_COLS] = {{0}};
    const double *rows = m + i0 * k;
    for (int64_t j = 0; j < i0; j++) {
        const double *dj = d + j * Q_GPTQ_COLS;
#pragma GCC unroll 4
        for (int r = 0; r < SPREAD_ROWS; r++) {
            double mij = rows[r * k + j];
#pragma GCC unroll 32
            for (int c = 0; c < Q_GPTQ_COLS; c++)
                a[r][c] += mij * dj[c];
        }
    }
    memcpy(acc, a, sizeof a);
}

/* Babai's walk for Q_GPTQ_COLS columns at once (channel c / nf at the c % nf-th
 * trial scale sc[c]): the rows of M are read once for all of them, and the
 * inner loop over columns has a fixed length, which the compiler vectorizes.
 * Codes into q[c * k + i], the output error sum_i (M d)_i^2 of each column
 * into cost[c]. */
static void walk(q_gptq *gq, const float *w, int nf, const double *sc, int qmax, int8_t *q, double *cost)
{
    int64_t k = gq->k;
    const double *m = gq->m;
    double *d = gq->d, acc[Q_GPTQ_COLS], blk[SPREAD_ROWS][Q_GPTQ_COLS];
    for (int c = 0; c < Q_GPTQ_COLS; c++)
        cost[c] = 0;
    for (int64_t i = 0; i < k; i++) {
        const double *row = m + i * k;
        int64_t i0 = i / SPREAD_ROWS * SPREAD_ROWS, r = i - i0;
        if (i0 + SPREAD_ROWS <= k) { /* the block's rows share the inputs before it */
            if (r == 0)
                spread_block(m, k, i0, d, blk);
            memcpy(acc, blk[r], sizeof acc);
        } else {
            memset(acc, 0, sizeof acc);
            i0 = 0;
        }
        spread(row, d, i0, i, acc);
        double mii = row[i];
        for (int c = 0; c < Q_GPTQ_COLS; c++) {
            double wi = w[(c / nf) * k + i], t = wi + acc[c] / mii;
            int8_t code = clamp_code(round(t / sc[c]), qmax);
            q[c * k + i] = code;
            d[i * Q_GPTQ_COLS + c] = wi - sc[c] * code;
            double r = mii * (t - sc[c] * code);
            cost[c] += r * r;
        }
    }
}

void q_gptq_round(q_gptq *gq, const float *w, int64_t n, int qmax, int8_t *codes, float *scales)
{
    int64_t k = gq->k;
    /* int4: the clipping factors 1.00, 0.94, ..., 0.58 (4 channels a walk);
     * int8 gains nothing measurable from clipping (docs/numerics.md): 32 */
    int nf = qmax <= 7 ? Q_GPTQ_COLS / 4 : 1, per_block = Q_GPTQ_COLS / nf;
    double sc[Q_GPTQ_COLS], cost[Q_GPTQ_COLS];
    for (int64_t c0 = 0; c0 < n; c0 += per_block) {
        int nb = n - c0 < per_block ? (int)(n - c0) : per_block;
        /* the block's rows; a short block repeats its last channel */
        for (int b = 0; b < per_block; b++)
            memcpy(gq->w + (size_t)b * (size_t)k, w + (c0 + (b < nb ? b : nb - 1)) * k, sizeof(float) * (size_t)k);
        for (int b = 0; b < per_block; b++) {
            float amax = 0;
            for (int64_t j = 0; j < k; j++)
                amax = fmaxf(amax, fabsf(gq->w[b * k + j]));
            double s0 = amax > 0 ? amax / (float)qmax : 1.0f;
            for (int f = 0; f < nf; f++) /* stored as float: walk with the scales the kernels use */
                sc[b * nf + f] = (float)(s0 * (100 - 6 * f) / 100.0);
        }
        walk(gq, gq->w, nf, sc, qmax, gq->codes, cost);
        for (int b = 0; b < nb; b++) {
            int best = b * nf;
            for (int f = 1; f < nf; f++)
                best = cost[b * nf + f] < cost[best] ? b * nf + f : best;
            scales[c0 + b] = (float)sc[best];
            memcpy(codes + (c0 + b) * k, gq->codes + (size_t)best * (size_t)k, (size_t)k);
        }
    }
}
