/* The nodes of a graph section without the IR: npusim names its layers'
 * and host steps' op types from it. The layout is ir_serialize's
 * (src/ir/serial.c; tests/unit/test_format.c reads one both ways): a
 * record is skipped by its sizes, never interpreted beyond the op code and
 * the node name. */
#include <string.h>

#include "format/format.h"

static const char *const op_names[] = {
#include "opnames/ir_op_names.h" /* build/gen, from src/ir/ops.def */
};

const char *fmt_op_name(uint32_t op)
{
    return op < sizeof op_names / sizeof *op_names ? op_names[op] : NULL;
}

enum { GRAPH_VERSION = 1 };
/* ir_attr_kind's codes (src/ir/ir.h) */
enum { ATTR_INT, ATTR_FLOAT, ATTR_STRING, ATTR_INTS, ATTR_FLOATS, ATTR_TENSOR };

typedef struct skim {
    const unsigned char *p;
    size_t len, pos;
    npu_err *err;
    bool bad;
} skim;

static bool fail(skim *s, size_t at, const char *what)
{
    if (!s->bad)
        npu_fail(s->err, NPU_EUSER, "graph section: byte %zu: %s", at, what);
    s->bad = true;
    return false;
}

/* n bytes (n counts of size each), copied to dst when given. */
static bool take(skim *s, void *dst, uint64_t count, uint64_t size, const char *what)
{
    if (s->bad)
        return false;
    if (size && count > (s->len - s->pos) / size)
        return fail(s, s->pos, what);
    if (dst)
        memcpy(dst, s->p + s->pos, (size_t)(count * size));
    s->pos += (size_t)(count * size);
    return true;
}

static uint32_t u32(skim *s, const char *what)
{
    uint32_t v = 0;
    take(s, &v, 1, 4, what);
    return v;
}

static uint8_t u8(skim *s, const char *what)
{
    uint8_t v = 0;
    take(s, &v, 1, 1, what);
    return v;
}

/* A string: its bytes in place. */
static const char *str(skim *s, uint32_t *n, const char *what)
{
    *n = u32(s, what);
    const char *at = (const char *)s->p + s->pos;
    return take(s, NULL, *n, 1, what) ? at : NULL;
}

static void tensor(skim *s)
{
    uint32_t n;
    str(s, &n, "truncated tensor name");
    u8(s, "truncated tensor");
    uint8_t rank = u8(s, "truncated tensor");
    take(s, NULL, 2, 1, "truncated tensor");
    take(s, NULL, rank, 8, "truncated dims");
    if (u8(s, "truncated data flag")) {
        int64_t nb = 0;
        take(s, &nb, 1, 8, "truncated data size");
        if (nb < 0)
            fail(s, s->pos - 8, "bad data size");
        take(s, NULL, (uint64_t)nb, 1, "data past the end");
    }
    if (u8(s, "truncated quant flag")) {
        take(s, NULL, 1, 4, "truncated quant axis");
        take(s, NULL, u32(s, "truncated quant count"), 8, "quantization parameters past the end");
    }
}

static void attr(skim *s)
{
    uint32_t n;
    str(s, &n, "truncated attribute name");
    size_t at = s->pos;
    switch (u8(s, "truncated attribute kind")) {
    case ATTR_INT: take(s, NULL, 1, 8, "truncated int attribute"); break;
    case ATTR_FLOAT: take(s, NULL, 1, 4, "truncated float attribute"); break;
    case ATTR_STRING: str(s, &n, "truncated string attribute"); break;
    case ATTR_INTS: take(s, NULL, u32(s, "truncated attribute count"), 8, "attribute past the end"); break;
    case ATTR_FLOATS: take(s, NULL, u32(s, "truncated attribute count"), 4, "attribute past the end"); break;
    case ATTR_TENSOR:
        if (u8(s, "truncated tensor attribute flag"))
            tensor(s);
        break;
    default: fail(s, at, "unknown kind of attribute");
    }
}

static void node(skim *s, fmt_node_fn fn, void *ud)
{
    size_t at = s->pos;
    uint32_t op = u32(s, "truncated node"), n;
    const char *name = str(s, &n, "truncated node name");
    take(s, NULL, 1, 1 + 3 * 4 + 1, "truncated node"); /* activation kind, lo, hi, alpha; unit */
    take(s, NULL, u32(s, "truncated input count"), 4, "inputs past the end");
    take(s, NULL, u32(s, "truncated output count"), 4, "outputs past the end");
    if (s->bad)
        return;
    if (!fmt_op_name(op)) {
        fail(s, at, "bad node record (op code)");
        return;
    }
    for (uint32_t na = u32(s, "truncated attribute count"), i = 0; i < na && !s->bad; i++)
        attr(s);
    if (!s->bad)
        fn(ud, name, n, fmt_op_name(op));
}

npu_status fmt_graph_nodes(const void *graph, size_t size, fmt_node_fn fn, void *ud, npu_err *err)
{
    skim s = {.p = graph, .len = size, .err = err};
    if (size < 4 || memcmp(graph, "NPIR", 4) != 0)
        return npu_fail(err, NPU_EUSER, "graph section: byte 0: bad magic (not an npucc graph)");
    s.pos = 4;
    uint32_t version = u32(&s, "truncated header");
    if (!s.bad && version != GRAPH_VERSION)
        return npu_fail(err, NPU_EUSER, "graph section: byte 4: version %u, expected %d", version, GRAPH_VERSION);
    uint32_t nt = u32(&s, "truncated header"), nn = u32(&s, "truncated header");
    take(&s, NULL, 3, 4, "truncated header"); /* input, output counts; opset */
    uint32_t n;
    str(&s, &n, "truncated graph name");
    for (uint32_t i = 0; i < nt && !s.bad; i++)
        tensor(&s);
    for (uint32_t i = 0; i < nn && !s.bad; i++)
        node(&s, fn, ud);
    return s.bad ? (err ? err->code : NPU_EUSER) : NPU_OK;
}
