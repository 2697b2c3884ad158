/* The model API of libnpurt: a compiled model (.npub, e.g. the C array of
 * `npucc --emit c`) opened into a caller-owned context, its inputs and
 * outputs described and found by index or name, one work area for every
 * buffer, and a run. No malloc: the caller owns the context, the blob and
 * the work area; the blob may stay in flash. docs/runtime.md has an example.
 *
 *   static npurt_model m;
 *   static uint8_t work[model_WORK_BYTES] __attribute__((aligned(16)));
 *   npurt_model_open(&m, model_npub, sizeof model_npub, model_ops);
 *   npurt_model_set_work(&m, work, sizeof work);   // >= npurt_model_work_bytes(&m)
 *   npurt_model_set_input(&m, 0, image, sizeof image);
 *   npurt_model_run(&m);
 *   npurt_model_get_output(&m, 0, scores, sizeof scores);
 *
 * NPU steps go through the reference driver (rt/npurt_hal.h) unless
 * npurt_model_set_npu gives another launch. */
#ifndef NPURT_MODEL_H
#define NPURT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "rt/npurt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum npurt_status {
    NPURT_OK = 0,
    NPURT_EARG = 1,      /* a NULL pointer, or an index out of range */
    NPURT_EALIGN = 2,    /* the blob is not 8-byte or the work area not 16-byte aligned */
    NPURT_EBLOB = 3,     /* the binary fails validation (npurt_model_message says where) */
    NPURT_EOPS = 4,      /* a host step's kernel is not in the op table */
    NPURT_ENOWORK = 5,   /* no work area yet, or one smaller than npurt_model_work_bytes */
    NPURT_ENOTFOUND = 6, /* no input or output of that name */
    NPURT_ESIZE = 7,     /* a copy of another size than the tensor's */
    NPURT_ESTEP = 8,     /* a host kernel failed at run time */
    NPURT_ENPU = 9,      /* the NPU reported a fault, or no NPU launch */
} npurt_status;

/* "ok", "bad argument", ...; never NULL. */
const char *npurt_strerror(npurt_status s);

/* dtype codes (rt/npub.h, ir_dtype): 0 float32, 3 int32, 5 int8, 6 uint8. */
typedef struct npurt_tensor_info {
    const char *name;   /* the graph's name, in the blob */
    uint32_t index;     /* among the inputs (or outputs) */
    uint32_t dtype;
    uint32_t rank;
    int32_t dims[NPUB_MAX_RANK];
    uint32_t bytes;     /* dense size of the tensor */
    int quantized;      /* 1: real = scale * (q - zero_point); 0 (float I/O): scale 1, zero point 0 */
    float scale;
    int32_t zero_point;
} npurt_tensor_info;

typedef struct npurt_model {
    npub_view view;
    const npurt_op *const *ops;
    npurt_env env;        /* regions in the work area once set */
    uint32_t work_bytes;  /* what npurt_model_set_work needs */
    int opened, has_work;
    npub_error error;     /* the last failure's message */
} npurt_model;

/* Validates the blob (every check of npurt_open: offsets, sizes, CRCs, each
 * host record against its tensors) with op table ops (NAME_ops of the
 * generated header, or npurt_ops_all). The blob must stay valid while m is
 * used. */
npurt_status npurt_model_open(npurt_model *m, const void *blob, size_t size, const npurt_op *const *ops);

/* Bytes of the work area: the arena, input, output and scratch regions,
 * each rounded up to 16 (the generated header's NAME_WORK_BYTES). */
uint32_t npurt_model_work_bytes(const npurt_model *m);

/* Places the regions in work (16-byte aligned, >= npurt_model_work_bytes). */
npurt_status npurt_model_set_work(npurt_model *m, void *work, size_t size);

/* Replaces the NPU launch (default npurt_npu_launch; NULL: none, and a
 * binary with NPU steps fails at its first one). */
void npurt_model_set_npu(npurt_model *m,
                         int (*launch)(void *ud, const npub_view *v, uint32_t first, uint32_t count,
                                       uint8_t *const region[4]),
                         void *ud);

uint32_t npurt_model_input_count(const npurt_model *m);
uint32_t npurt_model_output_count(const npurt_model *m);
npurt_status npurt_model_input(const npurt_model *m, uint32_t index, npurt_tensor_info *info);
npurt_status npurt_model_output(const npurt_model *m, uint32_t index, npurt_tensor_info *info);
npurt_status npurt_model_find_input(const npurt_model *m, const char *name, uint32_t *index);
npurt_status npurt_model_find_output(const npurt_model *m, const char *name, uint32_t *index);

/* The tensor's bytes inside the work area (fill an input in place, read an
 * output in place); NULL before npurt_model_set_work or for a bad index. */
void *npurt_model_input_data(npurt_model *m, uint32_t index);
const void *npurt_model_output_data(const npurt_model *m, uint32_t index);

/* Copies: bytes must equal the tensor's size. */
npurt_status npurt_model_set_input(npurt_model *m, uint32_t index, const void *data, size_t bytes);
npurt_status npurt_model_get_output(const npurt_model *m, uint32_t index, void *data, size_t bytes);

/* One inference: every step in order (npurt_run_ops). */
npurt_status npurt_model_run(npurt_model *m);

/* The message of the last failure ("step 3 (node 'conv1', QCONV): ..."), or "". */
const char *npurt_model_message(const npurt_model *m);

#ifdef __cplusplus
}
#endif
#endif
