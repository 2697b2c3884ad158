/* The host tools' fast integer kernels: the same results as the portable
 * kernels of nk_quant.h bit for bit, on the host's SIMD where it has it
 * (x86-64 AVX-512 VNNI, chosen at run time), else the portable code. The
 * simulator's NPU units and npuref's integer graph call these; the on-device
 * runtime keeps nk_quant.h (its scratch sizes are stored in binaries and must
 * not depend on the machine that compiled them). */
#ifndef NK_QFAST_H
#define NK_QFAST_H

#include "kernels/nk_quant.h"

/* Scratch for nk_qconv2d_fast: at least nk_qconv2d_scratch_size, 4-byte
 * aligned (0 for invalid parameters). */
size_t nk_qconv2d_fast_scratch_size(const nk_qconv2d_params *p);

/* nk_qconv2d. With raw non-NULL (out then unused, may be NULL), writes the
 * exact int32 sums sum (in - in_zp) * w, bias not added, as
 * [n][c_out][h_out][w_out] instead (partial sums); NK_EUNSUPPORTED for a
 * depthwise layer (one input channel per group) in that mode. */
nk_status nk_qconv2d_fast(const nk_qconv2d_params *p, const int8_t *in, const void *w, const int32_t *bias,
                          int8_t *out, int32_t *raw, void *scratch);

/* A run of convolutions over one input (the NPU model's conv instructions
 * split over output channels) need not rebuild the same im2col matrix:
 * nk_qconv2d_fast_packed keeps it in packed (nk_qconv2d_fast_packed_size
 * bytes, 64-byte aligned; 0: this layer or host has no packed form, use
 * nk_qconv2d_fast) and, with reuse, uses it as it is. The caller guarantees
 * that a reuse sees the same input bytes and the same parameters except
 * c_out, the requantization and the clamp as the call that packed. */
size_t nk_qconv2d_fast_packed_size(const nk_qconv2d_params *p);

/* The caller's threads (a pool): run calls fn(ctx, part, parts) for every
 * part 0 .. parts-1, side by side or not, and returns when all are done.
 * The parts of one call write disjoint outputs and sum in the same order
 * whatever runs them, so the results do not depend on it. */
typedef struct nk_parallel {
    void (*run)(void *ud, void (*fn)(void *ctx, int part, int parts), void *ctx);
    void *ud;
    int parts;
    size_t min_macs; /* smaller layers run on the caller's thread: the hand-off would cost what it saves */
} nk_parallel;

/* With par (NULL: none) of 2 parts or more, the packed form's blocks of
 * pixels are shared out among them. */
nk_status nk_qconv2d_fast_packed(const nk_qconv2d_params *p, const int8_t *in, const void *w, const int32_t *bias,
                                 int8_t *out, int32_t *raw, void *scratch, void *packed, int reuse,
                                 const nk_parallel *par);

/* Internal to kernels/nk_qconv*.c: the AVX-512 VNNI path (nk_qconv_x86.c). */
int nk_qfast_vnni(void);
size_t nk_qfast_vnni_scratch(const nk_qconv2d_params *p);
size_t nk_qfast_vnni_packed_size(const nk_qconv2d_params *p);
void nk_qfast_vnni_conv(const nk_qconv2d_params *p, const int8_t *in, const void *w, const int32_t *bias,
                        int8_t *out, int32_t *raw, void *scratch, uint8_t *packed, int reuse, const nk_parallel *par);
/* nk_requant_out(nk_sat_add_i32(acc[i], bias), mult, shift, zp, lo, hi) for i < n. */
void nk_qfast_requant_row(const int32_t *acc, size_t n, int32_t bias, int32_t mult, int32_t shift, int32_t zp,
                          int32_t lo, int32_t hi, int8_t *out);
/* Depthwise (nk_qdw_fast.c): int8 weights; scratch of nk_qfast_dw_scratch bytes, 4-byte aligned. */
size_t nk_qfast_dw_scratch(const nk_qconv2d_params *p);
void nk_qfast_dw(const nk_qconv2d_params *p, const int8_t *in, const int8_t *w8, const int32_t *bias, int8_t *out,
                 void *scratch);

#endif
