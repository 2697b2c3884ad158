/* Micro-benchmark of the float nn kernels: GFLOP/s of Conv on the layers of
 * resnet18 and mobilenet_v2 (224x224, batch 1), of Gemm, and the summed
 * time of every resnet18 convolution. Not part of `make test`; build and run:
 *   make bench-kernels-nn      (or: bench/kernels_nn.sh build) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/nk_nn.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct layer {
    const char *name;
    int c, h, m, k, s, g, count; /* count: occurrences in the network */
} layer;

/* resnet18's convolutions (square inputs, pad k/2). */
static const layer resnet18[] = {
    {"conv1 7x7/2 3->64 @224", 3, 224, 64, 7, 2, 1, 1},
    {"l1 3x3 64->64 @56", 64, 56, 64, 3, 1, 1, 4},
    {"l2 3x3/2 64->128 @56", 64, 56, 128, 3, 2, 1, 1},
    {"l2 3x3 128->128 @28", 128, 28, 128, 3, 1, 1, 3},
    {"l2 1x1/2 64->128 @56", 64, 56, 128, 1, 2, 1, 1},
    {"l3 3x3/2 128->256 @28", 128, 28, 256, 3, 2, 1, 1},
    {"l3 3x3 256->256 @14", 256, 14, 256, 3, 1, 1, 3},
    {"l3 1x1/2 128->256 @28", 128, 28, 256, 1, 2, 1, 1},
    {"l4 3x3/2 256->512 @14", 256, 14, 512, 3, 2, 1, 1},
    {"l4 3x3 512->512 @7", 512, 7, 512, 3, 1, 1, 3},
    {"l4 1x1/2 256->512 @14", 256, 14, 512, 1, 2, 1, 1},
};

static const layer others[] = {
    {"mbv2 1x1 24->144 @56", 24, 56, 144, 1, 1, 1, 1},
    {"mbv2 dw3x3 144 @56", 144, 56, 144, 3, 1, 144, 1},
    {"mbv2 dw3x3/2 144 @56", 144, 56, 144, 3, 2, 144, 1},
    {"mbv2 1x1 144->24 @56", 144, 56, 24, 1, 1, 1, 1},
    {"grouped 3x3 128->128 g32 @28", 128, 28, 128, 3, 1, 32, 1},
};

static double run_layer(const layer *L, int reps, double *gflops)
{
    nk_conv_params p = {.n = 1, .c = L->c, .h = L->h, .w = L->h, .m = L->m, .kh = L->k, .kw = L->k,
                        .group = L->g, .stride_h = L->s, .stride_w = L->s, .dil_h = 1, .dil_w = 1,
                        .pad_top = L->k / 2, .pad_left = L->k / 2, .pad_bottom = L->k / 2,
                        .pad_right = L->k / 2, .act = {.kind = NK_ACT_RELU}};
    p.oh = (L->h + 2 * (L->k / 2) - L->k) / L->s + 1;
    p.ow = p.oh;
    size_t nx = (size_t)L->c * L->h * L->h, nw = (size_t)L->m * (L->c / L->g) * L->k * L->k;
    size_t ny = (size_t)L->m * p.oh * p.ow;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)L->m * 4), *y = malloc(ny * 4);
    size_t ns = nk_conv_scratch_size(&p);
    void *s = malloc(ns ? ns : 1);
    for (size_t i = 0; i < nx; i++)
        x[i] = (float)(rand() % 200 - 100) / 100.0f;
    for (size_t i = 0; i < nw; i++)
        w[i] = (float)(rand() % 200 - 100) / 1000.0f;
    for (int i = 0; i < L->m; i++)
        b[i] = 0.1f;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (nk_conv(&p, x, w, b, y, s) != NK_OK) {
            fprintf(stderr, "%s: conv failed\n", L->name);
            exit(1);
        }
        double t = now() - t0;
        best = t < best ? t : best;
    }
    double flops = 2.0 * (double)ny * (L->c / L->g) * L->k * L->k;
    *gflops = flops / best * 1e-9;
    free(x), free(w), free(b), free(y), free(s);
    return best;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    double total = 0, total_flops = 0, g;
    printf("%-32s %10s %10s\n", "layer (batch 1)", "ms", "GFLOP/s");
    for (size_t i = 0; i < sizeof resnet18 / sizeof *resnet18; i++) {
        double t = run_layer(&resnet18[i], reps, &g);
        printf("%-32s %10.3f %10.2f\n", resnet18[i].name, t * 1e3, g);
        total += t * resnet18[i].count;
        total_flops += g * t * 1e9 * resnet18[i].count;
    }
    printf("%-32s %10.3f %10.2f\n", "resnet18: all convolutions", total * 1e3, total_flops / total * 1e-9);
    for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
        double t = run_layer(&others[i], reps, &g);
        printf("%-32s %10.3f %10.2f\n", others[i].name, t * 1e3, g);
    }
    /* classifier: 1 x 512 by 1000 x 512 (transB), and a square SGEMM */
    int shapes[2][3] = {{1, 1000, 512}, {512, 512, 512}};
    for (int q = 0; q < 2; q++) {
        int m = shapes[q][0], n = shapes[q][1], k = shapes[q][2];
        nk_gemm_params p = {.m = m, .n = n, .k = k, .trans_b = 1, .alpha = 1, .beta = 1, .c_rows = 1, .c_cols = n};
        float *a = calloc((size_t)m * k, 4), *b = calloc((size_t)n * k, 4), *c = calloc((size_t)n, 4);
        float *y = malloc((size_t)m * n * 4);
        void *s = malloc(nk_gemm_scratch_size(&p));
        double best = 1e30;
        for (int r = 0; r < reps * 4; r++) {
            double t0 = now();
            nk_gemm(&p, a, b, c, y, s);
            double t = now() - t0;
            best = t < best ? t : best;
        }
        char name[64];
        snprintf(name, sizeof name, "gemm %dx%dx%d transB", m, n, k);
        printf("%-32s %10.3f %10.2f\n", name, best * 1e3, 2.0 * m * n * k / best * 1e-9);
        free(a), free(b), free(c), free(y), free(s);
    }
    return 0;
}
