/* Reference adapters: elem family (filled in as the kernels land). */
#include "ref/ref.h"

const ref_op_entry ref_ops_elem[] = {
    {IR_OP_COUNT, NULL, NULL},
};
