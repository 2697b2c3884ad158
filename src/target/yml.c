/* YAML document access with file:line:col messages (libyaml document API;
 * node marks are 0-based, messages 1-based). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/yaml_depth.h"
#include "target/tgt_internal.h"

npu_status ydoc_load(ydoc *y, const char *file, const char *text, size_t len, npu_err *err)
{
    memset(y, 0, sizeof *y);
    y->file = file;
    y->err = err;
    npu_status dst = npu_yaml_check_depth(file, text, len, err);
    if (dst != NPU_OK)
        return dst;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", file);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, &y->doc)) {
        npu_status st = npu_fail(err, NPU_EUSER, "%s:%zu:%zu: expected valid YAML: %s%s%s", file,
                                 p.problem_mark.line + 1, p.problem_mark.column + 1,
                                 p.problem ? p.problem : "syntax error", p.context ? " " : "",
                                 p.context ? p.context : "");
        yaml_parser_delete(&p);
        return st;
    }
    yaml_parser_delete(&p);
    y->loaded = true;
    if (!yaml_document_get_root_node(&y->doc))
        return npu_fail(err, NPU_EUSER, "%s:1:1: expected a YAML mapping, got an empty file", file);
    return NPU_OK;
}

void ydoc_free(ydoc *y)
{
    if (y->loaded)
        yaml_document_delete(&y->doc);
    y->loaded = false;
}

yaml_node_t *ydoc_root(ydoc *y)
{
    return yaml_document_get_root_node(&y->doc);
}

yaml_node_t *ynode(ydoc *y, int id)
{
    return yaml_document_get_node(&y->doc, id);
}

const char *yset_of(const ydoc *y, const yaml_node_t *n)
{
    if (!n || n->start_mark.line < YSET_LINE)
        return NULL;
    size_t k = (size_t)-1 - n->start_mark.line;
    return (int)k < y->nsets ? y->sets[k] : NULL;
}

void ywhere(const ydoc *y, const yaml_node_t *n, char *buf, size_t cap)
{
    const char *set = yset_of(y, n);
    if (set)
        snprintf(buf, cap, "--set %s", set);
    else if (n)
        snprintf(buf, cap, "%zu:%zu", n->start_mark.line + 1, n->start_mark.column + 1);
    else
        snprintf(buf, cap, "1:1");
}

static npu_status vfail(ydoc *y, const yaml_node_t *n, bool inside, size_t offset, const char *fmt, va_list ap)
{
    char msg[900];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (!n)
        return npu_fail(y->err, NPU_EUSER, "%s: %s", y->file, msg);
    const char *set = yset_of(y, n);
    if (set)
        return npu_fail(y->err, NPU_EUSER, "%s: --set %s: %s", y->file, set, msg);
    size_t col = n->start_mark.column + 1 + offset;
    /* a quoted scalar's text starts after the quote */
    if (inside && n->type == YAML_SCALAR_NODE &&
        (n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
         n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE))
        col++;
    return npu_fail(y->err, NPU_EUSER, "%s:%zu:%zu: %s", y->file, n->start_mark.line + 1, col, msg);
}

npu_status yfail(ydoc *y, const yaml_node_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    npu_status st = vfail(y, n, false, 0, fmt, ap);
    va_end(ap);
    return st;
}

npu_status yfail_at(ydoc *y, const yaml_node_t *n, size_t offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    npu_status st = vfail(y, n, true, offset, fmt, ap);
    va_end(ap);
    return st;
}

static const char *kind_name(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    default: return "a scalar";
    }
}

bool yscalar_is(const yaml_node_t *n, const char *s)
{
    return n && n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(s) &&
           memcmp(n->data.scalar.value, s, n->data.scalar.length) == 0;
}

static void list_keys(const char *const *allowed, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; allowed[i] && used + 1 < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", allowed[i]);
}

npu_status ymap(ydoc *y, yaml_node_t *n, const char *what, const char *const *allowed)
{
    if (n->type != YAML_MAPPING_NODE)
        return yfail(y, n, "expected a mapping for %s, got %s", what, kind_name(n));
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = ynode(y, p->key);
        if (k->type != YAML_SCALAR_NODE)
            return yfail(y, k, "expected a plain key in %s, got %s", what, kind_name(k));
        const char *ks = (const char *)k->data.scalar.value;
        if (allowed) {
            int i = 0;
            while (allowed[i] && strcmp(allowed[i], ks) != 0)
                i++;
            if (!allowed[i]) {
                char keys[600];
                list_keys(allowed, keys, sizeof keys);
                return yfail(y, k, "unknown key '%s' in %s (expected one of: %s)", ks, what, keys);
            }
        }
        for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++)
            if (yscalar_is(ynode(y, q->key), ks)) {
                char at[32];
                ywhere(y, ynode(y, q->key), at, sizeof at);
                return yfail(y, k, "duplicate key '%s' in %s (first at %s); expected each key once", ks, what,
                             at);
            }
    }
    return NPU_OK;
}

npu_status yseq(ydoc *y, yaml_node_t *n, const char *what)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return yfail(y, n, "expected a list for %s, got %s", what, kind_name(n));
    return NPU_OK;
}

yaml_node_t *ykey(ydoc *y, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++)
        if (yscalar_is(ynode(y, p->key), key))
            return ynode(y, p->key);
    return NULL;
}

yaml_node_t *yget(ydoc *y, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++)
        if (yscalar_is(ynode(y, p->key), key))
            return ynode(y, p->value);
    return NULL;
}

npu_status yreq(ydoc *y, yaml_node_t *map, const char *key, const char *what, yaml_node_t **out)
{
    *out = yget(y, map, key);
    if (!*out)
        return yfail(y, map, "missing key '%s' in %s; expected it to be given", key, what);
    return NPU_OK;
}

static bool plain(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* Parses an integer literal (see yint); false when s is not one. */
bool yparse_int(const char *s, int64_t *out)
{
    const char *p = s;
    bool neg = false;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        base = 16, p += 2;
    else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
        base = 2, p += 2;
    uint64_t v = 0;
    int digits = 0;
    for (;; p++) {
        int d;
        if (*p >= '0' && *p <= '9')
            d = *p - '0';
        else if (base == 16 && *p >= 'a' && *p <= 'f')
            d = *p - 'a' + 10;
        else if (base == 16 && *p >= 'A' && *p <= 'F')
            d = *p - 'A' + 10;
        else if (*p == '_' && digits)
            continue;
        else
            break;
        if (d >= base)
            return false;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + (uint64_t)d;
        digits++;
    }
    if (!digits)
        return false;
    unsigned shift = 0;
    if (strcmp(p, "Ki") == 0)
        shift = 10;
    else if (strcmp(p, "Mi") == 0)
        shift = 20;
    else if (strcmp(p, "Gi") == 0)
        shift = 30;
    else if (*p)
        return false;
    if (v > (UINT64_MAX >> shift))
        return false;
    v <<= shift;
    if (v > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
        return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

npu_status yint(ydoc *y, yaml_node_t *n, const char *what, int64_t *out)
{
    if (n->type != YAML_SCALAR_NODE)
        return yfail(y, n, "expected an integer for %s, got %s", what, kind_name(n));
    if (!plain(n) || !yparse_int((const char *)n->data.scalar.value, out))
        return yfail(y, n, "expected an integer for %s, got '%s'", what, (const char *)n->data.scalar.value);
    return NPU_OK;
}

npu_status yint_range(ydoc *y, yaml_node_t *n, const char *what, int64_t lo, int64_t hi, int64_t *out)
{
    npu_status st = yint(y, n, what, out);
    if (st)
        return st;
    if (*out < lo || *out > hi)
        return yfail(y, n, "expected %s in %lld..%lld, got %lld", what, (long long)lo, (long long)hi,
                     (long long)*out);
    return NPU_OK;
}

npu_status ynum(ydoc *y, yaml_node_t *n, const char *what, double *out)
{
    if (n->type != YAML_SCALAR_NODE || !plain(n))
        return yfail(y, n, "expected a number for %s, got %s", what,
                     n->type == YAML_SCALAR_NODE ? "a quoted string" : kind_name(n));
    const char *s = (const char *)n->data.scalar.value;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno)
        return yfail(y, n, "expected a number for %s, got '%s'", what, s);
    *out = v;
    return NPU_OK;
}

npu_status ybool(ydoc *y, yaml_node_t *n, const char *what, bool *out)
{
    if (n->type == YAML_SCALAR_NODE && plain(n)) {
        if (yscalar_is(n, "true")) {
            *out = true;
            return NPU_OK;
        }
        if (yscalar_is(n, "false")) {
            *out = false;
            return NPU_OK;
        }
    }
    return yfail(y, n, "expected true or false for %s, got %s%s%s", what,
                 n->type == YAML_SCALAR_NODE ? "'" : kind_name(n),
                 n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : "",
                 n->type == YAML_SCALAR_NODE ? "'" : "");
}

npu_status ystr(ydoc *y, yaml_node_t *n, const char *what, npu_arena *a, const char **out)
{
    if (n->type != YAML_SCALAR_NODE)
        return yfail(y, n, "expected a string for %s, got %s", what, kind_name(n));
    *out = npu_arena_strndup(a, (const char *)n->data.scalar.value, n->data.scalar.length);
    if (!*out)
        return npu_fail(y->err, NPU_EINTERNAL, "%s: out of memory", y->file);
    return NPU_OK;
}
