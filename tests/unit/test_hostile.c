/* Hostile input (issue 19): extreme attribute values through shape inference
 * and the reference, under UBSan in `make test-asan`. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "ref/ref.h"
#include "tiler/tile_internal.h"
#include "tests/support/testgraph.h"

#define I64(...) ((int64_t[]){__VA_ARGS__})

static ir_tensor *ints(ir_graph *g, int n, const int64_t *v)
{
    return tg_const(g, NULL, IR_I64, 1, I64(n), v);
}

/* steps=[INT64_MIN] (and INT64_MAX) pick one element; shape inference negated
 * the step, a signed overflow UBSan reports (issue 19 item 1). */
Test(hostile, slice_extreme_steps_infer_and_run)
{
    const int64_t steps[2] = {INT64_MIN, INT64_MAX};
    for (int k = 0; k < 2; k++) {
        ir_graph *g = ir_graph_new(npu_alloc_default());
        float x[5] = {10, 11, 12, 13, 14};
        ir_tensor *xt = tg_const(g, "x", IR_F32, 1, I64(5), x);
        ir_tensor *y = tg_tensor(g, "y", IR_F32, 0, NULL);
        int64_t start = steps[k] < 0 ? -1 : 0, end = steps[k] < 0 ? INT64_MIN : INT64_MAX;
        ir_tensor *in[5] = {xt, ints(g, 1, &start), ints(g, 1, &end), ints(g, 1, I64(0)), ints(g, 1, &steps[k])};
        ir_node *n = tg_node(g, IR_OP_SLICE, 5, in, 1, &y);
        npu_err e;
        npu_err_clear(&e);
        cr_assert_eq(ir_infer_node(g, n, &e), NPU_OK, "%s", e.msg);
        cr_assert_eq(y->rank, 1);
        cr_assert_eq(y->dims[0], 1, "step %lld: %lld elements", (long long)steps[k], (long long)y->dims[0]);
        cr_assert_eq(ref_eval_node(g, n, &e), NPU_OK, "%s", e.msg);
        cr_assert_eq(((float *)y->data)[0], steps[k] < 0 ? 14.0f : 10.0f);
        ir_graph_free(g);
    }
}

/* Item 7: a "tiler bug" is an internal error (exit 3), a misfit the model's
 * (exit 1); tile_sram_place passes its misfit message through the same rule. */
Test(hostile, tiler_bug_is_internal)
{
    npu_err e;
    npu_err_clear(&e);
    tile_ctx c = {.err = &e};
    cr_assert_eq(tile_fail(&c, "tiler bug: %d SRAM buffers", 0), NPU_EINTERNAL, "%s", e.msg);
    cr_assert_eq(e.code, NPU_EINTERNAL);
    cr_assert_eq(tile_fail(&c, "no tile of this conv fits the SRAM"), NPU_EUSER, "%s", e.msg);
    int64_t off;
    tile_sram_req rq = {-1, &off};
    cr_assert_eq(tile_sram_place(&c, &rq, 1, "tiler bug: planned buffers exceed the SRAM"), NPU_EINTERNAL, "%s",
                 e.msg);
    cr_assert_eq(tile_sram_place(&c, &rq, 1, "no lut tile fits the SRAM"), NPU_EUSER, "%s", e.msg);
    cr_assert_eq(tile_sram_place(&c, &rq, 0, "no lut tile fits the SRAM"), NPU_EINTERNAL, "%s", e.msg);
}
