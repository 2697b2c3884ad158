/* Shared by the fuzz harnesses (tests/fuzz/fz_*.c, docs/testing.md "Fuzzing").
 * Each harness defines LLVMFuzzerTestOneInput; libFuzzer links its own main,
 * fuzz_driver.c gives the same harness a main for replaying files and AFL++. */
#ifndef NPU_FUZZ_H
#define NPU_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "common/alloc.h"
#include "common/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An allocator that refuses to hold more than cap bytes at once, so that a
 * header declaring a huge array exercises the out-of-memory path instead
 * of tripping the fuzzer's malloc limit; live must be 0 again after each
 * input (a leak check independent of LeakSanitizer). */
typedef struct fuzz_alloc {
    size_t cap, live;
} fuzz_alloc;
npu_alloc fuzz_alloc_hook(fuzz_alloc *fa, size_t cap);
/* Aborts when bytes are still live: the harness freed less than it took. */
void fuzz_alloc_done(const fuzz_alloc *fa);

/* A failure must say something: aborts on an empty message or a status
 * outside npu_status. */
void fuzz_check_err(npu_status st, const npu_err *err);

/* The source tree (for the ISA files a target names), from NPUCC_ROOT or
 * the directory the Makefile built from. */
const char *fuzz_root(void);

#endif
