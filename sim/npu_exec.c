/* The functional semantics of each instruction (docs/isa.md "Semantics"),
 * computed by the reference kernels of kernels/nk_quant.h on the SRAM
 * operands, so the model is bit-exact with the reference executor. Only the
 * partial-sum forms (acc_in / acc_out) and matmul with a weight zero point or bt
 * have no kernel: they are direct loops that accumulate in int64, saturate to
 * int32 and end in the same nk_requant_out. Bounds were checked when the
 * instruction was prepared (npu_model.c). */
#include <string.h>

#include "kernels/nk_qfast.h"
#include "sim/npu_internal.h"

#define V(f) ((int32_t)x->d.v[TGT_F_##f])

/* SRAM words are little-endian; on a little-endian host one unaligned copy
 * (the partial-sum loops are hot on convs split over input channels). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static int32_t rd32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void wr32(uint8_t *p, int32_t v)
{
    memcpy(p, &v, 4);
}
#else
static int32_t rd32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static void wr32(uint8_t *p, int32_t v)
{
    uint32_t u = (uint32_t)v;
    p[0] = (uint8_t)u;
    p[1] = (uint8_t)(u >> 8);
    p[2] = (uint8_t)(u >> 16);
    p[3] = (uint8_t)(u >> 24);
}
#endif

static int32_t sat32(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : (v < INT32_MIN ? INT32_MIN : (int32_t)v);
}

static size_t align16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

static npu_status kernel_status(npu_model *m, const npum_insn *x, nk_status s, const char *kernel, npu_err *err)
{
    if (s == NK_OK)
        return NPU_OK;
    return npum_fault(m, err, x->index, x->word, &x->d, "%s refuses these parameters (%s)", kernel,
                      s == NK_EUNSUPPORTED ? "unsupported" : "invalid");
}

npu_status npum_load_qtab(npu_model *m, const npum_insn *x, int32_t n, size_t kscratch, bool need_mult, qtab *q,
                            npu_err *err)
{
    size_t arr = align16((size_t)n * sizeof(int32_t));
    uint8_t *s = npum_scratch(m, align16(kscratch) + 3 * arr);
    if (!s)
        return npu_fail(err, NPU_EINTERNAL, "npu: out of memory for kernel scratch");
    q->kscratch = s;
    q->bias = (int32_t *)(void *)(s + align16(kscratch));
    q->mult = q->bias + arr / sizeof(int32_t);
    q->shift = q->mult + arr / sizeof(int32_t);
    const uint8_t *t = m->sram + x->d.v[TGT_F_QTAB];
    for (int32_t o = 0; o < n; o++, t += 12) {
        q->bias[o] = rd32(t);
        q->mult[o] = rd32(t + 4);
        q->shift[o] = rd32(t + 8);
        if (need_mult && (q->mult[o] < 0 || q->shift[o] < NK_SHIFT_MIN || q->shift[o] > NK_SHIFT_MAX))
            return npum_fault(m, err, x->index, x->word, &x->d,
                              "qtab channel %d (SRAM 0x%llx): multiplier %d shift %d outside [0, 2^31) x [%d, %d]",
                              o, (unsigned long long)(x->d.v[TGT_F_QTAB] + 12 * o), q->mult[o], q->shift[o],
                              NK_SHIFT_MIN, NK_SHIFT_MAX);
    }
    return NPU_OK;
}

static int8_t weight(const uint8_t *w, size_t idx, bool w4)
{
    return w4 ? nk_int4_get(w, idx) : (int8_t)w[idx];
}

/* The window of conv and dwconv as the kernel's parameters. */
static nk_qconv2d_params conv_params(const npum_insn *x, int32_t cin, int32_t cout, int32_t groups)
{
    return (nk_qconv2d_params){
        .n = 1, .c_in = cin, .h_in = V(IH), .w_in = V(IW), .c_out = cout, .h_out = V(OH), .w_out = V(OW),
        .k_h = V(KH), .k_w = V(KW), .stride_h = V(SH), .stride_w = V(SW), .dil_h = V(DH), .dil_w = V(DW),
        .pad_top = V(PT), .pad_left = V(PL), .pad_bottom = V(PB), .pad_right = V(PR), .groups = groups,
        .in_zp = V(IN_ZP), .out_zp = V(OUT_ZP), .act_min = V(CLAMP_LO), .act_max = V(CLAMP_HI),
        .w_format = V(W4) ? NK_W_I4 : NK_W_I8};
}

/* floor(a / b) and ceil(a / b) for b > 0. */
static int32_t fdiv(int32_t a, int32_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static int32_t cdiv(int32_t a, int32_t b)
{
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/* conv with partial sums: acc = (acc_in ? psum : bias) + the window's sum,
 * tap by tap over one output channel's plane of int64 accumulators (acc). */
static void conv_accumulate(npu_model *m, const npum_insn *x, const qtab *q, int64_t *acc)
{
    const int8_t *in = m->src_view;
    const uint8_t *w = m->sram + V(WGT);
    uint8_t *psum = m->sram + V(PSUM);
    int8_t *out = m->dst_view;
    const int32_t ic = V(IC), ih = V(IH), iw = V(IW), kh = V(KH), kw = V(KW), zp = V(IN_ZP);
    const int32_t oh = V(OH), ow = V(OW), sh = V(SH), sw = V(SW);
    const size_t plane = (size_t)oh * (size_t)ow;
    const bool w4 = V(W4), acc_in = V(ACC_IN), acc_out = V(ACC_OUT);
    size_t wi = 0;
    for (int32_t o = 0; o < V(OC); o++) {
        uint8_t *ps = psum + 4 * (size_t)o * plane;
        for (size_t p = 0; p < plane; p++)
            acc[p] = acc_in ? rd32(ps + 4 * p) : q->bias[o];
        for (int32_t i = 0; i < ic; i++)
            for (int32_t ky = 0; ky < kh; ky++)
                for (int32_t kx = 0; kx < kw; kx++, wi++) {
                    int32_t wv = weight(w, wi, w4), dx = kx * V(DW) - V(PL);
                    /* the outputs whose input column is inside: 0 <= x*sw + dx < iw */
                    int32_t x0 = cdiv(-dx, sw), x1 = fdiv(iw - 1 - dx, sw);
                    x0 = x0 < 0 ? 0 : x0;
                    x1 = x1 > ow - 1 ? ow - 1 : x1;
                    if (wv == 0 || x0 > x1)
                        continue;
                    for (int32_t y = 0; y < oh; y++) {
                        int32_t iy = y * sh - V(PT) + ky * V(DH);
                        if (iy < 0 || iy >= ih)
                            continue;
                        const int8_t *row = in + ((size_t)i * (size_t)ih + (size_t)iy) * (size_t)iw;
                        int64_t *a = acc + (size_t)y * (size_t)ow;
                        for (int32_t xx = x0; xx <= x1; xx++)
                            a[xx] += (int64_t)((int32_t)row[xx * sw + dx] - zp) * wv;
                    }
                }
        for (size_t p = 0; p < plane; p++) {
            if (acc_out)
                wr32(ps + 4 * p, sat32(acc[p]));
            else
                out[(size_t)o * plane + p] = (int8_t)nk_requant_out(sat32(acc[p]), q->mult[o], q->shift[o],
                                                                    V(OUT_ZP), V(CLAMP_LO), V(CLAMP_HI));
        }
    }
}

/* Scratch sizes are asked with a placeholder multiplier: the table is read after. */
static const int32_t unit_mult = 1 << 30, unit_shift = 1;

/* conv with partial sums from the fast kernel's exact int32 window sums:
 * acc = (acc_in ? psum : bias) + sum in int64, as conv_accumulate. */
NK_HOT_VEC static void conv_partial(npu_model *m, const npum_insn *x, const qtab *q, int32_t *raw)
{
    uint8_t *psum = m->sram + V(PSUM);
    int8_t *out = m->dst_view;
    const size_t plane = (size_t)V(OH) * (size_t)V(OW);
    const bool acc_in = V(ACC_IN), acc_out = V(ACC_OUT);
    for (int32_t o = 0; o < V(OC); o++) {
        uint8_t *ps = psum + 4 * (size_t)o * plane;
        int32_t *r = raw + (size_t)o * plane;
        if (acc_in)
            for (size_t p = 0; p < plane; p++)
                r[p] = sat32((int64_t)rd32(ps + 4 * p) + r[p]);
        if (acc_out) {
            for (size_t p = 0; p < plane; p++)
                wr32(ps + 4 * p, acc_in ? r[p] : sat32((int64_t)q->bias[o] + r[p]));
        } else {
            nk_qfast_requant_row(r, plane, acc_in ? 0 : q->bias[o], q->mult[o], q->shift[o], V(OUT_ZP), V(CLAMP_LO),
                                 V(CLAMP_HI), out + (size_t)o * plane);
        }
    }
}

/* Parameters under which two convs read the same im2col matrix. */
static bool same_window(const nk_qconv2d_params *a, const nk_qconv2d_params *b)
{
    return a->n == b->n && a->c_in == b->c_in && a->h_in == b->h_in && a->w_in == b->w_in && a->h_out == b->h_out &&
           a->w_out == b->w_out && a->k_h == b->k_h && a->k_w == b->k_w && a->stride_h == b->stride_h &&
           a->stride_w == b->stride_w && a->dil_h == b->dil_h && a->dil_w == b->dil_w && a->pad_top == b->pad_top &&
           a->pad_left == b->pad_left && a->pad_bottom == b->pad_bottom && a->pad_right == b->pad_right &&
           a->groups == b->groups && a->in_zp == b->in_zp;
}

/* The im2col buffer for p, and whether the last conv left it valid: same
 * window, same SRAM source, same source bytes (compared, so any write in
 * between, by DMA or a unit, invalidates it). NULL: none (the kernel packs
 * its own). Exact either way: only the packing is skipped. */
static void *packed_for(npu_model *m, const npum_insn *x, const nk_qconv2d_params *p, int *reuse)
{
    *reuse = 0;
    size_t need = nk_qconv2d_fast_packed_size(p), len = (size_t)p->c_in * (size_t)p->h_in * (size_t)p->w_in;
    const int8_t *src = m->src_view;
    if (need == 0)
        return NULL;
    if (m->pk_valid && m->pk_src == V(SRC) && same_window(&m->pk_p, p) && m->pk_in_len == len &&
        memcmp(m->pk_in, src, len) == 0) {
        *reuse = 1;
        return (void *)(((uintptr_t)m->pk + 63) & ~(uintptr_t)63);
    }
    m->pk_valid = false;
    void *pk = npum_grow(m, m->pk, &m->pk_cap, 1, need + 64, 65536);
    if (pk)
        m->pk = pk;
    int8_t *in = npum_grow(m, m->pk_in, &m->pk_in_cap, 1, len, 4096);
    if (in)
        m->pk_in = in;
    if (!pk || !in)
        return NULL;
    memcpy(m->pk_in, src, len);
    m->pk_in_len = len, m->pk_src = V(SRC), m->pk_p = *p, m->pk_valid = true;
    return (void *)(((uintptr_t)m->pk + 63) & ~(uintptr_t)63);
}

static npu_status conv(npu_model *m, const npum_insn *x, bool depthwise, npu_err *err)
{
    int32_t cin = depthwise ? V(C) : V(IC), cout = depthwise ? V(C) : V(OC);
    bool acc = !depthwise && (V(ACC_IN) || V(ACC_OUT));
    nk_qconv2d_params p = conv_params(x, cin, cout, depthwise ? cin : 1);
    p.q = (nk_qmults){1, &unit_mult, &unit_shift};
    /* the fast kernel's scratch, then (partial sums) its int32 sums, or the direct loop's int64 plane */
    size_t fast = nk_qconv2d_fast_scratch_size(&p), sums = (size_t)cout * (size_t)V(OH) * (size_t)V(OW) * 4;
    if (fast == 0 && !acc)
        return kernel_status(m, x, NK_EARG, "nk_qconv2d", err);
    size_t direct = (size_t)V(OH) * (size_t)V(OW) * sizeof(int64_t);
    size_t ks = acc ? (fast && align16(fast) + sums > direct ? align16(fast) + sums : direct) : fast;
    qtab q = {0};
    if (!(acc && V(ACC_IN) && V(ACC_OUT))) {
        npu_status st = npum_load_qtab(m, x, cout, ks, !(acc && V(ACC_OUT)), &q, err);
        if (st)
            return st;
    } else if (!(q.kscratch = npum_scratch(m, ks))) {
        return npu_fail(err, NPU_EINTERNAL, "npu: out of memory for kernel scratch");
    }
    int reuse = 0;
    void *pk = depthwise ? NULL : packed_for(m, x, &p, &reuse);
    if (acc) {
        int32_t *raw = (int32_t *)(void *)((uint8_t *)q.kscratch + align16(fast));
        if (fast && nk_qconv2d_fast_packed(&p, m->src_view, m->sram + V(WGT), NULL, NULL, raw,
                                           q.kscratch, pk, reuse, m->pool ? &m->par : NULL) == NK_OK)
            conv_partial(m, x, &q, raw);
        else
            conv_accumulate(m, x, &q, q.kscratch);
        return NPU_OK;
    }
    p.q = (nk_qmults){cout, q.mult, q.shift};
    nk_status s = nk_qconv2d_fast_packed(&p, m->src_view, m->sram + V(WGT), q.bias, m->dst_view, NULL, q.kscratch,
                                         pk, reuse,
                                         m->pool ? &m->par : NULL);
    return kernel_status(m, x, s, "nk_qconv2d", err);
}

/* sum (a[t] - za) * (b[t] - zb) over t < k for zero points in [-128, 127]:
 * each term is below 2^16 in magnitude, so int32 sums of 2^15 terms are
 * exact and vectorize (the matmul of a classifier split over K, where the
 * scalar int64 loop was 6% of MobileNetV2-224). */
NK_HOT_VEC static int64_t dot_zp(const int8_t *a, int32_t za, const int8_t *b, int32_t zb, size_t k)
{
    int64_t s = 0;
    for (size_t t0 = 0; t0 < k; t0 += 32768) {
        size_t n = k - t0 < 32768 ? k - t0 : 32768;
        int32_t c = 0;
        for (size_t t = 0; t < n; t++)
            c += ((int32_t)a[t0 + t] - za) * ((int32_t)b[t0 + t] - zb);
        s += c;
    }
    return s;
}

static bool zp8(int32_t zp)
{
    return zp >= -128 && zp <= 127;
}

/* matmul without a kernel: partial sums, a weight zero point or B stored
 * k x n (bt: a second activation, as it lies in DRAM). */
static void matmul_direct(npu_model *m, const npum_insn *x, const qtab *q)
{
    const int8_t *a = (const int8_t *)m->sram + V(SRC);
    const uint8_t *b = m->sram + V(WGT);
    uint8_t *psum = m->sram + V(PSUM);
    int8_t *out = (int8_t *)m->sram + V(DST);
    const int32_t k = V(K), n = V(N);
    const bool w4 = V(W4), acc_in = V(ACC_IN), acc_out = V(ACC_OUT), bt = V(BT);
    const bool dense = !w4 && !bt && zp8(V(IN_ZP)) && zp8(V(W_ZP));
    for (int32_t r = 0; r < V(M); r++)
        for (int32_t j = 0; j < n; j++) {
            size_t o = (size_t)r * (size_t)n + (size_t)j;
            int64_t acc = acc_in ? rd32(psum + 4 * o) : q->bias[j];
            if (dense) /* B row j is contiguous int8: the same sum, vectorized */
                acc += dot_zp(a + (size_t)r * (size_t)k, V(IN_ZP), (const int8_t *)b + (size_t)j * (size_t)k, V(W_ZP),
                              (size_t)k);
            for (int32_t t = 0; t < k && !dense; t++)
                acc += (int64_t)(a[(size_t)r * (size_t)k + (size_t)t] - V(IN_ZP)) *
                       (weight(b, bt ? (size_t)t * (size_t)n + (size_t)j : (size_t)j * (size_t)k + (size_t)t, w4) -
                        V(W_ZP));
            if (acc_out)
                wr32(psum + 4 * o, sat32(acc));
            else
                out[o] = (int8_t)nk_requant_out(sat32(acc), q->mult[j], q->shift[j], V(OUT_ZP), V(CLAMP_LO),
                                                V(CLAMP_HI));
        }
}

static npu_status matmul(npu_model *m, const npum_insn *x, npu_err *err)
{
    bool direct = V(ACC_IN) || V(ACC_OUT) || V(W_ZP) != 0 || V(BT);
    nk_qfc_params p = {.batch = V(M), .in_features = V(K), .out_features = V(N), .in_zp = V(IN_ZP),
                       .out_zp = V(OUT_ZP), .act_min = V(CLAMP_LO), .act_max = V(CLAMP_HI),
                       .w_format = V(W4) ? NK_W_I4 : NK_W_I8};
    p.q = (nk_qmults){1, &unit_mult, &unit_shift};
    size_t ks = direct ? 0 : nk_qfc_scratch_size(&p);
    qtab q = {0};
    if (!(V(ACC_IN) && V(ACC_OUT))) {
        npu_status st = npum_load_qtab(m, x, V(N), ks, !V(ACC_OUT), &q, err);
        if (st)
            return st;
    }
    if (direct) {
        matmul_direct(m, x, &q);
        return NPU_OK;
    }
    p.q = (nk_qmults){V(N), q.mult, q.shift};
    nk_status s = nk_qfc(&p, (const int8_t *)m->sram + V(SRC), m->sram + V(WGT), q.bias, (int8_t *)m->sram + V(DST),
                         V(W4) ? q.kscratch : NULL);
    return kernel_status(m, x, s, "nk_qfc", err);
}

static npu_status pool(npu_model *m, const npum_insn *x, npu_err *err)
{
    nk_qpool_params p = {.n = 1, .c = V(C), .h_in = V(IH), .w_in = V(IW), .h_out = V(OH), .w_out = V(OW),
                         .k_h = V(KH), .k_w = V(KW), .stride_h = V(SH), .stride_w = V(SW), .dil_h = 1, .dil_w = 1,
                         .pad_top = V(PT), .pad_left = V(PL), .pad_bottom = V(PB), .pad_right = V(PR),
                         .count_include_pad = V(COUNT_PAD), .in_zp = V(IN_ZP), .out_zp = V(OUT_ZP),
                         .mult = V(MULT), .shift = V(SHIFT), .act_min = V(CLAMP_LO), .act_max = V(CLAMP_HI)};
    const int8_t *in = (const int8_t *)m->sram + V(SRC);
    int8_t *out = (int8_t *)m->sram + V(DST);
    if (V(ACC_IN) || V(ACC_OUT)) { /* the whole tile's channel sums, carried in psum (tgt_sem_check: avg, int8) */
        uint8_t *psum = m->sram + V(PSUM);
        size_t n = (size_t)V(IH) * (size_t)V(IW);
        for (int32_t ch = 0; ch < p.c; ch++) {
            int64_t sum = V(ACC_IN) ? rd32(psum + 4 * ch) : 0; /* int64: a hostile stream cannot overflow it */
            for (size_t i = 0; i < n; i++)
                sum += in[(size_t)ch * n + i] - p.in_zp;
            if (V(ACC_OUT))
                wr32(psum + 4 * ch, sat32(sum));
            else
                out[ch] = (int8_t)nk_qavg_code(&p, sat32(sum), (int32_t)V(DIVISOR));
        }
        return NPU_OK;
    }
    bool avg = V(MODE) == TGT_POOL_AVG;
    nk_status s = avg ? nk_qavgpool(&p, in, out) : nk_qmaxpool(&p, in, out);
    return kernel_status(m, x, s, avg ? "nk_qavgpool" : "nk_qmaxpool", err);
}

static nk_shape chw(const npum_insn *x, int32_t bc)
{
    return (nk_shape){3, {bc & TGT_BC_C ? 1 : V(C), bc & TGT_BC_H ? 1 : V(H), bc & TGT_BC_W ? 1 : V(W)}};
}

nk_qbin_op npum_elt_op(int64_t op)
{
    static const nk_qbin_op ops[TGT_ELT_COUNT] = {
        [TGT_ELT_ADD] = NK_QADD, [TGT_ELT_SUB] = NK_QSUB, [TGT_ELT_MUL] = NK_QMUL,
        [TGT_ELT_MIN] = NK_QMIN, [TGT_ELT_MAX] = NK_QMAX,
    };
    return ops[op];
}

static npu_status eltwise(npu_model *m, const npum_insn *x, npu_err *err)
{
    nk_qbinary_params p = {.op = npum_elt_op(V(OP)), .a_shape = chw(x, V(A_BC)), .b_shape = chw(x, V(B_BC)),
                           .out_shape = chw(x, 0), .a_zp = V(A_ZP), .b_zp = V(B_ZP), .out_zp = V(OUT_ZP),
                           .a_mult = V(A_MULT), .a_shift = V(A_SHIFT),
                           .b_mult = V(B_MULT), .b_shift = V(B_SHIFT), .out_mult = V(OUT_MULT),
                           .out_shift = V(OUT_SHIFT), .act_min = V(CLAMP_LO), .act_max = V(CLAMP_HI)};
    nk_status s = nk_qbinary(&p, (const int8_t *)m->sram + V(A), (const int8_t *)m->sram + V(B),
                             (int8_t *)m->sram + V(DST));
    return kernel_status(m, x, s, "nk_qbinary", err);
}

static npu_status requant(npu_model *m, const npum_insn *x, npu_err *err)
{
    const int8_t *in = (const int8_t *)m->sram + V(SRC);
    int8_t *out = (int8_t *)m->sram + V(DST);
    if (V(COPY)) {
        memmove(out, in, (size_t)V(LEN));
        return NPU_OK;
    }
    nk_qrequant_params p = {.in_zp = V(IN_ZP), .out_zp = V(OUT_ZP), .mult = V(MULT), .shift = V(SHIFT),
                            .act_min = V(CLAMP_LO), .act_max = V(CLAMP_HI)};
    return kernel_status(m, x, nk_qrequant(&p, in, out, (size_t)V(LEN)), "nk_qrequant", err);
}

/* float32 -> int8 by the one quantizer the host and npuref use */
static npu_status quantize(npu_model *m, const npum_insn *x, npu_err *err)
{
    uint32_t bits = (uint32_t)V(FSCALE);
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    const float *in = (const float *)(void *)(m->sram + V(SRC)); /* 4-aligned: tgt_sem_check */
    nk_status s = nk_quantize_f32_i8(in, (int8_t *)m->sram + V(DST), (size_t)V(LEN), scale, (int32_t)V(OUT_ZP));
    return kernel_status(m, x, s, "nk_quantize_f32_i8", err);
}

void npum_planes_copy(int8_t *dense, uint8_t *sram, int64_t c, int64_t plane, int64_t cs, bool to_sram)
{
    for (int64_t i = 0; i < c; i++) {
        int8_t *d = dense + i * plane;
        uint8_t *s = sram + i * cs;
        if (to_sram)
            memcpy(s, d, (size_t)plane);
        else
            memcpy(d, s, (size_t)plane);
    }
}

/* Where the conv reads its input and writes its int8 output: in SRAM, or
 * with a plane stride a dense copy (the input gathered here, the output
 * scattered by conv_epilogue once the epilogue has run on it). */
static npu_status set_views(npu_model *m, const npum_insn *x, bool dw, bool out8, npu_err *err)
{
    int64_t c_in = dw ? V(C) : V(IC), c_out = dw ? V(C) : V(OC);
    int64_t in_plane = V(IH) * V(IW), out_plane = V(OH) * V(OW);
    m->src_view = (const int8_t *)m->sram + V(SRC), m->dst_view = (int8_t *)m->sram + V(DST);
    if (V(SRC_CS) && V(SRC_CS) != in_plane) {
        int8_t *g = npum_grow(m, m->cs_src, &m->cs_src_cap, 1, (size_t)(c_in * in_plane), 4096);
        if (!g)
            return npu_fail(err, NPU_EINTERNAL, "npu: out of memory for a strided input");
        m->cs_src = g;
        npum_planes_copy(g, m->sram + V(SRC), c_in, in_plane, V(SRC_CS), false);
        m->src_view = g;
    }
    if (out8 && V(DST_CS) && V(DST_CS) != out_plane) {
        int8_t *g = npum_grow(m, m->cs_dst, &m->cs_dst_cap, 1, (size_t)(c_out * out_plane), 4096);
        if (!g)
            return npu_fail(err, NPU_EINTERNAL, "npu: out of memory for a strided output");
        m->cs_dst = g;
        m->dst_view = g;
    }
    return NPU_OK;
}

/* conv/dwconv, then the epilogue on the int8 result (none with acc_out): with epi_elt combined with the
 * operand at b (read before the conv writes), then with epi_lut every output through the table, in place;
 * a strided output goes to its planes last */
static npu_status conv_epilogue(npu_model *m, const npum_insn *x, npu_err *err)
{
    bool dw = m->isa->insns[x->d.insn].sem == TGT_SEM_DWCONV, out8 = dw || !V(ACC_OUT);
    const int8_t *b = NULL;
    int64_t c_out = dw ? V(C) : V(OC), plane = V(OH) * V(OW);
    npu_status st = V(EPI_ELT) && out8 ? npum_epi_elt_read(m, x, &b, err) : NPU_OK;
    if (st == NPU_OK)
        st = set_views(m, x, dw, out8, err);
    if (st == NPU_OK)
        st = conv(m, x, dw, err);
    if (st == NPU_OK && b)
        st = npum_epi_elt_apply(m, x, b, err);
    if (st == NPU_OK && V(EPI_LUT) && out8)
        nk_lut_apply_i8((const int8_t *)m->sram + V(TABLE), m->dst_view, m->dst_view, (size_t)(c_out * plane));
    if (st == NPU_OK && m->dst_view == m->cs_dst)
        npum_planes_copy(m->cs_dst, m->sram + V(DST), c_out, plane, V(DST_CS), true);
    return st;
}

npu_status npum_execute(npu_model *m, const npum_insn *x, npu_err *err)
{
    if (V(A16) || V(IN16))
        return npum_exec_a16(m, x, err);
    switch (m->isa->insns[x->d.insn].sem) {
    case TGT_SEM_DMA_LOAD: return npum_exec_dma(m, x, true, err);
    case TGT_SEM_DMA_STORE: return npum_exec_dma(m, x, false, err);
    case TGT_SEM_CONV:
    case TGT_SEM_DWCONV: return conv_epilogue(m, x, err);
    case TGT_SEM_MATMUL: return matmul(m, x, err);
    case TGT_SEM_POOL: return pool(m, x, err);
    case TGT_SEM_ELTWISE: return eltwise(m, x, err);
    case TGT_SEM_LUT:
        nk_lut_apply_i8((const int8_t *)m->sram + V(TABLE), (const int8_t *)m->sram + V(SRC),
                        (int8_t *)m->sram + V(DST), (size_t)V(LEN));
        return NPU_OK;
    case TGT_SEM_REQUANT: return requant(m, x, err);
    case TGT_SEM_SOFTMAX: return npum_exec_softmax(m, x, err);
    case TGT_SEM_LAYERNORM: return npum_exec_layernorm(m, x, err);
    case TGT_SEM_QUANTIZE: return quantize(m, x, err);
    default: return NPU_OK; /* sync, end: tokens only */
    }
}
