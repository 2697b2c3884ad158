/* Reading a .npub back: what npudis, npuref and npusim share before each
 * does its own work with the binary. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "format/format.h"

npu_status fmt_npub_read(const char *path, npu_alloc alloc, void **buf, size_t *size, npub_view *v, npu_err *err)
{
    return fmt_npub_read_ex(path, NULL, alloc, buf, size, v, err);
}

npu_status fmt_npub_read_ex(const char *path, const npu_read_opts *ro, npu_alloc alloc, void **buf, size_t *size,
                             npub_view *v, npu_err *err)
{
    npu_status st = npu_read_file_ex(path, ro, alloc, buf, size, err);
    if (st != NPU_OK)
        return st;
    npub_error ne;
    if (npub_open(*buf, *size, v, &ne) == 0)
        return NPU_OK;
    npu_free_file(alloc, *buf, *size);
    *buf = NULL;
    return npu_fail(err, NPU_EUSER, "%s: %s", path, ne.msg);
}

void fmt_npub_target_name(const npub_view *v, char name[FMT_TARGET_NAME_CAP])
{
    memcpy(name, v->header->target, sizeof v->header->target);
    name[sizeof v->header->target] = 0;
}

/* The description the binary carries (npucc writes the effective one unless
 * --strip); its ISA is found like a file's, from the binary's directory on. */
static npu_status embedded_target(const npub_view *v, const char *path, const tgt_opts *to, tgt_target **t,
                                  npu_err *err)
{
    const npub_section *s = v->sec[NPUB_SEC_TARGET];
    char label[4200];
    snprintf(label, sizeof label, "%s:target", path);
    return tgt_parse(label, (const char *)v->base + s->offset, s->size, to, t, err);
}

npu_status fmt_npub_target_ex(const npub_view *v, const char *path, const char *override, const tgt_opts *to,
                              bool check_hash, tgt_target **t, npu_err *err)
{
    char name[FMT_TARGET_NAME_CAP];
    fmt_npub_target_name(v, name);
    bool embedded = !override && v->sec[NPUB_SEC_TARGET];
    npu_status st = embedded ? embedded_target(v, path, to, t, err) : tgt_load(override ? override : name, to, t, err);
    if (st != NPU_OK && !override && !embedded)
        return npu_err_prefix(err, "%s: no target description inside (--strip); give --target FILE.yaml or "
                              "add its directory to NPUCC_TARGET_PATH (now %s)", path,
                              getenv("NPUCC_TARGET_PATH") ? getenv("NPUCC_TARGET_PATH") : "unset");
    if (st != NPU_OK)
        return npu_err_prefix(err, "%s: target of the binary", path);
    if (check_hash && (*t)->hash != v->header->target_hash) {
        st = npu_fail(err, NPU_EUSER,
                      "%s: built for target '%s' (hash %016" PRIx64 "), but %s has hash %016" PRIx64
                      ": the description changed since; recompile the model",
                      path, name, v->header->target_hash, (*t)->file, (*t)->hash);
        tgt_free(*t);
        *t = NULL;
    }
    return st;
}

npu_status fmt_npub_target(const npub_view *v, const char *path, const char *override, bool check_hash,
                           tgt_target **t, npu_err *err)
{
    return fmt_npub_target_ex(v, path, override, NULL, check_hash, t, err);
}
