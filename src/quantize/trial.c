/* A trial quantization: a fresh copy of the float graph quantized with the
 * ranges of calibration and the given options, for the searches that
 * compare configurations (precision.c). */
#include "quantize/quantize_internal.h"

npu_status q_quantize_copy(const q_mixed_in *in, const q_options *qo, npu_alloc alloc, ir_graph **out, npu_err *err)
{
    *out = NULL;
    ir_graph *g;
    npu_status st = ir_deserialize(in->float_ser, in->float_size, alloc, &g, err);
    if (st != NPU_OK)
        return st;
    size_t nt = (size_t)(g->n_tensors + 1);
    float *lo = npu_malloc(alloc, sizeof(float) * nt);
    float *hi = npu_malloc(alloc, sizeof(float) * nt);
    if (!lo || !hi)
        st = npu_fail(err, NPU_EINTERNAL, "out of memory");
    /* the copy's tensor ids may differ from the float graph's: by name */
    for (int i = 0; st == NPU_OK && i < g->n_tensors; i++) {
        const ir_tensor *o = ir_graph_find(in->float_g, g->tensors[i]->name);
        lo[i] = o && o->id < in->n_ranges ? in->lo[o->id] : 0.0f;
        hi[i] = o && o->id < in->n_ranges ? in->hi[o->id] : 0.0f;
    }
    if (st == NPU_OK)
        st = q_quantize(g, lo, hi, qo, err);
    npu_free(alloc, lo, lo ? sizeof(float) * nt : 0);
    npu_free(alloc, hi, hi ? sizeof(float) * nt : 0);
    if (st != NPU_OK)
        ir_graph_free(g);
    else
        *out = g;
    return st;
}
