/* npucc's pipeline, stage by stage, in the order of docs/architecture.md. */
#include "driver/compile.h"

#include <string.h>
#include <unistd.h>

#include "import/import.h"
#include "opt/opt.h"
#include "partition/partition.h"
#include "quantize/quantize.h"
#include "target/target.h"

typedef struct drv_ctx {
    const drv_options *o;
    FILE *out;
    npu_alloc alloc;
    tgt_target *target;
    ir_graph *g;
} drv_ctx;

static void dump_after_pass(void *ud, const char *pass, const ir_graph *g)
{
    drv_ctx *c = ud;
    if (strcmp(c->o->dump_after, "all") == 0 || strcmp(c->o->dump_after, pass) == 0) {
        fprintf(c->out, "# after %s\n", pass);
        ir_dump(g, c->out);
    }
}

static npu_status stage_import(drv_ctx *c, npu_err *err)
{
    imp_options io = {.n_input_shapes = c->o->n_input_shapes, .input_shapes = c->o->input_shapes};
    npu_status st = imp_load_onnx(c->o->model, &io, c->alloc, &c->g, err);
    if (st == NPU_OK && c->o->dump_ir) {
        fprintf(c->out, "# after import\n");
        ir_dump(c->g, c->out);
    }
    return st;
}

static npu_status stage_opt(drv_ctx *c, npu_err *err)
{
    if (c->o->dump_after && strcmp(c->o->dump_after, "all") != 0 && strcmp(c->o->dump_after, "import") != 0 &&
        strcmp(c->o->dump_after, "quantize") != 0 &&
        !opt_pass_exists(c->o->dump_after)) {
        const char *const *names = opt_pass_names();
        char list[512] = "";
        for (int i = 0; names[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
        return npu_fail(err, NPU_EUSAGE, "--dump-after: no pass '%s' (passes: %s, all)", c->o->dump_after, list);
    }
    opt_options oo = {.after_pass = c->o->dump_after ? dump_after_pass : NULL, .ud = c};
    return opt_run(c->g, &oo, err);
}

static cal_method calib_method(drv_calib_method m)
{
    switch (m) {
    case DRV_CALIB_PERCENTILE: return CAL_PERCENTILE;
    case DRV_CALIB_KL: return CAL_KL;
    case DRV_CALIB_MSE: return CAL_MSE;
    default: return CAL_MINMAX;
    }
}

/* Runs the float graph over the calibration set, then rewrites it into the
 * quantized graph (src/quantize/ptq.c). */
static npu_status stage_quantize(drv_ctx *c, npu_err *err)
{
    q_layer_bits lb[DRV_MAX_LAYER_BITS];
    for (int i = 0; i < c->o->n_layer_bits; i++)
        lb[i] = (q_layer_bits){c->o->layer_bits[i].name, c->o->layer_bits[i].bits};
    q_ptq_options po = {
        .model = c->o->model,
        .calib_dir = c->o->calib_dir,
        .read = c->o->calib_read,
        .range = {calib_method(c->o->calib_method), c->o->percentile, c->o->abits},
        .q = {.wbits = c->o->wbits, .abits = c->o->abits, .n_layer_bits = c->o->n_layer_bits, .layer_bits = lb},
        .cle = c->o->cle,
        .bias_correction = c->o->bias_correction < 0 ? c->o->wbits == 4 : c->o->bias_correction > 0,
        .int4_rounding = c->o->int4_adaptive ? Q_ROUND_ADAPTIVE : Q_ROUND_NEAREST,
        .accuracy_budget_db = c->o->accuracy_budget_db,
        .report = c->o->report,
        .progress = isatty(fileno(stderr)) ? stderr : NULL, /* a bar only where someone watches */
    };
    q_ptq_result res;
    npu_status st = q_ptq(c->g, &po, &res, err);
    if (st == NPU_OK && res.report)
        q_report_print(res.report, c->out);
    q_report_free(res.report);
    if (st == NPU_OK && c->o->dump_after && strcmp(c->o->dump_after, "quantize") == 0) {
        fprintf(c->out, "# after quantize\n");
        ir_dump(c->g, c->out);
    }
    return st;
}

npu_status drv_compile(const drv_options *o, FILE *out, npu_err *err)
{
    drv_ctx c = {.o = o, .out = out, .alloc = npu_alloc_default()};
    npu_status st = tgt_load(o->target, NULL, &c.target, err);
    if (st == NPU_OK && o->validate) {
        tgt_print_summary(c.target, out);
        tgt_free(c.target);
        return NPU_OK;
    }
    if (st == NPU_OK)
        st = stage_import(&c, err);
    if (st == NPU_OK)
        st = stage_opt(&c, err);
    if (st == NPU_OK) {
        /* until the tiler answers, every node is placed on the host */
        part_caps caps = {NULL, NULL};
        st = part_assign(c.g, &caps, err);
    }
    if (st == NPU_OK)
        st = stage_quantize(&c, err);
    /* Code generation (memplan, tiler, emit) is not in the pipeline yet:
     * say so rather than pretend an output was written. */
    if (st == NPU_OK && !o->dump_after)
        st = npu_fail(err, NPU_EINTERNAL,
                      "%s: quantized; code generation (memory plan, tiler, emit) is not implemented yet, "
                      "so no binary was written (inspect the quantized graph with --dump-after=quantize)",
                      o->model);
    ir_graph_free(c.g);
    tgt_free(c.target);
    return st;
}
