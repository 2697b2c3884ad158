/* The .npy parser (npy_parse) on arbitrary bytes; an accepted array must
 * hold exactly its element count times the element size. */
#include <stdio.h>
#include <stdlib.h>

#include "common/npy.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_alloc fa;
    npu_alloc al = fuzz_alloc_hook(&fa, 256u << 20);
    npu_err err;
    npu_err_clear(&err);
    npy_array a = {0};
    npu_status st = npy_parse(data, size, "fuzz.npy", al, &a, &err);
    fuzz_check_err(st, &err);
    if (st == NPU_OK) {
        if (a.rank < 0 || a.rank > NPY_MAX_RANK || a.nbytes != (size_t)npy_numel(&a) * npy_dtype_size(a.dtype) ||
            !a.data) {
            fprintf(stderr, "fuzz: npy_parse accepted an inconsistent array\n");
            abort();
        }
        /* touch every byte: ASan checks the buffer is as large as claimed */
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < a.nbytes; i++)
            sum ^= ((const uint8_t *)a.data)[i];
        (void)sum;
        npy_free(al, &a);
    }
    fuzz_alloc_done(&fa);
    return 0;
}
