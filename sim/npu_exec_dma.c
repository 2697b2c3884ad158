/* dma_load and dma_store (docs/isa.md). With a4 the DRAM side holds int4
 * codes two per byte, low nibble first, addressed in nibbles; SRAM holds
 * one code per byte, so every compute instruction reads and writes bytes
 * as without a4. A store writes only its own nibbles (the byte's other
 * nibble is kept), which is what lets two boxes meet inside one byte. */
#include <string.h>

#include "kernels/nk_quant.h"
#include "sim/npu_internal.h"

enum { CHUNK = 256 }; /* codes packed per nk_int4_pack call */

/* w codes from SRAM to DRAM nibbles [nib, nib + w) of d: the first and last
 * byte's foreign nibble read back, then the whole bytes packed (one packing,
 * nk_int4_pack, which refuses a code outside -8..7). */
static bool store_row_a4(uint8_t *d, int64_t nib, const uint8_t *s, int64_t w)
{
    int8_t buf[CHUNK + 2];
    while (w > 0) {
        int64_t lead = nib & 1, take = w < CHUNK ? w : CHUNK, n = lead + take;
        if (lead)
            buf[0] = nk_int4_get(d, (size_t)nib - 1);
        memcpy(buf + lead, s, (size_t)take);
        if (n & 1)
            buf[n] = nk_int4_get(d, (size_t)(nib + take)), n++;
        if (nk_int4_pack(buf, d + (nib - lead) / 2, (size_t)n) != NK_OK)
            return false;
        nib += take, s += take, w -= take;
    }
    return true;
}

static void load_row_a4(const uint8_t *d, int64_t nib, uint8_t *s, int64_t w)
{
    for (int64_t i = 0; i < w; i++)
        s[i] = (uint8_t)nk_int4_get(d, (size_t)(nib + i));
}

npu_status npum_exec_dma(npu_model *m, const npum_insn *x, bool load, npu_err *err)
{
    const int64_t *v = x->d.v;
    bool a4 = v[TGT_F_A4] != 0;
    uint8_t *base = m->mem->region[v[TGT_F_REGION]].ptr, *s = m->sram + v[TGT_F_SRAM];
    for (int64_t z = 0; z < v[TGT_F_C]; z++)
        for (int64_t y = 0; y < v[TGT_F_H]; y++) {
            int64_t dr = v[TGT_F_DRAM] + z * v[TGT_F_DRAM_CS] + y * v[TGT_F_DRAM_HS];
            uint8_t *sr = s + z * v[TGT_F_SRAM_CS] + y * v[TGT_F_SRAM_HS];
            if (a4 && load)
                load_row_a4(base, dr, sr, v[TGT_F_W]);
            else if (a4 && !store_row_a4(base, dr, sr, v[TGT_F_W]))
                return npum_fault(m, err, x->index, x->word, &x->d,
                                  "a4 store: an SRAM byte of plane %lld row %lld is no int4 code (-8..7)",
                                  (long long)z, (long long)y);
            else if (load)
                memmove(sr, base + dr, (size_t)v[TGT_F_W]);
            else if (!a4)
                memmove(base + dr, sr, (size_t)v[TGT_F_W]);
        }
    return NPU_OK;
}
