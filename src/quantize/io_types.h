/* Model I/O types (--input-type, --output-type): which dtype the compiled
 * model's inputs and outputs have. float32 keeps the host's QuantizeLinear
 * and DequantizeLinear at the edges; int8 makes the quantized tensor itself
 * the model's input or output (no host step); uint8 is int8 with the zero
 * point moved by 128, converted by one host step. */
#ifndef NPU_QUANTIZE_IO_TYPES_H
#define NPU_QUANTIZE_IO_TYPES_H

#include "common/status.h"
#include "ir/ir.h"

typedef enum q_io_type { Q_IO_KEEP = 0, Q_IO_F32, Q_IO_I8, Q_IO_U8 } q_io_type;

/* "float32", "int8", "uint8" -> the type; false for anything else. */
bool q_io_type_parse(const char *s, q_io_type *out);
const char *q_io_type_name(q_io_type t);

/* Rewrites the quantized graph g so that graph input i has type in[i] and
 * output j type out[j] (Q_IO_KEEP: as the quantized graph has it). Float
 * I/O turns to its int8 version; int8 I/O (a pre-quantized model's) gets a
 * float or uint8 edge. model names the file in errors; an input or output
 * without a per-tensor int8 version (used only in float, or per channel) is
 * an error naming it. */
npu_status q_set_io_types(ir_graph *g, const char *model, const q_io_type *in, const q_io_type *out, npu_err *err);

#endif
