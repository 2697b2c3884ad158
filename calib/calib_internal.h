/* Shared between the calibration-set readers (calib/ only). */
#ifndef NPU_CALIB_INTERNAL_H
#define NPU_CALIB_INTERNAL_H

#include "calib/dataset.h"

enum { CAL_SPEC_MAX_RANK = 8 };

typedef struct cal_file_list {
    int n, cap;
    char **paths; /* "DIR/name", each from alloc */
    npu_alloc alloc; /* {0}: the default */
} cal_file_list;

/* A path of the list given back to its allocator. */
void cal_file_list_drop(cal_file_list *l, char *path);

npu_status cal_file_list_add(cal_file_list *l, const char *dir, const char *name, npu_err *err);
void cal_file_list_free(cal_file_list *l);
/* Every sample file of dir (by extension), sorted by name. */
npu_status cal_list_dir(const char *dir, cal_file_list *l, npu_err *err);

/* image.c: the pixel cap, from the header alone (CAL_IMAGE_MAX_PIXELS). */
npu_status cal_check_pixels(const char *name, uint64_t w, uint64_t h, npu_err *err);
/* image_png.c: a PNG image, every libpng allocation through alloc. */
npu_status cal_parse_png(const void *buf, size_t size, const char *name, npu_alloc alloc, cal_image *out,
                         npu_err *err);

#define CAL_MANIFEST "calib.yaml"
/* Reads dir/calib.yaml when it exists: its file list (left empty when the
 * manifest lists none) and preprocessing. No manifest is not an error. */
npu_status cal_manifest_load(const char *dir, cal_file_list *l, cal_read_opts *ro, npu_err *err);

#endif
