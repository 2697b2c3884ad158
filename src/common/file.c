#include "common/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

size_t npu_read_cap(const npu_read_opts *o)
{
    return o && o->max_bytes ? o->max_bytes : NPU_READ_MAX_DEFAULT;
}

static void human(size_t n, char *buf, size_t cap)
{
    if (n >= ((size_t)1 << 30) && n % ((size_t)1 << 30) == 0)
        snprintf(buf, cap, "%zu GiB", n >> 30);
    else if (n >= ((size_t)1 << 20) && n % ((size_t)1 << 20) == 0)
        snprintf(buf, cap, "%zu MiB", n >> 20);
    else
        snprintf(buf, cap, "%zu bytes", n);
}

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
           : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

npu_status npu_open_read(const char *path, const npu_read_opts *o, FILE **out, size_t *size, npu_err *err)
{
    *out = NULL;
    *size = 0;
    /* O_NONBLOCK: opening a FIFO without a writer returns at once instead of blocking */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return npu_fail(err, NPU_EUSER, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return npu_fail(err, NPU_EUSER, "%s: cannot stat: %s", path, strerror(e));
    }
    size_t cap = npu_read_cap(o);
    char cs[32];
    human(cap, cs, sizeof cs);
    if (S_ISDIR(sb.st_mode) || (!S_ISREG(sb.st_mode) && !(o && o->allow_special))) {
        close(fd);
        return npu_fail(err, NPU_EUSER, "%s: %s, expected a regular file%s", path, kind_of(sb.st_mode),
                        S_ISDIR(sb.st_mode) || !o || o->regular_only ? "" : " (--allow-special-files reads it)");
    }
    if (S_ISREG(sb.st_mode) && (uintmax_t)sb.st_size > (uintmax_t)cap) {
        close(fd);
        return npu_fail(err, NPU_EUSER, "%s: %jd bytes, over the read limit of %s", path, (intmax_t)sb.st_size, cs);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 || !(*out = fdopen(fd, "rb"))) {
        int e = errno;
        close(fd);
        return npu_fail(err, NPU_EUSER, "%s: cannot open: %s", path, strerror(e));
    }
    *size = S_ISREG(sb.st_mode) ? (size_t)sb.st_size : 0;
    return NPU_OK;
}

/* A FIFO or device: chunks until the end, failing past the cap. */
static npu_status read_stream(const char *path, FILE *f, size_t cap, npu_alloc alloc, unsigned char **data,
                              size_t *size, size_t *alloc_size, npu_err *err)
{
    size_t n = 0, have = 1 << 16;
    unsigned char *buf = npu_malloc(alloc, have);
    while (buf) {
        size_t want = have - 1 - n; /* keep a byte for the NUL */
        size_t got = fread(buf + n, 1, want, f);
        n += got;
        if (got < want)
            break;
        if (n > cap) {
            npu_free(alloc, buf, have);
            char cs[32];
            human(cap, cs, sizeof cs);
            return npu_fail(err, NPU_EUSER, "%s: more than %s, over the read limit", path, cs);
        }
        unsigned char *nb = npu_realloc(alloc, buf, have, have * 2);
        if (!nb)
            npu_free(alloc, buf, have);
        buf = nb;
        have *= 2;
    }
    if (!buf)
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory reading the file", path);
    if (ferror(f)) {
        npu_free(alloc, buf, have);
        return npu_fail(err, NPU_EUSER, "%s: read error: %s", path, strerror(errno));
    }
    if (n > cap) {
        npu_free(alloc, buf, have);
        char cs[32];
        human(cap, cs, sizeof cs);
        return npu_fail(err, NPU_EUSER, "%s: more than %s, over the read limit", path, cs);
    }
    *data = buf;
    *size = n;
    *alloc_size = have;
    return NPU_OK;
}

npu_status npu_read_file_ex(const char *path, const npu_read_opts *o, npu_alloc alloc, void **data, size_t *size,
                            npu_err *err)
{
    FILE *f;
    size_t len;
    npu_status st = npu_open_read(path, o, &f, &len, err);
    if (st != NPU_OK)
        return st;
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && !S_ISREG(sb.st_mode)) {
        unsigned char *buf = NULL;
        size_t n = 0, have = 0;
        st = read_stream(path, f, npu_read_cap(o), alloc, &buf, &n, &have, err);
        fclose(f);
        if (st != NPU_OK)
            return st;
        /* to the exact size, so npu_free_file(size) matches */
        unsigned char *exact = npu_realloc(alloc, buf, have, n + 1);
        if (!exact) {
            npu_free(alloc, buf, have);
            return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", path);
        }
        exact[n] = '\0';
        *data = exact;
        *size = n;
        return NPU_OK;
    }
    unsigned char *buf = npu_malloc(alloc, len + 1);
    if (!buf) {
        fclose(f);
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory for %zu bytes", path, len);
    }
    size_t got = len ? fread(buf, 1, len, f) : 0;
    fclose(f);
    if (got != len) {
        npu_free(alloc, buf, len + 1);
        return npu_fail(err, NPU_EUSER, "%s: read %zu of %zu bytes", path, got, len);
    }
    buf[len] = '\0';
    *data = buf;
    *size = len;
    return NPU_OK;
}

npu_status npu_read_file(const char *path, npu_alloc alloc, void **data, size_t *size, npu_err *err)
{
    return npu_read_file_ex(path, NULL, alloc, data, size, err);
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
