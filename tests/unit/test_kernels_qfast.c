/* The host tools' fast int8 conv (kernels/nk_qfast.h) against the portable
 * kernel (nk_qconv2d) bit for bit, and its raw partial sums against a plain
 * int64 loop written here, over random layers: groups, strides, dilation,
 * padding, int4 weights, per-channel multipliers with small exponents (many
 * rounding ties), biases large enough to saturate. On a host without AVX-512
 * VNNI both sides run the portable code and the raw check still bites. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/nk_qfast.h"

static uint32_t rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static int32_t range(uint32_t *s, int32_t lo, int32_t hi)
{
    return lo + (int32_t)(rnd(s) % (uint32_t)(hi - lo + 1));
}

typedef struct layer {
    nk_qconv2d_params p;
    int8_t *in, *w8, *out_ref, *out_fast;
    uint8_t *w4;
    int32_t *bias, *mult, *shift, *raw;
} layer;

static void make(layer *L, uint32_t *s)
{
    nk_qconv2d_params *p = &L->p;
    memset(L, 0, sizeof *L);
    int32_t kind = range(s, 0, 2); /* dense, grouped, depthwise (with a channel multiplier) */
    int32_t groups = kind == 0 ? 1 : range(s, 2, 8);
    p->n = range(s, 1, 2);
    p->groups = groups;
    p->c_in = groups * (kind == 2 ? 1 : range(s, 1, 9));
    p->c_out = groups * (kind == 2 ? range(s, 1, 2) : range(s, 1, 30));
    p->k_h = range(s, 1, 3), p->k_w = range(s, 1, 3);
    p->stride_h = range(s, 1, 2), p->stride_w = range(s, 1, 2);
    p->dil_h = range(s, 1, 2), p->dil_w = range(s, 1, 2);
    p->pad_top = range(s, 0, 2), p->pad_bottom = range(s, 0, 2);
    p->pad_left = range(s, 0, 2), p->pad_right = range(s, 0, 2);
    if (range(s, 0, 2) == 0) /* the 1x1 stride-1 fast packing */
        p->k_h = p->k_w = p->stride_h = p->stride_w = 1, p->pad_top = p->pad_bottom = p->pad_left = p->pad_right = 0;
    /* a depthwise window of more taps (81) than the register-blocked path takes */
    int wide = kind == 2 && range(s, 0, 4) == 0;
    if (wide)
        p->k_h = p->k_w = 9, p->dil_h = p->dil_w = 1;
    /* >= the widest window, 3 taps dilated by 2 (9 for the wide one) */
    p->h_in = range(s, wide ? 9 : 5, 20), p->w_in = range(s, wide ? 9 : 5, 40);
    p->h_out = (p->h_in + p->pad_top + p->pad_bottom - p->dil_h * (p->k_h - 1) - 1) / p->stride_h + 1;
    p->w_out = (p->w_in + p->pad_left + p->pad_right - p->dil_w * (p->k_w - 1) - 1) / p->stride_w + 1;
    p->in_zp = range(s, -128, 127), p->out_zp = range(s, -128, 127);
    p->act_min = range(s, -128, 0), p->act_max = range(s, 0, 127);
    p->w_format = range(s, 0, 3) == 0 ? NK_W_I4 : NK_W_I8;
    size_t nin = (size_t)p->n * p->c_in * p->h_in * p->w_in;
    size_t nw = (size_t)p->c_out * (p->c_in / groups) * p->k_h * p->k_w;
    size_t nout = (size_t)p->n * p->c_out * p->h_out * p->w_out;
    L->in = malloc(nin), L->w8 = malloc(nw), L->w4 = calloc(nk_int4_bytes(nw), 1);
    L->out_ref = malloc(nout), L->out_fast = malloc(nout), L->raw = malloc(nout * 4);
    L->bias = malloc(p->c_out * 4), L->mult = malloc(p->c_out * 4), L->shift = malloc(p->c_out * 4);
    for (size_t i = 0; i < nin; i++)
        L->in[i] = (int8_t)range(s, -128, 127);
    for (size_t i = 0; i < nw; i++)
        L->w8[i] = (int8_t)(p->w_format == NK_W_I4 ? range(s, -8, 7) : range(s, -128, 127));
    if (p->w_format == NK_W_I4)
        cr_assert_eq(nk_int4_pack(L->w8, L->w4, nw), NK_OK);
    for (int32_t o = 0; o < p->c_out; o++) {
        L->bias[o] = range(s, 0, 9) == 0 ? (int32_t)(rnd(s) * 300u) : range(s, -5000, 5000);
        L->mult[o] = (int32_t)((1u << 30) + (rnd(s) & ((1u << 30) - 1)));
        L->shift[o] = range(s, 0, 3) == 0 ? 30 : range(s, -20, 0);
    }
    p->q = (nk_qmults){range(s, 0, 3) == 0 ? 1 : p->c_out, L->mult, L->shift};
}

static void drop(layer *L)
{
    free(L->in), free(L->w8), free(L->w4), free(L->out_ref), free(L->out_fast), free(L->raw);
    free(L->bias), free(L->mult), free(L->shift);
}

/* sum (x - zp) * w over the window, plain loops, int64. */
static int64_t window_sum(const layer *L, int32_t b, int32_t oc, int32_t oy, int32_t ox)
{
    const nk_qconv2d_params *p = &L->p;
    int32_t cg = p->c_in / p->groups, g = oc / (p->c_out / p->groups);
    int64_t acc = 0;
    for (int32_t ic = 0; ic < cg; ic++)
        for (int32_t ky = 0; ky < p->k_h; ky++)
            for (int32_t kx = 0; kx < p->k_w; kx++) {
                int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
                int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
                if (iy < 0 || iy >= p->h_in || ix < 0 || ix >= p->w_in)
                    continue;
                int32_t x = L->in[(((size_t)b * p->c_in + g * cg + ic) * p->h_in + iy) * p->w_in + ix];
                int32_t w = L->w8[(((size_t)oc * cg + ic) * p->k_h + ky) * p->k_w + kx];
                acc += (int64_t)(x - p->in_zp) * w;
            }
    return acc;
}

Test(qfast, conv_matches_portable_and_plain_sums)
{
    uint32_t seed = 12345;
    int checked_raw = 0, depthwise = 0, wide = 0;
    for (int t = 0; t < 300; t++) {
        layer L;
        make(&L, &seed);
        const nk_qconv2d_params *p = &L.p;
        const void *w = p->w_format == NK_W_I4 ? (const void *)L.w4 : (const void *)L.w8;
        size_t ks = nk_qconv2d_scratch_size(p), kf = nk_qconv2d_fast_scratch_size(p);
        cr_assert(ks > 0 && kf >= ks, "layer %d: scratch %zu, fast %zu", t, ks, kf);
        void *scr = malloc(kf);
        size_t nout = (size_t)p->n * p->c_out * p->h_out * p->w_out;
        cr_assert_eq(nk_qconv2d(p, L.in, w, L.bias, L.out_ref, scr), NK_OK);
        memset(L.out_fast, 0x55, nout);
        cr_assert_eq(nk_qconv2d_fast(p, L.in, w, L.bias, L.out_fast, NULL, scr), NK_OK);
        for (size_t i = 0; i < nout; i++)
            cr_assert_eq(L.out_fast[i], L.out_ref[i], "layer %d (groups %d, k %dx%d): output %zu: fast %d, portable %d",
                         t, p->groups, p->k_h, p->k_w, i, L.out_fast[i], L.out_ref[i]);
        nk_status rs = nk_qconv2d_fast(p, L.in, w, NULL, NULL, L.raw, scr);
        if (p->c_in == p->groups) {
            cr_assert_eq(rs, NK_EUNSUPPORTED, "layer %d: depthwise raw sums are refused", t);
            depthwise++;
            wide += p->k_h * p->k_w > 64;
        } else {
            cr_assert_eq(rs, NK_OK);
            size_t i = 0;
            for (int32_t b = 0; b < p->n; b++)
                for (int32_t oc = 0; oc < p->c_out; oc++)
                    for (int32_t y = 0; y < p->h_out; y++)
                        for (int32_t x = 0; x < p->w_out; x++, i++)
                            cr_assert_eq(L.raw[i], window_sum(&L, b, oc, y, x), "layer %d: raw sum %zu", t, i);
            checked_raw++;
        }
        free(scr);
        drop(&L);
    }
    cr_assert_gt(checked_raw, 100);
    cr_assert_gt(depthwise, 50);
    cr_assert_gt(wide, 5);
}

/* Depthwise planes of 1 to 3 columns at strides up to 3, padded: a column
 * phase can start past the input (1 column, pads 1 and 1, stride 3), which
 * the fast path once filled from past the row (C's division truncating
 * toward 0; found by the differential run, docs/testing.md). */
Test(qfast, narrow_planes_at_large_strides_match_portable)
{
    uint32_t seed = 777;
    int phases_past = 0;
    for (int t = 0; t < 400; t++) {
        layer L;
        memset(&L, 0, sizeof L);
        nk_qconv2d_params *p = &L.p;
        p->n = range(&seed, 1, 2), p->groups = p->c_in = range(&seed, 1, 3), p->c_out = p->c_in;
        p->h_in = range(&seed, 1, 4), p->w_in = range(&seed, 1, 3);
        p->k_h = range(&seed, 1, 3), p->k_w = range(&seed, 1, 3);
        p->stride_h = range(&seed, 1, 3), p->stride_w = range(&seed, 1, 3);
        p->dil_h = range(&seed, 1, 2), p->dil_w = range(&seed, 1, 2);
        p->pad_top = range(&seed, 0, 2), p->pad_bottom = range(&seed, 0, 2);
        p->pad_left = range(&seed, 0, 2), p->pad_right = range(&seed, 0, 2);
        int32_t eh = p->dil_h * (p->k_h - 1) + 1, ew = p->dil_w * (p->k_w - 1) + 1;
        if (p->h_in + p->pad_top + p->pad_bottom < eh || p->w_in + p->pad_left + p->pad_right < ew)
            continue;
        p->h_out = (p->h_in + p->pad_top + p->pad_bottom - eh) / p->stride_h + 1;
        p->w_out = (p->w_in + p->pad_left + p->pad_right - ew) / p->stride_w + 1;
        p->in_zp = range(&seed, -128, 127), p->act_min = -128, p->act_max = 127, p->w_format = NK_W_I8;
        for (int c = 0; c < p->stride_w; c++)
            phases_past += c - p->pad_left > p->w_in - 1;
        size_t nin = (size_t)p->n * p->c_in * p->h_in * p->w_in, nw = (size_t)p->c_out * p->k_h * p->k_w;
        size_t nout = (size_t)p->n * p->c_out * p->h_out * p->w_out;
        int8_t *in = malloc(nin), *w = malloc(nw), *ref = malloc(nout), *fast = malloc(nout);
        int32_t mult = 1 << 30, shift = -6;
        p->q = (nk_qmults){1, &mult, &shift};
        for (size_t i = 0; i < nin; i++)
            in[i] = (int8_t)range(&seed, -128, 127);
        for (size_t i = 0; i < nw; i++)
            w[i] = (int8_t)range(&seed, -128, 127);
        void *scr = malloc(nk_qconv2d_fast_scratch_size(p));
        cr_assert_eq(nk_qconv2d(p, in, w, NULL, ref, scr), NK_OK);
        cr_assert_eq(nk_qconv2d_fast(p, in, w, NULL, fast, NULL, scr), NK_OK);
        for (size_t i = 0; i < nout; i++)
            cr_assert_eq(fast[i], ref[i], "layer %d (in %dx%d, k %dx%d, stride %dx%d, pads l%d r%d): output %zu", t,
                         p->h_in, p->w_in, p->k_h, p->k_w, p->stride_h, p->stride_w, p->pad_left, p->pad_right, i);
        free(in), free(w), free(ref), free(fast), free(scr);
    }
    cr_assert_gt(phases_past, 20);
}

Test(qfast, refuses_what_the_portable_kernel_refuses)
{
    nk_qconv2d_params p = {.n = 1, .c_in = 3, .h_in = 4, .w_in = 4, .c_out = 2, .h_out = 5, .w_out = 4, .k_h = 1,
                           .k_w = 1, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1, .groups = 1};
    int32_t m = 1 << 30, s = 1;
    p.q = (nk_qmults){1, &m, &s};
    int8_t buf[64] = {0};
    int32_t raw[64];
    cr_assert_eq(nk_qconv2d_fast_scratch_size(&p), 0);
    cr_assert_eq(nk_qconv2d_fast(&p, buf, buf, NULL, buf, NULL, buf), NK_EARG, "h_out is not ONNX's");
    p.h_out = 4;
    cr_assert_eq(nk_qconv2d_fast(&p, buf, buf, NULL, NULL, NULL, buf), NK_EARG, "no output");
    cr_assert_eq(nk_qconv2d_fast(&p, buf, buf, NULL, NULL, raw, NULL), NK_EARG, "no scratch");
}

/* A random layer that has a packed form (false: none; L is dropped), its
 * portable outputs in L->out_ref, scratch and a packed buffer to free. */
typedef struct packed_case {
    layer L;
    const void *w;
    size_t P;
    void *scr, *pk;
} packed_case;

static bool packed_make(packed_case *c, uint32_t *seed, int32_t min_c_out)
{
    make(&c->L, seed);
    nk_qconv2d_params *p = &c->L.p;
    size_t need = nk_qconv2d_fast_packed_size(p);
    if (need == 0 || p->c_out < min_c_out) {
        drop(&c->L);
        return false;
    }
    c->w = p->w_format == NK_W_I4 ? (const void *)c->L.w4 : (const void *)c->L.w8;
    c->P = (size_t)p->h_out * p->w_out;
    c->scr = malloc(nk_qconv2d_fast_scratch_size(p));
    c->pk = aligned_alloc(64, (need + 63) / 64 * 64);
    cr_assert(c->scr && c->pk);
    cr_assert_eq(nk_qconv2d(p, c->L.in, c->w, c->L.bias, c->L.out_ref, c->scr), NK_OK);
    return true;
}

static void packed_drop(packed_case *c)
{
    free(c->pk);
    free(c->scr);
    drop(&c->L);
}

/* nk_qconv2d_fast_packed: the im2col built by one call and reused by the
 * next over the same input, for the second half of the output channels
 * (as the NPU model's convs split over channels), gives the portable
 * kernel's outputs for those channels. */
Test(qfast, packed_reuse_matches_portable)
{
    uint32_t seed = 777;
    int reused = 0;
    for (int t = 0; t < 300; t++) {
        packed_case c;
        if (!packed_make(&c, &seed, 2))
            continue;
        layer *L = &c.L;
        nk_qconv2d_params p = L->p;
        cr_assert_eq(nk_qconv2d_fast_packed(&p, L->in, c.w, L->bias, L->out_fast, NULL, c.scr, c.pk, 0, NULL), NK_OK);
        cr_assert_eq(memcmp(L->out_fast, L->out_ref, (size_t)p.c_out * c.P), 0, "layer %d: packing call", t);
        /* the second half of the channels; int8 weights only (int4 rows need not start on a byte) */
        if (p.w_format == NK_W_I8) {
            int32_t h = p.c_out / 2, K = p.c_in * p.k_h * p.k_w;
            nk_qconv2d_params q = p;
            q.c_out = p.c_out - h;
            if (p.q.n > 1)
                q.q = (nk_qmults){q.c_out, L->mult + h, L->shift + h};
            memset(L->out_fast, 0x55, (size_t)q.c_out * c.P);
            cr_assert_eq(nk_qconv2d_fast_packed(&q, L->in, L->w8 + (size_t)h * K, L->bias + h, L->out_fast, NULL, c.scr,
                                                c.pk, 1, NULL),
                         NK_OK);
            cr_assert_eq(memcmp(L->out_fast, L->out_ref + (size_t)h * c.P, (size_t)q.c_out * c.P), 0, "layer %d: reuse",
                         t);
            reused++;
        }
        packed_drop(&c);
    }
    if (nk_qfast_vnni())
        cr_assert_gt(reused, 15, "only %d layers reused", reused);
}

/* nk_parallel's contract without threads: the parts run here, last first,
 * so a part that read another's output, or left its share to part 0, shows. */
static void reverse_run(void *ud, void (*fn)(void *ctx, int part, int parts), void *ctx)
{
    int parts = *(const int *)ud;
    for (int k = parts - 1; k >= 0; k--)
        fn(ctx, k, parts);
}

/* The packed conv shared among 2, 3 and 7 parts, packing and reusing,
 * gives the portable kernel's outputs. */
Test(qfast, packed_parts_match_portable)
{
    uint32_t seed = 4242;
    int split = 0;
    for (int t = 0; t < 200; t++) {
        packed_case c;
        if (!packed_make(&c, &seed, 1))
            continue;
        layer *L = &c.L;
        int parts = 2 + t % 3 * (t % 2 ? 5 : 1);
        nk_parallel par = {reverse_run, &parts, parts, 0};
        for (int reuse = 0; reuse < 2; reuse++) {
            memset(L->out_fast, 0x55, (size_t)L->p.c_out * c.P);
            cr_assert_eq(
                nk_qconv2d_fast_packed(&L->p, L->in, c.w, L->bias, L->out_fast, NULL, c.scr, c.pk, reuse, &par), NK_OK);
            cr_assert_eq(memcmp(L->out_fast, L->out_ref, (size_t)L->p.c_out * c.P), 0, "layer %d, %d parts, reuse %d",
                         t, parts, reuse);
        }
        split += L->p.c_out > 12 || c.P > 256;
        packed_drop(&c);
    }
    if (nk_qfast_vnni())
        cr_assert_gt(split, 10, "only %d layers with more than one block or panel", split);
}

/* nk_qfast_requant_row against nk_requant_out lane by lane: every shift,
 * multipliers from 0 to 2^31 - 1, sums and biases at the int32 ends (the
 * saturating add), rounding ties, lengths that end mid-vector. */
Test(qfast, requant_row_matches_scalar)
{
    uint32_t seed = 99;
    enum { N = 67 };
    int32_t acc[N];
    int8_t out[N + 1], ref[N];
    for (int t = 0; t < 4000; t++) {
        int32_t shift = NK_SHIFT_MIN + t % (NK_SHIFT_MAX - NK_SHIFT_MIN + 1);
        int32_t mult = t % 7 == 0 ? 0 : (t % 5 == 0 ? INT32_MAX : (int32_t)(rnd(&seed) << 7 | rnd(&seed) % 128));
        int32_t bias = t % 3 == 0 ? 0 : (t % 4 == 0 ? (t % 8 ? INT32_MAX : INT32_MIN) : range(&seed, -9999, 9999));
        int32_t zp = range(&seed, -128, 127), lo = range(&seed, -128, 0), hi = range(&seed, lo, 127);
        size_t n = (size_t)range(&seed, 1, N);
        for (size_t i = 0; i < n; i++) {
            uint32_t k = rnd(&seed) % 6;
            int32_t step = 1 << (30 - shift > 24 ? 24 : 30 - shift); /* multiples: products near ties */
            acc[i] = k == 0   ? INT32_MAX - range(&seed, 0, 3)
                     : k == 1 ? INT32_MIN + range(&seed, 0, 3)
                     : k == 2 ? (int32_t)(rnd(&seed) << 8)
                     : k == 3 ? range(&seed, -64, 64) * step
                              : range(&seed, -300000, 300000);
            ref[i] = (int8_t)nk_requant_out(nk_sat_add_i32(acc[i], bias), mult, shift, zp, lo, hi);
        }
        out[n] = 0x5a;
        nk_qfast_requant_row(acc, n, bias, mult, shift, zp, lo, hi, out);
        cr_assert_eq(memcmp(out, ref, n), 0, "case %d: shift %d mult %d bias %d", t, shift, mult, bias);
        cr_assert_eq(out[n], 0x5a, "case %d wrote past the row", t);
    }
}

/* nk_qfc's one-pass host sum for one sample against its two-pass sum (a
 * batch of two runs it): input zero points, long rows whose int32 sums
 * wrap in the two-pass form, weights at the int8 ends. */
Test(qfast, fc_one_sample_matches_batch)
{
    uint32_t seed = 5;
    for (int t = 0; t < 60; t++) {
        int32_t K = t % 10 == 0 ? range(&seed, 60000, 65536) : range(&seed, 1, 700), N = range(&seed, 1, 9);
        int32_t mult[9], shift[9], bias[9];
        int8_t *in = malloc(2 * (size_t)K), *w = malloc((size_t)K * (size_t)N), o1[9], o2[18];
        for (int32_t i = 0; i < K; i++)
            in[i] = in[K + i] = (int8_t)(t % 3 == 0 ? (i % 2 ? 127 : -128) : range(&seed, -128, 127));
        for (int32_t i = 0; i < K * N; i++)
            w[i] = (int8_t)(t % 3 == 0 ? -128 : range(&seed, -128, 127));
        for (int32_t o = 0; o < N; o++) {
            mult[o] = range(&seed, 1 << 30, INT32_MAX), shift[o] = range(&seed, -20, 0);
            bias[o] = range(&seed, -9999, 9999);
        }
        nk_qfc_params p = {.batch = 1, .in_features = K, .out_features = N, .in_zp = range(&seed, -128, 127),
                           .out_zp = range(&seed, -128, 127), .act_min = -128, .act_max = 127, .w_format = NK_W_I8,
                           .q = {N, mult, shift}};
        cr_assert_eq(nk_qfc(&p, in, w, bias, o1, NULL), NK_OK);
        p.batch = 2;
        cr_assert_eq(nk_qfc(&p, in, w, bias, o2, NULL), NK_OK);
        cr_assert_eq(memcmp(o1, o2, (size_t)N), 0, "case %d (K %d)", t, K);
        cr_assert_eq(memcmp(o1, o2 + N, (size_t)N), 0, "case %d (K %d)", t, K);
        free(in);
        free(w);
    }
}
