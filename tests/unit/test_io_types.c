/* Model I/O types: --input-type / --output-type parsing, and the .npub
 * IO-type extension against hostile values (npub_open must refuse a binary
 * that tells the application one scale and runs with another). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "driver/options.h"
#include "format/format.h"
#include "ir/ir.h"
#include "kernels/nk_quant.h"
#include "rt/npub.h"

static npu_status parse(npu_err *err, drv_options *o, int argc, const char **argv)
{
    npu_err_clear(err);
    return drv_parse_args(argc, (char **)argv, o, err);
}

Test(options, io_types)
{
    drv_options o;
    npu_err err;
    const char *dflt[] = {"npucc", "--target", "edge-v1", "m.onnx"};
    cr_assert_eq(parse(&err, &o, 4, dflt), NPU_OK, "%s", err.msg);
    cr_assert_eq(o.input_type, Q_IO_KEEP);
    cr_assert_eq(o.output_type, Q_IO_KEEP);
    const char *a[] = {"npucc", "--target", "edge-v1", "--input-type", "int8", "--output-type=uint8", "m.onnx"};
    cr_assert_eq(parse(&err, &o, 7, a), NPU_OK, "%s", err.msg);
    cr_assert_eq(o.input_type, Q_IO_I8);
    cr_assert_eq(o.output_type, Q_IO_U8);
    const char *f[] = {"npucc", "--target", "edge-v1", "--input-type=float32", "m.onnx"};
    cr_assert_eq(parse(&err, &o, 5, f), NPU_OK, "%s", err.msg);
    cr_assert_eq(o.input_type, Q_IO_F32);
    const char *bad[] = {"npucc", "--target", "edge-v1", "--output-type", "int16", "m.onnx"};
    cr_assert_eq(parse(&err, &o, 6, bad), NPU_EUSAGE);
    cr_assert(strstr(err.msg, "--output-type") && strstr(err.msg, "int16"), "%s", err.msg);
    const char *missing[] = {"npucc", "--target", "edge-v1", "m.onnx", "--input-type"};
    cr_assert_eq(parse(&err, &o, 5, missing), NPU_EUSAGE);
    cr_assert(strstr(err.msg, "--input-type"), "%s", err.msg);
    q_io_type t;
    cr_assert(!q_io_type_parse("INT8", &t));
    cr_assert(q_io_type_parse("uint8", &t) && t == Q_IO_U8);
}

/* A binary with an int8 input (scale 0.5, zero point -3) and a float output. */
typedef struct sample {
    uint32_t cmds[4];
    uint8_t consts[16];
    npub_tensor tensors[2];
    npub_step steps[1];
    uint32_t io[4 + 3 + 2 * sizeof(npub_io_type) / 4]; /* counts, indices, ext, records */
    char strings[8];
    npub_memory mem;
} sample;

static size_t fill(sample *s, bool ext)
{
    memset(s, 0, sizeof *s);
    memcpy(s->strings, "\0x\0y\0", 5);
    s->mem.region_bytes[NPUB_REGION_CONST] = sizeof s->consts;
    s->mem.region_bytes[NPUB_REGION_INPUT] = 16;
    s->mem.region_bytes[NPUB_REGION_OUTPUT] = 64;
    s->tensors[0] = (npub_tensor){.name = 1, .dtype = IR_I8, .rank = 2, .region = NPUB_REGION_INPUT, .dims = {4, 4},
                                  .size = 16, .alias_of = NPUB_NONE, .has_quant = 1, .scale = 0.5f,
                                  .zero_point = -3};
    s->tensors[1] = (npub_tensor){.name = 3, .dtype = IR_F32, .rank = 2, .region = NPUB_REGION_OUTPUT,
                                  .dims = {4, 4}, .size = 64, .alias_of = NPUB_NONE};
    s->steps[0] = (npub_step){.kind = NPUB_STEP_NPU, .a = 0, .b = 4, .name = 1};
    s->io[0] = 1, s->io[1] = 1, s->io[2] = 0, s->io[3] = 1;
    if (!ext)
        return 16;
    npub_io_ext x = {NPUB_IO_EXT_MAGIC, NPUB_IO_EXT_VERSION, sizeof(npub_io_type)};
    npub_io_type r[2] = {{.dtype = IR_I8, .has_quant = 1, .scale = 0.5f, .zero_point = -3}, {.dtype = IR_F32}};
    memcpy(&s->io[4], &x, sizeof x);
    memcpy(&s->io[6], r, sizeof r);
    return 16 + sizeof x + sizeof r;
}

static void *build(sample *s, size_t io_size, size_t *size)
{
    fmt_section secs[] = {
        {NPUB_SEC_COMMANDS, s->cmds, sizeof s->cmds},      {NPUB_SEC_CONSTANTS, s->consts, sizeof s->consts},
        {NPUB_SEC_TENSORS, s->tensors, sizeof s->tensors}, {NPUB_SEC_STEPS, s->steps, sizeof s->steps},
        {NPUB_SEC_IO, s->io, io_size},                     {NPUB_SEC_STRINGS, s->strings, 5},
        {NPUB_SEC_MEMORY, &s->mem, sizeof s->mem},
    };
    void *bin;
    npu_err err;
    cr_assert_eq(fmt_npub_assemble("edge-v1", 1, 0, secs, 7, npu_alloc_default(), &bin, size, &err), NPU_OK, "%s",
                 err.msg);
    return bin;
}

static int open_sample(sample *s, size_t io_size, npub_view *v, npub_error *e)
{
    size_t size;
    void *bin = build(s, io_size, &size);
    int rc = npub_open(bin, size, v, e);
    npu_free(npu_alloc_default(), bin, size);
    return rc;
}

Test(npub_io, extension_read_and_optional)
{
    sample s;
    npub_view v;
    npub_error e;
    size_t n = fill(&s, true);
    size_t size;
    void *bin = build(&s, n, &size);
    cr_assert_eq(npub_open(bin, size, &v, &e), 0, "%s", e.msg);
    cr_assert_not_null(v.io_types);
    cr_assert_eq(v.io_types[0].dtype, IR_I8);
    cr_assert_eq(v.io_types[0].scale, 0.5f);
    cr_assert_eq(v.io_types[0].zero_point, -3);
    cr_assert_eq(v.io_types[1].has_quant, 0);
    npu_free(npu_alloc_default(), bin, size);
    /* a file without the extension (written before it) still opens */
    n = fill(&s, false);
    cr_assert_eq(open_sample(&s, n, &v, &e), 0, "%s", e.msg);
    cr_assert_null(v.io_types);
}

/* Each hostile edit of the extension: refused with the byte offset named. */
Test(npub_io, hostile_values_rejected)
{
    enum { N_CASES = 16 };
    for (int k = 0; k < N_CASES; k++) {
        sample s;
        size_t n = fill(&s, true);
        npub_io_ext *x = (npub_io_ext *)&s.io[4];
        npub_io_type *r = (npub_io_type *)&s.io[6];
        switch (k) {
        case 0: x->magic ^= 1; break;
        case 1: x->version = 2; break;
        case 2: x->record_size = 12; break;
        case 3: r[0].dtype = IR_U8; break;             /* not the tensor's */
        case 4: r[0].reserved = 1; break;
        case 5: r[0].has_quant = 2; break;
        case 6: r[0].scale = 0.0f; break;
        case 7: r[0].scale = -0.5f; break;
        case 8: r[0].scale = INFINITY; break;
        case 9: r[0].scale = NAN; break;
        case 10: r[0].scale = 1e-40f; break;           /* denormal */
        case 11: r[0].zero_point = 128; break;         /* outside int8 */
        case 12: r[0].zero_point = -4; break;          /* not the tensor's */
        case 13: r[0].scale = 0.25f; break;            /* not the tensor's */
        case 14: r[1].has_quant = 1, r[1].scale = 1.0f; break; /* a float output with a scale */
        case 15: n -= 4; break;                        /* truncated records */
        }
        npub_view v;
        npub_error e;
        cr_assert_eq(open_sample(&s, n, &v, &e), -1, "case %d opened", k);
        cr_assert(strncmp(e.msg, "byte ", 5) == 0, "case %d: %s", k, e.msg);
    }
}

/* The unrolled, branch-free array quantizer (the host's and the NPU
 * quantize instruction's) gives the codes of the scalar one, also where a
 * NaN or an infinity sits inside a block, on ties and at the saturation. */
Test(quantize, array_equals_scalar)
{
    enum { N = 1000 };
    static float x[N];
    static int8_t q[N];
    static uint8_t u[N];
    uint32_t seed = 12345;
    const float scale = 0.037f;
    for (int i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 12.0f;
        if (i % 97 == 5)
            x[i] = scale * (float)(i % 31 - 15) + scale * 0.5f; /* near a tie */
    }
    x[3] = NAN, x[40] = INFINITY, x[41] = -INFINITY, x[999] = NAN, x[500] = -0.0f;
    for (int zp = -128; zp <= 127; zp += 51) {
        cr_assert_eq(nk_quantize_f32_i8(x, q, N, scale, zp), NK_OK);
        cr_assert_eq(nk_quantize_f32_u8(x, u, N, scale, zp + 128), NK_OK);
        cr_assert(q[3] == zp && q[999] == zp && q[40] == 127 && q[41] == -128, "NaN, inf at zp %d", zp);
        for (int i = 0; i < N; i++) {
            cr_assert_eq(q[i], nk_quantize_value(x[i], scale, zp, -128, 127), "x[%d] = %g zp %d", i, (double)x[i], zp);
            cr_assert_eq(u[i], nk_quantize_value(x[i], scale, zp + 128, 0, 255), "x[%d] = %g zp %d", i,
                         (double)x[i], zp);
        }
    }
}
