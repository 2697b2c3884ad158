/* kernels: quant family (placeholder until the family lands). */
#ifndef NK_QUANT_H
#define NK_QUANT_H
#include "kernels/nk_common.h"
#endif
