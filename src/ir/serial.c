/* Binary graph form: writer and a bounds-checked reader.
 * Layout (all little-endian): "NPIR" u32 version, header counts, then
 * tensors, nodes, input and output indices. Strings are u32 length + bytes. */
#include "ir/ir.h"
#include "ir/shape_internal.h"

#include <stdio.h>
#include <string.h>

enum { SERIAL_VERSION = 1 };
static const char SERIAL_MAGIC[4] = {'N', 'P', 'I', 'R'};

typedef struct writer {
    npu_alloc alloc;
    unsigned char *buf;
    size_t len, cap;
    bool oom;
} writer;

static void put(writer *w, const void *p, size_t n)
{
    if (w->oom)
        return;
    if (w->len + n > w->cap) {
        size_t ncap = w->cap ? w->cap : 4096;
        while (ncap < w->len + n)
            ncap *= 2;
        unsigned char *nb = npu_realloc(w->alloc, w->buf, w->cap, ncap);
        if (!nb) {
            w->oom = true;
            return;
        }
        w->buf = nb;
        w->cap = ncap;
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

/* The host is little-endian (x86-64, rv32): values are stored as in memory. */
static void put_u8(writer *w, uint8_t v) { put(w, &v, 1); }
static void put_u32(writer *w, uint32_t v) { put(w, &v, 4); }
static void put_i32(writer *w, int32_t v) { put(w, &v, 4); }
static void put_i64(writer *w, int64_t v) { put(w, &v, 8); }
static void put_f32(writer *w, float v) { put(w, &v, 4); }
static void put_str(writer *w, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_u32(w, (uint32_t)n);
    put(w, s, n);
}

static void put_tensor(writer *w, const ir_tensor *t)
{
    put_str(w, t->name);
    put_u8(w, (uint8_t)t->dtype);
    put_u8(w, (uint8_t)t->rank);
    put_u8(w, (uint8_t)t->flags);
    put_u8(w, t->shape_known);
    for (int i = 0; i < t->rank; i++)
        put_i64(w, t->dims[i]);
    put_u8(w, t->data != NULL);
    if (t->data) {
        size_t nb = ir_tensor_bytes(t);
        put_i64(w, (int64_t)nb);
        put(w, t->data, nb);
    }
    put_u8(w, t->quant != NULL);
    if (t->quant) {
        put_i32(w, t->quant->axis);
        put_u32(w, (uint32_t)t->quant->count);
        for (int i = 0; i < t->quant->count; i++)
            put_f32(w, t->quant->scale[i]);
        for (int i = 0; i < t->quant->count; i++)
            put_i32(w, t->quant->zero_point[i]);
    }
}

static int32_t tensor_index(const ir_graph *g, const ir_tensor *t)
{
    if (!t)
        return -1;
    return t->id >= 0 && t->id < g->n_tensors && g->tensors[t->id] == t ? t->id : -2;
}

npu_status ir_serialize(const ir_graph *g, npu_alloc alloc, void **out, size_t *out_size, npu_err *err)
{
    writer w = {.alloc = alloc};
    int n_live = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n_live += !g->nodes[i]->dead;
    put(&w, SERIAL_MAGIC, 4);
    put_u32(&w, SERIAL_VERSION);
    put_u32(&w, (uint32_t)g->n_tensors);
    put_u32(&w, (uint32_t)n_live);
    put_u32(&w, (uint32_t)g->n_inputs);
    put_u32(&w, (uint32_t)g->n_outputs);
    put_u32(&w, (uint32_t)g->opset);
    put_str(&w, g->name);
    for (int i = 0; i < g->n_tensors; i++)
        put_tensor(&w, g->tensors[i]);
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        put_u32(&w, (uint32_t)n->op);
        put_str(&w, n->name);
        put_u8(&w, (uint8_t)n->act.kind);
        put_f32(&w, n->act.lo);
        put_f32(&w, n->act.hi);
        put_f32(&w, n->act.alpha);
        put_u8(&w, (uint8_t)n->unit);
        put_u32(&w, (uint32_t)n->n_inputs);
        for (int j = 0; j < n->n_inputs; j++) {
            int32_t k = tensor_index(g, n->inputs[j]);
            if (k == -2) {
                npu_free(alloc, w.buf, w.cap);
                return npu_fail(err, NPU_EINTERNAL, "serialize: node '%s' input not in the graph", n->name);
            }
            put_i32(&w, k);
        }
        put_u32(&w, (uint32_t)n->n_outputs);
        for (int j = 0; j < n->n_outputs; j++) {
            int32_t k = tensor_index(g, n->outputs[j]);
            if (k == -2) {
                npu_free(alloc, w.buf, w.cap);
                return npu_fail(err, NPU_EINTERNAL, "serialize: node '%s' output not in the graph", n->name);
            }
            put_i32(&w, k);
        }
        put_u32(&w, (uint32_t)n->n_attrs);
        for (int j = 0; j < n->n_attrs; j++) {
            const ir_attr *a = &n->attrs[j];
            put_str(&w, a->name);
            put_u8(&w, (uint8_t)a->kind);
            switch (a->kind) {
            case IR_ATTR_INT: put_i64(&w, a->i); break;
            case IR_ATTR_FLOAT: put_f32(&w, a->f); break;
            case IR_ATTR_STRING: put_str(&w, a->s); break;
            case IR_ATTR_INTS:
                put_u32(&w, (uint32_t)a->n);
                put(&w, a->ints, sizeof(int64_t) * (size_t)a->n);
                break;
            case IR_ATTR_FLOATS:
                put_u32(&w, (uint32_t)a->n);
                put(&w, a->floats, sizeof(float) * (size_t)a->n);
                break;
            case IR_ATTR_TENSOR:
                put_u8(&w, a->t != NULL);
                if (a->t)
                    put_tensor(&w, a->t);
                break;
            }
        }
    }
    for (int i = 0; i < g->n_inputs; i++)
        put_i32(&w, tensor_index(g, g->inputs[i]));
    for (int i = 0; i < g->n_outputs; i++)
        put_i32(&w, tensor_index(g, g->outputs[i]));
    if (w.oom) {
        npu_free(alloc, w.buf, w.cap);
        return npu_fail(err, NPU_EINTERNAL, "serialize: out of memory");
    }
    /* callers free *out with *out_size: give back exactly that much */
    if (w.cap != w.len) {
        unsigned char *nb = npu_realloc(alloc, w.buf, w.cap, w.len ? w.len : 1);
        if (!nb) {
            npu_free(alloc, w.buf, w.cap);
            return npu_fail(err, NPU_EINTERNAL, "serialize: out of memory");
        }
        w.buf = nb;
    }
    *out = w.buf;
    *out_size = w.len;
    return NPU_OK;
}

/* ---- reader ---- */

typedef struct reader {
    const unsigned char *p;
    size_t len, pos;
    npu_err *err;
    bool bad;
} reader;

static bool take(reader *r, void *dst, size_t n, const char *what)
{
    if (r->bad)
        return false;
    if (n > r->len - r->pos) {
        npu_fail(r->err, NPU_EUSER, "graph section: byte %zu: truncated %s (needs %zu bytes, %zu left)", r->pos,
                 what, n, r->len - r->pos);
        r->bad = true;
        return false;
    }
    if (dst)
        memcpy(dst, r->p + r->pos, n);
    r->pos += n;
    return true;
}

static uint32_t get_u32(reader *r, const char *what)
{
    uint32_t v = 0;
    take(r, &v, 4, what);
    return v;
}

static int32_t get_i32(reader *r, const char *what)
{
    int32_t v = 0;
    take(r, &v, 4, what);
    return v;
}

static uint8_t get_u8(reader *r, const char *what)
{
    uint8_t v = 0;
    take(r, &v, 1, what);
    return v;
}

static bool reader_fail(reader *r, size_t at, const char *fmt, const char *what)
{
    if (!r->bad)
        npu_fail(r->err, NPU_EUSER, "graph section: byte %zu: %s%s", at, fmt, what);
    r->bad = true;
    return false;
}

static char *get_str(reader *r, npu_arena *a, const char *what)
{
    size_t at = r->pos;
    uint32_t n = get_u32(r, what);
    if (r->bad)
        return NULL;
    if (n > r->len - r->pos) {
        reader_fail(r, at, "string length past the end: ", what);
        return NULL;
    }
    char *s = npu_arena_strndup(a, (const char *)r->p + r->pos, n);
    r->pos += n;
    if (!s)
        reader_fail(r, at, "out of memory reading ", what);
    return s;
}

static ir_tensor *get_tensor(reader *r, ir_graph *g, bool registered)
{
    size_t at = r->pos;
    char *name = get_str(r, g->arena, "tensor name");
    uint8_t dt = get_u8(r, "dtype"), rank = get_u8(r, "rank"), flags = get_u8(r, "flags");
    uint8_t known = get_u8(r, "shape flag");
    if (r->bad)
        return NULL;
    if (dt >= IR_DTYPE_COUNT || rank > IR_MAX_RANK) {
        reader_fail(r, at, "bad dtype or rank of tensor ", name);
        return NULL;
    }
    int64_t dims[IR_MAX_RANK], numel = 1;
    for (int i = 0; i < rank; i++) {
        dims[i] = 0;
        take(r, &dims[i], 8, "dims");
        if (dims[i] < 0 || dims[i] > ((int64_t)1 << 32)) {
            reader_fail(r, at, "bad dimension of tensor ", name);
            return NULL;
        }
        /* bounded as shape inference bounds it: sizes never overflow (checked
         * before the product, which can pass int64 with dims up to 2^32) */
        int64_t d = dims[i] ? dims[i] : 1;
        if (numel > SHAPE_MAX_NUMEL / d || (numel *= d) > SHAPE_MAX_NUMEL) {
            reader_fail(r, at, "too many elements in tensor ", name);
            return NULL;
        }
    }
    ir_tensor *t;
    if (registered) {
        t = ir_tensor_new(g, name, (ir_dtype)dt, rank, known ? dims : NULL);
    } else {
        t = npu_arena_alloc(g->arena, sizeof *t);
        if (t) {
            t->name = name;
            t->dtype = (ir_dtype)dt;
            t->id = -1;
            ir_tensor_set_shape(t, rank, dims);
        }
    }
    if (!t) {
        reader_fail(r, at, "duplicate name or out of memory: tensor ", name);
        return NULL;
    }
    t->flags = flags;
    if (get_u8(r, "data flag")) {
        int64_t nb = 0;
        take(r, &nb, 8, "data size");
        if (!r->bad && (nb < 0 || (size_t)nb != ir_tensor_bytes(t) || (size_t)nb > r->len - r->pos)) {
            reader_fail(r, at, "data size does not match the shape of tensor ", name);
            return NULL;
        }
        if (!r->bad) {
            t->data = npu_arena_alloc(g->arena, nb ? (size_t)nb : 1);
            if (!t->data) {
                reader_fail(r, at, "out of memory for ", name);
                return NULL;
            }
            take(r, t->data, (size_t)nb, "tensor data");
        }
    }
    if (get_u8(r, "quant flag")) {
        ir_quant *q = npu_arena_alloc(g->arena, sizeof *q);
        if (!q) {
            reader_fail(r, at, "out of memory for ", name);
            return NULL;
        }
        q->axis = get_i32(r, "quant axis");
        uint32_t count = get_u32(r, "quant count");
        if (r->bad)
            return NULL;
        if (count == 0 || count > (r->len - r->pos) / 8 || q->axis < -1 || q->axis >= (int)rank ||
            (q->axis < 0 && count != 1) || (q->axis >= 0 && count != (uint32_t)dims[q->axis])) {
            reader_fail(r, at, "bad quantization parameters of tensor ", name);
            return NULL;
        }
        q->count = (int)count;
        q->scale = npu_arena_alloc(g->arena, 4u * count);
        q->zero_point = npu_arena_alloc(g->arena, 4u * count);
        if (!q->scale || !q->zero_point) {
            reader_fail(r, at, "out of memory for ", name);
            return NULL;
        }
        take(r, q->scale, 4u * count, "scales");
        take(r, q->zero_point, 4u * count, "zero points");
        t->quant = q;
    }
    return r->bad ? NULL : t;
}

static ir_tensor *tensor_at(reader *r, ir_graph *g, int32_t k, bool *ok)
{
    if (k == -1)
        return NULL;
    if (k < 0 || k >= g->n_tensors) {
        reader_fail(r, r->pos - 4, "tensor index out of range", "");
        *ok = false;
        return NULL;
    }
    return g->tensors[k];
}

static bool get_attr(reader *r, ir_graph *g, ir_node *n)
{
    size_t at = r->pos;
    char *name = get_str(r, g->arena, "attribute name");
    uint8_t kind = get_u8(r, "attribute kind");
    if (r->bad)
        return false;
    switch (kind) {
    case IR_ATTR_INT: {
        int64_t v = 0;
        take(r, &v, 8, "int attribute");
        return !r->bad && ir_set_int(g, n, name, v);
    }
    case IR_ATTR_FLOAT: {
        float v = 0;
        take(r, &v, 4, "float attribute");
        return !r->bad && ir_set_float(g, n, name, v);
    }
    case IR_ATTR_STRING: {
        char *s = get_str(r, g->arena, "string attribute");
        return s && ir_set_string(g, n, name, s);
    }
    case IR_ATTR_INTS:
    case IR_ATTR_FLOATS: {
        uint32_t count = get_u32(r, "attribute count");
        size_t esz = kind == IR_ATTR_INTS ? 8 : 4;
        if (r->bad || count > (r->len - r->pos) / esz)
            return reader_fail(r, at, "attribute past the end: ", name);
        const void *src = r->p + r->pos;
        r->pos += esz * count;
        /* copy to aligned storage before handing to the setters */
        void *tmp = npu_arena_alloc(g->arena, esz * count + 1);
        if (!tmp)
            return reader_fail(r, at, "out of memory for attribute ", name);
        memcpy(tmp, src, esz * count);
        return kind == IR_ATTR_INTS ? ir_set_ints(g, n, name, (int)count, tmp) != NULL
                                    : ir_set_floats(g, n, name, (int)count, tmp) != NULL;
    }
    case IR_ATTR_TENSOR: {
        ir_tensor *t = NULL;
        if (get_u8(r, "tensor attribute flag") && !(t = get_tensor(r, g, false)))
            return false;
        return !r->bad && ir_set_tensor(g, n, name, t);
    }
    default: return reader_fail(r, at, "unknown kind of attribute ", name);
    }
}

/* One node record: op, name, activation, unit, inputs, outputs and
 * attributes. Any error leaves r->bad or *ok false. */
static void get_node(reader *r, ir_graph *g, bool *ok)
{
    size_t at = r->pos;
    uint32_t op = get_u32(r, "op");
    char *name = get_str(r, g->arena, "node name");
    ir_act act = {0};
    act.kind = (ir_act_kind)get_u8(r, "activation");
    take(r, &act.lo, 4, "activation");
    take(r, &act.hi, 4, "activation");
    take(r, &act.alpha, 4, "activation");
    uint8_t unit = get_u8(r, "unit");
    uint32_t nin = get_u32(r, "input count");
    if (r->bad)
        return;
    if (op >= IR_OP_COUNT || act.kind > IR_ACT_LEAKY_RELU || unit > IR_UNIT_NPU || nin > 1024) {
        reader_fail(r, at, "bad node record ", name);
        return;
    }
    ir_tensor *io[1024];
    for (uint32_t j = 0; j < nin && *ok && !r->bad; j++) {
        io[j] = tensor_at(r, g, get_i32(r, "input"), ok);
        /* what ir_graph_verify checks, here where the byte is known */
        const ir_tensor *t = io[j];
        if (*ok && !r->bad && t && !t->producer && !t->data && !(t->flags & IR_TENSOR_INPUT))
            *ok = reader_fail(r, r->pos - 4, "reads a tensor nothing produced before it, in node ", name);
        else if (*ok && !r->bad && t && !t->shape_known)
            *ok = reader_fail(r, r->pos - 4, "reads a tensor without a shape, in node ", name);
    }
    if (!*ok || r->bad)
        return;
    uint32_t nout = get_u32(r, "output count");
    if (nout > 1024 - nin) {
        reader_fail(r, at, "bad node record ", name);
        return;
    }
    for (uint32_t j = 0; j < nout && *ok && !r->bad; j++) {
        ir_tensor *t = io[nin + j] = tensor_at(r, g, get_i32(r, "output"), ok);
        bool again = t && t->producer;
        for (uint32_t k = 0; t && k < nin + j; k++)
            again = again || io[k] == t;
        if (*ok && !r->bad && again)
            *ok = reader_fail(r, r->pos - 4, "writes a tensor it reads or another node writes, in node ", name);
    }
    if (!*ok || r->bad)
        return;
    ir_node *n = ir_node_new(g, (ir_op)op, name, (int)nin, io, (int)nout, io + nin);
    if (!n) {
        reader_fail(r, at, "out of memory for node ", name);
        return;
    }
    n->act = act;
    n->unit = (ir_unit)unit;
    uint32_t na = get_u32(r, "attribute count");
    if (na > (r->len - r->pos) / 5) {
        reader_fail(r, at, "attribute count past the end in node ", name);
        return;
    }
    for (uint32_t j = 0; j < na && !r->bad; j++)
        if (!get_attr(r, g, n))
            *ok = false;
}

/* The graph's inputs and outputs: ni and no tensor indices, none missing. */
static void get_graph_io(reader *r, ir_graph *g, uint32_t ni, uint32_t no, bool *ok)
{
    g->inputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *) * (ni + 1));
    g->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *) * (no + 1));
    if (!g->inputs || !g->outputs)
        reader_fail(r, r->pos, "out of memory", "");
    for (uint32_t i = 0; i < ni && *ok && !r->bad; i++) {
        g->inputs[i] = tensor_at(r, g, get_i32(r, "graph input"), ok);
        if (*ok && !r->bad && !g->inputs[i])
            *ok = reader_fail(r, r->pos - 4, "missing graph input", "");
    }
    for (uint32_t i = 0; i < no && *ok && !r->bad; i++) {
        g->outputs[i] = tensor_at(r, g, get_i32(r, "graph output"), ok);
        if (*ok && !r->bad && !g->outputs[i])
            *ok = reader_fail(r, r->pos - 4, "missing graph output", "");
    }
    g->n_inputs = (int)ni;
    g->n_outputs = (int)no;
}

/* Record offsets live in the graph's arena: they go with the graph. */
static ir_serial_map *map_new(ir_graph *g, uint32_t nt, uint32_t nn)
{
    ir_serial_map *m = npu_arena_alloc(g->arena, sizeof *m);
    if (!m)
        return NULL;
    m->tensor_at = npu_arena_alloc(g->arena, sizeof(size_t) * (nt + 1u));
    m->node_at = npu_arena_alloc(g->arena, sizeof(size_t) * (nn + 1u));
    m->n_tensors = (int)nt;
    m->n_nodes = (int)nn;
    return m->tensor_at && m->node_at ? m : NULL;
}

npu_status ir_deserialize(const void *buf, size_t size, npu_alloc alloc, ir_graph **out, npu_err *err)
{
    return ir_deserialize_map(buf, size, alloc, out, NULL, err);
}

npu_status ir_deserialize_map(const void *buf, size_t size, npu_alloc alloc, ir_graph **out,
                              const ir_serial_map **map, npu_err *err)
{
    reader r = {.p = buf, .len = size, .err = err};
    char magic[4];
    if (!take(&r, magic, 4, "magic") || memcmp(magic, SERIAL_MAGIC, 4) != 0)
        return npu_fail(err, NPU_EUSER, "graph section: byte 0: bad magic (not an npucc graph)");
    uint32_t version = get_u32(&r, "version");
    if (!r.bad && version != SERIAL_VERSION)
        return npu_fail(err, NPU_EUSER, "graph section: byte 4: version %u, expected %d", version, SERIAL_VERSION);
    uint32_t nt = get_u32(&r, "tensor count"), nn = get_u32(&r, "node count");
    uint32_t ni = get_u32(&r, "input count"), no = get_u32(&r, "output count");
    uint32_t opset = get_u32(&r, "opset");
    if (r.bad)
        return err->code;
    /* each record takes at least a few bytes: reject absurd counts early */
    if (nt > size / 8 || nn > size / 8 || ni > size / 4 || no > size / 4)
        return npu_fail(err, NPU_EUSER, "graph section: byte 8: counts larger than the section");
    ir_graph *g = ir_graph_new(alloc);
    if (!g)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    g->opset = (int)opset;
    g->name = get_str(&r, g->arena, "graph name");
    ir_serial_map *tmap = NULL;
    if (map && !(tmap = map_new(g, nt, nn))) {
        ir_graph_free(g);
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    }
    for (uint32_t i = 0; i < nt && !r.bad; i++) {
        if (tmap)
            tmap->tensor_at[i] = r.pos;
        get_tensor(&r, g, true);
    }
    bool ok = !r.bad;
    for (uint32_t i = 0; i < nn && ok && !r.bad; i++) {
        if (tmap)
            tmap->node_at[i] = r.pos;
        get_node(&r, g, &ok);
    }
    if (ok && !r.bad)
        get_graph_io(&r, g, ni, no, &ok);
    if (ok && !r.bad && r.pos != r.len)
        reader_fail(&r, r.pos, "trailing bytes after the graph", "");
    if (!ok || r.bad) {
        ir_graph_free(g);
        return err ? (err->code ? err->code : NPU_EUSER) : NPU_EUSER;
    }
    npu_status st = ir_graph_verify(g, err);
    if (st != NPU_OK) {
        ir_graph_free(g);
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return npu_fail(err, NPU_EUSER, "graph section: byte %zu: inconsistent graph: %s", r.pos, msg);
    }
    *out = g;
    if (map)
        *map = tmap;
    return NPU_OK;
}
