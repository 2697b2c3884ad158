/* nk_conv_part, nk_conv_part_fast and nk_gemm_part (kernels/nk_nn.h): for
 * any number of parts, with or without weights packed ahead, by im2col or
 * without it, the parts together write every output exactly once and bit
 * for bit as the whole kernel, which is what lets src/ref split a layer across
 * threads without the outputs depending on the thread count. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/nk_nn.h"

static float *rand_buf(size_t n, uint32_t seed)
{
    float *p = malloc(n ? n * sizeof(float) : 1);
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)((s >> 8) / 16777216.0 * 2.0 - 1.0);
    }
    return p;
}

/* An output the parts never write keeps this NaN pattern (and fails memcmp). */
static void poison(float *y, size_t n)
{
    memset(y, 0xff, n * sizeof(float));
}

/* Outputs still poisoned: part 0 of 2 alone must leave some (a real split). */
static size_t unwritten(const float *y, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += isnan(y[i]);
    return k;
}

static void check_conv(nk_conv_params p, uint32_t seed)
{
    p.oh = (p.h + p.pad_top + p.pad_bottom - ((p.kh - 1) * p.dil_h + 1)) / p.stride_h + 1;
    p.ow = (p.w + p.pad_left + p.pad_right - ((p.kw - 1) * p.dil_w + 1)) / p.stride_w + 1;
    size_t nx = (size_t)p.n * p.c * p.h * p.w, nw = (size_t)p.m * (p.c / p.group) * p.kh * p.kw;
    size_t ny = (size_t)p.n * p.m * p.oh * p.ow, ns = nk_conv_scratch_size(&p);
    cr_assert(nx && nw && ny);
    float *x = rand_buf(nx, seed), *w = rand_buf(nw, seed + 1), *b = rand_buf((size_t)p.m, seed + 2);
    float *whole = malloc(ny * sizeof(float)), *split = malloc(ny * sizeof(float));
    void *scratch = malloc(ns + 1);
    /* weights packed ahead (none for depthwise) */
    size_t np = nk_conv_wpack_size(&p);
    cr_assert_eq(np == 0, p.c == p.group);
    float *wpack = malloc(np + 1);
    nk_conv_wpack(&p, w, wpack);
    cr_assert_eq(nk_conv(&p, x, w, b, whole, scratch), NK_OK);
    size_t nfast = nk_conv_fast_scratch_size(&p);
    cr_assert_geq(nfast, ns);
    void *fscratch = malloc(nfast + 1);
    for (int fast = 0; fast < 2; fast++)
        for (int packed = 0; packed < 2; packed++)
            for (int parts = 1 + !(packed || fast); parts <= 5; parts++) {
                poison(split, ny);
                for (int part = parts - 1; part >= 0; part--) { /* any order */
                    const float *wp = packed && np ? wpack : NULL;
                    cr_assert_eq(fast ? nk_conv_part_fast(&p, x, w, wp, b, split, fscratch, part, parts)
                                      : nk_conv_part(&p, x, w, wp, b, split, scratch, part, parts),
                                 NK_OK);
                }
                cr_assert(!memcmp(whole, split, ny * sizeof(float)),
                          "conv c%d m%d g%d k%dx%d s%d %dx%d: %d parts (packed %d, fast %d) differ", p.c, p.m,
                          p.group, p.kh, p.kw, p.stride_h, p.h, p.w, parts, packed, fast);
            }
    free(fscratch);
    poison(split, ny);
    cr_assert_eq(nk_conv_part(&p, x, w, NULL, b, split, scratch, 0, 2), NK_OK);
    size_t left = unwritten(split, ny);
    if (ny >= 1000) /* below that one panel or tile may be all there is */
        cr_assert(left > 0 && left < ny, "conv c%d m%d: part 0 of 2 wrote %zu of %zu", p.c, p.m, ny - left, ny);
    cr_assert_eq(nk_conv_part(&p, x, w, NULL, b, split, scratch, 2, 2), NK_EARG);
    free(x), free(w), free(b), free(whole), free(split), free(scratch), free(wpack);
}

static nk_conv_params conv(int32_t n, int32_t c, int32_t hw, int32_t m, int32_t k, int32_t group, int32_t stride,
                           int32_t pad)
{
    nk_conv_params p = {.n = n, .c = c, .h = hw, .w = hw, .m = m, .kh = k, .kw = k, .group = group,
                        .stride_h = stride, .stride_w = stride, .dil_h = 1, .dil_w = 1, .pad_top = pad,
                        .pad_left = pad, .pad_bottom = pad, .pad_right = pad};
    p.act.kind = NK_ACT_CLIP;
    p.act.lo = 0.0f;
    p.act.hi = 0.5f;
    return p;
}

Test(nn_part, conv_splits_bit_exact)
{
    check_conv(conv(1, 3, 37, 16, 3, 1, 2, 1), 1);    /* wide output: split by columns */
    check_conv(conv(1, 64, 5, 100, 3, 1, 1, 1), 2);   /* narrow output, many rows: by rows */
    check_conv(conv(1, 40, 9, 72, 1, 1, 1, 0), 3);    /* pointwise: B read in place */
    check_conv(conv(1, 24, 17, 24, 3, 24, 1, 1), 4);  /* depthwise: by channels */
    check_conv(conv(1, 16, 20, 32, 3, 16, 2, 1), 5);  /* depthwise, channel multiplier 2, stride 2 */
    check_conv(conv(2, 32, 11, 48, 3, 4, 1, 1), 6);   /* grouped, two images: whole GEMMs */
    check_conv(conv(1, 8, 6, 13, 3, 1, 1, 0), 7);     /* tiny: most parts empty */
}

/* The im2col-free route of nk_conv_part_fast takes convs of stride 1 or 2
 * with more than one tap (grouped too) on planes not much narrower than
 * their padding (stride 2 on the padded plane's phases); dilations, uneven
 * pads, one-axis strides and 1-D ones give the same bits as im2col. */
Test(nn_part, conv_without_im2col_bit_exact)
{
    nk_conv_params taken[] = {conv(1, 64, 5, 100, 3, 1, 1, 1), conv(2, 32, 11, 48, 3, 4, 1, 1),
                              conv(1, 8, 6, 13, 3, 1, 1, 0),   conv(1, 7, 40, 19, 3, 1, 1, 1),
                              conv(1, 5, 23, 9, 5, 1, 1, 2),   conv(1, 3, 29, 40, 7, 1, 1, 3),
                              conv(1, 3, 37, 16, 3, 1, 2, 1),  conv(1, 3, 45, 20, 7, 1, 2, 3),
                              conv(2, 16, 15, 24, 3, 2, 2, 1), conv(1, 6, 16, 9, 3, 1, 2, 0)};
    nk_conv_params odd = conv(1, 6, 26, 10, 3, 1, 1, 0);
    odd.kw = 2, odd.dil_h = 2, odd.dil_w = 3, odd.pad_top = 3, odd.pad_left = 0, odd.pad_bottom = 1,
    odd.pad_right = 2, odd.h = 19;
    nk_conv_params odd2 = odd; /* strided one way, dilated, uneven pads */
    odd2.stride_h = 2;
    nk_conv_params one_d = conv(1, 12, 1, 14, 1, 1, 1, 0);
    one_d.w = 70, one_d.kw = 5, one_d.pad_left = 2, one_d.pad_right = 2, one_d.act.kind = NK_ACT_NONE;
    nk_conv_params one_d2 = one_d;
    one_d2.stride_w = 2, one_d2.w = 71;
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
        nk_conv_params p = taken[i];
        p.oh = (p.h + 2 * p.pad_top - p.kh) / p.stride_h + 1;
        p.ow = (p.w + 2 * p.pad_left - p.kw) / p.stride_w + 1;
        cr_assert_gt(nk_conv_fast_scratch_size(&p), nk_conv_scratch_size(&p), "case %zu not taken", i);
        check_conv(taken[i], 20 + (uint32_t)i);
    }
    check_conv(odd, 30);
    check_conv(one_d, 31);
    check_conv(odd2, 32);
    check_conv(one_d2, 33);
    /* not taken: stride 3, pointwise, depthwise, a plane narrower than twice its padding */
    nk_conv_params not_taken[] = {conv(1, 3, 37, 16, 3, 1, 3, 1), conv(1, 40, 9, 72, 1, 1, 1, 0),
                                  conv(1, 24, 17, 24, 3, 24, 1, 1), conv(1, 16, 3, 16, 3, 1, 1, 1)};
    for (size_t i = 0; i < sizeof not_taken / sizeof not_taken[0]; i++) {
        nk_conv_params p = not_taken[i];
        p.oh = (p.h + 2 * p.pad_top - p.kh) / p.stride_h + 1;
        p.ow = (p.w + 2 * p.pad_left - p.kw) / p.stride_w + 1;
        cr_assert_eq(nk_conv_fast_scratch_size(&p), nk_conv_scratch_size(&p), "case %zu taken", i);
        check_conv(not_taken[i], 40 + (uint32_t)i);
    }
}

static void check_gemm(nk_gemm_params p, int with_c, uint32_t seed)
{
    size_t na = (size_t)p.m * p.k, nb = (size_t)p.k * p.n, ny = (size_t)p.m * p.n;
    float *a = rand_buf(na, seed), *b = rand_buf(nb, seed + 1), *c = rand_buf((size_t)p.c_rows * p.c_cols, seed + 2);
    float *whole = malloc(ny * sizeof(float)), *split = malloc(ny * sizeof(float));
    void *scratch = malloc(nk_gemm_scratch_size(&p) + 1);
    cr_assert_eq(nk_gemm(&p, a, b, with_c ? c : NULL, whole, scratch), NK_OK);
    for (int parts = 2; parts <= 4; parts++) {
        poison(split, ny);
        for (int part = 0; part < parts; part++)
            cr_assert_eq(nk_gemm_part(&p, a, b, with_c ? c : NULL, split, scratch, part, parts), NK_OK);
        cr_assert(!memcmp(whole, split, ny * sizeof(float)), "gemm %dx%dx%d ta%d tb%d: %d parts differ", p.m, p.n,
                  p.k, p.trans_a, p.trans_b, parts);
    }
    poison(split, ny);
    cr_assert_eq(nk_gemm_part(&p, a, b, with_c ? c : NULL, split, scratch, 0, 2), NK_OK);
    size_t left = unwritten(split, ny);
    cr_assert(left > 0 && left < ny, "gemm %dx%d: part 0 of 2 wrote %zu of %zu", p.m, p.n, ny - left, ny);
    free(a), free(b), free(c), free(whole), free(split), free(scratch);
}

Test(nn_part, gemm_splits_bit_exact)
{
    nk_gemm_params fc = {.m = 1, .n = 1000, .k = 300, .trans_b = 1, .alpha = 1.0f, .beta = 1.0f, .c_rows = 1,
                         .c_cols = 1000};
    check_gemm(fc, 1, 10); /* a classifier: one row, columns split */
    nk_gemm_params tall = {.m = 90, .n = 20, .k = 40, .trans_a = 1, .alpha = 0.5f, .beta = 2.0f, .c_rows = 90,
                           .c_cols = 1};
    check_gemm(tall, 1, 11); /* few columns: rows split, A transposed */
    nk_gemm_params sq = {.m = 50, .n = 300, .k = 70, .alpha = 1.0f, .c_rows = 1, .c_cols = 1};
    check_gemm(sq, 0, 12);
}

/* A one-row GEMM on a B read in place takes the one-row tile (four panels
 * wide): each output is the same sum as in a taller GEMM's register tile. */
Test(nn_part, one_row_gemm_same_bits_as_in_a_tile)
{
    const int32_t m = 5, n = 200, k = 700; /* k over two depth blocks, n not a multiple of 64 */
    nk_gemm_params tall = {.m = m, .n = n, .k = k, .alpha = 1.0f, .c_rows = 1, .c_cols = n, .act = {.kind = NK_ACT_RELU}};
    nk_gemm_params row = tall;
    row.m = 1;
    float *a = rand_buf((size_t)m * k, 50), *b = rand_buf((size_t)k * n, 51), *c = rand_buf((size_t)n, 52);
    float *yt = malloc(sizeof(float) * (size_t)m * n), *yr = malloc(sizeof(float) * (size_t)n);
    size_t ns = nk_gemm_scratch_size(&tall);
    cr_assert_gt(ns, 0);
    void *scratch = malloc(ns);
    for (int with_c = 0; with_c < 2; with_c++) {
        tall.beta = row.beta = with_c ? 0.5f : 0.0f;
        for (int32_t i = 0; i < m; i++) {
            cr_assert_eq(nk_gemm(&tall, a, b, with_c ? c : NULL, yt, scratch), NK_OK);
            cr_assert_eq(nk_gemm(&row, a + (ptrdiff_t)i * k, b, with_c ? c : NULL, yr, scratch), NK_OK);
            cr_assert(!memcmp(yt + (ptrdiff_t)i * n, yr, sizeof(float) * (size_t)n), "row %d (with C %d) differs", i,
                      with_c);
        }
    }
    free(a), free(b), free(c), free(yt), free(yr), free(scratch);
}
