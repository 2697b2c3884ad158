/* The quantization report: the float graph and the quantized graph run
 * side by side on calibration samples; every quantized activation is
 * dequantized and compared with its float original (same tensor name, ":q"
 * added by the quantizer), and the graph outputs give the overall cosine
 * similarity and SQNR. One sample of float activations is kept at a time. */
#include <math.h>
#include <string.h>

#include "quantize/quantize_internal.h"

double q_sqnr_db(double signal_energy, double noise_energy)
{
    if (noise_energy <= 0.0)
        return INFINITY;
    if (signal_energy <= 0.0)
        return -INFINITY;
    return 10.0 * log10(signal_energy / noise_energy);
}

typedef struct acc {
    double sig, noise;
} acc;

typedef struct cmp_ctx {
    const ir_graph *fg, *qg;
    npu_alloc alloc;
    float **fbuf;      /* per float tensor id: this sample's values */
    size_t *fbytes;
    int *layer_of;     /* per quant tensor id: report row, or -1 */
    const ir_tensor **orig; /* per quant tensor id: the float original */
    acc *layers;
    int n_layers;
    q_layer_sqnr *rows;
    bool ok;
} cmp_ctx;

static void keep_float(void *ud, const ir_node *n, const ir_tensor *t, const void *data)
{
    (void)n;
    cmp_ctx *c = ud;
    if (t->dtype != IR_F32 || t->id < 0 || t->id >= c->fg->n_tensors)
        return;
    size_t bytes = ir_tensor_bytes(t);
    if (!c->fbuf[t->id]) {
        if (!(c->fbuf[t->id] = npu_malloc(c->alloc, bytes))) {
            c->ok = false;
            return;
        }
        c->fbytes[t->id] = bytes;
    }
    memcpy(c->fbuf[t->id], data, bytes);
}

static void compare_quant(void *ud, const ir_node *n, const ir_tensor *t, const void *data)
{
    (void)n;
    cmp_ctx *c = ud;
    if (t->id < 0 || t->id >= c->qg->n_tensors || c->layer_of[t->id] < 0)
        return;
    const ir_tensor *o = c->orig[t->id];
    const float *f = c->fbuf[o->id];
    if (!f)
        return;
    acc *a = &c->layers[c->layer_of[t->id]];
    int64_t cnt = ir_tensor_numel(t);
    if (t->dtype == IR_F32) {
        const float *q = data;
        for (int64_t i = 0; i < cnt; i++) {
            double d = (double)q[i] - f[i];
            a->sig += (double)f[i] * f[i];
            a->noise += d * d;
        }
        return;
    }
    const int8_t *q = data;
    double s = t->quant->scale[0];
    int32_t zp = t->quant->zero_point[0];
    for (int64_t i = 0; i < cnt; i++) {
        double d = s * (q[i] - zp) - f[i];
        a->sig += (double)f[i] * f[i];
        a->noise += d * d;
    }
}

/* The float tensor a quantized-graph tensor stands for, or NULL. */
static const ir_tensor *original(const ir_graph *fg, const ir_tensor *t)
{
    char name[512];
    size_t len = strlen(t->name);
    if (t->dtype == IR_I8 && t->quant && t->quant->axis < 0 && len > 2 && !strcmp(t->name + len - 2, ":q") &&
        len - 2 < sizeof name) {
        memcpy(name, t->name, len - 2);
        name[len - 2] = '\0';
    } else if (t->dtype == IR_F32 && len < sizeof name) {
        memcpy(name, t->name, len + 1);
    } else {
        return NULL;
    }
    const ir_tensor *o = ir_graph_find(fg, name);
    return o && o->dtype == IR_F32 && !o->data && ir_tensor_numel(o) == ir_tensor_numel(t) ? o : NULL;
}

static int weight_bits(const ir_node *n)
{
    if ((n->op != IR_OP_CONV && n->op != IR_OP_GEMM) || n->n_inputs < 2 || !n->inputs[1]->data)
        return 0;
    return n->inputs[1]->dtype == IR_I4 ? 4 : n->inputs[1]->dtype == IR_I8 ? 8 : 0;
}

static void *zalloc(npu_alloc a, size_t n)
{
    void *p = npu_malloc(a, n);
    if (p)
        memset(p, 0, n);
    return p;
}

static npu_status setup(cmp_ctx *c, npu_err *err)
{
    size_t nf = (size_t)c->fg->n_tensors + 1, nq = (size_t)c->qg->n_tensors + 1;
    /* each zeroed as it comes: teardown frees whatever exists */
    c->fbuf = zalloc(c->alloc, sizeof *c->fbuf * nf);
    c->fbytes = zalloc(c->alloc, sizeof *c->fbytes * nf);
    c->layer_of = zalloc(c->alloc, sizeof *c->layer_of * nq);
    c->orig = zalloc(c->alloc, sizeof *c->orig * nq);
    c->layers = zalloc(c->alloc, sizeof *c->layers * nq);
    c->rows = zalloc(c->alloc, sizeof *c->rows * nq);
    if (!c->fbuf || !c->fbytes || !c->layer_of || !c->orig || !c->layers || !c->rows)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    for (size_t i = 0; i < nq; i++)
        c->layer_of[i] = -1;
    for (int i = 0; i < c->qg->n_nodes; i++) {
        const ir_node *n = c->qg->nodes[i];
        if (n->dead || n->op == IR_OP_QUANTIZE_LINEAR || n->op == IR_OP_DEQUANTIZE_LINEAR)
            continue;
        for (int k = 0; k < n->n_outputs; k++) {
            const ir_tensor *t = n->outputs[k], *o = original(c->fg, t);
            if (!o)
                continue;
            c->layer_of[t->id] = c->n_layers;
            c->orig[t->id] = o;
            c->rows[c->n_layers++] = (q_layer_sqnr){.node = n->name, .op = ir_op_name(n->op), .tensor = o->name,
                                                    .wbits = weight_bits(n)};
        }
    }
    return NPU_OK;
}

static void teardown(cmp_ctx *c)
{
    size_t nf = (size_t)c->fg->n_tensors + 1, nq = (size_t)c->qg->n_tensors + 1;
    if (c->fbuf && c->fbytes)
        for (size_t i = 0; i < nf; i++)
            if (c->fbuf[i])
                npu_free(c->alloc, c->fbuf[i], c->fbytes[i]);
    npu_free(c->alloc, c->fbuf, sizeof *c->fbuf * nf);
    npu_free(c->alloc, c->fbytes, sizeof *c->fbytes * nf);
    npu_free(c->alloc, c->layer_of, sizeof *c->layer_of * nq);
    npu_free(c->alloc, c->orig, sizeof *c->orig * nq);
    npu_free(c->alloc, c->layers, sizeof *c->layers * nq);
}

enum { MAX_OUTPUTS = 16 };

npu_status q_compare(const ir_graph *fg, const ir_graph *qg, cal_dataset *ds, int64_t max_samples, bool layers,
                     npu_alloc alloc, q_report **out, npu_err *err)
{
    *out = NULL;
    if (fg->n_outputs != qg->n_outputs || fg->n_outputs > MAX_OUTPUTS || fg->n_inputs != 1 || qg->n_inputs != 1)
        return npu_fail(err, NPU_EINTERNAL, "report: the graphs do not have the same inputs and outputs");
    cmp_ctx c = {.fg = fg, .qg = qg, .alloc = alloc, .ok = true};
    npu_status st = setup(&c, err);
    if (!layers)
        c.n_layers = 0;
    ref_ctx *fr = st == NPU_OK ? ref_ctx_new(fg, alloc, err) : NULL;
    ref_ctx *qr = fr ? ref_ctx_new(qg, alloc, err) : NULL;
    if (st == NPU_OK && !qr)
        st = err->code;
    void *fo[MAX_OUTPUTS] = {0}, *qo[MAX_OUTPUTS] = {0};
    for (int i = 0; st == NPU_OK && i < fg->n_outputs; i++) {
        fo[i] = npu_malloc(alloc, ir_tensor_bytes(fg->outputs[i]));
        qo[i] = npu_malloc(alloc, ir_tensor_bytes(qg->outputs[i]));
        if (!fo[i] || !qo[i])
            st = npu_fail(err, NPU_EINTERNAL, "out of memory");
    }
    if (layers && st == NPU_OK) {
        ref_ctx_set_observer(fr, keep_float, &c);
        ref_ctx_set_observer(qr, compare_quant, &c);
    }
    double dot = 0, ff = 0, qq = 0, noise = 0;
    int64_t samples = 0;
    cal_dataset_rewind(ds);
    for (const float *xs[CAL_MAX_INPUTS] = {0}; st == NPU_OK && (!max_samples || samples < max_samples);) {
        if ((st = cal_dataset_next_inputs(ds, xs, err)) != NPU_OK || !xs[0])
            break;
        const void *ins[CAL_MAX_INPUTS];
        for (int k = 0; k < fg->n_inputs && k < CAL_MAX_INPUTS; k++) {
            ins[k] = xs[k];
            if (layers)
                keep_float(&c, NULL, fg->inputs[k], xs[k]);
        }
        if ((st = ref_ctx_run(fr, ins, fo, err)) != NPU_OK || (st = ref_ctx_run(qr, ins, qo, err)) != NPU_OK)
            break;
        if (!c.ok) {
            st = npu_fail(err, NPU_EINTERNAL, "out of memory for the report");
            break;
        }
        for (int k = 0; k < fg->n_outputs; k++) {
            if (fg->outputs[k]->dtype != IR_F32 || qg->outputs[k]->dtype != IR_F32)
                continue;
            const float *a = fo[k], *b = qo[k];
            for (int64_t i = 0, n = ir_tensor_numel(fg->outputs[k]); i < n; i++) {
                dot += (double)a[i] * b[i];
                ff += (double)a[i] * a[i];
                qq += (double)b[i] * b[i];
                noise += ((double)b[i] - a[i]) * ((double)b[i] - a[i]);
            }
        }
        samples++;
    }
    cal_dataset_rewind(ds);
    for (int i = 0; i < fg->n_outputs; i++) {
        npu_free(alloc, fo[i], fo[i] ? ir_tensor_bytes(fg->outputs[i]) : 0);
        npu_free(alloc, qo[i], qo[i] ? ir_tensor_bytes(qg->outputs[i]) : 0);
    }
    ref_ctx_free(fr);
    ref_ctx_free(qr);
    q_report *r = NULL;
    if (st == NPU_OK && !(r = npu_malloc(alloc, sizeof *r)))
        st = npu_fail(err, NPU_EINTERNAL, "out of memory");
    if (r) {
        memset(r, 0, sizeof *r);
        r->alloc = alloc;
        r->samples = samples;
        r->out_cosine = ff > 0 && qq > 0 ? dot / sqrt(ff * qq) : (ff == qq ? 1.0 : 0.0);
        r->out_sqnr_db = q_sqnr_db(ff, noise);
        r->n_layers = c.n_layers;
        r->layers = c.rows;
        c.rows = NULL;
        for (int i = 0; i < r->n_layers; i++)
            r->layers[i].sqnr_db = q_sqnr_db(c.layers[i].sig, c.layers[i].noise);
        *out = r;
    }
    if (c.rows)
        npu_free(alloc, c.rows, sizeof *c.rows * ((size_t)qg->n_tensors + 1));
    else if (r)
        r->rows_cap = (size_t)qg->n_tensors + 1;
    teardown(&c);
    return st;
}

npu_status q_report_compute(const ir_graph *float_g, const ir_graph *quant_g, cal_dataset *ds, int64_t max_samples,
                            npu_alloc alloc, q_report **out, npu_err *err)
{
    return q_compare(float_g, quant_g, ds, max_samples, true, alloc, out, err);
}

void q_report_free(q_report *r)
{
    if (!r)
        return;
    npu_free(r->alloc, r->layers, sizeof *r->layers * r->rows_cap);
    npu_free(r->alloc, r, sizeof *r);
}

static void print_db(FILE *out, double db)
{
    if (isinf(db))
        fprintf(out, "%8s", db > 0 ? "exact" : "-inf");
    else
        fprintf(out, "%8.2f", db);
}

void q_report_print(const q_report *r, FILE *out)
{
    fprintf(out, "# quantization report: float reference vs quantized reference on %lld calibration sample%s\n",
            (long long)r->samples, r->samples == 1 ? "" : "s");
    fprintf(out, "output: cosine %.6f  SQNR ", r->out_cosine);
    print_db(out, r->out_sqnr_db);
    fprintf(out, " dB\n");
    if (r->note)
        fprintf(out, "%s\n", r->note);
    if (r->budget_db > 0)
        fprintf(out, "mixed precision: budget %.2f dB output SQNR\n", r->budget_db);
    fprintf(out, "%-40s %-18s %5s %10s  %s\n", "layer", "op", "wbits", "SQNR dB", "note");
    for (int i = 0; i < r->n_layers; i++) {
        const q_layer_sqnr *l = &r->layers[i];
        char bits[8] = "-";
        if (l->wbits)
            snprintf(bits, sizeof bits, "%d", l->wbits);
        fprintf(out, "%-40s %-18s %5s   ", l->node, l->op, bits);
        print_db(out, l->sqnr_db);
        fprintf(out, "  %s\n", l->why8 ? l->why8 : "");
    }
}
