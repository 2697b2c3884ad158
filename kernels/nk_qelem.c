/* int8 elementwise add, sub, mul, min, max with numpy broadcasting.
 *
 * The shapes are right-aligned and collapsed into as few dimensions as
 * possible (runs of dims that are contiguous in both inputs, or broadcast in
 * both, merge), so the common cases (equal shapes; a [1,C,1,1] operand) run as
 * long rows with an input stride of 1 or 0. The op is chosen once per row. */
#include "kernels/nk_quant.h"

/* The reference build is -O2; these loops need the vectorizer. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE_SIZE__)
#pragma GCC optimize("O3")
#endif

static int i8_range(int32_t v)
{
    return v >= -128 && v <= 127;
}

/* Brings the two add multipliers within NK_QADD_MAX_DSHIFT exponents of each
 * other, so the kernel can sum them exactly: a flushed (zero) one takes the
 * other's exponent; otherwise the smaller mantissa is rounded to the larger
 * exponent minus the limit (it then weighs < 2^-22 of the larger one). */
static void common_exponent(int32_t m[2], int s[2])
{
    for (int i = 0; i < 2; i++)
        if (m[i] == 0)
            s[i] = s[1 - i];
    int lo = s[0] < s[1] ? 0 : 1, d = s[1 - lo] - s[lo];
    if (d <= NK_QADD_MAX_DSHIFT)
        return;
    int drop = d - NK_QADD_MAX_DSHIFT;
    int64_t v = drop > 32 ? 0 : nk_round_shift_even(m[lo], drop, 0);
    m[lo] = (int32_t)v;
    s[lo] += drop;
}

nk_status nk_qbinary_prepare(nk_qbinary_params *p, float a_scale, float b_scale, float out_scale)
{
    if (!p || !(a_scale > 0.0f) || !(b_scale > 0.0f) || !(out_scale > 0.0f))
        return NK_EARG;
    int32_t m[3] = {0, 0, 0};
    int s[3] = {0, 0, 0};
    double r[3];
    switch (p->op) {
    case NK_QADD:
    case NK_QSUB:
        r[0] = (double)a_scale / (double)out_scale;
        r[1] = (double)b_scale / (double)out_scale;
        r[2] = 0.0;
        break;
    case NK_QMUL:
        r[0] = r[1] = 0.0;
        r[2] = (double)a_scale * (double)b_scale / (double)out_scale;
        break;
    case NK_QMIN:
    case NK_QMAX:
        r[0] = (double)a_scale / (double)out_scale;
        r[1] = (double)b_scale / (double)out_scale;
        r[2] = 0.0;
        break;
    default:
        return NK_EARG;
    }
    for (int i = 0; i < 3; i++) {
        nk_status st = nk_quantize_multiplier(r[i], &m[i], &s[i]);
        if (st != NK_OK)
            return st;
    }
    if (p->op == NK_QADD || p->op == NK_QSUB)
        common_exponent(m, s);
    p->left_shift = 0;
    p->a_mult = m[0];
    p->a_shift = s[0];
    p->b_mult = m[1];
    p->b_shift = s[1];
    p->out_mult = m[2];
    p->out_shift = s[2];
    return NK_OK;
}

static int mult_ok(int32_t m, int32_t s)
{
    return m >= 0 && s >= NK_SHIFT_MIN && s <= NK_SHIFT_MAX;
}

/* Collapsed broadcast iteration space: dims[0..rank), element strides of a and b. */
typedef struct bcast {
    int rank;
    int64_t dims[NK_MAX_RANK];
    int64_t sa[NK_MAX_RANK], sb[NK_MAX_RANK];
} bcast;

static int shape_ok(const nk_shape *s)
{
    if (s->rank < 0 || s->rank > NK_MAX_RANK)
        return 0;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] < 0)
            return 0;
    return 1;
}

static int make_bcast(const nk_qbinary_params *p, bcast *bc)
{
    const nk_shape *a = &p->a_shape, *b = &p->b_shape, *o = &p->out_shape;
    if (!shape_ok(a) || !shape_ok(b) || !shape_ok(o) || a->rank > o->rank || b->rank > o->rank)
        return 0;
    int R = o->rank;
    int64_t da[NK_MAX_RANK], db[NK_MAX_RANK], sa[NK_MAX_RANK], sb[NK_MAX_RANK];
    for (int i = 0; i < R; i++) {
        int ia = i - (R - a->rank), ib = i - (R - b->rank);
        da[i] = ia >= 0 ? a->dims[ia] : 1;
        db[i] = ib >= 0 ? b->dims[ib] : 1;
        int64_t d = o->dims[i];
        if ((da[i] != d && da[i] != 1) || (db[i] != d && db[i] != 1))
            return 0;
        if (d != (da[i] == 1 ? db[i] : da[i])) /* out must be the broadcast shape, not a wider one */
            return 0;
    }
    int64_t ra = 1, rb = 1;
    for (int i = R - 1; i >= 0; i--) {
        sa[i] = da[i] == 1 ? 0 : ra;
        sb[i] = db[i] == 1 ? 0 : rb;
        ra *= da[i];
        rb *= db[i];
    }
    /* merge from the innermost dim outward, dropping size-1 dims */
    bc->rank = 0;
    for (int i = R - 1; i >= 0; i--) {
        int64_t d = o->dims[i];
        if (d == 1)
            continue;
        int k = bc->rank - 1;
        if (k >= 0 && sa[i] == bc->sa[k] * bc->dims[k] && sb[i] == bc->sb[k] * bc->dims[k]) {
            bc->dims[k] *= d; /* contiguous (or broadcast) in both: one longer dim */
            continue;
        }
        bc->dims[bc->rank] = d;
        bc->sa[bc->rank] = sa[i];
        bc->sb[bc->rank] = sb[i];
        bc->rank++;
    }
    /* stored innermost first; a scalar gets one dim of 1 */
    if (bc->rank == 0) {
        bc->rank = 1;
        bc->dims[0] = 1;
        bc->sa[0] = bc->sb[0] = 0;
    }
    return 1;
}

/* Add/sub of two dense rows, the residual connections' case: the same
 * arithmetic as row's, in a loop of unit strides that vectorizes (int64
 * lanes, exact). Host builds only: the firmware keeps the one loop (its
 * size, and the simulated cycles of its host steps). */
#ifndef __riscv
NK_HOT_VEC static void add_dense(const nk_qbinary_params *p, int64_t ma, int64_t mb, int e, const int8_t *a,
                                 const int8_t *b, int8_t *o, int64_t len)
{
    const int64_t az = p->a_zp, bz = p->b_zp, oz = p->out_zp, lo = p->act_min, hi = p->act_max;
    for (int64_t i = 0; i < len; i++) {
        int64_t v = ((int64_t)a[i] - az) * ma + ((int64_t)b[i] - bz) * mb;
        int64_t q = (int64_t)nk_sat_i64_i32(nk_round_shift_even(v, 31 - e, 0)) + oz;
        o[i] = (int8_t)(q < lo ? lo : (q > hi ? hi : q));
    }
}
#endif

/* One row of len outputs; a and b advance by sa and sb (0 or 1). */
static void row(const nk_qbinary_params *p, const int8_t *a, int64_t sa, const int8_t *b, int64_t sb, int8_t *o,
                int64_t len)
{
    switch (p->op) {
    case NK_QADD:
    case NK_QSUB: {
        /* both terms on the smaller exponent e: exact int64, one rounding */
        int e = p->a_shift < p->b_shift ? p->a_shift : p->b_shift;
        int64_t ma = (int64_t)p->a_mult * ((int64_t)1 << (p->a_shift - e));
        int64_t mb = (int64_t)p->b_mult * ((int64_t)1 << (p->b_shift - e)) * (p->op == NK_QSUB ? -1 : 1);
#ifndef __riscv
        if (sa == 1 && sb == 1) {
            add_dense(p, ma, mb, e, a, b, o, len);
            break;
        }
#endif
        for (int64_t i = 0; i < len; i++) {
            int64_t v = ((int64_t)a[i * sa] - p->a_zp) * ma + ((int64_t)b[i * sb] - p->b_zp) * mb;
            int64_t q = (int64_t)nk_sat_i64_i32(nk_round_shift_even(v, 31 - e, 0)) + p->out_zp;
            o[i] = (int8_t)(q < p->act_min ? p->act_min : (q > p->act_max ? p->act_max : q));
        }
        break;
    }
    case NK_QMUL:
        for (int64_t i = 0; i < len; i++) {
            int32_t prod = ((int32_t)a[i * sa] - p->a_zp) * ((int32_t)b[i * sb] - p->b_zp);
            o[i] = (int8_t)nk_requant_out(prod, p->out_mult, p->out_shift, p->out_zp, p->act_min, p->act_max);
        }
        break;
    case NK_QMIN:
    case NK_QMAX: {
        int is_max = p->op == NK_QMAX;
        for (int64_t i = 0; i < len; i++) {
            int32_t x = nk_requant_out(a[i * sa] - p->a_zp, p->a_mult, p->a_shift, p->out_zp, -128, 127);
            int32_t y = nk_requant_out(b[i * sb] - p->b_zp, p->b_mult, p->b_shift, p->out_zp, -128, 127);
            int32_t v = is_max ? (x > y ? x : y) : (x < y ? x : y);
            o[i] = (int8_t)nk_clamp_i32(v, p->act_min, p->act_max);
        }
        break;
    }
    }
}

nk_status nk_qbinary(const nk_qbinary_params *p, const int8_t *a, const int8_t *b, int8_t *out)
{
    bcast bc;
    if (!p || (p->op != NK_QADD && p->op != NK_QSUB && p->op != NK_QMUL && p->op != NK_QMIN && p->op != NK_QMAX) ||
        !i8_range(p->a_zp) || !i8_range(p->b_zp) || !i8_range(p->out_zp) || !i8_range(p->act_min) ||
        !i8_range(p->act_max) || p->act_min > p->act_max || p->left_shift != 0 ||
        !mult_ok(p->out_mult, p->out_shift) || !mult_ok(p->a_mult, p->a_shift) || !mult_ok(p->b_mult, p->b_shift) ||
        !make_bcast(p, &bc))
        return NK_EARG;
    if ((p->op == NK_QADD || p->op == NK_QSUB) &&
        (p->a_shift - p->b_shift > NK_QADD_MAX_DSHIFT || p->b_shift - p->a_shift > NK_QADD_MAX_DSHIFT))
        return NK_EARG;
    int64_t total = nk_shape_numel(&p->out_shape);
    if (total == 0)
        return NK_OK;
    if (!a || !b || !out)
        return NK_EARG;
    /* odometer over the outer dims (1..rank), rows along dim 0 */
    int64_t idx[NK_MAX_RANK] = {0};
    int64_t oa = 0, ob = 0, len = bc.dims[0];
    for (int64_t done = 0; done < total; done += len) {
        row(p, a + oa, bc.sa[0], b + ob, bc.sb[0], out + done, len);
        for (int d = 1; d < bc.rank; d++) {
            oa += bc.sa[d];
            ob += bc.sb[d];
            if (++idx[d] < bc.dims[d])
                break;
            oa -= bc.sa[d] * bc.dims[d];
            ob -= bc.sb[d] * bc.dims[d];
            idx[d] = 0;
        }
    }
    return NK_OK;
}
