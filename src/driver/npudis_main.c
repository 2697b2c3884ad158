/* npudis: disassembles NPU command streams, one instruction per line.
 *
 *   npudis --isa NAME|FILE.yaml STREAM.bin      raw little-endian 32-bit words
 *   npudis --target NAME|FILE.yaml STREAM.bin   the target's ISA
 *   npudis [--target NAME|FILE.yaml] MODEL.npub  the whole binary, listed
 *
 * Each input kind fills a dis_input (ISA, words, optional labels from a
 * debug section); the disassembly itself is tgt_disasm. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "emit/emit.h"
#include "rt/npub.h"
#include "target/target.h"
#include "man/npudis_help.h" /* build/gen: docs/cli.md, "## npudis" */

typedef struct dis_input {
    tgt_target *target; /* owns isa when set */
    tgt_isa *isa;
    uint32_t *words;
    size_t n;
    tgt_label_fn label; /* source node names per word offset, when known */
    void *label_ud;
    npu_alloc alloc;
} dis_input;

static void usage(FILE *f)
{
    fprintf(f, "usage: npudis --isa NAME|FILE.yaml STREAM.bin\n"
               "       npudis --target NAME|FILE.yaml STREAM.bin\n"
               "       npudis MODEL.npub\n");
}

static npu_status read_words(const char *path, dis_input *in, npu_err *err)
{
    void *b = NULL;
    size_t nb = 0;
    npu_status st = npu_read_file(path, in->alloc, &b, &nb, err);
    if (st != NPU_OK)
        return st;
    if (nb % 4) {
        npu_free_file(in->alloc, b, nb);
        return npu_fail(err, NPU_EUSER, "%s: byte %zu: expected whole 32-bit words, the file has %zu bytes", path,
                        nb - nb % 4, nb);
    }
    in->n = nb / 4;
    in->words = npu_malloc(in->alloc, in->n ? in->n * sizeof *in->words : 1);
    if (!in->words) {
        npu_free_file(in->alloc, b, nb);
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", path);
    }
    const unsigned char *p = b;
    for (size_t i = 0; i < in->n; i++) /* little-endian on any host */
        in->words[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                       (uint32_t)p[4 * i + 3] << 24;
    npu_free_file(in->alloc, b, nb);
    return NPU_OK;
}

static npu_status open_raw(const char *isa_arg, const char *target_arg, const char *path, dis_input *in,
                           npu_err *err)
{
    tgt_opts to = {.alloc = in->alloc};
    npu_status st = target_arg ? tgt_load(target_arg, &to, &in->target, err)
                               : tgt_isa_load(isa_arg, &to, &in->isa, err);
    if (st)
        return st;
    if (in->target)
        in->isa = (tgt_isa *)in->target->isa;
    return read_words(path, in, err);
}

/* A .npub: validated, then listed whole (tensors, steps, streams with the
 * source node of each range) with the ISA of the target it was built for.
 * A binary built for another variant of the target is refused unless
 * --target names the description to decode with. */
static npu_status dis_npub(const char *path, const char *target_arg, npu_alloc a, npu_err *err)
{
    void *buf = NULL;
    size_t size = 0;
    npub_view v;
    tgt_target *t = NULL;
    npu_status st = fmt_npub_read(path, a, &buf, &size, &v, err);
    if (st == NPU_OK)
        st = fmt_npub_target(&v, path, target_arg, !target_arg, &t, err);
    if (st == NPU_OK && (st = emit_listing(&v, t->isa, stdout, err)) != NPU_OK)
        npu_err_prefix(err, "%s", path);
    if (t)
        tgt_free(t);
    if (buf)
        npu_free_file(a, buf, size);
    return st;
}

static void release(dis_input *in)
{
    if (in->target)
        tgt_free(in->target);
    else
        tgt_isa_free(in->isa);
    if (in->words)
        npu_free(in->alloc, in->words, in->n ? in->n * sizeof *in->words : 1);
}

int main(int argc, char **argv)
{
    const char *isa = NULL, *target = NULL, *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
            isa = argv[++i];
        } else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) {
            target = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(npudis_help, stdout);
            return 0;
        } else if (argv[i][0] == '-' || file) {
            fprintf(stderr, "npudis: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return NPU_EUSAGE;
        } else {
            file = argv[i];
        }
    }
    if (!file || (isa && target)) {
        usage(stderr);
        return NPU_EUSAGE;
    }
    npu_alloc_counter count;
    dis_input in = {0};
    bool counting = npu_alloc_from_env(&in.alloc, &count);
    npu_err err;
    npu_err_clear(&err);
    size_t len = strlen(file);
    bool npub = !isa && len > 5 && strcmp(file + len - 5, ".npub") == 0;
    if (npub) {
        npu_status st = dis_npub(file, target, in.alloc, &err);
        if (st)
            fprintf(stderr, "npudis: %s\n", err.msg);
        npu_alloc_report("npudis", &count, counting);
        return (int)st;
    }
    if (!isa && !target) {
        fprintf(stderr, "npudis: %s: a raw stream needs --isa or --target\n", file);
        usage(stderr);
        return NPU_EUSAGE;
    }
    npu_status st = open_raw(isa, target, file, &in, &err);
    if (!st) {
        printf("; %s: ISA %s (hash %016llx), %zu words\n", file, in.isa->name, (unsigned long long)in.isa->hash,
               in.n);
        st = tgt_disasm(in.isa, in.words, in.n, stdout, in.label, in.label_ud, &err);
        if (st)
            npu_err_prefix(&err, "%s", file);
    }
    if (st)
        fprintf(stderr, "npudis: %s\n", err.msg);
    release(&in);
    npu_alloc_report("npudis", &count, counting);
    return (int)st;
}
