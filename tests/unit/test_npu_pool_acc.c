/* The pool's accumulating form (acc_in, acc_out, psum, divisor; docs/isa.md):
 * a global average over a tensor's row bands, each band one instruction,
 * must write exactly what nk_qglobal_avgpool writes for the whole tensor,
 * whatever the bands; and fault clearly where the form does not apply. */
#include "tests/support/npu_rig.h"

enum { C = 5, H = 9, W = 7, BANDS = 0x8000, OUT = 0x31000 };

/* The tensor at SRC (C x H x W) copied into band tiles of rows[i] rows
 * (each a dense C x rows x W box, as a cascade's output slot holds it),
 * then one pool per band: acc_out on all but the last, acc_in on all but
 * the first. */
static void run_bands(rig *r, const int *rows, int n, const nk_qpool_params *p)
{
    int64_t at = BANDS;
    for (int b = 0, y0 = 0; b < n; y0 += rows[b], b++) {
        for (int c = 0; c < C; c++)
            memcpy(r->sram + at + (int64_t)c * rows[b] * W, r->sram + SRC + ((int64_t)c * H + y0) * W,
                   (size_t)rows[b] * W);
        emit(r, "pool", KV({"src", at}, {"dst", OUT}, {"psum", PSUM}, {"c", C}, {"ih", rows[b]}, {"iw", W},
                           {"kh", rows[b]}, {"kw", W}, {"oh", 1}, {"ow", 1}, {"mode", TGT_POOL_AVG},
                           {"in_zp", p->in_zp}, {"out_zp", p->out_zp}, {"mult", p->mult}, {"shift", p->shift},
                           {"clamp_lo", p->act_min}, {"clamp_hi", p->act_max}, {"acc_in", b > 0},
                           {"acc_out", b < n - 1}, {"divisor", H * W}));
        at += (int64_t)C * rows[b] * W;
    }
    END(r, 0);
    run_ok(r);
}

Test(npu_pool_acc, bands_match_the_global_average)
{
    static const int splits[][4] = {{9}, {3, 3, 3}, {1, 7, 1}, {4, 5}, {2, 2, 2, 3}};
    static const int counts[] = {1, 3, 3, 2, 4};
    int32_t mult;
    int shift;
    cr_assert_eq(nk_quantize_multiplier(0.7, &mult, &shift), NK_OK);
    for (int s = 0; s < 5; s++) {
        rig *r = rig_open("edge-v1");
        fill(r->sram + SRC, C * H * W, 17 + (uint32_t)s);
        nk_qpool_params p = {.n = 1, .c = C, .h_in = H, .w_in = W, .h_out = 1, .w_out = 1, .k_h = H, .k_w = W,
                             .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1, .in_zp = -3, .out_zp = 5,
                             .mult = mult, .shift = shift, .act_min = -100, .act_max = 100};
        int8_t want[C];
        cr_assert_eq(nk_qglobal_avgpool(&p, (const int8_t *)r->sram + SRC, want), NK_OK);
        run_bands(r, splits[s], counts[s], &p);
        cr_assert(memcmp(want, r->sram + OUT, C) == 0, "split %d: the banded average differs from the kernel's", s);
        rig_close(r);
    }
}

/* A max pool, or a window smaller than the tile, has no accumulating form;
 * edge-v1's divider takes at most 4096 elements, the divisor included. */
Test(npu_pool_acc, faults_where_it_does_not_apply)
{
    struct {
        const char *why;
        int mode, kh, divisor;
    } bad[] = {
        {"take an int8 average over the whole tile", TGT_POOL_MAX, 4, 28},
        {"take an int8 average over the whole tile", TGT_POOL_AVG, 2, 28},
        {"the average divider takes windows up to 4096", TGT_POOL_AVG, 4, 4097},
    };
    for (int i = 0; i < 3; i++) {
        rig *r = rig_open("edge-v1");
        uint32_t k = emit(r, "pool", KV({"src", SRC}, {"dst", OUT}, {"psum", PSUM}, {"c", 2}, {"ih", 4}, {"iw", 7},
                                        {"kh", bad[i].kh}, {"kw", 7}, {"oh", 4 / bad[i].kh == 1 ? 1 : 3}, {"ow", 1},
                                        {"mode", bad[i].mode}, {"acc_in", 1}, {"divisor", bad[i].divisor}));
        END(r, 0);
        expect_fault(r, bad[i].why, k);
        rig_close(r);
    }
}
