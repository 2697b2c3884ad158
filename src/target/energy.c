/* Energy and area of a target from its per-access and per-component
 * figures (params.def energy.* and area.*, Accelergy-style): the same
 * arithmetic for npucc's estimate and npusim's measurement. */
#include "target/tgt_internal.h"

void tgt_area(const tgt_target *t, npu_area *a)
{
    const int64_t *p = t->p;
    const double um2 = 1e-6; /* mm^2 per um^2 */
    a->mac = (double)(p[TGT_P_MAC_ROWS] * p[TGT_P_MAC_COLS] * p[TGT_P_A_MAC]) * um2;
    a->sram = (double)p[TGT_P_SRAM_BYTES] / 1024.0 * (double)p[TGT_P_A_SRAM] * um2;
    a->vector = (double)(p[TGT_P_VECTOR_LANES] * p[TGT_P_A_VECTOR]) * um2;
    a->dma = (double)(p[TGT_P_DMA_CHANNELS] * p[TGT_P_A_DMA]) * um2;
    a->ctrl = (double)p[TGT_P_A_CTRL] * um2;
    a->host = (double)p[TGT_P_A_HOST] * um2;
    a->total = a->mac + a->sram + a->vector + a->dma + a->ctrl + a->host;
}

void tgt_energy(const tgt_target *t, const npu_energy_counts *c, npu_energy *e)
{
    const int64_t *p = t->p;
    const double nj = 1e-6; /* nJ per fJ */
    npu_area a;
    tgt_area(t, &a);
    e->mac = ((double)c->macs_int8 * (double)p[TGT_P_E_MAC_INT8] + (double)c->macs_int4 * (double)p[TGT_P_E_MAC_INT4]) * nj;
    e->sram = ((double)c->sram_read * (double)p[TGT_P_E_SRAM_READ] + (double)c->sram_write * (double)p[TGT_P_E_SRAM_WRITE]) * nj;
    e->dram = (double)c->dram * (double)p[TGT_P_E_DRAM] * nj;
    e->flash = (double)c->flash * (double)p[TGT_P_E_FLASH] * nj;
    e->vector = (double)c->vector * (double)p[TGT_P_E_VECTOR] * nj;
    e->host = (double)c->host_insns * (double)p[TGT_P_E_HOST_INSN] * nj;
    e->leak = a.total * (double)p[TGT_P_E_LEAK] * 1e-6 * c->seconds * 1e9; /* mm^2 * uW/mm^2 -> W, J -> nJ */
    e->total = e->mac + e->sram + e->dram + e->flash + e->vector + e->host + e->leak;
}
