/* fuse_lut (on the quantized graph): an elementwise node whose every input
 * is one int8 tensor y or an npu.Lut of y computes a function of y's 256
 * codes, so it becomes one npu.Lut of y. SiLU, exported as Mul(y,
 * Sigmoid(y)), is Mul(y, Lut(y)) once quantized: two passes over y (the
 * table, then the product) become one table lookup, which the tiler can run
 * in the producing conv's output stage. Lut(Lut(y)) composes the same way.
 * The table is computed by running the node's own integer kernel (through
 * the reference) on the 256 codes, so the result is bit-identical to the
 * two nodes it replaces. */
#include "opt/opt_internal.h"

#include <string.h>

#include "ref/ref.h"

static bool per_tensor_i8(const ir_tensor *t)
{
    return t && t->dtype == IR_I8 && t->quant && t->quant->count == 1 && !t->data &&
           !(t->flags & IR_TENSOR_INT4_CODES);
}

/* The int8 table of an npu.Lut node, or NULL. */
static const int8_t *lut_table(const ir_node *n)
{
    if (!n || n->dead || n->op != IR_OP_LUT || n->n_inputs != 2 || n->n_outputs != 1)
        return NULL;
    const ir_tensor *t = n->inputs[1];
    return t && t->data && t->dtype == IR_I8 && ir_tensor_numel(t) == 256 ? t->data : NULL;
}

/* Input t of a candidate as a function of root: root itself (tab NULL) or
 * Lut(root) (its table). False when it is neither. */
static bool of_root(const ir_tensor *t, const ir_tensor *root, const int8_t **tab)
{
    *tab = NULL;
    if (t == root)
        return true;
    const ir_node *p = t->producer;
    if (!lut_table(p) || p->inputs[0] != root)
        return false;
    *tab = lut_table(p);
    return true;
}

/* The root of node n's inputs: the tensor every input is, or is a Lut of. */
static const ir_tensor *root_of(const ir_node *n)
{
    if (n->op == IR_OP_LUT) /* Lut(Lut(root)): candidate() checked both tables */
        return per_tensor_i8(n->inputs[0]->producer->inputs[0]) ? n->inputs[0]->producer->inputs[0] : NULL;
    for (int i = 0; i < n->n_inputs; i++) {
        const ir_tensor *t = n->inputs[i];
        const ir_tensor *cand[2] = {t, lut_table(t->producer) ? t->producer->inputs[0] : NULL};
        for (int k = 0; k < 2; k++) {
            if (!per_tensor_i8(cand[k]))
                continue;
            bool all = true;
            const int8_t *tab;
            for (int j = 0; j < n->n_inputs && all; j++)
                all = per_tensor_i8(n->inputs[j]) && of_root(n->inputs[j], cand[k], &tab);
            if (all)
                return cand[k];
        }
    }
    return NULL;
}

static bool candidate(const ir_node *n)
{
    if (n->dead || n->n_outputs != 1 || !per_tensor_i8(n->outputs[0]))
        return false;
    switch (n->op) {
    case IR_OP_ADD:
    case IR_OP_SUB:
    case IR_OP_MUL:
    case IR_OP_MIN:
    case IR_OP_MAX: return n->n_inputs == 2 && n->act.kind == IR_ACT_NONE;
    case IR_OP_LUT: return lut_table(n) && lut_table(n->inputs[0]->producer);
    default: return false;
    }
}

/* The 256 entries of n as a function of root's codes. */
static npu_status compose(ir_graph *g, ir_node *n, const ir_tensor *root, int8_t *out, npu_err *err)
{
    int64_t d = 256;
    const int8_t *tab[2] = {NULL, NULL};
    if (n->op == IR_OP_LUT) { /* Lut(Lut(root)) */
        const int8_t *t1 = lut_table(n->inputs[0]->producer), *t2 = lut_table(n);
        for (int v = 0; v < 256; v++)
            out[v] = t2[t1[v] + 128];
        return NPU_OK;
    }
    for (int i = 0; i < n->n_inputs; i++)
        of_root(n->inputs[i], root, &tab[i]);
    ir_tensor *ins[2];
    for (int i = 0; i < 2; i++) {
        int8_t codes[256];
        for (int v = 0; v < 256; v++)
            codes[v] = tab[i] ? tab[i][v] : (int8_t)(v - 128); /* entry v is code v - 128 (nk_lut_apply_i8) */
        if (!(ins[i] = ir_const_new(g, NULL, IR_I8, 1, &d, codes)))
            return npu_fail(err, NPU_EINTERNAL, "out of memory");
        ins[i]->quant = n->inputs[i]->quant;
    }
    ir_tensor *o = ir_tensor_new(g, NULL, IR_I8, 1, &d);
    ir_node *probe = o ? ir_node_new(g, n->op, NULL, 2, ins, 1, &o) : NULL;
    if (!probe)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    o->quant = n->outputs[0]->quant;
    probe->dead = true;
    npu_status st = ref_eval_node(g, probe, err);
    if (st != NPU_OK)
        return npu_err_prefix(err, "fuse_lut: node '%s' (%s)", n->name, ir_op_name(n->op));
    memcpy(out, o->data, 256);
    return NPU_OK;
}

npu_status opt_fuse_lut(ir_graph *g, bool *changed, npu_err *err)
{
    *changed = false;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = g->nodes[i];
        const ir_tensor *root = candidate(n) ? root_of(n) : NULL;
        if (!root)
            continue;
        int8_t table[256];
        npu_status st = compose(g, n, root, table, err);
        if (st != NPU_OK)
            return st;
        int64_t d = 256;
        ir_tensor *tt = opt_const_new(g, n->outputs[0]->name, "lut", IR_I8, 1, &d, table);
        ir_tensor *ni[2] = {(ir_tensor *)root, tt};
        if (!tt || !opt_set_inputs(g, n, 2, ni))
            return npu_fail(err, NPU_EINTERNAL, "out of memory");
        n->op = IR_OP_LUT;
        n->attrs = NULL;
        n->n_attrs = 0;
        *changed = true;
    }
    if (!*changed)
        return NPU_OK;
    bool dropped;
    return opt_dce(g, NULL, &dropped, err);
}
