/* Calibration statistics through the reference executor's observer. */
#include "quantize/quantize.h"

#include <string.h>

struct q_calib {
    const ir_graph *g;
    npu_alloc alloc;
    int n;
    cal_hist **hist; /* per tensor id; NULL for constants and non-float tensors */
    uint64_t samples;
    bool range_only;     /* count, min and max only (minmax calibration) */
    ref_observer_fn tap; /* a second observer (layer statistics), or NULL */
    void *tap_ud;
};

void q_calib_set_range_only(q_calib *c, bool range_only)
{
    c->range_only = range_only;
}

void q_calib_set_tap(q_calib *c, ref_observer_fn fn, void *ud)
{
    c->tap = fn;
    c->tap_ud = ud;
}

q_calib *q_calib_new(const ir_graph *g, npu_alloc alloc, npu_err *err)
{
    q_calib *c = npu_malloc(alloc, sizeof *c);
    if (!c) {
        npu_fail(err, NPU_EINTERNAL, "out of memory");
        return NULL;
    }
    memset(c, 0, sizeof *c);
    c->g = g;
    c->alloc = alloc;
    c->n = g->n_tensors;
    c->hist = npu_malloc(alloc, sizeof *c->hist * (size_t)(c->n ? c->n : 1));
    if (!c->hist) {
        q_calib_free(c);
        npu_fail(err, NPU_EINTERNAL, "out of memory");
        return NULL;
    }
    memset(c->hist, 0, sizeof *c->hist * (size_t)(c->n ? c->n : 1));
    for (int i = 0; i < c->n; i++) {
        const ir_tensor *t = g->tensors[i];
        if (t->data || t->dtype != IR_F32)
            continue;
        if (!(c->hist[i] = npu_malloc(alloc, sizeof(cal_hist)))) {
            q_calib_free(c);
            npu_fail(err, NPU_EINTERNAL, "out of memory for calibration statistics");
            return NULL;
        }
        cal_hist_init(c->hist[i]);
    }
    return c;
}

void q_calib_free(q_calib *c)
{
    if (!c)
        return;
    if (c->hist)
        for (int i = 0; i < c->n; i++)
            npu_free(c->alloc, c->hist[i], sizeof(cal_hist));
    npu_free(c->alloc, c->hist, sizeof *c->hist * (size_t)(c->n ? c->n : 1));
    npu_free(c->alloc, c, sizeof *c);
}

static void observe(void *ud, const ir_node *n, const ir_tensor *t, const void *data)
{
    q_calib *c = ud;
    if (t->id >= 0 && t->id < c->n && c->hist[t->id])
        (c->range_only ? cal_hist_add_range : cal_hist_add)(c->hist[t->id], data, (size_t)ir_tensor_numel(t));
    if (c->tap)
        c->tap(c->tap_ud, n, t, data);
}

npu_status q_calib_run_into(q_calib *c, ref_ctx *ctx, const void *const *inputs, void *const *outputs,
                            npu_err *err)
{
    /* graph inputs are not node outputs: observe them directly */
    for (int i = 0; i < c->g->n_inputs; i++)
        observe(c, NULL, c->g->inputs[i], inputs[i]);
    ref_ctx_set_observer(ctx, observe, c);
    npu_status st = ref_ctx_run(ctx, inputs, outputs, err);
    ref_ctx_set_observer(ctx, NULL, NULL);
    if (st == NPU_OK)
        c->samples++;
    return st;
}

npu_status q_calib_run(q_calib *c, ref_ctx *ctx, const void *const *inputs, npu_err *err)
{
    enum { MAX_OUT = 16 };
    /* outputs are discarded: point them at scratch sized for each output */
    const ir_graph *g = c->g;
    if (g->n_outputs > MAX_OUT)
        return npu_fail(err, NPU_EUSER, "calibration: more than %d graph outputs", MAX_OUT);
    void *outs[MAX_OUT];
    size_t sizes[MAX_OUT];
    npu_status st = NPU_OK;
    int k = 0;
    for (; k < g->n_outputs; k++) {
        sizes[k] = ir_tensor_bytes(g->outputs[k]) + 1;
        if (!(outs[k] = npu_malloc(c->alloc, sizes[k]))) {
            st = npu_fail(err, NPU_EINTERNAL, "out of memory");
            break;
        }
    }
    if (st == NPU_OK)
        st = q_calib_run_into(c, ctx, inputs, outs, err);
    for (int i = 0; i < k; i++)
        npu_free(c->alloc, outs[i], sizes[i]);
    return st;
}

bool q_calib_mergeable(const q_calib *c)
{
    return c->range_only && !c->tap;
}

void q_calib_merge(q_calib *dst, const q_calib *src)
{
    for (int i = 0; i < dst->n && i < src->n; i++)
        if (dst->hist[i] && src->hist[i])
            cal_hist_merge_range(dst->hist[i], src->hist[i]);
    dst->samples += src->samples;
}

uint64_t q_calib_samples(const q_calib *c)
{
    return c->samples;
}

void q_calib_range(const q_calib *c, int id, const cal_range_opts *o, float *lo, float *hi)
{
    *lo = *hi = 0.0f;
    if (id >= 0 && id < c->n && c->hist[id] && c->hist[id]->count)
        cal_choose_range(c->hist[id], o, lo, hi);
}

void q_calib_ranges(const q_calib *c, const cal_range_opts *o, float *lo, float *hi)
{
    for (int i = 0; i < c->n; i++)
        q_calib_range(c, i, o, &lo[i], &hi[i]);
}
