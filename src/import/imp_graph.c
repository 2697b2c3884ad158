/* GraphProto to IR: constants, inputs (with --input-shape), nodes, outputs;
 * then, in topological order, shape inference and import-time folding of
 * nodes whose inputs are all constant (docs/import.md). */
#include <stdio.h>
#include <string.h>

#include "import/imp_internal.h"
#include "ref/ref.h"

/* ---- inputs ------------------------------------------------------------------ */

static const imp_input_shape *find_override(const imp_ctx *c, const char *name)
{
    if (!c->opt)
        return NULL;
    for (int i = 0; i < c->opt->n_input_shapes; i++)
        if (!strcmp(c->opt->input_shapes[i].name, name))
            return &c->opt->input_shapes[i];
    return NULL;
}

/* "x=1x3x224x224" with dynamic dims shown as 1: a hint for messages. */
static void shape_hint(char *buf, size_t size, const char *name, int rank, const int64_t *dims, const bool *dyn)
{
    size_t k = (size_t)snprintf(buf, size, "%s=", name);
    for (int i = 0; i < rank && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? "x" : "", dyn[i] ? 1LL : (long long)dims[i]);
}

static npu_status add_input(imp_ctx *c, const Onnx__ValueInfoProto *vi)
{
    const char *name = vi->name ? vi->name : "";
    if (!*name)
        return imp_fail(c, "a graph input has no name");
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return imp_fail(c, "graph input '%s' is not a tensor (or has no type)", name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int et = tt->has_elem_type ? tt->elem_type : 0;
    ir_dtype dt;
    if (!ir_dtype_from_onnx(et, &dt))
        return imp_fail(c, "graph input '%s': dtype %s is not supported (supported: FLOAT, FLOAT16, INT64, INT32, "
                           "INT16, INT8, UINT8, BOOL)",
                        name, imp_onnx_dtype_name(et));
    const imp_input_shape *ov = find_override(c, name);
    int64_t dims[IR_MAX_RANK];
    bool dyn[IR_MAX_RANK] = {false};
    int rank;
    if (!tt->shape) {
        if (!ov)
            return imp_fail(c, "graph input '%s' has no shape; give it with --input-shape %s=DIMS", name, name);
        rank = ov->rank;
        memcpy(dims, ov->dims, sizeof dims);
    } else {
        if (tt->shape->n_dim > IR_MAX_RANK)
            return imp_fail(c, "graph input '%s': rank %zu exceeds the supported %d", name, tt->shape->n_dim,
                            IR_MAX_RANK);
        rank = (int)tt->shape->n_dim;
        if (ov && ov->rank != rank)
            return imp_fail(c, "--input-shape for '%s' has rank %d, but the input has rank %d", name, ov->rank, rank);
        for (int i = 0; i < rank; i++) {
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
            bool is_static = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0;
            dims[i] = is_static ? d->dim_value : 0;
            dyn[i] = !is_static;
            if (ov && is_static && ov->dims[i] != dims[i])
                return imp_fail(c, "--input-shape for '%s' sets dimension %d to %lld, but the model fixes it to %lld",
                                name, i, (long long)ov->dims[i], (long long)dims[i]);
            if (ov)
                dims[i] = ov->dims[i];
        }
        for (int i = 0; i < rank && !ov; i++) {
            if (!dyn[i])
                continue;
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
            char hint[256];
            shape_hint(hint, sizeof hint, name, rank, dims, dyn);
            char what[80] = "";
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
                snprintf(what, sizeof what, " ('%.64s')", d->dim_param);
            else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
                snprintf(what, sizeof what, " (%lld)", (long long)d->dim_value);
            return imp_fail(c, "graph input '%s': dimension %d%s is dynamic; fix it with --input-shape (e.g. %s)",
                            name, i, what, hint);
        }
    }
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) {
        int64_t d = dims[i] ? dims[i] : 1; /* an empty tensor's other dims stay bounded too */
        if (numel > IMP_MAX_NUMEL / d)
            return imp_fail(c, "graph input '%s' is too large", name);
        numel *= d;
    }
    if (ir_graph_find(c->g, name))
        return imp_fail(c, "graph input '%s' is listed twice", name);
    ir_tensor *t = ir_tensor_new(c->g, name, dt, rank, dims);
    if (!t)
        return imp_oom(c);
    t->flags |= IR_TENSOR_INPUT;
    c->g->inputs[c->g->n_inputs++] = t;
    return NPU_OK;
}

/* A graph input proper: listed in GraphProto.input and not an initializer. */
static bool is_graph_input(const imp_ctx *c, const char *name)
{
    for (size_t j = 0; j < c->gp->n_input; j++) {
        const char *in = c->gp->input[j]->name;
        if (in && !strcmp(in, name)) {
            const ir_tensor *t = ir_graph_find(c->g, name);
            return !t || !t->data;
        }
    }
    return false;
}

/* Before the inputs are read, so a misspelt name is reported rather than
 * the dynamic dimension it meant to fix. */
static npu_status check_overrides(imp_ctx *c)
{
    for (int i = 0; c->opt && i < c->opt->n_input_shapes; i++) {
        const char *name = c->opt->input_shapes[i].name;
        if (!is_graph_input(c, name)) {
            char list[512];
            size_t k = 0;
            list[0] = '\0';
            for (size_t j = 0; j < c->gp->n_input && k + 1 < sizeof list; j++) {
                const char *in = c->gp->input[j]->name ? c->gp->input[j]->name : "";
                if (is_graph_input(c, in))
                    k += (size_t)snprintf(list + k, sizeof list - k, "%s'%s'", k ? ", " : "", in);
            }
            return imp_fail(c, "--input-shape names '%s', which is not a graph input (inputs: %s)", name,
                            *list ? list : "none");
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(c->opt->input_shapes[j].name, name))
                return imp_fail(c, "--input-shape gives '%s' twice", name);
    }
    return NPU_OK;
}

/* ---- nodes ------------------------------------------------------------------ */

/* Constant nodes become constant tensors named by their output. */
static npu_status add_constant(imp_ctx *c, const Onnx__NodeProto *np, const char *name)
{
    const char *out = np->output[0];
    if (ir_graph_find(c->g, out))
        return imp_fail(c, "node '%s' (Constant): output '%s' is produced twice", name, out);
    if (np->n_attribute != 1)
        return imp_node_fail(c, name, "Constant", "needs exactly one value attribute, has %zu", np->n_attribute);
    const Onnx__AttributeProto *a = np->attribute[0];
    ir_tensor *t = NULL;
    int64_t n = 1;
    if (!strcmp(a->name, "value")) {
        char *what = npu_arena_printf(c->g->arena, "node '%s' (Constant, opset %d): value", name, c->opset);
        if (!what)
            return imp_oom(c);
        if (!a->t)
            return imp_fail(c, "%s has no tensor", what);
        return imp_tensor(c, a->t, out, true, what, &t);
    } else if (!strcmp(a->name, "value_float")) {
        t = ir_const_new(c->g, out, IR_F32, 0, &n, &a->f);
    } else if (!strcmp(a->name, "value_int")) {
        t = ir_const_new(c->g, out, IR_I64, 0, &n, &a->i);
    } else if (!strcmp(a->name, "value_floats")) {
        n = (int64_t)a->n_floats;
        t = ir_const_new(c->g, out, IR_F32, 1, &n, a->floats);
    } else if (!strcmp(a->name, "value_ints")) {
        n = (int64_t)a->n_ints;
        t = ir_const_new(c->g, out, IR_I64, 1, &n, a->ints);
    } else {
        return imp_node_fail(c, name, "Constant", "attribute %s is not supported (supported: value, value_float, "
                                                  "value_floats, value_int, value_ints)",
                             a->name);
    }
    return t ? NPU_OK : imp_oom(c);
}

/* Pass 1: every node output (and Constant value) exists before inputs are
 * resolved, so nodes may come in any order (toposort puts them right). */
static npu_status declare_outputs(imp_ctx *c, const Onnx__NodeProto *np, const char *name, ir_op op)
{
    if (op == IR_OP_CONSTANT)
        return add_constant(c, np, name);
    for (size_t i = 0; i < np->n_output; i++) {
        const char *on = np->output[i];
        if (!*on)
            continue;
        if (ir_graph_find(c->g, on))
            return imp_fail(c, "node '%s' (%s): output '%s' is produced twice (or is also an input or initializer)",
                            name, np->op_type, on);
        if (!ir_tensor_new(c->g, on, IR_F32, 0, NULL))
            return imp_oom(c);
    }
    return NPU_OK;
}

static npu_status add_node(imp_ctx *c, const Onnx__NodeProto *np, const char *name, ir_op op)
{
    ir_graph *g = c->g;
    int nin = (int)np->n_input, nout = (int)np->n_output;
    while (nin > 0 && !np->input[nin - 1][0])
        nin--;
    while (nout > 0 && !np->output[nout - 1][0])
        nout--;
    ir_tensor **ins = npu_arena_alloc(g->arena, sizeof *ins * (size_t)(nin + nout + 1));
    if (!ins)
        return imp_oom(c);
    ir_tensor **outs = ins + nin;
    for (int i = 0; i < nin; i++) {
        if (!np->input[i][0])
            continue;
        if (!(ins[i] = ir_graph_find(g, np->input[i])))
            return imp_fail(c, "node '%s' (%s): input '%s' is not produced by any node, initializer or graph input",
                            name, np->op_type, np->input[i]);
    }
    for (int i = 0; i < nout; i++)
        outs[i] = np->output[i][0] ? ir_graph_find(g, np->output[i]) : NULL;
    ir_node *n = ir_node_new(g, op, name, nin, ins, nout, outs);
    if (!n)
        return imp_oom(c);
    return imp_convert_attrs(c, np, n);
}

/* ---- inference and folding ------------------------------------------------ */

/* Softmax/LogSoftmax before opset 13 normalize the flattened [axis:] block;
 * from 13 one axis. When the dims after axis are not all 1 the old form
 * becomes Flatten -> Softmax(axis=1) -> Reshape, so later stages see one form. */
static npu_status old_softmax(imp_ctx *c, ir_node *n, ir_node **pre, ir_node **post)
{
    *pre = *post = NULL;
    ir_tensor *x = n->inputs[0];
    int64_t axis = ir_attr_int(n, "axis", 1);
    if (axis < -x->rank || axis > x->rank - 1 || x->rank == 0)
        return imp_node_fail(c, n->name, ir_op_name(n->op), "axis %lld is out of range for rank %d", (long long)axis,
                             x->rank);
    if (axis < 0)
        axis += x->rank;
    int64_t inner = 1;
    for (int i = (int)axis + 1; i < x->rank; i++)
        inner *= x->dims[i];
    if (!ir_set_int(c->g, n, "axis", axis))
        return imp_oom(c);
    if (inner == 1)
        return NPU_OK;
    ir_graph *g = c->g;
    ir_tensor *y = n->outputs[0];
    ir_tensor *flat = ir_tensor_new(g, NULL, x->dtype, 0, NULL);
    ir_tensor *soft = ir_tensor_new(g, NULL, x->dtype, 0, NULL);
    int64_t r = x->rank;
    ir_tensor *shape = ir_const_new(g, NULL, IR_I64, 1, &r, x->dims);
    char *n1 = npu_arena_printf(g->arena, "%s/flatten", n->name), *n2 = npu_arena_printf(g->arena, "%s/reshape", n->name);
    if (!flat || !soft || !shape || !n1 || !n2)
        return imp_oom(c);
    ir_tensor *rin[2] = {soft, shape};
    if (!(*pre = ir_node_new(g, IR_OP_FLATTEN, n1, 1, &x, 1, &flat)) || !ir_set_int(g, *pre, "axis", axis) ||
        !(*post = ir_node_new(g, IR_OP_RESHAPE, n2, 2, rin, 1, &y)) || !ir_set_int(g, n, "axis", 1))
        return imp_oom(c);
    n->inputs[0] = flat;
    n->outputs[0] = soft;
    soft->producer = n;
    return NPU_OK;
}

static bool all_inputs_constant(const ir_node *n)
{
    if (n->n_inputs == 0)
        return false;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && !n->inputs[i]->data)
            return false;
    return true;
}

/* Shape of a static tensor is known now; any other node with constant
 * inputs is evaluated by the reference kernels, except Quantize/Dequantize,
 * whose parameters the quantizer reads, and nodes too big to be worth it. */
static npu_status fold(imp_ctx *c, ir_node *n)
{
    ir_graph *g = c->g;
    if (n->op == IR_OP_SHAPE) {
        ir_tensor *x = n->inputs[0], *y = n->outputs[0];
        int64_t s = ir_attr_int(n, "start", 0);
        if (!(y->data = npu_arena_alloc(g->arena, sizeof(int64_t) * (size_t)(y->dims[0] + 1))))
            return imp_oom(c);
        memcpy(y->data, x->dims + s, sizeof(int64_t) * (size_t)y->dims[0]);
        n->dead = true;
        return NPU_OK;
    }
    if (!all_inputs_constant(n) || n->op == IR_OP_QUANTIZE_LINEAR || n->op == IR_OP_DEQUANTIZE_LINEAR)
        return NPU_OK;
    size_t bytes = 0;
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i])
            bytes += ir_tensor_bytes(n->outputs[i]);
    const ref_op_entry *e = ref_lookup_node(n);
    if (bytes > IMP_FOLD_MAX_BYTES || !e || !e->run)
        return NPU_OK; /* stays a node; opt's constant folding may take it later */
    npu_status st = ref_eval_node(g, n, c->err);
    if (st)
        return npu_err_prefix(c->err, "%s", c->path);
    n->dead = true;
    return NPU_OK;
}

static npu_status infer_and_fold(imp_ctx *c, ir_node *n)
{
    npu_status st = ir_infer_node(c->g, n, c->err);
    if (st)
        return npu_err_prefix(c->err, "%s", c->path);
    return fold(c, n);
}

static npu_status process(imp_ctx *c)
{
    ir_graph *g = c->g;
    int n0 = g->n_nodes;
    for (int i = 0; i < n0; i++) {
        ir_node *n = g->nodes[i], *pre = NULL, *post = NULL;
        npu_status st;
        if (c->opset < 13 && (n->op == IR_OP_SOFTMAX || n->op == IR_OP_LOG_SOFTMAX) &&
            (st = old_softmax(c, n, &pre, &post)))
            return st;
        if ((pre && (st = infer_and_fold(c, pre))) || (st = infer_and_fold(c, n)) ||
            (post && (st = infer_and_fold(c, post))))
            return st;
    }
    return g->n_nodes > n0 ? ir_graph_toposort(g, c->err) : NPU_OK;
}

/* A pool's ceil_mode output that the model declares one larger in spatial
 * dims where shape inference dropped a last window starting past the input
 * and its begin padding (src/ir/shape.c, as onnxruntime and PyTorch; ONNX's
 * own shape inference before 1.16 kept it): the declared size, which the
 * reference pools also take (src/numerics/nn.c), when nothing reads the
 * output. */
static bool pool_keeps_last_window(const imp_ctx *c, const ir_tensor *t, const Onnx__TensorShapeProto *sp)
{
    const ir_node *n = t->producer;
    if (!n || (n->op != IR_OP_MAX_POOL && n->op != IR_OP_AVERAGE_POOL) || n->outputs[0] != t ||
        !ir_attr_int(n, "ceil_mode", 0) || (int)sp->n_dim != t->rank || t->rank < 3)
        return false;
    for (int i = 0; i < c->g->n_nodes; i++)
        for (int j = 0; j < c->g->nodes[i]->n_inputs; j++)
            if (c->g->nodes[i]->inputs[j] == t)
                return false;
    int64_t s[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
    int nsp = t->rank - 2;
    if (ir_attr_ints(n, "strides", s, nsp) != nsp || ir_attr_ints(n, "pads", pads, 2 * nsp) != 2 * nsp)
        return false;
    bool any = false;
    for (int i = 0; i < t->rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
        if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || d->dim_value == t->dims[i])
            continue;
        int k = i - 2;
        if (k < 0 || d->dim_value != t->dims[i] + 1 || t->dims[i] * s[k] < n->inputs[0]->dims[i] + pads[k])
            return false;
        any = true;
    }
    return any;
}

/* Graph outputs must exist; declared dtypes and static dims must match. */
static npu_status check_output(imp_ctx *c, const Onnx__ValueInfoProto *vi, ir_tensor *t)
{
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return NPU_OK;
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    ir_dtype dt;
    if (tt->has_elem_type && tt->elem_type && (!ir_dtype_from_onnx(tt->elem_type, &dt) || dt != t->dtype)) {
        int computed = 0; /* the ONNX name of the IR dtype, so both sides read alike */
        for (int k = 1; k <= 16 && !computed; k++)
            if (ir_dtype_from_onnx(k, &dt) && dt == t->dtype)
                computed = k;
        return imp_fail(c, "graph output '%s' is declared %s but computes %s", vi->name,
                        imp_onnx_dtype_name(tt->elem_type),
                        computed ? imp_onnx_dtype_name(computed) : ir_dtype_name(t->dtype));
    }
    if (!tt->shape)
        return NPU_OK;
    bool ok = (int)tt->shape->n_dim == t->rank;
    for (int i = 0; ok && i < t->rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        ok = d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || d->dim_value == t->dims[i];
    }
    if (!ok && pool_keeps_last_window(c, t, tt->shape)) {
        for (int i = 0; i < t->rank; i++)
            if (tt->shape->dim[i]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
                t->dims[i] = tt->shape->dim[i]->dim_value;
        return NPU_OK;
    }
    if (!ok) {
        char inferred[160], declared[200];
        size_t k = (size_t)snprintf(inferred, sizeof inferred, "[");
        for (int i = 0; i < t->rank && k < sizeof inferred; i++)
            k += (size_t)snprintf(inferred + k, sizeof inferred - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
        k = (size_t)snprintf(declared, sizeof declared, "[");
        for (size_t i = 0; i < tt->shape->n_dim && k < sizeof declared; i++) {
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
                k += (size_t)snprintf(declared + k, sizeof declared - k, "%s%lld", i ? "," : "",
                                      (long long)d->dim_value);
            else
                k += (size_t)snprintf(declared + k, sizeof declared - k, "%s?", i ? "," : "");
        }
        return imp_fail(c, "graph output '%s' is declared with shape %s], but its inferred shape is %s]", vi->name,
                        declared, inferred);
    }
    return NPU_OK;
}

static const char *node_name(imp_ctx *c, const Onnx__NodeProto *np, size_t i)
{
    if (np->name && *np->name)
        return np->name;
    return npu_arena_printf(c->g->arena, "%s_%zu", np->op_type && *np->op_type ? np->op_type : "node", i);
}

npu_status imp_build_graph(imp_ctx *c)
{
    const Onnx__GraphProto *gp = c->gp;
    ir_graph *g = c->g;
    npu_status st;
    if (!(g->name = npu_arena_strdup(g->arena, gp->name ? gp->name : "")))
        return imp_oom(c);
    if (gp->n_sparse_initializer)
        return imp_fail(c, "sparse initializers are not supported");
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name)
            return imp_fail(c, "initializer %zu has no name", i);
        char *what = npu_arena_printf(g->arena, "initializer '%s'", tp->name);
        ir_tensor *t;
        if (!what)
            return imp_oom(c);
        if ((st = imp_tensor(c, tp, tp->name, true, what, &t)))
            return st;
    }
    g->inputs = npu_arena_alloc(g->arena, sizeof *g->inputs * (gp->n_input + 1));
    g->outputs = npu_arena_alloc(g->arena, sizeof *g->outputs * (gp->n_output + 1));
    if (!g->inputs || !g->outputs)
        return imp_oom(c);
    if ((st = check_overrides(c)))
        return st;
    for (size_t i = 0; i < gp->n_input; i++) {
        const ir_tensor *t = gp->input[i]->name ? ir_graph_find(g, gp->input[i]->name) : NULL;
        if (t && t->data)
            continue; /* an initializer listed as input (IR < 4 style): a constant */
        if ((st = add_input(c, gp->input[i])))
            return st;
    }
    const char **names = npu_arena_alloc(g->arena, sizeof *names * (gp->n_node + 1));
    ir_op *ops = npu_arena_alloc(g->arena, sizeof *ops * (gp->n_node + 1));
    if (!names || !ops)
        return imp_oom(c);
    for (size_t i = 0; i < gp->n_node; i++) {
        if (!(names[i] = node_name(c, gp->node[i], i)))
            return imp_oom(c);
        if ((st = imp_check_node(c, gp->node[i], names[i], &ops[i])) ||
            (st = declare_outputs(c, gp->node[i], names[i], ops[i])))
            return st;
    }
    for (size_t i = 0; i < gp->n_node; i++)
        if (ops[i] != IR_OP_CONSTANT && (st = add_node(c, gp->node[i], names[i], ops[i])))
            return st;
    if (!gp->n_output)
        return imp_fail(c, "the graph has no outputs");
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *on = gp->output[i]->name ? gp->output[i]->name : "";
        ir_tensor *t = ir_graph_find(g, on);
        if (!t)
            return imp_fail(c, "graph output '%s' is not produced by any node, initializer or input", on);
        if (t->flags & IR_TENSOR_OUTPUT)
            return imp_fail(c, "graph output '%s' is listed twice", on);
        t->flags |= IR_TENSOR_OUTPUT;
        g->outputs[g->n_outputs++] = t;
    }
    if ((st = ir_graph_toposort(g, c->err)))
        return npu_err_prefix(c->err, "%s", c->path);
    if ((st = process(c)))
        return st;
    for (size_t i = 0; i < gp->n_output; i++)
        if ((st = check_output(c, gp->output[i], g->outputs[i])))
            return st;
    ir_graph_compact(g);
    if ((st = ir_graph_verify(g, c->err)))
        return npu_err_prefix(c->err, "%s: internal error after import", c->path);
    return NPU_OK;
}
