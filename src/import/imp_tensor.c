/* TensorProto payloads to IR constants: dtype mapping, raw_data and typed
 * storage, size checks before any allocation. */
#include <string.h>

#include "import/imp_internal.h"

/* raw_data is little-endian; so are every host and target npucc supports. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX importer assumes a little-endian host"
#endif

enum {
    T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_UINT16 = 4, T_INT16 = 5, T_INT32 = 6, T_INT64 = 7, T_STRING = 8,
    T_BOOL = 9, T_FLOAT16 = 10, T_DOUBLE = 11,
};

const char *imp_onnx_dtype_name(int t)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT",  "UINT8",  "INT8",      "UINT16",     "INT16",
                                        "INT32",     "INT64",  "STRING", "BOOL",      "FLOAT16",    "DOUBLE",
                                        "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

/* Bytes of one element as stored in raw_data. */
static size_t raw_elem_size(int t)
{
    switch (t) {
    case T_DOUBLE: case T_INT64: return 8;
    case T_FLOAT: case T_INT32: return 4;
    case T_FLOAT16: case T_INT16: return 2;
    default: return 1;
    }
}

/* int32_data carries every type narrower than 32 bits (float16 as its bit pattern). */
static npu_status fill_from_int32(imp_ctx *c, const char *what, int t, const int32_t *src, int64_t n, void *dst)
{
    int32_t lo = 0, hi = 0;
    switch (t) {
    case T_INT8: lo = -128, hi = 127; break;
    case T_UINT8: lo = 0, hi = 255; break;
    case T_INT16: lo = -32768, hi = 32767; break;
    case T_FLOAT16: lo = 0, hi = 65535; break;
    case T_BOOL: lo = 0, hi = 1; break;
    default: break;
    }
    for (int64_t i = 0; i < n; i++) {
        int32_t v = src[i];
        if (t != T_INT32 && (v < lo || v > hi))
            return imp_fail(c, "%s: value %d at index %lld does not fit %s", what, (int)v, (long long)i,
                            imp_onnx_dtype_name(t));
        switch (t) {
        case T_INT32: ((int32_t *)dst)[i] = v; break;
        case T_INT16: ((int16_t *)dst)[i] = (int16_t)v; break;
        case T_FLOAT16: ((uint16_t *)dst)[i] = (uint16_t)v; break;
        case T_INT8: ((int8_t *)dst)[i] = (int8_t)v; break;
        default: ((uint8_t *)dst)[i] = (uint8_t)v; break;
        }
    }
    return NPU_OK;
}

/* A tensor outside the graph's tensor list (attribute values). */
static ir_tensor *free_tensor(ir_graph *g, const char *name, ir_dtype dt, int rank, const int64_t *dims)
{
    ir_tensor *t = npu_arena_alloc(g->arena, sizeof *t);
    if (!t || !(t->name = npu_arena_strdup(g->arena, name)))
        return NULL;
    t->id = -1;
    t->dtype = dt;
    ir_tensor_set_shape(t, rank, dims);
    size_t nb = ir_tensor_bytes(t);
    t->data = npu_arena_alloc(g->arena, nb ? nb : 1);
    return t->data ? t : NULL;
}

npu_status imp_tensor(imp_ctx *c, const Onnx__TensorProto *tp, const char *name, bool reg, const char *what,
                      ir_tensor **out)
{
    int t = tp->has_data_type ? tp->data_type : 0;
    ir_dtype dt;
    if (t == T_DOUBLE)
        dt = IR_F32; /* double constants are rounded to float: npucc computes in float */
    else if (!ir_dtype_from_onnx(t, &dt))
        return imp_fail(c,
                        "%s: dtype %s is not supported (supported: FLOAT, FLOAT16, DOUBLE (converted to FLOAT), "
                        "INT64, INT32, INT16, INT8, UINT8, BOOL)",
                        what, imp_onnx_dtype_name(t));
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        const char *loc = "?";
        for (size_t i = 0; i < tp->n_external_data; i++)
            if (tp->external_data[i]->key && !strcmp(tp->external_data[i]->key, "location") &&
                tp->external_data[i]->value)
                loc = tp->external_data[i]->value;
        return imp_fail(c,
                        "%s: data is stored in an external file ('%s'); external data is not supported, save the "
                        "model with its tensors inside (onnx.save_model(m, path, save_as_external_data=False))",
                        what, loc);
    }
    if (tp->segment)
        return imp_fail(c, "%s: segmented tensors are not supported", what);
    if (tp->n_dims > IR_MAX_RANK)
        return imp_fail(c, "%s: rank %zu exceeds the supported %d", what, tp->n_dims, IR_MAX_RANK);
    int rank = (int)tp->n_dims;
    int64_t numel = 1, bound = 1, dims[IR_MAX_RANK] = {0}; /* never NULL: rank 0 is a known shape */
    for (int i = 0; i < rank; i++) {
        int64_t d = dims[i] = tp->dims[i];
        if (d < 0)
            return imp_fail(c, "%s: dimension %d is negative (%lld)", what, i, (long long)d);
        /* with 0 counted as 1, so an empty tensor's other dims stay bounded too */
        if (bound > IMP_MAX_NUMEL / (d ? d : 1))
            return imp_fail(c, "%s: shape is too large", what);
        bound *= d ? d : 1;
        numel *= d;
    }
    /* where the values are; checked against numel before allocating */
    size_t typed;
    switch (t) {
    case T_FLOAT: typed = tp->n_float_data; break;
    case T_INT64: typed = tp->n_int64_data; break;
    case T_DOUBLE: typed = tp->n_double_data; break;
    default: typed = tp->n_int32_data; break;
    }
    bool raw = tp->has_raw_data && tp->raw_data.len > 0;
    if (raw && typed)
        return imp_fail(c, "%s: has both raw_data and typed values", what);
    size_t esz = raw_elem_size(t);
    if (raw && (uint64_t)tp->raw_data.len != (uint64_t)numel * esz)
        return imp_fail(c, "%s: raw_data holds %zu bytes, but its shape and dtype %s need %llu", what,
                        tp->raw_data.len, imp_onnx_dtype_name(t), (unsigned long long)numel * esz);
    if (!raw && (uint64_t)typed != (uint64_t)numel)
        return imp_fail(c, "%s: has %zu values, but its shape needs %lld", what, typed, (long long)numel);
    ir_tensor *res;
    if (reg) {
        if (ir_graph_find(c->g, name))
            return imp_fail(c, "%s: the name '%s' is used twice", what, name);
        res = ir_const_new(c->g, name, dt, rank, dims, NULL);
    } else {
        res = free_tensor(c->g, name, dt, rank, dims);
    }
    if (!res)
        return imp_oom(c);
    void *dst = res->data;
    npu_status st = NPU_OK;
    if (t == T_DOUBLE) {
        for (int64_t i = 0; i < numel; i++) {
            double v;
            if (raw)
                memcpy(&v, tp->raw_data.data + 8 * i, 8);
            else
                v = tp->double_data[i];
            ((float *)dst)[i] = (float)v;
        }
    } else if (raw) {
        memcpy(dst, tp->raw_data.data, tp->raw_data.len);
        if (t == T_BOOL)
            for (int64_t i = 0; i < numel; i++)
                ((uint8_t *)dst)[i] = ((uint8_t *)dst)[i] != 0;
    } else if (t == T_FLOAT) {
        if (numel)
            memcpy(dst, tp->float_data, sizeof(float) * (size_t)numel);
    } else if (t == T_INT64) {
        if (numel)
            memcpy(dst, tp->int64_data, sizeof(int64_t) * (size_t)numel);
    } else {
        st = fill_from_int32(c, what, t, tp->int32_data, numel, dst);
    }
    *out = res;
    return st;
}
