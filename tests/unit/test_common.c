#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/status.h"

Test(status, fail_formats_and_returns_code)
{
    npu_err e;
    npu_err_clear(&e);
    cr_assert_eq(npu_fail(&e, NPU_EUSER, "%s:%d: bad", "m.onnx", 7), NPU_EUSER);
    cr_assert_str_eq(e.msg, "m.onnx:7: bad");
    npu_err_prefix(&e, "node '%s'", "conv1");
    cr_assert_str_eq(e.msg, "node 'conv1': m.onnx:7: bad");
    cr_assert_eq(e.code, NPU_EUSER);
}

Test(status, prefix_truncates_long_messages)
{
    npu_err e;
    memset(e.msg, 'x', sizeof e.msg - 1);
    e.msg[sizeof e.msg - 1] = '\0';
    e.code = NPU_EUSER;
    npu_err_prefix(&e, "p");
    cr_assert_eq(strlen(e.msg), sizeof e.msg - 1);
    cr_assert(strncmp(e.msg, "p: xx", 5) == 0);
}

Test(arena, zeroed_aligned_and_freed_in_one_call)
{
    npu_alloc_counter c = {0};
    npu_arena *a = npu_arena_new(npu_alloc_counting(&c));
    cr_assert_not_null(a);
    for (int i = 1; i < 2000; i += 37) {
        unsigned char *p = npu_arena_alloc(a, (size_t)i);
        cr_assert_not_null(p);
        cr_assert_eq((uintptr_t)p % 16, 0);
        for (int k = 0; k < i; k++)
            cr_assert_eq(p[k], 0);
        memset(p, 0xab, (size_t)i);
    }
    void *big = npu_arena_alloc(a, 1 << 20);
    cr_assert_not_null(big);
    cr_assert_str_eq(npu_arena_printf(a, "%s_%d", "t", 4), "t_4");
    npu_arena_free(a);
    cr_assert_eq(c.live_bytes, 0);
}

Test(arena, failing_allocation_returns_null)
{
    npu_alloc_counter c = {.fail_at = 2};
    npu_arena *a = npu_arena_new(npu_alloc_counting(&c));
    cr_assert_not_null(a);
    cr_assert_null(npu_arena_alloc(a, 10));
    npu_arena_free(a);
    cr_assert_eq(c.live_bytes, 0);
}
