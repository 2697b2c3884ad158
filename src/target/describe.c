/* The free-text description against the numbers: a variant made by copying
 * a YAML file (or by --set) keeps the old text, so --validate says where the
 * text is stale rather than trusting it. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "target/target.h"

/* The number ending just before s[at] (skipping one space), or -1. */
static long long number_before(const char *s, size_t at)
{
    size_t e = at;
    if (e && s[e - 1] == ' ')
        e--;
    size_t b = e;
    while (b && isdigit((unsigned char)s[b - 1]))
        b--;
    return b < e ? strtoll(s + b, NULL, 10) : -1;
}

static int warn_mac(const tgt_target *t, const char *d, FILE *out)
{
    /* "16x16": digits, 'x', digits */
    for (const char *x = strchr(d, 'x'); x; x = strchr(x + 1, 'x')) {
        long long r = number_before(d, (size_t)(x - d));
        if (r < 0 || x[-1] == ' ' || !isdigit((unsigned char)x[1]))
            continue;
        long long c = strtoll(x + 1, NULL, 10);
        if (r != t->p[TGT_P_MAC_ROWS] || c != t->p[TGT_P_MAC_COLS]) {
            fprintf(out, "warning: %s: description says '%lldx%lld' but mac is %lldx%lld (rows x cols)\n",
                    t->file, r, c, (long long)t->p[TGT_P_MAC_ROWS], (long long)t->p[TGT_P_MAC_COLS]);
            return 1;
        }
    }
    return 0;
}

static int warn_sram(const tgt_target *t, const char *d, FILE *out)
{
    static const struct {
        const char *unit;
        int shift;
    } u[] = {{"KiB SRAM", 10}, {"MiB SRAM", 20}, {"B SRAM", 0}};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        for (const char *m = strstr(d, u[i].unit); m; m = strstr(m + 1, u[i].unit)) {
            long long v = number_before(d, (size_t)(m - d));
            if (v >= 0 && (v << u[i].shift) != t->p[TGT_P_SRAM_BYTES]) {
                fprintf(out, "warning: %s: description says '%lld %s' but sram.bytes is %lld\n", t->file, v,
                        u[i].unit, (long long)t->p[TGT_P_SRAM_BYTES]);
                return 1;
            }
        }
    return 0;
}

static int warn_dram(const tgt_target *t, const char *d, FILE *out)
{
    for (const char *m = strstr(d, "B/cycle DRAM"); m; m = strstr(m + 1, "B/cycle DRAM")) {
        long long v = number_before(d, (size_t)(m - d));
        if (v >= 0 && v != t->p[TGT_P_DRAM_BYTES_PER_CYCLE]) {
            fprintf(out, "warning: %s: description says '%lld B/cycle DRAM' but dram.bytes_per_cycle is %lld\n",
                    t->file, v, (long long)t->p[TGT_P_DRAM_BYTES_PER_CYCLE]);
            return 1;
        }
    }
    return 0;
}

int tgt_check_description(const tgt_target *t, FILE *out)
{
    if (!t->description)
        return 0;
    return warn_mac(t, t->description, out) + warn_sram(t, t->description, out) +
           warn_dram(t, t->description, out);
}
