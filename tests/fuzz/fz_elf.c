/* The simulator's firmware ELF loader (sim_load_elf: sim_elf_check, then the
 * PT_LOAD copies into guest memory), then a short run of what it loaded:
 * a few thousand guest instructions through the host CPU and its MMIO. One
 * simulator context serves RENEW_EVERY inputs (creating Unicorn costs
 * ~10 ms): after 2.5 M reloads into one context Unicorn 2.0.1 crashed in
 * tb_set_jmp_target on a translation block without code (its issues #1923,
 * #2048: long sessions), which no single input reproduces; a context loads
 * one firmware in npusim. */
#include <stdio.h>
#include <stdlib.h>

#include "sim/sim.h"
#include "tests/fuzz/fuzz.h"

enum { RENEW_EVERY = 20000 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sim_ctx *s;
    static unsigned runs;
    npu_err err;
    npu_err_clear(&err);
    if (s && ++runs % RENEW_EVERY == 0) {
        sim_free(s);
        s = NULL;
    }
    if (!s) {
        sim_config cfg;
        sim_config_default(&cfg);
        cfg.max_insns = 4000;
        if (sim_new(&cfg, &s, &err) != NPU_OK) {
            fprintf(stderr, "fuzz: %s\n", err.msg);
            abort();
        }
    }
    npu_status st = sim_load_elf(s, data, size, "fuzz.elf", &err);
    fuzz_check_err(st, &err);
    if (st == NPU_OK) {
        sim_result res;
        npu_err_clear(&err);
        fuzz_check_err(sim_run(s, &res, &err), &err);
    }
    return 0;
}
