/* A walk over the protobuf wire format before protobuf-c unpacks it:
 * protobuf-c recurses without a limit (a crafted file nesting messages
 * deeply would overflow the stack) and only says "failed"; this walk bounds
 * the depth and says where and what is wrong: the byte at which a truncated
 * file ends and the field it cuts, or the field whose wire type does not
 * match onnx.proto (a file that is not an ONNX model). */
#include <inttypes.h>
#include <stdio.h>

#include "import/imp_internal.h"

enum { WIRE_MAX_DEPTH = 48 };

typedef struct wire {
    imp_ctx *c;
    const uint8_t *d;
    size_t size; /* of the whole file */
} wire;

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static bool varint(const uint8_t *d, size_t end, size_t *pos, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= end)
            return false;
        uint8_t b = d[(*pos)++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* The wire type onnx.proto gives a field (repeated scalars may also come packed). */
static int wire_type_of(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_SFIXED64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE: return WT_I64;
    case PROTOBUF_C_TYPE_SFIXED32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_FLOAT: return WT_I32;
    case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_BYTES: case PROTOBUF_C_TYPE_MESSAGE: return WT_LEN;
    default: return WT_VARINT;
    }
}

static const char *wire_type_name(int wt)
{
    switch (wt) {
    case WT_VARINT: return "a varint";
    case WT_I64: return "8 bytes";
    case WT_LEN: return "length-delimited";
    case WT_I32: return "4 bytes";
    default: return "a group (not used by ONNX)";
    }
}

/* "field 'graph' of ModelProto" or "field 12 of ModelProto" for fields
 * onnx.proto does not know. */
static const char *field_desc(char *buf, size_t cap, const ProtobufCMessageDescriptor *m,
                              const ProtobufCFieldDescriptor *f, uint64_t num)
{
    if (f)
        snprintf(buf, cap, "field '%s' of %s", f->name, m->short_name);
    else
        snprintf(buf, cap, "field %" PRIu64 " of %s", num, m->short_name);
    return buf;
}

/* A field that runs past its message's end: a truncated file when the
 * message reaches the file's end, else a length that lies. trail names
 * the enclosing fields, outermost first. */
static npu_status overrun(const wire *w, size_t msg_end, const char *trail, size_t at, const char *desc,
                          const char *name, uint64_t need)
{
    char more[64] = ""; /* a cut varint does not say how long it was */
    if (need)
        snprintf(more, sizeof more, ", which needs %" PRIu64 " more byte%s", need, need == 1 ? "" : "s");
    if (msg_end == w->size)
        return imp_fail(w->c,
                        "not a valid ONNX file: the file is truncated; it ends at byte %zu, inside %s%s%s (byte %zu)%s",
                        w->size, trail, *trail ? " > " : "", name, at, more);
    return imp_fail(w->c, "not a valid ONNX file (corrupt at byte %zu: %s runs past the end of its message)", at,
                    desc);
}

/* Walks [pos, end) as a message of type m; trail names the fields it is in. */
static npu_status scan(const wire *w, size_t pos, size_t end, const ProtobufCMessageDescriptor *m, int depth,
                       const char *trail)
{
    char desc[160], name[32];
    while (pos < end) {
        size_t at = pos;
        uint64_t key, n;
        if (!varint(w->d, end, &pos, &key)) {
            if (pos >= end)
                return overrun(w, end, trail, at, "a field key", "a field key", 0);
            return imp_fail(w->c, "not a valid ONNX file (corrupt at byte %zu: a field key longer than 10 bytes)",
                            at);
        }
        uint64_t num = key >> 3;
        int wt = (int)(key & 7);
        const ProtobufCFieldDescriptor *f =
            num && num <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(m, (unsigned)num) : NULL;
        field_desc(desc, sizeof desc, m, f, num);
        if (f)
            snprintf(name, sizeof name, "%s", f->name);
        else
            snprintf(name, sizeof name, "field %" PRIu64, num);
        if (!num)
            return imp_fail(w->c, "not a valid ONNX file (corrupt at byte %zu: field number 0)", at);
        if (wt != WT_VARINT && wt != WT_I64 && wt != WT_LEN && wt != WT_I32)
            return imp_fail(w->c, "not a valid ONNX file (corrupt at byte %zu: %s has wire type %d, which ONNX "
                                  "does not use; is this an ONNX model?)",
                            at, desc, wt);
        if (f) {
            int want = wire_type_of(f);
            bool packed = f->label == PROTOBUF_C_LABEL_REPEATED && want != WT_LEN && wt == WT_LEN;
            if (wt != want && !packed)
                return imp_fail(w->c,
                                "not a valid ONNX file (corrupt at byte %zu: %s should be %s, the file has %s; "
                                "is this an ONNX model?)",
                                at, desc, wire_type_name(want), wire_type_name(wt));
        }
        switch (wt) {
        case WT_VARINT:
            if (!varint(w->d, end, &pos, &n)) {
                if (pos >= end)
                    return overrun(w, end, trail, at, desc, name, 0);
                return imp_fail(w->c, "not a valid ONNX file (corrupt at byte %zu: %s has a varint longer than "
                                      "10 bytes)",
                                at, desc);
            }
            break;
        case WT_I64: case WT_I32: {
            size_t k = wt == WT_I64 ? 8 : 4;
            if (end - pos < k)
                return overrun(w, end, trail, at, desc, name, k - (end - pos));
            pos += k;
            break;
        }
        default: {
            if (!varint(w->d, end, &pos, &n)) {
                if (pos >= end)
                    return overrun(w, end, trail, at, desc, name, 0);
                return imp_fail(w->c, "not a valid ONNX file (corrupt at byte %zu: %s has a length longer than "
                                      "10 bytes)",
                                at, desc);
            }
            bool cut = n > end - pos;
            if (cut && end != w->size)
                return overrun(w, end, trail, at, desc, name, n - (end - pos));
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (depth >= WIRE_MAX_DEPTH)
                    return imp_fail(w->c, "not a valid ONNX file (messages nested more than %d deep at byte %zu)",
                                    WIRE_MAX_DEPTH, at);
                char inner[600];
                snprintf(inner, sizeof inner, "%s%s%s (byte %zu)", trail, *trail ? " > " : "", name, at);
                /* a truncated message: find the innermost field the end cuts */
                npu_status st = scan(w, pos, cut ? end : pos + (size_t)n, f->descriptor, depth + 1, inner);
                if (st)
                    return st;
            }
            if (cut)
                return overrun(w, end, trail, at, desc, name, n - (end - pos));
            pos += (size_t)n;
            break;
        }
        }
    }
    return NPU_OK;
}

npu_status imp_wire_check(imp_ctx *c, const void *data, size_t size)
{
    wire w = {c, data, size};
    return scan(&w, 0, size, &onnx__model_proto__descriptor, 0, "");
}
