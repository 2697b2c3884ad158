#include "common/stats.h"

#include <inttypes.h>
#include <stdlib.h>

#include "common/file.h"

double npu_stats_time_ms(const npu_stats *s)
{
    return s->clock_mhz > 0 ? (double)s->cycles_total / (s->clock_mhz * 1e3) : 0.0;
}

double npu_stats_mac_utilization(const npu_stats *s)
{
    double peak = (double)s->cycles_npu * s->peak_macs_per_cycle;
    return peak > 0 ? (double)s->macs / peak : 0.0;
}

void npu_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

const char *npu_stats_dtype_name(unsigned dt)
{
    /* ir_dtype order (src/ir/ir.h): f32 f16 i64 i32 i16 i8 u8 i4 u4 bool */
    static const char *const names[10] = {"float32", "float16", "int64", "int32", "int16",
                                          "int8",    "uint8",   "int4",  "uint4", "bool"};
    return dt < 10 ? names[dt] : "?";
}

void npu_stats_write_json(const npu_stats *s, FILE *out)
{
    fprintf(out, "{\n  \"target\": ");
    npu_json_string(out, s->target);
    fprintf(out, ",\n  \"model\": ");
    npu_json_string(out, s->model);
    if (s->target_config)
        fprintf(out, ",\n  \"target_config\": %s", s->target_config);
    fprintf(out,
            ",\n  \"cycles\": {\"total\": %" PRIu64 ", \"npu\": %" PRIu64 ", \"host\": %" PRIu64 "},\n"
            "  \"time_ms\": %.6f,\n  \"macs\": %" PRIu64 ",\n  \"mac_utilization\": %.6f,\n"
            "  \"dram\": {\"read_bytes\": %" PRIu64 ", \"write_bytes\": %" PRIu64 "},\n",
            s->cycles_total, s->cycles_npu, s->cycles_host, npu_stats_time_ms(s), s->macs,
            npu_stats_mac_utilization(s), s->dram_read_bytes, s->dram_write_bytes);
    fprintf(out,
            "  \"memory\": {\"arena_bytes\": %" PRIu64 ", \"arena_lower_bound_bytes\": %" PRIu64
            ", \"sram_peak_bytes\": %" PRIu64 ", \"weights_bytes\": %" PRIu64 ",\n    \"sram_resident_bytes\": %" PRIu64
            ", \"sram_resident_lower_bound_bytes\": %" PRIu64 ",\n    \"plan\": [",
            s->arena_bytes, s->arena_lower_bound_bytes, s->sram_peak_bytes, s->weights_bytes, s->sram_resident_bytes,
            s->sram_resident_lower_bound_bytes);
    for (int i = 0; i < s->n_plan; i++) {
        const npu_stats_buffer *b = &s->plan[i];
        fprintf(out, "%s\n      {\"tensor\": ", i ? "," : "");
        npu_json_string(out, b->tensor);
        fprintf(out, ", \"offset\": %" PRIu64 ", \"size\": %" PRIu64 ", \"first\": %d, \"last\": %d", b->offset,
                b->size, b->first, b->last);
        if (b->alias_of) {
            fprintf(out, ", \"alias_of\": ");
            npu_json_string(out, b->alias_of);
        }
        if (b->level)
            fprintf(out, ", \"first_pos\": %d, \"last_pos\": %d, \"level\": \"%s\"", b->first_pos, b->last_pos,
                    b->level);
        if (b->packed)
            fprintf(out, ", \"packed\": true");
        fputc('}', out);
    }
    fprintf(out, "%s]},\n  \"io\": [", s->n_plan ? "\n    " : "");
    for (int i = 0; i < s->n_io; i++) {
        const npu_stats_io *p = &s->io[i];
        fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
        npu_json_string(out, p->name);
        fprintf(out, ", \"kind\": \"%s\", \"dtype\": \"%s\", \"shape\": [", p->kind, p->dtype);
        for (int d = 0; d < p->rank && d < 8; d++)
            fprintf(out, "%s%" PRId64, d ? ", " : "", p->dims[d]);
        fprintf(out, "]");
        if (p->quantized)
            fprintf(out, ", \"scale\": %.9g, \"zero_point\": %" PRId32, p->scale, p->zero_point);
        fputc('}', out);
    }
    fprintf(out, "%s],\n  \"layers\": [", s->n_io ? "\n  " : "");
    for (int i = 0; i < s->n_layers; i++) {
        const npu_stats_layer *l = &s->layers[i];
        fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
        npu_json_string(out, l->name);
        fprintf(out, ", \"op\": ");
        npu_json_string(out, l->op);
        fprintf(out, ", \"unit\": ");
        npu_json_string(out, l->unit);
        fprintf(out,
                ", \"cycles\": %" PRIu64 ", \"macs\": %" PRIu64 ", \"dram_bytes\": %" PRIu64
                ", \"bound_cycles\": %" PRIu64 ", \"flash_bytes\": %" PRIu64 ", \"energy_nj\": %.3f}",
                l->cycles, l->macs, l->dram_bytes, l->bound_cycles, l->flash_bytes, l->energy_nj);
    }
    fprintf(out, "%s]", s->n_layers ? "\n  " : "");
    const npu_energy *e = &s->energy;
    const npu_area *a = &s->area;
    fprintf(out,
            ",\n  \"flash\": {\"read_bytes\": %" PRIu64 "},\n  \"load_cycles\": %" PRIu64 ",\n"
            "  \"energy\": {\"total_nj\": %.3f, \"mac_nj\": %.3f, \"sram_nj\": %.3f, \"dram_nj\": %.3f, "
            "\"flash_nj\": %.3f, \"vector_nj\": %.3f, \"host_nj\": %.3f, \"leak_nj\": %.3f},\n"
            "  \"area\": {\"total_mm2\": %.6f, \"mac_mm2\": %.6f, \"sram_mm2\": %.6f, \"vector_mm2\": %.6f, "
            "\"dma_mm2\": %.6f, \"ctrl_mm2\": %.6f, \"host_mm2\": %.6f}",
            s->flash_read_bytes, s->load_cycles, e->total, e->mac, e->sram, e->dram, e->flash, e->vector, e->host,
            e->leak, a->total, a->mac, a->sram, a->vector, a->dma, a->ctrl, a->host);
    if (s->extra) {
        fprintf(out, ",\n  ");
        s->extra(s->extra_ud, out);
    }
    fprintf(out, "\n}\n");
}

npu_status npu_stats_save_json(const npu_stats *s, const char *path, npu_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", path);
    npu_stats_write_json(s, f);
    fclose(f);
    npu_status st = npu_write_file_atomic(path, buf, len, err);
    free(buf);
    return st;
}
