/* Just enough RV32IMAFC decoding for the host model: instruction lengths (to
 * count a block's instructions once) and the effective address of loads and
 * stores (to name the faulting instruction, which Unicorn does not). */
#include "sim/sim_internal.h"

uint32_t sim_rv_count(const uint8_t *p, uint32_t len)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i + 2 <= len; n++)
        i += (p[i] & 3u) == 3u ? 4u : 2u;
    return n;
}

static int32_t sext(uint32_t v, unsigned bits)
{
    uint32_t m = 1u << (bits - 1);
    return (int32_t)((v ^ m) - m);
}

static int mem32(uint32_t in, const uint32_t x[32], uint32_t *ea, int *is_store)
{
    uint32_t op = in & 0x7fu, rs1 = in >> 15 & 31u;
    switch (op) {
    case 0x03: /* LB LH LW LBU LHU */
    case 0x07: /* FLW */
        *ea = x[rs1] + (uint32_t)sext(in >> 20, 12);
        *is_store = 0;
        return 1;
    case 0x23: /* SB SH SW */
    case 0x27: /* FSW */
        *ea = x[rs1] + (uint32_t)sext((in >> 25) << 5 | (in >> 7 & 31u), 12);
        *is_store = 1;
        return 1;
    case 0x2f:                          /* LR SC AMO*: address in rs1 */
        *ea = x[rs1];
        *is_store = (in >> 27) != 0x02; /* all but LR write */
        return 1;
    default: return 0;
    }
}

static int mem16(uint32_t in, const uint32_t x[32], uint32_t *ea, int *is_store)
{
    uint32_t quad = in & 3u, f3 = in >> 13 & 7u;
    if (quad == 0 && (f3 == 2 || f3 == 3 || f3 == 6 || f3 == 7)) { /* C.LW C.FLW C.SW C.FSW */
        uint32_t rs1 = 8u + (in >> 7 & 7u);
        uint32_t off = (in >> 10 & 7u) << 3 | (in >> 6 & 1u) << 2 | (in >> 5 & 1u) << 6;
        *ea = x[rs1] + off;
        *is_store = f3 >= 6;
        return 1;
    }
    if (quad == 2 && (f3 == 2 || f3 == 3)) { /* C.LWSP C.FLWSP */
        uint32_t off = (in >> 12 & 1u) << 5 | (in >> 4 & 7u) << 2 | (in >> 2 & 3u) << 6;
        *ea = x[2] + off;
        *is_store = 0;
        return 1;
    }
    if (quad == 2 && (f3 == 6 || f3 == 7)) { /* C.SWSP C.FSWSP */
        uint32_t off = (in >> 9 & 15u) << 2 | (in >> 7 & 3u) << 6;
        *ea = x[2] + off;
        *is_store = 1;
        return 1;
    }
    return 0;
}

int sim_rv_mem_access(uint32_t insn, unsigned len, const uint32_t x[32], uint32_t *ea, int *is_store)
{
    return len == 4 ? mem32(insn, x, ea, is_store) : mem16(insn & 0xffffu, x, ea, is_store);
}
