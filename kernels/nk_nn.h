/* kernels: nn family (placeholder until the family lands). */
#ifndef NK_NN_H
#define NK_NN_H
#include "kernels/nk_common.h"
#endif
