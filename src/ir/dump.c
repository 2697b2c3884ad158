/* Textual IR: one line per node, meant for people (--dump-ir, --dump-after). */
#include "ir/ir.h"

#include <inttypes.h>

static void dump_type(const ir_tensor *t, FILE *out)
{
    fprintf(out, "%s", ir_dtype_name(t->dtype));
    if (!t->shape_known) {
        fprintf(out, "[?]");
        return;
    }
    fputc('[', out);
    for (int i = 0; i < t->rank; i++)
        fprintf(out, "%s%" PRId64, i ? "," : "", t->dims[i]);
    fputc(']', out);
    if (t->quant) {
        const ir_quant *q = t->quant;
        if (q->axis < 0)
            fprintf(out, "{s=%g,z=%d%s}", (double)q->scale[0], (int)q->zero_point[0],
                    t->flags & IR_TENSOR_INT4_CODES ? ",int4" : "");
        else
            fprintf(out, "{axis=%d,s[%d]}", q->axis, q->count);
    }
}

static void dump_value(const ir_tensor *t, FILE *out)
{
    fprintf(out, "%%%s:", t->name);
    dump_type(t, out);
    if (!t->data)
        return;
    int64_t n = ir_tensor_numel(t);
    /* small integer constants (shapes, axes) are worth seeing */
    if (n <= 8 && (t->dtype == IR_I64 || t->dtype == IR_I32)) {
        fputc('=', out);
        for (int64_t i = 0; i < n; i++) {
            int64_t v = t->dtype == IR_I64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
            fprintf(out, "%s%" PRId64, i ? "," : "", v);
        }
    } else if (n <= 4 && t->dtype == IR_F32) {
        fputc('=', out);
        for (int64_t i = 0; i < n; i++)
            fprintf(out, "%s%g", i ? "," : "", (double)((const float *)t->data)[i]);
    } else {
        fprintf(out, " const");
    }
}

static void dump_attr(const ir_attr *a, FILE *out)
{
    fprintf(out, "%s=", a->name);
    switch (a->kind) {
    case IR_ATTR_INT: fprintf(out, "%" PRId64, a->i); break;
    case IR_ATTR_FLOAT: fprintf(out, "%g", (double)a->f); break;
    case IR_ATTR_STRING: fprintf(out, "\"%s\"", a->s); break;
    case IR_ATTR_INTS:
        fputc('[', out);
        for (int i = 0; i < a->n; i++)
            fprintf(out, "%s%" PRId64, i ? "," : "", a->ints[i]);
        fputc(']', out);
        break;
    case IR_ATTR_FLOATS:
        fputc('[', out);
        for (int i = 0; i < a->n; i++)
            fprintf(out, "%s%g", i ? "," : "", (double)a->floats[i]);
        fputc(']', out);
        break;
    case IR_ATTR_TENSOR:
        if (a->t)
            dump_type(a->t, out);
        break;
    }
}

static const char *act_name(ir_act_kind k)
{
    switch (k) {
    case IR_ACT_RELU: return "relu";
    case IR_ACT_CLIP: return "clip";
    case IR_ACT_LEAKY_RELU: return "leaky_relu";
    default: return "none";
    }
}

void ir_dump(const ir_graph *g, FILE *out)
{
    fprintf(out, "graph %s (opset %d)\n", g->name && *g->name ? g->name : "main", g->opset);
    for (int i = 0; i < g->n_inputs; i++) {
        fprintf(out, "  input ");
        dump_value(g->inputs[i], out);
        fputc('\n', out);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead)
            continue;
        fprintf(out, "  ");
        for (int j = 0; j < n->n_outputs; j++) {
            if (!n->outputs[j])
                continue;
            fprintf(out, "%s", j ? ", " : "");
            dump_value(n->outputs[j], out);
        }
        fprintf(out, " = %s(", ir_op_name(n->op));
        for (int j = 0; j < n->n_inputs; j++) {
            if (j)
                fprintf(out, ", ");
            if (n->inputs[j])
                dump_value(n->inputs[j], out);
            else
                fprintf(out, "_");
        }
        fputc(')', out);
        if (n->n_attrs || n->act.kind != IR_ACT_NONE) {
            fprintf(out, " {");
            for (int j = 0; j < n->n_attrs; j++) {
                if (j)
                    fprintf(out, ", ");
                dump_attr(&n->attrs[j], out);
            }
            if (n->act.kind != IR_ACT_NONE)
                fprintf(out, "%sact=%s(%g,%g,%g)", n->n_attrs ? ", " : "", act_name(n->act.kind), (double)n->act.lo,
                        (double)n->act.hi, (double)n->act.alpha);
            fputc('}', out);
        }
        fprintf(out, "  # %s\n", n->name);
    }
    for (int i = 0; i < g->n_outputs; i++)
        fprintf(out, "  output %%%s\n", g->outputs[i]->name);
}
