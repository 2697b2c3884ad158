/* .npy reader and writer (see npy.h). The element bytes are copied as they
 * are: hosts are little-endian like the format we accept. */
#include "common/npy.h"

#include "common/file.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h> /* mkstemp */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    const char *descr;
    size_t size;
} dtypes[NPY_DTYPE_COUNT] = {
    [NPY_F32] = {"<f4", 4}, [NPY_F64] = {"<f8", 8}, [NPY_F16] = {"<f2", 2}, [NPY_I64] = {"<i8", 8},
    [NPY_I32] = {"<i4", 4}, [NPY_I16] = {"<i2", 2}, [NPY_I8] = {"|i1", 1},  [NPY_U8] = {"|u1", 1},
    [NPY_BOOL] = {"|b1", 1},
};

const char *npy_dtype_descr(npy_dtype dt)
{
    return (unsigned)dt < NPY_DTYPE_COUNT ? dtypes[dt].descr : "?";
}

size_t npy_dtype_size(npy_dtype dt)
{
    return (unsigned)dt < NPY_DTYPE_COUNT ? dtypes[dt].size : 0;
}

int64_t npy_numel(const npy_array *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->rank; i++)
        n *= a->dims[i];
    return n;
}

void npy_free(npu_alloc alloc, npy_array *a)
{
    if (a && a->data) {
        npu_free(alloc, a->data, a->nbytes ? a->nbytes : 1);
        a->data = NULL;
    }
}

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

/* float32 elements whose exponent is all ones (Inf, NaN), in 16 lanes of
 * constant length (vector compares at -O2) and blocks whose counts fit 32
 * bits (the general loop below, a double and a dtype test per element, was
 * 1% of an npuref inference) */
static int64_t count_nonfinite_f32(const float *x, int64_t n)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n;) {
        int64_t stop = n - i > ((int64_t)1 << 30) ? i + ((int64_t)1 << 30) : n;
        uint32_t c[16] = {0};
        for (; i + 16 <= stop; i += 16)
            for (int j = 0; j < 16; j++) {
                uint32_t b;
                memcpy(&b, x + i + j, sizeof b);
                c[j] += (b & 0x7f800000u) == 0x7f800000u;
            }
        for (; i < stop; i++) {
            uint32_t b;
            memcpy(&b, x + i, sizeof b);
            c[0] += (b & 0x7f800000u) == 0x7f800000u;
        }
        for (int j = 0; j < 16; j++)
            bad += c[j];
    }
    return bad;
}

int64_t npy_count_nonfinite(const npy_array *a, int64_t *first, double *first_value)
{
    int64_t n = npy_numel(a), bad = 0;
    *first = -1;
    *first_value = 0.0;
    if (a->dtype == NPY_F32 && !count_nonfinite_f32(a->data, n))
        return 0;
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (a->dtype == NPY_F32)
            v = ((const float *)a->data)[i];
        else if (a->dtype == NPY_F64)
            v = ((const double *)a->data)[i];
        else if (a->dtype == NPY_F16)
            v = half_to_double(((const uint16_t *)a->data)[i]);
        else
            return 0;
        if (isfinite(v))
            continue;
        if (!bad++) {
            *first = i;
            *first_value = v;
        }
    }
    return bad;
}

bool npy_nonfinite_message(const npy_array *a, const char *name, char *buf, size_t cap)
{
    int64_t first;
    double v;
    int64_t bad = npy_count_nonfinite(a, &first, &v);
    if (!bad)
        return false;
    snprintf(buf, cap, "%s: %lld non-finite value%s (element %lld is %s)", name, (long long)bad, bad == 1 ? "" : "s",
             (long long)first, isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf");
    return true;
}

/* ---- header parsing ------------------------------------------------------- */

typedef struct hparse {
    const char *s;
    size_t n, pos, base; /* base: file offset of s[0] */
    const char *name;
    npu_err *err;
} hparse;

static npu_status herr(hparse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static npu_status herr(hparse *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return npu_fail(p->err, NPU_EUSER, "%s: byte %zu: %s", p->name, p->base + p->pos, msg);
}

static void skip_ws(hparse *p)
{
    while (p->pos < p->n && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos])
        p->pos++;
}

static int peek(const hparse *p)
{
    return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1;
}

static npu_status expect(hparse *p, char c, const char *what)
{
    skip_ws(p);
    if (peek(p) != c)
        return herr(p, "expected '%c' %s", c, what);
    p->pos++;
    return NPU_OK;
}

/* A Python string literal in single or double quotes, without escapes. */
static npu_status parse_str(hparse *p, char *out, size_t cap)
{
    skip_ws(p);
    int q = peek(p);
    if (q != '\'' && q != '"')
        return herr(p, "expected a quoted string");
    size_t start = ++p->pos, len = 0;
    while (p->pos < p->n && p->s[p->pos] != q) {
        if (p->s[p->pos] == '\\' || p->s[p->pos] == '\n')
            return herr(p, "unsupported character in a string");
        p->pos++;
    }
    if (p->pos >= p->n) {
        p->pos = start - 1;
        return herr(p, "unterminated string");
    }
    len = p->pos - start;
    p->pos++;
    if (len >= cap) {
        p->pos = start;
        return herr(p, "string too long");
    }
    memcpy(out, p->s + start, len);
    out[len] = '\0';
    return NPU_OK;
}

static npu_status parse_descr(hparse *p, npy_dtype *dt)
{
    skip_ws(p);
    size_t at = p->pos;
    if (peek(p) == '[' || peek(p) == '(')
        return herr(p, "structured dtypes are not supported");
    char d[64];
    npu_status st = parse_str(p, d, sizeof d);
    if (st)
        return st;
    for (int i = 0; i < NPY_DTYPE_COUNT; i++) {
        const char *want = dtypes[i].descr;
        /* one-byte types have no byte order: numpy writes '|', accept '<' too */
        if (!strcmp(d, want) || (want[0] == '|' && d[0] == '<' && !strcmp(d + 1, want + 1))) {
            *dt = (npy_dtype)i;
            return NPU_OK;
        }
    }
    p->pos = at;
    if (d[0] == '>')
        return herr(p, "big-endian dtype '%s' is not supported", d);
    return herr(p, "dtype '%s' is not supported (<f4, <f8, <f2, <i8, <i4, <i2, |i1, |u1, |b1)", d);
}

static npu_status parse_bool(hparse *p, bool *v)
{
    skip_ws(p);
    if (p->n - p->pos >= 4 && !strncmp(p->s + p->pos, "True", 4)) {
        p->pos += 4;
        *v = true;
    } else if (p->n - p->pos >= 5 && !strncmp(p->s + p->pos, "False", 5)) {
        p->pos += 5;
        *v = false;
    } else {
        return herr(p, "expected True or False");
    }
    return NPU_OK;
}

/* A tuple of non-negative ints: (), (3,), (2, 3) or (2, 3,). */
static npu_status parse_shape(hparse *p, npy_array *a)
{
    npu_status st = expect(p, '(', "to start the shape tuple");
    if (st)
        return st;
    a->rank = 0;
    for (;;) {
        skip_ws(p);
        if (peek(p) == ')') {
            if (a->rank == 1) /* (3) is an int in Python, not a tuple: (3,) is */
                return herr(p, "a one-dimensional shape needs a trailing comma");
            p->pos++;
            return NPU_OK;
        }
        if (peek(p) < '0' || peek(p) > '9')
            return herr(p, "expected a non-negative integer in the shape");
        if (a->rank == NPY_MAX_RANK)
            return herr(p, "more than %d dimensions", NPY_MAX_RANK);
        int64_t v = 0;
        size_t at = p->pos;
        while (peek(p) >= '0' && peek(p) <= '9') {
            int digit = peek(p) - '0';
            if (v > (INT64_MAX - digit) / 10) {
                p->pos = at;
                return herr(p, "dimension too large");
            }
            v = v * 10 + digit;
            p->pos++;
        }
        a->dims[a->rank++] = v;
        skip_ws(p);
        if (peek(p) == ',') {
            p->pos++;
            skip_ws(p);
            if (peek(p) == ')') {
                p->pos++;
                return NPU_OK;
            }
        } else if (peek(p) != ')') {
            return herr(p, "expected ',' or ')' in the shape");
        }
    }
}

/* Parses the preamble and dict of buf[0..size): fills dtype, rank, dims and
 * nbytes of a, and the data offset. */
static npu_status parse_header(const uint8_t *buf, size_t size, const char *name, npy_array *a, size_t *data_off,
                               npu_err *err)
{
    hparse p = {(const char *)buf, size, 0, 0, name, err};
    if (size < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
        return size < 6 || memcmp(buf, "\x93NUMPY", 6) ? herr(&p, "not a .npy file (bad magic)")
                                                         : (p.pos = size, herr(&p, "truncated header"));
    int major = buf[6], minor = buf[7];
    size_t pre, hlen;
    if (major == 1 && minor == 0) {
        pre = 10;
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
    } else if ((major == 2 || major == 3) && minor == 0) {
        if (size < 12) {
            p.pos = size;
            return herr(&p, "truncated header");
        }
        pre = 12;
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    } else {
        p.pos = 6;
        return herr(&p, "unsupported format version %d.%d (1.0, 2.0, 3.0)", major, minor);
    }
    if (hlen > size - pre) {
        p.pos = size;
        return herr(&p, "truncated header: it says %zu bytes, the file has %zu after the preamble", hlen,
                    size - pre);
    }
    p.s = (const char *)buf + pre;
    p.n = hlen;
    p.base = pre;
    if (hlen == 0 || p.s[hlen - 1] != '\n') {
        p.pos = hlen ? hlen - 1 : 0;
        return herr(&p, "the header does not end with a newline");
    }
    p.n = hlen - 1;
    npu_status st = expect(&p, '{', "to start the header dict");
    if (st)
        return st;
    bool have[3] = {false, false, false}, fortran = false;
    size_t shape_at = 0;
    for (;;) {
        skip_ws(&p);
        if (peek(&p) == '}')
            break;
        size_t key_at = p.pos;
        char key[32];
        if ((st = parse_str(&p, key, sizeof key)))
            return st;
        int k = !strcmp(key, "descr") ? 0 : !strcmp(key, "fortran_order") ? 1 : !strcmp(key, "shape") ? 2 : -1;
        if (k < 0 || have[k]) {
            p.pos = key_at;
            return herr(&p, k < 0 ? "unknown key '%s'" : "repeated key '%s'", key);
        }
        have[k] = true;
        if ((st = expect(&p, ':', "after a key")))
            return st;
        skip_ws(&p);
        if (k == 0)
            st = parse_descr(&p, &a->dtype);
        else if (k == 1)
            st = parse_bool(&p, &fortran);
        else
            shape_at = p.pos, st = parse_shape(&p, a);
        if (st)
            return st;
        skip_ws(&p);
        if (peek(&p) == ',')
            p.pos++;
        else if (peek(&p) != '}')
            return herr(&p, "expected ',' or '}' in the header dict");
    }
    p.pos++;
    skip_ws(&p);
    if (p.pos < p.n)
        return herr(&p, "unexpected text after the header dict");
    static const char *const names[3] = {"descr", "fortran_order", "shape"};
    for (int k = 0; k < 3; k++)
        if (!have[k]) {
            p.pos = 0;
            return herr(&p, "the header has no '%s'", names[k]);
        }
    if (fortran) {
        p.pos = 0;
        return herr(&p, "Fortran-order arrays are not supported (save C order)");
    }
    size_t es = dtypes[a->dtype].size, nb = es;
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] && nb > SIZE_MAX / 2 / (uint64_t)a->dims[i]) {
            p.pos = shape_at;
            return herr(&p, "the shape is too large");
        }
        nb *= (size_t)a->dims[i];
    }
    a->nbytes = nb;
    *data_off = pre + hlen;
    return NPU_OK;
}

static npu_status check_data(const char *name, size_t off, size_t have, size_t want, npu_err *err)
{
    if (have < want)
        return npu_fail(err, NPU_EUSER, "%s: byte %zu: data truncated: %zu of %zu bytes", name, off + have, have,
                        want);
    if (have > want)
        return npu_fail(err, NPU_EUSER, "%s: byte %zu: %zu unexpected bytes after the data", name, off + want,
                        have - want);
    return NPU_OK;
}

npu_status npy_parse(const void *buf, size_t size, const char *name, npu_alloc alloc, npy_array *out,
                     npu_err *err)
{
    npy_array a = {0};
    size_t off;
    npu_status st = parse_header(buf, size, name, &a, &off, err);
    if (st || (st = check_data(name, off, size - off, a.nbytes, err)))
        return st;
    if (!(a.data = npu_malloc(alloc, a.nbytes ? a.nbytes : 1)))
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory for %zu bytes", name, a.nbytes);
    memcpy(a.data, (const uint8_t *)buf + off, a.nbytes);
    *out = a;
    return NPU_OK;
}

npu_status npy_read_ex(const char *path, const npu_read_opts *o, npu_alloc alloc, npy_array *out, npu_err *err)
{
    void *data;
    size_t n;
    npu_status st = npu_read_file_ex(path, o, alloc, &data, &n, err);
    if (st != NPU_OK)
        return st;
    uint8_t *buf = data;
    size_t cap = n + 1; /* npu_read_file_ex's buffer */
    npy_array a = {0};
    size_t off;
    if ((st = parse_header(buf, n, path, &a, &off, err)) || (st = check_data(path, off, n - off, a.nbytes, err))) {
        npu_free(alloc, buf, cap);
        return st;
    }
    memmove(buf, buf + off, a.nbytes);
    size_t keep = a.nbytes ? a.nbytes : 1;
    uint8_t *shrunk = npu_realloc(alloc, buf, cap, keep);
    if (!shrunk) {
        npu_free(alloc, buf, cap);
        return npu_fail(err, NPU_EINTERNAL, "%s: out of memory", path);
    }
    a.data = shrunk;
    *out = a;
    return NPU_OK;
}

npu_status npy_read(const char *path, npu_alloc alloc, npy_array *out, npu_err *err)
{
    return npy_read_ex(path, NULL, alloc, out, err);
}

/* ---- writing ------------------------------------------------------------------ */

size_t npy_header(npy_dtype dt, int rank, const int64_t *dims, char *buf, size_t cap)
{
    if ((unsigned)dt >= NPY_DTYPE_COUNT || rank < 0 || rank > NPY_MAX_RANK)
        return 0;
    char dict[1024];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", dtypes[dt].descr);
    for (int i = 0; i < rank; i++)
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%s%lld", i ? ", " : "", (long long)dims[i]);
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%s), }", rank == 1 ? "," : "");
    /* numpy pads with spaces so that preamble + dict + '\n' is a multiple of 64;
     * version 2.0 only when the header length does not fit in 16 bits */
    size_t pre = 10, total = (pre + (size_t)len + 1 + 63) / 64 * 64;
    if (total - pre > 65535) {
        pre = 12;
        total = (pre + (size_t)len + 1 + 63) / 64 * 64;
    }
    if (total > cap)
        return 0;
    size_t hlen = total - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = pre == 10 ? 1 : 2;
    buf[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        buf[8 + i] = (char)(hlen >> (8 * i) & 0xff);
    memcpy(buf + pre, dict, (size_t)len);
    memset(buf + pre + len, ' ', hlen - (size_t)len - 1);
    buf[total - 1] = '\n';
    return total;
}

npu_status npy_stage(const char *path, npy_dtype dt, int rank, const int64_t *dims, const void *data,
                     npy_pending *p, npu_err *err)
{
    p->active = false;
    char hdr[2048];
    size_t hl = npy_header(dt, rank, dims, hdr, sizeof hdr);
    if (!hl)
        return npu_fail(err, NPU_EINTERNAL, "%s: cannot encode the header", path);
    if (strlen(path) >= sizeof p->path)
        return npu_fail(err, NPU_EUSER, "%s: path too long", path);
    size_t nb = npy_dtype_size(dt);
    for (int i = 0; i < rank; i++)
        nb *= (size_t)dims[i];
    strcpy(p->path, path);
    snprintf(p->tmp, sizeof p->tmp, "%s.tmpXXXXXX", path);
    int fd = mkstemp(p->tmp);
    if (fd < 0)
        return npu_fail(err, NPU_EUSER, "%s: cannot create a temporary file next to it: %s", path, strerror(errno));
    p->active = true;
    /* mkstemp makes the file private; an output is an ordinary file */
    if (fchmod(fd, 0644) != 0) {
        int e = errno;
        close(fd);
        npy_discard(p);
        return npu_fail(err, NPU_EUSER, "%s: %s", p->tmp, strerror(e));
    }
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        npy_discard(p);
        return npu_fail(err, NPU_EINTERNAL, "%s: %s", p->tmp, strerror(e));
    }
    bool ok = fwrite(hdr, 1, hl, f) == hl && (nb == 0 || fwrite(data, 1, nb, f) == nb);
    int e = errno;
    ok = fclose(f) == 0 && ok;
    if (!ok) {
        e = e ? e : errno;
        npy_discard(p);
        return npu_fail(err, NPU_EUSER, "%s: write failed: %s", path, strerror(e));
    }
    return NPU_OK;
}

npu_status npy_commit(npy_pending *p, npu_err *err)
{
    if (!p->active)
        return npu_fail(err, NPU_EINTERNAL, "%s: nothing staged", p->path);
    if (rename(p->tmp, p->path) != 0) {
        int e = errno;
        npy_discard(p);
        return npu_fail(err, NPU_EUSER, "%s: cannot move the written file in place: %s", p->path, strerror(e));
    }
    p->active = false;
    return NPU_OK;
}

void npy_discard(npy_pending *p)
{
    if (p->active)
        unlink(p->tmp);
    p->active = false;
}

npu_status npy_write(const char *path, npy_dtype dt, int rank, const int64_t *dims, const void *data,
                     npu_err *err)
{
    npy_pending p;
    npu_status st = npy_stage(path, dt, rank, dims, data, &p, err);
    return st ? st : npy_commit(&p, err);
}
