/* The tiler on a real model: examples/fmnist through import, opt,
 * partition (tile_supports), quantization, the memory planner and tile_build;
 * each NPU step runs on the NPU model and what it leaves for later steps must
 * equal the reference's values, bit for bit, on every target. */
#include "tests/support/tiler_graphs.h"

#ifdef HAVE_NPU_MODEL
#include "import/import.h"
#include "opt/opt.h"
#include "quantize/quantize.h"

typedef struct capture {
    uint8_t **data; /* per tensor id: the reference's bytes */
} capture;

static void observe(void *ud, const ir_node *n, const ir_tensor *t, const void *data)
{
    (void)n;
    capture *c = ud;
    size_t bytes = ir_tensor_bytes(t);
    free(c->data[t->id]);
    c->data[t->id] = malloc(bytes);
    memcpy(c->data[t->id], data, bytes);
}

/* qo: the quantization (W8A8, or W4A4 with int4 graph input and output) */
static void fmnist_on(const char *target, const q_options *qo)
{
    tgt_target *t = load_target(target);
    const char *r = getenv("NPUCC_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/fmnist/fmnist_cnn.onnx", r && *r ? r : ".");
    npu_err e;
    ir_graph *g = NULL;
    cr_assert_eq(imp_load_onnx(path, NULL, npu_alloc_default(), &g, &e), NPU_OK, "%s", e.msg);
    cr_assert_eq(opt_run(g, NULL, &e), NPU_OK, "%s", e.msg);
    part_caps caps = {.npu_supports = tile_supports, .ud = t};
    cr_assert_eq(part_assign(g, &caps, &e), NPU_OK, "%s", e.msg);
    /* calibration on a few synthetic images: the tiler only needs some scales */
    int64_t numel = ir_tensor_numel(g->inputs[0]);
    float *img = malloc(sizeof(float) * (size_t)numel);
    uint32_t s = 3;
    ref_ctx *rc = ref_ctx_new(g, npu_alloc_default(), &e);
    q_calib *qc = q_calib_new(g, npu_alloc_default(), &e);
    cr_assert(rc && qc, "%s", e.msg);
    for (int k = 0; k < 4; k++) {
        for (int64_t i = 0; i < numel; i++)
            img[i] = (float)(rng_next(&s) % 256) / 255.0f;
        const void *in[1] = {img};
        cr_assert_eq(q_calib_run(qc, rc, in, &e), NPU_OK, "%s", e.msg);
    }
    ref_ctx_free(rc);
    float *lo = calloc((size_t)g->n_tensors, sizeof(float)), *hi = calloc((size_t)g->n_tensors, sizeof(float));
    cal_range_opts ro = {CAL_MINMAX, 99.99f, qo->abits};
    q_calib_ranges(qc, &ro, lo, hi);
    q_calib_free(qc);
    cr_assert_eq(q_quantize(g, lo, hi, qo, &e), NPU_OK, "%s", e.msg);
    free(lo);
    free(hi);
    part_schedule sched;
    cr_assert_eq(part_schedule_build(g, &sched, &e), NPU_OK, "%s", e.msg);
    mp_options mo = {.align = 16};
    mp_plan plan;
    cr_assert_eq(mp_plan_graph(g, &sched, &mo, &plan, &e), NPU_OK, "%s", e.msg);
    int npu_nodes = 0;
    for (int i = 0; i < g->n_nodes; i++)
        npu_nodes += !g->nodes[i]->dead && g->nodes[i]->unit == IR_UNIT_NPU;
    cr_assert_geq(npu_nodes, 9, "%s: convs, add, pools, reshape and gemm run on the NPU", target);
    built b = {.g = g, .plan = plan, .sched = sched};
    emit_blob_init(&b.consts, npu_alloc_default());
    cr_assert_eq(tile_build(t, g, &sched, &plan, &b.consts, npu_alloc_default(), &b.prog, &e), NPU_OK, "%s",
                 e.msg);
    int counts[TG_COUNTS];
    check_program(t, &b, "fmnist", counts);
    cr_assert_gt(counts[TGT_SEM_DWCONV], 0, "%s: the depthwise conv uses dwconv", target);

    /* the reference's value of every tensor, for one image */
    capture cap = {calloc((size_t)g->n_tensors, sizeof(uint8_t *))};
    rc = ref_ctx_new(g, npu_alloc_default(), &e);
    cr_assert_not_null(rc, "%s", e.msg);
    ref_ctx_set_observer(rc, observe, &cap);
    float out[16];
    const void *in[1] = {img};
    void *outs[1] = {out};
    cr_assert_eq(ref_ctx_run(rc, in, outs, &e), NPU_OK, "%s", e.msg);
    ref_ctx_free(rc);

    /* each NPU step on the model: its inputs from the reference, its outputs compared */
    npu_model *m = NULL;
    cr_assert_eq(npu_model_new(t, npu_alloc_default(), &m, &e), NPU_OK, "%s", e.msg);
    for (int sg = 0; sg < b.prog.n_segments; sg++) {
        const part_step *ps = &sched.steps[b.prog.segments[sg].step];
        npu_mem mem;
        memset(&mem, 0, sizeof mem);
        uint8_t *buf[TGT_REGION_COUNT] = {0};
        for (int rg = 0; rg < TGT_REGION_COUNT; rg++) {
            bool consts = rg == TGT_REGION_CONSTANTS || rg == TGT_REGION_FLASH; /* flash: the constants again */
            uint64_t size = consts ? b.consts.size : rg < MP_REGION_COUNT ? (uint64_t)plan.region_bytes[rg] : 0;
            buf[rg] = calloc(size + 64, 1);
            if (consts)
                memcpy(buf[rg], b.consts.data, b.consts.size);
            mem.region[rg] = (npu_mem_region){buf[rg], size, rg == TGT_REGION_ARENA || rg == TGT_REGION_OUTPUTS};
        }
        for (int k = 0; k < ps->count; k++) { /* inputs produced outside the step */
            const ir_node *n = g->nodes[ps->first + k];
            for (int i = 0; i < n->n_inputs; i++) {
                const ir_tensor *x = n->inputs[i];
                if (!x || x->data || (x->producer && x->producer->unit == IR_UNIT_NPU))
                    continue;
                cr_assert_not_null(cap.data[x->id], "%s: no reference value of %s", target, x->name);
                memcpy(buf[plan.t[x->id].region] + plan.t[x->id].offset, cap.data[x->id], ir_tensor_bytes(x));
            }
        }
        const tile_segment *seg = &b.prog.segments[sg];
        npu_run_stats st;
        cr_assert_eq(npu_model_exec(m, &mem, b.prog.words + seg->first_word, seg->n_words, &st, &e), NPU_OK,
                     "fmnist on %s: %s", target, e.msg);
        int compared = 0;
        for (int k = 0; k < ps->count; k++) { /* every tensor the step leaves behind */
            const ir_tensor *y = g->nodes[ps->first + k]->outputs[0];
            if (ir_use_count(g, y) == 0)
                continue;
            bool used_outside = y->flags & IR_TENSOR_OUTPUT;
            for (int j = 0; j < g->n_nodes; j++) {
                const ir_node *u = g->nodes[j];
                for (int i = 0; !u->dead && u->unit != IR_UNIT_NPU && i < u->n_inputs; i++)
                    used_outside |= u->inputs[i] == y;
            }
            if (!used_outside)
                continue; /* may share space with later tensors of the step */
            const uint8_t *got = buf[plan.t[y->id].region] + plan.t[y->id].offset;
            cr_assert_eq(memcmp(got, cap.data[y->id], ir_tensor_bytes(y)), 0, "fmnist on %s: %s differs", target,
                         y->name);
            compared++;
        }
        cr_assert_gt(compared, 0, "%s: step %d leaves a tensor behind", target, seg->step);
        cr_log_info("fmnist on %s: NPU step %d, %d nodes, %llu cycles on the model", target, seg->step, ps->count,
                    (unsigned long long)st.cycles);
        for (int rg = 0; rg < TGT_REGION_COUNT; rg++)
            free(buf[rg]);
    }
    npu_model_free(m);
    for (int i = 0; i < g->n_tensors; i++)
        free(cap.data[i]);
    free(cap.data);
    free(img);
    tile_program_free(&b.prog, npu_alloc_default());
    emit_blob_free(&b.consts);
    ir_graph_free(g);
    tgt_free(t);
}

Test(tiler, fmnist_model_bit_exact)
{
    q_options qo = {.wbits = 8, .abits = 8};
    for (int ti = 0; ti < N_TARGETS; ti++)
        fmnist_on(targets[ti], &qo);
}

/* int4 activations everywhere, the input's clamp to -8..7 included */
Test(tiler, fmnist_model_w4a4_bit_exact)
{
    q_options qo = {.wbits = 4, .abits = 4, .target_int4_acts = true, .int4_io = true};
    fmnist_on("edge-v1-wide", &qo);
}
#endif
