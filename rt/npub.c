/* .npub reader: validates every offset and size before anything uses them. */
#include "npub.h"

#include <string.h>

static uint32_t crc32_nibble(uint32_t crc, const uint8_t *p, size_t size)
{
    /* nibble-table CRC-32 (IEEE, reflected, on the inverted value): small enough for the firmware */
    static const uint32_t table[16] = {
        0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu, 0x76dc4190u, 0x6b6b51f4u, 0x4db26158u, 0x5005713cu,
        0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu, 0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu,
    };
    for (size_t i = 0; i < size; i++) {
        crc ^= p[i];
        crc = (crc >> 4) ^ table[crc & 15];
        crc = (crc >> 4) ^ table[crc & 15];
    }
    return crc;
}

#ifndef __riscv
/* Natively, slicing by 8 (eight bytes per step through eight 256-entry
 * tables) for large buffers: a model's weights are checked by every tool
 * and every simulation context that opens it. The tables are built on the
 * stack per call (no global state), which pays off above a few KiB. */
enum { CRC_SLICE_MIN = 1u << 16 };

static uint32_t crc32_slice8(uint32_t crc, const uint8_t *p, size_t size)
{
    uint32_t t[8][256];
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c >> 1 ^ (0xedb88320u & (0u - (c & 1u)));
        t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int k = 1; k < 8; k++)
            t[k][i] = t[k - 1][i] >> 8 ^ t[0][t[k - 1][i] & 0xffu];
    for (; size >= 8; size -= 8, p += 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = t[7][lo & 0xffu] ^ t[6][lo >> 8 & 0xffu] ^ t[5][lo >> 16 & 0xffu] ^ t[4][lo >> 24] ^
              t[3][hi & 0xffu] ^ t[2][hi >> 8 & 0xffu] ^ t[1][hi >> 16 & 0xffu] ^ t[0][hi >> 24];
    }
    return crc32_nibble(crc, p, size);
}
#endif

uint32_t npub_crc32(uint32_t crc, const void *data, size_t size)
{
#ifndef __riscv
    if (size >= CRC_SLICE_MIN)
        return ~crc32_slice8(~crc, data, size);
#endif
    return ~crc32_nibble(~crc, data, size);
}

uint32_t npub_dtype_bits(uint32_t dtype)
{
    /* ir_dtype order: f32 f16 i64 i32 i16 i8 u8 i4 u4 bool */
    static const uint8_t bits[10] = {32, 16, 64, 32, 16, 8, 8, 4, 4, 8};
    return dtype < 10 ? bits[dtype] : 0;
}

static char *put_s(char *o, const char *end, const char *s)
{
    while (*s && o < end)
        *o++ = *s++;
    return o;
}

static char *put_u(char *o, const char *end, uint32_t v)
{
    char num[10];
    int n = 0;
    do
        num[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < 10);
    while (n && o < end)
        *o++ = num[--n];
    return o;
}

/* "byte OFFSET: msg", with up to two %u in msg: the runtime has no snprintf */
static int fail(npub_error *err, uint32_t offset, const char *msg, uint32_t a, uint32_t b)
{
    if (!err)
        return -1;
    char *o = err->msg;
    const char *end = err->msg + sizeof err->msg - 1;
    o = put_s(o, end, "byte ");
    o = put_u(o, end, offset);
    o = put_s(o, end, ": ");
    uint32_t vals[2] = {a, b};
    int vi = 0;
    for (const char *s = msg; *s && o < end; s++) {
        if (s[0] == '%' && s[1] == 'u' && vi < 2) {
            o = put_u(o, end, vals[vi++]);
            s++;
        } else {
            *o++ = *s;
        }
    }
    *o = '\0';
    err->offset = offset;
    return -1;
}

static int section_array(npub_view *v, npub_section_kind kind, size_t elem, const void **out, uint32_t *count,
                         npub_error *err, int required)
{
    const npub_section *s = v->sec[kind];
    *out = NULL;
    *count = 0;
    if (!s)
        return required ? fail(err, 0, "missing section %u", (uint32_t)kind, 0) : 0;
    if (s->size % elem)
        return fail(err, s->offset, "section %u size is not a multiple of %u", kind, (uint32_t)elem);
    *out = v->base + s->offset;
    *count = (uint32_t)(s->size / elem);
    return 0;
}

const char *npub_string(const npub_view *v, uint32_t offset)
{
    if (!v->strings || offset >= v->strings_size)
        return "";
    return v->strings + offset;
}

static int check_string(const npub_view *v, uint32_t off, uint32_t at, npub_error *err)
{
    if (off >= v->strings_size)
        return fail(err, at, "string offset %u outside the string table (%u bytes)", off, v->strings_size);
    return 0;
}

/* A float's bits: the runtime has no isfinite. */
static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The IO-type extension at file offset at (after the indices), checked
 * against the already validated tensor table: a binary must not tell the
 * application one scale and run with another. */
static int check_io_types(npub_view *v, uint32_t at, uint32_t nio, npub_error *err)
{
    const npub_io_ext *x = (const npub_io_ext *)(v->base + at);
    if (x->magic != NPUB_IO_EXT_MAGIC)
        return fail(err, at, "io types: bad magic", 0, 0);
    if (x->version != NPUB_IO_EXT_VERSION || x->record_size != sizeof(npub_io_type))
        return fail(err, at + 4, "io types: version %u record size %u not known", x->version, x->record_size);
    v->io_types = (const npub_io_type *)(x + 1);
    for (uint32_t i = 0; i < nio; i++) {
        const npub_io_type *r = &v->io_types[i];
        const npub_tensor *t = &v->tensors[v->inputs[i]];
        uint32_t rat = at + (uint32_t)sizeof *x + i * (uint32_t)sizeof *r;
        int quant_dt = r->dtype == 5 || r->dtype == 6; /* ir_dtype i8, u8 */
        int32_t zlo = r->dtype == 6 ? 0 : -128, zhi = r->dtype == 6 ? 255 : 127;
        uint32_t sb = float_bits(r->scale);
        if (r->dtype != t->dtype || r->reserved || r->reserved2 || r->has_quant > 1)
            return fail(err, rat, "io type %u: dtype %u differs from its tensor's, or reserved bits set", i, r->dtype);
        if (!r->has_quant ? sb != 0 || r->zero_point != 0
                          : !quant_dt || (sb >> 23) == 0 || (sb >> 23) >= 0xff || r->zero_point < zlo ||
                                r->zero_point > zhi)
            return fail(err, rat, "io type %u: bad scale or zero point (zero point %u)", i, (uint32_t)r->zero_point);
        if ((quant_dt && r->has_quant != t->has_quant) ||
            (r->has_quant && (float_bits(t->scale) != sb || t->zero_point != r->zero_point)))
            return fail(err, rat, "io type %u: scale or zero point differs from tensor %u's", i, v->inputs[i]);
    }
    return 0;
}

/* The header at data: its own fields and checksum, and that the section table
 * lies inside the file; *table_end is where the table ends. */
static int check_header(const void *data, size_t size, uint64_t *table_end, npub_error *err)
{
    if (size < sizeof(npub_header))
        return fail(err, 0, "file of %u bytes is shorter than the %u-byte header", (uint32_t)size,
                    (uint32_t)sizeof(npub_header));
    if ((uintptr_t)data % 8)
        return fail(err, 0, "buffer not 8-byte aligned", 0, 0);
    const npub_header *h = data;
    if (h->magic != NPUB_MAGIC)
        return fail(err, 0, "bad magic (not an .npub file)", 0, 0);
    if (h->version != NPUB_VERSION)
        return fail(err, 4, "version %u, this reader knows %u", h->version, NPUB_VERSION);
    if (h->header_size != sizeof(npub_header))
        return fail(err, 6, "header size %u, expected %u", h->header_size, (uint32_t)sizeof(npub_header));
    if (h->file_size != size)
        return fail(err, 8, "header says %u bytes, file has %u (truncated?)", h->file_size, (uint32_t)size);
    npub_header hc = *h;
    hc.header_crc = 0;
    if (npub_crc32(0, &hc, sizeof hc) != h->header_crc)
        return fail(err, 0, "header checksum mismatch", 0, 0);
    if (h->target[sizeof h->target - 1] != '\0')
        return fail(err, 24, "target name not terminated", 0, 0);
    *table_end = (uint64_t)h->section_table + (uint64_t)h->section_count * sizeof(npub_section);
    if (h->section_table % NPUB_ALIGN || h->section_table < sizeof(npub_header) || *table_end > size)
        return fail(err, 52, "section table at %u (%u entries) outside the file", h->section_table,
                    h->section_count);
    return 0;
}

/* Each section table entry: a known kind, once, aligned inside the file after
 * the table, overlapping no other, its checksum right; fills v->sec. */
static int check_sections(npub_view *v, uint64_t table_end, npub_error *err)
{
    const npub_header *h = v->header;
    for (uint32_t i = 0; i < h->section_count; i++) {
        const npub_section *s = &v->sections[i];
        uint32_t at = h->section_table + i * (uint32_t)sizeof *s;
        if (s->kind == 0 || s->kind > NPUB_SEC_KIND_MAX)
            return fail(err, at, "unknown section kind %u", s->kind, 0);
        if (v->sec[s->kind])
            return fail(err, at, "duplicate section kind %u", s->kind, 0);
        if (s->offset % NPUB_ALIGN || s->offset < table_end || (uint64_t)s->offset + s->size > v->size)
            return fail(err, at, "section at %u size %u outside the file or misaligned", s->offset, s->size);
        for (uint32_t j = 0; j < i; j++) {
            const npub_section *o = &v->sections[j];
            if (s->offset < o->offset + o->size && o->offset < s->offset + s->size)
                return fail(err, at, "section overlaps section %u", j, 0);
        }
        if (npub_crc32(0, v->base + s->offset, s->size) != s->crc)
            return fail(err, s->offset, "checksum mismatch in section kind %u", s->kind, 0);
        v->sec[s->kind] = s;
    }
    return 0;
}

/* The array sections as typed views, each a whole number of records; the
 * string table NUL-bounded so every in-range offset is a C string. */
static int map_sections(npub_view *v, npub_error *err)
{
    const void *p;
    uint32_t n;
    if (section_array(v, NPUB_SEC_COMMANDS, 4, &p, &n, err, 1))
        return -1;
    v->commands = p;
    v->n_commands = n;
    if (section_array(v, NPUB_SEC_CONSTANTS, 1, &p, &n, err, 1))
        return -1;
    v->constants = p;
    v->constants_size = n;
    if (section_array(v, NPUB_SEC_TENSORS, sizeof(npub_tensor), &p, &n, err, 1))
        return -1;
    v->tensors = p;
    v->n_tensors = n;
    if (section_array(v, NPUB_SEC_STEPS, sizeof(npub_step), &p, &n, err, 1))
        return -1;
    v->steps = p;
    v->n_steps = n;
    if (section_array(v, NPUB_SEC_STRINGS, 1, &p, &n, err, 1))
        return -1;
    v->strings = p;
    v->strings_size = n;
    if (n == 0 || v->strings[n - 1] != '\0' || v->strings[0] != '\0')
        return fail(err, v->sec[NPUB_SEC_STRINGS]->offset, "string table must start and end with NUL", 0, 0);
    if (section_array(v, NPUB_SEC_PARAMS, 1, &p, &n, err, 0))
        return -1;
    v->params = p;
    v->params_size = n;
    if (section_array(v, NPUB_SEC_MEMORY, sizeof(npub_memory), &p, &n, err, 1))
        return -1;
    if (n != 1)
        return fail(err, v->sec[NPUB_SEC_MEMORY]->offset, "memory section holds %u records, expected 1", n, 0);
    v->memory = p;
    if (section_array(v, NPUB_SEC_DEBUG, sizeof(npub_debug), &p, &n, err, 0))
        return -1;
    v->debug = p;
    v->n_debug = n;
    if (section_array(v, NPUB_SEC_GRAPH, 1, &p, &n, err, 0))
        return -1;
    v->graph = p;
    v->graph_size = n;
    if (section_array(v, NPUB_SEC_MAC, sizeof(npub_mac), &p, &n, err, 0))
        return -1;
    const npub_mac *mac = p;
    if (mac && (n != 1 || mac->algorithm != NPUB_MAC_HMAC_SHA256 || mac->reserved))
        return fail(err, v->sec[NPUB_SEC_MAC]->offset, "mac section: %u records, algorithm %u not known", n,
                    mac->algorithm);
    v->mac = mac;
    return 0;
}

/* The io section: counts, then indices naming tensors, then optionally the
 * IO-type extension (checked later, against the tensors); *nio is the number
 * of bindings, *base_size the section's size without the extension. */
static int check_io(npub_view *v, uint64_t *nio_out, uint64_t *base_size, npub_error *err)
{
    const npub_section *io = v->sec[NPUB_SEC_IO];
    if (!io)
        return fail(err, 0, "missing section %u", NPUB_SEC_IO, 0);
    if (io->size < sizeof(npub_io))
        return fail(err, io->offset, "io section too small", 0, 0);
    v->io = (const npub_io *)(v->base + io->offset);
    uint64_t nio = (uint64_t)v->io->n_inputs + v->io->n_outputs;
    *nio_out = nio;
    *base_size = sizeof(npub_io) + nio * 4;
    if (io->size != *base_size && io->size != *base_size + sizeof(npub_io_ext) + nio * sizeof(npub_io_type))
        return fail(err, io->offset, "io section size %u does not match %u bindings", io->size, (uint32_t)nio);
    v->inputs = (const uint32_t *)(v->io + 1);
    v->outputs = v->inputs + v->io->n_inputs;
    for (uint64_t i = 0; i < nio; i++)
        if (v->inputs[i] >= v->n_tensors)
            return fail(err, io->offset + 8 + (uint32_t)i * 4, "io binding names tensor %u of %u", v->inputs[i],
                        v->n_tensors);
    return 0;
}

/* Each tensor: named, a known dtype and rank, a size matching its shape, inside
 * its memory region (the constant region exactly the constants section). */
static int check_tensors(const npub_view *v, npub_error *err)
{
    const npub_memory *m = v->memory;
    if (m->region_bytes[NPUB_REGION_CONST] != v->constants_size)
        return fail(err, v->sec[NPUB_SEC_MEMORY]->offset, "constant region %u bytes, constants section %u",
                    m->region_bytes[NPUB_REGION_CONST], v->constants_size);
    for (uint32_t i = 0; i < v->n_tensors; i++) {
        const npub_tensor *t = &v->tensors[i];
        uint32_t at = v->sec[NPUB_SEC_TENSORS]->offset + i * (uint32_t)sizeof *t;
        if (check_string(v, t->name, at, err))
            return -1;
        uint32_t bits = npub_dtype_bits(t->dtype);
        if (!bits || t->rank > NPUB_MAX_RANK || t->region >= NPUB_REGION_COUNT)
            return fail(err, at, "tensor %u: bad dtype %u or rank or region", i, t->dtype);
        uint64_t numel = 1;
        for (int d = 0; d < t->rank; d++) {
            if (t->dims[d] < 0)
                return fail(err, at, "tensor %u: negative dimension", i, 0);
            numel *= (uint64_t)t->dims[d];
            if (numel > 0xffffffffu)
                return fail(err, at, "tensor %u: too many elements", i, 0);
        }
        if ((numel * bits + 7) / 8 != t->size)
            return fail(err, at, "tensor %u: size %u does not match its shape", i, t->size);
        if ((uint64_t)t->offset + t->size > m->region_bytes[t->region])
            return fail(err, at, "tensor %u lies outside its region (%u bytes)", i, m->region_bytes[t->region]);
        if (t->alias_of != NPUB_NONE && t->alias_of >= v->n_tensors)
            return fail(err, at, "tensor %u: alias of tensor %u out of range", i, t->alias_of);
    }
    return 0;
}

/* Each step: named, and its command range or host parameters inside their sections. */
static int check_steps(const npub_view *v, npub_error *err)
{
    for (uint32_t i = 0; i < v->n_steps; i++) {
        const npub_step *s = &v->steps[i];
        uint32_t at = v->sec[NPUB_SEC_STEPS]->offset + i * (uint32_t)sizeof *s;
        if (check_string(v, s->name, at, err))
            return -1;
        if (s->kind == NPUB_STEP_NPU) {
            if ((uint64_t)s->a + s->b > v->n_commands || s->b == 0)
                return fail(err, at, "step %u: command range outside the command stream (%u words)", i,
                            v->n_commands);
        } else if (s->kind == NPUB_STEP_HOST) {
            if ((uint64_t)s->a + s->b > v->params_size || s->a % 4)
                return fail(err, at, "step %u: parameters outside the params section (%u bytes)", i,
                            v->params_size);
        } else {
            return fail(err, at, "step %u: unknown kind %u", i, s->kind);
        }
    }
    return 0;
}

/* Each debug entry: named, its command words inside the command stream. */
static int check_debug(const npub_view *v, npub_error *err)
{
    for (uint32_t i = 0; i < v->n_debug; i++) {
        const npub_debug *d = &v->debug[i];
        uint32_t at = v->sec[NPUB_SEC_DEBUG]->offset + i * (uint32_t)sizeof *d;
        if (check_string(v, d->name, at, err))
            return -1;
        if ((uint64_t)d->first_word + d->word_count > v->n_commands)
            return fail(err, at, "debug entry %u outside the command stream", i, 0);
    }
    return 0;
}

int npub_open(const void *data, size_t size, npub_view *v, npub_error *err)
{
    memset(v, 0, sizeof *v);
    uint64_t table_end = 0;
    if (check_header(data, size, &table_end, err))
        return -1;
    const npub_header *h = data;
    v->base = data;
    v->size = size;
    v->flash = data;
    v->header = h;
    v->sections = (const npub_section *)(v->base + h->section_table);
    uint64_t nio = 0, io_base_size = 0; /* set by check_io: initialized for -Wmaybe-uninitialized */
    if (check_sections(v, table_end, err) || map_sections(v, err) || check_io(v, &nio, &io_base_size, err) ||
        check_tensors(v, err))
        return -1;
    /* the IO types after the tensors: they must agree with the tensor table */
    const npub_section *io = v->sec[NPUB_SEC_IO];
    if (io->size != io_base_size && check_io_types(v, io->offset + (uint32_t)io_base_size, (uint32_t)nio, err))
        return -1;
    if (check_steps(v, err) || check_debug(v, err))
        return -1;
    return 0;
}
