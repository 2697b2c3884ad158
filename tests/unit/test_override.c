/* --set overrides of a target description (src/target/override.c): applied
 * to the YAML before it is checked, errors naming the override, the
 * effective description recorded (config_json) and embedded (embed_json),
 * which loads back to the same target. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/target.h"

static tgt_target *load_with(const char *const *sets, int n, npu_err *e)
{
    char path[4096];
    const char *r = getenv("NPUCC_ROOT");
    snprintf(path, sizeof path, "%s/targets/edge-v1.yaml", r && *r ? r : ".");
    tgt_opts o = {.sets = sets, .nsets = n};
    tgt_target *t = NULL;
    npu_err_clear(e);
    if (tgt_load(path, &o, &t, e) != NPU_OK)
        return NULL;
    return t;
}

Test(override, changes_the_parameter_and_the_hash)
{
    npu_err e;
    tgt_target *base = load_with(NULL, 0, &e);
    cr_assert_not_null(base, "%s", e.msg);
    const char *sets[] = {"npu.mac.cols=32", "npu.dram.bytes_per_cycle=0x10", "host.cpi=1.5"};
    tgt_target *t = load_with(sets, 3, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_assert_eq(t->p[TGT_P_MAC_COLS], 32);
    cr_assert_eq(t->p[TGT_P_DRAM_BYTES_PER_CYCLE], 16);
    cr_assert_float_eq(t->host_cpi, 1.5, 1e-12);
    cr_assert_eq(t->p[TGT_P_MAC_ROWS], base->p[TGT_P_MAC_ROWS]);
    cr_assert_neq(t->hash, base->hash);
    cr_assert_eq(t->nsets, 3);
    cr_assert_not_null(strstr(t->config_json, "\"npu.mac.cols\": 32"), "%s", t->config_json);
    cr_assert_not_null(strstr(t->config_json, "\"sets\": [\"npu.mac.cols=32\""), "%s", t->config_json);
    tgt_free(t);
    tgt_free(base);
}

Test(override, the_same_value_keeps_the_hash)
{
    npu_err e;
    tgt_target *base = load_with(NULL, 0, &e);
    const char *sets[] = {"npu.sram.bytes=512Ki"};
    tgt_target *t = load_with(sets, 1, &e);
    cr_assert(base && t, "%s", e.msg);
    cr_assert_eq(t->hash, base->hash);
    tgt_free(t);
    tgt_free(base);
}

Test(override, embedded_description_loads_back)
{
    npu_err e;
    const char *sets[] = {"npu.mac.rows=8", "target=edge-v1-x"};
    tgt_target *t = load_with(sets, 2, &e);
    cr_assert_not_null(t, "%s", e.msg);
    char path[4096];
    const char *r = getenv("NPUCC_ROOT");
    snprintf(path, sizeof path, "%s/targets/embedded.json", r && *r ? r : ".");
    tgt_target *back = NULL;
    cr_assert_eq(tgt_parse(path, t->embed_json, strlen(t->embed_json), NULL, &back, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(back->hash, t->hash);
    cr_assert_str_eq(back->name, "edge-v1-x");
    cr_assert_eq(back->p[TGT_P_MAC_ROWS], 8);
    /* the same parameters; file and sets say where each came from */
    cr_assert_str_eq(strstr(back->config_json, "\"params\""), strstr(t->config_json, "\"params\""));
    tgt_free(back);
    tgt_free(t);
}

static void refused(const char *set, const char *want)
{
    npu_err e;
    const char *sets[] = {set};
    tgt_target *t = load_with(sets, 1, &e);
    cr_assert_null(t, "--set %s accepted", set);
    cr_assert_not_null(strstr(e.msg, want), "--set %s: '%s' lacks '%s'", set, e.msg, want);
}

Test(override, errors_name_the_override)
{
    refused("npu.mac.cols=abc", "--set npu.mac.cols=abc: expected an integer for npu.mac.cols");
    refused("npu.mac.cols=0", "--set npu.mac.cols=0: expected npu.mac.cols in 1..");
    refused("npu.mac.colz=4", "--set npu.mac.colz=4: unknown key 'colz' in npu.mac");
    refused("npu.newgroup.x=4", "--set npu.newgroup.x=4: unknown key 'newgroup' in npu");
    refused("npu.mac=4", "'npu.mac' is a mapping");
    refused("npu.mac.cols.x=4", "'npu.mac.cols' is not a mapping");
    refused("npu.sram.banks=5", "--set npu.sram.banks=5: sram.bytes (524288) is not a multiple");
    refused("host.cpi=fast", "--set host.cpi=fast: expected a number for host.cpi");
    refused("no-equals", "expected PATH=VALUE");
    refused("=4", "expected PATH=VALUE");
    refused("npu..x=4", "empty key");
}
