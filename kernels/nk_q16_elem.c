/* A16W8 elementwise kernels (kernels/nk_q16.h): binary ops with numpy
 * broadcast, requantization between int8 and int16, the interpolated
 * 513-entry LUT and the float boundary. */
#include "kernels/nk_q16.h"

#include <math.h>

static int i16_range(int32_t v)
{
    return v >= -32768 && v <= 32767;
}

static int mult_ok(int32_t m, int32_t s)
{
    return m >= 0 && s >= NK_SHIFT_MIN && s <= NK_SHIFT_MAX;
}

nk_status nk_qbinary_prepare_a16(nk_qbinary_params *p, float a_scale, float b_scale, float out_scale)
{
    nk_status st = nk_qbinary_prepare(p, a_scale, b_scale, out_scale);
    if (st != NK_OK || (p->op != NK_QADD && p->op != NK_QSUB))
        return st;
    /* the int8 form keeps the exponents within 22; int16 terms need 14 */
    int lo = p->a_shift < p->b_shift ? 0 : 1;
    int32_t *m = lo ? &p->b_mult : &p->a_mult, *s = lo ? &p->b_shift : &p->a_shift;
    int d = (lo ? p->a_shift : p->b_shift) - *s;
    if (d > NK_QADD16_MAX_DSHIFT) {
        int drop = d - NK_QADD16_MAX_DSHIFT;
        *m = (int32_t)(drop > 32 ? 0 : nk_round_shift_even(*m, drop, 0));
        *s += drop;
    }
    return NK_OK;
}

static int32_t bin1(const nk_qbinary_params *p, int64_t ma, int64_t mb, int e, int32_t a, int32_t b)
{
    switch (p->op) {
    case NK_QADD:
    case NK_QSUB: {
        int64_t v = ((int64_t)a - p->a_zp) * ma + ((int64_t)b - p->b_zp) * mb;
        return nk_sat_i64_i32(nk_round_shift_even(v, 31 - e, 0));
    }
    case NK_QMUL:
        return nk_requantize64(((int64_t)a - p->a_zp) * ((int64_t)b - p->b_zp), p->out_mult, p->out_shift);
    default: {
        int32_t x = nk_requantize(a - p->a_zp, p->a_mult, p->a_shift);
        int32_t y = nk_requantize(b - p->b_zp, p->b_mult, p->b_shift);
        return p->op == NK_QMAX ? (x > y ? x : y) : (x < y ? x : y);
    }
    }
}

/* The element offset into an operand of shape s for the output index idx (rank r). */
static int64_t bcast_off(const nk_shape *s, const int64_t *idx, int r)
{
    int64_t off = 0;
    for (int i = 0; i < s->rank; i++) {
        int d = i + r - s->rank;
        off = off * s->dims[i] + (s->dims[i] == 1 ? 0 : idx[d]);
    }
    return off;
}

static int shapes_ok(const nk_qbinary_params *p)
{
    const nk_shape *o = &p->out_shape;
    if (o->rank < 0 || o->rank > NK_MAX_RANK || p->a_shape.rank > o->rank || p->b_shape.rank > o->rank ||
        p->a_shape.rank < 0 || p->b_shape.rank < 0)
        return 0;
    for (int k = 0; k < 2; k++) {
        const nk_shape *s = k ? &p->b_shape : &p->a_shape;
        for (int i = 0; i < s->rank; i++) {
            int32_t d = s->dims[i], od = o->dims[i + o->rank - s->rank];
            if (d < 0 || (d != od && d != 1))
                return 0;
        }
    }
    for (int i = 0; i < o->rank; i++) { /* out must be the broadcast shape, not a wider one */
        int ia = i - (o->rank - p->a_shape.rank), ib = i - (o->rank - p->b_shape.rank);
        int32_t da = ia >= 0 ? p->a_shape.dims[ia] : 1, db = ib >= 0 ? p->b_shape.dims[ib] : 1;
        if (o->dims[i] != (da == 1 ? db : da))
            return 0;
    }
    return 1;
}

nk_status nk_qbinary_a16(const nk_qbinary_params *p, const int16_t *a, const int16_t *b, int16_t *out)
{
    if (!p || p->op < NK_QADD || p->op > NK_QMAX || p->a_zp || p->b_zp || p->out_zp || p->left_shift ||
        !i16_range(p->act_min) || !i16_range(p->act_max) || p->act_min > p->act_max ||
        !mult_ok(p->a_mult, p->a_shift) || !mult_ok(p->b_mult, p->b_shift) || !mult_ok(p->out_mult, p->out_shift) ||
        !shapes_ok(p))
        return NK_EARG;
    int e = p->a_shift < p->b_shift ? p->a_shift : p->b_shift;
    if ((p->op == NK_QADD || p->op == NK_QSUB) && (p->a_shift - e > NK_QADD16_MAX_DSHIFT ||
                                                   p->b_shift - e > NK_QADD16_MAX_DSHIFT))
        return NK_EARG;
    int64_t ma = (int64_t)p->a_mult * ((int64_t)1 << (p->a_shift - e));
    int64_t mb = (int64_t)p->b_mult * ((int64_t)1 << (p->b_shift - e)) * (p->op == NK_QSUB ? -1 : 1);
    int64_t total = nk_shape_numel(&p->out_shape);
    if (total == 0)
        return NK_OK;
    if (!a || !b || !out)
        return NK_EARG;
    int r = p->out_shape.rank;
    int64_t idx[NK_MAX_RANK] = {0};
    for (int64_t i = 0; i < total; i++) {
        int32_t v = bin1(p, ma, mb, e, a[bcast_off(&p->a_shape, idx, r)], b[bcast_off(&p->b_shape, idx, r)]);
        out[i] = (int16_t)nk_clamp_i32(v, p->act_min, p->act_max);
        for (int d = r - 1; d >= 0 && ++idx[d] == p->out_shape.dims[d]; d--)
            idx[d] = 0;
    }
    return NK_OK;
}

/* ---- requantize between widths -------------------------------------------- */

static int in_type(int32_t v, int bytes)
{
    return bytes == 1 ? v >= -128 && v <= 127 : i16_range(v);
}

nk_status nk_qrequant_x(const nk_qrequant_params *p, const void *in, int in_bytes, void *out, int out_bytes,
                        size_t count)
{
    if (!p || (in_bytes != 1 && in_bytes != 2) || (out_bytes != 1 && out_bytes != 2) || (count && (!in || !out)) ||
        !in_type(p->in_zp, in_bytes) || !in_type(p->out_zp, out_bytes) || !mult_ok(p->mult, p->shift) ||
        !in_type(p->act_min, out_bytes) || !in_type(p->act_max, out_bytes) || p->act_min > p->act_max)
        return NK_EARG;
    for (size_t i = 0; i < count; i++) {
        int32_t x = in_bytes == 1 ? ((const int8_t *)in)[i] : ((const int16_t *)in)[i];
        int32_t v = nk_requant_out(x - p->in_zp, p->mult, p->shift, p->out_zp, p->act_min, p->act_max);
        if (out_bytes == 1)
            ((int8_t *)out)[i] = (int8_t)v;
        else
            ((int16_t *)out)[i] = (int16_t)v;
    }
    return NK_OK;
}

/* ---- LUT -------------------------------------------------------------------- */

void nk_lut_apply_i16(const int16_t *lut, const int16_t *in, int16_t *out, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        int32_t x = in[i], j = (x >> 7) + 256, f = x & 127; /* >> of a negative int is arithmetic (gcc, clang) */
        int32_t base = lut[j], slope = lut[j + 1] - base;
        int32_t v = base + (int32_t)nk_round_shift_even((int64_t)slope * f, 7, 0);
        out[i] = (int16_t)nk_clamp_i32(v, -32768, 32767);
    }
}

nk_status nk_lut_build_i16(int16_t *lut, const float *fv, float out_scale)
{
    if (!lut || !fv || !(out_scale > 0.0f) || !isfinite(out_scale))
        return NK_EARG;
    const double inv = 1.0 / (double)out_scale;
    for (int j = 0; j < NK_LUT16_SIZE; j++) {
        double v = (double)fv[2 * j] * inv, bias = 0.0;
        if (j < NK_LUT16_SIZE - 1) {
            double next = (double)fv[2 * j + 2] * inv, mid = (double)fv[2 * j + 1] * inv;
            double line = (nearbyint(v) + nearbyint(next)) / 2.0;
            bias = nearbyint((line - nearbyint(mid)) / 2.0);
        }
        double q = nearbyint(v - bias);
        q = q == q ? q : 0.0; /* NaN: real 0 */
        lut[j] = (int16_t)(q < -32768.0 ? -32768 : (q > 32767.0 ? 32767 : q));
    }
    return NK_OK;
}

/* ---- float boundary ---------------------------------------------------------- */

nk_status nk_quantize_f32_i16(const float *x, int16_t *q, size_t n, float scale, int32_t zp)
{
    if ((n && (!x || !q)) || !(scale > 0.0f) || !isfinite(scale) || !i16_range(zp))
        return NK_EARG;
    for (size_t i = 0; i < n; i++)
        q[i] = (int16_t)nk_quantize_value(x[i], scale, zp, -32768, 32767);
    return NK_OK;
}

nk_status nk_dequantize_i16_f32(const int16_t *q, float *x, size_t n, float scale, int32_t zp)
{
    if ((n && (!x || !q)) || !(scale > 0.0f) || !isfinite(scale) || !i16_range(zp))
        return NK_EARG;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((int32_t)q[i] - zp) * scale;
    return NK_OK;
}
