/* The npucc pass pipeline (one readable function in compile.c). */
#ifndef NPU_DRIVER_COMPILE_H
#define NPU_DRIVER_COMPILE_H

#include "driver/options.h"

/* Runs the whole compile described by opts; report output (tables,
 * dumps, summaries) goes to out. */
npu_status drv_compile(const drv_options *opts, FILE *out, npu_err *err);
/* The same with every allocation of the compile through alloc (the tools'
 * NPUCC_FAIL_ALLOC, the allocation-failure sweep in tests/unit/test_alloc_fail.c). */
npu_status drv_compile_alloc(const drv_options *opts, FILE *out, npu_alloc alloc, npu_err *err);

#endif
