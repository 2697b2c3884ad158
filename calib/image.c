/* Binary PGM / PPM and PNG calibration images and their mapping onto a model input
 * (layout, resize policy, mean / std). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calib/calib_internal.h"

size_t cal_image_bytes(const cal_image *im)
{
    return sizeof(float) * (size_t)im->width * (size_t)im->height * (size_t)im->channels;
}

/* Reads one header integer after whitespace and '#' comments. */
static bool header_int(const unsigned char *b, size_t size, size_t *at, long *v)
{
    for (;;) {
        while (*at < size && isspace(b[*at]))
            (*at)++;
        if (*at < size && b[*at] == '#') {
            while (*at < size && b[*at] != '\n')
                (*at)++;
            continue;
        }
        break;
    }
    if (*at >= size || !isdigit(b[*at]))
        return false;
    long x = 0;
    while (*at < size && isdigit(b[*at]) && x < 1000000)
        x = x * 10 + (b[(*at)++] - '0');
    *v = x;
    return true;
}

/* The pixel cap, from the header alone (a PNG declaring 20000x20000 made
 * calibration take 2 GB). */
npu_status cal_check_pixels(const char *name, uint64_t w, uint64_t h, npu_err *err)
{
    if (w * h > (uint64_t)CAL_IMAGE_MAX_PIXELS)
        return npu_fail(err, NPU_EUSER, "%s: image %llux%llu (%llu pixels), over the limit of %lld pixels per "
                        "calibration image (CAL_IMAGE_MAX_PIXELS)", name, (unsigned long long)w,
                        (unsigned long long)h, (unsigned long long)(w * h), (long long)CAL_IMAGE_MAX_PIXELS);
    return NPU_OK;
}

npu_status cal_image_parse(const void *buf, size_t size, const char *name, npu_alloc alloc, cal_image *out,
                           npu_err *err)
{
    const unsigned char *b = buf;
    memset(out, 0, sizeof *out);
    if (size >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8))
        return cal_parse_png(buf, size, name, alloc, out, err);
    if (size < 2 || b[0] != 'P' || (b[1] != '5' && b[1] != '6'))
        return npu_fail(err, NPU_EUSER, "%s: expected a binary PGM (P5), PPM (P6) or PNG image", name);
    int channels = b[1] == '5' ? 1 : 3;
    size_t at = 2;
    long w, h, maxval;
    if (!header_int(b, size, &at, &w) || !header_int(b, size, &at, &h) || !header_int(b, size, &at, &maxval))
        return npu_fail(err, NPU_EUSER, "%s: byte %zu: expected the width, height and maxval of the P%c header",
                        name, at, b[1]);
    if (w <= 0 || h <= 0 || w > 65536 || h > 65536 || maxval <= 0 || maxval > 65535)
        return npu_fail(err, NPU_EUSER, "%s: image %ldx%ld maxval %ld: expected sizes in 1..65536 and maxval in 1..65535",
                        name, w, h, maxval);
    npu_status st = cal_check_pixels(name, (uint64_t)w, (uint64_t)h, err);
    if (st != NPU_OK)
        return st;
    if (at >= size || !isspace(b[at]))
        return npu_fail(err, NPU_EUSER, "%s: byte %zu: expected one whitespace byte after maxval", name, at);
    at++;
    size_t bpv = maxval > 255 ? 2 : 1, n = (size_t)w * (size_t)h * (size_t)channels;
    if (size - at < n * bpv)
        return npu_fail(err, NPU_EUSER, "%s: %zu bytes of pixels, expected %zu for %ldx%ld%s", name, size - at,
                        n * bpv, w, h, channels == 3 ? "x3" : "");
    out->width = (int)w, out->height = (int)h, out->channels = channels;
    if (!(out->pixels = npu_malloc(alloc, cal_image_bytes(out))))
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    const unsigned char *p = b + at;
    for (size_t i = 0; i < n; i++) {
        unsigned v = bpv == 2 ? (unsigned)p[2 * i] << 8 | p[2 * i + 1] : p[i]; /* 16-bit PNM is big-endian */
        out->pixels[i] = (float)v / (float)maxval;
    }
    return NPU_OK;
}

/* One channel of the image at real coordinates of the output grid. */
static float sample_at(const cal_image *im, cal_resize rs, int c, int oy, int ox, int oh, int ow)
{
    float sy = (float)im->height / (float)oh, sx = (float)im->width / (float)ow;
    if (rs != CAL_RESIZE_BILINEAR) {
        int y = (int)floorf(((float)oy + 0.5f) * sy), x = (int)floorf(((float)ox + 0.5f) * sx);
        y = y < im->height ? y : im->height - 1;
        x = x < im->width ? x : im->width - 1;
        return im->pixels[((size_t)y * (size_t)im->width + (size_t)x) * (size_t)im->channels + (size_t)c];
    }
    float fy = fmaxf(((float)oy + 0.5f) * sy - 0.5f, 0.0f), fx = fmaxf(((float)ox + 0.5f) * sx - 0.5f, 0.0f);
    int y0 = (int)fy, x0 = (int)fx;
    int y1 = y0 + 1 < im->height ? y0 + 1 : im->height - 1, x1 = x0 + 1 < im->width ? x0 + 1 : im->width - 1;
    y0 = y0 < im->height ? y0 : im->height - 1;
    x0 = x0 < im->width ? x0 : im->width - 1;
    float wy = fy - (float)y0, wx = fx - (float)x0;
#define PX(y, x) im->pixels[((size_t)(y) * (size_t)im->width + (size_t)(x)) * (size_t)im->channels + (size_t)c]
    float top = PX(y0, x0) * (1 - wx) + PX(y0, x1) * wx, bot = PX(y1, x0) * (1 - wx) + PX(y1, x1) * wx;
#undef PX
    return top * (1 - wy) + bot * wy;
}

npu_status cal_image_to_sample(const cal_image *im, const char *name, const cal_input_spec *spec,
                               const cal_read_opts *ro, float *sample, npu_err *err)
{
    bool nhwc = ro && ro->layout == CAL_LAYOUT_NHWC;
    if (spec->rank != 4 || spec->dims[0] != 1)
        return npu_fail(err, NPU_EUSER, "%s: an image fills a [1, C, H, W] (or NHWC) input; input '%s' has rank %d",
                        name, spec->name, spec->rank);
    int64_t c = nhwc ? spec->dims[3] : spec->dims[1], h = nhwc ? spec->dims[1] : spec->dims[2],
            w = nhwc ? spec->dims[2] : spec->dims[3];
    if (c != im->channels)
        return npu_fail(err, NPU_EUSER, "%s: %d channel%s, expected %lld for input '%s' (%s)", name, im->channels,
                        im->channels == 1 ? "" : "s", (long long)c, spec->name, nhwc ? "NHWC" : "NCHW");
    cal_resize rs = ro && ro->resize != CAL_RESIZE_UNSET ? ro->resize : CAL_RESIZE_ERROR;
    if ((h != im->height || w != im->width) && rs == CAL_RESIZE_ERROR)
        return npu_fail(err, NPU_EUSER, "%s: image %dx%d (WxH), expected %lldx%lld for input '%s' "
                        "(or a resize policy: --resize nearest|bilinear)",
                        name, im->width, im->height, (long long)w, (long long)h, spec->name);
    for (int64_t ch = 0; ch < c; ch++) {
        float mean = 0.0f, std = 1.0f;
        if (ro && ro->n_mean)
            mean = ro->mean[ro->n_mean == 1 ? 0 : ch];
        if (ro && ro->n_std)
            std = ro->std[ro->n_std == 1 ? 0 : ch];
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++) {
                float v = h == im->height && w == im->width
                              ? im->pixels[((size_t)y * (size_t)w + (size_t)x) * (size_t)c + (size_t)ch]
                              : sample_at(im, rs, (int)ch, (int)y, (int)x, (int)h, (int)w);
                size_t at = nhwc ? ((size_t)y * (size_t)w + (size_t)x) * (size_t)c + (size_t)ch
                                 : ((size_t)ch * (size_t)h + (size_t)y) * (size_t)w + (size_t)x;
                sample[at] = (v - mean) / std;
            }
    }
    return NPU_OK;
}
