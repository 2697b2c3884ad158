/* Buffers placed by hand around a range kept for buffers of their own (the
 * head's preloaded classifier chunks, docs/tiler.md "A cap by layer"): the
 * SRAM a layer may use is cut into ranges, those the previous pipeline
 * leaves free (below its cap, clear of what it touches) apart from the
 * rest, and each buffer goes where it fits best, the loaded ones in the
 * free ranges first so that their loads go out before its barrier, those
 * the first compute waits for before the others. */
#include "tiler/tile_internal.h"

enum { MAX_BINS = 8 };

typedef struct bin {
    int64_t at, hi; /* the next free byte and the end */
    bool clear;     /* free while the previous pipeline runs */
} bin;

static int64_t up16(int64_t v)
{
    return (v + 15) & ~(int64_t)15;
}

/* [0, top) outside [skip_lo, skip_hi), cut where the previous pipeline's SRAM and cap begin and end. */
static int make_bins(const tile_ctx *c, int64_t top, int64_t skip_lo, int64_t skip_hi, bin *b)
{
    bool prev = tile_prev_running(c);
    int64_t cut[7] = {0, top, skip_lo, skip_hi, prev ? c->pipe_lo : 0, prev ? c->pipe_hi : 0,
                      prev ? c->pipe_cap : 0};
    for (int i = 1; i < 7; i++) /* sorted */
        for (int j = i; j > 0 && cut[j] < cut[j - 1]; j--) {
            int64_t v = cut[j];
            cut[j] = cut[j - 1], cut[j - 1] = v;
        }
    int n = 0;
    for (int i = 0; i + 1 < 7; i++) {
        int64_t lo = up16(tile_max(cut[i], 0)), hi = tile_min(cut[i + 1], top) & ~(int64_t)15;
        if (hi <= lo || (lo >= skip_lo && hi <= skip_hi))
            continue;
        bool clear = !prev || ((hi <= c->pipe_lo || lo >= c->pipe_hi) && hi <= c->pipe_cap);
        if (n > 0 && b[n - 1].hi == lo && b[n - 1].clear == clear)
            b[n - 1].hi = hi;
        else if (n < MAX_BINS)
            b[n++] = (bin){lo, hi, clear};
    }
    return n;
}

/* The bin of the class wanted (else the other) whose room fits bytes most tightly, or -1. */
static int best_fit(const bin *b, int n, int64_t bytes, bool clear)
{
    for (int pass = 0; pass < 2; pass++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (b[i].clear == (pass == 0 ? clear : !clear) && b[i].hi - b[i].at >= bytes &&
                (best < 0 || b[i].hi - b[i].at < b[best].hi - b[best].at))
                best = i;
        if (best >= 0)
            return best;
    }
    return -1;
}

bool tile_sram_pack(tile_ctx *c, const tile_sram_req *r, const int *rank, int n, int64_t top, int64_t skip_lo,
                    int64_t skip_hi, bool commit)
{
    bin b[MAX_BINS];
    int nb = make_bins(c, top, skip_lo, skip_hi, b), order[TILE_MAX_BUFFERS];
    int64_t at[TILE_MAX_BUFFERS], end = skip_hi, total = skip_hi - skip_lo;
    if (n > TILE_MAX_BUFFERS || c->sram_used != 0)
        return false;
    for (int i = 0; i < n; i++) { /* by rank, each rank largest first */
        int j = i;
        for (; j > 0; j--) {
            int k = order[j - 1];
            if (rank[k] > rank[i] || (rank[k] == rank[i] && r[k].bytes >= r[i].bytes))
                break;
            order[j] = k;
        }
        order[j] = i;
    }
    for (int k = 0; k < n; k++) {
        int i = order[k];
        int64_t bytes = up16(r[i].bytes) + 16; /* a line apart, as mp_place leaves them */
        int at_bin = r[i].bytes < 0 ? -1 : best_fit(b, nb, bytes, rank[i] > 0);
        if (at_bin < 0)
            return false;
        at[i] = b[at_bin].at, b[at_bin].at += bytes;
        end = tile_max(end, at[i] + r[i].bytes), total += bytes;
    }
    if (!commit)
        return true;
    for (int i = 0; i < n; i++)
        *r[i].off = at[i];
    tile_sram_claim(c, end, total);
    return true;
}
