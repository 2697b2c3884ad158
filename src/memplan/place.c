/* Placement of buffers with known lifetimes in one address space (dynamic
 * storage allocation over an interval graph): best-fit by size as the
 * start, then a bounded hill climb over the placement order until the
 * max-live lower bound is reached. Everything is deterministic: the search
 * uses a fixed-seed generator and its effort is counted in work units, never
 * in time. */
#include "memplan/memplan.h"

#include <stdlib.h>
#include <string.h>

typedef enum place_rule { RULE_BEST_FIT, RULE_FIRST_FIT } place_rule;

typedef struct span {
    int64_t lo, hi;
} span;

typedef struct placer {
    const mp_item *items;
    int n;
    int64_t align;
    int *adj_start; /* CSR of the items overlapping each item in time */
    int *adj;
    size_t n_adj;
    int64_t *off;   /* offsets of the order being evaluated */
    char *placed;
    span *spans;    /* scratch: placed neighbours of one item */
    int64_t work;   /* neighbour visits so far: the effort measure */
} placer;

static int64_t align_up(int64_t v, int64_t a)
{
    return (v + a - 1) / a * a;
}

int64_t mp_lower_bound(const mp_item *items, int n)
{
    return mp_lower_bound_aligned(items, n, 1);
}

/* Items live together are disjoint, so each but the highest is followed
 * by its size rounded up to align: a clique needs the sum of the rounded
 * sizes less the largest rounding of one item. */
int64_t mp_lower_bound_aligned(const mp_item *items, int n, int64_t align)
{
    if (align < 1)
        align = 1;
    int64_t best = 0;
    for (int i = 0; i < n; i++) { /* the live sum only rises at some item's first step */
        int64_t live = 0, waste = 0;
        for (int j = 0; j < n; j++)
            if (items[j].first <= items[i].first && items[i].first <= items[j].last) {
                int64_t up = align_up(items[j].size, align);
                live += up;
                if (up - items[j].size > waste)
                    waste = up - items[j].size;
            }
        if (live - waste > best)
            best = live - waste;
    }
    return best;
}

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : (x->hi > y->hi) - (x->hi < y->hi);
}

/* Places order[start..] under rule, order[..start) being placed already
 * (p->off holds their offsets); returns the total (highest end). */
static int64_t place_from(placer *p, const int *order, int start, place_rule rule)
{
    int64_t total = 0;
    memset(p->placed, 0, (size_t)p->n);
    for (int k = 0; k < start; k++) {
        int i = order[k];
        p->placed[i] = 1;
        if (p->off[i] + p->items[i].size > total)
            total = p->off[i] + p->items[i].size;
    }
    for (int k = start; k < p->n; k++) {
        int i = order[k];
        int64_t size = p->items[i].size;
        int ns = 0;
        for (int e = p->adj_start[i]; e < p->adj_start[i + 1]; e++) {
            int j = p->adj[e];
            if (p->placed[j])
                p->spans[ns++] = (span){p->off[j], p->off[j] + p->items[j].size};
        }
        /* insertion sort: few neighbours, mostly in order already */
        for (int a = 1; a < ns; a++) {
            span v = p->spans[a];
            int b = a;
            while (b > 0 && cmp_span(&p->spans[b - 1], &v) > 0) {
                p->spans[b] = p->spans[b - 1];
                b--;
            }
            p->spans[b] = v;
            p->work += a - b;
        }
        p->work += ns + 1;
        int64_t best_off = -1, best_gap = INT64_MAX, cursor = 0;
        for (int s = 0; s < ns; s++) {
            int64_t lo = align_up(cursor, p->align);
            int64_t gap = p->spans[s].lo - lo;
            if (gap >= size && gap < best_gap) {
                best_off = lo;
                best_gap = gap;
                if (rule == RULE_FIRST_FIT)
                    break;
            }
            if (p->spans[s].hi > cursor)
                cursor = p->spans[s].hi;
        }
        if (best_off < 0)
            best_off = align_up(cursor, p->align);
        p->off[i] = best_off;
        p->placed[i] = 1;
        if (best_off + size > total)
            total = best_off + size;
    }
    return total;
}

static int64_t place_order(placer *p, const int *order, place_rule rule)
{
    return place_from(p, order, 0, rule);
}

/* Orders the search starts from; each is a total order (ties by index). */
typedef enum start_key { KEY_SIZE, KEY_AREA, KEY_LENGTH, KEY_START, KEY_COUNT } start_key;

typedef struct sort_ctx {
    const mp_item *items;
    start_key key;
} sort_ctx;

static int cmp_i64_desc(int64_t a, int64_t b)
{
    return a > b ? -1 : a < b ? 1 : 0;
}

static int cmp_items(const sort_ctx *c, int a, int b)
{
    const mp_item *x = &c->items[a], *y = &c->items[b];
    int64_t lx = x->last - x->first + 1, ly = y->last - y->first + 1;
    int r = 0;
    switch (c->key) {
    case KEY_SIZE: r = cmp_i64_desc(x->size, y->size); if (!r) r = cmp_i64_desc(lx, ly); break;
    case KEY_AREA: r = cmp_i64_desc(x->size * lx, y->size * ly); break;
    case KEY_LENGTH: r = cmp_i64_desc(lx, ly); if (!r) r = cmp_i64_desc(x->size, y->size); break;
    case KEY_START: r = -cmp_i64_desc(x->first, y->first); if (!r) r = cmp_i64_desc(x->size, y->size); break;
    default: break;
    }
    return r ? r : (a > b) - (a < b);
}

/* A stable merge sort: qsort has no context argument in C11. */
static void sort_order(const sort_ctx *c, int *v, int *tmp, int n)
{
    if (n < 2)
        return;
    int h = n / 2;
    sort_order(c, v, tmp, h);
    sort_order(c, v + h, tmp, n - h);
    int i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = cmp_items(c, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, sizeof *v * (size_t)n);
}

static uint64_t next_rand(uint64_t *s)
{
    /* xorshift64*: fixed seed, so a plan never depends on the run */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

typedef struct start_ev {
    int first, idx;
} start_ev;

static int cmp_start(const void *a, const void *b)
{
    const start_ev *x = a, *y = b;
    return x->first != y->first ? (x->first > y->first) - (x->first < y->first) : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Sweeps the items by first use with the set of those still live: each
 * item meets exactly the live ones when it starts. With fill NULL it only
 * counts each item's neighbours into deg; else it writes them at fill[i]++. */
static void sweep_overlaps(const placer *p, const start_ev *ev, int *active, int *deg, int *fill)
{
    int na = 0;
    for (int k = 0; k < p->n; k++) {
        int i = ev[k].idx, keep = 0;
        for (int a = 0; a < na; a++)
            if (p->items[active[a]].last >= ev[k].first)
                active[keep++] = active[a];
        na = keep;
        for (int a = 0; a < na; a++) {
            int j = active[a];
            if (fill) {
                p->adj[fill[i]++] = j;
                p->adj[fill[j]++] = i;
            } else {
                deg[i]++;
                deg[j]++;
            }
        }
        active[na++] = i;
    }
}

static npu_status build_adjacency(placer *p, npu_alloc alloc, npu_err *err)
{
    int n = p->n;
    size_t ni = (size_t)n;
    start_ev *ev = npu_malloc(alloc, sizeof *ev * ni);
    int *active = npu_malloc(alloc, sizeof(int) * ni);
    int *fill = npu_malloc(alloc, sizeof(int) * ni);
    p->adj_start = npu_malloc(alloc, sizeof(int) * (ni + 1));
    npu_status st = NPU_OK;
    if (!ev || !active || !fill || !p->adj_start) {
        st = npu_fail(err, NPU_EINTERNAL, "memplan: out of memory placing %d buffers", n);
    } else {
        for (int i = 0; i < n; i++) {
            ev[i] = (start_ev){p->items[i].first, i};
            fill[i] = 0;
        }
        qsort(ev, ni, sizeof *ev, cmp_start);
        sweep_overlaps(p, ev, active, fill, NULL);
        size_t edges = 0;
        for (int i = 0; i < n; i++) {
            p->adj_start[i] = (int)edges;
            edges += (size_t)fill[i];
            fill[i] = p->adj_start[i];
        }
        p->adj_start[n] = (int)edges;
        p->n_adj = edges ? edges : 1;
        p->adj = npu_malloc(alloc, sizeof(int) * p->n_adj);
        if (!p->adj)
            st = npu_fail(err, NPU_EINTERNAL, "memplan: out of memory (%zu lifetime overlaps)", edges);
        else
            sweep_overlaps(p, ev, active, NULL, fill);
    }
    npu_free(alloc, fill, sizeof(int) * ni);
    npu_free(alloc, active, sizeof(int) * ni);
    npu_free(alloc, ev, sizeof *ev * ni);
    return st;
}

/* The search: several start orders under both rules, then hill climbing
 * from the best one. A move either lifts an item that ends at the current
 * peak to an earlier place in the order, or swaps two items; it is kept
 * when the total does not grow (equal totals let the walk cross plateaus). */
static int64_t search(placer *p, int *best_order, int *cur, int *cand, int *tmp, int64_t lower, int64_t budget,
                      int64_t *best_off, int64_t *cur_off)
{
    int n = p->n;
    int64_t best = INT64_MAX;
    place_rule best_rule = RULE_BEST_FIT;
    for (int key = 0; key < KEY_COUNT && best > lower; key++) {
        for (int i = 0; i < n; i++)
            cand[i] = i;
        sort_ctx c = {p->items, (start_key)key};
        sort_order(&c, cand, tmp, n);
        for (int r = 0; r < 2 && best > lower; r++) {
            int64_t t = place_order(p, cand, (place_rule)r);
            if (t < best) {
                best = t;
                best_rule = (place_rule)r;
                memcpy(best_order, cand, sizeof *cand * (size_t)n);
                memcpy(best_off, p->off, sizeof *best_off * (size_t)n);
            }
        }
    }
    memcpy(cur, best_order, sizeof *cur * (size_t)n);
    memcpy(cur_off, best_off, sizeof *cur_off * (size_t)n);
    int64_t cur_total = best;
    uint64_t seed = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (best > lower && p->work < budget && n > 1) {
        memcpy(cand, cur, sizeof *cand * (size_t)n);
        uint64_t r = next_rand(&seed);
        p->work += 1; /* a skipped move costs too, so the loop always ends */
        int lo; /* the order is unchanged before lo: those placements stay */
        int peak[8], np = 0;
        for (int k = 0; k < n && np < 8; k++)
            if (cur_off[cur[k]] + p->items[cur[k]].size == cur_total)
                peak[np++] = k;
        int kind = (int)((r >> 1) % 10u);
        int from, to;
        if (kind < 4 && np) {
            /* lift an item that ends at the peak */
            from = peak[(r >> 5) % (uint64_t)np];
            to = from ? (int)((r >> 12) % (uint64_t)from) : 0;
        } else if (kind < 7 && np) {
            /* move a buffer live beside a peak item, anywhere */
            int i = cur[peak[(r >> 5) % (uint64_t)np]];
            int deg = p->adj_start[i + 1] - p->adj_start[i];
            if (!deg)
                continue;
            int j = p->adj[p->adj_start[i] + (int)((r >> 12) % (uint64_t)deg)];
            for (from = 0; cand[from] != j; from++)
                ;
            p->work += from;
            to = (int)((r >> 32) % (uint64_t)n);
        } else if (kind < 9) {
            from = (int)((r >> 5) % (uint64_t)n);
            to = (int)((r >> 32) % (uint64_t)n);
        } else {
            /* swap two */
            int a = (int)((r >> 5) % (uint64_t)n), b = (int)((r >> 32) % (uint64_t)n);
            int t = cand[a];
            cand[a] = cand[b];
            cand[b] = t;
            from = to = a < b ? a : b;
        }
        if (from == to && kind < 9)
            continue;
        if (kind < 9) {
            int item = cand[from];
            if (to < from)
                memmove(cand + to + 1, cand + to, sizeof *cand * (size_t)(from - to));
            else
                memmove(cand + from, cand + from + 1, sizeof *cand * (size_t)(to - from));
            cand[to] = item;
        }
        lo = to < from ? to : from;
        memcpy(p->off, cur_off, sizeof *p->off * (size_t)n);
        p->work += n;
        int64_t t = place_from(p, cand, lo, best_rule);
        if (t <= cur_total) {
            cur_total = t;
            memcpy(cur, cand, sizeof *cur * (size_t)n);
            memcpy(cur_off, p->off, sizeof *cur_off * (size_t)n);
        }
        if (t < best) {
            best = t;
            memcpy(best_order, cand, sizeof *cand * (size_t)n);
            memcpy(best_off, p->off, sizeof *best_off * (size_t)n);
        }
    }
    return best;
}

npu_status mp_place_ex(mp_item *items, int n, const mp_place_options *o, npu_alloc alloc, int64_t *total,
                       npu_err *err)
{
    *total = 0;
    int64_t align = o && o->align > 0 ? o->align : 1;
    for (int i = 0; i < n; i++) {
        if (items[i].size < 0 || items[i].first > items[i].last)
            return npu_fail(err, NPU_EINTERNAL, "memplan: item %d has size %lld and lifetime %d..%d", i,
                            (long long)items[i].size, items[i].first, items[i].last);
        items[i].offset = 0;
    }
    if (n == 0)
        return NPU_OK;
    placer p = {.items = items, .n = n, .align = align};
    npu_status st = build_adjacency(&p, alloc, err);
    size_t ni = (size_t)n;
    int *orders = npu_malloc(alloc, sizeof(int) * ni * 4);
    int64_t *best_off = npu_malloc(alloc, sizeof(int64_t) * ni * 2);
    p.off = npu_malloc(alloc, sizeof(int64_t) * ni);
    p.placed = npu_malloc(alloc, ni);
    p.spans = npu_malloc(alloc, sizeof(span) * ni);
    if (st == NPU_OK && (!orders || !best_off || !p.off || !p.placed || !p.spans))
        st = npu_fail(err, NPU_EINTERNAL, "memplan: out of memory placing %d buffers", n);
    if (st == NPU_OK) {
        /* no placement is below this bound, so stopping there keeps the first
         * order that reaches it, the one the full search would return; with
         * the unaligned bound the all-live SRAM slots of one tile pipeline
         * burned the whole budget (a third of MobileNetV2's compile) */
        int64_t lower = mp_lower_bound_aligned(items, n, align);
        int64_t budget = o && o->effort > 0 ? o->effort : MP_EFFORT_DEFAULT;
        *total = search(&p, orders, orders + ni, orders + 2 * ni, orders + 3 * ni, lower, budget, best_off,
                        best_off + ni);
        for (int i = 0; i < n; i++)
            items[i].offset = best_off[i];
    }
    npu_free(alloc, p.spans, sizeof(span) * ni);
    npu_free(alloc, p.placed, ni);
    npu_free(alloc, p.off, sizeof(int64_t) * ni);
    npu_free(alloc, best_off, sizeof(int64_t) * ni * 2);
    npu_free(alloc, orders, sizeof(int) * ni * 4);
    npu_free(alloc, p.adj, sizeof(int) * p.n_adj);
    npu_free(alloc, p.adj_start, sizeof(int) * (ni + 1));
    return st;
}

npu_status mp_place(mp_item *items, int n, int64_t align, npu_alloc alloc, int64_t *total, npu_err *err)
{
    mp_place_options o = {.align = align};
    return mp_place_ex(items, n, &o, alloc, total, err);
}
