/* The stored graph of a .npub re-checked before the reference runs it
 * (npuref MODEL.npub). The section's CRC only tells an accident from a
 * clean copy; this tells a graph the kernels can run from one they cannot:
 * every tensor shape equal to what its producer's op gives (shape inference
 * run again), quantization parameters that fit their dtypes, the integer
 * kernels' parameters equal to the tensors' sizes. Errors name the place:
 * "graph section: byte N (file byte M): node 'conv1' (Conv): ...". */
#ifndef NPU_REF_CHECK_H
#define NPU_REF_CHECK_H

#include <stdint.h>

#include "ir/ir.h"

/* map: record offsets from ir_deserialize_map; file_offset: where the
 * section starts in its file (0 when not from a file). */
npu_status ref_check_graph(ir_graph *g, const ir_serial_map *map, size_t file_offset, npu_err *err);

/* ir_deserialize_map, then ref_check_graph: the graph npuref may run. */
npu_status ref_load_graph_section(const void *sec, size_t size, size_t file_offset, npu_alloc alloc, ir_graph **out,
                                  npu_err *err);

#endif
