/* A padded plane split into its stride phases, shared by the depthwise
 * conv (nk_nn_dwconv.c) and the im2col-free conv (nk_nn_conv_shift.c):
 * padded (r, c) lies in phase (r % stride_h, c % stride_w) at
 * (r / stride_h, c / stride_w), every phase hq rows of nk_nn_phase_w(p)
 * columns. A tap then reads one contiguous run for a whole row of outputs,
 * output (oy, ox) at oy * phase_w + ox, at stride 2 as at stride 1 (one
 * phase: the padded plane itself). Strides 1 and 2 (nk_nn_internal.h).
 * Host builds use it; the firmware links it unused. */
#include <string.h>

#include "kernels/nk_nn_internal.h"

/* restrict and NK_HOT_VEC: the vector ISAs turn the stride-2 reads into
 * permutes. */
NK_HOT_VEC void nk_nn_split_row(const float *restrict s, float *restrict even, float *restrict odd, int32_t ne,
                                int32_t no)
{
    for (int32_t i = 0; i < no; i++) {
        even[i] = s[2 * i];
        odd[i] = s[2 * i + 1];
    }
    if (ne > no)
        even[no] = s[2 * no];
}

void nk_nn_phase_rows(const nk_conv_params *p, const float *plane, int32_t r0, int32_t rows, int32_t hq, float *dst)
{
    const int32_t sh = p->stride_h, ne = (p->w + 1) / 2;
    int32_t iy0 = r0 - p->pad_top, iy1 = r0 + rows - p->pad_top;
    iy0 = iy0 < 0 ? 0 : iy0;
    iy1 = iy1 > p->h ? p->h : iy1;
    if (iy1 <= iy0)
        return;
    /* row by row the place steps: the next phase, or the first one a row down */
    const int32_t r = iy0 + p->pad_top - r0;
    const ptrdiff_t next_phase = (ptrdiff_t)p->stride_w * hq * nk_nn_phase_w(p);
    ptrdiff_t first = nk_nn_phase_at(p, hq, r, p->pad_left), other = nk_nn_phase_at(p, hq, r, p->pad_left + 1);
    for (int32_t iy = iy0, phase = r & (sh - 1); iy < iy1; iy++) {
        const float *src = plane + (ptrdiff_t)iy * p->w;
        if (p->stride_w == 1)
            memcpy(dst + first, src, sizeof(float) * (size_t)p->w);
        else /* input columns 0, 2, ... go to the phase of the first, 1, 3, ... to the other */
            nk_nn_split_row(src, dst + first, dst + other, ne, p->w - ne);
        ptrdiff_t step = ++phase < sh ? next_phase : nk_nn_phase_w(p) - (ptrdiff_t)(sh - 1) * next_phase;
        phase = phase == sh ? 0 : phase;
        first += step, other += step;
    }
}
