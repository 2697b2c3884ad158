/* The .npub reader against files built by the writer, and against every
 * kind of corruption the design names. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "ir/ir.h"
#include "rt/npub.h"

typedef struct sample {
    uint32_t cmds[8];
    uint8_t consts[40];
    npub_tensor tensors[3];
    npub_step steps[2];
    uint32_t io[4];
    char strings[32];
    uint32_t params[4];
    npub_memory mem;
    npub_debug dbg[1];
} sample;

static void fill(sample *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 8; i++)
        s->cmds[i] = 0x1000u + (uint32_t)i;
    memcpy(s->strings, "\0x\0y\0conv1\0", 12);
    s->mem.region_bytes[NPUB_REGION_CONST] = sizeof s->consts;
    s->mem.region_bytes[NPUB_REGION_ARENA] = 64;
    s->mem.region_bytes[NPUB_REGION_INPUT] = 16;
    s->mem.region_bytes[NPUB_REGION_OUTPUT] = 16;
    npub_tensor x = {.name = 1, .dtype = IR_I8, .rank = 2, .region = NPUB_REGION_INPUT, .dims = {4, 4}, .size = 16,
                     .alias_of = NPUB_NONE, .has_quant = 1, .scale = 0.5f};
    npub_tensor y = x;
    y.name = 3;
    y.region = NPUB_REGION_OUTPUT;
    npub_tensor w = {.name = 5, .dtype = IR_I4, .rank = 1, .region = NPUB_REGION_CONST, .dims = {16}, .offset = 8,
                     .size = 8, .alias_of = NPUB_NONE};
    s->tensors[0] = x;
    s->tensors[1] = y;
    s->tensors[2] = w;
    s->steps[0] = (npub_step){.kind = NPUB_STEP_NPU, .a = 0, .b = 8, .name = 5};
    s->steps[1] = (npub_step){.kind = NPUB_STEP_HOST, .op = 1, .a = 0, .b = 16, .name = 5};
    s->io[0] = 1;
    s->io[1] = 1;
    s->io[2] = 0;
    s->io[3] = 1;
    s->dbg[0] = (npub_debug){.first_word = 0, .word_count = 8, .name = 5};
}

static void *build(sample *s, size_t *size)
{
    fmt_section secs[] = {
        {NPUB_SEC_COMMANDS, s->cmds, sizeof s->cmds},   {NPUB_SEC_CONSTANTS, s->consts, sizeof s->consts},
        {NPUB_SEC_TENSORS, s->tensors, sizeof s->tensors}, {NPUB_SEC_STEPS, s->steps, sizeof s->steps},
        {NPUB_SEC_IO, s->io, sizeof s->io},             {NPUB_SEC_STRINGS, s->strings, 12},
        {NPUB_SEC_PARAMS, s->params, sizeof s->params}, {NPUB_SEC_MEMORY, &s->mem, sizeof s->mem},
        {NPUB_SEC_DEBUG, s->dbg, sizeof s->dbg},
    };
    void *buf;
    npu_err e;
    cr_assert_eq(fmt_npub_assemble("edge-v1", 0x1234abcdull, 0, secs, 9, npu_alloc_default(), &buf, size, &e),
                 NPU_OK, "%s", e.msg);
    return buf;
}

Test(npub, writer_output_opens_with_every_section)
{
    sample s;
    fill(&s);
    size_t size;
    void *buf = build(&s, &size);
    npub_view v;
    npub_error e;
    cr_assert_eq(npub_open(buf, size, &v, &e), 0, "%s", e.msg);
    cr_assert_eq(v.n_commands, 8);
    cr_assert_eq(v.commands[7], 0x1007u);
    cr_assert_eq(v.n_tensors, 3);
    cr_assert_str_eq(npub_string(&v, v.tensors[2].name), "conv1");
    cr_assert_eq(v.io->n_inputs, 1);
    cr_assert_eq(v.outputs[0], 1);
    cr_assert_eq(v.header->target_hash, 0x1234abcdull);
    cr_assert_str_eq(v.header->target, "edge-v1");
    free(buf);
}

Test(npub, dtype_bits_match_the_ir)
{
    for (int d = 0; d < IR_DTYPE_COUNT; d++)
        cr_assert_eq(npub_dtype_bits((uint32_t)d), (uint32_t)ir_dtype_bits((ir_dtype)d), "dtype %d", d);
}

Test(npub, every_truncation_is_rejected)
{
    sample s;
    fill(&s);
    size_t size;
    void *buf = build(&s, &size);
    npub_view v;
    npub_error e;
    for (size_t cut = 0; cut < size; cut += 3)
        cr_assert_eq(npub_open(buf, cut, &v, &e), -1, "truncation to %zu accepted", cut);
    free(buf);
}

Test(npub, every_byte_flip_is_caught_by_a_check)
{
    sample s;
    fill(&s);
    size_t size;
    unsigned char *buf = build(&s, &size);
    unsigned char *copy = aligned_alloc(16, size);
    npub_view v;
    npub_error e;
    for (size_t i = 0; i < size; i++) {
        memcpy(copy, buf, size);
        copy[i] ^= 0x5a;
        /* padding bytes between sections are not covered: skip those that still open */
        if (npub_open(copy, size, &v, &e) == 0)
            cr_assert(i >= sizeof(npub_header), "header flip at %zu accepted", i);
    }
    free(copy);
    free(buf);
}

struct bad {
    const char *what;
    void (*spoil)(sample *);
    const char *msg;
};

static void bad_region(sample *s) { s->tensors[0].offset = 4; }
static void bad_step(sample *s) { s->steps[0].b = 9; }
static void bad_params(sample *s) { s->steps[1].b = 20; }
static void bad_io(sample *s) { s->io[2] = 7; }
static void bad_dtype(sample *s) { s->tensors[1].dtype = 42; }
static void bad_size(sample *s) { s->tensors[2].size = 16; }
static void bad_string(sample *s) { s->tensors[1].name = 400; }
static void bad_alias(sample *s) { s->tensors[1].alias_of = 3; }
static void bad_const(sample *s) { s->mem.region_bytes[NPUB_REGION_CONST] = 41; }
static void bad_debug(sample *s) { s->dbg[0].word_count = 100; }

Test(npub, inconsistent_tables_are_rejected_with_place)
{
    static const struct bad cases[] = {
        {"tensor outside region", bad_region, "outside its region"},
        {"npu step range", bad_step, "command range outside"},
        {"host step params", bad_params, "parameters outside"},
        {"io binding", bad_io, "io binding names tensor 7"},
        {"dtype", bad_dtype, "bad dtype 42"},
        {"size vs shape", bad_size, "does not match its shape"},
        {"string offset", bad_string, "string offset 400"},
        {"alias", bad_alias, "alias of tensor 3"},
        {"constant region", bad_const, "constant region 41"},
        {"debug range", bad_debug, "debug entry 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sample s;
        fill(&s);
        cases[i].spoil(&s);
        size_t size;
        void *buf = build(&s, &size);
        npub_view v;
        npub_error e;
        cr_assert_eq(npub_open(buf, size, &v, &e), -1, "%s accepted", cases[i].what);
        cr_assert(strstr(e.msg, cases[i].msg), "%s: got '%s'", cases[i].what, e.msg);
        cr_assert(strncmp(e.msg, "byte ", 5) == 0, "%s", e.msg);
        free(buf);
    }
}

Test(npub, bad_magic_and_version)
{
    sample s;
    fill(&s);
    size_t size;
    unsigned char *buf = build(&s, &size);
    npub_view v;
    npub_error e;
    buf[0] ^= 1;
    cr_assert_eq(npub_open(buf, size, &v, &e), -1);
    cr_assert(strstr(e.msg, "bad magic"), "%s", e.msg);
    buf[0] ^= 1;
    buf[4] = 9;
    cr_assert_eq(npub_open(buf, size, &v, &e), -1);
    cr_assert(strstr(e.msg, "version 9"), "%s", e.msg);
    free(buf);
}

/* The native slicing path (large buffers) and the nibble path (small ones,
 * the firmware's) are the same CRC-32: the check value, and one large call
 * equal to a chain of small ones from every alignment. */
Test(npub, crc32_paths_agree)
{
    cr_assert_eq(npub_crc32(0, "123456789", 9), 0xCBF43926u);
    enum { N = 300000 };
    uint8_t *buf = malloc(N + 8);
    cr_assert_not_null(buf);
    uint32_t x = 1;
    for (size_t i = 0; i < N + 8; i++)
        buf[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 24);
    for (size_t off = 0; off < 8; off += 3) {
        uint32_t chained = 0;
        for (size_t at = 0; at < N; at += 1000)
            chained = npub_crc32(chained, buf + off + at, N - at < 1000 ? N - at : 1000);
        cr_assert_eq(npub_crc32(0, buf + off, N), chained, "offset %zu", off);
    }
    free(buf);
}
