/* Host-step records: structural checks and checks against the tensor table
 * (rt/npurt_ops.h). Everything a kernel will index is tied here to a tensor
 * size, so a record that passes cannot make a kernel read or write outside
 * its tensors; the kernels check the rest of their parameters themselves. */
#include "rt/npurt_ops_internal.h"

#include <string.h>

typedef struct kspec {
    const char *name;
    uint32_t fixed; /* bytes of the parameter block before its arrays */
    int32_t n_in;   /* -1: one or more */
    int32_t n_out;
} kspec;

static const kspec specs[NPURT_K_COUNT] = {
    [NPURT_K_QUANTIZE] = {"QUANTIZE", sizeof(npurt_p_qdq), 1, 1},
    [NPURT_K_DEQUANTIZE] = {"DEQUANTIZE", sizeof(npurt_p_qdq), 1, 1},
    [NPURT_K_QCONV] = {"QCONV", sizeof(npurt_p_qconv), 3, 1},
    [NPURT_K_QFC] = {"QFC", sizeof(npurt_p_qfc), 3, 1},
    [NPURT_K_QBMM] = {"QBMM", sizeof(npurt_p_qbmm), 2, 1},
    [NPURT_K_QMAXPOOL] = {"QMAXPOOL", sizeof(npurt_p_qpool), 1, 1},
    [NPURT_K_QAVGPOOL] = {"QAVGPOOL", sizeof(npurt_p_qpool), 1, 1},
    [NPURT_K_QGLOBALAVGPOOL] = {"QGLOBALAVGPOOL", sizeof(npurt_p_qpool), 1, 1},
    [NPURT_K_QBINARY] = {"QBINARY", sizeof(npurt_p_qbinary), 2, 1},
    [NPURT_K_QREQUANT] = {"QREQUANT", sizeof(npurt_p_qrequant), 1, 1},
    [NPURT_K_QLUT] = {"QLUT", sizeof(npurt_p_qlut), 2, 1},
    [NPURT_K_QCONCAT] = {"QCONCAT", sizeof(npurt_p_qconcat), -1, 1},
    [NPURT_K_COPY] = {"COPY", sizeof(npurt_p_copy), 1, 1},
    [NPURT_K_SOFTMAX] = {"SOFTMAX", sizeof(npurt_p_softmax), 1, 1},
    [NPURT_K_UNARY_F32] = {"UNARY_F32", sizeof(npurt_p_unary), 1, 1},
    [NPURT_K_BINARY_F32] = {"BINARY_F32", sizeof(npurt_p_binary), 2, 1},
    [NPURT_K_TRANSPOSE] = {"TRANSPOSE", sizeof(npurt_p_transpose), 1, 1},
    [NPURT_K_REDUCE_F32] = {"REDUCE_F32", sizeof(npurt_p_reduce), 1, 1},
    [NPURT_K_NODE] = {"NODE", sizeof(npurt_p_node), -1, -1}, /* rt/npurt_node.c checks the rest */
};

const char *npurt_kernel_name(uint32_t kernel)
{
    return kernel < NPURT_K_COUNT && specs[kernel].name ? specs[kernel].name : "?";
}

int npurt_fault_at(npurt_fault *f, uint32_t at, const char *msg, int32_t a, int32_t b)
{
    f->msg = msg;
    f->a = a;
    f->b = b;
    f->at = at;
    return -1;
}

int npurt_kernel_fault(npurt_fault *f, nk_status st, int indexed)
{
    return npurt_fault_at(f, 0,
                          st == NK_EUNSUPPORTED ? "the kernel does not support these parameters"
                          : indexed             ? "the kernel rejected its parameters (or an index is out of range)"
                                                : "the kernel rejected its parameters",
                          0, 0);
}

/* Products of record dims saturate far above any tensor size (4 GiB), so a
 * wrapped product can never match a size by accident. */
uint64_t npurt_mul(uint64_t a, uint64_t b)
{
    const uint64_t cap = (uint64_t)1 << 40;
    if (a > cap || b > cap)
        return cap + 1;
    uint64_t r = a * b;
    return r > cap ? cap + 1 : r;
}

int npurt_nonneg(const int32_t *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] < 0)
            return 0;
    return 1;
}

uint64_t npurt_shape_numel(const npurt_p_shape *s)
{
    uint64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n = npurt_mul(n, (uint64_t)s->dims[i]);
    return n;
}

int npurt_shape_ok(const npurt_p_shape *s)
{
    return s->rank >= 0 && s->rank <= NPURT_REC_MAX_RANK && npurt_nonneg(s->dims, s->rank);
}

/* a and b broadcast (numpy) exactly to out. */
int npurt_broadcasts(const npurt_p_shape *a, const npurt_p_shape *b, const npurt_p_shape *out)
{
    if (!npurt_shape_ok(a) || !npurt_shape_ok(b) || !npurt_shape_ok(out))
        return 0;
    nk_shape as, bs, os, got;
    npurt_to_shape(a, &as);
    npurt_to_shape(b, &bs);
    npurt_to_shape(out, &os);
    if (nk_shape_broadcast(&as, &bs, &got) != NK_OK || got.rank != os.rank)
        return 0;
    for (int i = 0; i < os.rank; i++)
        if (got.dims[i] != os.dims[i])
            return 0;
    return 1;
}

/* Bytes of the arrays that follow the fixed parameter block. */
static uint64_t array_bytes(uint32_t kernel, const void *p, uint32_t n_in)
{
    switch (kernel) {
    case NPURT_K_QUANTIZE:
    case NPURT_K_DEQUANTIZE: return 8u * (uint64_t)((const npurt_p_qdq *)p)->n_scales;
    case NPURT_K_QCONV: return 8u * (uint64_t)(uint32_t)((const npurt_p_qconv *)p)->n_mults;
    case NPURT_K_QFC: return 8u * (uint64_t)(uint32_t)((const npurt_p_qfc *)p)->n_mults;
    case NPURT_K_QCONCAT: return (uint64_t)n_in * sizeof(npurt_p_qconcat_in);
    default: return 0;
    }
}

/* Quantize/DequantizeLinear: finite positive scales that split the tensor evenly. */
static int check_qdq(const npurt_p_qdq *q, uint32_t at, npurt_fault *f)
{
    const float *s = (const float *)(q + 1);
    if (q->n_scales == 0)
        return npurt_fault_at(f, at, "no scales", 0, 0);
    if (q->n_scales > 1 && (q->inner == 0 || q->count % (q->inner * (uint64_t)q->n_scales)))
        return npurt_fault_at(f, at, "%d elements do not split into %d scales per axis", (int32_t)q->count,
                     (int32_t)q->n_scales);
    for (uint32_t i = 0; i < q->n_scales; i++)
        if (!(s[i] > 0.0f) || s[i] > 3.4e38f)
            return npurt_fault_at(f, at + (uint32_t)sizeof *q + 4 * i, "scale %d is not finite and positive",
                         (int32_t)i, 0);
    return 0;
}

/* The quantized convolution, as nk_qconv2d will take it; *scratch gets its scratch bytes. */
static int check_qconv(const npurt_p_qconv *r, uint32_t at, uint32_t *scratch, npurt_fault *f)
{
    nk_qconv2d_params k;
    if (r->n_mults != 1 && r->n_mults != r->c_out)
        return npurt_fault_at(f, at, "%d multipliers for %d output channels", r->n_mults, r->c_out);
    npurt_to_qconv(r, &k);
    size_t need = nk_qconv2d_scratch_size(&k); /* 0: nk_qconv2d rejects the parameters */
    if (!need && k.in_zp == 0 && k.out_zp == 0) {
        /* an int16 clamp (A16W8): the geometry as the int8 form takes it; nk_qconv2d_a16 needs no
         * scratch and checks its clamp itself */
        k.act_min = -128, k.act_max = 127;
        need = nk_qconv2d_scratch_size(&k);
    }
    if (!need || need > 0x7fffffffu)
        return npurt_fault_at(f, at, "convolution parameters the kernel rejects", 0, 0);
    *scratch = (uint32_t)need;
    return 0;
}

/* The quantized fully connected layer and its weight-format flags; *scratch
 * gets the bytes of the transposed weights and the kernel's scratch. */
static int check_qfc(const npurt_p_qfc *r, uint32_t at, uint32_t *scratch, npurt_fault *f)
{
    if (r->batch <= 0 || r->in_features <= 0 || r->out_features <= 0)
        return npurt_fault_at(f, at, "empty matrix", 0, 0);
    if (r->n_mults != 1 && r->n_mults != r->out_features)
        return npurt_fault_at(f, at, "%d multipliers for %d outputs", r->n_mults, r->out_features);
    if ((r->transpose != 0 && r->transpose != 1) || (r->w_i4 != 0 && r->w_i4 != 1) ||
        (r->w_format != NK_W_I8 && r->w_format != NK_W_I4) || (r->transpose && r->w_format != NK_W_I8) ||
        (!r->transpose && r->w_i4 != (r->w_format == NK_W_I4)))
        return npurt_fault_at(f, at, "inconsistent weight format, transpose and int4 flags", 0, 0);
    nk_qfc_params k;
    npurt_to_qfc(r, &k);
    uint64_t need = npurt_qfc_transposed_bytes(r) + (uint64_t)nk_qfc_scratch_size(&k);
    if (need > 0x7fffffffu)
        return npurt_fault_at(f, at, "weights too large", 0, 0);
    *scratch = (uint32_t)need;
    return 0;
}

/* The quantized batched matmul's shapes (batches of 1 broadcast); *scratch gets its scratch bytes. */
static int check_qbmm(const npurt_p_qbmm *r, uint32_t at, uint32_t *scratch, npurt_fault *f)
{
    if (r->batch <= 0 || r->m <= 0 || r->k <= 0 || r->n <= 0 ||
        (r->a_batch != 1 && r->a_batch != r->batch) || (r->b_batch != 1 && r->b_batch != r->batch))
        return npurt_fault_at(f, at, "bad matmul shapes", 0, 0);
    nk_qbmm_params k;
    npurt_to_qbmm(r, &k);
    size_t need = nk_qbmm_scratch_size(&k);
    if (need > 0x7fffffffu)
        return npurt_fault_at(f, at, "matmul too large", 0, 0);
    *scratch = (uint32_t)need;
    return 0;
}

/* The quantized concat: the n_in input chunks make up the output row. */
static int check_qconcat(const npurt_p_qconcat *r, uint32_t at, uint32_t n_in, npurt_fault *f)
{
    const npurt_p_qconcat_in *in = (const npurt_p_qconcat_in *)(r + 1);
    int64_t sum = 0;
    if (r->outer < 0 || r->row < 0)
        return npurt_fault_at(f, at, "negative concat geometry", 0, 0);
    for (uint32_t i = 0; i < n_in; i++) {
        if (in[i].chunk < 0 || (in[i].same != 0 && in[i].same != 1))
            return npurt_fault_at(f, at + (uint32_t)(sizeof *r + i * sizeof *in), "bad concat input %d",
                         (int32_t)i, 0);
        sum += in[i].chunk;
    }
    if (sum != r->row)
        return npurt_fault_at(f, at, "concat inputs give rows of %d elements, the output %d", (int32_t)sum,
                     r->row);
    return 0;
}

/* Transpose: an element size, a valid shape and a permutation of its axes. */
static int check_transpose(const npurt_p_transpose *r, uint32_t at, npurt_fault *f)
{
    uint32_t seen = 0;
    if (r->elem_size != 1 && r->elem_size != 2 && r->elem_size != 4 && r->elem_size != 8)
        return npurt_fault_at(f, at, "element size %d", r->elem_size, 0);
    if (!npurt_shape_ok(&r->in_shape))
        return npurt_fault_at(f, at, "bad input shape", 0, 0);
    for (int d = 0; d < r->in_shape.rank; d++) {
        if (r->perm[d] < 0 || r->perm[d] >= r->in_shape.rank || (seen & (1u << r->perm[d])))
            return npurt_fault_at(f, at, "perm is not a permutation of 0..%d", r->in_shape.rank - 1, 0);
        seen |= 1u << r->perm[d];
    }
    return 0;
}

/* The float reduction: op, axes and fused activation, and an output count that matches the kept axes. */
static int check_reduce(const npurt_p_reduce *r, uint32_t at, npurt_fault *f)
{
    if (r->op < NK_RED_SUM || r->op > NK_RED_MIN || !npurt_shape_ok(&r->x_shape) ||
        (r->axes_mask >> r->x_shape.rank) != 0)
        return npurt_fault_at(f, at, "unknown reduce op %d or bad axes", r->op, 0);
    if (r->act.kind < NK_ACT_NONE || r->act.kind > NK_ACT_LEAKY_RELU)
        return npurt_fault_at(f, at, "unknown fused activation %d", r->act.kind, 0);
    uint64_t kept = 1;
    for (int d = 0; d < r->x_shape.rank; d++)
        if (!(r->axes_mask & (1u << d)))
            kept = npurt_mul(kept, (uint64_t)r->x_shape.dims[d]);
    if (r->out_count < 0 || kept != (uint64_t)r->out_count)
        return npurt_fault_at(f, at, "the reduction keeps %d values, the record says %d",
                     kept > 0x7fffffff ? INT32_MAX : (int32_t)kept, r->out_count);
    return 0;
}

/* Kernel parameters beyond the layout; *scratch gets the bytes needed. */
static int check_params(uint32_t kernel, const void *p, uint32_t at, uint32_t n_in, uint32_t *scratch,
                        npurt_fault *f)
{
    *scratch = 0;
    switch (kernel) {
    case NPURT_K_QUANTIZE:
    case NPURT_K_DEQUANTIZE: return check_qdq(p, at, f);
    case NPURT_K_QCONV: return check_qconv(p, at, scratch, f);
    case NPURT_K_QFC: return check_qfc(p, at, scratch, f);
    case NPURT_K_QBMM: return check_qbmm(p, at, scratch, f);
    case NPURT_K_QMAXPOOL:
    case NPURT_K_QAVGPOOL:
    case NPURT_K_QGLOBALAVGPOOL: {
        const npurt_p_qpool *r = p;
        if (r->n <= 0 || r->c <= 0 || r->h_in <= 0 || r->w_in <= 0 || r->h_out < 0 || r->w_out < 0)
            return npurt_fault_at(f, at, "bad pool shapes", 0, 0);
        if (kernel == NPURT_K_QGLOBALAVGPOOL && (r->h_out != 1 || r->w_out != 1))
            return npurt_fault_at(f, at, "a global pool has a 1x1 output, not %dx%d", r->h_out, r->w_out);
        return 0;
    }
    case NPURT_K_QBINARY: {
        const npurt_p_qbinary *r = p;
        if (r->op < NK_QADD || r->op > NK_QMAX)
            return npurt_fault_at(f, at, "unknown binary op %d", r->op, 0);
        if (!npurt_broadcasts(&r->a_shape, &r->b_shape, &r->out_shape))
            return npurt_fault_at(f, at, "input shapes do not broadcast to the output shape", 0, 0);
        return 0;
    }
    case NPURT_K_QREQUANT:
        return ((const npurt_p_qrequant *)p)->count < 0 ? npurt_fault_at(f, at, "negative count", 0, 0) : 0;
    case NPURT_K_QLUT: return ((const npurt_p_qlut *)p)->count < 0 ? npurt_fault_at(f, at, "negative count", 0, 0) : 0;
    case NPURT_K_QCONCAT: return check_qconcat(p, at, n_in, f);
    case NPURT_K_COPY: return 0;
    case NPURT_K_SOFTMAX: {
        const npurt_p_softmax *r = p;
        if (r->outer < 0 || r->len < 0 || r->inner < 0 || (r->log != 0 && r->log != 1))
            return npurt_fault_at(f, at, "bad softmax geometry", 0, 0);
        return 0;
    }
    case NPURT_K_UNARY_F32: {
        const npurt_p_unary *r = p;
        if (r->op < NK_UN_RELU || r->op >= NK_UN_COUNT || r->count < 0)
            return npurt_fault_at(f, at, "unknown unary op %d or negative count", r->op, 0);
        if (r->act.kind < NK_ACT_NONE || r->act.kind > NK_ACT_LEAKY_RELU)
            return npurt_fault_at(f, at, "unknown fused activation %d", r->act.kind, 0);
        return 0;
    }
    case NPURT_K_BINARY_F32: {
        const npurt_p_binary *r = p;
        if (r->op < NK_BIN_ADD || r->op > NK_BIN_PRELU)
            return npurt_fault_at(f, at, "unknown binary op %d", r->op, 0);
        if (r->act.kind < NK_ACT_NONE || r->act.kind > NK_ACT_LEAKY_RELU)
            return npurt_fault_at(f, at, "unknown fused activation %d", r->act.kind, 0);
        if (!npurt_broadcasts(&r->a_shape, &r->b_shape, &r->out_shape))
            return npurt_fault_at(f, at, "input shapes do not broadcast to the output shape", 0, 0);
        return 0;
    }
    case NPURT_K_TRANSPOSE: return check_transpose(p, at, f);
    case NPURT_K_REDUCE_F32: return check_reduce(p, at, f);
    default: return npurt_fault_at(f, 4, "unknown kernel id %d", (int32_t)kernel, 0);
    }
}

int npurt_rec_check(const void *rec, uint32_t size, uint32_t *scratch, npurt_fault *f)
{
    const npurt_rec_header *h = rec;
    if (size >= sizeof *h && size % 4 == 0 && h->version == NPURT_REC_VERSION && h->kernel == NPURT_K_NODE &&
        h->size == size)
        return npurt_node_check(rec, size, scratch, f);
    return npurt_rec_check_fixed(rec, size, scratch, f);
}

int npurt_rec_check_fixed(const void *rec, uint32_t size, uint32_t *scratch, npurt_fault *f)
{
    const npurt_rec_header *h = rec;
    *scratch = 0;
    if (size < sizeof *h || size % 4)
        return npurt_fault_at(f, 0, "record of %d bytes (a header is %d, sizes are multiples of 4)", (int32_t)size,
                     (int32_t)sizeof *h);
    if (h->version != NPURT_REC_VERSION)
        return npurt_fault_at(f, 0, "record version %d, this runtime knows %d", (int32_t)h->version,
                     NPURT_REC_VERSION);
    if (h->kernel == 0 || h->kernel >= NPURT_K_COUNT)
        return npurt_fault_at(f, 4, "unknown kernel id %d", (int32_t)h->kernel, 0);
    if (h->size != size)
        return npurt_fault_at(f, 8, "record says %d bytes, its step %d", (int32_t)h->size, (int32_t)size);
    if (h->kernel == NPURT_K_NODE)
        return npurt_fault_at(f, 4, "a NODE record, and the op table has no NODE kernel", 0, 0);
    const kspec *k = &specs[h->kernel];
    if (h->n_inputs > NPURT_REC_MAX_IO || h->n_outputs > NPURT_REC_MAX_IO ||
        (k->n_in >= 0 ? h->n_inputs != (uint32_t)k->n_in : h->n_inputs == 0) ||
        h->n_outputs != (uint32_t)k->n_out)
        return npurt_fault_at(f, 12, "%d inputs and %d outputs: not what this kernel takes", (int32_t)h->n_inputs,
                     (int32_t)h->n_outputs);
    uint32_t at = (uint32_t)sizeof *h + 4u * (h->n_inputs + h->n_outputs);
    if ((uint64_t)at + k->fixed > size)
        return npurt_fault_at(f, at, "truncated: %d bytes, the parameters need %d", (int32_t)size,
                     (int32_t)(at + k->fixed));
    const void *p = (const uint8_t *)rec + at;
    uint64_t total = (uint64_t)at + k->fixed + array_bytes(h->kernel, p, h->n_inputs);
    if (total != size)
        return npurt_fault_at(f, at, "record of %d bytes, its parameters make %d", (int32_t)size,
                     total > 0x7fffffff ? INT32_MAX : (int32_t)total);
    return check_params(h->kernel, p, at, h->n_inputs, scratch, f);
}

/* ---- against the tensor table ---------------------------------------------- */

#define DT(x) (1u << NPURT_DT_##x)
#define A16OK (DT(I8) | DT(I16)) /* an activation slot: int8, or int16 (A16W8, rt/npurt_ops_run.c checks the widths agree) */

/* What one tensor slot must be: a dtype out of a set, and either an element
 * count or (bytes_exact) a byte size. */
typedef struct slot_req {
    uint32_t dtypes;
    uint64_t n;
    int bytes_exact;
    int optional;
} slot_req;

static void req(slot_req *r, uint32_t dtypes, uint64_t n)
{
    r->dtypes = dtypes;
    r->n = n;
    r->bytes_exact = 0;
    r->optional = 0;
}

/* The quantized kernels' slots (int8 tensors, int32 biases, int4 weights);
 * 0 when h's kernel is not one of them. */
static int quant_requirements(const npurt_rec_header *h, const void *p, slot_req *r)
{
    uint32_t ni = h->n_inputs;
    switch (h->kernel) {
    case NPURT_K_QUANTIZE:
        req(&r[0], DT(F32), ((const npurt_p_qdq *)p)->count);
        req(&r[1], DT(I8) | DT(U8) | DT(I16), ((const npurt_p_qdq *)p)->count);
        break;
    case NPURT_K_DEQUANTIZE:
        req(&r[0], DT(I8) | DT(U8) | DT(I16) | DT(I32), ((const npurt_p_qdq *)p)->count);
        req(&r[1], DT(F32), ((const npurt_p_qdq *)p)->count);
        break;
    case NPURT_K_QCONV: {
        const npurt_p_qconv *c = p;
        uint64_t hw_in = npurt_mul((uint64_t)c->h_in, (uint64_t)c->w_in),
                 hw_out = npurt_mul((uint64_t)c->h_out, (uint64_t)c->w_out);
        uint64_t kk = npurt_mul(npurt_mul((uint64_t)(c->c_in / c->groups), (uint64_t)c->k_h), (uint64_t)c->k_w);
        req(&r[0], A16OK, npurt_mul(npurt_mul((uint64_t)c->n, (uint64_t)c->c_in), hw_in));
        req(&r[1], c->w_format == NK_W_I4 ? DT(I4) : DT(I8), npurt_mul((uint64_t)c->c_out, kk));
        req(&r[2], DT(I32), (uint64_t)c->c_out);
        r[2].optional = 1;
        req(&r[3], A16OK, npurt_mul(npurt_mul((uint64_t)c->n, (uint64_t)c->c_out), hw_out));
        break;
    }
    case NPURT_K_QFC: {
        const npurt_p_qfc *c = p;
        uint64_t K = (uint64_t)c->in_features, N = (uint64_t)c->out_features, M = (uint64_t)c->batch;
        req(&r[0], A16OK, npurt_mul(M, K));
        req(&r[1], (c->transpose ? c->w_i4 : c->w_format == NK_W_I4) ? DT(I4) : DT(I8), npurt_mul(K, N));
        req(&r[2], DT(I32), N);
        r[2].optional = 1;
        req(&r[3], A16OK, npurt_mul(M, N));
        break;
    }
    case NPURT_K_QBMM: {
        const npurt_p_qbmm *c = p;
        req(&r[0], DT(I8), npurt_mul(npurt_mul((uint64_t)c->a_batch, (uint64_t)c->m), (uint64_t)c->k));
        req(&r[1], DT(I8), npurt_mul(npurt_mul((uint64_t)c->b_batch, (uint64_t)c->k), (uint64_t)c->n));
        req(&r[2], DT(I8), npurt_mul(npurt_mul((uint64_t)c->batch, (uint64_t)c->m), (uint64_t)c->n));
        break;
    }
    case NPURT_K_QMAXPOOL:
    case NPURT_K_QAVGPOOL:
    case NPURT_K_QGLOBALAVGPOOL: {
        const npurt_p_qpool *c = p;
        uint64_t nc = npurt_mul((uint64_t)c->n, (uint64_t)c->c);
        req(&r[0], A16OK, npurt_mul(nc, npurt_mul((uint64_t)c->h_in, (uint64_t)c->w_in)));
        req(&r[1], A16OK, npurt_mul(nc, npurt_mul((uint64_t)c->h_out, (uint64_t)c->w_out)));
        break;
    }
    case NPURT_K_QBINARY: {
        const npurt_p_qbinary *c = p;
        req(&r[0], A16OK, npurt_shape_numel(&c->a_shape));
        req(&r[1], A16OK, npurt_shape_numel(&c->b_shape));
        req(&r[2], A16OK, npurt_shape_numel(&c->out_shape));
        break;
    }
    case NPURT_K_QREQUANT:
        req(&r[0], A16OK, (uint64_t)((const npurt_p_qrequant *)p)->count);
        req(&r[1], A16OK, (uint64_t)((const npurt_p_qrequant *)p)->count);
        break;
    case NPURT_K_QLUT:
        req(&r[0], A16OK, (uint64_t)((const npurt_p_qlut *)p)->count);
        req(&r[1], A16OK, 256);
        req(&r[2], A16OK, (uint64_t)((const npurt_p_qlut *)p)->count);
        break;
    case NPURT_K_QCONCAT: {
        const npurt_p_qconcat *c = p;
        const npurt_p_qconcat_in *in = (const npurt_p_qconcat_in *)(c + 1);
        for (uint32_t i = 0; i < ni; i++)
            req(&r[i], A16OK, npurt_mul((uint64_t)c->outer, (uint64_t)in[i].chunk));
        req(&r[ni], A16OK, npurt_mul((uint64_t)c->outer, (uint64_t)c->row));
        break;
    }
    default: return 0;
    }
    return 1;
}

/* The float and data-movement kernels' slots; nothing for a kernel without
 * tensor requirements. */
static void float_requirements(const npurt_rec_header *h, const void *p, slot_req *r)
{
    switch (h->kernel) {
    case NPURT_K_COPY:
        for (int i = 0; i < 2; i++) {
            req(&r[i], 0xffffffffu, ((const npurt_p_copy *)p)->bytes);
            r[i].bytes_exact = 1;
        }
        break;
    case NPURT_K_SOFTMAX: {
        const npurt_p_softmax *c = p;
        uint64_t n = npurt_mul(npurt_mul((uint64_t)c->outer, (uint64_t)c->len), (uint64_t)c->inner);
        req(&r[0], DT(F32), n);
        req(&r[1], DT(F32), n);
        break;
    }
    case NPURT_K_UNARY_F32:
        req(&r[0], DT(F32), (uint64_t)((const npurt_p_unary *)p)->count);
        req(&r[1], DT(F32), (uint64_t)((const npurt_p_unary *)p)->count);
        break;
    case NPURT_K_BINARY_F32: {
        const npurt_p_binary *c = p;
        req(&r[0], DT(F32), npurt_shape_numel(&c->a_shape));
        req(&r[1], DT(F32), npurt_shape_numel(&c->b_shape));
        req(&r[2], DT(F32), npurt_shape_numel(&c->out_shape));
        break;
    }
    case NPURT_K_TRANSPOSE: {
        const npurt_p_transpose *c = p;
        for (int i = 0; i < 2; i++) {
            req(&r[i], 0xffffffffu, npurt_mul(npurt_shape_numel(&c->in_shape), (uint64_t)c->elem_size));
            r[i].bytes_exact = 1;
        }
        break;
    }
    case NPURT_K_REDUCE_F32: {
        const npurt_p_reduce *c = p;
        req(&r[0], DT(F32), npurt_shape_numel(&c->x_shape));
        req(&r[1], DT(F32), (uint64_t)c->out_count);
        break;
    }
    default: break;
    }
}

static void requirements(const npurt_rec_header *h, const void *p, slot_req *r)
{
    if (!quant_requirements(h, p, r))
        float_requirements(h, p, r);
}

/* Kernels that read each element before writing the same element, so that
 * the memory plan may put the output over an input (src/memplan, in place). */
static int in_place_ok(uint32_t kernel)
{
    return kernel == NPURT_K_QBINARY || kernel == NPURT_K_QREQUANT || kernel == NPURT_K_QLUT ||
           kernel == NPURT_K_UNARY_F32 || kernel == NPURT_K_BINARY_F32;
}

/* A concat input that the memory plan wrote straight into its slice of the
 * output (docs/memplan.md, concat elision): one row, and the input's bytes
 * are exactly those at its prefix, counted in the output's element size
 * (2 bytes for int16, A16W8). run_qconcat then copies nothing for it, or
 * requantizes it in place. */
static int qconcat_in_slice(const npurt_rec_header *h, const npub_tensor *x, const npub_tensor *y, uint32_t i)
{
    const npurt_p_qconcat *r = npurt_rec_params(h);
    const npurt_p_qconcat_in *in = (const npurt_p_qconcat_in *)(r + 1);
    if (h->kernel != NPURT_K_QCONCAT || r->outer != 1)
        return 0;
    uint64_t es = npurt_qact_bytes(y->dtype), prefix = 0;
    for (uint32_t j = 0; j < i; j++)
        prefix += (uint64_t)in[j].chunk * es;
    return (uint64_t)x->offset == (uint64_t)y->offset + prefix && (uint64_t)x->size == (uint64_t)in[i].chunk * es;
}

/* An output may share an input's bytes only exactly and only where the
 * kernel allows it (or, for a concat, as its slice); any other overlap
 * would make the kernel read what it has already written (and memcpy
 * undefined). */
static int check_overlap(const npub_view *v, const npurt_rec_header *h, const uint32_t *slot, npurt_fault *f)
{
    for (uint32_t o = h->n_inputs; o < h->n_inputs + h->n_outputs; o++) {
        if (slot[o] == NPUB_NONE)
            continue;
        const npub_tensor *y = &v->tensors[slot[o]];
        for (uint32_t i = 0; i < h->n_inputs; i++) {
            if (slot[i] == NPUB_NONE)
                continue;
            const npub_tensor *x = &v->tensors[slot[i]];
            if (x->region != y->region || (uint64_t)x->offset >= (uint64_t)y->offset + y->size ||
                (uint64_t)y->offset >= (uint64_t)x->offset + x->size || !x->size || !y->size)
                continue;
            if (qconcat_in_slice(h, x, y, i))
                continue;
            if (!in_place_ok(h->kernel) || x->offset != y->offset || x->size != y->size)
                return npurt_fault_at(f, (uint32_t)sizeof *h + 4u * o,
                                      "output slot %d overlaps input slot %d in memory", (int32_t)o, (int32_t)i);
        }
    }
    return 0;
}

int npurt_rec_check_tensors(const npub_view *v, const void *rec, npurt_fault *f)
{
    const npurt_rec_header *h = rec;
    if (h->kernel == NPURT_K_NODE)
        return npurt_node_check_tensors(v, rec, f);
    return npurt_rec_check_tensors_fixed(v, rec, f);
}

int npurt_rec_check_tensors_fixed(const npub_view *v, const void *rec, npurt_fault *f)
{
    const npurt_rec_header *h = rec;
    if (h->kernel == NPURT_K_NODE)
        return npurt_fault_at(f, 4, "a NODE record, and the op table has no NODE kernel", 0, 0);
    const uint32_t *slot = npurt_rec_tensors(rec);
    uint32_t n = h->n_inputs + h->n_outputs;
    slot_req r[NPURT_REC_MAX_IO * 2];
    if (n > NPURT_REC_MAX_IO * 2)
        return npurt_fault_at(f, 0, "%d tensor slots, more than a record holds", (int32_t)n, 0);
    /* only the slots in use: the whole table is 3 KB, a byte loop on the host CPU */
    memset(r, 0, sizeof r[0] * n);
    requirements(h, npurt_rec_params(rec), r);
    if (h->kernel == NPURT_K_QLUT && n == 3 && slot[0] < v->n_tensors && v->tensors[slot[0]].dtype == NPURT_DT_I16)
        r[1].n = NK_LUT16_SIZE, r[1].dtypes = DT(I16); /* the interpolated int16 table */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t at = (uint32_t)sizeof *h + 4u * i;
        int32_t si = (int32_t)i;
        if (slot[i] == NPUB_NONE) {
            if (!r[i].optional)
                return npurt_fault_at(f, at, "tensor slot %d is empty", si, 0);
            continue;
        }
        if (slot[i] >= v->n_tensors)
            return npurt_fault_at(f, at, "tensor slot %d names tensor %d, out of range", si, (int32_t)slot[i]);
        const npub_tensor *t = &v->tensors[slot[i]];
        if (!(r[i].dtypes & (1u << t->dtype)))
            return npurt_fault_at(f, at, "tensor slot %d has dtype %d, which this kernel does not take there", si,
                         t->dtype);
        uint64_t bytes = r[i].bytes_exact ? r[i].n : (r[i].n * npub_dtype_bits(t->dtype) + 7) / 8;
        if (t->size != bytes)
            return npurt_fault_at(f, at, "tensor slot %d holds %d bytes, not what the kernel uses", si,
                         (int32_t)t->size);
        if (i >= h->n_inputs && t->region == NPUB_REGION_CONST)
            return npurt_fault_at(f, at, "output slot %d is a constant tensor", si, 0);
    }
    if ((h->kernel == NPURT_K_COPY || h->kernel == NPURT_K_TRANSPOSE) &&
        v->tensors[slot[0]].dtype != v->tensors[slot[1]].dtype)
        return npurt_fault_at(f, (uint32_t)sizeof *h, "a copy changes the dtype", 0, 0);
    if (h->kernel == NPURT_K_TRANSPOSE &&
        (uint32_t)((const npurt_p_transpose *)npurt_rec_params(rec))->elem_size * 8 !=
            npub_dtype_bits(v->tensors[slot[0]].dtype))
        return npurt_fault_at(f, (uint32_t)sizeof *h, "the element size is not the dtype's", 0, 0);
    return check_overlap(v, h, slot, f);
}
