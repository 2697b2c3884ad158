/* A minimal bare-metal application on the SoC's rv32 host: it runs the
 * example model (examples/fmnist, int8 input and output) on the test image
 * through the model API of the installed libnpurt, prints the class and the
 * output codes, and ends the run. Only the installed prefix is used:
 * <npurt/npurt_model.h>, lib/riscv32/<march>-<mabi>/libnpurt.a, and the C
 * array `npucc --emit c` generated (model.c, model.h). */
#include <stdint.h>

#include <npurt/npurt_model.h>

#include "image.h"
#include "model.h"

/* ---- board support: the simulated SoC's sim-control page (docs/simulator.md) */
#define SIM_CTL_BASE 0x40001000u
#define SIM_CTL_PUTC 0x008u /* low byte to the console */
#define SIM_CTL_EXIT 0x00Cu /* exit code; ends the run */

static void ctl_write(uint32_t off, uint32_t v)
{
    *(volatile uint32_t *)(uintptr_t)(SIM_CTL_BASE + off) = v;
}

static void put_s(const char *s)
{
    while (*s)
        ctl_write(SIM_CTL_PUTC, (uint8_t)*s++);
}

static void put_i(int32_t v)
{
    char buf[12];
    int n = 0;
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    do
        buf[n++] = (char)('0' + u % 10u);
    while ((u /= 10u) != 0);
    if (v < 0)
        buf[n++] = '-';
    while (n)
        ctl_write(SIM_CTL_PUTC, (uint8_t)buf[--n]);
}

/* the end of the run (picolibc's exit() and abort() come here too) */
_Noreturn void _exit(int code);
_Noreturn void _exit(int code)
{
    ctl_write(SIM_CTL_EXIT, (uint32_t)code);
    for (;;)
        ;
}

/* ---- the application ------------------------------------------------------ */
static npurt_model m;
static uint8_t work[model_WORK_BYTES] __attribute__((aligned(16)));

static int fail(const char *what, npurt_status st)
{
    put_s("error: ");
    put_s(what);
    put_s(": ");
    put_s(npurt_strerror(st));
    put_s(": ");
    put_s(npurt_model_message(&m));
    put_s("\n");
    return 1;
}

static int app(void)
{
    npurt_status st = npurt_model_open(&m, model_npub, sizeof model_npub, model_ops);
    if (st != NPURT_OK)
        return fail("open", st);
    if ((st = npurt_model_set_work(&m, work, sizeof work)) != NPURT_OK)
        return fail("work area", st);
    uint32_t in_index, out_index = 0;
    npurt_tensor_info in, out;
    if ((st = npurt_model_find_input(&m, model_INPUT0_NAME, &in_index)) != NPURT_OK ||
        (st = npurt_model_input(&m, in_index, &in)) != NPURT_OK ||
        (st = npurt_model_output(&m, out_index, &out)) != NPURT_OK)
        return fail("I/O", st);
    if (in.dtype != model_INPUT0_DTYPE || in.zero_point != model_INPUT0_ZERO_POINT || out.rank != 2)
        return fail("I/O description", NPURT_EARG);
    if ((st = npurt_model_set_input(&m, in_index, image, sizeof image)) != NPURT_OK)
        return fail("input", st);
    if ((st = npurt_model_run(&m)) != NPURT_OK)
        return fail("run", st);
    const int8_t *y = npurt_model_output_data(&m, out_index);
    int32_t best = 0;
    for (int32_t i = 1; i < out.dims[1]; i++)
        if (y[i] > y[best])
            best = i;
    put_s("class ");
    put_i(best);
    put_s("\noutput");
    for (uint32_t i = 0; i < out.bytes; i++) {
        put_s(" ");
        put_i(y[i]);
    }
    put_s("\n");
    return 0;
}

int main(void)
{
    _exit(app()); /* picolibc's crt0 would spin after main returns */
}
