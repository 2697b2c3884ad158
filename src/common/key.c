/* npu_read_key (common/key.h). */
#include "common/key.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

npu_status npu_read_key(const char *path, uint8_t key[NPU_KEY_MAX], size_t *key_size, npu_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return npu_fail(err, NPU_EUSER, "%s: cannot read the key: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return npu_fail(err, NPU_EUSER, "%s: the key must be a regular file", path);
    if (sb.st_size < 1 || sb.st_size > NPU_KEY_MAX)
        return npu_fail(err, NPU_EUSER, "%s: the key has %lld bytes; 1 to %d are accepted", path,
                        (long long)sb.st_size, NPU_KEY_MAX);
    FILE *f = fopen(path, "rb");
    if (!f)
        return npu_fail(err, NPU_EUSER, "%s: cannot read the key: %s", path, strerror(errno));
    size_t n = fread(key, 1, NPU_KEY_MAX, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n == 0)
        return npu_fail(err, NPU_EUSER, "%s: cannot read the key", path);
    *key_size = n;
    return NPU_OK;
}
