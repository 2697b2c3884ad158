/* PNG calibration images through libpng's full API, which (unlike the
 * simplified png_image API) takes an allocator: every libpng allocation goes
 * through the caller's npu_alloc, so the allocation-failure sweep and the
 * fuzzer's capped hook see them too. Values are the file's own, scaled to
 * [0, 1] by their bit depth as for 16-bit PGM (no gamma conversion); gray
 * stays one channel, palette and colour become RGB, alpha is composited onto
 * black (value x alpha). */
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "calib/calib_internal.h"

typedef struct png_reader {
    npu_alloc alloc;
    const unsigned char *buf;
    size_t size, at;
    char msg[200]; /* libpng's error text */
    bool oom;
} png_reader;

/* Blocks carry their size ahead of them: npu_free wants it, libpng's free does not give it. */
enum { HDR = 16 };

static png_voidp png_alloc_hook(png_structp png, png_alloc_size_t n)
{
    png_reader *r = png_get_mem_ptr(png);
    unsigned char *p = n <= SIZE_MAX - HDR ? npu_malloc(r->alloc, n + HDR) : NULL;
    if (!p) {
        r->oom = true;
        return NULL; /* libpng raises its own out-of-memory error */
    }
    memcpy(p, &n, sizeof n);
    return p + HDR;
}

static void png_free_hook(png_structp png, png_voidp ptr)
{
    if (!ptr)
        return;
    png_reader *r = png_get_mem_ptr(png);
    unsigned char *p = (unsigned char *)ptr - HDR;
    png_alloc_size_t n;
    memcpy(&n, p, sizeof n);
    npu_free(r->alloc, p, n + HDR);
}

static void png_error_hook(png_structp png, png_const_charp msg)
{
    png_reader *r = png_get_error_ptr(png);
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void png_warning_hook(png_structp png, png_const_charp msg)
{
    (void)png, (void)msg; /* a warning does not stop the read */
}

static void png_read_hook(png_structp png, png_bytep out, png_size_t n)
{
    png_reader *r = png_get_io_ptr(png);
    if (n > r->size - r->at)
        png_error(png, "file truncated");
    memcpy(out, r->buf + r->at, n);
    r->at += n;
}

/* The transforms that leave 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA)
 * samples of 8 or 16 bits per pixel. */
static void set_transforms(png_structp png, png_infop info)
{
    int type = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    if (type == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_tRNS_to_alpha(png);
    if (depth == 16)
        png_set_swap(png); /* host order, for the uint16 reads below */
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
}

typedef struct png_rows {
    png_bytep *rows;
    png_bytep px;
    size_t bytes, rows_bytes;
} png_rows;

/* Everything between setjmp and the end: libpng longjmps out of any call. */
static npu_status read_png(png_structp png, png_infop info, png_reader *r, png_rows *m, const char *name,
                           cal_image *out, npu_err *err)
{
    png_set_read_fn(png, r, png_read_hook);
    png_set_user_limits(png, 65536, 65536);
    png_read_info(png, info);
    uint32_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    npu_status st = cal_check_pixels(name, w, h, err);
    if (st != NPU_OK)
        return st;
    set_transforms(png, info);
    int ch = png_get_channels(png, info), depth = png_get_bit_depth(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if ((ch < 1 || ch > 4) || (depth != 8 && depth != 16) || rowbytes != (size_t)w * (size_t)ch * (size_t)(depth / 8))
        return npu_fail(err, NPU_EUSER, "%s: unsupported PNG layout (%d channels of %d bits)", name, ch, depth);
    m->bytes = rowbytes * h;
    m->rows_bytes = sizeof *m->rows * h;
    if (!(m->px = npu_malloc(r->alloc, m->bytes)) || !(m->rows = npu_malloc(r->alloc, m->rows_bytes)))
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    for (uint32_t y = 0; y < h; y++)
        m->rows[y] = m->px + (size_t)y * rowbytes;
    png_read_image(png, m->rows);
    int colour = ch >= 3 ? 3 : 1;
    bool alpha = ch == 2 || ch == 4;
    out->width = (int)w, out->height = (int)h, out->channels = colour;
    if (!(out->pixels = npu_malloc(r->alloc, cal_image_bytes(out))))
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    float scale = depth == 16 ? 65535.0f : 255.0f;
    for (size_t i = 0, n = (size_t)w * h; i < n; i++) {
        float v[4];
        for (int c = 0; c < ch; c++)
            v[c] = (depth == 16 ? (float)((const uint16_t *)m->px)[i * ch + c] : (float)m->px[i * ch + c]) / scale;
        float a = alpha ? v[ch - 1] : 1.0f;
        for (int c = 0; c < colour; c++)
            out->pixels[i * colour + c] = v[c] * a;
    }
    return NPU_OK;
}

npu_status cal_parse_png(const void *buf, size_t size, const char *name, npu_alloc alloc, cal_image *out,
                         npu_err *err)
{
    png_reader r = {.alloc = alloc, .buf = buf, .size = size};
    png_structp png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &r, png_error_hook, png_warning_hook, &r,
                                               png_alloc_hook, png_free_hook);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", name);
    }
    /* volatile: read after a longjmp out of libpng */
    png_rows m = {0};
    volatile npu_status st = NPU_OK;
    png_rows *volatile mp = &m;
    if (setjmp(png_jmpbuf(png)) == 0) {
        st = read_png(png, info, &r, mp, name, out, err);
    } else if (r.oom) {
        st = npu_fail(err, NPU_EINTERNAL, "%s: out of memory", name);
    } else {
        st = npu_fail(err, NPU_EUSER, "%s: byte %zu: unreadable PNG: %s", name, r.at, r.msg);
    }
    if (st != NPU_OK && out->pixels) {
        npu_free(alloc, out->pixels, cal_image_bytes(out));
        memset(out, 0, sizeof *out);
    }
    npu_free(alloc, mp->px, mp->bytes);
    npu_free(alloc, mp->rows, mp->rows_bytes);
    png_destroy_read_struct(&png, &info, NULL);
    return st;
}
