/* Command-line overrides of a target description (--set PATH=VALUE) and the
 * effective description written back as JSON. Both work on the YAML
 * document, not on tgt_target's fields, so that every key the loader knows
 * (today's and any added later) can be overridden, recorded and embedded
 * without a table here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/stats.h"
#include "target/tgt_internal.h"

enum { MAX_JSON_NODES = 1 << 16 }; /* aliases could make a small file a huge tree */

static int node_id(ydoc *y, const yaml_node_t *n)
{
    return (int)(n - y->doc.nodes.start) + 1;
}

/* A new plain scalar marked as made by override k. */
static int add_scalar(ydoc *y, const char *s, size_t n, int k)
{
    int id = yaml_document_add_scalar(&y->doc, NULL, (yaml_char_t *)s, (int)n, YAML_PLAIN_SCALAR_STYLE);
    if (id)
        ynode(y, id)->start_mark.line = (size_t)-1 - (size_t)k;
    return id;
}

static yaml_node_pair_t *find_pair(ydoc *y, yaml_node_t *map, const char *key, size_t n)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = ynode(y, p->key);
        if (k->type == YAML_SCALAR_NODE && k->data.scalar.length == n && memcmp(k->data.scalar.value, key, n) == 0)
            return p;
    }
    return NULL;
}

/* Keys that say one thing two ways (a bus's bandwidth per NPU cycle or per
 * second, its latency in cycles or ns): overriding one drops the other from
 * its mapping, so that --set npu.dram.bytes_per_cycle=16 replaces the
 * description's mb_per_s instead of contradicting it. */
static const char *const alternative[][2] = {{"bytes_per_cycle", "mb_per_s"}, {"latency", "latency_ns"}};

static void drop_alternative(ydoc *y, int map_id, const char *key, size_t n)
{
    for (size_t i = 0; i < sizeof alternative / sizeof alternative[0]; i++)
        for (int side = 0; side < 2; side++) {
            if (strlen(alternative[i][side]) != n || memcmp(alternative[i][side], key, n))
                continue;
            const char *other = alternative[i][!side];
            yaml_node_t *map = ynode(y, map_id);
            yaml_node_pair_t *p = find_pair(y, map, other, strlen(other));
            if (p) {
                memmove(p, p + 1, sizeof *p * (size_t)(map->data.mapping.pairs.top - p - 1));
                map->data.mapping.pairs.top--;
            }
        }
}

static npu_status set_one(ydoc *y, const char *spec, int k)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || eq[-1] == '.' || spec[0] == '.')
        return npu_fail(y->err, NPU_EUSAGE, "--set '%s': expected PATH=VALUE, e.g. npu.mac.cols=32", spec);
    int cur = node_id(y, ydoc_root(y));
    for (const char *seg = spec; seg < eq;) {
        size_t n = strcspn(seg, ".=");
        bool last = seg + n == eq;
        yaml_node_t *map = ynode(y, cur);
        if (!n)
            return npu_fail(y->err, NPU_EUSAGE, "--set '%s': empty key in the path", spec);
        if (map->type != YAML_MAPPING_NODE)
            return npu_fail(y->err, NPU_EUSER, "%s: --set %s: '%.*s' is not a mapping in the description; "
                            "expected a path of keys", y->file, spec, (int)(seg - spec - 1), spec);
        yaml_node_pair_t *p = find_pair(y, map, seg, n);
        if (p && last) {
            if (ynode(y, p->value)->type != YAML_SCALAR_NODE)
                return npu_fail(y->err, NPU_EUSER, "%s: --set %s: '%.*s' is a %s; expected the path of a value, "
                                "e.g. %.*s.<key>", y->file, spec, (int)(eq - spec),
                                spec, ynode(y, p->value)->type == YAML_MAPPING_NODE ? "mapping" : "list",
                                (int)(eq - spec), spec);
            size_t off = (size_t)(p - map->data.mapping.pairs.start);
            int v = add_scalar(y, eq + 1, strlen(eq + 1), k);
            if (!v)
                return npu_fail(y->err, NPU_EINTERNAL, "%s: out of memory", y->file);
            /* adding a node may move the node array, not the mapping's pairs */
            ynode(y, cur)->data.mapping.pairs.start[off].value = v;
            drop_alternative(y, cur, seg, n);
        } else if (p) {
            cur = p->value;
        } else {
            int key = add_scalar(y, seg, n, k);
            int v = !key ? 0
                    : last ? add_scalar(y, eq + 1, strlen(eq + 1), k)
                           : yaml_document_add_mapping(&y->doc, NULL, YAML_FLOW_MAPPING_STYLE);
            if (!v || !yaml_document_append_mapping_pair(&y->doc, cur, key, v))
                return npu_fail(y->err, NPU_EINTERNAL, "%s: out of memory", y->file);
            ynode(y, v)->start_mark.line = (size_t)-1 - (size_t)k;
            if (last)
                drop_alternative(y, cur, seg, n);
            cur = v;
        }
        seg += n + (last ? 0 : 1);
    }
    return NPU_OK;
}

npu_status ydoc_apply_sets(ydoc *y, const char *const *sets, int n)
{
    y->sets = sets;
    y->nsets = n;
    if (n && ydoc_root(y)->type != YAML_MAPPING_NODE)
        return npu_fail(y->err, NPU_EUSER, "%s:1:1: expected a YAML mapping", y->file);
    for (int k = 0; k < n; k++) {
        npu_status st = set_one(y, sets[k], k);
        if (st)
            return st;
    }
    return NPU_OK;
}

/* ---- JSON ------------------------------------------------------------------------- */

typedef struct jw {
    ydoc *y;
    FILE *f;
    int budget;
} jw;

/* A plain scalar JSON reads as a number: digits, sign, point, exponent only. */
static bool json_number(const char *s)
{
    char *end;
    if (!*s || strspn(s, "0123456789+-.eE") != strlen(s) || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')))
        return false;
    (void)strtod(s, &end);
    return *end == '\0';
}

static void json_scalar(jw *w, const yaml_node_t *n)
{
    const char *s = (const char *)n->data.scalar.value;
    int64_t v;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        npu_json_string(w->f, s);
    else if (yparse_int(s, &v))
        fprintf(w->f, "%lld", (long long)v);
    else if (json_number(s) || strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
        fputs(s, w->f);
    else
        npu_json_string(w->f, s);
}

static bool json_tree(jw *w, yaml_node_t *n)
{
    if (--w->budget < 0)
        return false;
    bool ok = true;
    if (n->type == YAML_SCALAR_NODE) {
        json_scalar(w, n);
    } else if (n->type == YAML_SEQUENCE_NODE) {
        fputc('[', w->f);
        for (yaml_node_item_t *it = n->data.sequence.items.start; ok && it < n->data.sequence.items.top; it++) {
            fputs(it > n->data.sequence.items.start ? ", " : "", w->f);
            ok = json_tree(w, ynode(w->y, *it));
        }
        fputc(']', w->f);
    } else {
        fputc('{', w->f);
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; ok && p < n->data.mapping.pairs.top; p++) {
            fputs(p > n->data.mapping.pairs.start ? ", " : "", w->f);
            npu_json_string(w->f, (const char *)ynode(w->y, p->key)->data.scalar.value);
            fputs(": ", w->f);
            ok = json_tree(w, ynode(w->y, p->value));
        }
        fputc('}', w->f);
    }
    return ok;
}

static bool scalar_list(ydoc *y, const yaml_node_t *n)
{
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++)
        if (ynode(y, *it)->type != YAML_SCALAR_NODE)
            return false;
    return true;
}

/* "prefix.key": leaf for every scalar (or list of scalars) below n. */
static bool json_flat(jw *w, yaml_node_t *n, char *prefix, size_t len, bool *first)
{
    if (--w->budget < 0)
        return false;
    if (n->type != YAML_MAPPING_NODE) {
        if (n->type == YAML_SEQUENCE_NODE && !scalar_list(w->y, n))
            return true;
        fputs(*first ? "" : ", ", w->f);
        *first = false;
        npu_json_string(w->f, prefix);
        fputs(": ", w->f);
        return json_tree(w, n);
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        const char *k = (const char *)ynode(w->y, p->key)->data.scalar.value;
        if (!len && strcmp(k, "constraints") == 0)
            continue;
        int m = snprintf(prefix + len, 256 - len, "%s%s", len ? "." : "", k);
        if (m < 0 || len + (size_t)m >= 256)
            continue;
        if (!json_flat(w, ynode(w->y, p->value), prefix, len + (size_t)m, first))
            return false;
        prefix[len] = '\0';
    }
    return true;
}

char *ydoc_json(ydoc *y, npu_arena *a, bool flat)
{
    char *buf = NULL, prefix[256] = "";
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    jw w = {y, f, MAX_JSON_NODES};
    bool first = true, ok;
    if (flat) {
        fputc('{', f);
        ok = json_flat(&w, ydoc_root(y), prefix, 0, &first);
        fputc('}', f);
    } else {
        ok = json_tree(&w, ydoc_root(y));
    }
    fclose(f);
    char *out = ok && buf ? npu_arena_strndup(a, buf, len) : NULL;
    free(buf);
    return out;
}
