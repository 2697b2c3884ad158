/* Elementwise kernels against naive implementations written here (index
 * arithmetic per output element, double-precision math) and hand-computed
 * values; then the adapters (src/ref/ops_elem.c) through ref_eval_node. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ref/ref.h"
#include "tests/support/testgraph.h"

#define S tg_shape

/* Flat index into `in` of the element broadcast to flat output index o. */
static int64_t bidx(const nk_shape *in, const nk_shape *out, int64_t o)
{
    int64_t idx = 0, mul = 1;
    for (int d = out->rank - 1; d >= 0; d--) {
        int64_t c = o % out->dims[d];
        o /= out->dims[d];
        int di = d - (out->rank - in->rank);
        if (di >= 0) {
            idx += (in->dims[di] == 1 ? 0 : c) * mul;
            mul *= in->dims[di];
        }
    }
    return idx;
}

static uint32_t rng_state = 12345;
static uint32_t rnd(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}
static float rndf(void)
{
    return (float)(rnd() % 2001) / 100.0f - 10.0f; /* -10 .. 10 in steps of 0.01 */
}

typedef struct {
    nk_shape a, b, y;
} bcase;

static const bcase *bcases(int *n)
{
    static bcase c[16];
    int k = 0;
    c[k++] = (bcase){S(3, 2, 3, 4), S(3, 2, 3, 4), S(3, 2, 3, 4)};
    c[k++] = (bcase){S(3, 2, 3, 4), S(1, 4), S(3, 2, 3, 4)};
    c[k++] = (bcase){S(3, 2, 3, 4), S(2, 3, 1), S(3, 2, 3, 4)};
    c[k++] = (bcase){S(4, 1, 3, 1, 5), S(4, 2, 1, 4, 1), S(4, 2, 3, 4, 5)};
    c[k++] = (bcase){S(0), S(2, 2, 2), S(2, 2, 2)};
    c[k++] = (bcase){S(2, 2, 2), S(0), S(2, 2, 2)};
    c[k++] = (bcase){S(1, 5), S(1, 1), S(1, 5)};
    c[k++] = (bcase){S(3, 2, 1, 3), S(3, 1, 4, 1), S(3, 2, 4, 3)};
    c[k++] = (bcase){S(2, 0, 3), S(1, 3), S(2, 0, 3)};
    c[k++] = (bcase){S(4, 1, 8, 1, 1), S(4, 2, 8, 5, 5), S(4, 2, 8, 5, 5)};
    c[k++] = (bcase){S(2, 3, 37), S(1, 37), S(2, 3, 37)};
    c[k++] = (bcase){S(0), S(0), S(0)};
    c[k++] = (bcase){S(3, 2, 4, 1), S(3, 1, 1, 6), S(3, 2, 4, 6)};
    c[k++] = (bcase){S(3, 2, 4, 1), S(4, 3, 1, 1, 6), S(4, 3, 2, 4, 6)};
    *n = k;
    return c;
}

static float ref_f(nk_binop op, float x, float z)
{
    switch (op) {
    case NK_BIN_ADD: return x + z;
    case NK_BIN_SUB: return x - z;
    case NK_BIN_MUL: return x * z;
    case NK_BIN_DIV: return x / z;
    case NK_BIN_POW: return (float)pow(x, z);
    case NK_BIN_MAX: return isnan(x) || isnan(z) ? NAN : (x > z ? x : z);
    case NK_BIN_MIN: return isnan(x) || isnan(z) ? NAN : (x < z ? x : z);
    default: return x >= 0 ? x : x * z;
    }
}

Test(kernels_elem, binary_f32_broadcasts_like_numpy)
{
    int nc;
    const bcase *c = bcases(&nc);
    for (int op = NK_BIN_ADD; op <= NK_BIN_PRELU; op++)
        for (int i = 0; i < nc; i++) {
            int64_t na = nk_shape_numel(&c[i].a), nb = nk_shape_numel(&c[i].b), ny = nk_shape_numel(&c[i].y);
            float a[1200], b[1200], y[1200];
            for (int64_t k = 0; k < na; k++)
                a[k] = op == NK_BIN_POW ? fabsf(rndf()) / 4 : rndf();
            for (int64_t k = 0; k < nb; k++)
                b[k] = op == NK_BIN_POW ? (float)(rnd() % 5) - 2 : rndf();
            nk_binary_params p = {(nk_binop)op, {NK_ACT_NONE, 0, 0, 0}};
            cr_assert_eq(nk_binary_f32(&p, &c[i].a, a, &c[i].b, b, &c[i].y, y), NK_OK, "op %d case %d", op, i);
            for (int64_t k = 0; k < ny; k++) {
                float e = ref_f((nk_binop)op, a[bidx(&c[i].a, &c[i].y, k)], b[bidx(&c[i].b, &c[i].y, k)]);
                cr_assert(y[k] == e || fabsf(y[k] - e) <= 1e-6f * fabsf(e) || (isnan(e) && isnan(y[k])),
                          "op %d case %d at %lld: %g vs %g", op, i, (long long)k, y[k], e);
            }
        }
}

Test(kernels_elem, binary_rejects_shapes_that_do_not_broadcast)
{
    nk_shape a = S(2, 2, 3), b = S(1, 2), y = S(2, 2, 3);
    float buf[8] = {0}, out[8];
    nk_binary_params p = {NK_BIN_ADD, {NK_ACT_NONE, 0, 0, 0}};
    cr_assert_eq(nk_binary_f32(&p, &a, buf, &b, buf, &y, out), NK_EARG);
    nk_shape b2 = S(1, 3), y2 = S(2, 3, 3);
    cr_assert_eq(nk_binary_f32(&p, &a, buf, &b2, buf, &y2, out), NK_EARG);
    nk_shape r;
    cr_assert_eq(nk_shape_broadcast(&a, &b, &r), NK_EARG);
    nk_shape c = S(3, 4, 1, 3), d = S(2, 5, 1);
    cr_assert_eq(nk_shape_broadcast(&c, &d, &r), NK_OK);
    cr_assert(r.rank == 3 && r.dims[0] == 4 && r.dims[1] == 5 && r.dims[2] == 3);
}

Test(kernels_elem, binary_nan_propagates_through_max_min_and_act_fuses)
{
    nk_shape s = S(1, 4);
    float a[4] = {NAN, 1, -3, 2}, b[4] = {1, NAN, 5, -7}, y[4];
    nk_binary_params p = {NK_BIN_MAX, {NK_ACT_NONE, 0, 0, 0}};
    nk_binary_f32(&p, &s, a, &s, b, &s, y);
    cr_assert(isnan(y[0]) && isnan(y[1]));
    cr_assert_eq(y[2], 5);
    p.op = NK_BIN_MIN;
    nk_binary_f32(&p, &s, a, &s, b, &s, y);
    cr_assert(isnan(y[0]) && isnan(y[1]));
    cr_assert_eq(y[3], -7);
    p = (nk_binary_params){NK_BIN_ADD, {NK_ACT_CLIP, 0.0f, 6.0f, 0}};
    float c[4] = {1, 2, 3, -4}, d[4] = {1, 5, 0.5f, 1};
    nk_binary_f32(&p, &s, c, &s, d, &s, y);
    cr_assert(y[0] == 2 && y[1] == 6 && y[2] == 3.5f && y[3] == 0);
}

/* Stores integer v as dtype dt at p (wrapping like a C cast). */
static void put_int(nk_dtype dt, void *p, int64_t v)
{
    switch (dt) {
    case NK_DT_I64: *(int64_t *)p = v; break;
    case NK_DT_I32: *(int32_t *)p = (int32_t)v; break;
    case NK_DT_I16: *(int16_t *)p = (int16_t)v; break;
    case NK_DT_I8: *(int8_t *)p = (int8_t)v; break;
    default: *(uint8_t *)p = (uint8_t)v; break;
    }
}

Test(kernels_elem, binary_integers_every_type_and_path)
{
    int nc;
    const bcase *c = bcases(&nc);
    const nk_binop ops[] = {NK_BIN_ADD, NK_BIN_SUB, NK_BIN_MUL, NK_BIN_DIV, NK_BIN_MAX, NK_BIN_MIN, NK_BIN_POW};
    const nk_dtype dts[] = {NK_DT_I64, NK_DT_I32, NK_DT_I16, NK_DT_I8, NK_DT_U8};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
            for (int i = 0; i < nc; i++) {
                int64_t na = nk_shape_numel(&c[i].a), nb = nk_shape_numel(&c[i].b), ny = nk_shape_numel(&c[i].y);
                size_t es = nk_dtype_size(dts[t]);
                static int64_t va[1200], vb[1200];
                static uint8_t a[1200 * 8], b[1200 * 8], y[1200 * 8];
                uint8_t e[8];
                int pw = ops[o] == NK_BIN_POW, sgn = dts[t] != NK_DT_U8;
                for (int64_t k = 0; k < na; k++) {
                    va[k] = pw ? (int64_t)(rnd() % 7) - 3 * sgn : (int64_t)(rnd() % 201) - 100 * sgn;
                    put_int(dts[t], a + k * (int64_t)es, va[k]);
                }
                for (int64_t k = 0; k < nb; k++) {
                    vb[k] = pw ? (int64_t)(rnd() % 5) : (int64_t)(rnd() % 21) - 10 * sgn;
                    if (vb[k] == 0 && !pw)
                        vb[k] = 3;
                    put_int(dts[t], b + k * (int64_t)es, vb[k]);
                }
                nk_binary_params p = {ops[o], {NK_ACT_NONE, 0, 0, 0}};
                cr_assert_eq(nk_binary_int(&p, dts[t], &c[i].a, a, &c[i].b, b, &c[i].y, y), NK_OK);
                for (int64_t k = 0; k < ny; k++) {
                    int64_t x = va[bidx(&c[i].a, &c[i].y, k)], z = vb[bidx(&c[i].b, &c[i].y, k)], v = 1;
                    switch (ops[o]) {
                    case NK_BIN_ADD: v = x + z; break;
                    case NK_BIN_SUB: v = x - z; break;
                    case NK_BIN_MUL: v = x * z; break;
                    case NK_BIN_DIV: v = x / z; break; /* C99: truncation toward zero */
                    case NK_BIN_MAX: v = x > z ? x : z; break;
                    case NK_BIN_MIN: v = x < z ? x : z; break;
                    default:
                        for (int64_t j = 0; j < z; j++)
                            v *= x;
                    }
                    put_int(dts[t], e, v); /* the wrapped result */
                    cr_assert_eq(memcmp(y + k * (int64_t)es, e, es), 0, "dtype %d op %d case %d: %lld %lld",
                                 dts[t], ops[o], i, (long long)x, (long long)z);
                }
            }
}

Test(kernels_elem, integer_wraps_pow_and_division_by_zero)
{
    nk_shape s = S(1, 3);
    int32_t a[3] = {INT32_MAX, INT32_MIN, 7}, b[3] = {1, -1, -2}, y[3];
    nk_binary_params p = {NK_BIN_ADD, {NK_ACT_NONE, 0, 0, 0}};
    cr_assert_eq(nk_binary_int(&p, NK_DT_I32, &s, a, &s, b, &s, y), NK_OK);
    cr_assert_eq(y[0], INT32_MIN);
    cr_assert_eq(y[1], INT32_MAX);
    p.op = NK_BIN_DIV;
    cr_assert_eq(nk_binary_int(&p, NK_DT_I32, &s, a, &s, b, &s, y), NK_OK);
    cr_assert_eq(y[1], INT32_MIN); /* INT_MIN / -1 wraps */
    cr_assert_eq(y[2], -3);
    int64_t a64[2] = {5, 6}, b64[2] = {1, 0}, y64[2];
    nk_shape s2 = S(1, 2);
    cr_assert_eq(nk_binary_int(&p, NK_DT_I64, &s2, a64, &s2, b64, &s2, y64), NK_EARG);
    p.op = NK_BIN_PRELU;
    cr_assert_eq(nk_binary_int(&p, NK_DT_I64, &s2, a64, &s2, a64, &s2, y64), NK_EUNSUPPORTED);
    cr_assert_eq(nk_binary_int(&p, NK_DT_F32, &s2, a64, &s2, a64, &s2, y64), NK_EUNSUPPORTED);
    /* pow: negative exponents truncate 1/x^-e; 2^7 wraps in int8 */
    nk_shape s5 = S(1, 5);
    int64_t px[5] = {2, -1, 1, 3, -2}, pe[5] = {-1, -3, -5, 4, 3}, py[5];
    p.op = NK_BIN_POW;
    cr_assert_eq(nk_binary_int(&p, NK_DT_I64, &s5, px, &s5, pe, &s5, py), NK_OK);
    cr_assert(py[0] == 0 && py[1] == -1 && py[2] == 1 && py[3] == 81 && py[4] == -8);
    int8_t bx = 2, be = 7, by;
    nk_shape sc = S(0);
    nk_binary_int(&p, NK_DT_I8, &sc, &bx, &sc, &be, &sc, &by);
    cr_assert_eq(by, -128);
}

/* Stores small integer v as dtype dt at p. */
static void put_small(nk_dtype dt, void *p, int v)
{
    switch (dt) {
    case NK_DT_F32: *(float *)p = (float)v; break;
    case NK_DT_I64: *(int64_t *)p = v; break;
    case NK_DT_I32: *(int32_t *)p = v; break;
    case NK_DT_I8: *(int8_t *)p = (int8_t)v; break;
    default: *(uint8_t *)p = (uint8_t)v; break;
    }
}

Test(kernels_elem, compare_every_dtype)
{
    int nc;
    const bcase *c = bcases(&nc);
    const nk_dtype dts[] = {NK_DT_F32, NK_DT_I64, NK_DT_I32, NK_DT_I8, NK_DT_U8, NK_DT_BOOL};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
        for (int op = NK_CMP_EQUAL; op <= NK_CMP_GREATER; op++)
            for (int i = 0; i < nc; i++) {
                int64_t na = nk_shape_numel(&c[i].a), nb = nk_shape_numel(&c[i].b), ny = nk_shape_numel(&c[i].y);
                int va[1200], vb[1200];
                static uint8_t a[1200 * 8], b[1200 * 8], y[1200];
                size_t es = nk_dtype_size(dts[t]);
                for (int64_t k = 0; k < na + nb; k++) {
                    int v = dts[t] == NK_DT_BOOL ? (int)(rnd() % 2) : (int)(rnd() % 4) - (dts[t] == NK_DT_U8 ? 0 : 2);
                    if (k < na)
                        put_small(dts[t], a + (size_t)k * es, va[k] = v);
                    else
                        put_small(dts[t], b + (size_t)(k - na) * es, vb[k - na] = v);
                }
                cr_assert_eq(nk_compare((nk_cmpop)op, dts[t], &c[i].a, a, &c[i].b, b, &c[i].y, y), NK_OK);
                for (int64_t k = 0; k < ny; k++) {
                    int x = va[bidx(&c[i].a, &c[i].y, k)], z = vb[bidx(&c[i].b, &c[i].y, k)];
                    int e = op == NK_CMP_EQUAL ? x == z : op == NK_CMP_LESS ? x < z : x > z;
                    cr_assert_eq(y[k], e, "dtype %d op %d case %d", dts[t], op, i);
                }
            }
    float nan = NAN, one = 1;
    uint8_t y;
    nk_shape sc = S(0);
    nk_compare(NK_CMP_EQUAL, NK_DT_F32, &sc, &nan, &sc, &nan, &sc, &y);
    cr_assert_eq(y, 0);
    nk_compare(NK_CMP_LESS, NK_DT_F32, &sc, &nan, &sc, &one, &sc, &y);
    cr_assert_eq(y, 0);
    cr_assert_eq(nk_compare(NK_CMP_LESS, NK_DT_F16, &sc, &one, &sc, &one, &sc, &y), NK_EUNSUPPORTED);
}

Test(kernels_elem, where_broadcasts_three_ways_for_every_element_size)
{
    nk_shape cs = S(3, 2, 1, 3), as = S(2, 4, 1), bs = S(1, 3), ys = S(3, 2, 4, 3);
    uint8_t cond[6];
    for (int i = 0; i < 6; i++)
        cond[i] = (uint8_t)(rnd() % 2);
    for (size_t es = 1; es <= 8; es *= 2) {
        uint8_t a[4 * 8], b[3 * 8], y[24 * 8];
        for (size_t i = 0; i < sizeof a; i++)
            a[i] = (uint8_t)(i + 1);
        for (size_t i = 0; i < sizeof b; i++)
            b[i] = (uint8_t)(200 + i);
        cr_assert_eq(nk_where(es, &cs, cond, &as, a, &bs, b, &ys, y), NK_OK);
        for (int64_t k = 0; k < 24; k++) {
            const uint8_t *e = cond[bidx(&cs, &ys, k)] ? a + bidx(&as, &ys, k) * (int64_t)es
                                                       : b + bidx(&bs, &ys, k) * (int64_t)es;
            cr_assert_eq(memcmp(y + k * (int64_t)es, e, es), 0, "es %zu at %lld", es, (long long)k);
        }
    }
    /* a condition per row: the copy path */
    nk_shape row = S(2, 2, 1), s22 = S(2, 2, 2);
    uint8_t cond2[2] = {1, 0};
    int32_t a2[4] = {1, 2, 3, 4}, b2[4] = {5, 6, 7, 8}, y2[4];
    cr_assert_eq(nk_where(4, &row, cond2, &s22, a2, &s22, b2, &s22, y2), NK_OK);
    cr_assert(y2[0] == 1 && y2[1] == 2 && y2[2] == 7 && y2[3] == 8);
    cr_assert_eq(nk_where(3, &row, cond2, &s22, a2, &s22, b2, &s22, y2), NK_EARG);
}

/* ---- unary ------------------------------------------------------------------ */

typedef struct {
    nk_unop op;
    float alpha, beta, lo, hi;
    float x;
    double expect;
} ucase;

Test(kernels_elem, unary_f32_hand_values)
{
    const ucase c[] = {
        {NK_UN_RELU, 0, 0, 0, 0, -1.5f, 0},
        {NK_UN_RELU, 0, 0, 0, 0, 2.5f, 2.5},
        {NK_UN_LEAKY_RELU, 0.1f, 0, 0, 0, -2, -0.2},
        {NK_UN_LEAKY_RELU, 0.1f, 0, 0, 0, 3, 3},
        {NK_UN_CLIP, 0, 0, -1, 6, -3, -1},
        {NK_UN_CLIP, 0, 0, -1, 6, 7, 6},
        {NK_UN_CLIP, 0, 0, -1, 6, 0.5f, 0.5},
        {NK_UN_SIGMOID, 0, 0, 0, 0, 0, 0.5},
        {NK_UN_SIGMOID, 0, 0, 0, 0, 2, 0.8807970779778823},
        {NK_UN_SIGMOID, 0, 0, 0, 0, -2, 0.11920292202211755},
        {NK_UN_SIGMOID, 0, 0, 0, 0, -200, 0},
        {NK_UN_SIGMOID, 0, 0, 0, 0, 200, 1},
        {NK_UN_TANH, 0, 0, 0, 0, 0.5f, 0.46211715726000974},
        {NK_UN_HARD_SIGMOID, 0.2f, 0.5f, 0, 0, 1, 0.7},
        {NK_UN_HARD_SIGMOID, 0.2f, 0.5f, 0, 0, -5, 0},
        {NK_UN_HARD_SIGMOID, 0.2f, 0.5f, 0, 0, 5, 1},
        {NK_UN_HARD_SWISH, 0, 0, 0, 0, 3, 3},
        {NK_UN_HARD_SWISH, 0, 0, 0, 0, -3, 0},
        {NK_UN_HARD_SWISH, 0, 0, 0, 0, 1, 2.0 / 3.0},
        {NK_UN_ERF, 0, 0, 0, 0, 0.5f, 0.5204998778130465},
        {NK_UN_ERF, 0, 0, 0, 0, -1.2f, -0.9103139782296353},
        {NK_UN_EXP, 0, 0, 0, 0, 1, 2.718281828459045},
        {NK_UN_LOG, 0, 0, 0, 0, 10, 2.302585092994046},
        {NK_UN_SQRT, 0, 0, 0, 0, 2, 1.4142135623730951},
        {NK_UN_RECIPROCAL, 0, 0, 0, 0, 4, 0.25},
        {NK_UN_NEG, 0, 0, 0, 0, 4, -4},
        {NK_UN_ABS, 0, 0, 0, 0, -4, 4},
        {NK_UN_SOFTPLUS, 0, 0, 0, 0, 0, 0.6931471805599453},
        {NK_UN_SOFTPLUS, 0, 0, 0, 0, 2, 2.1269280110429727},
        {NK_UN_SOFTPLUS, 0, 0, 0, 0, -2, 0.12692801104297263},
        {NK_UN_SOFTPLUS, 0, 0, 0, 0, 100, 100}, /* e^100 would overflow f32 */
        {NK_UN_SOFTPLUS, 0, 0, 0, 0, -100, 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        nk_unary_params p = {c[i].op, c[i].alpha, c[i].beta, c[i].lo, c[i].hi};
        float x[3] = {c[i].x, c[i].x, c[i].x}, y[3];
        cr_assert_eq(nk_unary_f32(&p, x, y, 3), NK_OK);
        for (int k = 0; k < 3; k++)
            cr_assert(fabs(y[k] - c[i].expect) <= 1e-6 * fmax(1.0, fabs(c[i].expect)), "case %zu: %.9g vs %.9g", i,
                      y[k], c[i].expect);
    }
}

/* ONNX's Clip is min(max(x, lo), hi), as numpy's clip and onnxruntime:
 * with lo > hi every output is hi (it gave lo below lo); a NaN stays NaN.
 * The Clip op, nk_act_apply and the dense binary loop (16 at a time, then
 * one by one) share the formula (nk_clip). */
Test(kernels_elem, clip_with_min_above_max_gives_max_everywhere)
{
    float x[19], y[19], z[19];
    for (int i = 0; i < 19; i++)
        x[i] = (float)(i - 9) * 0.5f, z[i] = 0.0f;
    x[4] = NAN;
    nk_unary_params p = {NK_UN_CLIP, 0, 0, 1.0f, -1.0f};
    cr_assert_eq(nk_unary_f32(&p, x, y, 19), NK_OK);
    nk_act a = {NK_ACT_CLIP, 1.0f, -1.0f, 0};
    for (int i = 0; i < 19; i++) {
        cr_assert(i == 4 ? isnan(y[i]) : y[i] == -1.0f, "Clip(%g) = %g", x[i], y[i]);
        float v = nk_act_apply(a, x[i]);
        cr_assert(i == 4 ? isnan(v) : v == -1.0f, "act(%g) = %g", x[i], v);
    }
    nk_shape s = S(1, 19);
    nk_binary_params bp = {NK_BIN_ADD, a};
    cr_assert_eq(nk_binary_f32(&bp, &s, x, &s, z, &s, y), NK_OK);
    for (int i = 0; i < 19; i++)
        cr_assert(i == 4 ? isnan(y[i]) : y[i] == -1.0f, "Add + Clip(%g) = %g", x[i], y[i]);
}

Test(kernels_elem, unary_integer_neg_abs_and_not)
{
    int32_t x[3] = {5, -7, INT32_MIN}, y[3];
    cr_assert_eq(nk_unary_i32(NK_UN_NEG, x, y, 3), NK_OK);
    cr_assert(y[0] == -5 && y[1] == 7 && y[2] == INT32_MIN);
    int64_t a[2] = {-9, 4}, b[2];
    nk_unary_i64(NK_UN_ABS, a, b, 2);
    cr_assert(b[0] == 9 && b[1] == 4);
    cr_assert_eq(nk_unary_i64(NK_UN_EXP, a, b, 2), NK_EUNSUPPORTED);
    uint8_t t[3] = {0, 1, 1}, u[3];
    nk_not(t, u, 3);
    cr_assert(u[0] == 1 && u[1] == 0 && u[2] == 0);
}

/* ---- cast ------------------------------------------------------------------- */

typedef struct {
    nk_dtype from, to;
    double in;
    int64_t out; /* the expected value, exactly */
} ccase;

static void put(nk_dtype dt, void *p, double v)
{
    switch (dt) {
    case NK_DT_F32: *(float *)p = (float)v; break;
    case NK_DT_F16: *(uint16_t *)p = nk_f32_to_f16((float)v); break;
    case NK_DT_I64: *(int64_t *)p = (int64_t)v; break;
    case NK_DT_I32: *(int32_t *)p = (int32_t)v; break;
    case NK_DT_I16: *(int16_t *)p = (int16_t)v; break;
    case NK_DT_I8: *(int8_t *)p = (int8_t)v; break;
    default: *(uint8_t *)p = (uint8_t)v; break;
    }
}

static double get(nk_dtype dt, const void *p)
{
    switch (dt) {
    case NK_DT_F32: return *(const float *)p;
    case NK_DT_F16: return nk_f16_to_f32(*(const uint16_t *)p);
    case NK_DT_I64: return (double)*(const int64_t *)p;
    case NK_DT_I32: return *(const int32_t *)p;
    case NK_DT_I16: return *(const int16_t *)p;
    case NK_DT_I8: return *(const int8_t *)p;
    default: return *(const uint8_t *)p;
    }
}

Test(kernels_elem, cast_follows_onnxruntime)
{
    const ccase c[] = {
        {NK_DT_F32, NK_DT_I8, 300.0, 44}, /* int32 300 = 0x12c, low byte 0x2c */
        {NK_DT_F32, NK_DT_I8, -1.7, -1},  /* truncation toward zero */
        {NK_DT_F32, NK_DT_I8, 2.9, 2},
        {NK_DT_F32, NK_DT_I8, 1e10, 0}, /* INT32_MIN, low byte 0 */
        {NK_DT_F32, NK_DT_U8, -1.0, 255},
        {NK_DT_F32, NK_DT_U8, 256.0, 0},
        {NK_DT_F32, NK_DT_I16, 40000.0, 40000 - 65536},
        {NK_DT_F32, NK_DT_I32, 1e10, INT32_MIN},
        {NK_DT_F32, NK_DT_I32, -2147483648.0, INT32_MIN},
        {NK_DT_F32, NK_DT_I32, 2147483520.0, 2147483520},
        {NK_DT_F32, NK_DT_I64, 1e10, 10000000000},
        {NK_DT_F32, NK_DT_I64, 1e19, INT64_MIN},
        {NK_DT_F32, NK_DT_I64, -3.99, -3},
        {NK_DT_F32, NK_DT_BOOL, 0.0, 0},
        {NK_DT_F32, NK_DT_BOOL, -0.0, 0},
        {NK_DT_F32, NK_DT_BOOL, 0.1, 1},
        {NK_DT_I64, NK_DT_I32, 4294967297.0, 1},
        {NK_DT_I64, NK_DT_I32, -1.0, -1},
        {NK_DT_I32, NK_DT_U8, 257, 1},
        {NK_DT_I32, NK_DT_U8, -1, 255},
        {NK_DT_I32, NK_DT_I8, 200, -56},
        {NK_DT_I16, NK_DT_I64, -300, -300},
        {NK_DT_U8, NK_DT_I8, 255, -1},
        {NK_DT_I8, NK_DT_U8, -2, 254},
        {NK_DT_I32, NK_DT_BOOL, -5, 1},
        {NK_DT_BOOL, NK_DT_F32, 1, 1},
        {NK_DT_BOOL, NK_DT_I64, 1, 1},
        {NK_DT_I64, NK_DT_F32, 16777217.0, 16777216}, /* round to nearest even */
        {NK_DT_I32, NK_DT_F16, 2049, 2048},
        {NK_DT_F16, NK_DT_I32, -2.5, -2},
        {NK_DT_F32, NK_DT_F16, 65519.0, 65504},
        {NK_DT_U8, NK_DT_F32, 200, 200},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint8_t x[8 * 70], y[8 * 70];
        size_t ei = nk_dtype_size(c[i].from), eo = nk_dtype_size(c[i].to);
        /* 70 copies cross the kernel's chunk size */
        for (int k = 0; k < 70; k++)
            put(c[i].from, x + k * ei, c[i].in);
        cr_assert_eq(nk_cast(c[i].from, x, c[i].to, y, 70), NK_OK);
        for (int k = 0; k < 70; k++) {
            double got = get(c[i].to, y + k * eo);
            cr_assert_eq(got, (double)c[i].out, "case %zu: %.17g -> %.17g, expected %lld", i, c[i].in, got,
                         (long long)c[i].out);
        }
    }
    float nan = NAN;
    int8_t i8;
    int64_t i64;
    uint8_t b;
    nk_cast(NK_DT_F32, &nan, NK_DT_I8, &i8, 1);
    nk_cast(NK_DT_F32, &nan, NK_DT_I64, &i64, 1);
    nk_cast(NK_DT_F32, &nan, NK_DT_BOOL, &b, 1);
    cr_assert(i8 == 0 && i64 == INT64_MIN && b == 1);
    cr_assert_eq(nk_cast(NK_DT_COUNT, &nan, NK_DT_I8, &i8, 1), NK_EARG);
}

Test(kernels_elem, f16_hand_values)
{
    const struct {
        float f;
        uint16_t h;
    } c[] = {
        {1.0f, 0x3c00},           {-2.0f, 0xc000},          {65504.0f, 0x7bff},       {65519.0f, 0x7bff},
        {65520.0f, 0x7c00},       {1e6f, 0x7c00},           {-INFINITY, 0xfc00},      {0x1p-24f, 0x0001},
        {0x1p-25f, 0x0000},       {0x1.8p-25f, 0x0001},     {0.75f * 0x1p-24f, 1},    {1e-8f, 0x0000},
        {6.1e-5f, 0x03ff},        {0x1p-14f, 0x0400},       {1.0f + 0x1p-11f, 0x3c00}, /* a tie: to even */
        {1.0f + 0x3p-11f, 0x3c02}, {1.0f / 3.0f, 0x3555},   {-0.0f, 0x8000},          {0x1.ffcp-15f, 0x0400},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        cr_assert_eq(nk_f32_to_f16(c[i].f), c[i].h, "case %zu: %a -> %#x, expected %#x", i, (double)c[i].f,
                     nk_f32_to_f16(c[i].f), c[i].h);
    cr_assert_eq(nk_f16_to_f32(0x0001), 0x1p-24f);
    cr_assert_eq(nk_f16_to_f32(0x03ff), 1023 * 0x1p-24f);
    cr_assert_eq(nk_f16_to_f32(0x7bff), 65504.0f);
    cr_assert_eq(nk_f16_to_f32(0x7c00), INFINITY);
    cr_assert(isnan(nk_f16_to_f32(0x7e00)));
    cr_assert_eq(nk_f32_to_f16(NAN) & 0x7e00, 0x7e00);
}

/* Every half survives the round trip, and floats round to the nearer of the
 * two halves around them. */
Test(kernels_elem, f16_round_trip_and_nearest)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue; /* NaN */
        cr_assert_eq(nk_f32_to_f16(nk_f16_to_f32((uint16_t)h)), h, "%#x", h);
    }
    for (int i = 0; i < 20000; i++) {
        uint32_t bits = (rnd() << 8 ^ rnd()) % 0x477fe000u; /* below 65504 */
        float f;
        memcpy(&f, &bits, sizeof f);
        uint16_t h = nk_f32_to_f16(f);
        double got = nk_f16_to_f32(h), err = fabs(got - f);
        double up = nk_f16_to_f32((uint16_t)(h + 1)), down = h ? nk_f16_to_f32((uint16_t)(h - 1)) : -got;
        cr_assert(err <= fabs(up - f) && err <= fabs(down - f), "%a -> %#x", (double)f, h);
    }
}

/* ---- softmax, reductions ------------------------------------------------------- */

static void naive_softmax(const float *x, float *y, int64_t outer, int64_t len, int64_t inner, int log_)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            double m = -INFINITY, s = 0;
            for (int64_t k = 0; k < len; k++)
                m = fmax(m, x[(o * len + k) * inner + j]);
            for (int64_t k = 0; k < len; k++)
                s += exp(x[(o * len + k) * inner + j] - m);
            for (int64_t k = 0; k < len; k++) {
                double v = x[(o * len + k) * inner + j] - m;
                y[(o * len + k) * inner + j] = (float)(log_ ? v - log(s) : exp(v) / s);
            }
        }
}

Test(kernels_elem, softmax_along_axis_and_flattened)
{
    const int64_t shapes[][3] = {{1, 10, 1}, {2, 3, 4}, {6, 5, 1}, {1, 24, 1}, {3, 1, 7}};
    float x[120], y[120], e[120];
    for (int i = 0; i < 120; i++)
        x[i] = rndf() * 3;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int lg = 0; lg < 2; lg++) {
            nk_softmax_params p = {shapes[s][0], shapes[s][1], shapes[s][2], lg};
            cr_assert_eq(nk_softmax_f32(&p, x, y), NK_OK);
            naive_softmax(x, e, p.outer, p.len, p.inner, lg);
            for (int64_t i = 0; i < p.outer * p.len * p.inner; i++)
                cr_assert(fabsf(y[i] - e[i]) <= 2e-6f * fmaxf(1, fabsf(e[i])), "shape %zu log %d at %lld", s, lg,
                          (long long)i);
        }
    float big[2] = {1000, 1001}, out[2];
    nk_softmax_params p = {1, 2, 1, 0};
    nk_softmax_f32(&p, big, out);
    cr_assert(fabsf(out[0] - 0.26894142f) < 1e-6f && fabsf(out[1] - 0.73105858f) < 1e-6f);
    p.log = 1;
    nk_softmax_f32(&p, big, out);
    cr_assert(fabsf(out[1] - logf(0.73105858f)) < 1e-5f);
}

static void naive_reduce(nk_reduce_op op, const nk_shape *xs, const float *x, uint32_t mask, float *y, int64_t *ny)
{
    nk_shape ys = *xs;
    for (int d = 0; d < xs->rank; d++)
        if (mask & (1u << d))
            ys.dims[d] = 1;
    *ny = nk_shape_numel(&ys);
    double acc[256];
    int64_t cnt[256] = {0};
    for (int64_t i = 0; i < *ny; i++)
        acc[i] = op == NK_RED_MAX ? -INFINITY : op == NK_RED_MIN ? INFINITY : 0;
    for (int64_t i = 0; i < nk_shape_numel(xs); i++) {
        int64_t o = bidx(&ys, xs, i);
        double v = x[i];
        acc[o] = op == NK_RED_MAX ? fmax(acc[o], v) : op == NK_RED_MIN ? fmin(acc[o], v) : acc[o] + v;
        cnt[o]++;
    }
    for (int64_t i = 0; i < *ny; i++)
        y[i] = (float)(op == NK_RED_MEAN ? acc[i] / (double)cnt[i] : acc[i]);
}

Test(kernels_elem, reduce_every_op_and_axes)
{
    const nk_shape shapes[] = {S(3, 2, 3, 4), S(4, 2, 1, 3, 5), S(1, 7), S(2, 4, 9)};
    float x[256], y[256], e[256];
    for (int i = 0; i < 256; i++)
        x[i] = rndf();
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (uint32_t mask = 0; mask < (1u << shapes[s].rank); mask++)
            for (int op = NK_RED_SUM; op <= NK_RED_MIN; op++) {
                int64_t ny;
                naive_reduce((nk_reduce_op)op, &shapes[s], x, mask, e, &ny);
                cr_assert_eq(nk_reduce_f32((nk_reduce_op)op, &shapes[s], x, mask, y), NK_OK);
                for (int64_t i = 0; i < ny; i++)
                    cr_assert(fabsf(y[i] - e[i]) <= 1e-5f * fmaxf(1, fabsf(e[i])), "shape %zu mask %u op %d", s,
                              mask, op);
            }
    nk_shape empty = S(2, 2, 0);
    float out[2];
    nk_reduce_f32(NK_RED_MEAN, &empty, x, 2u, out);
    cr_assert(isnan(out[0]));
    nk_reduce_f32(NK_RED_SUM, &empty, x, 2u, out);
    cr_assert_eq(out[1], 0);
    nk_reduce_f32(NK_RED_MAX, &empty, x, 2u, out);
    cr_assert_eq(out[0], -INFINITY);
    cr_assert_eq(nk_reduce_f32(NK_RED_SUM, &empty, x, 4u, out), NK_EARG);
}

/* ---- adapters (src/ref/ops_elem.c) ------------------------------------------------ */

static ir_graph *G(void)
{
    return ir_graph_new(npu_alloc_default());
}

/* Evaluates node n (all inputs constant); the status, message in *e. */
static npu_status eval(ir_graph *g, ir_node *n, npu_err *e)
{
    npu_err_clear(e);
    return ref_eval_node(g, n, e);
}

Test(ref_elem, softmax_opset13_and_flattened_opset11)
{
    ir_graph *g = G();
    float x[24];
    for (int i = 0; i < 24; i++)
        x[i] = rndf();
    int64_t d[3] = {2, 3, 4};
    ir_tensor *xt = tg_const(g, "x", IR_F32, 3, d, x);
    struct {
        int64_t axis; /* -100: absent */
        int flatten;
        int64_t outer, len, inner;
    } c[] = {
        {1, 0, 2, 3, 4}, {-100, 0, 6, 4, 1}, {1, 1, 2, 12, 1}, {-100, 1, 2, 12, 1}, {0, 1, 1, 24, 1}, {-2, 0, 2, 3, 4},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        for (int lg = 0; lg < 2; lg++) {
            ir_tensor *y = tg_tensor(g, NULL, IR_F32, 3, d);
            ir_node *n = tg_node(g, lg ? IR_OP_LOG_SOFTMAX : IR_OP_SOFTMAX, 1, &xt, 1, &y);
            if (c[i].axis != -100)
                ir_set_int(g, n, "axis", c[i].axis);
            if (c[i].flatten)
                ir_set_int(g, n, "_flatten_axis", 1);
            npu_err e;
            cr_assert_eq(eval(g, n, &e), NPU_OK, "%s", e.msg);
            float expect[24];
            naive_softmax(x, expect, c[i].outer, c[i].len, c[i].inner, lg);
            for (int k = 0; k < 24; k++)
                cr_assert(fabsf(((float *)y->data)[k] - expect[k]) < 2e-6f * fmaxf(1, fabsf(expect[k])),
                          "case %zu log %d", i, lg);
        }
    ir_tensor *y = tg_tensor(g, NULL, IR_F32, 3, d);
    ir_node *n = tg_node(g, IR_OP_SOFTMAX, 1, &xt, 1, &y);
    ir_set_int(g, n, "axis", 3);
    npu_err e;
    cr_assert_eq(eval(g, n, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "axis 3") && strstr(e.msg, "(Softmax)"), "%s", e.msg);
    ir_graph_free(g);
}

Test(ref_elem, reduce_axes_from_attribute_or_input)
{
    ir_graph *g = G();
    float x[24];
    for (int i = 0; i < 24; i++)
        x[i] = rndf();
    int64_t d[3] = {2, 3, 4};
    nk_shape xs = S(3, 2, 3, 4);
    ir_tensor *xt = tg_const(g, "x", IR_F32, 3, d, x);
    struct {
        ir_op op;
        int64_t axes[3];
        int n_axes;    /* -1: none given */
        int as_input;  /* axes as input 1 (ReduceSum-13) */
        int noop;
        uint32_t mask; /* what the reduction should be */
    } c[] = {
        {IR_OP_REDUCE_SUM, {1}, 1, 1, 0, 2u},         {IR_OP_REDUCE_MEAN, {-1}, 1, 0, 0, 4u},
        {IR_OP_REDUCE_MAX, {0, 2}, 2, 0, 0, 5u},      {IR_OP_REDUCE_MIN, {0}, -1, 0, 0, 7u},
        {IR_OP_REDUCE_SUM, {0}, 0, 1, 0, 7u},         {IR_OP_REDUCE_SUM, {0}, 0, 1, 1, 0u},
        {IR_OP_REDUCE_MEAN, {-3, -2}, 2, 0, 0, 3u},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        float expect[24];
        int64_t ny;
        nk_reduce_op rop = c[i].op == IR_OP_REDUCE_SUM ? NK_RED_SUM : c[i].op == IR_OP_REDUCE_MEAN ? NK_RED_MEAN
                           : c[i].op == IR_OP_REDUCE_MAX ? NK_RED_MAX : NK_RED_MIN;
        naive_reduce(rop, &xs, x, c[i].mask, expect, &ny);
        int64_t yd[1] = {ny};
        ir_tensor *y = tg_tensor(g, NULL, IR_F32, 1, yd); /* the layout is the same with or without keepdims */
        ir_tensor *in[2] = {xt, NULL};
        if (c[i].as_input) {
            int64_t ad[1] = {c[i].n_axes};
            in[1] = tg_const(g, NULL, IR_I64, 1, ad, c[i].axes);
        }
        ir_node *n = tg_node(g, c[i].op, c[i].as_input ? 2 : 1, in, 1, &y);
        if (!c[i].as_input && c[i].n_axes >= 0)
            ir_set_ints(g, n, "axes", c[i].n_axes, c[i].axes);
        if (c[i].noop)
            ir_set_int(g, n, "noop_with_empty_axes", 1);
        npu_err e;
        cr_assert_eq(eval(g, n, &e), NPU_OK, "case %zu: %s", i, e.msg);
        for (int64_t k = 0; k < ny; k++)
            cr_assert(fabsf(((float *)y->data)[k] - expect[k]) < 1e-5f * fmaxf(1, fabsf(expect[k])), "case %zu", i);
    }
    ir_graph_free(g);
}

Test(ref_elem, variadic_max_min_broadcast_pairwise)
{
    ir_graph *g = G();
    int64_t da[2] = {2, 1}, db[1] = {3}, dc[2] = {1, 1}, dy[2] = {2, 3};
    ir_tensor *a = tg_const(g, "a", IR_F32, 2, da, (float[]){1, 5});
    ir_tensor *b = tg_const(g, "b", IR_F32, 1, db, (float[]){0, 3, 7});
    ir_tensor *c = tg_const(g, "c", IR_F32, 2, dc, (float[]){2});
    ir_tensor *d = tg_const(g, "d", IR_F32, 1, db, (float[]){6, -1, 4});
    for (int k = 1; k <= 4; k++)
        for (int mx = 0; mx < 2; mx++) {
            ir_tensor *ins[4] = {a, b, c, d};
            const int64_t *ydims = k == 1 ? da : dy;
            ir_tensor *y = tg_tensor(g, NULL, IR_F32, 2, ydims);
            ir_node *n = tg_node(g, mx ? IR_OP_MAX : IR_OP_MIN, k, ins, 1, &y);
            npu_err e;
            cr_assert_eq(eval(g, n, &e), NPU_OK, "%s", e.msg);
            const float av[2] = {1, 5}, bv[3] = {0, 3, 7}, dv[3] = {6, -1, 4};
            for (int i = 0; i < (k == 1 ? 2 : 6); i++) {
                float v = av[i / 3 % 2];
                if (k == 1)
                    v = av[i];
                if (k >= 2)
                    v = mx ? fmaxf(v, bv[i % 3]) : fminf(v, bv[i % 3]);
                if (k >= 3)
                    v = mx ? fmaxf(v, 2) : fminf(v, 2);
                if (k >= 4)
                    v = mx ? fmaxf(v, dv[i % 3]) : fminf(v, dv[i % 3]);
                cr_assert_eq(((float *)y->data)[i], v, "k %d max %d at %d", k, mx, i);
            }
        }
    ir_graph_free(g);
}

Test(ref_elem, binary_errors_name_node_op_and_dtype)
{
    ir_graph *g = G();
    int64_t d[1] = {2};
    ir_tensor *a = tg_const(g, "a", IR_I64, 1, d, (int64_t[]){4, 5});
    ir_tensor *z = tg_const(g, "z", IR_I64, 1, d, (int64_t[]){2, 0});
    ir_tensor *y = tg_tensor(g, "y", IR_I64, 1, d);
    ir_node *n = ir_node_new(g, IR_OP_DIV, "div1", 2, (ir_tensor *[]){a, z}, 1, &y);
    npu_err e;
    cr_assert_eq(eval(g, n, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "node 'div1' (Div)") && strstr(e.msg, "division by zero"), "%s", e.msg);
    cr_assert_null(y->data);
    ir_tensor *u = tg_const(g, "u", IR_BOOL, 1, d, (uint8_t[]){1, 0});
    ir_tensor *uy = tg_tensor(g, "uy", IR_BOOL, 1, d);
    n = ir_node_new(g, IR_OP_ADD, "add1", 2, (ir_tensor *[]){u, u}, 1, &uy);
    cr_assert_eq(eval(g, n, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "Add on dtype bool is not supported"), "%s", e.msg);
    n = ir_node_new(g, IR_OP_ADD, "add2", 2, (ir_tensor *[]){a, u}, 1, &y);
    cr_assert_eq(eval(g, n, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "dtype of input 0"), "%s", e.msg);
    int64_t d3[1] = {3};
    ir_tensor *a3 = tg_const(g, "a3", IR_I64, 1, d3, (int64_t[]){1, 2, 3});
    n = ir_node_new(g, IR_OP_SUB, "sub1", 2, (ir_tensor *[]){a, a3}, 1, &y);
    cr_assert_eq(eval(g, n, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "broadcast"), "%s", e.msg);
    ir_graph_free(g);
}

Test(ref_elem, clip_bounds_from_inputs_or_attributes_and_fused_act)
{
    ir_graph *g = G();
    int64_t d[1] = {4};
    ir_tensor *x = tg_const(g, "x", IR_F32, 1, d, (float[]){-3, 0.5f, 4, 9});
    ir_tensor *hi = tg_const(g, "hi", IR_F32, 0, NULL, (float[]){6});
    ir_tensor *y1 = tg_tensor(g, NULL, IR_F32, 1, d), *y2 = tg_tensor(g, NULL, IR_F32, 1, d);
    ir_node *n1 = tg_node(g, IR_OP_CLIP, 3, (ir_tensor *[]){x, NULL, hi}, 1, &y1); /* min omitted */
    ir_node *n2 = tg_node(g, IR_OP_CLIP, 1, &x, 1, &y2);
    ir_set_float(g, n2, "min", -1);
    ir_set_float(g, n2, "max", 1);
    npu_err e;
    cr_assert_eq(eval(g, n1, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(eval(g, n2, &e), NPU_OK, "%s", e.msg);
    const float e1[4] = {-3, 0.5f, 4, 6}, e2[4] = {-1, 0.5f, 1, 1};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(((float *)y1->data)[i], e1[i]);
        cr_assert_eq(((float *)y2->data)[i], e2[i]);
    }
    ir_tensor *y3 = tg_tensor(g, NULL, IR_F32, 1, d), *y4 = tg_tensor(g, NULL, IR_F32, 1, d);
    ir_node *add = tg_node(g, IR_OP_ADD, 2, (ir_tensor *[]){x, x}, 1, &y3);
    add->act = (ir_act){IR_ACT_RELU, 0, 0, 0};
    ir_node *neg = tg_node(g, IR_OP_NEG, 1, &x, 1, &y4);
    neg->act = (ir_act){IR_ACT_CLIP, 0, 6, 0};
    cr_assert_eq(eval(g, add, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(eval(g, neg, &e), NPU_OK, "%s", e.msg);
    const float e3[4] = {0, 1, 8, 18}, e4[4] = {3, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(((float *)y3->data)[i], e3[i]);
        cr_assert_eq(((float *)y4->data)[i], e4[i]);
    }
    ir_graph_free(g);
}

Test(ref_elem, unary_attributes_cast_compare_where)
{
    ir_graph *g = G();
    int64_t d[1] = {3};
    ir_tensor *x = tg_const(g, "x", IR_F32, 1, d, (float[]){-2, 0.5f, 3.7f});
    ir_tensor *lr = tg_tensor(g, NULL, IR_F32, 1, d), *hs = tg_tensor(g, NULL, IR_F32, 1, d);
    ir_node *n = tg_node(g, IR_OP_LEAKY_RELU, 1, &x, 1, &lr);
    npu_err e;
    cr_assert_eq(eval(g, n, &e), NPU_OK); /* default alpha 0.01 */
    cr_assert(fabsf(((float *)lr->data)[0] + 0.02f) < 1e-7f);
    n = tg_node(g, IR_OP_HARD_SIGMOID, 1, &x, 1, &hs);
    ir_set_float(g, n, "alpha", 0.5f);
    ir_set_float(g, n, "beta", 0.25f);
    cr_assert_eq(eval(g, n, &e), NPU_OK);
    cr_assert(((float *)hs->data)[0] == 0 && ((float *)hs->data)[1] == 0.5f && ((float *)hs->data)[2] == 1);

    ir_tensor *ci = tg_tensor(g, NULL, IR_I64, 1, d);
    n = tg_node(g, IR_OP_CAST, 1, &x, 1, &ci);
    ir_set_int(g, n, "to", 7);
    cr_assert_eq(eval(g, n, &e), NPU_OK, "%s", e.msg);
    const int64_t *cv = ci->data;
    cr_assert(cv[0] == -2 && cv[1] == 0 && cv[2] == 3);
    ir_tensor *c4 = tg_tensor(g, NULL, IR_I4, 1, d);
    n = tg_node(g, IR_OP_CAST, 1, &x, 1, &c4);
    cr_assert_eq(eval(g, n, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "Cast to i4"), "%s", e.msg);

    ir_tensor *half = tg_const(g, "half", IR_F32, 0, NULL, (float[]){0.5f});
    ir_tensor *lt = tg_tensor(g, NULL, IR_BOOL, 1, d), *eq = tg_tensor(g, NULL, IR_BOOL, 1, d);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_LESS, 2, (ir_tensor *[]){x, half}, 1, &lt), &e), NPU_OK);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_EQUAL, 2, (ir_tensor *[]){x, half}, 1, &eq), &e), NPU_OK);
    const uint8_t *lv = lt->data, *ev = eq->data;
    cr_assert(lv[0] == 1 && lv[1] == 0 && lv[2] == 0 && ev[0] == 0 && ev[1] == 1 && ev[2] == 0);
    ir_tensor *nt = tg_tensor(g, NULL, IR_BOOL, 1, d);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_NOT, 1, &lt, 1, &nt), &e), NPU_OK);
    cr_assert(((uint8_t *)nt->data)[0] == 0 && ((uint8_t *)nt->data)[2] == 1);

    ir_tensor *w = tg_tensor(g, NULL, IR_F32, 1, d);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_WHERE, 3, (ir_tensor *[]){lt, x, half}, 1, &w), &e), NPU_OK, "%s",
                 e.msg);
    const float *wv = w->data;
    cr_assert(wv[0] == -2 && wv[1] == 0.5f && wv[2] == 0.5f);
    ir_tensor *bad = tg_tensor(g, NULL, IR_F32, 1, d);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_WHERE, 3, (ir_tensor *[]){x, x, half}, 1, &bad), &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "condition must be bool"), "%s", e.msg);
    ir_graph_free(g);
}

/* A whole graph through ref_ctx_run: y = Relu(x * w) - 1, run twice. */
Test(ref_elem, ctx_run_small_graph)
{
    ir_graph *g = G();
    int64_t d[2] = {2, 2}, dw[1] = {2};
    ir_tensor *x = tg_tensor(g, "x", IR_F32, 2, d);
    x->flags |= IR_TENSOR_INPUT;
    ir_tensor *w = tg_const(g, "w", IR_F32, 1, dw, (float[]){2, -1});
    ir_tensor *one = tg_const(g, "one", IR_F32, 0, NULL, (float[]){1});
    ir_tensor *m = tg_tensor(g, "m", IR_F32, 2, d), *r = tg_tensor(g, "r", IR_F32, 2, d);
    ir_tensor *y = tg_tensor(g, "y", IR_F32, 2, d);
    tg_node(g, IR_OP_MUL, 2, (ir_tensor *[]){x, w}, 1, &m);
    tg_node(g, IR_OP_RELU, 1, &m, 1, &r);
    tg_node(g, IR_OP_SUB, 2, (ir_tensor *[]){r, one}, 1, &y);
    g->inputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *));
    g->inputs[0] = x;
    g->outputs[0] = y;
    g->n_inputs = g->n_outputs = 1;
    npu_err e;
    ref_ctx *ctx = ref_ctx_new(g, npu_alloc_default(), &e);
    cr_assert_not_null(ctx, "%s", e.msg);
    const float in1[4] = {1, 2, 3, -4}, in2[4] = {-1, -2, 0.5f, 0};
    float out[4];
    const void *ins[1] = {in1};
    void *outs[1] = {out};
    cr_assert_eq(ref_ctx_run(ctx, ins, outs, &e), NPU_OK, "%s", e.msg);
    cr_assert(out[0] == 1 && out[1] == -1 && out[2] == 5 && out[3] == 3);
    ins[0] = in2;
    cr_assert_eq(ref_ctx_run(ctx, ins, outs, &e), NPU_OK, "%s", e.msg);
    cr_assert(out[0] == -1 && out[1] == 1 && out[2] == 0 && out[3] == -1);
    ref_ctx_free(ctx);
    ir_graph_free(g);
}

Test(ref_elem, integer_clip_mixed_pow_and_narrow_integers)
{
    ir_graph *g = G();
    int64_t d[1] = {4};
    npu_err e;
    /* Clip-13 on int8 with only a minimum */
    ir_tensor *x8 = tg_const(g, "x8", IR_I8, 1, d, (int8_t[]){-100, -3, 5, 127});
    ir_tensor *lo = tg_const(g, "lo", IR_I8, 0, NULL, (int8_t[]){-4});
    ir_tensor *hi = tg_const(g, "hi", IR_I8, 0, NULL, (int8_t[]){6});
    ir_tensor *c1 = tg_tensor(g, NULL, IR_I8, 1, d), *c2 = tg_tensor(g, NULL, IR_I8, 1, d);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_CLIP, 2, (ir_tensor *[]){x8, lo}, 1, &c1), &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_CLIP, 3, (ir_tensor *[]){x8, NULL, hi}, 1, &c2), &e), NPU_OK, "%s", e.msg);
    const int8_t w1[4] = {-4, -3, 5, 127}, w2[4] = {-100, -3, 5, 6};
    cr_assert(memcmp(c1->data, w1, 4) == 0 && memcmp(c2->data, w2, 4) == 0);
    /* uint8 Add wraps */
    ir_tensor *u = tg_const(g, "u", IR_U8, 1, d, (uint8_t[]){250, 1, 2, 3});
    ir_tensor *us = tg_tensor(g, NULL, IR_U8, 1, d);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_ADD, 2, (ir_tensor *[]){u, u}, 1, &us), &e), NPU_OK, "%s", e.msg);
    cr_assert(((uint8_t *)us->data)[0] == 244 && ((uint8_t *)us->data)[3] == 6);
    /* Pow: f32 by int64, int32 by f32 (truncated), int64 by int64 */
    ir_tensor *xf = tg_const(g, "xf", IR_F32, 1, d, (float[]){2, 3, 0.5f, -2});
    ir_tensor *ei = tg_const(g, "ei", IR_I64, 1, d, (int64_t[]){3, 2, 2, 3});
    ir_tensor *xi = tg_const(g, "xi", IR_I32, 1, d, (int32_t[]){4, 9, 2, 7});
    ir_tensor *ef = tg_const(g, "ef", IR_F32, 0, NULL, (float[]){0.5f});
    ir_tensor *p1 = tg_tensor(g, NULL, IR_F32, 1, d), *p2 = tg_tensor(g, NULL, IR_I32, 1, d);
    ir_tensor *p3 = tg_tensor(g, NULL, IR_I64, 1, d);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_POW, 2, (ir_tensor *[]){xf, ei}, 1, &p1), &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_POW, 2, (ir_tensor *[]){xi, ef}, 1, &p2), &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_POW, 2, (ir_tensor *[]){ei, ei}, 1, &p3), &e), NPU_OK, "%s", e.msg);
    const float w3[4] = {8, 9, 0.25f, -8};
    const int32_t w4[4] = {2, 3, 1, 2}; /* sqrt, truncated */
    const int64_t w5[4] = {27, 4, 4, 27};
    cr_assert(memcmp(p1->data, w3, 16) == 0 && memcmp(p2->data, w4, 16) == 0 && memcmp(p3->data, w5, 32) == 0);
    ir_tensor *pb = tg_const(g, "pb", IR_BOOL, 1, d, (uint8_t[]){1, 0, 1, 0});
    ir_tensor *p4 = tg_tensor(g, NULL, IR_F32, 1, d);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_POW, 2, (ir_tensor *[]){xf, pb}, 1, &p4), &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "Pow of f32 by bool"), "%s", e.msg);
    ir_graph_free(g);
}
