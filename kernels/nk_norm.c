/* Float GELU and LayerNormalization (nk_norm.h). */
#include <math.h>

#include "kernels/nk_math.h"
#include "kernels/nk_norm.h"

float nk_gelu_tanh(float x)
{
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * x * (1.0f + nk_tanhf(k * (x + 0.044715f * x * x * x)));
}

void nk_gelu_f32(const float *x, float *y, int64_t n, int tanh_form)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = tanh_form ? nk_gelu_tanh(x[i]) : 0.5f * x[i] * (1.0f + nk_erff(x[i] * 0.70710678118654752f));
}

nk_status nk_layernorm_f32(const nk_layernorm_params *p, const float *x, const float *scale, const float *bias,
                           float *y, float *mean, float *inv_std)
{
    int64_t len = p->len;
    if (p->outer < 0 || len < 1 || (p->scale_len != len && p->scale_len != 1) ||
        (bias && p->bias_len != len && p->bias_len != 1))
        return NK_EARG;
    for (int64_t r = 0; r < p->outer; r++) {
        const float *xr = x + r * len;
        float *yr = y + r * len;
        double s = 0.0, q = 0.0;
        for (int64_t j = 0; j < len; j++)
            s += xr[j];
        double m = s / (double)len;
        for (int64_t j = 0; j < len; j++)
            q += (xr[j] - m) * (xr[j] - m);
        double inv = 1.0 / sqrt(q / (double)len + (double)p->eps);
        for (int64_t j = 0; j < len; j++) {
            double v = (xr[j] - m) * inv * scale[p->scale_len == 1 ? 0 : j];
            yr[j] = (float)(bias ? v + bias[p->bias_len == 1 ? 0 : j] : v);
        }
        if (mean)
            mean[r] = (float)m;
        if (inv_std)
            inv_std[r] = (float)inv;
    }
    return NK_OK;
}
