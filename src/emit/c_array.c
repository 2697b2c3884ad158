/* --emit c: the binary as a C array a firmware links, and a header with
 * the sizes it must provide. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/stats.h"
#include "emit/emit.h"
#include "rt/npurt_ops.h"

/* A C identifier from the header's file name: "out/fmnist-cnn.h" -> "fmnist_cnn". */
static void c_name(const char *h_path, char *name, size_t cap)
{
    const char *base = strrchr(h_path, '/');
    base = base ? base + 1 : h_path;
    size_t n = 0;
    if (!(base[0] >= 'a' && base[0] <= 'z') && !(base[0] >= 'A' && base[0] <= 'Z') && cap > 1)
        name[n++] = 'm';
    for (; *base && *base != '.' && n + 1 < cap; base++) {
        char c = *base;
        name[n++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '_';
    }
    name[n] = 0;
}

/* A growing text buffer: the files are written whole, atomically. */
typedef struct text {
    char *p;
    size_t n, cap;
    int oom;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    for (int tries = 0; tries < 2 && !t->oom; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            t->oom = 1;
            return;
        }
        if (t->p && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return;
        }
        size_t ncap = (t->cap ? t->cap * 2 : 1 << 16) + (size_t)k;
        char *np = realloc(t->p, ncap);
        if (!np) {
            t->oom = 1;
            return;
        }
        t->p = np, t->cap = ncap;
    }
}

/* Per input and output: what a firmware needs to fill or read the buffer
 * (docs/runtime.md). Scales are hex floats, exact; the decimal in the
 * comment is for people. Float I/O has scale 1 and zero point 0. */
static void io_macros(text *h, const char *name, const npub_view *v)
{
    uint32_t n_in = v->io->n_inputs, n_out = v->io->n_outputs;
    put(h, "\n/* dtype codes (rt/npub.h, ir_dtype): 0 float32, 5 int8, 6 uint8 */\n");
    put(h, "#define %s_INPUT_COUNT %uu\n#define %s_OUTPUT_COUNT %uu\n", name, n_in, name, n_out);
    for (uint32_t i = 0; i < n_in + n_out; i++) {
        const npub_tensor *t = &v->tensors[v->inputs[i]];
        char p[160];
        snprintf(p, sizeof p, "%s_%s%u", name, i < n_in ? "INPUT" : "OUTPUT", i < n_in ? i : i - n_in);
        const npub_io_type *r = v->io_types ? &v->io_types[i] : NULL;
        int q = r ? r->has_quant : t->has_quant;
        float scale = q ? (r ? r->scale : t->scale) : 1.0f;
        int32_t zp = q ? (r ? r->zero_point : t->zero_point) : 0;
        put(h, "\n#define %s_NAME \"", p);
        for (const char *c = npub_string(v, t->name); *c; c++) /* a C string literal of any name */
            put(h, *c == '"' || *c == '\\' ? "\\%c" : (*c < 32 || *c > 126) ? "\\%03o" : "%c",
                *c < 32 || *c > 126 ? (unsigned char)*c : *c);
        put(h, "\"\n#define %s_DTYPE %u /* %s */\n", p, t->dtype, npu_stats_dtype_name(t->dtype));
        put(h, "#define %s_RANK %u\n#define %s_SHAPE {", p, t->rank, p);
        for (int d = 0; d < t->rank; d++)
            put(h, "%s%d", d ? ", " : "", (int)t->dims[d]);
        put(h, "}\n#define %s_BYTES %uu\n#define %s_OFFSET %uu /* in the %s region */\n", p, t->size, p, t->offset,
            i < n_in ? "input" : "output");
        put(h, "#define %s_QUANTIZED %d\n#define %s_SCALE %af /* %.9g */\n#define %s_ZERO_POINT (%d)\n", p, q, p,
            (double)scale, (double)scale, p, (int)zp);
    }
}

/* The host kernels the binary's steps use, in id order: used[k] != 0. */
static int used_kernels(const npub_view *v, uint8_t used[NPURT_K_COUNT])
{
    int n = 0;
    memset(used, 0, NPURT_K_COUNT);
    for (uint32_t i = 0; i < v->n_steps; i++)
        if (v->steps[i].kind == NPUB_STEP_HOST && v->steps[i].op < NPURT_K_COUNT && !used[v->steps[i].op]++)
            n++;
    return n;
}

/* "QCONV" -> "qconv": the kernel's npurt_op_<name> (rt/npurt_ops.h). */
static void op_symbol(uint32_t k, char *out, size_t cap)
{
    const char *n = npurt_kernel_name(k);
    size_t i = 0;
    for (; n[i] && i + 1 < cap; i++)
        out[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] - 'A' + 'a' : n[i]);
    out[i] = 0;
}

/* The op table (TFLM's op resolver): only the kernels of this model are
 * referenced, so the linker leaves every other kernel out. */
static void op_table(text *c, const char *name, const npub_view *v)
{
    uint8_t used[NPURT_K_COUNT];
    char sym[32];
    used_kernels(v, used);
    put(c, "\n/* The host kernels of this model: npurt_model_open(..., %s_ops) links only these. */\n", name);
    put(c, "struct npurt_op;\n");
    for (uint32_t k = 1; k < NPURT_K_COUNT; k++)
        if (used[k]) {
            op_symbol(k, sym, sizeof sym);
            put(c, "extern const struct npurt_op npurt_op_%s;\n", sym);
        }
    put(c, "const struct npurt_op *const %s_ops[] = {", name);
    for (uint32_t k = 1; k < NPURT_K_COUNT; k++)
        if (used[k]) {
            op_symbol(k, sym, sizeof sym);
            put(c, "&npurt_op_%s, ", sym);
        }
    put(c, "0};\n");
}

static uint32_t align16(uint32_t n)
{
    return (n + 15u) & ~15u;
}

npu_status emit_c_files(const void *npub, size_t size, const char *c_path, const char *h_path,
                        const emit_c_options *opt, npu_err *err)
{
    npub_view v;
    npub_error ne;
    if (npub_open(npub, size, &v, &ne) != 0)
        return npu_fail(err, NPU_EINTERNAL, "emitted binary does not validate: %s", ne.msg);
    char name[128], guard[160];
    c_name(h_path, name, sizeof name);
    snprintf(guard, sizeof guard, "%s_NPUB_H", name);
    for (char *c = guard; *c; c++)
        if (*c >= 'a' && *c <= 'z')
            *c = (char)(*c - 'a' + 'A');
    const npub_memory *m = v.memory;
    text h = {0}, c = {0};
    put(&h, "/* Generated by npucc: the sizes a firmware provides to libnpurt for %s. */\n", name);
    put(&h, "#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n", guard, guard);
    put(&h, "#define %s_NPUB_BYTES %zuu\n", name, size);
    put(&h, "#define %s_ARENA_BYTES %uu\n", name, m ? m->region_bytes[NPUB_REGION_ARENA] : 0);
    put(&h, "#define %s_INPUT_BYTES %uu\n", name, m ? m->region_bytes[NPUB_REGION_INPUT] : 0);
    put(&h, "#define %s_OUTPUT_BYTES %uu\n", name, m ? m->region_bytes[NPUB_REGION_OUTPUT] : 0);
    put(&h, "#define %s_SCRATCH_BYTES %uu\n", name, m ? m->scratch_bytes : 0);
    put(&h, "#define %s_CONST_BYTES %uu\n", name, m ? m->region_bytes[NPUB_REGION_CONST] : 0);
    put(&h, "/* npurt_model_work_bytes: arena, input, output, scratch, each rounded up to 16 */\n");
    put(&h, "#define %s_WORK_BYTES %uu\n", name,
        m ? align16(m->region_bytes[NPUB_REGION_ARENA]) + align16(m->region_bytes[NPUB_REGION_INPUT]) +
                align16(m->region_bytes[NPUB_REGION_OUTPUT]) + align16(m->scratch_bytes)
          : 0);
    io_macros(&h, name, &v);
    put(&h, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    put(&h, "extern const uint8_t %s_npub[%s_NPUB_BYTES];\n", name, name);
    put(&h, "struct npurt_op;\n/* the op table of npurt_model_open (rt/npurt_model.h), NULL-terminated */\n");
    put(&h, "extern const struct npurt_op *const %s_ops[];\n", name);
    put(&h, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
    put(&c, "/* Generated by npucc for target %.24s: the compiled model. */\n", v.header->target);
    put(&c, "#include \"%s\"\n\n", strrchr(h_path, '/') ? strrchr(h_path, '/') + 1 : h_path);
    unsigned align = opt && opt->align ? opt->align : 16;
    if (opt && opt->section)
        put(&c, "__attribute__((aligned(%u), section(\"%s\"))) ", align, opt->section);
    else
        put(&c, "__attribute__((aligned(%u))) ", align);
    put(&c, "const uint8_t %s_npub[%s_NPUB_BYTES] = {\n", name, name);
    const uint8_t *b = npub;
    for (size_t i = 0; i < size; i++)
        put(&c, "%s0x%02x,%s", i % 16 ? "" : "    ", b[i], i % 16 == 15 || i + 1 == size ? "\n" : "");
    put(&c, "};\n");
    op_table(&c, name, &v);
    npu_status st = NPU_OK;
    if (h.oom || c.oom)
        st = npu_fail(err, NPU_EINTERNAL, "out of memory writing %s", c_path);
    if (st == NPU_OK)
        st = npu_write_file_atomic(h_path, h.p, h.n, err);
    if (st == NPU_OK && (st = npu_write_file_atomic(c_path, c.p, c.n, err)) != NPU_OK)
        remove(h_path); /* never one file of the pair without the other */
    free(h.p);
    free(c.p);
    return st;
}
