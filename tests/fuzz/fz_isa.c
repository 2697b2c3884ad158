/* An ISA description from memory (tgt_isa_parse), then every instruction
 * encoded with its defaults and decoded back: what a parsed ISA promises. */
#include <stdlib.h>
#include <string.h>

#include "target/target.h"
#include "tests/fuzz/fuzz.h"

static void roundtrip(const tgt_isa *isa)
{
    for (int i = 0; i < isa->ninsns; i++) {
        int64_t v[TGT_F_COUNT];
        tgt_defaults(isa, i, v);
        uint32_t words[64];
        size_t n = 0;
        npu_err err;
        npu_err_clear(&err);
        npu_status st = tgt_encode(isa, i, v, words, 64, &n, &err);
        fuzz_check_err(st, &err);
        if (st != NPU_OK)
            continue;
        tgt_decoded d;
        npu_err_clear(&err);
        st = tgt_decode(isa, words, n, 0, &d, &err);
        fuzz_check_err(st, &err);
        char buf[512];
        if (st == NPU_OK)
            tgt_format(isa, &d, buf, sizeof buf);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_alloc fa;
    tgt_opts o = {.alloc = fuzz_alloc_hook(&fa, 64u << 20)};
    /* the loaders take NUL-terminated text, as tgt_read_file gives */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    npu_err err;
    npu_err_clear(&err);
    tgt_isa *isa = NULL;
    npu_status st = tgt_isa_parse("fuzz.yaml", text, size, &o, &isa, &err);
    fuzz_check_err(st, &err);
    if (st == NPU_OK) {
        roundtrip(isa);
        tgt_isa_free(isa);
    }
    free(text);
    fuzz_alloc_done(&fa);
    return 0;
}
