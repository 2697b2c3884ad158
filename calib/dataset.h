/* Calibration sets: a directory of samples read one file at a time, so
 * memory does not grow with the set. A sample file is
 *   - .npy: float32 or uint8 (values as stored), one sample or a batch
 *     whose first dimension is a multiple of the model's batch;
 *   - .bin: raw little-endian float32, a whole number of model inputs;
 *   - .pgm / .ppm (binary P5 / P6, 8 or 16 bits) and .png (gray or RGB,
 *     libpng): one image, scaled to [0, 1], placed on the input by its
 *     layout, resized by policy.
 * (x - mean) / std per channel is applied to every kind. A manifest
 * (calib.yaml in the directory) may list the files and set the
 * preprocessing; options given by the caller win over it. Every file is
 * checked when the set is opened; errors name the file and what was
 * expected. */
#ifndef NPU_CALIB_DATASET_H
#define NPU_CALIB_DATASET_H

#include <stdbool.h>
#include <stdint.h>

#include "common/alloc.h"
#include "common/file.h"
#include "common/status.h"

typedef struct cal_input_spec {
    const char *name; /* the graph input (for messages) */
    int rank;
    const int64_t *dims; /* the model's input shape, batch first */
    const char *file_tag; /* NULL: every sample file; else only STEM.<tag>.EXT (cal_dataset_open_inputs) */
    /* NPY_F32 (0): a float input. NPY_I8 / NPY_U8: an int8 / uint8-typed
     * input: its files are .npy of that dtype, the codes are the data, and
     * a sample holds them as bytes (not floats), unnormalized */
    int codes;
} cal_input_spec;

typedef enum cal_layout { CAL_LAYOUT_UNSET, CAL_LAYOUT_NCHW, CAL_LAYOUT_NHWC } cal_layout;
typedef enum cal_resize {
    CAL_RESIZE_UNSET,
    CAL_RESIZE_ERROR, /* an image of another size is an error (the default) */
    CAL_RESIZE_NEAREST,
    CAL_RESIZE_BILINEAR, /* half-pixel centres, as ONNX Resize linear */
} cal_resize;

enum { CAL_MAX_CHANNELS = 16 };
/* The largest calibration image, checked from its header before any pixel
 * is allocated: 2^25 pixels (a 5792 x 5792 image; 400 MB of float RGB). */
#define CAL_IMAGE_MAX_PIXELS ((int64_t)1 << 25)

typedef struct cal_read_opts {
    int n_mean, n_std; /* 0: unset; 1: every channel; else one per channel */
    float mean[CAL_MAX_CHANNELS], std[CAL_MAX_CHANNELS];
    cal_layout layout; /* the model input's layout (images and mean/std channels) */
    cal_resize resize;
    npu_read_opts files; /* regular files only unless allowed (--allow-special-files), the read cap */
} cal_read_opts;

/* Parses "0.5" or "0.485,0.456,0.406" into v (at most CAL_MAX_CHANNELS). */
npu_status cal_parse_floats(const char *s, float *v, int *n, npu_err *err);

typedef struct cal_dataset cal_dataset;

/* ro may be NULL (defaults, or the manifest's). */
npu_status cal_dataset_open_opts(const char *dir, const cal_input_spec *spec, const cal_read_opts *ro,
                                 npu_alloc alloc, cal_dataset **out, npu_err *err);
/* cal_dataset_open_opts with ro NULL. */
npu_status cal_dataset_open(const char *dir, const cal_input_spec *spec, npu_alloc alloc, cal_dataset **out,
                            npu_err *err);
void cal_dataset_close(cal_dataset *d);
/* Samples (model batches) in the whole set. */
int64_t cal_dataset_count(const cal_dataset *d);
/* The next sample as float32 of the model's input shape, valid until the
 * next call; *sample is NULL at the end. */
npu_status cal_dataset_next(cal_dataset *d, const float **sample, npu_err *err);
/* Starts again from the first sample. */
void cal_dataset_rewind(cal_dataset *d);

/* ---- models with several inputs (calib/inputs.c) ----
 * One input: cal_dataset_open_opts on the whole directory. Several: sample
 * files are named STEM.INPUT.EXT (INPUT: the input's name with every
 * character other than A-Z a-z 0-9 _ - as '_'); the files of one stem make
 * one sample, one per input. A file that names no input, or a stem that
 * lacks an input, is an error naming it. */
enum { CAL_MAX_INPUTS = 8 };
npu_status cal_dataset_open_inputs(const char *dir, const cal_input_spec *specs, int n, const cal_read_opts *ro,
                                   npu_alloc alloc, cal_dataset **out, npu_err *err);
/* The next sample of every input (xs[0..n-1]); xs[0] NULL at the end. */
npu_status cal_dataset_next_inputs(cal_dataset *d, const float **xs, npu_err *err);
/* The file tag of an input name (into buf). */
void cal_input_tag(const char *name, char *buf, size_t cap);

/* ---- image files (calib/image.c) ---- */

typedef struct cal_image {
    int width, height, channels; /* channels 1 (PGM) or 3 (PPM) */
    float *pixels;               /* HWC, scaled to [0, 1]; npu_free(alloc, pixels, cal_image_bytes) */
} cal_image;

size_t cal_image_bytes(const cal_image *im);
/* Parses a binary PGM (P5), PPM (P6) or PNG; name is for messages. */
npu_status cal_image_parse(const void *buf, size_t size, const char *name, npu_alloc alloc, cal_image *out,
                           npu_err *err);
/* Writes the image onto one model input sample (dims: the input shape,
 * batch 1) in layout, resizing per policy; then (x - mean) / std. */
npu_status cal_image_to_sample(const cal_image *im, const char *name, const cal_input_spec *spec,
                               const cal_read_opts *ro, float *sample, npu_err *err);

#endif
