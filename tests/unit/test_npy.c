/* .npy reader/writer: files numpy wrote (tests/data/npy, from
 * tests/fixtures/gen_npy.py, whose values are restated here), malformed
 * images built here with the expected message and byte offset, round trips
 * and atomic writes. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/npy.h"

static const char *data_dir(void)
{
    static char dir[4096];
    const char *root = getenv("NPUCC_ROOT");
    snprintf(dir, sizeof dir, "%s/tests/data/npy", root ? root : ".");
    return dir;
}

static npu_status read_fixture(const char *name, npy_array *a, npu_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", data_dir(), name);
    npu_err_clear(e);
    return npy_read(path, npu_alloc_default(), a, e);
}

static size_t file_bytes(const char *name, unsigned char *buf, size_t cap)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", data_dir(), name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

Test(npy, reads_what_numpy_writes)
{
    npy_array a;
    npu_err e;
    cr_assert_eq(read_fixture("f32_2x3.npy", &a, &e), NPU_OK, "%s", e.msg);
    cr_assert(a.dtype == NPY_F32 && a.rank == 2 && a.dims[0] == 2 && a.dims[1] == 3 && a.nbytes == 24);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(((float *)a.data)[i], i * 0.5f - 1);
    npy_free(npu_alloc_default(), &a);

    cr_assert_eq(read_fixture("i8_4.npy", &a, &e), NPU_OK, "%s", e.msg);
    const int8_t i8[4] = {-128, -1, 0, 127};
    cr_assert(a.dtype == NPY_I8 && a.rank == 1 && memcmp(a.data, i8, 4) == 0);
    npy_free(npu_alloc_default(), &a);

    cr_assert_eq(read_fixture("u8_2x2x2.npy", &a, &e), NPU_OK, "%s", e.msg);
    cr_assert(a.dtype == NPY_U8 && a.rank == 3 && ((uint8_t *)a.data)[7] == 210);
    npy_free(npu_alloc_default(), &a);

    cr_assert_eq(read_fixture("i32_scalar.npy", &a, &e), NPU_OK, "%s", e.msg);
    cr_assert(a.dtype == NPY_I32 && a.rank == 0 && npy_numel(&a) == 1 && *(int32_t *)a.data == 7);
    npy_free(npu_alloc_default(), &a);

    cr_assert_eq(read_fixture("i64_3.npy", &a, &e), NPU_OK, "%s", e.msg);
    const int64_t i64[3] = {-(1ll << 40), 0, 1ll << 62};
    cr_assert(a.dtype == NPY_I64 && memcmp(a.data, i64, 24) == 0);
    npy_free(npu_alloc_default(), &a);

    cr_assert_eq(read_fixture("bool_5.npy", &a, &e), NPU_OK, "%s", e.msg);
    const uint8_t b[5] = {1, 0, 0, 1, 1};
    cr_assert(a.dtype == NPY_BOOL && memcmp(a.data, b, 5) == 0);
    npy_free(npu_alloc_default(), &a);

    cr_assert_eq(read_fixture("i16_2.npy", &a, &e), NPU_OK, "%s", e.msg);
    cr_assert(a.dtype == NPY_I16 && ((int16_t *)a.data)[0] == -300 && ((int16_t *)a.data)[1] == 300);
    npy_free(npu_alloc_default(), &a);

    cr_assert_eq(read_fixture("f16_3.npy", &a, &e), NPU_OK, "%s", e.msg);
    const uint16_t h[3] = {0x3c00, 0xc000, 0x7bff};
    cr_assert(a.dtype == NPY_F16 && memcmp(a.data, h, 6) == 0);
    npy_free(npu_alloc_default(), &a);

    cr_assert_eq(read_fixture("f64_2.npy", &a, &e), NPU_OK, "%s", e.msg);
    cr_assert(a.dtype == NPY_F64 && ((double *)a.data)[0] == 0.1 && ((double *)a.data)[1] == -2.5);
    npy_free(npu_alloc_default(), &a);

    cr_assert_eq(read_fixture("f32_0x3.npy", &a, &e), NPU_OK, "%s", e.msg);
    cr_assert(a.rank == 2 && a.dims[0] == 0 && a.dims[1] == 3 && a.nbytes == 0 && a.data);
    npy_free(npu_alloc_default(), &a);

    cr_assert_eq(read_fixture("f32_v2.npy", &a, &e), NPU_OK, "%s", e.msg);
    cr_assert(a.rank == 2 && ((float *)a.data)[0] == 1.5f && ((float *)a.data)[1] == -3.0f);
    npy_free(npu_alloc_default(), &a);

    cr_assert_eq(read_fixture("f32_v3.npy", &a, &e), NPU_OK, "%s", e.msg);
    cr_assert(a.rank == 1 && ((float *)a.data)[0] == 4.25f);
    npy_free(npu_alloc_default(), &a);
}

Test(npy, rejects_what_numpy_writes_but_we_do_not_take)
{
    npy_array a;
    npu_err e;
    const struct {
        const char *file, *msg;
    } c[] = {
        {"bad_fortran.npy", "Fortran-order"},
        {"bad_bigendian.npy", "big-endian dtype '>f4'"},
        {"bad_complex.npy", "dtype '<c8' is not supported"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        cr_assert_eq(read_fixture(c[i].file, &a, &e), NPU_EUSER, "%s", c[i].file);
        cr_assert(strstr(e.msg, c[i].file) && strstr(e.msg, ": byte ") && strstr(e.msg, c[i].msg), "%s", e.msg);
    }
    cr_assert_eq(read_fixture("no_such_file.npy", &a, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "no_such_file.npy: cannot open"), "%s", e.msg);
}

/* The header numpy would write for an array is the one we write: compare
 * with the numpy-written files byte for byte. */
Test(npy, header_matches_numpy_bytes)
{
    const struct {
        const char *file;
        npy_dtype dt;
        int rank;
        int64_t dims[3];
    } c[] = {
        {"f32_2x3.npy", NPY_F32, 2, {2, 3}}, {"i8_4.npy", NPY_I8, 1, {4}},     {"u8_2x2x2.npy", NPY_U8, 3, {2, 2, 2}},
        {"i32_scalar.npy", NPY_I32, 0, {0}}, {"bool_5.npy", NPY_BOOL, 1, {5}}, {"f32_0x3.npy", NPY_F32, 2, {0, 3}},
        {"f16_3.npy", NPY_F16, 1, {3}},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        unsigned char want[512];
        char got[512];
        size_t n = file_bytes(c[i].file, want, sizeof want);
        size_t hl = npy_header(c[i].dt, c[i].rank, c[i].dims, got, sizeof got);
        cr_assert(hl > 0 && hl % 64 == 0 && hl <= n, "%s", c[i].file);
        cr_assert_eq(memcmp(got, want, hl), 0, "%s: %.*s", c[i].file, (int)hl - 10, got + 10);
    }
}

/* ---- malformed images --------------------------------------------------------- */

/* A version-1.0 image: preamble, dict padded to 64 with a final newline
 * (unless raw), then data_len bytes. */
static size_t build(unsigned char *buf, int major, const char *dict, int raw, size_t data_len)
{
    size_t len = strlen(dict), pre = major == 1 ? 10 : 12;
    size_t hlen = raw ? len : (pre + len + 1 + 63) / 64 * 64 - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + pre, dict, len);
    if (!raw) {
        memset(buf + pre + len, ' ', hlen - len - 1);
        buf[pre + hlen - 1] = '\n';
    }
    memset(buf + pre + hlen, 0x5a, data_len);
    return pre + hlen + data_len;
}

#define GOOD "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

Test(npy, malformed_images_name_the_file_and_the_byte)
{
    const struct {
        const char *dict;
        int major, raw;
        long data_len;  /* -1: 24, the right amount */
        long cut;       /* keep only the first cut bytes (0: all) */
        const char *at; /* the error is at this substring of dict (NULL: use off) */
        long off;       /* else at this file offset (-1: end of file) */
        const char *msg;
    } c[] = {
        {GOOD, 1, 0, -1, 3, NULL, 0, "bad magic"},
        {GOOD, 1, 0, -1, 9, NULL, -1, "truncated header"},
        {GOOD, 4, 0, -1, 0, NULL, 6, "unsupported format version 4.0"},
        {GOOD, 1, 0, -1, 40, NULL, -1, "truncated header"},
        {GOOD, 1, 1, 24, 0, "}", 0, "does not end with a newline"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", 1, 0, -1, 0, "'x'", 0, "unknown key"},
        {"{'descr': '<f4', 'fortran_order': False}", 1, 0, -1, 0, "{", 0, "no 'shape'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 1, 0, -1, 0, "'descr': '<f4', 'f",
         0, "repeated key"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 1, 0, -1, 0, "{", 0, "Fortran-order"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }", 1, 0, -1, 0, "'<c8'", 0, "'<c8' is not"},
        {"{'descr': '>i4', 'fortran_order': False, 'shape': (2, 3), }", 1, 0, -1, 0, "'>i4'", 0, "big-endian"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", 1, 0, -1, 0, "), }", 0, "trailing comma"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-6,), }", 1, 0, -1, 0, "-6", 0, "non-negative"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 1, 0, -1, 0, "999", 0,
         "dimension too large"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", 1, 0, 0, 0, "(4294", 0,
         "shape is too large"},
        {GOOD, 1, 0, 10, 0, NULL, -1, "data truncated: 10 of 24 bytes"},
        {GOOD, 1, 0, 30, 0, NULL, 128 + 24, "6 unexpected bytes after the data"}, /* a 128-byte header */
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3), }", 1, 0, -1, 0, "'<f4", 0,
         "dtype '<f4, ' is not supported"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }", 1, 0, -1, 0, "[", 0, "structured"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x", 1, 0, -1, 0, "x", 0, "after the header"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }", 1, 0, -1, 0, "Maybe", 0, "True or False"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3), }", 1, 0, -1, 0, " 'fortran", 1, "expected ','"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 2, 0, -1, 0, NULL, -2, NULL},
        {"['descr', '<f4']", 1, 0, -1, 0, "[", 0, "expected '{'"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        static unsigned char buf[1024];
        size_t n = build(buf, c[i].major, c[i].dict, c[i].raw, c[i].data_len < 0 ? 24 : (size_t)c[i].data_len);
        if (c[i].cut)
            n = (size_t)c[i].cut;
        npy_array a = {0};
        npu_err e;
        npu_err_clear(&e);
        npu_status st = npy_parse(buf, n, "bad.npy", npu_alloc_default(), &a, &e);
        if (!c[i].msg) { /* a control: the same dict in version 2.0 is fine */
            cr_assert_eq(st, NPU_OK, "case %zu: %s", i, e.msg);
            npy_free(npu_alloc_default(), &a);
            continue;
        }
        cr_assert_eq(st, NPU_EUSER, "case %zu", i);
        cr_assert(strstr(e.msg, c[i].msg), "case %zu: %s", i, e.msg);
        long off = c[i].off;
        if (c[i].at)
            off = 10 + (long)(strstr(c[i].dict, c[i].at) - c[i].dict) + c[i].off;
        else if (off == -1)
            off = (long)n;
        char want[64];
        snprintf(want, sizeof want, "bad.npy: byte %ld: ", off);
        cr_assert(strncmp(e.msg, want, strlen(want)) == 0, "case %zu: want '%s', got '%s'", i, want, e.msg);
        cr_assert_null(a.data);
    }
}

/* ---- writing ---------------------------------------------------------------------- */

static char tmpdir[64];

static void make_tmpdir(void)
{
    strcpy(tmpdir, "/tmp/npytestXXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        n += de->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    char p[400];
    for (struct dirent *de; d && (de = readdir(d));)
        if (de->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", tmpdir, de->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
    rmdir(tmpdir);
}

TestSuite(npy_write, .init = make_tmpdir, .fini = remove_tmpdir);

Test(npy_write, round_trip_every_dtype_and_rank)
{
    const int64_t shapes[][5] = {{0}, {1, 5}, {2, 3, 2}, {3, 2, 0, 4}, {4, 1, 2, 3, 1}};
    const int ranks[] = {0, 1, 2, 3, 4};
    for (int dt = 0; dt < NPY_DTYPE_COUNT; dt++)
        for (size_t s = 0; s < sizeof ranks / sizeof ranks[0]; s++) {
            int rank = ranks[s];
            const int64_t *dims = rank ? shapes[s] + 1 : NULL;
            int64_t dd[4];
            for (int i = 0; i < rank; i++)
                dd[i] = dims[i];
            size_t nb = npy_dtype_size((npy_dtype)dt);
            for (int i = 0; i < rank; i++)
                nb *= (size_t)dd[i];
            unsigned char data[64 * 8];
            for (size_t i = 0; i < nb; i++)
                data[i] = (unsigned char)(i * 7 + 1);
            if (dt == NPY_BOOL)
                for (size_t i = 0; i < nb; i++)
                    data[i] &= 1;
            char path[128];
            snprintf(path, sizeof path, "%s/a_%d_%zu.npy", tmpdir, dt, s);
            npu_err e;
            cr_assert_eq(npy_write(path, (npy_dtype)dt, rank, dd, data, &e), NPU_OK, "%s", e.msg);
            npy_array a;
            cr_assert_eq(npy_read(path, npu_alloc_default(), &a, &e), NPU_OK, "%s", e.msg);
            cr_assert(a.dtype == (npy_dtype)dt && a.rank == rank && a.nbytes == nb);
            for (int i = 0; i < rank; i++)
                cr_assert_eq(a.dims[i], dd[i]);
            cr_assert_eq(memcmp(a.data, data, nb), 0);
            struct stat st;
            cr_assert_eq(stat(path, &st), 0);
            cr_assert_eq(st.st_mode & 0777, 0644);
            npy_free(npu_alloc_default(), &a);
        }
    /* one file per write, no temporaries left */
    cr_assert_eq(count_entries(tmpdir), NPY_DTYPE_COUNT * 5);
}

Test(npy_write, staged_files_appear_only_on_commit)
{
    char p1[128], p2[128];
    snprintf(p1, sizeof p1, "%s/one.npy", tmpdir);
    snprintf(p2, sizeof p2, "%s/two.npy", tmpdir);
    float v[2] = {1, 2};
    int64_t d[1] = {2};
    npy_pending a, b;
    npu_err e;
    cr_assert_eq(npy_write(p1, NPY_F32, 1, d, v, &e), NPU_OK);
    v[0] = 5;
    cr_assert_eq(npy_stage(p1, NPY_F32, 1, d, v, &a, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(npy_stage(p2, NPY_F32, 1, d, v, &b, &e), NPU_OK, "%s", e.msg);
    cr_assert_neq(access(p2, F_OK), 0);
    npy_array r;
    cr_assert_eq(npy_read(p1, npu_alloc_default(), &r, &e), NPU_OK);
    cr_assert_eq(((float *)r.data)[0], 1); /* the old content until commit */
    npy_free(npu_alloc_default(), &r);
    cr_assert_eq(npy_commit(&a, &e), NPU_OK, "%s", e.msg);
    npy_discard(&b);
    cr_assert_eq(npy_read(p1, npu_alloc_default(), &r, &e), NPU_OK);
    cr_assert_eq(((float *)r.data)[0], 5);
    npy_free(npu_alloc_default(), &r);
    cr_assert_neq(access(p2, F_OK), 0);
    cr_assert_eq(count_entries(tmpdir), 1);
}

Test(npy_write, failure_leaves_nothing)
{
    char p[128];
    snprintf(p, sizeof p, "%s/missing_dir/x.npy", tmpdir);
    float v = 1;
    npu_err e;
    cr_assert_eq(npy_write(p, NPY_F32, 0, NULL, &v, &e), NPU_EUSER);
    cr_assert(strncmp(e.msg, p, strlen(p)) == 0 && strstr(e.msg, "temporary"), "%s", e.msg);
    cr_assert_eq(count_entries(tmpdir), 0);
    /* a directory in the way: the rename fails, the temporary goes */
    snprintf(p, sizeof p, "%s/adir", tmpdir);
    cr_assert_eq(mkdir(p, 0755), 0);
    char inner[160];
    snprintf(inner, sizeof inner, "%s/keep", p);
    FILE *f = fopen(inner, "w");
    fclose(f);
    cr_assert_eq(npy_write(p, NPY_F32, 0, NULL, &v, &e), NPU_EUSER);
    cr_assert(strstr(e.msg, "cannot move"), "%s", e.msg);
    cr_assert_eq(count_entries(tmpdir), 1);
    unlink(inner);
    rmdir(p);
}

Test(npy, reader_fails_allocations_cleanly)
{
    unsigned char buf[256];
    size_t n = build(buf, 1, GOOD, 0, 24);
    for (size_t k = 1; k <= 2; k++) {
        npu_alloc_counter c = {.fail_at = k};
        npy_array a = {0};
        npu_err e;
        npu_status st = npy_parse(buf, n, "x.npy", npu_alloc_counting(&c), &a, &e);
        if (st == NPU_OK) {
            npy_free(npu_alloc_counting(&c), &a);
        } else {
            cr_assert_eq(st, NPU_EINTERNAL);
            cr_assert(strstr(e.msg, "out of memory"), "%s", e.msg);
        }
        cr_assert_eq(c.live_bytes, 0);
    }
}

Test(npy, file_reader_fails_allocations_cleanly)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/f32_2x3.npy", data_dir());
    int failed = 0;
    for (size_t k = 1; k <= 3; k++) {
        npu_alloc_counter c = {.fail_at = k};
        npy_array a = {0};
        npu_err e;
        npu_status st = npy_read(path, npu_alloc_counting(&c), &a, &e);
        if (st == NPU_OK) {
            cr_assert_eq(((float *)a.data)[5], 1.5f);
            npy_free(npu_alloc_counting(&c), &a);
        } else {
            failed++;
            cr_assert_eq(st, NPU_EINTERNAL, "%s", e.msg);
        }
        cr_assert_eq(c.live_bytes, 0);
    }
    cr_assert_geq(failed, 1);
}
