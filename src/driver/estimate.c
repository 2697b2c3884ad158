#include "driver/estimate.h"

void drv_count_words(const tgt_target *t, const uint32_t *words, uint32_t first, uint32_t n, drv_moved *m)
{
    const tgt_isa *isa = t->isa;
    for (size_t off = first; off < (size_t)first + n;) {
        tgt_decoded d;
        npu_err e;
        if (tgt_decode(isa, words, (size_t)first + n, off, &d, &e) != NPU_OK)
            return;
        const tgt_insn *in = &isa->insns[d.insn];
        const int64_t *v = d.v;
        bool dma = in->sem == TGT_SEM_DMA_LOAD || in->sem == TGT_SEM_DMA_STORE;
        tgt_operand ops[TGT_MAX_OPERANDS];
        int k = tgt_operands(isa, d.insn, v, ops);
        for (int i = 0; i < k; i++) {
            /* as the simulator counts: a DMA box is c*h*w bytes on both sides (a4: half on the bus) */
            uint64_t b = !dma ? (uint64_t)ops[i].bytes
                         : ops[i].dram ? (uint64_t)tgt_dma_bus_bytes(v) : (uint64_t)(v[TGT_F_C] * v[TGT_F_H] * v[TGT_F_W]);
            if (ops[i].bytes <= 0)
                continue;
            if (ops[i].dram) {
                if (ops[i].write)
                    m->dram_write += b;
                else if (tgt_region_bus(t, v[TGT_F_REGION]) == TGT_BUS_FLASH)
                    m->flash += b;
                else
                    m->dram_read += b;
                continue;
            }
            if (ops[i].write) {
                m->sram_write += b;
                m->vector += in->unit == TGT_UNIT_VECTOR ? b : 0;
            } else {
                m->sram_read += b;
            }
        }
        m->int4 |= in->unit == TGT_UNIT_MAC && v[TGT_F_W4];
        off += (size_t)d.nwords;
    }
}

part_host_model drv_host_model(const tgt_target *t)
{
    return (part_host_model){t->npu_clock_mhz / t->host_clock_mhz, t->host_cpi,
                             tgt_bus_bytes_per_cycle(t, TGT_BUS_DRAM)};
}

/* The runtime's host instructions beside the kernels, measured on npusim
 * (its per-step host_cycles minus the NPU's): npurt_run's setup and return
 * once, and per NPU step the validation, region registers, doorbell and
 * completion. The partitioner's switch cost is the doorbell alone. */
enum { RT_RUN_INSNS = 213, RT_NPU_STEP_INSNS = 361 };

uint64_t drv_runtime_host_cycles(const part_host_model *m, int npu_steps)
{
    return (uint64_t)(((double)RT_RUN_INSNS + (double)RT_NPU_STEP_INSNS * npu_steps) * m->cpi *
                          m->npu_per_host_cycle + 0.5);
}
