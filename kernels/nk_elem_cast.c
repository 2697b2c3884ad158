/* Cast between f32, f16, i64, i32, i16, i8, u8 and bool, and the IEEE half
 * conversions. Elements go through a small chunk of float (float sources) or
 * int64 (integer sources) so each loop has one type pair. */
#include <string.h>

#include "kernels/nk_elem.h"

uint16_t nk_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* NaN stays a quiet NaN */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) /* >= 65520 rounds to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: a subnormal half (or zero) */
        if (ax < 0x33000000u) /* <= 2^-25 rounds (to even) to zero */
            return sign;
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* value / 2^-24 = m * 2^(e - 126) */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t h = ((ax >> 23) - 112) << 10 | ((ax >> 13) & 0x3ffu);
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is the right result */
    return (uint16_t)(sign | h);
}

float nk_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, bits;
    if (e == 0 && m == 0) {
        bits = sign;
    } else if (e == 0) {
        e = 113;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        bits = sign | e << 23 | (m & 0x3ffu) << 13;
    } else if (e == 31) {
        bits = sign | 0x7f800000u | m << 13;
    } else {
        bits = sign | (e + 112) << 23 | m << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* cvttss2si semantics: out of range and NaN give the minimum. */
static int64_t f_to_i64(float f)
{
    return f >= -9223372036854775808.0f && f < 9223372036854775808.0f ? (int64_t)f : INT64_MIN;
}

static int32_t f_to_i32(float f)
{
    return f > -2147483904.0f && f < 2147483648.0f ? (int32_t)f : INT32_MIN;
}

enum { CHUNK = 64 }; /* keeps the stack small on the firmware */

static void load_float(nk_dtype dt, const void *x, int64_t i0, int n, float *v)
{
    if (dt == NK_DT_F32)
        memcpy(v, (const float *)x + i0, sizeof(float) * (size_t)n);
    else
        for (int i = 0; i < n; i++)
            v[i] = nk_f16_to_f32(((const uint16_t *)x)[i0 + i]);
}

static void load_int(nk_dtype dt, const void *x, int64_t i0, int n, int64_t *v)
{
    switch (dt) {
#define L(T)                                                                                                   \
    for (int i = 0; i < n; i++)                                                                               \
        v[i] = ((const T *)x)[i0 + i];                                                                        \
    break
    case NK_DT_I64: L(int64_t);
    case NK_DT_I32: L(int32_t);
    case NK_DT_I16: L(int16_t);
    case NK_DT_I8: L(int8_t);
    default: L(uint8_t); /* U8, BOOL */
#undef L
    }
}

static void store_float(nk_dtype dt, const float *v, int n, void *y, int64_t i0)
{
    switch (dt) {
#define S(T, EXPR)                                                                                             \
    for (int i = 0; i < n; i++)                                                                               \
        ((T *)y)[i0 + i] = (EXPR);                                                                            \
    break
    case NK_DT_F32: S(float, v[i]);
    case NK_DT_F16: S(uint16_t, nk_f32_to_f16(v[i]));
    case NK_DT_I64: S(int64_t, f_to_i64(v[i]));
    case NK_DT_I32: S(int32_t, f_to_i32(v[i]));
    case NK_DT_I16: S(int16_t, (int16_t)(uint16_t)(uint32_t)f_to_i32(v[i]));
    case NK_DT_I8: S(int8_t, (int8_t)(uint8_t)(uint32_t)f_to_i32(v[i]));
    case NK_DT_U8: S(uint8_t, (uint8_t)(uint32_t)f_to_i32(v[i]));
    default: S(uint8_t, (uint8_t)(v[i] != 0.0f)); /* BOOL: NaN is true */
    }
}

static void store_int(nk_dtype dt, const int64_t *v, int n, void *y, int64_t i0)
{
    switch (dt) {
    case NK_DT_F32: S(float, (float)v[i]);
    case NK_DT_F16: S(uint16_t, nk_f32_to_f16((float)v[i]));
    case NK_DT_I64: S(int64_t, v[i]);
    case NK_DT_I32: S(int32_t, (int32_t)(uint32_t)(uint64_t)v[i]);
    case NK_DT_I16: S(int16_t, (int16_t)(uint16_t)(uint64_t)v[i]);
    case NK_DT_I8: S(int8_t, (int8_t)(uint8_t)(uint64_t)v[i]);
    case NK_DT_U8: S(uint8_t, (uint8_t)(uint64_t)v[i]);
    default: S(uint8_t, (uint8_t)(v[i] != 0));
#undef S
    }
}

nk_status nk_cast(nk_dtype from, const void *x, nk_dtype to, void *y, int64_t n)
{
    if ((unsigned)from >= NK_DT_COUNT || (unsigned)to >= NK_DT_COUNT || n < 0)
        return NK_EARG;
    if (from == to) {
        if (x != y)
            memmove(y, x, (size_t)n * nk_dtype_size(from));
        return NK_OK;
    }
    int is_float = from == NK_DT_F32 || from == NK_DT_F16;
    float fv[CHUNK];
    int64_t iv[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int c = n - i0 < CHUNK ? (int)(n - i0) : CHUNK;
        if (is_float) {
            load_float(from, x, i0, c, fv);
            store_float(to, fv, c, y, i0);
        } else {
            load_int(from, x, i0, c, iv);
            store_int(to, iv, c, y, i0);
        }
    }
    return NK_OK;
}
