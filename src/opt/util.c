/* Helpers shared by the passes: constants, rewiring, reshape canonical form. */
#include "opt/opt_internal.h"

#include <string.h>

bool opt_is_const(const ir_tensor *t)
{
    return t && t->data && !(t->flags & IR_TENSOR_INPUT);
}

bool opt_is_graph_output(const ir_graph *g, const ir_tensor *t)
{
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == t)
            return true;
    return false;
}

int opt_const_ints(const ir_tensor *t, int64_t *out, int max)
{
    if (!opt_is_const(t) || (t->dtype != IR_I64 && t->dtype != IR_I32) || !t->shape_known)
        return -1;
    int64_t n = ir_tensor_numel(t);
    for (int64_t i = 0; i < n && i < max; i++)
        out[i] = t->dtype == IR_I64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
    return (int)n;
}

bool opt_const_scalar(const ir_tensor *t, float *out)
{
    if (!opt_is_const(t) || t->dtype != IR_F32 || !t->shape_known || ir_tensor_numel(t) != 1)
        return false;
    *out = *(const float *)t->data;
    return true;
}

ir_tensor *opt_const_new(ir_graph *g, const char *base, const char *suffix, ir_dtype dt, int rank,
                         const int64_t *dims, const void *data)
{
    const char *name = npu_arena_printf(g->arena, "%s_%s", base, suffix);
    for (int k = 2; name && ir_graph_find(g, name); k++)
        name = npu_arena_printf(g->arena, "%s_%s_%d", base, suffix, k);
    if (!name)
        return NULL;
    return ir_const_new(g, name, dt, rank, dims, data);
}

bool opt_bypass(ir_graph *g, ir_node *n, ir_tensor *in, ir_tensor *out)
{
    if (!in || !out || in->dtype != out->dtype || !ir_shape_equal(in, out))
        return false;
    if (!opt_is_graph_output(g, out)) {
        n->dead = true;
        ir_replace_uses(g, out, in);
        out->producer = NULL;
        return true;
    }
    /* out names a graph output: let in's producer write out directly */
    ir_node *p = in->producer;
    if (!p || p->dead || opt_is_graph_output(g, in) || (in->flags & IR_TENSOR_INPUT))
        return false;
    n->dead = true;
    ir_replace_uses(g, in, out);
    for (int k = 0; k < p->n_outputs; k++)
        if (p->outputs[k] == in)
            p->outputs[k] = out;
    out->producer = p;
    in->producer = NULL;
    return true;
}

ir_node *opt_single_user(const ir_graph *g, const ir_tensor *t)
{
    if (opt_is_graph_output(g, t))
        return NULL;
    ir_node *user = NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        for (int j = 0; j < n->n_inputs; j++) {
            if (n->inputs[j] != t)
                continue;
            if (user)
                return NULL; /* a second use, possibly by the same node */
            user = n;
        }
    }
    return user;
}

bool opt_is_reshape_like(ir_op op)
{
    return op == IR_OP_RESHAPE || op == IR_OP_FLATTEN || op == IR_OP_SQUEEZE || op == IR_OP_UNSQUEEZE;
}

bool opt_set_inputs(ir_graph *g, ir_node *n, int count, ir_tensor *const *in)
{
    ir_tensor **a = npu_arena_alloc(g->arena, sizeof *a * (size_t)(count ? count : 1));
    if (!a)
        return false;
    for (int i = 0; i < count; i++)
        a[i] = in[i];
    n->inputs = a;
    n->n_inputs = count;
    return true;
}

/* The canonical shape operand: a constant equal to the output dims (no 0 or
 * -1 left for the kernel to resolve). */
static bool shape_is_explicit(const ir_tensor *shape, const ir_tensor *out)
{
    int64_t v[IR_MAX_RANK];
    if (!shape || shape->dtype != IR_I64 || opt_const_ints(shape, v, IR_MAX_RANK) != out->rank)
        return false;
    for (int i = 0; i < out->rank; i++)
        if (v[i] != out->dims[i])
            return false;
    return true;
}

npu_status opt_make_static_reshape(ir_graph *g, ir_node *n, ir_tensor *src, bool *changed, npu_err *err)
{
    ir_tensor *out = n->outputs[0];
    if (!src || !out || !src->shape_known || !out->shape_known || src->dtype != out->dtype ||
        ir_tensor_numel(src) != ir_tensor_numel(out))
        return NPU_OK;
    for (int i = 0; i < out->rank; i++)
        if (out->dims[i] == 0)
            return NPU_OK; /* an empty tensor would need allowzero; leave it as it is */
    bool attrs_plain = n->n_attrs == 0 || (n->n_attrs == 1 && ir_attr_int(n, "allowzero", -1) == 0);
    if (n->op == IR_OP_RESHAPE && n->n_inputs == 2 && n->inputs[0] == src && attrs_plain &&
        shape_is_explicit(n->inputs[1], out))
        return NPU_OK;
    ir_tensor *shape = NULL;
    if (n->op == IR_OP_RESHAPE && n->n_inputs == 2 && shape_is_explicit(n->inputs[1], out))
        shape = n->inputs[1];
    else
        shape = opt_const_new(g, n->name, "shape", IR_I64, 1, (int64_t[]){out->rank}, out->dims);
    ir_tensor *in[2] = {src, shape};
    if (!shape || !opt_set_inputs(g, n, 2, in))
        return npu_fail(err, NPU_EINTERNAL, "node '%s' (%s): out of memory", n->name, ir_op_name(n->op));
    n->op = IR_OP_RESHAPE;
    n->n_attrs = 0;
    *changed = true;
    return NPU_OK;
}

void opt_drop_unused_views(ir_graph *g, ir_tensor *t)
{
    while (t && t->producer && !t->producer->dead && opt_is_reshape_like(t->producer->op) &&
           t->producer->n_outputs == 1 && ir_use_count(g, t) == 0) {
        t->producer->dead = true;
        t = t->producer->n_inputs > 0 ? t->producer->inputs[0] : NULL;
    }
}
