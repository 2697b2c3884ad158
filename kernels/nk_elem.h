/* kernels: elem family (placeholder until the family lands). */
#ifndef NK_ELEM_H
#define NK_ELEM_H
#include "kernels/nk_common.h"
#endif
