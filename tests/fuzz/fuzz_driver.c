/* A main for the harnesses without libFuzzer: runs each file named on the
 * command line once (replaying crash files, a corpus under a debugger), or
 * stdin when none is given, which is how AFL++ feeds a target built with
 * afl-clang-fast (persistent mode when its macros are present). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

#ifdef __AFL_FUZZ_TESTCASE_LEN
/* AFL++'s shared-memory test case buffer: its macro defines file-scope objects */
__AFL_FUZZ_INIT();
#endif

static int run_file(const char *path)
{
    FILE *f = path ? fopen(path, "rb") : stdin;
    if (!f) {
        perror(path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    if (path)
        fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path ? path : "stdin");
        return 1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
#ifdef __AFL_FUZZ_TESTCASE_LEN
    if (argc < 2) {
        __AFL_INIT();
        unsigned char *buf = __AFL_FUZZ_TESTCASE_BUF;
        while (__AFL_LOOP(10000))
            LLVMFuzzerTestOneInput(buf, (size_t)__AFL_FUZZ_TESTCASE_LEN);
        return 0;
    }
#endif
    if (argc < 2)
        return run_file(NULL);
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        fprintf(stderr, "fuzz: running %s\n", argv[i]);
        bad |= run_file(argv[i]);
    }
    return bad;
}
