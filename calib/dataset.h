/* Calibration sets: a directory of .npy samples (one sample per file, or a
 * batch whose first dimension is a multiple of the model's batch), read one
 * file at a time so memory does not grow with the set. */
#ifndef NPU_CALIB_DATASET_H
#define NPU_CALIB_DATASET_H

#include <stdbool.h>
#include <stdint.h>

#include "common/alloc.h"
#include "common/status.h"

typedef struct cal_input_spec {
    const char *name; /* the graph input (for messages) */
    int rank;
    const int64_t *dims; /* the model's input shape, batch first */
} cal_input_spec;

typedef struct cal_dataset cal_dataset;

/* Lists the .npy files of DIR (sorted by name) and checks every header against spec:
 * float32 or uint8 (taken as is), shape [k*batch, ...] or the sample shape
 * without its batch. Errors name the file and what was expected. */
npu_status cal_dataset_open(const char *dir, const cal_input_spec *spec, npu_alloc alloc, cal_dataset **out,
                            npu_err *err);
void cal_dataset_close(cal_dataset *d);
/* Samples (model batches) in the whole set. */
int64_t cal_dataset_count(const cal_dataset *d);
/* The next sample as float32 of the model's input shape, valid until the
 * next call; *sample is NULL at the end. */
npu_status cal_dataset_next(cal_dataset *d, const float **sample, npu_err *err);

#endif
