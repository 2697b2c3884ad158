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
} dis_input;

static void usage(FILE *f)
{
    fprintf(f, "usage: npudis --isa NAME|FILE.yaml STREAM.bin\n"
               "       npudis --target NAME|FILE.yaml STREAM.bin\n"
               "       npudis MODEL.npub\n");
}

static npu_status read_words(const char *path, dis_input *in, npu_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return npu_fail(err, NPU_EUSER, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1024, nb = 0;
    unsigned char *b = malloc(cap);
    for (;;) {
        if (!b) {
            fclose(f);
            return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", path);
        }
        nb += fread(b + nb, 1, cap - nb, f);
        if (nb < cap)
            break;
        unsigned char *nbuf = realloc(b, cap * 2);
        if (!nbuf)
            free(b);
        b = nbuf;
        cap *= 2;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad || nb % 4) {
        free(b);
        return bad ? npu_fail(err, NPU_EUSER, "%s: read error", path)
                   : npu_fail(err, NPU_EUSER, "%s: byte %zu: expected whole 32-bit words, the file has %zu bytes",
                              path, nb - nb % 4, nb);
    }
    in->n = nb / 4;
    in->words = malloc(in->n ? in->n * sizeof *in->words : 1);
    if (!in->words) {
        free(b);
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", path);
    }
    for (size_t i = 0; i < in->n; i++) /* little-endian on any host */
        in->words[i] = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 | (uint32_t)b[4 * i + 2] << 16 |
                       (uint32_t)b[4 * i + 3] << 24;
    free(b);
    return NPU_OK;
}

static npu_status open_raw(const char *isa_arg, const char *target_arg, const char *path, dis_input *in,
                           npu_err *err)
{
    npu_status st = target_arg ? tgt_load(target_arg, NULL, &in->target, err)
                               : tgt_isa_load(isa_arg, NULL, &in->isa, err);
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
static npu_status dis_npub(const char *path, const char *target_arg, npu_err *err)
{
    npu_alloc a = npu_alloc_default();
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
        npu_free(a, buf, size);
    return st;
}

static void release(dis_input *in)
{
    if (in->target)
        tgt_free(in->target);
    else
        tgt_isa_free(in->isa);
    free(in->words);
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
    dis_input in = {0};
    npu_err err;
    npu_err_clear(&err);
    size_t len = strlen(file);
    bool npub = !isa && len > 5 && strcmp(file + len - 5, ".npub") == 0;
    if (npub) {
        npu_status st = dis_npub(file, target, &err);
        if (st)
            fprintf(stderr, "npudis: %s\n", err.msg);
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
    return (int)st;
}
