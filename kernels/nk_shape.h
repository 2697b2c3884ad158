/* kernels: shape family (placeholder until the family lands). */
#ifndef NK_SHAPE_H
#define NK_SHAPE_H
#include "kernels/nk_common.h"
#endif
