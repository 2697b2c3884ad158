/* Shape and data-movement kernels against naive per-element implementations
 * written here and against values computed by hand (or numpy, noted). */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ref/ref.h"
#include "tests/support/testgraph.h"

#define S tg_shape

/* Multi-index of flat index f in shape s, and back. */
static void unflat(const nk_shape *s, int64_t f, int64_t *idx)
{
    for (int d = s->rank - 1; d >= 0; d--) {
        idx[d] = f % s->dims[d];
        f /= s->dims[d];
    }
}
static int64_t flat(const nk_shape *s, const int64_t *idx)
{
    int64_t f = 0;
    for (int d = 0; d < s->rank; d++)
        f = f * s->dims[d] + idx[d];
    return f;
}

/* Element k of a buffer of es-byte elements, as a number (es <= 8). */
static uint64_t el(const void *buf, int64_t k, size_t es)
{
    uint64_t v = 0;
    memcpy(&v, (const uint8_t *)buf + k * (int64_t)es, es);
    return v;
}

/* Distinct values so that a misplaced element shows. */
static void iota_bytes(void *buf, int64_t n, size_t es)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = (uint64_t)(i * 2654435761u + 17) & (es == 8 ? ~0ull : ((1ull << (8 * es)) - 1));
        memcpy((uint8_t *)buf + i * (int64_t)es, &v, es);
    }
}

static const size_t sizes[] = {1, 2, 4, 8};

Test(kernels_shape, concat_and_split_are_inverse_and_match_naive)
{
    nk_shape parts[3] = {S(3, 2, 1, 4), S(3, 2, 3, 4), S(3, 2, 2, 4)}, whole = S(3, 2, 6, 4);
    for (size_t s = 0; s < 4; s++) {
        size_t es = sizes[s];
        uint8_t in[3][24 * 8], out[48 * 8], back[3][24 * 8];
        const void *ins[3] = {in[0], in[1], in[2]};
        void *backs[3] = {back[0], back[1], back[2]};
        for (int i = 0; i < 3; i++)
            iota_bytes(in[i], nk_shape_numel(&parts[i]), es), in[i][0] = (uint8_t)(i + 100);
        nk_concat_params cp = {1, 3, es};
        cr_assert_eq(nk_concat(&cp, parts, ins, &whole, out), NK_OK);
        for (int64_t f = 0; f < 48; f++) {
            int64_t idx[3];
            unflat(&whole, f, idx);
            int part = idx[1] < 1 ? 0 : idx[1] < 4 ? 1 : 2;
            idx[1] -= part == 0 ? 0 : part == 1 ? 1 : 4;
            cr_assert_eq(el(out, f, es), el(in[part], flat(&parts[part], idx), es), "es %zu at %lld", es,
                         (long long)f);
        }
        nk_split_params sp = {1, 3, es};
        cr_assert_eq(nk_split(&sp, &whole, out, parts, backs), NK_OK);
        for (int i = 0; i < 3; i++)
            cr_assert_eq(memcmp(back[i], in[i], (size_t)nk_shape_numel(&parts[i]) * es), 0);
    }
    nk_shape bad = S(3, 2, 5, 4);
    nk_concat_params cp = {1, 3, 4};
    uint8_t buf[48 * 8];
    const void *ins[3] = {buf, buf, buf};
    cr_assert_eq(nk_concat(&cp, parts, ins, &bad, buf), NK_EARG);
    cp.axis = 3;
    cr_assert_eq(nk_concat(&cp, parts, ins, &whole, buf), NK_EARG);
}

typedef struct {
    nk_shape in, out;
    int64_t start[4], step[4];
} slcase;

Test(kernels_shape, slice_with_negative_steps_matches_naive)
{
    const slcase c[] = {
        {S(1, 10), S(1, 4), {2}, {2}},
        {S(1, 10), S(1, 10), {9}, {-1}},              /* reverse */
        {S(1, 10), S(1, 3), {8}, {-3}},               /* 8, 5, 2 */
        {S(2, 4, 5), S(2, 2, 5), {1, 0}, {2, 1}},     /* rows, full inner: merged path */
        {S(3, 2, 3, 4), S(3, 2, 2, 2), {0, 2, 3}, {1, -1, -2}},
        {S(3, 3, 1, 6), S(3, 1, 1, 3), {2, 0, 5}, {1, 1, -2}},
        {S(4, 2, 2, 3, 4), S(4, 2, 1, 3, 4), {0, 1, 0, 0}, {1, 1, 1, 1}},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        for (size_t s = 0; s < 4; s++) {
            size_t es = sizes[s];
            uint8_t in[128 * 8], out[128 * 8];
            iota_bytes(in, nk_shape_numel(&c[i].in), es);
            nk_slice_params p = {.elem_size = es};
            for (int d = 0; d < c[i].in.rank; d++) {
                p.start[d] = c[i].start[d];
                p.step[d] = c[i].step[d];
            }
            cr_assert_eq(nk_slice(&p, &c[i].in, in, &c[i].out, out), NK_OK, "case %zu", i);
            for (int64_t f = 0; f < nk_shape_numel(&c[i].out); f++) {
                int64_t idx[4];
                unflat(&c[i].out, f, idx);
                for (int d = 0; d < c[i].in.rank; d++)
                    idx[d] = c[i].start[d] + idx[d] * c[i].step[d];
                cr_assert_eq(el(out, f, es), el(in, flat(&c[i].in, idx), es), "case %zu es %zu", i, es);
            }
        }
    /* reading past the end is refused */
    nk_shape in = S(1, 10), out = S(1, 4);
    nk_slice_params p = {{8}, {1}, 4};
    float buf[10];
    cr_assert_eq(nk_slice(&p, &in, buf, &out, buf), NK_EARG);
    p.start[0] = 0;
    p.step[0] = 0;
    cr_assert_eq(nk_slice(&p, &in, buf, &out, buf), NK_EARG);
}

static int next_perm(int *p, int n)
{
    int i = n - 2;
    while (i >= 0 && p[i] >= p[i + 1])
        i--;
    if (i < 0)
        return 0;
    int j = n - 1;
    while (p[j] <= p[i])
        j--;
    int t = p[i];
    p[i] = p[j];
    p[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--)
        t = p[a], p[a] = p[b], p[b] = t;
    return 1;
}

Test(kernels_shape, transpose_every_perm_matches_naive)
{
    const nk_shape shapes[] = {S(3, 2, 3, 4), S(4, 2, 1, 3, 5), S(4, 1, 3, 1, 2), S(2, 70, 45), S(4, 3, 33, 2, 40)};
    static uint8_t in[8000 * 8], out[8000 * 8];
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (size_t s = 0; s < 4; s++) {
            size_t es = sizes[s];
            const nk_shape *xs = &shapes[k];
            int64_t n = nk_shape_numel(xs);
            iota_bytes(in, n, es);
            int perm[NK_MAX_RANK];
            for (int d = 0; d < xs->rank; d++)
                perm[d] = d;
            do {
                nk_transpose_params p = {.elem_size = es};
                nk_shape ys = {.rank = xs->rank};
                for (int d = 0; d < xs->rank; d++) {
                    p.perm[d] = perm[d];
                    ys.dims[d] = xs->dims[perm[d]];
                }
                cr_assert_eq(nk_transpose(&p, xs, in, out), NK_OK);
                for (int64_t f = 0; f < n; f++) {
                    int64_t oi[NK_MAX_RANK], ii[NK_MAX_RANK];
                    unflat(&ys, f, oi);
                    for (int d = 0; d < xs->rank; d++)
                        ii[perm[d]] = oi[d];
                    cr_assert_eq(el(out, f, es), el(in, flat(xs, ii), es), "shape %zu es %zu", k, es);
                }
            } while (next_perm(perm, xs->rank));
        }
    nk_shape xs = S(2, 2, 2);
    nk_transpose_params p = {{0, 0}, 4};
    cr_assert_eq(nk_transpose(&p, &xs, in, out), NK_EARG);
}

Test(kernels_shape, pad_modes_1d_as_numpy)
{
    /* expected rows from numpy.pad([1, 2, 3], ...) */
    const struct {
        nk_pad_mode mode;
        int64_t b, e;
        int out[10];
    } c[] = {
        {NK_PAD_CONSTANT, 2, 2, {9, 9, 1, 2, 3, 9, 9}},
        {NK_PAD_REFLECT, 2, 2, {3, 2, 1, 2, 3, 2, 1}},
        {NK_PAD_EDGE, 2, 2, {1, 1, 1, 2, 3, 3, 3}},
        {NK_PAD_REFLECT, 5, 0, {2, 1, 2, 3, 2, 1, 2, 3}}, /* wider than the input */
        {NK_PAD_REFLECT, 1, 6, {2, 1, 2, 3, 2, 1, 2, 3, 2, 1}},
        {NK_PAD_CONSTANT, -1, 1, {2, 3, 9}}, /* a negative pad crops */
        {NK_PAD_EDGE, 0, -2, {1}},
        {NK_PAD_CONSTANT, -3, 2, {9, 9}},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        for (size_t s = 0; s < 4; s++) {
            size_t es = sizes[s];
            uint8_t x[3 * 8] = {0}, y[10 * 8], nine[8] = {0};
            for (int k = 0; k < 3; k++)
                x[k * es] = (uint8_t)(k + 1);
            nine[0] = 9;
            nk_shape xs = S(1, 3), ys = S(1, (int)(3 + c[i].b + c[i].e));
            nk_pad_params p = {c[i].mode, {c[i].b}, {c[i].e}, nine, es};
            cr_assert_eq(nk_pad(&p, &xs, x, &ys, y), NK_OK, "case %zu", i);
            for (int k = 0; k < ys.dims[0]; k++)
                cr_assert_eq(el(y, k, es), (uint64_t)c[i].out[k], "case %zu es %zu at %d", i, es, k);
        }
}

Test(kernels_shape, pad_2d_every_mode)
{
    /* numpy.pad([[1, 2], [3, 4]], ((1, 0), (0, 2)), mode) */
    const int expect[3][12] = {
        {0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0},
        {3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4}, /* reflect */
        {1, 2, 2, 2, 1, 2, 2, 2, 3, 4, 4, 4}, /* edge */
    };
    float x[4] = {1, 2, 3, 4}, y[12], zero = 0;
    nk_shape xs = S(2, 2, 2), ys = S(2, 3, 4);
    for (int m = 0; m < 3; m++) {
        nk_pad_params p = {(nk_pad_mode)m, {1, 0}, {0, 2}, &zero, 4};
        cr_assert_eq(nk_pad(&p, &xs, x, &ys, y), NK_OK);
        for (int k = 0; k < 12; k++)
            cr_assert_eq(y[k], (float)expect[m][k], "mode %d at %d", m, k);
    }
    /* reflect on an empty axis has nothing to mirror */
    nk_shape es = S(2, 2, 0), eo = S(2, 2, 2);
    nk_pad_params p = {NK_PAD_REFLECT, {0, 1}, {0, 1}, &zero, 4};
    cr_assert_eq(nk_pad(&p, &es, x, &eo, y), NK_EARG);
    p.mode = NK_PAD_CONSTANT;
    cr_assert_eq(nk_pad(&p, &es, x, &eo, y), NK_OK);
    cr_assert(y[0] == 0 && y[3] == 0);
    nk_shape wrong = S(2, 3, 3);
    p = (nk_pad_params){NK_PAD_EDGE, {1, 0}, {0, 2}, &zero, 4};
    cr_assert_eq(nk_pad(&p, &xs, x, &wrong, y), NK_EARG);
}

Test(kernels_shape, gather_negative_and_32_bit_indices)
{
    nk_shape xs = S(3, 2, 3, 2);
    for (size_t s = 0; s < 4; s++) {
        size_t es = sizes[s];
        uint8_t x[12 * 8], y[24 * 8];
        iota_bytes(x, 12, es);
        int64_t i64[4] = {2, -1, 0, -3};
        int32_t i32[4] = {2, -1, 0, -3};
        for (int w = 0; w < 2; w++) {
            nk_gather_params p = {1, w, es};
            cr_assert_eq(nk_gather(&p, &xs, x, w ? (void *)i64 : (void *)i32, 4, y, NULL), NK_OK);
            nk_shape ys = S(3, 2, 4, 2);
            for (int64_t f = 0; f < 16; f++) {
                int64_t idx[3];
                unflat(&ys, f, idx);
                idx[1] = i64[idx[1]] < 0 ? i64[idx[1]] + 3 : i64[idx[1]];
                cr_assert_eq(el(y, f, es), el(x, flat(&xs, idx), es));
            }
        }
    }
    int64_t bad_idx[2] = {1, 3}, bad = 0;
    nk_gather_params p = {1, 1, 4};
    float x[12], y[8];
    cr_assert_eq(nk_gather(&p, &xs, x, bad_idx, 2, y, &bad), NK_EARG);
    cr_assert_eq(bad, 3);
    bad_idx[1] = -4;
    cr_assert_eq(nk_gather(&p, &xs, x, bad_idx, 2, y, &bad), NK_EARG);
    cr_assert_eq(bad, -4);
}

Test(kernels_shape, expand_and_tile_match_naive)
{
    const struct {
        nk_shape in, exp, tile;
    } c[] = {
        {S(2, 3, 1), S(3, 2, 3, 4), S(2, 6, 2)},
        {S(1, 1), S(2, 3, 5), S(1, 7)},
        {S(3, 1, 2, 1), S(3, 4, 2, 3), S(3, 2, 4, 3)},
        {S(0), S(2, 2, 2), S(0)},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        for (size_t s = 0; s < 4; s++) {
            size_t es = sizes[s];
            uint8_t x[8 * 8], y[64 * 8];
            iota_bytes(x, nk_shape_numel(&c[i].in), es);
            cr_assert_eq(nk_expand(es, &c[i].in, x, &c[i].exp, y), NK_OK, "case %zu", i);
            for (int64_t f = 0; f < nk_shape_numel(&c[i].exp); f++) {
                int64_t idx[NK_MAX_RANK], ii[NK_MAX_RANK];
                unflat(&c[i].exp, f, idx);
                int off = c[i].exp.rank - c[i].in.rank;
                for (int d = 0; d < c[i].in.rank; d++)
                    ii[d] = c[i].in.dims[d] == 1 ? 0 : idx[d + off];
                cr_assert_eq(el(y, f, es), el(x, flat(&c[i].in, ii), es), "expand case %zu", i);
            }
            cr_assert_eq(nk_tile(es, &c[i].in, x, &c[i].tile, y), NK_OK, "case %zu", i);
            for (int64_t f = 0; f < nk_shape_numel(&c[i].tile); f++) {
                int64_t idx[NK_MAX_RANK];
                unflat(&c[i].tile, f, idx);
                for (int d = 0; d < c[i].in.rank; d++)
                    idx[d] %= c[i].in.dims[d];
                cr_assert_eq(el(y, f, es), el(x, flat(&c[i].in, idx), es), "tile case %zu", i);
            }
        }
    nk_shape in = S(1, 3), out = S(1, 4);
    float x[4], y[4];
    cr_assert_eq(nk_expand(4, &in, x, &out, y), NK_EARG);
    cr_assert_eq(nk_tile(4, &in, x, &out, y), NK_EARG);
}

Test(kernels_shape, fill_and_range)
{
    uint16_t v = 0xabcd, y[5];
    cr_assert_eq(nk_fill(2, &v, 5, y), NK_OK);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(y[i], 0xabcd);
    cr_assert_eq(nk_range_count_i64(0, 10, 3), 4);
    cr_assert_eq(nk_range_count_i64(10, 0, -3), 4);
    cr_assert_eq(nk_range_count_i64(1, 1, 1), 0);
    cr_assert_eq(nk_range_count_i64(5, 1, 2), 0);
    cr_assert_eq(nk_range_count_i64(0, 1, 0), -1);
    /* (2^64 - 1) / (2^63 - 1) is just over 2 */
    cr_assert_eq(nk_range_count_i64(INT64_MIN, INT64_MAX, INT64_MAX), 3);
    cr_assert_eq(nk_range_count_f32(0.0f, 1.0f, 0.3f), 4);
    cr_assert_eq(nk_range_count_f32(1.0f, -1.0f, -0.5f), 4);
    cr_assert_eq(nk_range_count_f32(0.0f, 1.0f, 0.0f), -1);
    int64_t r64[4];
    nk_range_i64(10, -3, 4, r64);
    cr_assert(r64[0] == 10 && r64[1] == 7 && r64[2] == 4 && r64[3] == 1);
    int32_t r32[3];
    nk_range_i32(-2, 5, 3, r32);
    cr_assert(r32[0] == -2 && r32[1] == 3 && r32[2] == 8);
    float rf[4];
    nk_range_f32(1.0f, -0.5f, 4, rf);
    cr_assert(rf[0] == 1.0f && rf[1] == 0.5f && rf[2] == 0.0f && rf[3] == -0.5f);
}

/* ---- adapters (src/ref/ops_shape.c) ------------------------------------------------ */

static ir_graph *G(void)
{
    return ir_graph_new(npu_alloc_default());
}

static npu_status eval(ir_graph *g, ir_node *n, npu_err *e)
{
    npu_err_clear(e);
    return ref_eval_node(g, n, e);
}

#define I64(...) ((int64_t[]){__VA_ARGS__})
#define F32(...) ((float[]){__VA_ARGS__})

static ir_tensor *ints(ir_graph *g, int n, const int64_t *v)
{
    return tg_const(g, NULL, IR_I64, 1, I64(n), v);
}

Test(ref_shape, slice_from_inputs_and_from_attributes)
{
    ir_graph *g = G();
    float x[24];
    for (int i = 0; i < 24; i++)
        x[i] = (float)i;
    ir_tensor *xt = tg_const(g, "x", IR_F32, 3, I64(2, 3, 4), x);
    /* x[:, ::-2, 1:INT64_MAX] on [2, 3, 4] -> [2, 2, 3]: rows 2, 0 and columns 1..3 */
    ir_tensor *y = tg_tensor(g, NULL, IR_F32, 3, I64(2, 2, 3));
    ir_tensor *in[5] = {xt, ints(g, 2, I64(-1, 1)), ints(g, 2, I64(INT64_MIN, INT64_MAX)), ints(g, 2, I64(1, -1)),
                        ints(g, 2, I64(-2, 1))};
    npu_err e;
    cr_assert_eq(eval(g, tg_node(g, IR_OP_SLICE, 5, in, 1, &y), &e), NPU_OK, "%s", e.msg);
    const float *v = y->data;
    for (int b = 0; b < 2; b++)
        for (int r = 0; r < 2; r++)
            for (int c = 0; c < 3; c++)
                cr_assert_eq(v[(b * 2 + r) * 3 + c], (float)(b * 12 + (2 - 2 * r) * 4 + c + 1));
    /* opset-1 form: attributes; ends past the end clamp */
    ir_tensor *y2 = tg_tensor(g, NULL, IR_F32, 3, I64(1, 3, 2));
    ir_node *n = tg_node(g, IR_OP_SLICE, 1, &xt, 1, &y2);
    ir_set_ints(g, n, "starts", 2, I64(1, -2));
    ir_set_ints(g, n, "ends", 2, I64(1000, 1000));
    ir_set_ints(g, n, "axes", 2, I64(0, 2));
    cr_assert_eq(eval(g, n, &e), NPU_OK, "%s", e.msg);
    v = y2->data;
    cr_assert(v[0] == 14 && v[1] == 15 && v[2] == 18 && v[5] == 23);
    /* extreme steps pick one element without overflowing */
    ir_tensor *y4 = tg_tensor(g, NULL, IR_F32, 3, I64(1, 1, 4));
    ir_tensor *in4[5] = {xt, ints(g, 2, I64(1, 2)), ints(g, 2, I64(INT64_MAX, INT64_MIN)), ints(g, 2, I64(0, 1)),
                         ints(g, 2, I64(INT64_MAX, INT64_MIN))};
    cr_assert_eq(eval(g, tg_node(g, IR_OP_SLICE, 5, in4, 1, &y4), &e), NPU_OK, "%s", e.msg);
    cr_assert(((float *)y4->data)[0] == 20 && ((float *)y4->data)[3] == 23);
    /* a wrong output shape is named */
    ir_tensor *y3 = tg_tensor(g, NULL, IR_F32, 3, I64(1, 3, 3));
    n = tg_node(g, IR_OP_SLICE, 1, &xt, 1, &y3);
    ir_set_ints(g, n, "starts", 2, I64(1, -2));
    ir_set_ints(g, n, "ends", 2, I64(1000, 1000));
    ir_set_ints(g, n, "axes", 2, I64(0, 2));
    cr_assert_eq(eval(g, n, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "axis 2") && strstr(e.msg, "(Slice)"), "%s", e.msg);
    ir_graph_free(g);
}

/* Backward through index 0 after shape inference, which writes the clamped
 * starts/ends/steps back as attributes: the end before index 0 must not read
 * as the last index when the reference reads them (x[2::-2] gave "the
 * slice has 0 elements"; found against onnxruntime on random models). */
Test(ref_shape, slice_backward_through_index_0_after_inference)
{
    ir_graph *g = G();
    ir_tensor *xt = tg_const(g, "x", IR_F32, 2, I64(2, 3), F32(0, 1, 2, 3, 4, 5));
    /* rows [::-1] (end -3 -> -1), columns [2:-4:-2] -> 2, 0; then one element: columns [0:-5:-1] */
    const int64_t ends[2][2] = {{-3, -4}, {-3, -5}}, starts[2][2] = {{-1, 2}, {-1, 0}}, steps[2][2] = {{-1, -2},
                                                                                                     {-1, -1}};
    const float want[2][4] = {{5, 3, 2, 0}, {3, 0, 0, 0}};
    for (int k = 0; k < 2; k++) {
        ir_tensor *y = tg_tensor(g, NULL, IR_F32, 2, I64(2, 2 - k));
        ir_tensor *in[5] = {xt, ints(g, 2, starts[k]), ints(g, 2, ends[k]), ints(g, 2, I64(0, 1)),
                            ints(g, 2, steps[k])};
        ir_node *n = tg_node(g, IR_OP_SLICE, 5, in, 1, &y);
        npu_err e;
        npu_err_clear(&e);
        cr_assert_eq(ir_infer_node(g, n, &e), NPU_OK, "%s", e.msg);
        cr_assert(y->dims[0] == 2 && y->dims[1] == 2 - k, "case %d: inferred %lldx%lld", k, (long long)y->dims[0],
                  (long long)y->dims[1]);
        cr_assert_eq(eval(g, n, &e), NPU_OK, "case %d: %s", k, e.msg);
        for (int i = 0; i < 4 - 2 * k; i++)
            cr_assert_eq(((float *)y->data)[i], want[k][i], "case %d element %d", k, i);
    }
    ir_graph_free(g);
}

Test(ref_shape, pad_opset11_inputs_and_opset2_attributes)
{
    ir_graph *g = G();
    ir_tensor *x8 = tg_const(g, "x8", IR_I8, 2, I64(2, 2), (int8_t[]){1, 2, 3, 4});
    ir_tensor *cv = tg_const(g, "cv", IR_I8, 0, NULL, (int8_t[]){-7});
    ir_tensor *y = tg_tensor(g, NULL, IR_I8, 2, I64(3, 3));
    ir_tensor *in[3] = {x8, ints(g, 4, I64(1, 0, 0, 1)), cv};
    npu_err e;
    cr_assert_eq(eval(g, tg_node(g, IR_OP_PAD, 3, in, 1, &y), &e), NPU_OK, "%s", e.msg);
    const int8_t want[9] = {-7, -7, -7, 1, 2, -7, 3, 4, -7};
    cr_assert_eq(memcmp(y->data, want, 9), 0);
    /* old form: pads and value attributes, mode reflect and edge */
    ir_tensor *xf = tg_const(g, "xf", IR_F32, 1, I64(3), F32(1, 2, 3));
    const char *modes[3] = {"constant", "reflect", "edge"};
    const float expect[3][6] = {{2.5f, 2.5f, 1, 2, 3, 2.5f}, {3, 2, 1, 2, 3, 2}, {1, 1, 1, 2, 3, 3}};
    for (int m = 0; m < 3; m++) {
        ir_tensor *yf = tg_tensor(g, NULL, IR_F32, 1, I64(6));
        ir_node *n = tg_node(g, IR_OP_PAD, 1, &xf, 1, &yf);
        ir_set_ints(g, n, "pads", 2, I64(2, 1));
        ir_set_float(g, n, "value", 2.5f);
        ir_set_string(g, n, "mode", modes[m]);
        cr_assert_eq(eval(g, n, &e), NPU_OK, "%s", e.msg);
        for (int k = 0; k < 6; k++)
            cr_assert_eq(((float *)yf->data)[k], expect[m][k], "mode %s at %d", modes[m], k);
    }
    ir_tensor *yw = tg_tensor(g, NULL, IR_F32, 1, I64(6));
    ir_node *n = tg_node(g, IR_OP_PAD, 1, &xf, 1, &yw);
    ir_set_ints(g, n, "pads", 2, I64(2, 1));
    ir_set_string(g, n, "mode", "wrap");
    cr_assert_eq(eval(g, n, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "mode 'wrap'"), "%s", e.msg);
    ir_graph_free(g);
}

Test(ref_shape, split_concat_transpose_gather)
{
    ir_graph *g = G();
    float x[12];
    for (int i = 0; i < 12; i++)
        x[i] = (float)i;
    ir_tensor *xt = tg_const(g, "x", IR_F32, 2, I64(3, 4), x);
    /* Split-13: sizes as input 1 */
    ir_tensor *a = tg_tensor(g, NULL, IR_F32, 2, I64(3, 1)), *b = tg_tensor(g, NULL, IR_F32, 2, I64(3, 3));
    ir_node *n = tg_node(g, IR_OP_SPLIT, 2, (ir_tensor *[]){xt, ints(g, 2, I64(1, 3))}, 2, (ir_tensor *[]){a, b});
    ir_set_int(g, n, "axis", -1);
    npu_err e;
    cr_assert_eq(eval(g, n, &e), NPU_OK, "%s", e.msg);
    cr_assert(((float *)a->data)[1] == 4 && ((float *)b->data)[0] == 1 && ((float *)b->data)[8] == 11);
    /* split sizes that contradict the outputs */
    ir_tensor *a2 = tg_tensor(g, NULL, IR_F32, 2, I64(3, 1)), *b2 = tg_tensor(g, NULL, IR_F32, 2, I64(3, 3));
    n = tg_node(g, IR_OP_SPLIT, 1, &xt, 2, (ir_tensor *[]){a2, b2});
    ir_set_int(g, n, "axis", 1);
    ir_set_ints(g, n, "split", 2, I64(2, 2));
    cr_assert_eq(eval(g, n, &e), NPU_EUSER);
    /* Concat back, negative axis */
    ir_tensor *c = tg_tensor(g, NULL, IR_F32, 2, I64(3, 4));
    n = tg_node(g, IR_OP_CONCAT, 2, (ir_tensor *[]){a, b}, 1, &c);
    ir_set_int(g, n, "axis", -1);
    cr_assert_eq(eval(g, n, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(memcmp(c->data, x, sizeof x), 0);
    /* Transpose without perm reverses the dims */
    ir_tensor *t = tg_tensor(g, NULL, IR_F32, 2, I64(4, 3));
    cr_assert_eq(eval(g, tg_node(g, IR_OP_TRANSPOSE, 1, &xt, 1, &t), &e), NPU_OK, "%s", e.msg);
    cr_assert(((float *)t->data)[1] == 4 && ((float *)t->data)[3] == 1);
    /* Gather with int32 indices; then one out of range */
    ir_tensor *idx = tg_const(g, NULL, IR_I32, 1, I64(2), (int32_t[]){-1, 0});
    ir_tensor *gy = tg_tensor(g, NULL, IR_F32, 2, I64(2, 4));
    cr_assert_eq(eval(g, tg_node(g, IR_OP_GATHER, 2, (ir_tensor *[]){xt, idx}, 1, &gy), &e), NPU_OK, "%s", e.msg);
    cr_assert(((float *)gy->data)[0] == 8 && ((float *)gy->data)[4] == 0);
    ir_tensor *bad = tg_const(g, NULL, IR_I64, 1, I64(1), I64(5));
    ir_tensor *gy2 = tg_tensor(g, NULL, IR_F32, 2, I64(3, 1));
    n = ir_node_new(g, IR_OP_GATHER, "g1", 2, (ir_tensor *[]){xt, bad}, 1, &gy2);
    ir_set_int(g, n, "axis", 1);
    cr_assert_eq(eval(g, n, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "node 'g1' (Gather)") && strstr(e.msg, "index 5 is out of range"), "%s", e.msg);
    ir_graph_free(g);
}

Test(ref_shape, shape_constant_of_shape_range_expand_tile_copies)
{
    ir_graph *g = G();
    ir_tensor *x = tg_const(g, "x", IR_F32, 4, I64(1, 3, 5, 7), NULL);
    npu_err e;
    ir_tensor *s = tg_tensor(g, NULL, IR_I64, 1, I64(2));
    ir_node *n = tg_node(g, IR_OP_SHAPE, 1, &x, 1, &s);
    ir_set_int(g, n, "start", 1);
    ir_set_int(g, n, "end", -1);
    cr_assert_eq(eval(g, n, &e), NPU_OK, "%s", e.msg);
    cr_assert(((int64_t *)s->data)[0] == 3 && ((int64_t *)s->data)[1] == 5);

    ir_tensor *val = tg_const(g, "seven", IR_I64, 1, I64(1), I64(7));
    ir_tensor *co = tg_tensor(g, NULL, IR_I64, 2, I64(3, 5));
    n = tg_node(g, IR_OP_CONSTANT_OF_SHAPE, 1, &s, 1, &co);
    ir_set_tensor(g, n, "value", val);
    cr_assert_eq(eval(g, n, &e), NPU_OK, "%s", e.msg);
    cr_assert(((int64_t *)co->data)[0] == 7 && ((int64_t *)co->data)[14] == 7);
    ir_tensor *cz = tg_tensor(g, NULL, IR_F32, 2, I64(3, 5));
    cr_assert_eq(eval(g, tg_node(g, IR_OP_CONSTANT_OF_SHAPE, 1, &s, 1, &cz), &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(((float *)cz->data)[3], 0.0f);

    ir_tensor *r = tg_tensor(g, NULL, IR_I64, 1, I64(3));
    ir_tensor *ri[3] = {tg_const(g, NULL, IR_I64, 0, NULL, I64(5)), tg_const(g, NULL, IR_I64, 0, NULL, I64(-1)),
                        tg_const(g, NULL, IR_I64, 0, NULL, I64(-2))};
    cr_assert_eq(eval(g, tg_node(g, IR_OP_RANGE, 3, ri, 1, &r), &e), NPU_OK, "%s", e.msg);
    cr_assert(((int64_t *)r->data)[0] == 5 && ((int64_t *)r->data)[2] == 1);
    ir_tensor *r2 = tg_tensor(g, NULL, IR_I64, 1, I64(4));
    cr_assert_eq(eval(g, tg_node(g, IR_OP_RANGE, 3, ri, 1, &r2), &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "3 elements"), "%s", e.msg);
    ir_tensor *rf = tg_tensor(g, NULL, IR_F32, 1, I64(4));
    ir_tensor *rfi[3] = {tg_const(g, NULL, IR_F32, 0, NULL, F32(0)), tg_const(g, NULL, IR_F32, 0, NULL, F32(1)),
                         tg_const(g, NULL, IR_F32, 0, NULL, F32(0.25f))};
    cr_assert_eq(eval(g, tg_node(g, IR_OP_RANGE, 3, rfi, 1, &rf), &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(((float *)rf->data)[3], 0.75f);

    ir_tensor *small = tg_const(g, "small", IR_I32, 2, I64(2, 1), (int32_t[]){4, 9});
    ir_tensor *ex = tg_tensor(g, NULL, IR_I32, 3, I64(2, 2, 3)), *ti = tg_tensor(g, NULL, IR_I32, 2, I64(4, 2));
    cr_assert_eq(eval(g, tg_node(g, IR_OP_EXPAND, 2, (ir_tensor *[]){small, ints(g, 3, I64(2, 1, 3))}, 1, &ex), &e),
                 NPU_OK, "%s", e.msg);
    cr_assert(((int32_t *)ex->data)[2] == 4 && ((int32_t *)ex->data)[3] == 9 && ((int32_t *)ex->data)[6] == 4);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_TILE, 2, (ir_tensor *[]){small, ints(g, 2, I64(2, 2))}, 1, &ti), &e),
                 NPU_OK, "%s", e.msg);
    const int32_t tw[8] = {4, 4, 9, 9, 4, 4, 9, 9};
    cr_assert_eq(memcmp(ti->data, tw, sizeof tw), 0);

    ir_tensor *rs = tg_tensor(g, NULL, IR_I32, 1, I64(2)), *mask = tg_tensor(g, NULL, IR_BOOL, 2, I64(2, 1));
    ir_tensor *dr = tg_tensor(g, NULL, IR_I32, 2, I64(2, 1));
    cr_assert_eq(eval(g, tg_node(g, IR_OP_RESHAPE, 2, (ir_tensor *[]){small, ints(g, 1, I64(2))}, 1, &rs), &e),
                 NPU_OK);
    cr_assert(((int32_t *)rs->data)[1] == 9);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_DROPOUT, 1, &small, 2, (ir_tensor *[]){dr, mask}), &e), NPU_OK);
    cr_assert(((uint8_t *)mask->data)[0] == 1 && ((uint8_t *)mask->data)[1] == 1);
    /* training mode with ratio 0 drops nothing; another ratio is refused */
    ir_tensor *zero = tg_const(g, NULL, IR_F32, 0, NULL, F32(0)), *half = tg_const(g, NULL, IR_F32, 0, NULL, F32(0.5f));
    ir_tensor *yes = tg_const(g, NULL, IR_BOOL, 0, NULL, (uint8_t[]){1});
    ir_tensor *dr2 = tg_tensor(g, NULL, IR_I32, 2, I64(2, 1)), *dr3 = tg_tensor(g, NULL, IR_I32, 2, I64(2, 1));
    cr_assert_eq(eval(g, tg_node(g, IR_OP_DROPOUT, 3, (ir_tensor *[]){small, zero, yes}, 1, &dr2), &e), NPU_OK, "%s",
                 e.msg);
    cr_assert(((int32_t *)dr2->data)[1] == 9);
    cr_assert_eq(eval(g, tg_node(g, IR_OP_DROPOUT, 3, (ir_tensor *[]){small, half, yes}, 1, &dr3), &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "training_mode"), "%s", e.msg);
    ir_tensor *wrong = tg_tensor(g, NULL, IR_I32, 1, I64(3));
    cr_assert_eq(eval(g, tg_node(g, IR_OP_FLATTEN, 1, &small, 1, &wrong), &e), NPU_EUSER);
    ir_graph_free(g);
}
