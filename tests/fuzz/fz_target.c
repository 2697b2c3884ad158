/* A target description from memory (tgt_parse), its ISA looked up in the
 * tree's isa/ as for targets/; then the summary, the timing model and the
 * constraints of every instruction at its defaults. npu-v1 is parsed once
 * and shared (tgt_opts.isa): parsing it again for every input made this
 * harness 30x slower than the ISA harness, and the ISA harness fuzzes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/target.h"
#include "tests/fuzz/fuzz.h"

/* The ISA a target names is a file path: keep the fuzzer off devices and
 * kernel files (a FIFO or /dev/zero is the readers' own test, issue 19).
 * Compared only at a '/': a memcmp at every byte was half of the time under
 * libFuzzer's memcmp tracing. */
static int touches_system(const uint8_t *d, size_t n)
{
    static const char *const bad[] = {"/dev", "/proc", "/sys", "/run", "/tmp"};
    for (const uint8_t *p = d, *end = d + n; (p = memchr(p, '/', (size_t)(end - p))) != NULL; p++)
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            size_t k = strlen(bad[b]);
            if ((size_t)(end - p) >= k && !memcmp(p, bad[b], k))
                return 1;
        }
    return 0;
}

static void exercise(const tgt_target *t, FILE *sink)
{
    tgt_print_summary(t, sink);
    for (int i = 0; i < t->isa->ninsns; i++) {
        int64_t v[TGT_F_COUNT], cycles = 0;
        tgt_defaults(t->isa, i, v);
        npu_err err;
        npu_err_clear(&err);
        fuzz_check_err(tgt_timing(t, i, v, &cycles, &err), &err);
        npu_err_clear(&err);
        fuzz_check_err(tgt_check(t, i, v, &err), &err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        return 0;
    if (touches_system(data, size))
        return 0;
    char file[4096], isa_path[4096];
    snprintf(file, sizeof file, "%s/targets/fuzz.yaml", fuzz_root());
    static tgt_isa *npu_v1; /* the process's one shared ISA, never freed */
    if (!npu_v1) {
        snprintf(isa_path, sizeof isa_path, "%s/targets/../isa/npu-v1.yaml", fuzz_root());
        npu_err e;
        if (tgt_isa_load(isa_path, NULL, &npu_v1, &e) != NPU_OK)
            return fprintf(stderr, "fz_target: %s\n", e.msg), abort(), 0;
    }
    fuzz_alloc fa;
    tgt_opts o = {.alloc = fuzz_alloc_hook(&fa, 64u << 20), .search_path = "", .exe_dir = "/nonexistent",
                  .isa = npu_v1};
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    npu_err err;
    npu_err_clear(&err);
    tgt_target *t = NULL;
    npu_status st = tgt_parse(file, text, size, &o, &t, &err);
    fuzz_check_err(st, &err);
    if (st == NPU_OK) {
        exercise(t, sink);
        tgt_free(t);
    }
    free(text);
    fuzz_alloc_done(&fa);
    return 0;
}
