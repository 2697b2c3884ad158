/* The reference NPU driver (rt/npurt_hal.h) with its register hooks
 * replaced, as a board port replaces them: this test binary defines
 * npurt_hal_read and npurt_hal_write (strong symbols win over the library's
 * weak ones) and records the register traffic of npurt_npu_launch, natively. */
#include "rt/npurt_hal.h"
#include "rt/npurt_model.h"
#include "tests/support/npurt_bin.h"

typedef struct reg_log {
    uint32_t off[64], val[64];
    int n, reads;
    uint32_t status; /* what STATUS answers */
} reg_log;

static reg_log log_; /* the hooks have no user data: one log per test process */

void npurt_hal_write(uint32_t off, uint32_t value)
{
    cr_assert(log_.n < 64);
    log_.off[log_.n] = off;
    log_.val[log_.n++] = value;
}

uint32_t npurt_hal_read(uint32_t off)
{
    cr_assert_eq(off, NPURT_NPU_STATUS, "the launch reads only STATUS");
    log_.reads++;
    return log_.status;
}

/* The value last written to off, or -1. */
static int64_t last(uint32_t off)
{
    for (int i = log_.n - 1; i >= 0; i--)
        if (log_.off[i] == off)
            return log_.val[i];
    return -1;
}

/* The cnn graph with NPU steps of command words [1, 3) and [3, 4) at steps 0 and 2. */
static void *two_npu_steps(size_t *size)
{
    ir_graph *g = cnn_graph();
    asm_state *a = asm_new(g);
    memmove(a->steps + 1, a->steps, sizeof(npub_step) * a->n_steps);
    a->n_steps++;
    a->steps[0] = (npub_step){.kind = NPUB_STEP_NPU, .a = 1, .b = 2, .name = add_string(a, "npu0")};
    memmove(a->steps + 3, a->steps + 2, sizeof(npub_step) * (a->n_steps - 2));
    a->n_steps++;
    a->steps[2] = (npub_step){.kind = NPUB_STEP_NPU, .a = 3, .b = 1, .name = add_string(a, "npu1")};
    a->n_cmds = 4;
    void *blob = assemble(a, size);
    asm_delete(a);
    ir_graph_free(g);
    return blob;
}

Test(npurt_hal, launch_programs_regions_commands_and_doorbell)
{
    size_t size;
    void *blob = two_npu_steps(&size);
    static npurt_model m;
    cr_assert_eq(npurt_model_open(&m, blob, size, npurt_ops_all), NPURT_OK, "%s", npurt_model_message(&m));
    uint8_t *w = aligned_alloc(16, (npurt_model_work_bytes(&m) + 15u) / 16u * 16u);
    cr_assert_eq(npurt_model_set_work(&m, w, npurt_model_work_bytes(&m)), NPURT_OK);
    memset(&log_, 0, sizeof log_);
    log_.status = NPURT_NPU_ST_DONE;
    cr_assert_eq(npurt_model_run(&m), NPURT_OK, "%s", npurt_model_message(&m));
    cr_assert_eq(log_.reads, 2, "one STATUS read per NPU step");
    /* the second launch's registers (the last written) */
    const npub_view *v = &m.view;
    cr_assert_eq(last(NPURT_NPU_DOORBELL), 2, "the doorbell is the step index");
    cr_assert_eq(last(NPURT_NPU_CMD_BASE), (uint32_t)(uintptr_t)(v->commands + 3));
    cr_assert_eq(last(NPURT_NPU_CMD_LEN), 4);
    cr_assert_eq(last(NPURT_NPU_REGION0 + 0), (uint32_t)(uintptr_t)v->constants);
    cr_assert_eq(last(NPURT_NPU_REGION0 + 4), v->constants_size);
    cr_assert_eq(last(NPURT_NPU_REGION0 + 8), (uint32_t)(uintptr_t)m.env.region[NPUB_REGION_ARENA]);
    cr_assert_eq(last(NPURT_NPU_REGION0 + 12), v->memory->region_bytes[NPUB_REGION_ARENA]);
    /* region flash: the constants again (the view opened the blob itself, so flash == base) */
    cr_assert_eq(last(NPURT_NPU_REGION0 + 8 * NPURT_NPU_REGION_FLASH), (uint32_t)(uintptr_t)v->constants);
    cr_assert_eq(last(NPURT_NPU_REGION0 + 8 * NPURT_NPU_REGION_FLASH + 4), v->constants_size);
    /* the doorbell comes after the stream is programmed */
    int bell = -1, cmd = -1;
    for (int i = 0; i < log_.n; i++) {
        if (log_.off[i] == NPURT_NPU_DOORBELL && bell < 0)
            bell = i;
        if (log_.off[i] == NPURT_NPU_CMD_LEN && cmd < 0)
            cmd = i;
    }
    cr_assert(cmd >= 0 && bell > cmd, "CMD_LEN at %d, DOORBELL at %d", cmd, bell);

    /* a STATUS without DONE fails the step, naming the status */
    log_.status = 0x4;
    cr_assert_eq(npurt_model_run(&m), NPURT_ENPU);
    cr_assert(strstr(npurt_model_message(&m), "step 0 (node 'npu0', NPU)") &&
                  strstr(npurt_model_message(&m), "fault 260"),
              "%s", npurt_model_message(&m));
    free(w);
    free(blob);
}

/* A view of a DRAM copy of the blob: region 0 is the copy's constants, region
 * flash the same offsets in the flash image the caller names (v.flash). */
Test(npurt_hal, region_flash_is_the_constants_in_the_flash_image)
{
    size_t size;
    uint8_t *blob = two_npu_steps(&size);
    uint8_t *copy = aligned_alloc(16, (size + 15u) / 16u * 16u);
    memcpy(copy, blob, size);
    npub_view v;
    npub_error e;
    cr_assert_eq(npurt_open(copy, size, &v, &e), 0, "%s", e.msg);
    cr_assert_eq(v.flash, v.base, "npurt_open takes the buffer it opens for the flash image");
    v.flash = blob;
    uint8_t *region[NPUB_REGION_COUNT] = {(uint8_t *)(uintptr_t)v.constants};
    memset(&log_, 0, sizeof log_);
    log_.status = NPURT_NPU_ST_DONE;
    cr_assert_eq(npurt_npu_launch(NULL, &v, 1, 2, region), 0);
    uint32_t at = (uint32_t)(v.constants - v.base);
    cr_assert_eq(last(NPURT_NPU_REGION0 + 0), (uint32_t)(uintptr_t)(copy + at));
    cr_assert_eq(last(NPURT_NPU_REGION0 + 8 * NPURT_NPU_REGION_FLASH), (uint32_t)(uintptr_t)(blob + at));
    cr_assert_eq(last(NPURT_NPU_REGION0 + 8 * NPURT_NPU_REGION_FLASH + 4), v.constants_size);
    free(copy);
    free(blob);
}
