#include "common/file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

npu_status npu_read_file(const char *path, npu_alloc alloc, void **data, size_t *size, npu_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return npu_fail(err, NPU_EUSER, "%s: cannot open: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return npu_fail(err, NPU_EUSER, "%s: cannot seek (not a regular file?)", path);
    }
    long len = ftell(f);
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return npu_fail(err, NPU_EUSER, "%s: cannot tell its size", path);
    }
    unsigned char *buf = npu_malloc(alloc, (size_t)len + 1);
    if (!buf) {
        fclose(f);
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory for %ld bytes", path, len);
    }
    size_t got = len ? fread(buf, 1, (size_t)len, f) : 0;
    fclose(f);
    if (got != (size_t)len) {
        npu_free(alloc, buf, (size_t)len + 1);
        return npu_fail(err, NPU_EUSER, "%s: read %zu of %ld bytes", path, got, len);
    }
    buf[len] = '\0';
    *data = buf;
    *size = (size_t)len;
    return NPU_OK;
}

void npu_free_file(npu_alloc alloc, void *data, size_t size)
{
    npu_free(alloc, data, size + 1);
}

npu_status npu_write_file_atomic(const char *path, const void *data, size_t size, npu_err *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return npu_fail(err, NPU_EUSER, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return npu_fail(err, NPU_EUSER, "%s: cannot create: %s", path, strerror(errno));
    size_t put = size ? fwrite(data, 1, size, f) : 0;
    int bad = put != size;
    bad |= fflush(f) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return npu_fail(err, NPU_EUSER, "%s: cannot write: %s", path, strerror(e));
    }
    return NPU_OK;
}
