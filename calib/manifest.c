/* The calibration directory's listing and its optional manifest:
 *
 *   # calib.yaml
 *   files: [a.pgm, b.pgm]        # optional: default every sample file, by name
 *   mean: [0.485, 0.456, 0.406]  # or one number for every channel
 *   std: 0.25
 *   layout: nchw                 # or nhwc: the model input's layout
 *   resize: bilinear             # or nearest, error
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "calib/calib_internal.h"
#include "common/file.h"
#include "common/yaml_depth.h"

static npu_alloc list_alloc(cal_file_list *l)
{
    if (!l->alloc.fn)
        l->alloc = npu_alloc_default();
    return l->alloc;
}

npu_status cal_file_list_add(cal_file_list *l, const char *dir, const char *name, npu_err *err)
{
    npu_alloc a = list_alloc(l);
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        char **np = npu_realloc(a, l->paths, sizeof *np * (size_t)l->cap, sizeof *np * (size_t)cap);
        if (!np)
            return npu_fail(err, NPU_EINTERNAL, "out of memory");
        l->paths = np;
        l->cap = cap;
    }
    size_t n = strlen(dir) + strlen(name) + 2;
    if (!(l->paths[l->n] = npu_malloc(a, n)))
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    snprintf(l->paths[l->n++], n, "%s/%s", dir, name);
    return NPU_OK;
}

void cal_file_list_drop(cal_file_list *l, char *path)
{
    npu_free(list_alloc(l), path, strlen(path) + 1);
}

void cal_file_list_free(cal_file_list *l)
{
    for (int i = 0; i < l->n; i++)
        cal_file_list_drop(l, l->paths[i]);
    if (l->paths)
        npu_free(list_alloc(l), l->paths, sizeof *l->paths * (size_t)l->cap);
    npu_alloc a = l->alloc;
    memset(l, 0, sizeof *l);
    l->alloc = a;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool sample_name(const char *s)
{
    static const char *const ext[] = {".npy", ".bin", ".pgm", ".ppm", ".png"};
    size_t n = strlen(s);
    for (int i = 0; i < 5; i++)
        if (n > 4 && strcmp(s + n - 4, ext[i]) == 0)
            return true;
    return false;
}

npu_status cal_list_dir(const char *dir, cal_file_list *l, npu_err *err)
{
    DIR *dh = opendir(dir);
    if (!dh)
        return npu_fail(err, NPU_EUSER, "%s: cannot open the calibration directory: %s", dir, strerror(errno));
    npu_status st = NPU_OK;
    for (struct dirent *e; st == NPU_OK && (e = readdir(dh));)
        if (e->d_name[0] != '.' && sample_name(e->d_name))
            st = cal_file_list_add(l, dir, e->d_name, err);
    closedir(dh);
    if (st == NPU_OK && l->n)
        qsort(l->paths, (size_t)l->n, sizeof *l->paths, cmp_names);
    return st;
}

typedef struct mf {
    const char *path;
    yaml_document_t doc;
    npu_err *err;
} mf;

static npu_status mfail(mf *m, const yaml_node_t *n, const char *what)
{
    return npu_fail(m->err, NPU_EUSER, "%s:%zu:%zu: %s", m->path, n->start_mark.line + 1, n->start_mark.column + 1,
                    what);
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A number or a sequence of numbers. */
static npu_status floats(mf *m, yaml_node_t *n, float *v, int *count)
{
    if (n->type == YAML_SCALAR_NODE)
        return cal_parse_floats(scalar(n), v, count, m->err) == NPU_OK
                   ? NPU_OK
                   : mfail(m, n, "expected a number or a list of numbers");
    if (n->type != YAML_SEQUENCE_NODE)
        return mfail(m, n, "expected a number or a list of numbers");
    *count = 0;
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = yaml_document_get_node(&m->doc, *it);
        const char *s = scalar(e);
        char *end;
        float x = s ? strtof(s, &end) : 0.0f;
        if (!s || !*s || *end)
            return mfail(m, e, "expected a number");
        if (*count == CAL_MAX_CHANNELS)
            return mfail(m, e, "more values than channels supported (16)");
        v[(*count)++] = x;
    }
    return *count ? NPU_OK : mfail(m, n, "expected at least one number");
}

/* *known is false for a key the manifest does not have. */
static npu_status key_value(mf *m, const char *dir, const char *key, yaml_node_t *v, cal_file_list *l,
                            cal_read_opts *ro, bool *known)
{
    *known = true;
    const char *s = scalar(v);
    if (!strcmp(key, "mean"))
        return floats(m, v, ro->mean, &ro->n_mean);
    if (!strcmp(key, "std"))
        return floats(m, v, ro->std, &ro->n_std);
    if (!strcmp(key, "layout")) {
        if (s && !strcmp(s, "nchw"))
            ro->layout = CAL_LAYOUT_NCHW;
        else if (s && !strcmp(s, "nhwc"))
            ro->layout = CAL_LAYOUT_NHWC;
        else
            return mfail(m, v, "layout: expected nchw or nhwc");
        return NPU_OK;
    }
    if (!strcmp(key, "resize")) {
        if (s && !strcmp(s, "error"))
            ro->resize = CAL_RESIZE_ERROR;
        else if (s && !strcmp(s, "nearest"))
            ro->resize = CAL_RESIZE_NEAREST;
        else if (s && !strcmp(s, "bilinear"))
            ro->resize = CAL_RESIZE_BILINEAR;
        else
            return mfail(m, v, "resize: expected error, nearest or bilinear");
        return NPU_OK;
    }
    if (!strcmp(key, "files")) {
        if (v->type != YAML_SEQUENCE_NODE)
            return mfail(m, v, "files: expected a list of file names");
        for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
            yaml_node_t *e = yaml_document_get_node(&m->doc, *it);
            const char *f = scalar(e);
            if (!f || !*f || strchr(f, '/'))
                return mfail(m, e, "files: expected a file name in the directory");
            npu_status st = cal_file_list_add(l, dir, f, m->err);
            if (st != NPU_OK)
                return st;
        }
        return NPU_OK;
    }
    *known = false;
    return NPU_OK;
}

npu_status cal_manifest_load(const char *dir, cal_file_list *l, cal_read_opts *ro, npu_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, CAL_MANIFEST);
    struct stat sb; /* a probe by fopen would block on a FIFO; npu_read_file refuses one */
    if (stat(path, &sb) != 0)
        return NPU_OK;
    void *text;
    size_t size;
    npu_status st = npu_read_file(path, list_alloc(l), &text, &size, err);
    if (st != NPU_OK)
        return st;
    if ((st = npu_yaml_check_depth(path, text, size, err)) != NPU_OK) {
        npu_free_file(npu_alloc_default(), text, size);
        return st;
    }
    mf m = {.path = path, .err = err};
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        npu_free_file(list_alloc(l), text, size);
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    }
    yaml_parser_set_input_string(&p, text, size);
    if (!yaml_parser_load(&p, &m.doc)) {
        st = npu_fail(err, NPU_EUSER, "%s:%zu:%zu: expected valid YAML: %s", path, p.problem_mark.line + 1,
                      p.problem_mark.column + 1, p.problem ? p.problem : "syntax error");
        yaml_parser_delete(&p);
        npu_free_file(list_alloc(l), text, size);
        return st;
    }
    yaml_parser_delete(&p);
    yaml_node_t *root = yaml_document_get_root_node(&m.doc);
    if (root && root->type != YAML_MAPPING_NODE)
        st = mfail(&m, root, "expected a mapping (files, mean, std, layout, resize)");
    for (yaml_node_pair_t *kv = root && st == NPU_OK ? root->data.mapping.pairs.start : NULL;
         kv && kv < root->data.mapping.pairs.top && st == NPU_OK; kv++) {
        yaml_node_t *k = yaml_document_get_node(&m.doc, kv->key), *v = yaml_document_get_node(&m.doc, kv->value);
        const char *key = scalar(k);
        bool known = false;
        if (key)
            st = key_value(&m, dir, key, v, l, ro, &known);
        if (st == NPU_OK && !known) {
            char msg[300];
            snprintf(msg, sizeof msg, "unknown key '%s' (expected files, mean, std, layout, resize)",
                     key ? key : "?");
            st = mfail(&m, k, msg);
        }
    }
    yaml_document_delete(&m.doc);
    npu_free_file(list_alloc(l), text, size);
    return st;
}

npu_status cal_parse_floats(const char *s, float *v, int *n, npu_err *err)
{
    *n = 0;
    const char *p = s;
    while (p && *p) {
        char *end;
        float x = strtof(p, &end);
        if (end == p || (*end && *end != ','))
            return npu_fail(err, NPU_EUSER, "'%s' is not a number or a comma-separated list of numbers", s);
        if (*n == CAL_MAX_CHANNELS)
            return npu_fail(err, NPU_EUSER, "'%s': more than %d values", s, CAL_MAX_CHANNELS);
        v[(*n)++] = x;
        p = *end ? end + 1 : end;
    }
    return *n ? NPU_OK : npu_fail(err, NPU_EUSER, "an empty value: expected a number or a comma-separated list of numbers");
}
