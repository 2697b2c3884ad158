/* Transcendental functions of the float kernels, computed here rather than
 * by the C library: glibc (npuref, calibration) and picolibc (the firmware
 * on the simulated host) round differently, and a host step of the runtime
 * must give the reference's bits. Each evaluates in double with IEEE basic
 * operations only (correctly rounded everywhere, soft-float on rv32imafc),
 * so every build of these sources returns the same float. Accuracy: within
 * one float ulp of the true value (checked against libm in the unit tests). */
#ifndef NK_MATH_H
#define NK_MATH_H

double nk_exp_d(double x);
double nk_log_d(double x); /* x > 0; NaN for x < 0, -inf for 0 */

float nk_expf(float x);
float nk_logf(float x);
float nk_tanhf(float x);
float nk_erff(float x);
float nk_powf(float x, float y);

#endif
