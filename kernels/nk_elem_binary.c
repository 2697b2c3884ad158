/* Broadcasting binary ops, comparisons and Where. Each op is one expression
 * over x (from a) and z (from b), expanded into four inner loops by the
 * strides of the innermost dim (vector/vector, vector/scalar, ...) so the
 * compiler can vectorize the common cases. */
#include <math.h>

#include "kernels/nk_math.h"
#include "kernels/nk_elem.h"
#include "kernels/nk_shape_internal.h"

size_t nk_dtype_size(nk_dtype dt)
{
    static const uint8_t size[NK_DT_COUNT] = {4, 2, 8, 4, 2, 1, 1, 1};
    return (unsigned)dt < NK_DT_COUNT ? size[dt] : 0;
}

/* Rows of y = EXPR(x, z); A/B/Y are the element types of the operands. */
#define NK_BIN_ROWS(A, B, Y, EXPR, AFTER_ROW)                                                                  \
    do {                                                                                                      \
        int64_t rows_ = nk_bc_rows(&bc), len_ = bc.dims[bc.rank - 1];                                          \
        int sa_ = bc.str[0][bc.rank - 1] != 0, sb_ = bc.str[1][bc.rank - 1] != 0;                              \
        nk_bc_it it_;                                                                                         \
        nk_bc_begin(&it_);                                                                                    \
        for (int64_t r_ = 0; r_ < rows_; r_++) {                                                              \
            const A *pa_ = (const A *)a + it_.off[0];                                                         \
            const B *pb_ = (const B *)b + it_.off[1];                                                         \
            Y *py_ = (Y *)y + r_ * len_;                                                                      \
            if (sa_ && sb_) {                                                                                 \
                for (int64_t i_ = 0; i_ < len_; i_++) {                                                       \
                    A x = pa_[i_];                                                                            \
                    B z = pb_[i_];                                                                            \
                    py_[i_] = (EXPR);                                                                         \
                }                                                                                             \
            } else if (sa_) {                                                                                 \
                B z = pb_[0];                                                                                 \
                for (int64_t i_ = 0; i_ < len_; i_++) {                                                       \
                    A x = pa_[i_];                                                                            \
                    py_[i_] = (EXPR);                                                                         \
                }                                                                                             \
            } else if (sb_) {                                                                                 \
                A x = pa_[0];                                                                                 \
                for (int64_t i_ = 0; i_ < len_; i_++) {                                                       \
                    B z = pb_[i_];                                                                            \
                    py_[i_] = (EXPR);                                                                         \
                }                                                                                             \
            } else {                                                                                          \
                A x = pa_[0];                                                                                 \
                B z = pb_[0];                                                                                 \
                Y v_ = (EXPR);                                                                                \
                for (int64_t i_ = 0; i_ < len_; i_++)                                                         \
                    py_[i_] = v_;                                                                             \
            }                                                                                                 \
            AFTER_ROW(py_, len_);                                                                             \
            nk_bc_next(&bc, &it_);                                                                            \
        }                                                                                                     \
    } while (0)

#define NK_NO_AFTER(p, n) (void)0
#define NK_ACT_AFTER(p, n)                                                                                    \
    do {                                                                                                      \
        if (act.kind != NK_ACT_NONE)                                                                          \
            for (int64_t k_ = 0; k_ < (n); k_++)                                                              \
                (p)[k_] = nk_act_apply(act, (p)[k_]);                                                         \
    } while (0)

static nk_status bc2(nk_bc *bc, const nk_shape *as, const nk_shape *bs, const nk_shape *ys)
{
    const nk_shape *in[2] = {as, bs};
    return nk_bc_init(bc, ys, 2, in);
}

/* Same-shape Add/Sub/Mul and the activation in one pass, 16 at a time so
 * that the selects vectorize (a residual Add + Relu was two passes, the
 * activation's switch per element). The same operations in the same order
 * as the general loop: the same bits. */
#define NK_DENSE_LOOP(EXPR)                                                                                   \
    do {                                                                                                      \
        int64_t i_ = 0;                                                                                       \
        for (; i_ + 16 <= n; i_ += 16)                                                                        \
            for (int j_ = 0; j_ < 16; j_++) {                                                                 \
                float v_ = EXPR(a[i_ + j_], b[i_ + j_]);                                                    \
                v_ = relu ? nk_relu(v_) : clip ? nk_clip(v_, lo, hi) : v_;                                      \
                y[i_ + j_] = v_;                                                                              \
            }                                                                                                 \
        for (; i_ < n; i_++)                                                                                  \
            y[i_] = nk_act_apply(act, EXPR(a[i_], b[i_]));                                                  \
    } while (0)
#define NK_F_ADD(x, z) ((x) + (z))
#define NK_F_SUB(x, z) ((x) - (z))
#define NK_F_MUL(x, z) ((x) * (z))

NK_HOT_CLONES static int bin_dense_f32(nk_binop op, nk_act act, int64_t n, const float *a, const float *b, float *y)
{
    const int relu = act.kind == NK_ACT_RELU, clip = act.kind == NK_ACT_CLIP;
    const float lo = act.lo, hi = act.hi;
    if (!relu && !clip && act.kind != NK_ACT_NONE)
        return 0;
    switch (op) {
    case NK_BIN_ADD: NK_DENSE_LOOP(NK_F_ADD); return 1;
    case NK_BIN_SUB: NK_DENSE_LOOP(NK_F_SUB); return 1;
    case NK_BIN_MUL: NK_DENSE_LOOP(NK_F_MUL); return 1;
    default: return 0;
    }
}
#undef NK_DENSE_LOOP

nk_status nk_binary_f32(const nk_binary_params *p, const nk_shape *a_shape, const float *a,
                        const nk_shape *b_shape, const float *b, const nk_shape *y_shape, float *y)
{
    nk_bc bc;
    nk_status st = bc2(&bc, a_shape, b_shape, y_shape);
    if (st != NK_OK)
        return st;
    nk_act act = p->act;
    if (bc.rank == 1 && bc.str[0][0] == 1 && bc.str[1][0] == 1 && bin_dense_f32(p->op, act, bc.dims[0], a, b, y))
        return NK_OK;
    switch (p->op) {
    case NK_BIN_ADD: NK_BIN_ROWS(float, float, float, x + z, NK_ACT_AFTER); break;
    case NK_BIN_SUB: NK_BIN_ROWS(float, float, float, x - z, NK_ACT_AFTER); break;
    case NK_BIN_MUL: NK_BIN_ROWS(float, float, float, x * z, NK_ACT_AFTER); break;
    case NK_BIN_DIV: NK_BIN_ROWS(float, float, float, x / z, NK_ACT_AFTER); break;
    case NK_BIN_POW: NK_BIN_ROWS(float, float, float, nk_powf(x, z), NK_ACT_AFTER); break;
    case NK_BIN_MAX: NK_BIN_ROWS(float, float, float, (x > z || x != x) ? x : z, NK_ACT_AFTER); break;
    case NK_BIN_MIN: NK_BIN_ROWS(float, float, float, (x < z || x != x) ? x : z, NK_ACT_AFTER); break;
    case NK_BIN_PRELU: NK_BIN_ROWS(float, float, float, x < 0.0f ? z * x : x, NK_ACT_AFTER); break;
    default: return NK_EUNSUPPORTED;
    }
    return NK_OK;
}

/* x^e by squaring, wrapping like the other integer ops. A negative exponent
 * truncates 1/x^-e toward zero as onnxruntime's cast of pow() does (0^-e is
 * the cast of inf: the type's minimum). */
static uint64_t nk_ipow(int64_t x, int64_t e, int64_t tmin)
{
    if (e < 0)
        return x == 1 ? 1u : x == -1 ? ((e & 1) ? ~0ull : 1u) : x == 0 ? (uint64_t)tmin : 0u;
    uint64_t r = 1, b = (uint64_t)x;
    for (; e; e >>= 1, b *= b)
        if (e & 1)
            r *= b;
    return r;
}

/* One integer type: T wraps through the unsigned type U. */
#define NK_DEFINE_BIN_INT(NAME, T, U, TMIN, SIGNED)                                                            \
    static nk_status NAME(nk_binop op, const nk_bc *bcp, int64_t nb, const T *a, const T *b, T *y)            \
    {                                                                                                         \
        nk_bc bc = *bcp;                                                                                      \
        switch (op) {                                                                                         \
        case NK_BIN_ADD: NK_BIN_ROWS(T, T, T, (T)((U)x + (U)z), NK_NO_AFTER); break;                           \
        case NK_BIN_SUB: NK_BIN_ROWS(T, T, T, (T)((U)x - (U)z), NK_NO_AFTER); break;                           \
        case NK_BIN_MUL: NK_BIN_ROWS(T, T, T, (T)((U)x * (U)z), NK_NO_AFTER); break;                           \
        case NK_BIN_DIV:                                                                                      \
            for (int64_t i = 0; i < nb; i++)                                                                  \
                if (b[i] == 0)                                                                                \
                    return NK_EARG;                                                                           \
            NK_BIN_ROWS(T, T, T, ((SIGNED) && x == (TMIN) && z == (T)-1) ? x : (T)(x / z), NK_NO_AFTER);      \
            break;                                                                                            \
        case NK_BIN_POW: NK_BIN_ROWS(T, T, T, (T)nk_ipow(x, z, TMIN), NK_NO_AFTER); break;                    \
        case NK_BIN_MAX: NK_BIN_ROWS(T, T, T, x > z ? x : z, NK_NO_AFTER); break;                             \
        case NK_BIN_MIN: NK_BIN_ROWS(T, T, T, x < z ? x : z, NK_NO_AFTER); break;                             \
        default: return NK_EUNSUPPORTED;                                                                      \
        }                                                                                                     \
        return NK_OK;                                                                                         \
    }

NK_DEFINE_BIN_INT(bin_i64, int64_t, uint64_t, INT64_MIN, 1)
NK_DEFINE_BIN_INT(bin_i32, int32_t, uint32_t, INT32_MIN, 1)
NK_DEFINE_BIN_INT(bin_i16, int16_t, uint32_t, INT16_MIN, 1)
NK_DEFINE_BIN_INT(bin_i8, int8_t, uint32_t, INT8_MIN, 1)
NK_DEFINE_BIN_INT(bin_u8, uint8_t, uint32_t, 0, 0) /* INT_MIN / -1 is a signed case */

nk_status nk_binary_int(const nk_binary_params *p, nk_dtype dt, const nk_shape *a_shape, const void *a,
                        const nk_shape *b_shape, const void *b, const nk_shape *y_shape, void *y)
{
    nk_bc bc;
    nk_status st = bc2(&bc, a_shape, b_shape, y_shape);
    if (st != NK_OK)
        return st;
    int64_t nb = nk_shape_numel(b_shape);
    switch (dt) {
    case NK_DT_I64: return bin_i64(p->op, &bc, nb, a, b, y);
    case NK_DT_I32: return bin_i32(p->op, &bc, nb, a, b, y);
    case NK_DT_I16: return bin_i16(p->op, &bc, nb, a, b, y);
    case NK_DT_I8: return bin_i8(p->op, &bc, nb, a, b, y);
    case NK_DT_U8: return bin_u8(p->op, &bc, nb, a, b, y);
    default: return NK_EUNSUPPORTED;
    }
}

#define NK_CMP(T)                                                                                              \
    switch (op) {                                                                                             \
    case NK_CMP_EQUAL: NK_BIN_ROWS(T, T, uint8_t, (uint8_t)(x == z), NK_NO_AFTER); break;                      \
    case NK_CMP_LESS: NK_BIN_ROWS(T, T, uint8_t, (uint8_t)(x < z), NK_NO_AFTER); break;                        \
    case NK_CMP_GREATER: NK_BIN_ROWS(T, T, uint8_t, (uint8_t)(x > z), NK_NO_AFTER); break;                     \
    default: return NK_EUNSUPPORTED;                                                                          \
    }                                                                                                         \
    break

nk_status nk_compare(nk_cmpop op, nk_dtype dt, const nk_shape *a_shape, const void *a, const nk_shape *b_shape,
                     const void *b, const nk_shape *y_shape, uint8_t *y)
{
    nk_bc bc;
    nk_status st = bc2(&bc, a_shape, b_shape, y_shape);
    if (st != NK_OK)
        return st;
    switch (dt) {
    case NK_DT_F32: NK_CMP(float);
    case NK_DT_I64: NK_CMP(int64_t);
    case NK_DT_I32: NK_CMP(int32_t);
    case NK_DT_I8: NK_CMP(int8_t);
    case NK_DT_U8:
    case NK_DT_BOOL: NK_CMP(uint8_t);
    default: return NK_EUNSUPPORTED;
    }
    return NK_OK;
}

/* One row of Where for element type T. */
#define NK_WHERE_ROW(T)                                                                                        \
    for (int64_t i = 0; i < len; i++)                                                                         \
        ((T *)py)[i] = pc[i * sc] ? ((const T *)pa)[i * sa] : ((const T *)pb)[i * sb];                        \
    break

nk_status nk_where(size_t elem_size, const nk_shape *c_shape, const uint8_t *cond, const nk_shape *a_shape,
                   const void *a, const nk_shape *b_shape, const void *b, const nk_shape *y_shape, void *y)
{
    if (!nk_elem_size_ok(elem_size))
        return NK_EARG;
    nk_bc bc;
    const nk_shape *in[3] = {c_shape, a_shape, b_shape};
    nk_status st = nk_bc_init(&bc, y_shape, 3, in);
    if (st != NK_OK)
        return st;
    int64_t rows = nk_bc_rows(&bc), len = bc.dims[bc.rank - 1];
    int64_t sc = bc.str[0][bc.rank - 1], sa = bc.str[1][bc.rank - 1], sb = bc.str[2][bc.rank - 1];
    nk_bc_it it;
    nk_bc_begin(&it);
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *pc = cond + it.off[0];
        const uint8_t *pa = (const uint8_t *)a + (size_t)it.off[1] * elem_size;
        const uint8_t *pb = (const uint8_t *)b + (size_t)it.off[2] * elem_size;
        uint8_t *py = (uint8_t *)y + (size_t)(r * len) * elem_size;
        if (sc == 0) {
            /* one condition for the whole row: a plain copy */
            if (pc[0])
                nk_copy_strided(py, pa, len, sa, elem_size);
            else
                nk_copy_strided(py, pb, len, sb, elem_size);
        } else {
            switch (elem_size) {
            case 1: NK_WHERE_ROW(uint8_t);
            case 2: NK_WHERE_ROW(uint16_t);
            case 4: NK_WHERE_ROW(uint32_t);
            default: NK_WHERE_ROW(uint64_t);
            }
        }
        nk_bc_next(&bc, &it);
    }
    return NK_OK;
}
