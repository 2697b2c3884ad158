/* kernels: shape and data-movement family. Every kernel here moves whole
 * elements of elem_size bytes (1, 2, 4 or 8; bool is 1 byte), so one kernel
 * serves every dtype. Shapes are dense C order. Output shapes are the
 * caller's (shape inference already computed them); kernels check that they
 * agree with the parameters and return NK_EARG when not. */
#ifndef NK_SHAPE_H
#define NK_SHAPE_H
#include "kernels/nk_common.h"

/* numpy broadcasting of a and b into out; NK_EARG when incompatible. */
nk_status nk_shape_broadcast(const nk_shape *a, const nk_shape *b, nk_shape *out);

/* Concat along axis (0 <= axis < rank) of n inputs; in_shapes[i] differ
 * from out only in dims[axis]. */
typedef struct nk_concat_params {
    int axis;
    int n_inputs;
    size_t elem_size;
} nk_concat_params;
nk_status nk_concat(const nk_concat_params *p, const nk_shape *in_shapes, const void *const *in,
                    const nk_shape *out_shape, void *out);

/* Split along axis into n outputs whose dims[axis] give the split sizes. */
typedef struct nk_split_params {
    int axis;
    int n_outputs;
    size_t elem_size;
} nk_split_params;
nk_status nk_split(const nk_split_params *p, const nk_shape *in_shape, const void *in,
                   const nk_shape *out_shapes, void *const *out);

/* Strided slice with already normalized parameters: output index o of
 * axis d reads input index start[d] + o * step[d] (step != 0, may be
 * negative); out_shape gives the counts. Every read index must be in range. */
typedef struct nk_slice_params {
    int64_t start[NK_MAX_RANK];
    int64_t step[NK_MAX_RANK];
    size_t elem_size;
} nk_slice_params;
nk_status nk_slice(const nk_slice_params *p, const nk_shape *in_shape, const void *in, const nk_shape *out_shape,
                   void *out);

/* out dims[d] = in dims[perm[d]]. */
typedef struct nk_transpose_params {
    int perm[NK_MAX_RANK];
    size_t elem_size;
} nk_transpose_params;
nk_status nk_transpose(const nk_transpose_params *p, const nk_shape *in_shape, const void *in, void *out);

typedef enum nk_pad_mode { NK_PAD_CONSTANT, NK_PAD_REFLECT, NK_PAD_EDGE } nk_pad_mode;
/* out dims[d] = begin[d] + in dims[d] + end[d]; negative pads crop.
 * value: one element (elem_size bytes) for NK_PAD_CONSTANT. Reflect mirrors
 * without repeating the edge (numpy 'reflect'), repeatedly for pads wider
 * than the input; reflect and edge need a non-empty input along padded axes. */
typedef struct nk_pad_params {
    nk_pad_mode mode;
    int64_t begin[NK_MAX_RANK];
    int64_t end[NK_MAX_RANK];
    const void *value;
    size_t elem_size;
} nk_pad_params;
nk_status nk_pad(const nk_pad_params *p, const nk_shape *in_shape, const void *in, const nk_shape *out_shape,
                 void *out);

/* Gather along axis: out = data[:axis] + indices shape + data[axis+1:].
 * Indices are int32 or int64 (indices_64), negative counting from the end;
 * an index out of range returns NK_EARG and sets *bad_index (if non-NULL). */
typedef struct nk_gather_params {
    int axis;
    int indices_64;
    size_t elem_size;
} nk_gather_params;
nk_status nk_gather(const nk_gather_params *p, const nk_shape *data_shape, const void *data, const void *indices,
                    int64_t n_indices, void *out, int64_t *bad_index);

/* numpy broadcast of in to out_shape (Expand). */
nk_status nk_expand(size_t elem_size, const nk_shape *in_shape, const void *in, const nk_shape *out_shape,
                    void *out);

/* out dims[d] = in dims[d] * repeats[d] (derived from the shapes). */
nk_status nk_tile(size_t elem_size, const nk_shape *in_shape, const void *in, const nk_shape *out_shape,
                  void *out);

/* n copies of one element (ConstantOfShape). */
nk_status nk_fill(size_t elem_size, const void *value, int64_t n, void *out);

/* Range: out[i] = start + i * delta for i < n (n from the output shape). */
nk_status nk_range_f32(float start, float delta, int64_t n, float *out);
nk_status nk_range_i32(int32_t start, int32_t delta, int64_t n, int32_t *out);
nk_status nk_range_i64(int64_t start, int64_t delta, int64_t n, int64_t *out);
/* The element count ONNX Range produces: max(ceil((limit - start) / delta), 0);
 * -1 for delta == 0 or a count that does not fit. */
int64_t nk_range_count_f32(float start, float limit, float delta);
int64_t nk_range_count_i64(int64_t start, int64_t limit, int64_t delta);

#endif
