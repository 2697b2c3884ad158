/* Reading description files and finding them on the search path. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/file.h"
#include "target/tgt_internal.h"

enum { MAX_FILE = 4 << 20 }; /* descriptions are small; refuse anything absurd */

npu_status tgt_read_file(npu_arena *a, const char *path, char **text, size_t *len, npu_err *err)
{
    FILE *f;
    size_t regular;
    npu_read_opts ro = {.max_bytes = MAX_FILE, .regular_only = true};
    npu_status st = npu_open_read(path, &ro, &f, &regular, err); /* a regular file, not a FIFO */
    if (st != NPU_OK)
        return st;
    size_t cap = 4096, n = 0;
    char *buf = npu_arena_alloc(a, cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n < cap - 1)
            break;
        if (cap >= MAX_FILE) {
            fclose(f);
            return npu_fail(err, NPU_EUSER, "%s: expected a description under %d bytes", path, MAX_FILE);
        }
        buf = npu_arena_grow(a, buf, cap, cap * 2);
        cap *= 2;
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf)
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", path);
    if (bad)
        return npu_fail(err, NPU_EUSER, "%s: read error", path);
    buf[n] = '\0';
    if (memchr(buf, '\0', n))
        return npu_fail(err, NPU_EUSER, "%s: expected a text file, found a NUL byte", path);
    *text = buf;
    *len = n;
    return NPU_OK;
}

static bool is_path(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') || (n > 5 && strcmp(s + n - 5, ".yaml") == 0);
}

static bool readable(const char *p)
{
    return access(p, R_OK) == 0;
}

static void exe_dir(const tgt_opts *o, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (o && o->exe_dir) {
        snprintf(buf, cap, "%s", o->exe_dir);
        return;
    }
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n <= 0) {
        buf[0] = '\0';
        return;
    }
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0';
}

/* The places searched and the descriptions found there, for the not-found message. */
typedef struct search_log {
    char tried[2048];
    char known[1024];
} search_log;

/* Appends s to the comma-separated list (cut when long). */
static void list_add(char *list, size_t cap, const char *s, size_t n)
{
    size_t used = strlen(list);
    if (used && used + 2 < cap) {
        memcpy(list + used, ", ", 3);
        used += 2;
    }
    if (used + n + 1 > cap)
        n = cap > used + 1 ? cap - used - 1 : 0;
    memcpy(list + used, s, n);
    list[used + n] = '\0';
}

static int is_yaml(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 5 && e->d_name[0] != '.' && strcmp(e->d_name + n - 5, ".yaml") == 0;
}

/* by NAME of NAME.yaml: edge-v1 before edge-v1-lite */
static int by_stem(const struct dirent **a, const struct dirent **b)
{
    size_t na = strlen((*a)->d_name) - 5, nb = strlen((*b)->d_name) - 5;
    int c = strncmp((*a)->d_name, (*b)->d_name, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

/* Adds the NAME of every NAME.yaml in dir to log->known (sorted, once each). */
static void note_known(const char *dir, search_log *log)
{
    struct dirent **names;
    int k = scandir(dir, &names, is_yaml, by_stem);
    for (int i = 0; i < k; i++) {
        size_t n = strlen(names[i]->d_name) - 5;
        bool seen = false;
        for (const char *p = log->known; *p && !seen; p += strcspn(p, ","), p += *p ? 2 : 0)
            seen = strcspn(p, ",") == n && strncmp(p, names[i]->d_name, n) == 0;
        if (!seen)
            list_add(log->known, sizeof log->known, names[i]->d_name, n);
        free(names[i]);
    }
    if (k >= 0)
        free(names);
}

/* Appends "dir/rel/name.yaml" to the tried list; true (and path set) when readable. */
static bool try_dir(const char *dir, const char *rel, const char *name, char *path, size_t cap, search_log *log)
{
    if (!dir || !*dir)
        return false;
    char cand[4096];
    /* "../isa/x.yaml", not "./../isa/x.yaml" */
    bool here = strcmp(dir, ".") == 0 && rel && rel[0] == '.';
    int n = here ? snprintf(cand, sizeof cand, "%s/%s.yaml", rel, name)
                 : snprintf(cand, sizeof cand, "%s%s%s/%s.yaml", dir, rel ? "/" : "", rel ? rel : "", name);
    if (n < 0 || (size_t)n >= sizeof cand)
        return false;
    list_add(log->tried, sizeof log->tried, cand, (size_t)n);
    char *slash = strrchr(cand, '/');
    if (slash) {
        *slash = '\0';
        note_known(cand, log);
        *slash = '/';
    }
    if (!readable(cand))
        return false;
    if (strlen(cand) >= cap)
        return false;
    memcpy(path, cand, strlen(cand) + 1);
    return true;
}

npu_status tgt_search(const char *name, const char *kind, const char *base_dir, const tgt_opts *opts, char *path,
                      size_t cap, npu_err *err)
{
    bool isa = strcmp(kind, "isa") == 0;
    const char *what = isa ? "ISA" : "target";
    if (!name || !*name)
        return npu_fail(err, NPU_EUSER, "expected a %s name or a path, got an empty string", what);
    if (is_path(name)) {
        int n = base_dir && name[0] != '/' ? snprintf(path, cap, "%s/%s", base_dir, name)
                                           : snprintf(path, cap, "%s", name);
        if (n < 0 || (size_t)n >= cap)
            return npu_fail(err, NPU_EUSER, "%s: path too long", name);
        if (!readable(path))
            return npu_fail(err, NPU_EUSER, "%s: %s file not found (%s)", path, what, strerror(errno));
        return NPU_OK;
    }
    search_log log = {"", ""};
    char exe[4096];
    if (base_dir && ((isa && try_dir(base_dir, "../isa", name, path, cap, &log)) ||
                     try_dir(base_dir, NULL, name, path, cap, &log)))
        return NPU_OK;
    const char *sp = opts && opts->search_path ? opts->search_path : getenv("NPUCC_TARGET_PATH");
    if (sp) {
        char dir[4096];
        for (const char *p = sp; *p;) {
            size_t n = strcspn(p, ":");
            if (n && n < sizeof dir) {
                memcpy(dir, p, n);
                dir[n] = '\0';
                if (try_dir(dir, NULL, name, path, cap, &log) ||
                    (isa && try_dir(dir, "../isa", name, path, cap, &log)))
                    return NPU_OK;
            }
            p += n;
            if (*p == ':')
                p++;
        }
    }
    exe_dir(opts, exe, sizeof exe);
    char share[64], src[16];
    snprintf(share, sizeof share, "../share/npucc/%s", kind);
    snprintf(src, sizeof src, "../%s", kind);
    if (try_dir(exe, share, name, path, cap, &log) ||
        try_dir(exe, src, name, path, cap, &log) ||
        try_dir(".", kind, name, path, cap, &log))
        return NPU_OK;
    return npu_fail(err, NPU_EUSER, "%s '%s' not found; expected %s.yaml in one of: %s (%ss found there: %s)", what,
                    name, name, log.tried, what, log.known[0] ? log.known : "none");
}
