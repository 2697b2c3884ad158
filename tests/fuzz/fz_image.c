/* The calibration image readers (binary PGM/PPM, PNG through libpng) on
 * arbitrary bytes, then each accepted image mapped onto model inputs: its
 * own size in NCHW and NHWC, and resized (nearest, bilinear) up and down. */
#include <stdlib.h>

#include "calib/dataset.h"
#include "tests/fuzz/fuzz.h"

static void to_sample(const cal_image *im, cal_layout layout, cal_resize rs, int64_t h, int64_t w)
{
    int64_t c = im->channels;
    int64_t dims[4] = {1, c, h, w};
    if (layout == CAL_LAYOUT_NHWC) {
        dims[1] = h;
        dims[2] = w;
        dims[3] = c;
    }
    cal_input_spec spec = {.name = "x", .rank = 4, .dims = dims};
    cal_read_opts ro = {.layout = layout, .resize = rs, .n_mean = 1, .mean = {0.5f}, .n_std = 1, .std = {0.25f}};
    float *s = malloc(sizeof(float) * (size_t)(c * h * w));
    if (!s)
        return;
    npu_err err;
    npu_err_clear(&err);
    fuzz_check_err(cal_image_to_sample(im, "fuzz.img", &spec, &ro, s, &err), &err);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_alloc fa;
    npu_alloc al = fuzz_alloc_hook(&fa, 256u << 20);
    npu_err err;
    npu_err_clear(&err);
    cal_image im = {0};
    npu_status st = cal_image_parse(data, size, "fuzz.img", al, &im, &err);
    fuzz_check_err(st, &err);
    if (st == NPU_OK) {
        /* the sample copies are bounded to keep each input fast */
        if ((size_t)im.width * (size_t)im.height <= 1u << 20) {
            to_sample(&im, CAL_LAYOUT_NCHW, CAL_RESIZE_ERROR, im.height, im.width);
            to_sample(&im, CAL_LAYOUT_NHWC, CAL_RESIZE_ERROR, im.height, im.width);
        }
        to_sample(&im, CAL_LAYOUT_NCHW, CAL_RESIZE_NEAREST, 7, 5);
        to_sample(&im, CAL_LAYOUT_NHWC, CAL_RESIZE_BILINEAR, 3, 9);
        to_sample(&im, CAL_LAYOUT_NCHW, CAL_RESIZE_BILINEAR, 33, 40);
        npu_free(al, im.pixels, cal_image_bytes(&im));
    }
    fuzz_alloc_done(&fa);
    return 0;
}
