/* What the importer accepts of each op, per opset: input and output counts
 * and attributes (from the ONNX operator schemas of opsets 11 to 17), and the
 * attribute values the rest of npucc implements. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/imp_internal.h"

#define MANY INT_MAX

/* Attribute lists are "name:type" words, type one of i f s is fs t sp ss;
 * a trailing '!' marks a required attribute. */
typedef struct op_schema {
    ir_op op;
    int since; /* this entry holds from opset `since` until the next entry */
    int min_in, max_in, min_out, max_out;
    const char *attrs;
} op_schema;

#define CONV_ATTRS "auto_pad:s dilations:is group:i kernel_shape:is pads:is strides:is"
#define RESIZE_ATTRS "coordinate_transformation_mode:s cubic_coeff_a:f exclude_outside:i extrapolation_value:f " \
                     "mode:s nearest_mode:s"

static const op_schema schemas[] = {
    {IR_OP_CONSTANT, 11, 0, 0, 1, 1, "sparse_value:sp value:t"},
    {IR_OP_CONSTANT, 12, 0, 0, 1, 1,
     "sparse_value:sp value:t value_float:f value_floats:fs value_int:i value_ints:is value_string:s value_strings:ss"},
    {IR_OP_IDENTITY, 1, 1, 1, 1, 1, ""},
    {IR_OP_DROPOUT, 10, 1, 1, 1, 2, "ratio:f"},
    {IR_OP_DROPOUT, 12, 1, 3, 1, 2, "seed:i"},
    {IR_OP_CONV, 11, 2, 3, 1, 1, CONV_ATTRS},
    {IR_OP_CONV_TRANSPOSE, 11, 2, 3, 1, 1, CONV_ATTRS " output_padding:is output_shape:is"},
    {IR_OP_GEMM, 11, 2, 3, 1, 1, "alpha:f beta:f transA:i transB:i"},
    {IR_OP_MATMUL, 9, 2, 2, 1, 1, ""},
    {IR_OP_BATCH_NORM, 9, 5, 5, 1, 5, "epsilon:f momentum:f"},
    {IR_OP_BATCH_NORM, 14, 5, 5, 1, 3, "epsilon:f momentum:f training_mode:i"},
    {IR_OP_MAX_POOL, 11, 1, 1, 1, 2,
     "auto_pad:s ceil_mode:i dilations:is kernel_shape:is! pads:is storage_order:i strides:is"},
    {IR_OP_AVERAGE_POOL, 11, 1, 1, 1, 1, "auto_pad:s ceil_mode:i count_include_pad:i kernel_shape:is! pads:is strides:is"},
    {IR_OP_GLOBAL_AVERAGE_POOL, 1, 1, 1, 1, 1, ""},
    {IR_OP_GLOBAL_MAX_POOL, 1, 1, 1, 1, 1, ""},
    {IR_OP_ADD, 7, 2, 2, 1, 1, ""},
    {IR_OP_SUB, 7, 2, 2, 1, 1, ""},
    {IR_OP_MUL, 7, 2, 2, 1, 1, ""},
    {IR_OP_DIV, 7, 2, 2, 1, 1, ""},
    {IR_OP_POW, 7, 2, 2, 1, 1, ""},
    {IR_OP_MAX, 8, 1, MANY, 1, 1, ""},
    {IR_OP_MIN, 8, 1, MANY, 1, 1, ""},
    {IR_OP_EQUAL, 11, 2, 2, 1, 1, ""},
    {IR_OP_LESS, 9, 2, 2, 1, 1, ""},
    {IR_OP_GREATER, 9, 2, 2, 1, 1, ""},
    {IR_OP_WHERE, 9, 3, 3, 1, 1, ""},
    {IR_OP_PRELU, 9, 2, 2, 1, 1, ""},
    {IR_OP_RELU, 6, 1, 1, 1, 1, ""},
    {IR_OP_LEAKY_RELU, 6, 1, 1, 1, 1, "alpha:f"},
    {IR_OP_CLIP, 11, 1, 3, 1, 1, ""},
    {IR_OP_SIGMOID, 6, 1, 1, 1, 1, ""},
    {IR_OP_TANH, 6, 1, 1, 1, 1, ""},
    {IR_OP_HARD_SIGMOID, 6, 1, 1, 1, 1, "alpha:f beta:f"},
    {IR_OP_HARD_SWISH, 14, 1, 1, 1, 1, ""},
    {IR_OP_ERF, 9, 1, 1, 1, 1, ""},
    {IR_OP_SOFTPLUS, 1, 1, 1, 1, 1, ""},
    {IR_OP_EXP, 6, 1, 1, 1, 1, ""},
    {IR_OP_LOG, 6, 1, 1, 1, 1, ""},
    {IR_OP_SQRT, 6, 1, 1, 1, 1, ""},
    {IR_OP_RECIPROCAL, 6, 1, 1, 1, 1, ""},
    {IR_OP_NEG, 6, 1, 1, 1, 1, ""},
    {IR_OP_ABS, 6, 1, 1, 1, 1, ""},
    /* ONNX Gelu is opset 20, above IMP_OPSET_MAX: taken at any opset (as exporters' contrib Gelu) */
    {IR_OP_GELU, 1, 1, 1, 1, 1, "approximate:s"},
    {IR_OP_NOT, 1, 1, 1, 1, 1, ""},
    {IR_OP_CAST, 9, 1, 1, 1, 1, "to:i!"},
    {IR_OP_SOFTMAX, 11, 1, 1, 1, 1, "axis:i"},
    {IR_OP_LOG_SOFTMAX, 11, 1, 1, 1, 1, "axis:i"},
    {IR_OP_LAYER_NORM, 17, 2, 3, 1, 3, "axis:i epsilon:f stash_type:i"},
    {IR_OP_REDUCE_MEAN, 11, 1, 1, 1, 1, "axes:is keepdims:i"},
    {IR_OP_REDUCE_SUM, 11, 1, 1, 1, 1, "axes:is keepdims:i"},
    {IR_OP_REDUCE_SUM, 13, 1, 2, 1, 1, "keepdims:i noop_with_empty_axes:i"},
    {IR_OP_REDUCE_MAX, 11, 1, 1, 1, 1, "axes:is keepdims:i"},
    {IR_OP_REDUCE_MIN, 11, 1, 1, 1, 1, "axes:is keepdims:i"},
    {IR_OP_CONCAT, 11, 1, MANY, 1, 1, "axis:i!"},
    {IR_OP_SPLIT, 11, 1, 1, 1, MANY, "axis:i split:is"},
    {IR_OP_SPLIT, 13, 1, 2, 1, MANY, "axis:i"},
    {IR_OP_SLICE, 10, 3, 5, 1, 1, ""},
    {IR_OP_RESHAPE, 5, 2, 2, 1, 1, ""},
    {IR_OP_RESHAPE, 14, 2, 2, 1, 1, "allowzero:i"},
    {IR_OP_FLATTEN, 11, 1, 1, 1, 1, "axis:i"},
    {IR_OP_SQUEEZE, 11, 1, 1, 1, 1, "axes:is"},
    {IR_OP_SQUEEZE, 13, 1, 2, 1, 1, ""},
    {IR_OP_UNSQUEEZE, 11, 1, 1, 1, 1, "axes:is!"},
    {IR_OP_UNSQUEEZE, 13, 2, 2, 1, 1, ""},
    {IR_OP_TRANSPOSE, 1, 1, 1, 1, 1, "perm:is"},
    {IR_OP_PAD, 11, 2, 3, 1, 1, "mode:s"},
    {IR_OP_RESIZE, 11, 3, 4, 1, 1, RESIZE_ATTRS},
    {IR_OP_RESIZE, 13, 1, 4, 1, 1, RESIZE_ATTRS},
    {IR_OP_UPSAMPLE, 10, 2, 2, 1, 1, "mode:s"}, /* deprecated, still found in exports */
    {IR_OP_GATHER, 11, 2, 2, 1, 1, "axis:i"},
    {IR_OP_EXPAND, 8, 2, 2, 1, 1, ""},
    {IR_OP_TILE, 6, 2, 2, 1, 1, ""},
    {IR_OP_SHAPE, 1, 1, 1, 1, 1, ""},
    {IR_OP_SHAPE, 15, 1, 1, 1, 1, "end:i start:i"},
    {IR_OP_CONSTANT_OF_SHAPE, 9, 1, 1, 1, 1, "value:t"},
    {IR_OP_RANGE, 11, 3, 3, 1, 1, ""},
    {IR_OP_QUANTIZE_LINEAR, 10, 2, 3, 1, 1, ""},
    {IR_OP_QUANTIZE_LINEAR, 13, 2, 3, 1, 1, "axis:i"},
    {IR_OP_DEQUANTIZE_LINEAR, 10, 2, 3, 1, 1, ""},
    {IR_OP_DEQUANTIZE_LINEAR, 13, 2, 3, 1, 1, "axis:i"},
    {IR_OP_QLINEAR_CONV, 10, 8, 9, 1, 1, CONV_ATTRS},
    {IR_OP_QLINEAR_MATMUL, 10, 8, 8, 1, 1, ""},
};

/* The entry in force at opset v, or NULL; *first gets the earliest since. */
static const op_schema *find_schema(ir_op op, int v, int *first)
{
    const op_schema *best = NULL;
    *first = 0;
    for (size_t i = 0; i < sizeof schemas / sizeof schemas[0]; i++) {
        const op_schema *s = &schemas[i];
        if (s->op != op)
            continue;
        if (!*first || s->since < *first)
            *first = s->since;
        if (s->since <= v && (!best || s->since > best->since))
            best = s;
    }
    return best;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "Abs, Add, ..." : every ONNX op the importer accepts, sorted. */
static void supported_ops(char *buf, size_t size)
{
    const char *names[IR_OP_COUNT];
    int n = 0;
    for (size_t i = 0; i < sizeof schemas / sizeof schemas[0]; i++) {
        const char *nm = ir_op_name(schemas[i].op);
        if (!n || strcmp(names[n - 1], nm))
            names[n++] = nm;
    }
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k + 1 < size; i++) {
        size_t len = strlen(names[i]) + 2;
        if (k + len >= size)
            break;
        memcpy(buf + k, i ? ", " : "", i ? 2 : 0);
        k += i ? 2 : 0;
        memcpy(buf + k, names[i], len - 2);
        k += len - 2;
        buf[k] = '\0';
    }
}

static const char *count_range(char *buf, size_t size, int lo, int hi)
{
    if (lo == hi)
        snprintf(buf, size, "%d", lo);
    else if (hi == MANY)
        snprintf(buf, size, "at least %d", lo);
    else
        snprintf(buf, size, "%d to %d", lo, hi);
    return buf;
}

static const char *attr_type_word(Onnx__AttributeProto__AttributeType t)
{
    switch (t) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return "i";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return "f";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return "s";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return "is";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return "fs";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return "t";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR: return "sp";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return "ss";
    default: return "?";
    }
}

static const char *type_word_long(const char *w)
{
    static const char *const map[][2] = {{"i", "an int"},        {"f", "a float"},   {"s", "a string"},
                                         {"is", "a list of ints"}, {"fs", "a list of floats"}, {"t", "a tensor"},
                                         {"sp", "a sparse tensor"}, {"ss", "a list of strings"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i][0], w))
            return map[i][1];
    return "an unsupported kind (graph, type proto or tensor list)";
}

/* Finds attribute `name` in spec: copies its type word, sets *required. */
static bool spec_lookup(const char *spec, const char *name, char *type, bool *required)
{
    size_t nl = strlen(name);
    for (const char *p = spec; *p;) {
        const char *colon = strchr(p, ':'), *end = strchr(p, ' ');
        if (!end)
            end = p + strlen(p);
        if (colon && colon < end && (size_t)(colon - p) == nl && !strncmp(p, name, nl)) {
            size_t tl = (size_t)(end - colon - 1);
            *required = tl && colon[tl] == '!';
            tl -= *required;
            memcpy(type, colon + 1, tl);
            type[tl] = '\0';
            return true;
        }
        p = *end ? end + 1 : end;
    }
    return false;
}

/* "a, b, c" from the names in spec. */
static void spec_names(const char *spec, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = '\0';
    for (const char *p = spec; *p && k + 4 < size;) {
        const char *colon = strchr(p, ':'), *end = strchr(p, ' ');
        if (!end)
            end = p + strlen(p);
        size_t len = (size_t)(colon - p);
        if (k + len + 3 >= size)
            break;
        if (k)
            buf[k++] = ',', buf[k++] = ' ';
        memcpy(buf + k, p, len);
        k += len;
        buf[k] = '\0';
        p = *end ? end + 1 : end;
    }
}

static const Onnx__AttributeProto *find_attr(const Onnx__NodeProto *np, const char *name)
{
    for (size_t i = 0; i < np->n_attribute; i++)
        if (np->attribute[i]->name && !strcmp(np->attribute[i]->name, name))
            return np->attribute[i];
    return NULL;
}

/* A string attribute's value must be one of `allowed` (space-separated). */
static npu_status check_choice(imp_ctx *c, const Onnx__NodeProto *np, const char *name, const char *op,
                               const char *attr, const char *allowed, const char *shown)
{
    const Onnx__AttributeProto *a = find_attr(np, attr);
    if (!a || !a->has_s)
        return NPU_OK;
    size_t len = a->s.len;
    for (const char *p = allowed; *p;) {
        const char *end = strchr(p, ' ');
        if (!end)
            end = p + strlen(p);
        if ((size_t)(end - p) == len && !memcmp(p, a->s.data, len))
            return NPU_OK;
        p = *end ? end + 1 : end;
    }
    return imp_node_fail(c, name, op, "attribute %s = '%.*s' is not supported (supported: %s)", attr,
                         (int)(len > 64 ? 64 : len), (const char *)a->s.data, shown);
}

static npu_status check_values(imp_ctx *c, const Onnx__NodeProto *np, const char *name, ir_op op)
{
    const char *ot = np->op_type;
    npu_status st = NPU_OK;
    const Onnx__AttributeProto *a;
    switch (op) {
    case IR_OP_CONV: case IR_OP_CONV_TRANSPOSE: case IR_OP_MAX_POOL: case IR_OP_AVERAGE_POOL:
    case IR_OP_QLINEAR_CONV:
        st = check_choice(c, np, name, ot, "auto_pad", "NOTSET SAME_UPPER SAME_LOWER VALID",
                          "NOTSET, SAME_UPPER, SAME_LOWER, VALID");
        if (!st && op == IR_OP_MAX_POOL && np->n_output > 1 && np->output[1][0])
            st = imp_node_fail(c, name, ot, "the Indices output is not supported");
        break;
    case IR_OP_PAD:
        st = check_choice(c, np, name, ot, "mode", "constant reflect edge", "constant, reflect, edge");
        break;
    case IR_OP_RESIZE:
        if ((st = check_choice(c, np, name, ot, "mode", "nearest linear cubic", "nearest, linear, cubic")))
            break;
        if ((st = check_choice(c, np, name, ot, "coordinate_transformation_mode",
                               "half_pixel pytorch_half_pixel align_corners asymmetric tf_half_pixel_for_nn "
                               "tf_crop_and_resize",
                               "half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn, "
                               "tf_crop_and_resize")))
            break;
        st = check_choice(c, np, name, ot, "nearest_mode", "round_prefer_floor round_prefer_ceil floor ceil",
                          "round_prefer_floor, round_prefer_ceil, floor, ceil");
        break;
    case IR_OP_GELU:
        st = check_choice(c, np, name, ot, "approximate", "none tanh", "none, tanh");
        break;
    case IR_OP_UPSAMPLE:
        st = check_choice(c, np, name, ot, "mode", "nearest linear", "nearest, linear");
        break;
    case IR_OP_BATCH_NORM:
        if ((a = find_attr(np, "training_mode")) && a->i)
            st = imp_node_fail(c, name, ot, "training_mode = %lld is not supported (supported: 0)", (long long)a->i);
        for (size_t i = 1; !st && i < np->n_output; i++)
            if (np->output[i][0])
                st = imp_node_fail(c, name, ot, "training outputs (running mean and variance) are not supported");
        break;
    case IR_OP_CAST: {
        ir_dtype dt;
        if ((a = find_attr(np, "to")) && !ir_dtype_from_onnx((int)a->i, &dt))
            st = imp_node_fail(c, name, ot,
                               "to = %lld (%s) is not supported (supported: FLOAT, FLOAT16, INT64, INT32, INT16, "
                               "INT8, UINT8, BOOL)",
                               (long long)a->i, imp_onnx_dtype_name((int)a->i));
        break;
    }
    default: break;
    }
    return st;
}

npu_status imp_check_node(imp_ctx *c, const Onnx__NodeProto *np, const char *name, ir_op *op_out)
{
    const char *ot = np->op_type ? np->op_type : "";
    if (!*ot)
        return imp_fail(c, "node '%s' has no op_type", name);
    if (np->domain && *np->domain && strcmp(np->domain, "ai.onnx"))
        return imp_fail(c, "node '%s' (%s): domain '%s' is not supported (only the default ONNX domain, opsets %d to %d)",
                        name, ot, np->domain, IMP_OPSET_MIN, IMP_OPSET_MAX);
    ir_op op = ir_op_from_name(ot);
    int first = 0;
    const op_schema *s = op == IR_OP_COUNT ? NULL : find_schema(op, c->opset, &first);
    if (!s && first)
        return imp_node_fail(c, name, ot, "this op needs opset %d or later", first);
    if (!s) {
        char list[900];
        supported_ops(list, sizeof list);
        return imp_node_fail(c, name, ot, "unsupported op; supported ops: %s", list);
    }
    int nin = (int)np->n_input, nout = (int)np->n_output;
    while (nin > 0 && !np->input[nin - 1][0])
        nin--; /* trailing "" are omitted optional inputs */
    char range[40];
    if (nin < s->min_in || nin > s->max_in)
        return imp_node_fail(c, name, ot, "has %d inputs; expected %s", nin, count_range(range, sizeof range, s->min_in, s->max_in));
    for (int i = 0; i < s->min_in; i++)
        if (!np->input[i][0])
            return imp_node_fail(c, name, ot, "required input %d is empty", i);
    if (nout < s->min_out || nout > s->max_out)
        return imp_node_fail(c, name, ot, "has %d outputs; expected %s", nout,
                             count_range(range, sizeof range, s->min_out, s->max_out));
    if (!np->output[0][0])
        return imp_node_fail(c, name, ot, "its first output has no name");
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        const char *an = a->name ? a->name : "";
        char type[4];
        bool required;
        if (!spec_lookup(s->attrs, an, type, &required)) {
            char names[512];
            spec_names(s->attrs, names, sizeof names);
            return imp_node_fail(c, name, ot, "unknown attribute '%s' (%s at opset %d accepts: %s)", an, ot,
                                 c->opset, *names ? names : "none");
        }
        if (a->ref_attr_name && *a->ref_attr_name)
            return imp_node_fail(c, name, ot, "attribute '%s' refers to a function attribute", an);
        if (!a->has_type || strcmp(attr_type_word(a->type), type))
            return imp_node_fail(c, name, ot, "attribute '%s' must be %s, not %s", an, type_word_long(type),
                                 a->has_type ? type_word_long(attr_type_word(a->type)) : "untyped");
        for (size_t j = 0; j < i; j++)
            if (np->attribute[j]->name && !strcmp(np->attribute[j]->name, an))
                return imp_node_fail(c, name, ot, "attribute '%s' is given twice", an);
    }
    for (const char *p = s->attrs; *p;) {
        const char *end = strchr(p, ' ');
        if (!end)
            end = p + strlen(p);
        if (end[-1] == '!') {
            const char *colon = strchr(p, ':');
            char an[64];
            size_t len = (size_t)(colon - p);
            memcpy(an, p, len);
            an[len] = '\0';
            if (!find_attr(np, an))
                return imp_node_fail(c, name, ot, "required attribute '%s' is missing", an);
        }
        p = *end ? end + 1 : end;
    }
    *op_out = op;
    return check_values(c, np, name, op);
}

npu_status imp_convert_attrs(imp_ctx *c, const Onnx__NodeProto *np, ir_node *n)
{
    ir_graph *g = c->g;
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        ir_attr *ok = NULL;
        switch (a->type) {
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: ok = ir_set_int(g, n, a->name, a->i); break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: ok = ir_set_float(g, n, a->name, a->f); break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
            char *s = npu_arena_strndup(g->arena, a->has_s ? (const char *)a->s.data : "", a->has_s ? a->s.len : 0);
            ok = s ? ir_set_string(g, n, a->name, s) : NULL;
            break;
        }
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
            size_t cnt = a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS ? a->n_ints : a->n_floats;
            if (cnt > (size_t)(1 << 20))
                return imp_node_fail(c, n->name, ir_op_name(n->op), "attribute '%s' has too many values", a->name);
            ok = a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS ? ir_set_ints(g, n, a->name, (int)cnt, a->ints)
                                                                       : ir_set_floats(g, n, a->name, (int)cnt, a->floats);
            break;
        }
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
            ir_tensor *t = NULL;
            char *what = npu_arena_printf(g->arena, "node '%s' (%s, opset %d): attribute '%s'", n->name,
                                          ir_op_name(n->op), c->opset, a->name);
            if (!what)
                return imp_oom(c);
            if (!a->t)
                return imp_fail(c, "%s has no tensor", what);
            npu_status st = imp_tensor(c, a->t, a->name, false, what, &t);
            if (st)
                return st;
            ok = ir_set_tensor(g, n, a->name, t);
            break;
        }
        default:
            return imp_node_fail(c, n->name, ir_op_name(n->op), "attribute '%s' has an unsupported kind", a->name);
        }
        if (!ok)
            return imp_oom(c);
    }
    return NPU_OK;
}
