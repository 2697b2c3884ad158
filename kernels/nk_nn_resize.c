/* Resize (nearest, linear, cubic; any rank) with ONNX's coordinate
 * transformations. Separable: each output coordinate of each dimension
 * gets up to four (input index, weight) taps in a table in scratch; an
 * output element sums the product of its taps over the dimensions that
 * actually interpolate (usually the last two). Coordinates are computed in
 * double, as the ONNX reference does, so ties in nearest mode land alike. */
#include <math.h>
#include <string.h>

#include "kernels/nk_nn_internal.h"

typedef struct tap {
    int32_t idx[4];
    float w[4];
    int32_t outside; /* tf_crop_and_resize: coordinate outside the input */
} tap;

static int ntaps(nk_resize_mode m)
{
    return m == NK_RESIZE_NEAREST ? 1 : m == NK_RESIZE_LINEAR ? 2 : 4;
}

static int resize_valid(const nk_resize_params *p)
{
    if (p->rank < 1 || p->rank > NK_MAX_RANK || (unsigned)p->mode > NK_RESIZE_CUBIC ||
        (unsigned)p->coord > NK_COORD_TF_CROP_AND_RESIZE || (unsigned)p->nearest > NK_NEAREST_SIMPLE)
        return 0;
    int64_t in = 1, out = 1;
    for (int d = 0; d < p->rank; d++) {
        if (p->in[d] < 1 || p->out[d] < 0 || !(p->scale[d] >= 0.0f) || isinf(p->scale[d]))
            return 0;
        in *= p->in[d];
        out *= p->out[d];
        if (in > INT32_MAX || out > INT32_MAX)
            return 0;
    }
    return 1;
}

size_t nk_resize_scratch_size(const nk_resize_params *p)
{
    if (!resize_valid(p))
        return 0;
    size_t n = 0;
    for (int d = 0; d < p->rank; d++)
        n += (size_t)p->out[d];
    return n * sizeof(tap) + 16;
}

static double scale_of(const nk_resize_params *p, int d)
{
    return p->scale[d] > 0.0f ? (double)p->scale[d] : (double)p->out[d] / p->in[d];
}

static double source_coord(const nk_resize_params *p, int d, int32_t o)
{
    double x = o, scale = scale_of(p, d), in = p->in[d], out = p->out[d];
    /* align_corners divides by the resized length minus one, which the ONNX
     * reference takes as scale * in (equal to out unless out was rounded) */
    double len = p->scale[d] > 0.0f ? scale * in : out;
    /* an axis the resize leaves alone (same size, scale 1) is copied, as onnxruntime does: ONNX's formula
     * would move tf_half_pixel_for_nn's nearest by half a pixel on it (N and C too), to x + 1 with ceil
     * rounding; every other transformation but the crop maps it to itself anyway */
    if (out == in && scale == 1.0 && p->coord != NK_COORD_TF_CROP_AND_RESIZE)
        return x;
    switch (p->coord) {
    case NK_COORD_HALF_PIXEL: return (x + 0.5) / scale - 0.5;
    case NK_COORD_PYTORCH_HALF_PIXEL: return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case NK_COORD_ALIGN_CORNERS: return len != 1 ? x * (in - 1) / (len - 1) : 0.0;
    case NK_COORD_ASYMMETRIC: return x / scale;
    case NK_COORD_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / scale;
    case NK_COORD_TF_CROP_AND_RESIZE: {
        double s = p->roi_start[d], e = p->roi_end[d];
        return out > 1 ? s * (in - 1) + x * (e - s) * (in - 1) / (out - 1) : 0.5 * (s + e) * (in - 1);
    }
    }
    return 0.0;
}

static double nearest_index(const nk_resize_params *p, int d, double x)
{
    switch (p->nearest) {
    case NK_NEAREST_ROUND_PREFER_FLOOR: return ceil(x - 0.5);
    case NK_NEAREST_ROUND_PREFER_CEIL: return floor(x + 0.5);
    case NK_NEAREST_FLOOR: return floor(x);
    case NK_NEAREST_CEIL: return ceil(x);
    case NK_NEAREST_SIMPLE: return scale_of(p, d) < 1.0 ? ceil(x) : floor(x);
    }
    return floor(x);
}

static int32_t clampi(double v, int32_t hi)
{
    return v < 0 ? 0 : (v > hi ? hi : (int32_t)v);
}

static void make_tap(const nk_resize_params *p, int d, int32_t o, tap *t)
{
    const int32_t last = p->in[d] - 1;
    double x = source_coord(p, d, o);
    memset(t, 0, sizeof *t);
    t->outside = p->coord == NK_COORD_TF_CROP_AND_RESIZE && (x < 0 || x > last);
    if (p->mode == NK_RESIZE_NEAREST) {
        t->idx[0] = clampi(nearest_index(p, d, x), last);
        t->w[0] = 1.0f;
        return;
    }
    double f = floor(x), r = x - f;
    if (p->mode == NK_RESIZE_LINEAR) {
        t->idx[0] = clampi(f, last);
        t->idx[1] = clampi(f + 1, last);
        t->w[0] = (float)(1.0 - r);
        t->w[1] = (float)r;
        return;
    }
    /* cubic convolution (Keys) with coefficient a; taps at f-1 .. f+2 */
    double a = p->cubic_a, w[4], sum = 0;
    double s1 = r + 1, s2 = 1 - r, s3 = 2 - r;
    w[0] = ((a * s1 - 5 * a) * s1 + 8 * a) * s1 - 4 * a;
    w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
    w[2] = ((a + 2) * s2 - (a + 3)) * s2 * s2 + 1;
    w[3] = ((a * s3 - 5 * a) * s3 + 8 * a) * s3 - 4 * a;
    for (int i = 0; i < 4; i++) {
        double at = f - 1 + i;
        if (p->exclude_outside && (at < 0 || at > last))
            w[i] = 0;
        sum += w[i];
        t->idx[i] = clampi(at, last);
    }
    for (int i = 0; i < 4; i++)
        t->w[i] = (float)(p->exclude_outside && sum != 0 ? w[i] / sum : w[i]);
}

/* A tap that reads one input element at weight 1 (then only tap 0 is used). */
static int tap_is_copy(tap *t, int n)
{
    int one = -1;
    for (int i = 0; i < n; i++) {
        if (t->w[i] == 0.0f)
            continue;
        if (t->w[i] != 1.0f || one >= 0)
            return 0;
        one = i;
    }
    if (one < 0)
        return 0;
    t->idx[0] = t->idx[one];
    t->w[0] = 1.0f;
    return 1;
}

nk_status nk_resize(const nk_resize_params *p, const float *x, float *y, void *scratch)
{
    if (!resize_valid(p))
        return NK_EARG;
    int64_t total = 1;
    for (int d = 0; d < p->rank; d++)
        total *= p->out[d];
    if (total == 0)
        return NK_OK;
    if (!x || !y || !scratch)
        return NK_EARG;
    const int r = p->rank, nt = ntaps(p->mode);
    tap *tabs[NK_MAX_RANK];
    tap *next = (tap *)(((uintptr_t)scratch + 15) & ~(uintptr_t)15);
    int taps_of[NK_MAX_RANK]; /* 1 when every output coordinate of the dim copies */
    int64_t stride[NK_MAX_RANK];
    int64_t s = 1;
    for (int d = r - 1; d >= 0; d--) {
        stride[d] = s;
        s *= p->in[d];
    }
    for (int d = 0; d < r; d++) {
        tabs[d] = next;
        next += p->out[d];
        int copy = 1;
        for (int32_t o = 0; o < p->out[d]; o++) {
            make_tap(p, d, o, &tabs[d][o]);
            copy &= tap_is_copy(&tabs[d][o], nt) || tabs[d][o].outside;
        }
        /* tap_is_copy rewrote copying taps into slot 0; keep the rest intact */
        taps_of[d] = copy ? 1 : nt;
        if (copy)
            continue;
        for (int32_t o = 0; o < p->out[d]; o++)
            make_tap(p, d, o, &tabs[d][o]);
    }
    int act[NK_MAX_RANK], na = 0;
    for (int d = 0; d < r; d++)
        if (taps_of[d] > 1)
            act[na++] = d;
    int32_t o[NK_MAX_RANK] = {0};
    for (int64_t e = 0; e < total; e++) {
        int64_t base = 0;
        int outside = 0;
        for (int d = 0; d < r; d++) {
            const tap *t = &tabs[d][o[d]];
            outside |= t->outside;
            if (taps_of[d] == 1)
                base += t->idx[0] * stride[d];
        }
        float v;
        if (outside) {
            v = p->extrapolation_value;
        } else if (na == 0) {
            v = x[base];
        } else {
            int c[NK_MAX_RANK] = {0};
            v = 0.0f;
            for (;;) {
                int64_t off = base;
                float w = 1.0f;
                for (int q = 0; q < na; q++) {
                    const tap *t = &tabs[act[q]][o[act[q]]];
                    off += t->idx[c[q]] * stride[act[q]];
                    w *= t->w[c[q]];
                }
                v += w * x[off];
                int q = na - 1;
                while (q >= 0 && ++c[q] == nt)
                    c[q--] = 0;
                if (q < 0)
                    break;
            }
        }
        y[e] = v;
        for (int d = r - 1; d >= 0 && ++o[d] == p->out[d]; d--)
            o[d] = 0;
    }
    return NK_OK;
}
