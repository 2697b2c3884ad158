/* Input patch statistics (src/quantize/lstats.c): the blocked float Gram
 * tile (q_gram_add) equals the naive double sum P^T P on random rows, for
 * patch lengths that are and are not whole tiles; and through the observer,
 * a Gemm's second moment over more samples than one batch and a padded
 * conv's (strides 1 and 2) over all of its positions equal E[p p^T] and
 * E[p] computed directly. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quantize/quantize_internal.h"
#include "tests/support/calibfiles.h"
#include "tests/support/testgraph.h"

static int64_t padded(int64_t k)
{
    return (k + Q_GRAM_PAD - 1) / Q_GRAM_PAD * Q_GRAM_PAD;
}

/* Relative to the largest diagonal entry: the float sums keep ~1e-6. */
static void expect_upper_close(const double *got, const double *want, int64_t k, double tol)
{
    double scale = 0;
    for (int64_t i = 0; i < k; i++)
        scale = fmax(scale, fabs(want[i * k + i]));
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = i; j < k; j++)
            cr_expect(fabs(got[i * k + j] - want[i * k + j]) <= tol * scale, "k %lld: [%lld][%lld] %g, want %g",
                      (long long)k, (long long)i, (long long)j, got[i * k + j], want[i * k + j]);
}

Test(lstats, gram_tile_equals_naive_sum)
{
    const int64_t ks[] = {1, 9, 16, 17, 40, 130};
    const int nbs[] = {1, 5, 128};
    uint32_t seed = 7;
    for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
        for (size_t b = 0; b < sizeof nbs / sizeof *nbs; b++) {
            int64_t k = ks[a], ld = padded(k);
            int nb = nbs[b];
            float *p = calloc((size_t)(2 * nb * ld), sizeof *p);
            double *got = malloc(sizeof(double) * (size_t)(k * k)), *want = calloc((size_t)(k * k), sizeof *want);
            for (int r = 0; r < 2 * nb; r++)
                for (int64_t j = 0; j < k; j++)
                    p[r * ld + j] = tf_rnd(&seed) + (j % 3 == 0 ? 0.5f : 0.0f); /* a mean: not centred */
            for (int r = 0; r < 2 * nb; r++)
                for (int64_t i = 0; i < k; i++)
                    for (int64_t j = 0; j < k; j++)
                        want[i * k + j] += (double)p[r * ld + i] * p[r * ld + j];
            /* two batches: the first sets (garbage before it), the second adds */
            for (int64_t i = 0; i < k * k; i++)
                got[i] = NAN;
            q_gram_add(got, k, p, ld, nb, false);
            q_gram_add(got, k, p + nb * ld, ld, nb, true);
            expect_upper_close(got, want, k, 1e-5);
            free(p);
            free(got);
            free(want);
        }
}

/* malloc, with new blocks full of NaN bytes: statistics that read what
 * they never wrote show it. */
static void *poisoned(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    if (!nsize) {
        free(ptr);
        return NULL;
    }
    void *q = realloc(ptr, nsize);
    if (q && nsize > osize)
        memset((char *)q + osize, 0xff, nsize - osize);
    return q;
}

/* Feeds every sample to the observer as the calibration pass would. */
static void observe_all(q_lstats *s, const ir_tensor *x, const float *data, int samples)
{
    int64_t per = ir_tensor_numel(x);
    for (int i = 0; i < samples; i++)
        q_lstats_observe(s, NULL, x, data + i * per);
    q_lstats_finish(s);
}

Test(lstats, gemm_second_moment_over_several_batches)
{
    enum { K = 20, N = 3, SAMPLES = 300 }; /* more rows than one batch, not a multiple of it */
    ir_graph *g = ir_graph_new(npu_alloc_default());
    float w[N * K] = {0};
    ir_tensor *x = tg_tensor(g, "x", IR_F32, 2, (int64_t[]){1, K});
    ir_tensor *y = tg_tensor(g, "y", IR_F32, 2, (int64_t[]){1, N});
    ir_tensor *in[2] = {x, tg_const(g, "w", IR_F32, 2, (int64_t[]){N, K}, w)};
    ir_node *n = ir_node_new(g, IR_OP_GEMM, "fc", 2, in, 1, &y);
    ir_set_int(g, n, "transB", 1);
    tg_set_io(g, 1, &x, y);
    float *data = malloc(sizeof(float) * SAMPLES * K);
    uint32_t seed = 3;
    for (int i = 0; i < SAMPLES * K; i++)
        data[i] = tf_rnd(&seed);
    npu_err e;
    q_lstats *s = q_lstats_new(g, true, true, 0, (npu_alloc){poisoned, NULL}, &e);
    cr_assert(s, "%s", e.msg);
    observe_all(s, x, data, SAMPLES);
    cr_assert_eq(q_lstats_count(s), 1);
    const q_layer_stats *l = q_lstats_items(s);
    cr_assert(l->gram);
    cr_expect_eq(l->n_gram, SAMPLES);
    double want[K * K] = {0};
    for (int r = 0; r < SAMPLES; r++)
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++)
                want[i * K + j] += (double)data[r * K + i] * data[r * K + j] / SAMPLES;
    expect_upper_close(l->gram, want, K, 1e-5);
    for (int i = 0; i < K; i++)
        for (int j = 0; j < i; j++)
            cr_expect_eq(l->gram[i * K + j], l->gram[j * K + i], "mirrored");
    q_lstats_free(s);
    free(data);
    ir_graph_free(g);
}

/* A padded 3x3 conv of stride st on 5x5 inputs: at most 25 outputs, fewer
 * than the positions an 18-input patch samples, so all of them count. */
static void check_conv(int st, bool means)
{
    enum { C = 2, H = 5, OC = 3, KS = 3, K = C * KS * KS, SAMPLES = 7 };
    const int OH = (H + 2 - KS) / st + 1;
    ir_graph *g = ir_graph_new(npu_alloc_default());
    float w[OC * K] = {0};
    ir_tensor *x = tg_tensor(g, "x", IR_F32, 4, (int64_t[]){1, C, H, H});
    ir_tensor *y = tg_tensor(g, "y", IR_F32, 4, (int64_t[]){1, OC, OH, OH});
    ir_tensor *in[2] = {x, tg_const(g, "w", IR_F32, 4, (int64_t[]){OC, C, KS, KS}, w)};
    ir_node *n = ir_node_new(g, IR_OP_CONV, "conv", 2, in, 1, &y);
    ir_set_ints(g, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    ir_set_ints(g, n, "strides", 2, (int64_t[]){st, st});
    tg_set_io(g, 1, &x, y);
    float *data = malloc(sizeof(float) * SAMPLES * C * H * H);
    uint32_t seed = 11;
    for (int i = 0; i < SAMPLES * C * H * H; i++)
        data[i] = tf_rnd(&seed) + 1.0f;
    npu_err e;
    q_lstats *s = q_lstats_new(g, true, means, 0, (npu_alloc){poisoned, NULL}, &e);
    cr_assert(s, "%s", e.msg);
    observe_all(s, x, data, SAMPLES);
    const q_layer_stats *l = q_lstats_items(s);
    cr_assert(l->gram);
    cr_assert_eq(l->k, K);
    cr_expect_eq(l->n_gram, (uint64_t)(SAMPLES * OH * OH));
    double want[K * K] = {0}, mean[K] = {0};
    for (int smp = 0; smp < SAMPLES; smp++)
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OH; ox++) {
                double p[K];
                for (int c = 0; c < C; c++)
                    for (int ky = 0; ky < KS; ky++)
                        for (int kx = 0; kx < KS; kx++) {
                            int iy = oy * st + ky - 1, ix = ox * st + kx - 1;
                            bool in_img = iy >= 0 && iy < H && ix >= 0 && ix < H;
                            p[(c * KS + ky) * KS + kx] = in_img ? data[((smp * C + c) * H + iy) * H + ix] : 0.0;
                        }
                for (int i = 0; i < K; i++) {
                    mean[i] += p[i] / (SAMPLES * OH * OH);
                    for (int j = 0; j < K; j++)
                        want[i * K + j] += p[i] * p[j] / (SAMPLES * OH * OH);
                }
            }
    expect_upper_close(l->gram, want, K, 1e-5);
    for (int i = 0; i < K; i++)
        cr_expect(fabs(l->mean[i] - (means ? mean[i] : 0.0)) < 1e-9, "stride %d: mean[%d] %g, want %g", st, i,
                  l->mean[i], means ? mean[i] : 0.0); /* without bias correction the means are not gathered */
    q_lstats_free(s);
    free(data);
    ir_graph_free(g);
}

/* stride 1: the means from row totals; 2: from strided prefix sums */
Test(lstats, conv_second_moment_over_all_positions_with_padding)
{
    check_conv(1, true);
    check_conv(2, true);
}

/* without bias correction: the same second moment, no means */
Test(lstats, conv_second_moment_without_means)
{
    check_conv(1, false);
    check_conv(2, false);
}
