/* The human summary of a target (npucc --target X --validate). */
#include <stdio.h>

#include "target/target.h"

static void size_str(int64_t b, char *buf, size_t cap)
{
    if (b >= (1 << 20) && b % (1 << 20) == 0)
        snprintf(buf, cap, "%lld MiB", (long long)(b >> 20));
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, cap, "%lld KiB", (long long)(b >> 10));
    else
        snprintf(buf, cap, "%lld B", (long long)b);
}

static void dtypes_str(unsigned m, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s", m & TGT_DT_INT4 ? "int4 " : "", m & TGT_DT_INT8 ? "int8 " : "",
             m & TGT_DT_INT16 ? "int16 " : "");
}

void tgt_print_summary(const tgt_target *t, FILE *out)
{
    const int64_t *p = t->p;
    const tgt_isa *isa = t->isa;
    double ghz = t->npu_clock_mhz / 1000.0;
    int64_t macs = p[TGT_P_MAC_ROWS] * p[TGT_P_MAC_COLS];
    char s1[32], s2[32];
    fprintf(out, "target %s (%s)\n", t->name, t->file);
    if (t->description)
        fprintf(out, "  %s\n", t->description);
    fprintf(out, "  hash        %016llx\n", (unsigned long long)t->hash);
    fprintf(out, "  isa         %s (%s), hash %016llx, %d instructions\n", isa->name, isa->file,
            (unsigned long long)isa->hash, isa->ninsns);
    fprintf(out, "  npu clock   %g MHz, unit queues %lld deep\n", t->npu_clock_mhz, (long long)p[TGT_P_QUEUE_DEPTH]);
    fprintf(out, "  mac array   %lldx%lld, fill %lld cycles\n", (long long)p[TGT_P_MAC_ROWS],
            (long long)p[TGT_P_MAC_COLS], (long long)p[TGT_P_MAC_FILL]);
    fprintf(out, "  peak MACs   %lld/cycle int8 (%.1f GOPS)", (long long)macs, 2.0 * (double)macs * ghz);
    if (t->weight_dtypes & TGT_DT_INT4)
        fprintf(out, ", %lld/cycle int4 weights (%.1f GOPS)", (long long)(macs * p[TGT_P_MAC_INT4_SPEEDUP]),
                2.0 * (double)(macs * p[TGT_P_MAC_INT4_SPEEDUP]) * ghz);
    fprintf(out, "\n  vector      %lld lanes, latency %lld cycles\n", (long long)p[TGT_P_VECTOR_LANES],
            (long long)p[TGT_P_VECTOR_LATENCY]);
    size_str(p[TGT_P_SRAM_BYTES], s1, sizeof s1);
    size_str(p[TGT_P_SRAM_BYTES] / p[TGT_P_SRAM_BANKS], s2, sizeof s2);
    fprintf(out, "  sram        %s in %lld banks of %s\n", s1, (long long)p[TGT_P_SRAM_BANKS], s2);
    fprintf(out, "  dma         %lld channels\n", (long long)p[TGT_P_DMA_CHANNELS]);
    double dram = tgt_bus_bytes_per_cycle(t, TGT_BUS_DRAM), flash = tgt_bus_bytes_per_cycle(t, TGT_BUS_FLASH);
    fprintf(out, "  dram        %g B/cycle (%.2f GB/s), latency %lld cycles\n", dram,
            (double)p[TGT_P_DRAM_KB_PER_S] * 1e-6, (long long)p[TGT_P_DRAM_LATENCY]);
    fprintf(out, "  flash       %g B/cycle (%.2f GB/s), latency %lld cycles\n", flash,
            (double)p[TGT_P_FLASH_KB_PER_S] * 1e-6, (long long)p[TGT_P_FLASH_LATENCY]);
    fprintf(out, "  constants   in %s\n", p[TGT_P_PLACEMENT_CONSTANTS] == TGT_PLACE_FLASH
                                           ? "flash, read in place over the flash bus"
                                           : p[TGT_P_PLACEMENT_FLASH_STREAM]
                                               ? "DRAM, copied from flash at load; DMA-bound layers also stream from flash"
                                               : "DRAM, copied from flash at load");
    fprintf(out, "  ops/byte    %.1f MACs per DRAM byte at peak\n", (double)macs / dram);
    npu_area a;
    tgt_area(t, &a);
    fprintf(out, "  area        %.3f mm^2 (MAC %.3f, SRAM %.3f, vector %.3f, DMA %.3f, control %.3f, host %.3f)\n",
            a.total, a.mac, a.sram, a.vector, a.dma, a.ctrl, a.host);
    fprintf(out, "  energy      MAC %lld/%lld fJ (int8/int4), SRAM %lld/%lld fJ/B (read/write), DRAM %lld fJ/B, "
            "flash %lld fJ/B, vector %lld fJ, host %lld fJ/insn, static %lld uW/mm^2\n",
            (long long)p[TGT_P_E_MAC_INT8], (long long)p[TGT_P_E_MAC_INT4], (long long)p[TGT_P_E_SRAM_READ],
            (long long)p[TGT_P_E_SRAM_WRITE], (long long)p[TGT_P_E_DRAM], (long long)p[TGT_P_E_FLASH],
            (long long)p[TGT_P_E_VECTOR], (long long)p[TGT_P_E_HOST_INSN], (long long)p[TGT_P_E_LEAK]);
    fprintf(out, "  host        %s at %g MHz, CPI %g\n", t->host_isa, t->host_clock_mhz, t->host_cpi);
    dtypes_str(t->act_dtypes, s1, sizeof s1);
    dtypes_str(t->weight_dtypes, s2, sizeof s2);
    fprintf(out, "  dtypes      activations %sweights %s\n", s1, s2);
    fprintf(out, "  memory map\n");
    for (int m = 0; m < TGT_MEM_COUNT; m++) {
        size_str((int64_t)t->mem[m].size, s1, sizeof s1);
        fprintf(out, "    %-9s 0x%08llx..0x%08llx  %s\n", tgt_mem_name((tgt_mem)m),
                (unsigned long long)t->mem[m].base, (unsigned long long)(t->mem[m].base + t->mem[m].size - 1), s1);
    }
    fprintf(out, "  instructions\n");
    for (int i = 0; i < isa->ninsns; i++) {
        const tgt_insn *in = &isa->insns[i];
        int nc = 0;
        for (int c = 0; c < t->nconstraints; c++)
            nc += t->constraints[c].insn == i;
        fprintf(out, "    0x%02x %-10s %-7s %-9s %2d words %2d fields", in->opcode, in->name,
                tgt_unit_name(in->unit), tgt_sem_name(in->sem), in->nwords, in->nfields);
        if (nc)
            fprintf(out, " %d constraint%s", nc, nc > 1 ? "s" : "");
        fprintf(out, "\n");
    }
}
