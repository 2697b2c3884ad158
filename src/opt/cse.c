/* cse: common subexpressions merge.
 * First equal small constants (same dtype, shape and bytes; up to
 * CSE_CONST_MAX bytes, found by content hash) become one tensor: exports
 * repeat the same shape vectors, axes and scalars, and nodes reading equal
 * constants only compare equal once those are one. Then, in topological
 * order, a node with the same op, inputs (either order for Add and Mul),
 * attributes and fused activation as an earlier one is removed and its
 * readers read the earlier node's outputs; chains merge in one sweep. A node
 * writing a graph output is never the one removed (the output keeps its
 * name). */
#include "opt/opt_internal.h"

#include <string.h>

enum { CSE_CONST_MAX = 4096 };

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Open-addressing table of pointers, hashed by the caller. */
typedef struct table {
    size_t cap;
    void **slots;
    uint64_t *hashes;
} table;

static bool table_init(table *t, npu_alloc a, int count)
{
    t->cap = 16;
    while (t->cap < (size_t)count * 2)
        t->cap *= 2;
    t->slots = npu_malloc(a, sizeof *t->slots * t->cap);
    t->hashes = npu_malloc(a, sizeof *t->hashes * t->cap);
    if (t->slots)
        memset(t->slots, 0, sizeof *t->slots * t->cap);
    return t->slots && t->hashes;
}

static void table_free(table *t, npu_alloc a)
{
    npu_free(a, t->slots, sizeof *t->slots * t->cap);
    npu_free(a, t->hashes, sizeof *t->hashes * t->cap);
}

/* The entry equal to item (by eq), or NULL after inserting item. */
static void *table_find_or_add(table *t, uint64_t h, void *item, bool (*eq)(const void *, const void *))
{
    size_t j = h & (t->cap - 1);
    for (; t->slots[j]; j = (j + 1) & (t->cap - 1))
        if (t->hashes[j] == h && eq(t->slots[j], item))
            return t->slots[j];
    t->slots[j] = item;
    t->hashes[j] = h;
    return NULL;
}

/* ---- constants ---- */

static bool dedupable(const ir_tensor *t)
{
    return opt_is_const(t) && !t->producer && !t->quant && t->shape_known && ir_tensor_bytes(t) <= CSE_CONST_MAX;
}

static uint64_t hash_const(const ir_tensor *t)
{
    uint64_t h = mix((uint64_t)t->dtype, (uint64_t)t->rank);
    h = hash_bytes(h, t->dims, sizeof t->dims[0] * (size_t)t->rank);
    return hash_bytes(h, t->data, ir_tensor_bytes(t));
}

static bool const_eq(const void *pa, const void *pb)
{
    const ir_tensor *a = pa, *b = pb;
    return a->dtype == b->dtype && ir_shape_equal(a, b) && memcmp(a->data, b->data, ir_tensor_bytes(a)) == 0;
}

/* canon[id] for each dedupable tensor; returns whether any node input moved */
static bool dedupe_consts(ir_graph *g, table *t)
{
    ir_tensor **canon = (ir_tensor **)npu_malloc(g->alloc, sizeof *canon * (size_t)g->n_tensors);
    if (!canon)
        return false; /* an optimization only: skip it */
    for (int i = 0; i < g->n_tensors; i++) {
        ir_tensor *c = g->tensors[i];
        canon[i] = NULL;
        if (dedupable(c)) {
            ir_tensor *first = table_find_or_add(t, hash_const(c), c, const_eq);
            canon[i] = first ? first : c;
        }
    }
    bool any = false;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        for (int j = 0; j < n->n_inputs && !n->dead; j++) {
            ir_tensor *in = n->inputs[j];
            if (in && in->id >= 0 && in->id < g->n_tensors && g->tensors[in->id] == in && canon[in->id] &&
                canon[in->id] != in) {
                n->inputs[j] = canon[in->id];
                any = true;
            }
        }
    }
    npu_free(g->alloc, canon, sizeof *canon * (size_t)g->n_tensors);
    return any;
}

/* ---- nodes ---- */

static bool commutative(const ir_node *n)
{
    return (n->op == IR_OP_ADD || n->op == IR_OP_MUL) && n->n_inputs == 2;
}

static uint64_t hash_attr(const ir_attr *a)
{
    uint64_t h = hash_bytes(mix(0, (uint64_t)a->kind), a->name, strlen(a->name));
    switch (a->kind) {
    case IR_ATTR_INT: return mix(h, (uint64_t)a->i);
    case IR_ATTR_FLOAT: return hash_bytes(h, &a->f, sizeof a->f);
    case IR_ATTR_STRING: return hash_bytes(h, a->s, strlen(a->s));
    case IR_ATTR_INTS: return hash_bytes(h, a->ints, sizeof *a->ints * (size_t)a->n);
    case IR_ATTR_FLOATS: return hash_bytes(h, a->floats, sizeof *a->floats * (size_t)a->n);
    case IR_ATTR_TENSOR: return h; /* compared by content in attr_eq */
    }
    return h;
}

static bool attr_eq(const ir_attr *a, const ir_attr *b)
{
    if (a->kind != b->kind || strcmp(a->name, b->name) != 0)
        return false;
    switch (a->kind) {
    case IR_ATTR_INT: return a->i == b->i;
    case IR_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case IR_ATTR_STRING: return strcmp(a->s, b->s) == 0;
    case IR_ATTR_INTS: return a->n == b->n && memcmp(a->ints, b->ints, sizeof *a->ints * (size_t)a->n) == 0;
    case IR_ATTR_FLOATS: return a->n == b->n && memcmp(a->floats, b->floats, sizeof *a->floats * (size_t)a->n) == 0;
    case IR_ATTR_TENSOR:
        return a->t && b->t && a->t->data && b->t->data && const_eq(a->t, b->t);
    }
    return false;
}

static uint64_t ptr_hash(const void *p)
{
    return mix(0x51ed27ull, (uint64_t)(uintptr_t)p);
}

static uint64_t hash_node(const ir_node *n)
{
    uint64_t h = mix(mix((uint64_t)n->op, (uint64_t)n->n_inputs), (uint64_t)n->n_outputs);
    if (commutative(n)) {
        h = mix(h, ptr_hash(n->inputs[0]) + ptr_hash(n->inputs[1]));
    } else {
        for (int j = 0; j < n->n_inputs; j++)
            h = mix(h, ptr_hash(n->inputs[j]));
    }
    uint64_t ah = 0; /* attribute order does not matter */
    for (int j = 0; j < n->n_attrs; j++)
        ah += hash_attr(&n->attrs[j]);
    h = mix(h, ah);
    return mix(h, (uint64_t)n->act.kind);
}

static bool node_eq(const void *pa, const void *pb)
{
    const ir_node *a = pa, *b = pb;
    if (a->op != b->op || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs || a->n_attrs != b->n_attrs)
        return false;
    if (a->act.kind != b->act.kind || a->act.lo != b->act.lo || a->act.hi != b->act.hi ||
        a->act.alpha != b->act.alpha)
        return false;
    bool same = true;
    for (int j = 0; j < a->n_inputs && same; j++)
        same = a->inputs[j] == b->inputs[j];
    if (!same && !(commutative(a) && a->inputs[0] == b->inputs[1] && a->inputs[1] == b->inputs[0]))
        return false;
    for (int j = 0; j < a->n_outputs; j++) {
        const ir_tensor *x = a->outputs[j], *y = b->outputs[j];
        if (!x != !y || (x && (x->dtype != y->dtype || !ir_shape_equal(x, y))))
            return false;
    }
    for (int j = 0; j < a->n_attrs; j++) {
        const ir_attr *other = ir_attr_find(b, a->attrs[j].name);
        if (!other || !attr_eq(&a->attrs[j], other))
            return false;
    }
    return true;
}

static bool writes_graph_output(const ir_graph *g, const ir_node *n)
{
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j] && opt_is_graph_output(g, n->outputs[j]))
            return true;
    return false;
}

npu_status opt_cse(ir_graph *g, const opt_options *o, bool *changed, npu_err *err)
{
    (void)o;
    table consts = {0}, nodes = {0};
    if (!table_init(&consts, g->alloc, g->n_tensors) || !table_init(&nodes, g->alloc, g->n_nodes)) {
        table_free(&consts, g->alloc);
        table_free(&nodes, g->alloc);
        return npu_fail(err, NPU_EINTERNAL, "cse: out of memory");
    }
    bool any = dedupe_consts(g, &consts);
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || n->n_inputs == 0)
            continue;
        ir_node *first = table_find_or_add(&nodes, hash_node(n), n, node_eq);
        if (!first || writes_graph_output(g, n))
            continue;
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j]) {
                ir_replace_uses(g, n->outputs[j], first->outputs[j]);
                n->outputs[j]->producer = NULL;
            }
        n->dead = true;
        any = true;
    }
    table_free(&consts, g->alloc);
    table_free(&nodes, g->alloc);
    if (any)
        ir_graph_compact(g);
    *changed = any;
    return NPU_OK;
}
