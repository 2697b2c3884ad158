/* CRC repair and the npuref graph run, for fz_npub and fz_graph. */
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"
#include "ref/ref_check.h"
#include "rt/npub.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_npub.h"

void fuzz_npub_fix_crcs(uint8_t *buf, size_t size)
{
    if (size < sizeof(npub_header))
        return;
    npub_header h;
    memcpy(&h, buf, sizeof h);
    if (h.magic != NPUB_MAGIC)
        return;
    h.file_size = (uint32_t)size;
    uint64_t table = h.section_table;
    for (uint32_t i = 0; i < h.section_count && table + (uint64_t)(i + 1) * sizeof(npub_section) <= size; i++) {
        npub_section s;
        size_t at = (size_t)table + (size_t)i * sizeof s;
        memcpy(&s, buf + at, sizeof s);
        if ((uint64_t)s.offset + s.size <= size) {
            s.crc = npub_crc32(0, buf + s.offset, s.size);
            memcpy(buf + at, &s, sizeof s);
        }
    }
    h.header_crc = 0;
    h.header_crc = npub_crc32(0, &h, sizeof h);
    memcpy(buf, &h, sizeof h);
}

enum { MAX_TENSOR_BYTES = 4 << 20, MAX_TOTAL_BYTES = 32 << 20 };

/* Big graphs are valid but slow; the fuzzer is after wrong ones. */
static int small_enough(const ir_graph *g)
{
    size_t total = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        size_t b = ir_tensor_bytes(g->tensors[i]);
        if (b > MAX_TENSOR_BYTES)
            return 0;
        total += b;
    }
    return total <= MAX_TOTAL_BYTES && g->n_nodes <= 256;
}

static void run(const ir_graph *g, npu_alloc al)
{
    void **in = calloc((size_t)g->n_inputs + 1, sizeof *in), **out = calloc((size_t)g->n_outputs + 1, sizeof *out);
    int ok = in && out;
    for (int i = 0; ok && i < g->n_inputs; i++)
        ok = (in[i] = calloc(1, ir_tensor_bytes(g->inputs[i]) + 1)) != NULL;
    for (int i = 0; ok && i < g->n_outputs; i++)
        ok = (out[i] = calloc(1, ir_tensor_bytes(g->outputs[i]) + 1)) != NULL;
    npu_err err;
    npu_err_clear(&err);
    ref_ctx *ctx = ok ? ref_ctx_new(g, al, &err) : NULL;
    if (ok && !ctx)
        fuzz_check_err(err.code ? err.code : NPU_EINTERNAL, &err);
    if (ctx) {
        npu_err_clear(&err);
        fuzz_check_err(ref_ctx_run(ctx, (const void *const *)in, out, &err), &err);
        ref_ctx_free(ctx);
    }
    for (int i = 0; in && i < g->n_inputs; i++)
        free(in[i]);
    for (int i = 0; out && i < g->n_outputs; i++)
        free(out[i]);
    free(in);
    free(out);
}

void fuzz_run_graph(const uint8_t *data, size_t size, npu_alloc al, int run_it)
{
    npu_err err;
    npu_err_clear(&err);
    ir_graph *g = NULL;
    /* as npuref MODEL.npub: the reader, then the re-check of the stored graph */
    npu_status st = ref_load_graph_section(data, size, 0, al, &g, &err);
    fuzz_check_err(st, &err);
    if (st != NPU_OK)
        return;
    if (run_it && small_enough(g))
        run(g, al);
    ir_graph_free(g);
}
