/* SHA-256 against FIPS 180-2 (appendix B) vectors, HMAC-SHA256 against
 * RFC 4231, and the keyed check of a .npub (rt/npub_mac.c): a signed file
 * verifies, another key, a changed section (CRC recomputed) or an unsigned
 * file do not; the stripped copy the device gets keeps its device tag. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/npub_sign.h"
#include "format/format.h"
#include "ir/ir.h"
#include "rt/npu_sha256.h"
#include "rt/npurt.h"

static void hex(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void check_sha(const void *msg, size_t n, const char *want)
{
    uint8_t d[32];
    char h[65];
    npu_sha256(msg, n, d);
    hex(d, 32, h);
    cr_assert_str_eq(h, want);
}

Test(sha256, fips_180_vectors)
{
    check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_sha(m448, strlen(m448), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmn"
                       "opqrstnopqrstu";
    check_sha(m896, strlen(m896), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    /* a million 'a', fed in uneven pieces: the block buffering */
    npu_sha256_ctx c;
    npu_sha256_init(&c);
    char a[997];
    memset(a, 'a', sizeof a);
    size_t left = 1000000;
    for (size_t k = 1; left; k = k % 996 + 1) {
        size_t n = k < left ? k : left;
        npu_sha256_update(&c, a, n);
        left -= n;
    }
    uint8_t d[32];
    char h[65];
    npu_sha256_final(&c, d);
    hex(d, 32, h);
    cr_assert_str_eq(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void check_hmac(const void *key, size_t kn, const void *msg, size_t n, const char *want)
{
    uint8_t d[32];
    char h[65];
    npu_hmac_sha256(key, kn, msg, n, d);
    hex(d, 32, h);
    cr_assert_str_eq(h, want);
}

Test(sha256, rfc4231_hmac_vectors)
{
    uint8_t k[131], m[50];
    memset(k, 0x0b, 20);
    check_hmac(k, 20, "Hi There", 8, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    check_hmac("Jefe", 4, "what do ya want for nothing?", 28,
               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(k, 0xaa, 20);
    memset(m, 0xdd, 50);
    check_hmac(k, 20, m, 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    for (int i = 0; i < 25; i++)
        k[i] = (uint8_t)(i + 1);
    memset(m, 0xcd, 50);
    check_hmac(k, 25, m, 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    memset(k, 0xaa, 131);
    const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    check_hmac(k, 131, t6, strlen(t6), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    const char *t7 = "This is a test using a larger than block-size key and a larger than block-size data. The key "
                     "needs to be hashed before being used by the HMAC algorithm.";
    check_hmac(k, 131, t7, strlen(t7), "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

/* ---- the keyed check of a .npub --------------------------------------------- */

typedef struct sample {
    uint32_t cmds[4];
    uint8_t consts[16];
    npub_tensor tensors[2];
    npub_step steps[1];
    uint32_t io[4];
    char strings[8];
    npub_memory mem;
    uint8_t graph[16];
} sample;

static void *build(sample *s, bool with_graph, size_t *size)
{
    memset(s, 0, sizeof *s);
    memcpy(s->strings, "\0x\0y\0", 5);
    s->mem.region_bytes[NPUB_REGION_CONST] = sizeof s->consts;
    s->mem.region_bytes[NPUB_REGION_INPUT] = 16;
    s->mem.region_bytes[NPUB_REGION_OUTPUT] = 16;
    npub_tensor x = {.name = 1, .dtype = IR_I8, .rank = 1, .region = NPUB_REGION_INPUT, .dims = {16}, .size = 16,
                     .alias_of = NPUB_NONE};
    s->tensors[0] = x;
    x.name = 3, x.region = NPUB_REGION_OUTPUT;
    s->tensors[1] = x;
    s->steps[0] = (npub_step){.kind = NPUB_STEP_NPU, .a = 0, .b = 4, .name = 1};
    s->io[0] = 1, s->io[1] = 1, s->io[2] = 0, s->io[3] = 1;
    for (int i = 0; i < 16; i++)
        s->consts[i] = (uint8_t)i, s->graph[i] = (uint8_t)(0x40 + i);
    fmt_section secs[] = {
        {NPUB_SEC_COMMANDS, s->cmds, sizeof s->cmds},      {NPUB_SEC_CONSTANTS, s->consts, sizeof s->consts},
        {NPUB_SEC_TENSORS, s->tensors, sizeof s->tensors}, {NPUB_SEC_STEPS, s->steps, sizeof s->steps},
        {NPUB_SEC_IO, s->io, sizeof s->io},                {NPUB_SEC_STRINGS, s->strings, 6},
        {NPUB_SEC_MEMORY, &s->mem, sizeof s->mem},         {NPUB_SEC_GRAPH, s->graph, sizeof s->graph},
    };
    void *buf;
    npu_err e;
    cr_assert_eq(fmt_npub_assemble("edge-v1", 0x1234ull, 0, secs, with_graph ? 8 : 7, npu_alloc_default(), &buf,
                                    size, &e),
                 NPU_OK, "%s", e.msg);
    return buf;
}

static const uint8_t key[] = "a key only the firmware's maker has\n", other[] = "a key only the firmware's maker had\n";

static void open_ok(const void *buf, size_t size, npub_view *v)
{
    npub_error ne;
    cr_assert_eq(npurt_open(buf, size, v, &ne), 0, "%s", ne.msg);
}

/* The file's section of kind k, changed in byte i, its CRC made right again. */
static void tamper(uint8_t *buf, uint32_t kind, uint32_t i)
{
    npub_view v;
    open_ok(buf, ((npub_header *)buf)->file_size, &v);
    npub_section *s = (npub_section *)v.sec[kind];
    buf[s->offset + i] ^= 0x01;
    s->crc = npub_crc32(0, buf + s->offset, s->size);
}

Test(npub_mac, signed_files_verify_and_changed_ones_do_not)
{
    sample s;
    size_t size;
    void *buf = build(&s, true, &size);
    npub_view v;
    npub_error ne;
    open_ok(buf, size, &v);
    cr_assert_null(v.mac);
    cr_assert_neq(npurt_verify_mac(&v, key, sizeof key - 1, &ne), 0, "an unsigned file verifies");
    cr_assert(strstr(ne.msg, "not signed"), "%s", ne.msg);
    npu_err e;
    cr_assert_eq(fmt_npub_sign(&buf, &size, key, sizeof key - 1, npu_alloc_default(), &e), NPU_OK, "%s", e.msg);
    open_ok(buf, size, &v);
    cr_assert_not_null(v.mac);
    cr_assert_eq(npurt_verify_mac(&v, key, sizeof key - 1, &ne), 0, "%s", ne.msg);
    cr_assert_eq(npub_mac_verify(&v, key, sizeof key - 1, 1, &ne), 0, "%s", ne.msg);
    cr_assert_neq(npurt_verify_mac(&v, other, sizeof other - 1, &ne), 0, "another key verifies");
    cr_assert(strstr(ne.msg, "byte") && strstr(ne.msg, "does not match"), "%s", ne.msg);
    /* signing again replaces the tags, not adds a second section */
    cr_assert_eq(fmt_npub_sign(&buf, &size, other, sizeof other - 1, npu_alloc_default(), &e), NPU_OK, "%s", e.msg);
    open_ok(buf, size, &v);
    cr_assert_eq(npurt_verify_mac(&v, other, sizeof other - 1, &ne), 0, "%s", ne.msg);
    cr_assert_neq(npurt_verify_mac(&v, key, sizeof key - 1, &ne), 0);
    /* a changed constant: both tags fail; a changed graph: only the full one */
    uint8_t *c = malloc(size);
    memcpy(c, buf, size);
    tamper(c, NPUB_SEC_CONSTANTS, 3);
    open_ok(c, size, &v);
    cr_assert_neq(npurt_verify_mac(&v, other, sizeof other - 1, &ne), 0, "changed constants verify");
    cr_assert_neq(npub_mac_verify(&v, other, sizeof other - 1, 1, &ne), 0);
    memcpy(c, buf, size);
    tamper(c, NPUB_SEC_GRAPH, 7);
    open_ok(c, size, &v);
    cr_assert_eq(npurt_verify_mac(&v, other, sizeof other - 1, &ne), 0, "%s", ne.msg);
    cr_assert_neq(npub_mac_verify(&v, other, sizeof other - 1, 1, &ne), 0, "a changed graph section verifies");
    free(c);
    npu_free(npu_alloc_default(), buf, size);
}

Test(npub_mac, the_stripped_device_copy_keeps_its_device_tag)
{
    sample s;
    size_t size, ssize;
    void *buf = build(&s, true, &size);
    npu_err e;
    cr_assert_eq(fmt_npub_sign(&buf, &size, key, sizeof key - 1, npu_alloc_default(), &e), NPU_OK, "%s", e.msg);
    npub_view v;
    open_ok(buf, size, &v);
    /* what npusim puts in flash: every section but the debug and graph ones */
    fmt_section secs[NPUB_SEC_KIND_MAX];
    int n = 0;
    for (uint32_t i = 0; i < v.header->section_count; i++)
        if (v.sections[i].kind != NPUB_SEC_GRAPH && v.sections[i].kind != NPUB_SEC_DEBUG)
            secs[n++] = (fmt_section){(npub_section_kind)v.sections[i].kind, v.base + v.sections[i].offset,
                                       v.sections[i].size};
    void *dev;
    cr_assert_eq(fmt_npub_assemble("edge-v1", 0x1234ull, NPUB_F_STRIPPED, secs, n, npu_alloc_default(), &dev, &ssize,
                                    &e),
                 NPU_OK, "%s", e.msg);
    npub_view dv;
    npub_error ne;
    open_ok(dev, ssize, &dv);
    cr_assert_eq(npurt_verify_mac(&dv, key, sizeof key - 1, &ne), 0, "%s", ne.msg);
    cr_assert_eq(npub_mac_verify(&dv, key, sizeof key - 1, 1, &ne), 0, "%s", ne.msg);
    /* an unsigned build of the same sections: the tag is not a checksum anyone can recompute */
    size_t usize;
    void *u = build(&s, true, &usize);
    npub_view uv;
    open_ok(u, usize, &uv);
    uint8_t t1[32], t2[32];
    npub_mac_compute(&uv, key, sizeof key - 1, NPUB_SEC_MEMORY, t1);
    npub_mac_compute(&uv, other, sizeof other - 1, NPUB_SEC_MEMORY, t2);
    cr_assert(memcmp(t1, v.mac->device, 32) == 0, "the device tag depends on the layout");
    cr_assert(memcmp(t1, t2, 32) != 0);
    npu_free(npu_alloc_default(), u, usize);
    npu_free(npu_alloc_default(), dev, ssize);
    npu_free(npu_alloc_default(), buf, size);
}
