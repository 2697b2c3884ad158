/* Portable reference kernels, float and integer (CMSIS-NN style):
 * parameter structs, caller-owned scratch with a size query, status returns,
 * no malloc, no OS calls. The same sources build natively and for the host
 * CPU of the target (rv32imafc, picolibc), so they use only <stdint.h>,
 * <stddef.h>, <string.h> and <math.h>. Prefix: nk_. */
#ifndef NK_KERNELS_H
#define NK_KERNELS_H

#include "kernels/nk_common.h"
#include "kernels/nk_nn.h"
#include "kernels/nk_elem.h"
#include "kernels/nk_shape.h"
#include "kernels/nk_quant.h"
#include "kernels/nk_q16.h"
#include "kernels/nk_norm.h"

#endif
