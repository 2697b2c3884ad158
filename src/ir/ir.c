#include "ir/ir.h"

#include <string.h>

static const char *const op_names[IR_OP_COUNT] = {
#define IR_OP(id, name) [IR_OP_##id] = name,
#include "ir/ops.def"
#undef IR_OP
};

const char *ir_op_name(ir_op op)
{
    return (unsigned)op < IR_OP_COUNT ? op_names[op] : "?";
}

bool ir_op_is_view(ir_op op)
{
    switch (op) {
    case IR_OP_RESHAPE:
    case IR_OP_FLATTEN:
    case IR_OP_SQUEEZE:
    case IR_OP_UNSQUEEZE:
    case IR_OP_IDENTITY: return true;
    default: return false;
    }
}

ir_op ir_op_from_name(const char *onnx_name)
{
    for (int i = 0; i < IR_OP_COUNT; i++)
        if (strcmp(op_names[i], onnx_name) == 0)
            return (ir_op)i;
    return IR_OP_COUNT;
}

static const struct {
    const char *name;
    int bits;
} dtype_info[IR_DTYPE_COUNT] = {
    [IR_F32] = {"f32", 32}, [IR_F16] = {"f16", 16}, [IR_I64] = {"i64", 64}, [IR_I32] = {"i32", 32},
    [IR_I16] = {"i16", 16}, [IR_I8] = {"i8", 8},    [IR_U8] = {"u8", 8},    [IR_I4] = {"i4", 4},
    [IR_U4] = {"u4", 4},    [IR_BOOL] = {"bool", 8},
};

const char *ir_dtype_name(ir_dtype dt)
{
    return (unsigned)dt < IR_DTYPE_COUNT ? dtype_info[dt].name : "?";
}

int ir_dtype_bits(ir_dtype dt)
{
    return (unsigned)dt < IR_DTYPE_COUNT ? dtype_info[dt].bits : 0;
}

/* Open-addressing name map, rebuilt on growth. */
typedef struct ir_name_map {
    size_t cap; /* power of two */
    size_t count;
    ir_tensor **slots;
} ir_name_map;

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool map_insert(ir_graph *g, ir_tensor *t)
{
    ir_name_map *m = g->names;
    if ((m->count + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        ir_tensor **ns = npu_arena_alloc(g->arena, ncap * sizeof *ns);
        if (!ns)
            return false;
        for (size_t i = 0; i < m->cap; i++) {
            ir_tensor *o = m->slots[i];
            if (!o)
                continue;
            size_t j = hash_name(o->name) & (ncap - 1);
            while (ns[j])
                j = (j + 1) & (ncap - 1);
            ns[j] = o;
        }
        m->slots = ns;
        m->cap = ncap;
    }
    size_t j = hash_name(t->name) & (m->cap - 1);
    while (m->slots[j])
        j = (j + 1) & (m->cap - 1);
    m->slots[j] = t;
    m->count++;
    return true;
}

ir_tensor *ir_graph_find(const ir_graph *g, const char *name)
{
    const ir_name_map *m = g->names;
    if (!m->cap)
        return NULL;
    size_t j = hash_name(name) & (m->cap - 1);
    while (m->slots[j]) {
        if (strcmp(m->slots[j]->name, name) == 0)
            return m->slots[j];
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

static ir_tensor **map_slot(const ir_graph *g, const ir_tensor *t)
{
    const ir_name_map *m = g->names;
    size_t j = m->cap ? hash_name(t->name) & (m->cap - 1) : 0;
    while (m->cap && m->slots[j] && m->slots[j] != t)
        j = (j + 1) & (m->cap - 1);
    return m->cap && m->slots[j] ? &m->slots[j] : NULL;
}

void ir_swap_names(ir_graph *g, ir_tensor *a, ir_tensor *b)
{
    ir_tensor **sa = map_slot(g, a), **sb = map_slot(g, b);
    if (!sa || !sb)
        return;
    *sa = b, *sb = a;
    const char *n = a->name;
    a->name = b->name, b->name = n;
}

ir_graph *ir_graph_new(npu_alloc alloc)
{
    npu_arena *arena = npu_arena_new(alloc);
    if (!arena)
        return NULL;
    ir_graph *g = npu_arena_alloc(arena, sizeof *g);
    ir_name_map *m = g ? npu_arena_alloc(arena, sizeof *m) : NULL;
    if (!m) {
        npu_arena_free(arena);
        return NULL;
    }
    g->arena = arena;
    g->alloc = alloc;
    g->names = m;
    g->name = "";
    return g;
}

void ir_graph_free(ir_graph *g)
{
    if (g)
        npu_arena_free(g->arena);
}

static bool grow(ir_graph *g, void *arr_p, int n, int *cap, size_t elem)
{
    void **arr = arr_p;
    if (n < *cap)
        return true;
    int ncap = *cap ? *cap * 2 : 32;
    void *na = npu_arena_grow(g->arena, *arr, (size_t)*cap * elem, (size_t)ncap * elem);
    if (!na)
        return false;
    *arr = na;
    *cap = ncap;
    return true;
}

void ir_tensor_set_shape(ir_tensor *t, int rank, const int64_t *dims)
{
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->shape_known = true;
}

ir_tensor *ir_tensor_new(ir_graph *g, const char *name, ir_dtype dt, int rank, const int64_t *dims)
{
    if (rank < 0 || rank > IR_MAX_RANK)
        return NULL;
    char *nm = name ? npu_arena_strdup(g->arena, name) : npu_arena_printf(g->arena, "t_%d", g->n_tensors);
    if (!nm)
        return NULL;
    /* a generated name may collide with a user's: add suffixes until free */
    for (int k = 1; !name && ir_graph_find(g, nm); k++)
        if (!(nm = npu_arena_printf(g->arena, "t_%d_%d", g->n_tensors, k)))
            return NULL;
    if (ir_graph_find(g, nm))
        return NULL;
    ir_tensor *t = npu_arena_alloc(g->arena, sizeof *t);
    if (!t || !grow(g, &g->tensors, g->n_tensors, &g->cap_tensors, sizeof *g->tensors))
        return NULL;
    t->name = nm;
    t->dtype = dt;
    if (dims)
        ir_tensor_set_shape(t, rank, dims);
    else
        t->rank = rank;
    if (!map_insert(g, t))
        return NULL;
    t->id = g->n_tensors;
    g->tensors[g->n_tensors++] = t;
    return t;
}

int64_t ir_tensor_numel(const ir_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

size_t ir_tensor_bytes(const ir_tensor *t)
{
    int64_t bits = ir_tensor_numel(t) * ir_dtype_bits(t->dtype);
    return (size_t)((bits + 7) / 8);
}

bool ir_shape_equal(const ir_tensor *a, const ir_tensor *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

ir_tensor *ir_const_new(ir_graph *g, const char *name, ir_dtype dt, int rank, const int64_t *dims,
                        const void *data)
{
    ir_tensor *t = ir_tensor_new(g, name, dt, rank, dims);
    if (!t)
        return NULL;
    if (rank == 0)
        t->shape_known = true; /* a scalar */
    size_t nb = ir_tensor_bytes(t);
    t->data = npu_arena_alloc(g->arena, nb ? nb : 1);
    if (!t->data)
        return NULL;
    if (data && nb)
        memcpy(t->data, data, nb);
    return t;
}

ir_node *ir_node_new(ir_graph *g, ir_op op, const char *name, int n_in, ir_tensor *const *in, int n_out,
                     ir_tensor *const *out)
{
    ir_node *n = npu_arena_alloc(g->arena, sizeof *n);
    if (!n || !grow(g, &g->nodes, g->n_nodes, &g->cap_nodes, sizeof *g->nodes))
        return NULL;
    n->op = op;
    n->name = name ? npu_arena_strdup(g->arena, name)
                   : npu_arena_printf(g->arena, "%s_%d", ir_op_name(op), g->n_nodes);
    n->inputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *) * (size_t)(n_in ? n_in : 1));
    n->outputs = npu_arena_alloc(g->arena, sizeof(ir_tensor *) * (size_t)(n_out ? n_out : 1));
    if (!n->name || !n->inputs || !n->outputs)
        return NULL;
    n->n_inputs = n_in;
    n->n_outputs = n_out;
    for (int i = 0; i < n_in; i++)
        n->inputs[i] = in[i];
    for (int i = 0; i < n_out; i++) {
        n->outputs[i] = out[i];
        if (out[i])
            out[i]->producer = n;
    }
    n->id = g->n_nodes;
    g->nodes[g->n_nodes++] = n;
    return n;
}

void ir_replace_uses(ir_graph *g, ir_tensor *old_t, ir_tensor *new_t)
{
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] == old_t)
                n->inputs[j] = new_t;
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == old_t)
            g->outputs[i] = new_t;
}

int ir_use_count(const ir_graph *g, const ir_tensor *t)
{
    int uses = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        for (int j = 0; j < n->n_inputs; j++)
            uses += n->inputs[j] == t;
    }
    for (int i = 0; i < g->n_outputs; i++)
        uses += g->outputs[i] == t;
    return uses;
}

/* ---- attributes ---- */

static ir_attr *attr_slot(ir_graph *g, ir_node *n, const char *name, ir_attr_kind kind)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) {
            n->attrs[i] = (ir_attr){.name = n->attrs[i].name, .kind = kind};
            return &n->attrs[i];
        }
    ir_attr *na = npu_arena_grow(g->arena, n->attrs, sizeof *na * (size_t)n->n_attrs,
                                 sizeof *na * (size_t)(n->n_attrs + 1));
    if (!na)
        return NULL;
    n->attrs = na;
    ir_attr *a = &na[n->n_attrs];
    if (!(a->name = npu_arena_strdup(g->arena, name)))
        return NULL;
    a->kind = kind;
    n->n_attrs++;
    return a;
}

ir_attr *ir_set_int(ir_graph *g, ir_node *n, const char *name, int64_t v)
{
    ir_attr *a = attr_slot(g, n, name, IR_ATTR_INT);
    if (a)
        a->i = v;
    return a;
}

ir_attr *ir_set_float(ir_graph *g, ir_node *n, const char *name, float v)
{
    ir_attr *a = attr_slot(g, n, name, IR_ATTR_FLOAT);
    if (a)
        a->f = v;
    return a;
}

ir_attr *ir_set_string(ir_graph *g, ir_node *n, const char *name, const char *v)
{
    ir_attr *a = attr_slot(g, n, name, IR_ATTR_STRING);
    if (a && !(a->s = npu_arena_strdup(g->arena, v)))
        return NULL;
    return a;
}

/* a->n = count and an arena copy of the count elements of elem bytes at v
 * (room for one when count is 0), or NULL when out of memory. */
static void *attr_array(ir_graph *g, ir_attr *a, int count, const void *v, size_t elem)
{
    a->n = count;
    void *p = npu_arena_alloc(g->arena, elem * (size_t)(count ? count : 1));
    if (p && count)
        memcpy(p, v, elem * (size_t)count);
    return p;
}

ir_attr *ir_set_ints(ir_graph *g, ir_node *n, const char *name, int count, const int64_t *v)
{
    ir_attr *a = attr_slot(g, n, name, IR_ATTR_INTS);
    if (!a || !(a->ints = attr_array(g, a, count, v, sizeof *v)))
        return NULL;
    return a;
}

ir_attr *ir_set_floats(ir_graph *g, ir_node *n, const char *name, int count, const float *v)
{
    ir_attr *a = attr_slot(g, n, name, IR_ATTR_FLOATS);
    if (!a || !(a->floats = attr_array(g, a, count, v, sizeof *v)))
        return NULL;
    return a;
}

ir_attr *ir_set_tensor(ir_graph *g, ir_node *n, const char *name, ir_tensor *t)
{
    ir_attr *a = attr_slot(g, n, name, IR_ATTR_TENSOR);
    if (a)
        a->t = t;
    return a;
}

const ir_attr *ir_attr_find(const ir_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t ir_attr_int(const ir_node *n, const char *name, int64_t def)
{
    const ir_attr *a = ir_attr_find(n, name);
    return a && a->kind == IR_ATTR_INT ? a->i : def;
}

float ir_attr_float(const ir_node *n, const char *name, float def)
{
    const ir_attr *a = ir_attr_find(n, name);
    return a && a->kind == IR_ATTR_FLOAT ? a->f : def;
}

const char *ir_attr_string(const ir_node *n, const char *name, const char *def)
{
    const ir_attr *a = ir_attr_find(n, name);
    return a && a->kind == IR_ATTR_STRING ? a->s : def;
}

int ir_attr_ints(const ir_node *n, const char *name, int64_t *out, int max)
{
    const ir_attr *a = ir_attr_find(n, name);
    if (!a || a->kind != IR_ATTR_INTS)
        return -1;
    for (int i = 0; i < a->n && i < max; i++)
        out[i] = a->ints[i];
    return a->n;
}
