/* GPTQ weight rounding (Frantar et al. 2022) for one group of a Conv/Gemm.
 *
 * The output error of a weight error d (one output channel, k inputs) is
 * d^T H d, H = E[p p^T] of the layer's input patches (their covariance when
 * bias correction follows). GPTQ quantizes the inputs one after the other and
 * moves each one's rounding error onto the inputs not yet quantized, through
 * the Cholesky factor of H^-1. The same sequence is Babai's nearest plane
 * walk on a factor H = M^T M with M lower triangular (Chen et al. 2025,
 * "GPTQ as Babai's nearest plane algorithm"): with d_0..d_{i-1} fixed, the
 * code of input i minimizes |(M d)_i| = |M_ii d_i + sum_{j<i} M_ij d_j|.
 * That needs one Cholesky factorization of H and no inverse: M is the
 * anti-transpose of the Cholesky factor of H with its rows and columns
 * reversed. The objective sum_i (M d)_i^2 comes for free, so the scale of
 * each channel is chosen on it among a few clipping factors. */
#include <math.h>
#include <string.h>

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
    gq->d = npu_malloc(alloc, sizeof(double) * kk);
    gq->codes = npu_malloc(alloc, kk);
    if (!gq->m || !gq->d || !gq->codes) {
        q_gptq_free(gq);
        return npu_fail(err, NPU_EINTERNAL, "out of memory for the GPTQ factor (%lld inputs)", (long long)k);
    }
    return NPU_OK;
}

void q_gptq_free(q_gptq *gq)
{
    size_t kk = (size_t)(gq->k ? gq->k : 1);
    npu_free(gq->alloc, gq->m, sizeof(double) * kk * kk);
    npu_free(gq->alloc, gq->d, sizeof(double) * kk);
    npu_free(gq->alloc, gq->codes, kk);
    memset(gq, 0, sizeof *gq);
}

/* Four partial sums: the order is fixed, so the result is deterministic. */
static double dot(const double *a, const double *b, int64_t n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        s0 += a[j] * b[j];
        s1 += a[j + 1] * b[j + 1];
        s2 += a[j + 2] * b[j + 2];
        s3 += a[j + 3] * b[j + 3];
    }
    for (; j < n; j++)
        s0 += a[j] * b[j];
    return (s0 + s1) + (s2 + s3);
}

/* In place: the lower triangle of a (k x k, row-major) becomes L with
 * A = L L^T. False when A is not (numerically) positive definite. */
static bool cholesky(double *a, int64_t k)
{
    for (int64_t i = 0; i < k; i++) {
        double *ri = a + i * k;
        for (int64_t j = 0; j <= i; j++) {
            const double *rj = a + j * k;
            double s = ri[j] - dot(ri, rj, j);
            if (j < i) {
                ri[j] = s / rj[j];
            } else {
                if (!(s > 0))
                    return false;
                ri[i] = sqrt(s);
            }
        }
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
        gq->ready = cholesky(gq->m, k);
    }
    if (!gq->ready)
        return false;
    /* J H J = L L^T gives H = (J L J)(J L J)^T = M^T M with M = (J L J)^T,
     * M_ij = L_{k-1-j, k-1-i}: an anti-transpose, which keeps the lower
     * triangle and swaps its entries in pairs */
    double *m = gq->m;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j <= i; j++) {
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

/* Babai's walk at scale s: codes into q, returns the output error sum_i (M d)_i^2. */
static double walk(q_gptq *gq, const float *w, int qmax, double s, int8_t *q)
{
    int64_t k = gq->k;
    const double *m = gq->m;
    double *d = gq->d, cost = 0;
    for (int64_t i = 0; i < k; i++) {
        const double *row = m + i * k;
        double mii = row[i];
        double t = w[i] + dot(row, d, i) / mii; /* w_i plus the errors spread onto it */
        q[i] = clamp_code(round(t / s), qmax);
        d[i] = w[i] - s * q[i];
        double r = mii * (t - s * q[i]);
        cost += r * r;
    }
    return cost;
}

void q_gptq_round(q_gptq *gq, const float *w, int qmax, double s0, int8_t *codes, float *scale)
{
    /* the clipping factors tried: int4 codes gain from clipping, int8 rarely */
    int lo = qmax <= 7 ? 50 : 90, step = qmax <= 7 ? 5 : 2;
    double best = -1;
    for (int f = 100; f >= lo; f -= step) {
        float sf = (float)(s0 * f / 100.0); /* stored as float: walk with the scale the kernels use */
        double cost = walk(gq, w, qmax, sf, gq->codes);
        if (best < 0 || cost < best) {
            best = cost;
            *scale = sf;
            memcpy(codes, gq->codes, (size_t)gq->k);
        }
    }
}
