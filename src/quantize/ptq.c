/* Post-training quantization from a calibration directory to the quantized
 * graph: the sequence the driver runs (docs/numerics.md, "PTQ"). */
#include <string.h>

#include "calib/dataset.h"
#include "quantize/quantize.h"

npu_status q_ptq(ir_graph *g, const q_ptq_options *o, npu_err *err)
{
    npu_alloc alloc = g->alloc;
    const char *model = o->model ? o->model : "model";
    if (!o->calib_dir)
        return npu_fail(err, NPU_EUSER, "%s: quantizing needs a calibration set (--calib DIR)", model);
    if (g->n_inputs != 1 || g->inputs[0]->dtype != IR_F32)
        return npu_fail(err, NPU_EUSER, "%s: calibration supports one float32 input (the model has %d)", model,
                        g->n_inputs);
    const ir_tensor *in = g->inputs[0];
    cal_input_spec spec = {in->name, in->rank, in->dims};
    cal_dataset *ds = NULL;
    npu_status st = cal_dataset_open(o->calib_dir, &spec, alloc, &ds, err);
    if (st != NPU_OK)
        return st;
    ref_ctx *rc = ref_ctx_new(g, alloc, err);
    q_calib *qc = rc ? q_calib_new(g, alloc, err) : NULL;
    st = qc ? NPU_OK : err->code;
    for (const float *x = NULL; st == NPU_OK;) {
        if ((st = cal_dataset_next(ds, &x, err)) != NPU_OK || !x)
            break;
        const void *ins[1] = {x};
        st = q_calib_run(qc, rc, ins, err);
    }
    size_t nt = (size_t)g->n_tensors;
    float *lo = npu_malloc(alloc, sizeof(float) * nt), *hi = npu_malloc(alloc, sizeof(float) * nt);
    if (st == NPU_OK && (!lo || !hi))
        st = npu_fail(err, NPU_EINTERNAL, "out of memory");
    ref_ctx_free(rc); /* before the graph changes under it */
    if (st == NPU_OK) {
        cal_range_opts ro = o->range;
        ro.bits = o->q.abits;
        q_calib_ranges(qc, &ro, lo, hi);
        st = q_quantize(g, lo, hi, &o->q, err);
    }
    npu_free(alloc, lo, sizeof(float) * nt);
    npu_free(alloc, hi, sizeof(float) * nt);
    q_calib_free(qc);
    cal_dataset_close(ds);
    return st;
}
