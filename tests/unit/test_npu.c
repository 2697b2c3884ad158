/* The NPU model (sim/npu.h): hand-encoded streams for targets/edge-v1.yaml
 * (and edge-v1-narrow), every compute semantics compared with a direct call
 * of its reference kernel on the same bytes, DMA boxes with strides, the
 * timing rules (chains, channel overlap, the shared DRAM bus, double
 * buffering), faults with their messages, and one job through the real
 * simulator seam. Expected cycles are derived from tgt_timing and the
 * target's parameters, never copied from the model. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/nk_norm.h"
#include "kernels/nk_quant.h"
#include "sim/npu.h"

#include "tests/support/npu_rig.h"

/* ---- DMA ------------------------------------------------------------------------ */

Test(npu, dma_boxes_with_strides)
{
    rig *r = rig_open("edge-v1");
    uint8_t *arena = r->reg[TGT_REGION_ARENA], *out = r->reg[TGT_REGION_OUTPUTS];
    fill(arena, RB, 7);
    /* 3 planes of 4 rows of 5 bytes: DRAM rows 16 apart, planes 100; SRAM rows 8, planes 40 */
    uint32_t ld = emit(r, "dma_load", KV({"region", TGT_REGION_ARENA}, {"dram", 0x123}, {"sram", 0x200}, {"c", 3},
                                         {"h", 4}, {"w", 5}, {"dram_hs", 16}, {"dram_cs", 100}, {"sram_hs", 8},
                                         {"sram_cs", 40}, {"signal", 1}));
    /* back out transposed in layout: rows 7 apart, planes 33 apart, on the other channel */
    uint32_t stq = emit(r, "dma_store", KV({"ch", 1}, {"region", TGT_REGION_OUTPUTS}, {"dram", 0x40}, {"sram", 0x200},
                                           {"c", 3}, {"h", 4}, {"w", 5}, {"dram_hs", 7}, {"dram_cs", 33},
                                           {"sram_hs", 8}, {"sram_cs", 40}, {"wait", 1}));
    END(r, 0);
    run_ok(r);
    for (int z = 0; z < 3; z++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 5; x++) {
                uint8_t want = arena[0x123 + z * 100 + y * 16 + x];
                cr_assert_eq(r->sram[0x200 + z * 40 + y * 8 + x], want, "sram z%d y%d x%d", z, y, x);
                cr_assert_eq(out[0x40 + z * 33 + y * 7 + x], want, "outputs z%d y%d x%d", z, y, x);
            }
    cr_assert_eq(out[0x40 + 5], 0, "the gap between rows is not written");
    cr_assert_eq(r->st.dram_read, 60);
    cr_assert_eq(r->st.dram_write, 60);
    cr_assert_eq(r->st.sram_peak, 0x200 + 2 * 40 + 3 * 8 + 5);
    cr_assert_eq(r->st.insns, 3);
    cr_assert_eq(ev_of(r, stq)->queue, 1);
    cr_assert_eq(ev_of(r, stq)->start, ev_of(r, ld)->end, "the store waits for the load's token");
    rig_close(r);
}

/* a4: the DRAM side is int4 codes two per byte, addressed in nibbles; odd
 * nibble origins and row lengths keep the other nibble of a shared byte. */
Test(npu, dma_a4_unpacks_and_packs_nibbles)
{
    rig *r = rig_open("edge-v1");
    uint8_t *arena = r->reg[TGT_REGION_ARENA], *out = r->reg[TGT_REGION_OUTPUTS];
    fill(arena, RB, 11);
    memset(out, 0xab, 64);
    uint32_t ld = emit(r, "dma_load", KV({"region", TGT_REGION_ARENA}, {"dram", 5}, {"sram", 0x100}, {"c", 2},
                                         {"h", 3}, {"w", 7}, {"dram_hs", 9}, {"dram_cs", 31}, {"sram_hs", 8},
                                         {"sram_cs", 32}, {"signal", 1}, {"a4", 1}));
    emit(r, "dma_store", KV({"ch", 1}, {"region", TGT_REGION_OUTPUTS}, {"dram", 3}, {"sram", 0x100}, {"c", 2},
                            {"h", 3}, {"w", 7}, {"dram_hs", 7}, {"dram_cs", 21}, {"sram_hs", 8}, {"sram_cs", 32},
                            {"wait", 1}, {"a4", 1}));
    END(r, 0);
    run_ok(r);
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 7; x++) {
                int8_t want = nk_int4_get(arena, (size_t)(5 + z * 31 + y * 9 + x));
                cr_assert_eq((int8_t)r->sram[0x100 + z * 32 + y * 8 + x], want, "sram z%d y%d x%d", z, y, x);
                cr_assert_eq(nk_int4_get(out, (size_t)(3 + z * 21 + y * 7 + x)), want, "outputs z%d y%d x%d", z, y, x);
            }
    cr_assert_eq(nk_int4_get(out, 2), -5, "the low nibble before the box is kept (0xb)");
    cr_assert_eq(nk_int4_get(out, 45), -6, "the high nibble after the box is kept (0xa)");
    cr_assert_eq(out[23], 0xab, "nothing past the box is written");
    cr_assert_eq(r->st.dram_read, 21, "42 codes: 21 bytes on the bus");
    cr_assert_eq(r->st.dram_write, 21);
    (void)ld;
    rig_close(r);

    /* a4 moves half the bytes on the bus; a byte that is no int4 code cannot be stored */
    r = rig_open("edge-v1");
    uint32_t l8 = dma1(r, "dma_load", 0, TGT_REGION_ARENA, 0, 0x1000, 4096, 0, 0);
    uint32_t l4 = emit(r, "dma_load", KV({"region", TGT_REGION_ARENA}, {"dram", 0}, {"sram", 0x2000}, {"c", 1},
                                         {"h", 1}, {"w", 4096}, {"dram_hs", 4096}, {"dram_cs", 4096},
                                         {"sram_hs", 4096}, {"sram_cs", 4096}, {"a4", 1}));
    int64_t lat = r->t->p[TGT_P_DRAM_LATENCY];
    cr_assert_eq(dur(r, l4) - lat, (dur(r, l8) - lat + 1) / 2, "%lld vs %lld", (long long)dur(r, l4),
                 (long long)dur(r, l8));
    r->sram[0x200] = 8;
    uint32_t bad = dma1(r, "dma_store", 0, TGT_REGION_ARENA, 0, 0x200, 4, 0, 0);
    END(r, 0);
    run_ok(r);
    r->n = r->off[bad];
    r->ninsn = bad;
    bad = emit(r, "dma_store", KV({"region", TGT_REGION_ARENA}, {"dram", 0}, {"sram", 0x200}, {"c", 1}, {"h", 1},
                                  {"w", 4}, {"dram_hs", 4}, {"dram_cs", 4}, {"sram_hs", 4}, {"sram_cs", 4}, {"a4", 1}));
    END(r, 0);
    expect_fault(r, "no int4 code", bad);
    rig_close(r);
}

/* An a4 box is bounded in nibbles: its last nibble must lie in the region. */
Test(npu, dma_a4_bounds_in_nibbles)
{
    for (int w = 1; w <= 2; w++) {
        rig *r = rig_open("edge-v1");
        uint32_t ld = emit(r, "dma_load", KV({"region", TGT_REGION_ARENA}, {"dram", 2 * RB - 1}, {"sram", 0},
                                             {"c", 1}, {"h", 1}, {"w", w}, {"dram_hs", w}, {"dram_cs", w},
                                             {"sram_hs", w}, {"sram_cs", w}, {"a4", 1}));
        END(r, 0);
        if (w == 2)
            expect_fault(r, "outside region arena", ld);
        else
            run_ok(r);
        rig_close(r);
    }
}

/* Two a4 stores on two channels without a token: nibbles [0, 3) and [3, 6)
 * share a byte and do not conflict; [0, 4) and [3, 6) do. */
Test(npu, dma_a4_race_check_in_nibbles)
{
    for (int overlap = 0; overlap < 2; overlap++) {
        rig *r = rig_open("edge-v1");
        emit(r, "dma_store", KV({"region", TGT_REGION_ARENA}, {"dram", 0}, {"sram", 0x0}, {"c", 1}, {"h", 1},
                                {"w", 3 + overlap}, {"dram_hs", 3 + overlap}, {"dram_cs", 3 + overlap},
                                {"sram_hs", 3 + overlap}, {"sram_cs", 3 + overlap}, {"a4", 1}));
        uint32_t b = emit(r, "dma_store", KV({"ch", 1}, {"region", TGT_REGION_ARENA}, {"dram", 3}, {"sram", 0x10},
                                             {"c", 1}, {"h", 1}, {"w", 3}, {"dram_hs", 3}, {"dram_cs", 3},
                                             {"sram_hs", 3}, {"sram_cs", 3}, {"a4", 1}));
        END(r, 0);
        if (overlap)
            expect_fault(r, "unsynchronized access", b);
        else
            run_ok(r);
        rig_close(r);
    }
}


static void check_conv(const convt *c, uint32_t seed)
{
    rig *r = rig_open("edge-v1");
    qt q;
    conv_data(r, c, 1, &q, seed);
    uint8_t *s0 = snapshot(r);
    uint32_t cv = emit_conv(r, c, c->ic, SRC, WGT, 0, 0, 0, 0);
    END(r, 0);
    run_ok(r);
    size_t n = (size_t)c->oc * conv_oh(c) * conv_ow(c);
    int8_t *want = malloc(n);
    conv_ref(r, s0, c, 1, &q, want);
    cr_assert(memcmp(want, r->sram + DST, n) == 0, "conv output differs from nk_qconv2d");
    cr_assert_eq(r->st.cycles, (uint64_t)(dur(r, cv) + dur(r, 1)));
    cr_assert_eq(r->st.macs, (uint64_t)n * c->ic * c->kh * c->kw);
    free(want);
    free(s0);
    rig_close(r);
}

Test(npu, conv_border_tile_with_padding)
{
    check_conv(&(convt){.ic = 5, .oc = 7, .ih = 6, .iw = 9, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1,
                        .in_zp = -3, .out_zp = 5, .lo = -128, .hi = 127}, 11);
}

Test(npu, conv_stride2_relu_clamp)
{
    check_conv(&(convt){.ic = 4, .oc = 6, .ih = 9, .iw = 8, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1,
                        .pb = 1, .pr = 0, .in_zp = 7, .out_zp = -20, .lo = -20, .hi = 127}, 23);
}

Test(npu, conv_int4_weights)
{
    check_conv(&(convt){.ic = 6, .oc = 5, .ih = 5, .iw = 5, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .pb = 2, .pr = 2,
                        .w4 = 1, .in_zp = 1, .lo = -128, .hi = 127}, 31);
}

/* ic split over three instructions through int32 partial sums equals one conv. */
Test(npu, conv_partial_sums_equal_the_whole)
{
    rig *r = rig_open("edge-v1");
    convt c = {.ic = 6, .oc = 4, .ih = 5, .iw = 6, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1,
               .pr = 1, .in_zp = 2, .out_zp = -1, .lo = -128, .hi = 127};
    qt q;
    conv_data(r, &c, 1, &q, 41);
    uint8_t *s0 = snapshot(r);
    /* weights of input channels [i0, i0+2) for every o, re-laid out per part (oc x 2 x 3 x 3) */
    for (int part = 0; part < 3; part++)
        for (int o = 0; o < c.oc; o++)
            memcpy(r->sram + WGT + 0x1000 * (part + 1) + o * 18, s0 + WGT + o * 54 + part * 18, 18);
    for (int part = 0; part < 3; part++)
        emit_conv(r, &c, 2, SRC + part * 2 * 30, WGT + 0x1000 * (part + 1), part > 0, part < 2, 0, 0);
    END(r, 0);
    run_ok(r);
    int8_t want[4 * 5 * 6];
    conv_ref(r, s0, &c, 1, &q, want);
    cr_assert(memcmp(want, r->sram + DST, sizeof want) == 0, "split conv differs from nk_qconv2d");
    free(s0);
    rig_close(r);
}

/* Random geometries (stride, dilation, padding, int4), each as one conv and
 * as an ic split through partial sums, against nk_qconv2d. */
Test(npu, conv_random_geometries_whole_and_split)
{
    uint32_t x = 12345;
#define RND(n) ((int)((x = x * 1103515245u + 12345u) >> 16) % (n))
    for (int it = 0; it < 24; it++) {
        convt c = {.ic = 1 + RND(8), .oc = 1 + RND(9), .kh = 1 + RND(3), .kw = 1 + RND(3), .sh = 1 + RND(2),
                   .sw = 1 + RND(2), .dh = 1 + RND(2), .dw = 1 + RND(2), .in_zp = RND(20) - 10,
                   .out_zp = RND(20) - 10, .lo = -128 + RND(60), .hi = 127 - RND(60)};
        c.pt = RND(c.kh * c.dh);
        c.pb = RND(c.kh * c.dh);
        c.pl = RND(c.kw * c.dw);
        c.pr = RND(c.kw * c.dw);
        c.ih = c.dh * (c.kh - 1) + 1 + RND(6);
        c.iw = c.dw * (c.kw - 1) + 1 + RND(6);
        int kk = c.kh * c.kw, i0 = c.ic / 2;
        c.w4 = RND(2) && (c.ic * kk) % 2 == 0;
        bool split = i0 > 0 && (!c.w4 || (i0 * kk % 2 == 0 && (c.ic - i0) * kk % 2 == 0));
        rig *r = rig_open("edge-v1");
        qt q;
        conv_data(r, &c, 1, &q, 1000u + (uint32_t)it);
        uint8_t *s0 = snapshot(r);
        size_t n = (size_t)c.oc * conv_oh(&c) * conv_ow(&c), nw = (size_t)c.oc * c.ic * kk;
        int8_t *want = malloc(n), *w8 = malloc(nw), *part = malloc(nw);
        conv_ref(r, s0, &c, 1, &q, want);
        emit_conv(r, &c, c.ic, SRC, WGT, 0, 0, 0, 0);
        END(r, 0);
        run_ok(r);
        cr_assert(memcmp(want, r->sram + DST, n) == 0, "iteration %d: conv differs", it);
        if (split) { /* weights of input channels [lo, hi) per output channel, packed again */
            if (c.w4)
                nk_int4_unpack(s0 + WGT, w8, nw);
            else
                memcpy(w8, s0 + WGT, nw);
            int bounds[3] = {0, i0, c.ic};
            for (int h = 0; h < 2; h++) {
                int cnt = bounds[h + 1] - bounds[h];
                for (int o = 0; o < c.oc; o++)
                    memcpy(part + (size_t)o * cnt * kk, w8 + ((size_t)o * c.ic + bounds[h]) * kk, (size_t)cnt * kk);
                uint8_t *dst = r->sram + WGT + 0x4000 * (h + 1);
                if (c.w4)
                    cr_assert_eq(nk_int4_pack(part, dst, (size_t)c.oc * cnt * kk), NK_OK);
                else
                    memcpy(dst, part, (size_t)c.oc * cnt * kk);
            }
            memset(r->sram + DST, 0, n);
            r->n = r->ninsn = 0;
            emit_conv(r, &c, i0, SRC, WGT + 0x4000, 0, 1, 0, 0);
            emit_conv(r, &c, c.ic - i0, SRC + i0 * c.ih * c.iw, WGT + 0x8000, 1, 0, 0, 0);
            END(r, 0);
            run_ok(r);
            cr_assert(memcmp(want, r->sram + DST, n) == 0, "iteration %d: split conv differs", it);
        }
        free(want);
        free(w8);
        free(part);
        free(s0);
        rig_close(r);
    }
#undef RND
}

Test(npu, dwconv_int8_and_int4)
{
    for (int w4 = 0; w4 < 2; w4++) {
        rig *r = rig_open("edge-v1");
        convt c = {.ic = 9, .oc = 9, .ih = 7, .iw = 6, .kh = 3, .kw = 3, .sh = 2, .sw = 1, .pt = 1, .pl = 1, .pb = 1,
                   .pr = 1, .w4 = w4, .in_zp = -5, .out_zp = 3, .lo = -100, .hi = 100};
        qt q;
        conv_data(r, &c, c.ic, &q, 53);
        uint8_t *s0 = snapshot(r);
        int oh = odim(c.ih, 1, 1, 3, 2), ow = odim(c.iw, 1, 1, 3, 1);
        emit(r, "dwconv", KV({"src", SRC}, {"dst", DST}, {"wgt", WGT}, {"qtab", QT}, {"c", c.ic}, {"ih", c.ih},
                             {"iw", c.iw}, {"oh", oh}, {"ow", ow}, {"kh", 3}, {"kw", 3}, {"sh", 2}, {"sw", 1},
                             {"pt", 1}, {"pl", 1}, {"pb", 1}, {"pr", 1}, {"w4", w4}, {"in_zp", c.in_zp},
                             {"out_zp", c.out_zp}, {"clamp_lo", c.lo}, {"clamp_hi", c.hi}));
        END(r, 0);
        run_ok(r);
        int8_t want[9 * 4 * 6];
        cr_assert_eq(sizeof want, (size_t)9 * oh * ow);
        conv_ref(r, s0, &c, c.ic, &q, want);
        cr_assert(memcmp(want, r->sram + DST, sizeof want) == 0, "dwconv (w4=%d) differs from nk_qconv2d groups=c",
                  w4);
        free(s0);
        rig_close(r);
    }
}

/* ---- matmul ------------------------------------------------------------------------------ */

static void fc_ref(const uint8_t *sram0, int m, int k, int n, int w4, int in_zp, const qt *q, int8_t *want)
{
    nk_qfc_params p = {.batch = m, .in_features = k, .out_features = n, .in_zp = in_zp, .out_zp = 4,
                       .act_min = -128, .act_max = 127, .w_format = w4 ? NK_W_I4 : NK_W_I8, .q = {n, q->mult, q->shift}};
    void *scratch = w4 ? malloc(nk_qfc_scratch_size(&p)) : NULL;
    cr_assert_eq(nk_qfc(&p, (const int8_t *)sram0 + SRC, sram0 + WGT, q->bias, want, scratch), NK_OK);
    free(scratch);
}

static uint32_t emit_mm(rig *r, int m, int k, int n, int64_t src, int64_t wgt, int w4, int in_zp, int w_zp,
                        int acc_in, int acc_out)
{
    return emit(r, "matmul", KV({"src", src}, {"dst", DST}, {"wgt", wgt}, {"qtab", QT}, {"psum", PSUM}, {"m", m},
                                {"k", k}, {"n", n}, {"w4", w4}, {"in_zp", in_zp}, {"w_zp", w_zp}, {"out_zp", 4},
                                {"acc_in", acc_in}, {"acc_out", acc_out}));
}

Test(npu, matmul_int8_and_int4)
{
    for (int w4 = 0; w4 < 2; w4++) {
        rig *r = rig_open("edge-v1");
        qt q;
        fill(r->sram + SRC, 3 * 20, 61);
        fill(r->sram + WGT, 5 * 20, 62); /* as int4 every nibble is a valid weight */
        make_qtab(r, &q, 5, QT, 63);
        uint8_t *s0 = snapshot(r);
        emit_mm(r, 3, 20, 5, SRC, WGT, w4, -9, 0, 0, 0);
        END(r, 0);
        run_ok(r);
        int8_t want[15];
        fc_ref(s0, 3, 20, 5, w4, -9, &q, want);
        cr_assert(memcmp(want, r->sram + DST, 15) == 0, "matmul (w4=%d) differs from nk_qfc", w4);
        cr_assert_eq(r->st.macs, 3 * 20 * 5);
        free(s0);
        rig_close(r);
    }
}

/* A weight zero point z on B equals the kernel on B - z; k split in two through partial sums. */
Test(npu, matmul_weight_zero_point_and_split_k)
{
    rig *r = rig_open("edge-v1");
    qt q;
    fill(r->sram + SRC, 2 * 16, 71);
    make_qtab(r, &q, 3, QT, 72);
    for (int i = 0; i < 3 * 16; i++)
        r->sram[WGT + 0x1000 + i] = (uint8_t)(int8_t)((i * 37) % 200 - 100); /* B, |B| <= 100 */
    for (int i = 0; i < 3 * 16; i++)
        r->sram[WGT + i] = (uint8_t)(int8_t)((int8_t)r->sram[WGT + 0x1000 + i] - 9); /* B - 9 */
    for (int j = 0; j < 3; j++) /* the halves of B's rows, for the split */
        for (int h = 0; h < 2; h++)
            memcpy(r->sram + WGT + 0x2000 + 0x100 * h + j * 8, r->sram + WGT + 0x1000 + j * 16 + h * 8, 8);
    for (int row = 0; row < 2; row++)
        for (int h = 0; h < 2; h++)
            memcpy(r->sram + SRC + 0x100 + 0x40 * h + row * 8, r->sram + SRC + row * 16 + h * 8, 8);
    uint8_t *s0 = snapshot(r);
    emit_mm(r, 2, 16, 3, SRC, WGT + 0x1000, 0, 3, 9, 0, 0);
    END(r, 0);
    run_ok(r);
    int8_t want[6];
    fc_ref(s0, 2, 16, 3, 0, 3, &q, want);
    cr_assert(memcmp(want, r->sram + DST, 6) == 0, "w_zp differs from nk_qfc on B - w_zp");
    memset(r->sram + DST, 0, 6);
    r->n = r->ninsn = 0;
    emit_mm(r, 2, 8, 3, SRC + 0x100, WGT + 0x2000, 0, 3, 9, 0, 1);
    emit_mm(r, 2, 8, 3, SRC + 0x140, WGT + 0x2100, 0, 3, 9, 1, 0);
    END(r, 0);
    run_ok(r);
    cr_assert(memcmp(want, r->sram + DST, 6) == 0, "matmul split over k differs");
    free(s0);
    rig_close(r);
}

/* ---- vector unit ------------------------------------------------------------------------- */

Test(npu, pool_max_and_avg_with_rescale)
{
    int32_t mult;
    int shift;
    cr_assert_eq(nk_quantize_multiplier(0.6, &mult, &shift), NK_OK);
    for (int mode = 0; mode < 2; mode++) {
        rig *r = rig_open("edge-v1");
        fill(r->sram + SRC, 3 * 7 * 7, 81 + mode);
        uint8_t *s0 = snapshot(r);
        emit(r, "pool", KV({"src", SRC}, {"dst", DST}, {"c", 3}, {"ih", 7}, {"iw", 7}, {"oh", 4}, {"ow", 4},
                           {"kh", 3}, {"kw", 3}, {"sh", 2}, {"sw", 2}, {"pt", 1}, {"pl", 1}, {"pb", 1}, {"pr", 1},
                           {"mode", mode}, {"count_pad", mode}, {"in_zp", -4}, {"out_zp", 6}, {"mult", mult},
                           {"shift", shift}, {"clamp_lo", -90}, {"clamp_hi", 90}));
        END(r, 0);
        run_ok(r);
        nk_qpool_params p = {.n = 1, .c = 3, .h_in = 7, .w_in = 7, .h_out = 4, .w_out = 4, .k_h = 3, .k_w = 3,
                             .stride_h = 2, .stride_w = 2, .dil_h = 1, .dil_w = 1, .pad_top = 1, .pad_left = 1,
                             .pad_bottom = 1, .pad_right = 1, .count_include_pad = mode, .in_zp = -4, .out_zp = 6,
                             .mult = mult, .shift = shift, .act_min = -90, .act_max = 90};
        int8_t want[48];
        const int8_t *in = (const int8_t *)s0 + SRC;
        cr_assert_eq(mode ? nk_qavgpool(&p, in, want) : nk_qmaxpool(&p, in, want), NK_OK);
        cr_assert(memcmp(want, r->sram + DST, 48) == 0, "pool mode %d differs from the kernel", mode);
        free(s0);
        rig_close(r);
    }
}

Test(npu, eltwise_add_with_broadcast)
{
    rig *r = rig_open("edge-v1");
    nk_qbinary_params p = {.op = NK_QADD, .a_shape = {3, {4, 3, 5}}, .b_shape = {3, {4, 1, 1}},
                           .out_shape = {3, {4, 3, 5}}, .a_zp = 3, .b_zp = -7, .out_zp = 2, .act_min = -128,
                           .act_max = 127};
    cr_assert_eq(nk_qbinary_prepare(&p, 0.05f, 0.02f, 0.06f), NK_OK);
    fill(r->sram + 0x100, 60, 91);
    fill(r->sram + 0x200, 4, 92);
    uint8_t *s0 = snapshot(r);
    emit(r, "eltwise", KV({"a", 0x100}, {"b", 0x200}, {"dst", DST}, {"c", 4}, {"h", 3}, {"w", 5},
                          {"op", TGT_ELT_ADD}, {"b_bc", TGT_BC_H | TGT_BC_W}, {"a_zp", 3}, {"b_zp", -7},
                          {"out_zp", 2}, {"a_mult", p.a_mult}, {"a_shift", p.a_shift},
                          {"b_mult", p.b_mult}, {"b_shift", p.b_shift}, {"out_mult", p.out_mult},
                          {"out_shift", p.out_shift}));
    END(r, 0);
    run_ok(r);
    int8_t want[60];
    cr_assert_eq(nk_qbinary(&p, (const int8_t *)s0 + 0x100, (const int8_t *)s0 + 0x200, want), NK_OK);
    cr_assert(memcmp(want, r->sram + DST, 60) == 0, "eltwise differs from nk_qbinary");
    free(s0);
    rig_close(r);
}

Test(npu, lut_and_requant)
{
    rig *r = rig_open("edge-v1");
    fill(r->sram + 0x400, 256, 101); /* the table */
    fill(r->sram + SRC, 300, 102);
    int32_t mult;
    int shift;
    cr_assert_eq(nk_quantize_multiplier(1.7, &mult, &shift), NK_OK);
    uint8_t *s0 = snapshot(r);
    emit(r, "lut", KV({"src", SRC}, {"dst", DST}, {"len", 300}, {"table", 0x400}));
    emit(r, "requant", KV({"src", SRC}, {"dst", DST + 0x1000}, {"len", 300}, {"mult", mult}, {"shift", shift},
                          {"in_zp", 5}, {"out_zp", -3}, {"clamp_lo", -50}, {"clamp_hi", 120}));
    emit(r, "requant", KV({"src", SRC}, {"dst", DST + 0x2000}, {"len", 300}, {"mult", 1}, {"copy", 1}));
    emit(r, "lut", KV({"src", DST + 0x2000}, {"dst", DST + 0x2000}, {"len", 300}, {"table", 0x400}));
    END(r, 0);
    run_ok(r);
    int8_t want[300];
    nk_lut_apply_i8((const int8_t *)s0 + 0x400, (const int8_t *)s0 + SRC, want, 300);
    cr_assert(memcmp(want, r->sram + DST, 300) == 0, "lut differs from nk_lut_apply_i8");
    cr_assert(memcmp(want, r->sram + DST + 0x2000, 300) == 0, "copy then lut in place");
    nk_qrequant_params p = {.in_zp = 5, .out_zp = -3, .mult = mult, .shift = shift, .act_min = -50, .act_max = 120};
    cr_assert_eq(nk_qrequant(&p, (const int8_t *)s0 + SRC, want, 300), NK_OK);
    cr_assert(memcmp(want, r->sram + DST + 0x1000, 300) == 0, "requant differs from nk_qrequant");
    free(s0);
    rig_close(r);
}

static void put32(uint8_t *p, int32_t v)
{
    for (int b = 0; b < 4; b++)
        p[b] = (uint8_t)((uint32_t)v >> (8 * b));
}

/* softmax and layernorm rows against nk_qsoftmax / nk_qlayernorm, on both ISAs;
 * a qtab shift outside 1..62 faults naming the instruction. */
Test(npu, softmax_and_layernorm)
{
    const char *targets[] = {"edge-v1", "edge-v1-narrow"};
    enum { H = 5, W = 40, TAB = 0x8000, QTB = 0x9000 };
    for (int k = 0; k < 2; k++) {
        rig *r = rig_open(targets[k]);
        int32_t tab[256], cols[3 * W];
        float g[W], b[W];
        cr_assert_eq(nk_qsoftmax_table(0.07f, tab), NK_OK);
        for (int j = 0; j < W; j++)
            g[j] = 0.5f + 0.03f * (float)j, b[j] = 0.1f * (float)(j % 7) - 0.3f;
        cr_assert_eq(nk_qlayernorm_cols(g, b, W, 0.02f, cols), NK_OK);
        for (int i = 0; i < 256; i++)
            put32(r->sram + TAB + 4 * i, tab[i]);
        for (int i = 0; i < 3 * W; i++)
            put32(r->sram + QTB + 4 * i, cols[i]);
        fill(r->sram + SRC, H * W, 77 + (uint32_t)k);
        uint8_t *s0 = snapshot(r);
        uint32_t sm = emit(r, "softmax", KV({"src", SRC}, {"dst", DST}, {"table", TAB}, {"h", H}, {"w", W},
                                             {"out_zp", -128}, {"clamp_lo", -128}, {"clamp_hi", 127},
                                             {"mult", 1 << 30}, {"shift", 9}));
        emit(r, "layernorm", KV({"src", SRC}, {"dst", DST + 0x1000}, {"qtab", QTB}, {"h", H}, {"w", W}, {"eps", 900},
                                {"out_zp", 4}, {"clamp_lo", -100}, {"clamp_hi", 100}, {"wait", 0}));
        END(r, 0);
        run_ok(r);
        int8_t want[H * W];
        nk_qsoftmax_params sp = {H, W, 1 << 30, 9, -128, -128, 127}; /* 2^30 * 2^(9-31) = 256 */
        cr_assert_eq(nk_qsoftmax(&sp, tab, (const int8_t *)s0 + SRC, want), NK_OK);
        cr_assert(memcmp(want, r->sram + DST, H * W) == 0, "%s: softmax differs from nk_qsoftmax", targets[k]);
        nk_qlayernorm_params lp = {H, W, 900, 4, -100, 100};
        cr_assert_eq(nk_qlayernorm(&lp, cols, (const int8_t *)s0 + SRC, want), NK_OK);
        cr_assert(memcmp(want, r->sram + DST + 0x1000, H * W) == 0, "%s: layernorm differs", targets[k]);
        cr_assert_gt(dur(r, sm), H * 3 * ((W + 15) / 16), "three passes over each row");
        put32(r->sram + QTB + 8, 0); /* column 0's shift */
        expect_fault(r, "shift 0 outside 1..62", sm + 1);
        free(s0);
        rig_close(r);
    }
}

/* ---- timing ----------------------------------------------------------------------------- */

/* The 1x1 conv tile of the timing and race tests: 4 channels of 4x4. */
static const convt TILE = {.ic = 4, .oc = 4, .ih = 4, .iw = 4, .kh = 1, .kw = 1, .sh = 1, .sw = 1, .lo = -128,
                           .hi = 127};

/* load -> conv -> store through tokens: each starts when the previous ends. */
Test(npu, token_chain_is_the_sum_of_durations)
{
    rig *r = rig_open("edge-v1");
    const convt c = TILE;
    qt q;
    make_qtab(r, &q, 4, QT, 5);
    fill(r->sram + WGT, 16, 6);
    fill(r->reg[TGT_REGION_INPUTS], 64, 7);
    uint32_t a = dma1(r, "dma_load", 0, TGT_REGION_INPUTS, 0, SRC, 64, 0, 1);
    uint32_t b = emit_conv(r, &c, 4, SRC, WGT, 0, 0, 1, 2);
    uint32_t s = dma1(r, "dma_store", 1, TGT_REGION_OUTPUTS, 0, DST, 64, 2, 0);
    uint32_t e = END(r, 0);
    run_ok(r);
    cr_assert_eq(r->st.cycles, (uint64_t)(dur(r, a) + dur(r, b) + dur(r, s) + dur(r, e)));
    cr_assert_eq(r->nev, 4);
    cr_assert_eq(ev_of(r, b)->start, ev_of(r, a)->end);
    cr_assert_eq(ev_of(r, s)->start, ev_of(r, b)->end);
    cr_assert_eq(ev_of(r, e)->end, r->st.cycles);
    cr_assert_eq(r->st.busy[TGT_UNIT_DMA], (uint64_t)(dur(r, a) + dur(r, s)));
    cr_assert_eq(r->st.busy[TGT_UNIT_MAC], (uint64_t)dur(r, b));
    cr_assert_eq(memcmp(r->sram + DST, r->reg[TGT_REGION_OUTPUTS], 64), 0, "the store wrote the conv's output");
    /* totals add up over jobs */
    run_ok(r);
    cr_assert_eq(npu_model_totals(r->m)->cycles, 2 * r->st.cycles);
    cr_assert_eq(npu_model_totals(r->m)->insns, 8);
    cr_assert_eq(npu_model_totals(r->m)->dram_read, 128);
    rig_close(r);
}

/* Two loads on two channels overlap their latency; the transfers share the DRAM bus. */
Test(npu, two_channels_overlap_and_share_dram)
{
    rig *r = rig_open("edge-v1");
    uint32_t a = dma1(r, "dma_load", 0, TGT_REGION_ARENA, 0, 0, 4096, 0, 0);
    uint32_t b = dma1(r, "dma_load", 1, TGT_REGION_ARENA, 8192, 8192, 4096, 0, 0);
    uint32_t e = END(r, 0);
    run_ok(r);
    int64_t lat = r->t->p[TGT_P_DRAM_LATENCY], xfer = dur(r, a) - lat;
    cr_assert_eq(xfer, 4096 / r->t->p[TGT_P_DRAM_BYTES_PER_CYCLE]);
    cr_assert_eq(ev_of(r, a)->start, 0);
    cr_assert_eq(ev_of(r, b)->start, 0, "the second channel starts at once");
    cr_assert_eq(ev_of(r, a)->end, (uint64_t)dur(r, a));
    cr_assert_eq(ev_of(r, b)->end, (uint64_t)(lat + 2 * xfer), "its transfer waits for the bus");
    cr_assert_eq(r->st.cycles, (uint64_t)(lat + 2 * xfer + dur(r, e)));
    cr_assert_lt(r->st.cycles, (uint64_t)(dur(r, a) + dur(r, b) + dur(r, e)));
    rig_close(r);
}

/* sync holds fetch until its token; the next load then starts after it. */
Test(npu, sync_holds_fetch)
{
    rig *r = rig_open("edge-v1");
    uint32_t a = dma1(r, "dma_load", 0, TGT_REGION_ARENA, 0, 0, 256, 0, 1);
    uint32_t s = emit(r, "sync", KV({"wait", 1}));
    uint32_t b = dma1(r, "dma_load", 1, TGT_REGION_ARENA, 0, 1024, 256, 0, 0);
    END(r, 0);
    run_ok(r);
    cr_assert_eq(ev_of(r, s)->start, ev_of(r, a)->end);
    cr_assert_eq(ev_of(r, b)->start, ev_of(r, s)->end);
    cr_assert_eq(r->st.busy[TGT_UNIT_CTRL], (uint64_t)(dur(r, s) + dur(r, 3)));
    rig_close(r);
}

/* A full queue stalls fetch: the conv behind depth + 2 loads is fetched, and
 * starts, only when the second load leaves the queue. */
Test(npu, full_queue_stalls_fetch)
{
    rig *r = rig_open("edge-v1");
    qt q;
    make_qtab(r, &q, 4, QT, 5);
    int nload = (int)r->t->p[TGT_P_QUEUE_DEPTH] + 2;
    for (int i = 0; i < nload; i++)
        dma1(r, "dma_load", 0, TGT_REGION_ARENA, 64 * i, 0x1000 + 64 * i, 64, 0, 0);
    uint32_t cv = emit_conv(r, &TILE, 4, SRC, WGT, 0, 0, 0, 0);
    END(r, 0);
    run_ok(r);
    cr_assert_eq(ev_of(r, cv)->start, ev_of(r, 0)->end);
    cr_assert_eq(ev_of(r, 1)->start, ev_of(r, 0)->end);
    cr_assert_eq(ev_of(r, (uint32_t)nload - 1)->end, (uint64_t)(nload * dur(r, 0)), "one channel: back to back");
    rig_close(r);
}

/* A sync with drain orders everything before it before everything after it:
 * a reload of the buffer another channel read needs no token then. */
Test(npu, drain_sync_is_a_fence)
{
    for (int drain = 1; drain >= 0; drain--) {
        rig *r = rig_open("edge-v1");
        dma1(r, "dma_store", 1, TGT_REGION_OUTPUTS, 0, 0x100, 64, 0, 0);
        uint32_t s = emit(r, "sync", KV({"drain", drain}));
        uint32_t ld = dma1(r, "dma_load", 0, TGT_REGION_INPUTS, 0, 0x100, 64, 0, 0);
        END(r, 0);
        if (drain) {
            run_ok(r);
            cr_assert_eq(ev_of(r, s)->start, ev_of(r, 0)->end, "the fence waits for the store");
        } else {
            expect_fault(r, "unsynchronized access", ld);
        }
        rig_close(r);
    }
}

/* Four tiles through two input and two output buffers: loads on channel 0,
 * convs, stores on channel 1, each buffer's reuse guarded by a token. */
enum { T_LD = 0, T_CV = 2, T_INFREE = 4, T_OUTFREE = 6 }; /* + buffer */

static void tiled(rig *r, bool skip_free_token, const convt *c, uint32_t *conv0, uint32_t *load2)
{
    const int tile = 64, n = 4;
    for (int i = 0; i < n; i++) {
        int b = i % 2;
        int ld_wait = i >= 2 && !(skip_free_token && i == 2) ? 1 << (T_INFREE + b) : 0;
        uint32_t ld = dma1(r, "dma_load", 0, TGT_REGION_INPUTS, i * tile, SRC + b * 0x100, tile, ld_wait,
                           1 << (T_LD + b));
        if (i == 2)
            *load2 = ld;
        if (i >= 1) { /* the conv and store of the previous tile after this load is queued */
            int pb = (i - 1) % 2;
            int cw = 1 << (T_LD + pb) | (i - 1 >= 2 ? 1 << (T_OUTFREE + pb) : 0);
            uint32_t cv = emit(r, "conv", KV({"src", SRC + pb * 0x100}, {"dst", DST + pb * 0x100}, {"wgt", WGT},
                                             {"qtab", QT}, {"ic", c->ic}, {"oc", c->oc}, {"ih", c->ih},
                                             {"iw", c->iw}, {"oh", c->ih}, {"ow", c->iw}, {"kh", 1}, {"kw", 1},
                                             {"wait", cw}, {"signal", 1 << (T_CV + pb) | 1 << (T_INFREE + pb)}));
            if (i == 1)
                *conv0 = cv;
            dma1(r, "dma_store", 1, TGT_REGION_OUTPUTS, (i - 1) * tile, DST + pb * 0x100, tile, 1 << (T_CV + pb),
                 1 << (T_OUTFREE + pb));
        }
    }
    int pb = (n - 1) % 2;
    emit(r, "conv", KV({"src", SRC + pb * 0x100}, {"dst", DST + pb * 0x100}, {"wgt", WGT}, {"qtab", QT},
                       {"ic", c->ic}, {"oc", c->oc}, {"ih", c->ih}, {"iw", c->iw}, {"oh", c->ih}, {"ow", c->iw},
                       {"kh", 1}, {"kw", 1}, {"wait", 1 << (T_LD + pb) | 1 << (T_OUTFREE + pb)},
                       {"signal", 1 << (T_CV + pb)}));
    dma1(r, "dma_store", 1, TGT_REGION_OUTPUTS, (n - 1) * tile, DST + pb * 0x100, tile, 1 << (T_CV + pb), 0);
    END(r, 0);
}

Test(npu, double_buffered_tiles_overlap_and_are_exact)
{
    rig *r = rig_open("edge-v1");
    const convt c = TILE;
    qt q;
    make_qtab(r, &q, 4, QT, 9);
    fill(r->sram + WGT, 16, 10);
    fill(r->reg[TGT_REGION_INPUTS], 256, 11);
    uint32_t conv0 = 0, load2 = 0;
    tiled(r, false, &c, &conv0, &load2);
    run_ok(r);
    int64_t serial = 0;
    for (uint32_t i = 0; i < r->ninsn; i++)
        serial += dur(r, i);
    cr_assert_lt(r->st.cycles, (uint64_t)serial, "loads overlap compute");
    const npu_insn_event *load1 = ev_of(r, 1), *cv0 = ev_of(r, conv0);
    cr_assert_lt(load1->start, cv0->end, "tile 2's load runs during tile 1's conv");
    cr_assert_gt(load1->end, cv0->start);
    /* every tile equals the kernel on its input */
    for (int i = 0; i < 4; i++) {
        uint8_t s0[0x40000];
        memcpy(s0 + WGT, r->sram + WGT, 16);
        memcpy(s0 + SRC, r->reg[TGT_REGION_INPUTS] + 64 * i, 64);
        int8_t want[64];
        conv_ref(r, s0, &c, 1, &q, want);
        cr_assert(memcmp(want, r->reg[TGT_REGION_OUTPUTS] + 64 * i, 64) == 0, "tile %d", i);
    }
    rig_close(r);
}

/* ---- faults ---------------------------------------------------------------------------------- */

Test(npu, fault_race_on_a_missing_token)
{
    rig *r = rig_open("edge-v1");
    const convt c = TILE;
    qt q;
    make_qtab(r, &q, 4, QT, 9);
    uint32_t conv0 = 0, load2 = 0;
    tiled(r, true, &c, &conv0, &load2); /* tile 3's load does not wait for tile 1's conv to free the buffer */
    expect_fault(r, "unsynchronized access", load2);
    char other[48];
    snprintf(other, sizeof other, "instruction %u (word %u)", conv0, r->off[conv0]);
    cr_assert(strstr(r->err.msg, other), "the message names the conv too: %s", r->err.msg);
    cr_assert(strstr(r->err.msg, "SRAM 0x0"), "%s", r->err.msg);
    rig_close(r);
}

/* Two channels storing interleaved columns of one tensor touch disjoint bytes:
 * no race; shifted by two bytes they overlap and fault. */
Test(npu, interleaved_strided_stores_are_exact_about_overlap)
{
    for (int shift = 4; shift >= 2; shift -= 2) {
        rig *r = rig_open("edge-v1");
        fill(r->sram, 64, 3);
        emit(r, "dma_store", KV({"ch", 0}, {"region", TGT_REGION_OUTPUTS}, {"dram", 0}, {"sram", 0}, {"c", 1},
                                {"h", 8}, {"w", 4}, {"dram_hs", 8}, {"dram_cs", 64}, {"sram_hs", 4}, {"sram_cs", 32}));
        uint32_t b = emit(r, "dma_store", KV({"ch", 1}, {"region", TGT_REGION_OUTPUTS}, {"dram", shift},
                                             {"sram", 32}, {"c", 1}, {"h", 8}, {"w", 4}, {"dram_hs", 8},
                                             {"dram_cs", 64}, {"sram_hs", 4}, {"sram_cs", 32}));
        END(r, 0);
        if (shift == 4) {
            run_ok(r);
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 8; x++)
                    cr_assert_eq(r->reg[TGT_REGION_OUTPUTS][y * 8 + x], r->sram[(x < 4 ? 0 : 32) + y * 4 + x % 4]);
        } else {
            expect_fault(r, "unsynchronized access", b);
        }
        rig_close(r);
    }
}

/* The reload of a buffer covers the older accesses of it; a later unsynchronized
 * reader still races, with the reload. */
Test(npu, race_found_after_older_accesses_are_covered)
{
    rig *r = rig_open("edge-v1");
    qt q;
    make_qtab(r, &q, 4, QT, 9);
    const convt c = TILE;
    dma1(r, "dma_load", 0, TGT_REGION_INPUTS, 0, SRC, 64, 0, 1);
    emit_conv(r, &c, 4, SRC, WGT, 0, 0, 1, 2 | 4);
    uint32_t reload = dma1(r, "dma_load", 0, TGT_REGION_INPUTS, 64, SRC, 64, 2, 0);
    /* ordered after the conv (so after the first load), not after the reload */
    uint32_t bad = emit(r, "lut", KV({"src", SRC}, {"dst", 0x8000}, {"len", 64}, {"table", 0x9000}, {"wait", 4}));
    END(r, 0);
    expect_fault(r, "unsynchronized access", bad);
    char other[48];
    snprintf(other, sizeof other, "instruction %u (word %u)", reload, r->off[reload]);
    cr_assert(strstr(r->err.msg, other), "%s", r->err.msg);
    rig_close(r);
}

Test(npu, fault_bad_opcode)
{
    rig *r = rig_open("edge-v1");
    emit(r, "sync", KV({"wait", 0}));
    r->off[r->ninsn++] = (uint32_t)r->n;
    r->w[r->n++] = 0xee000000u;
    END(r, 0);
    expect_fault(r, "unknown opcode", 1);
    cr_assert_eq(r->nev, 0, "nothing ran: the stream is decoded first");
    rig_close(r);
}

Test(npu, fault_no_end)
{
    rig *r = rig_open("edge-v1");
    emit(r, "sync", KV({"wait", 0}));
    cr_assert_eq(run(r), NPU_EUSER);
    cr_assert(strstr(r->err.msg, "no end instruction"), "%s", r->err.msg);
    rig_close(r);
}

Test(npu, fault_dma_outside_its_region)
{
    rig *r = rig_open("edge-v1");
    dma1(r, "dma_load", 0, TGT_REGION_ARENA, 0, 0, 16, 0, 0);
    r->mem.region[TGT_REGION_ARENA].size = 0x800;
    uint32_t bad = dma1(r, "dma_load", 0, TGT_REGION_ARENA, 0x7f0, 0, 0x20, 0, 0);
    END(r, 0);
    expect_fault(r, "DRAM access [0x7f0, 0x810) outside region arena (size 0x800)", bad);
    cr_assert(strstr(r->err.msg, "`dma_load"), "the disassembly: %s", r->err.msg);
    rig_close(r);
}

Test(npu, fault_write_to_read_only_region)
{
    rig *r = rig_open("edge-v1");
    uint32_t bad = dma1(r, "dma_store", 0, TGT_REGION_CONSTANTS, 0, 0, 16, 0, 0);
    END(r, 0);
    expect_fault(r, "read-only", bad); /* edge-v1's constraint says it first */
    r->n = r->ninsn = 0;
    r->mem.region[TGT_REGION_OUTPUTS].writable = false;
    bad = dma1(r, "dma_store", 0, TGT_REGION_OUTPUTS, 0x10, 0, 16, 0, 0);
    END(r, 0);
    expect_fault(r, "write to read-only region outputs at [0x10, 0x20)", bad);
    r->n = r->ninsn = 0;
    r->mem.region[TGT_REGION_OUTPUTS] = (npu_mem_region){0};
    bad = dma1(r, "dma_store", 0, TGT_REGION_OUTPUTS, 0, 0, 16, 0, 0);
    END(r, 0);
    expect_fault(r, "region outputs is not mapped", bad);
    rig_close(r);
}

Test(npu, fault_sram_overflow)
{
    rig *r = rig_open("edge-v1");
    int64_t top = r->t->p[TGT_P_SRAM_BYTES];
    dma1(r, "dma_load", 0, TGT_REGION_ARENA, 0, top - 16, 16, 0, 0); /* the last 16 bytes are fine */
    uint32_t bad = dma1(r, "dma_load", 0, TGT_REGION_ARENA, 0, top - 16, 17, 0, 0);
    END(r, 0);
    expect_fault(r, "runs past the end", bad);
    rig_close(r);
}

Test(npu, fault_deadlock_names_the_waiter)
{
    rig *r = rig_open("edge-v1");
    dma1(r, "dma_load", 0, TGT_REGION_ARENA, 0, 0, 16, 0, 1);
    uint32_t w = dma1(r, "dma_load", 1, TGT_REGION_ARENA, 0, 64, 16, 1 << 3, 0); /* token 3: nobody signals */
    END(r, 1);
    expect_fault(r, "deadlock", w);
    cr_assert(strstr(r->err.msg, "token 3"), "%s", r->err.msg);
    rig_close(r);
}

Test(npu, fault_output_overlapping_input)
{
    rig *r = rig_open("edge-v1");
    qt q;
    make_qtab(r, &q, 4, QT, 1);
    uint32_t bad = emit(r, "conv", KV({"src", SRC}, {"dst", SRC + 8}, {"wgt", WGT}, {"qtab", QT}, {"ic", 4},
                                      {"oc", 4}, {"ih", 4}, {"iw", 4}, {"oh", 4}, {"ow", 4}, {"kh", 1}, {"kw", 1}));
    END(r, 0);
    expect_fault(r, "overlaps input src", bad);
    rig_close(r);
}

/* ---- other targets and the simulator seam ---------------------------------------------------- */

Test(npu, narrow_target_runs_the_same_program)
{
    rig *r = rig_open("edge-v1-narrow");
    nk_qbinary_params p = {.op = NK_QMUL, .a_shape = {3, {2, 4, 8}}, .b_shape = {3, {2, 4, 8}},
                           .out_shape = {3, {2, 4, 8}}, .a_zp = 1, .b_zp = 2, .out_zp = -1, .act_min = -128,
                           .act_max = 127};
    cr_assert_eq(nk_qbinary_prepare(&p, 0.1f, 0.1f, 0.2f), NK_OK);
    fill(r->reg[TGT_REGION_INPUTS], 128, 3);
    uint32_t a = dma1(r, "dma_load", 0, TGT_REGION_INPUTS, 0, 0, 128, 0, 1);
    uint32_t e = emit(r, "eltwise", KV({"a", 0}, {"b", 64}, {"dst", 0x1000}, {"c", 2}, {"h", 4}, {"w", 8},
                                       {"op", TGT_ELT_MUL}, {"a_zp", 1}, {"b_zp", 2}, {"out_zp", -1},
                                       {"a_mult", p.a_mult}, {"b_mult", p.b_mult}, {"out_mult", p.out_mult},
                                       {"out_shift", p.out_shift}, {"wait", 1}, {"signal", 2}));
    uint32_t s = dma1(r, "dma_store", 1, TGT_REGION_OUTPUTS, 0, 0x1000, 64, 2, 0);
    uint32_t end = END(r, 0);
    run_ok(r);
    int8_t want[64];
    const int8_t *in = (const int8_t *)r->reg[TGT_REGION_INPUTS];
    cr_assert_eq(nk_qbinary(&p, in, in + 64, want), NK_OK);
    cr_assert(memcmp(want, r->reg[TGT_REGION_OUTPUTS], 64) == 0);
    cr_assert_eq(r->st.cycles, (uint64_t)(dur(r, a) + dur(r, e) + dur(r, s) + dur(r, end)));
    rig_close(r);
}

Test(npu, new_fails_cleanly_without_memory)
{
    rig *r = rig_open("edge-v1");
    for (size_t k = 1; k < 12; k++) {
        npu_alloc_counter c = {.fail_at = k};
        npu_model *m = NULL;
        npu_err e;
        npu_status st = npu_model_new(r->t, npu_alloc_counting(&c), &m, &e);
        if (st == NPU_OK) {
            npu_model_free(m);
        } else {
            cr_assert_eq(st, NPU_EINTERNAL);
            cr_assert_null(m);
        }
        cr_assert_eq(c.live_bytes, 0, "fail_at %zu leaks", k);
    }
    rig_close(r);
}

static const char *fw_path(void)
{
    static char path[1024];
    const char *b = getenv("NPUCC_BUILD");
    snprintf(path, sizeof path, "%s/fw/npurt.elf", b && *b ? b : "build");
    return path;
}

/* The firmware kicks the model through the NPU registers: the output lands in guest DRAM. */
Test(npu, through_the_simulator_seam)
{
    rig *r = rig_open("edge-v1");
    uint32_t a = dma1(r, "dma_load", 0, TGT_REGION_INPUTS, 0, 0, 32, 0, 1);
    emit(r, "requant", KV({"src", 0}, {"dst", 64}, {"len", 32}, {"mult", 1}, {"copy", 1}, {"wait", 1},
                          {"signal", 2}));
    dma1(r, "dma_store", 0, TGT_REGION_OUTPUTS, 4, 64, 32, 2, 0);
    END(r, 0);
    sim_config cfg;
    sim_config_default(&cfg);
    sim_ctx *s;
    npu_err err;
    cr_assert_eq(sim_config_from_target(r->t, &cfg, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(sim_new(&cfg, &s, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(sim_load_elf_file(s, fw_path(), &err), NPU_OK, "%s", err.msg);
    uint8_t in[32];
    fill(in, sizeof in, 77);
    uint32_t cmd_at, in_at, out_at, tab_at, req_at;
    cr_assert_eq(sim_place_dram(s, r->w, 4 * r->n, 4, &cmd_at, &err), NPU_OK);
    cr_assert_eq(sim_place_dram(s, in, sizeof in, 64, &in_at, &err), NPU_OK);
    cr_assert_eq(sim_place_dram(s, NULL, 64, 64, &out_at, &err), NPU_OK);
    fw_npu_region_desc regs[FW_NPU_NREGIONS] = {{0}};
    regs[FW_NPU_REGION_INPUT] = (fw_npu_region_desc){in_at, sizeof in};
    regs[FW_NPU_REGION_OUTPUT] = (fw_npu_region_desc){out_at, 64};
    cr_assert_eq(sim_place_dram(s, regs, sizeof regs, 8, &tab_at, &err), NPU_OK);
    sim_attach_npu(s, npu_model_sim_ops(), r->m);
    fw_request req = {.magic = FW_REQ_MAGIC, .version = FW_REQ_VERSION, .command = FW_CMD_NPU_KICK,
                      .arg = {cmd_at, (uint32_t)(4 * r->n), tab_at, 1, 0}};
    cr_assert_eq(sim_place_request(s, &req, &req_at, &err), NPU_OK);
    sim_result res;
    cr_assert_eq(sim_run(s, &res, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(res.exit_code, 0, "%s", res.msg);
    uint8_t out[64];
    cr_assert_eq(sim_mem_read(s, out_at, out, sizeof out, &err), NPU_OK);
    cr_assert(memcmp(out + 4, in, 32) == 0, "the stream copied the input to the output");
    fw_request back;
    cr_assert_eq(sim_mem_read(s, req_at, &back, sizeof back, &err), NPU_OK);
    run_ok(r); /* the same job directly: the seam reports its cycles */
    cr_assert_eq(back.result[3], (uint32_t)r->st.cycles);
    cr_assert_eq(res.stats.npu_cycles, r->st.cycles);
    cr_assert_gt(r->st.cycles, (uint64_t)dur(r, a));
    sim_free(s);
    rig_close(r);
}

/* One NPU job through the firmware (FW_CMD_NPU_KICK), the host incrementing
 * host_bytes of DRAM word by word between the doorbell and the wait; returns
 * the job's NPU cycles and checks that the host's work was done. */
static uint64_t kick_with_host_traffic(rig *r, const uint8_t *in, size_t in_len, int timing, uint32_t host_bytes)
{
    sim_config cfg;
    sim_config_default(&cfg);
    sim_ctx *s;
    npu_err err;
    cr_assert_eq(sim_config_from_target(r->t, &cfg, &err), NPU_OK, "%s", err.msg);
    cfg.host_dram_timing = timing;
    cr_assert_eq(sim_new(&cfg, &s, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(sim_load_elf_file(s, fw_path(), &err), NPU_OK, "%s", err.msg);
    uint32_t cmd_at, in_at, busy_at, tab_at, req_at;
    cr_assert_eq(sim_place_dram(s, r->w, 4 * r->n, 4, &cmd_at, &err), NPU_OK);
    cr_assert_eq(sim_place_dram(s, in, in_len, 64, &in_at, &err), NPU_OK);
    cr_assert_eq(sim_place_dram(s, NULL, host_bytes + 4, 64, &busy_at, &err), NPU_OK);
    fw_npu_region_desc regs[FW_NPU_NREGIONS] = {{0}};
    regs[FW_NPU_REGION_INPUT] = (fw_npu_region_desc){in_at, (uint32_t)in_len};
    cr_assert_eq(sim_place_dram(s, regs, sizeof regs, 8, &tab_at, &err), NPU_OK);
    sim_attach_npu(s, npu_model_sim_ops(), r->m);
    fw_request req = {.magic = FW_REQ_MAGIC, .version = FW_REQ_VERSION, .command = FW_CMD_NPU_KICK,
                      .arg = {cmd_at, (uint32_t)(4 * r->n), tab_at, 1, 0, busy_at, host_bytes}};
    cr_assert_eq(sim_place_request(s, &req, &req_at, &err), NPU_OK);
    sim_result res;
    cr_assert_eq(sim_run(s, &res, &err), NPU_OK, "%s", err.msg);
    cr_assert_eq(res.exit_code, 0, "%s", res.msg);
    uint32_t last = 0;
    if (host_bytes)
        cr_assert_eq(sim_mem_read(s, busy_at + host_bytes - 4, &last, 4, &err), NPU_OK);
    cr_assert_eq(last, host_bytes ? 1u : 0u, "the host's work ran");
    uint64_t c = res.stats.npu_cycles;
    sim_free(s);
    return c;
}

/* DRAM shared with the host: the host's loads and stores while a job runs
 * take the DRAM bus from the job's DMA transfers (sim_config.host_dram_timing). */
Test(npu, host_traffic_slows_a_concurrent_dma)
{
    rig *r = rig_open("edge-v1");
    enum { N = 16, BYTES = 2048 };
    for (int i = 0; i < N; i++)
        dma1(r, "dma_load", i % 2, TGT_REGION_INPUTS, i * BYTES, i * BYTES, BYTES, 0, 0); /* two channels keep the bus busy */
    END(r, 0);
    static uint8_t in[N * BYTES];
    fill(in, sizeof in, 5);
    run_ok(r); /* the job alone */
    uint64_t alone = r->st.cycles;
    uint64_t quiet = kick_with_host_traffic(r, in, sizeof in, 1, 0);
    uint64_t busy = kick_with_host_traffic(r, in, sizeof in, 1, 16384);
    uint64_t untimed = kick_with_host_traffic(r, in, sizeof in, 0, 16384);
    cr_assert_eq(quiet, alone, "a quiet host leaves the job as it is (%llu, %llu)", (unsigned long long)quiet,
                 (unsigned long long)alone);
    cr_assert_eq(untimed, alone, "without host_dram_timing the host's traffic is not on the bus");
    cr_assert_gt(busy, alone + alone / 10, "host traffic slows the job's DMA: %llu cycles against %llu alone",
                 (unsigned long long)busy, (unsigned long long)alone);
    cr_assert_gt(npu_model_totals(r->m)->foreign_dram, 0, "the bus served the host's bytes");
    cr_log_info("NPU cycles alone %llu, with the host's traffic %llu", (unsigned long long)alone,
                (unsigned long long)busy);
    rig_close(r);
}
