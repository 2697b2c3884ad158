#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"

static char *render(const npu_stats *s)
{
    FILE *f = tmpfile();
    npu_stats_write_json(s, f);
    long len = ftell(f);
    rewind(f);
    char *buf = calloc(1, (size_t)len + 1);
    cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    return buf;
}

Test(stats, json_has_contract_fields_and_derived_values)
{
    npu_stats_layer layers[2] = {{"conv1", "Conv", "npu", 1000, 256000, 4096, 900, 0, 0},
                                 {"sm\"x", "Softmax", "host", 50, 0, 0, 0, 0, 0}};
    npu_stats_buffer plan[2] = {{"a", 0, 64, 0, 1, NULL, 0, 3, "dram", true}, {"b", 64, 32, 1, 2, "c", 3, 4, "sram", false}};
    npu_stats s = {.target = "edge-v1", .model = "m", .cycles_total = 2000, .cycles_npu = 1000,
                   .cycles_host = 1000, .clock_mhz = 500, .macs = 128000, .peak_macs_per_cycle = 256,
                   .dram_read_bytes = 10, .dram_write_bytes = 20, .arena_bytes = 96,
                   .arena_lower_bound_bytes = 96, .sram_peak_bytes = 7, .weights_bytes = 8,
                   .n_plan = 2, .plan = plan, .n_layers = 2, .layers = layers};
    cr_assert_float_eq(npu_stats_time_ms(&s), 0.004, 1e-12);
    cr_assert_float_eq(npu_stats_mac_utilization(&s), 0.5, 1e-12);
    char *j = render(&s);
    const char *want[] = {"\"target\": \"edge-v1\"", "\"cycles\": {\"total\": 2000, \"npu\": 1000, \"host\": 1000}",
                          "\"time_ms\": 0.004000", "\"mac_utilization\": 0.500000",
                          "\"dram\": {\"read_bytes\": 10, \"write_bytes\": 20}", "\"arena_lower_bound_bytes\": 96",
                          "\"alias_of\": \"c\"", "\"first_pos\": 0, \"last_pos\": 3, \"level\": \"dram\", \"packed\": true}",
                          "\"first_pos\": 3, \"last_pos\": 4, \"level\": \"sram\"}", "\"name\": \"sm\\\"x\"", "\"bound_cycles\": 900"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(j, want[i]), "missing %s in\n%s", want[i], j);
    const char *a_entry = strstr(j, "{\"tensor\": \"a\"");
    cr_assert_not_null(a_entry);
    size_t a_len = (size_t)(strchr(a_entry, '}') - a_entry);
    cr_assert_null(memmem(a_entry, a_len, "alias_of", 8), "a has no alias");
    free(j);
}

Test(stats, zero_clock_gives_zero_time)
{
    npu_stats s = {.target = "t", .model = "m"};
    cr_assert_eq(npu_stats_time_ms(&s), 0.0);
    cr_assert_eq(npu_stats_mac_utilization(&s), 0.0);
    char *j = render(&s);
    cr_assert(strstr(j, "\"plan\": []"), "%s", j);
    free(j);
}
