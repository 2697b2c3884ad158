/* npucc's pipeline, stage by stage, in the order of docs/architecture.md. */
#include "driver/compile.h"

#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/file.h"
#include "common/key.h"
#include "driver/estimate.h"
#include "driver/report.h"
#include "emit/emit.h"
#include "format/npub_sign.h"
#include "memplan/memplan.h"
#include "tiler/tiler.h"
#include "import/import.h"
#include "opt/opt.h"
#include "partition/partition.h"
#include "quantize/io_types.h"
#include "quantize/quantize.h"
#include "target/target.h"

typedef struct drv_ctx {
    const drv_options *o;
    FILE *out;
    npu_alloc alloc;
    tgt_target *target;
    ir_graph *g;
    part_schedule sched;
    part_result part;
    mp_plan plan;
    emit_blob consts;
    tile_program prog;
    emit_info info;
    bool have_consts, have_prog;
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
    imp_options io = {.n_input_shapes = c->o->n_input_shapes, .input_shapes = c->o->input_shapes,
                      .files = c->o->calib_read.files, .max_nodes = c->o->max_nodes};
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
    npu_status st = opt_run(c->g, &oo, err);
    bool split = false;
    if (st == NPU_OK)
        st = opt_split_pool(c->g, tile_avgpool_ok, c->target, &split, err);
    if (st == NPU_OK && split && oo.after_pass)
        oo.after_pass(c, "split_pool", c->g);
    return st;
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

/* --precision auto's cost of a quantized node: the tiler's estimate. */
static npu_status npu_node_cycles(void *target, const ir_graph *g, const ir_node *n, int64_t *cycles, npu_err *err)
{
    return tile_estimate(target, g, n, cycles, NULL, err);
}

/* A later stage's error about a node names the model file too, as the
 * importer's and the partition's do ("m.onnx: node 'fc' (Gemm): ..."). */
static npu_status in_model(const drv_options *o, npu_status st, npu_err *err)
{
    if (st != NPU_OK && o->model && !strncmp(err->msg, "node '", 6))
        npu_err_prefix(err, "%s", o->model);
    return st;
}

/* Runs the float graph over the calibration set, then rewrites it into the
 * quantized graph (src/quantize/ptq.c). */
static npu_status stage_quantize(drv_ctx *c, npu_err *err)
{
    q_layer_bits lb[DRV_MAX_LAYER_BITS];
    for (int i = 0; i < c->o->n_layer_bits; i++)
        lb[i] = (q_layer_bits){c->o->layer_bits[i].name, c->o->layer_bits[i].bits, c->o->layer_bits[i].abits};
    q_ptq_options po = {
        .model = c->o->model,
        .calib_dir = c->o->calib_dir,
        .read = c->o->calib_read,
        .range = {calib_method(c->o->calib_method), c->o->percentile, c->o->abits},
        .q = {.wbits = c->o->wbits, .abits = c->o->abits, .w4_min_fanin = c->o->w4_min_fanin, .n_layer_bits = c->o->n_layer_bits, .layer_bits = lb,
              .target_file = c->target->file, .target_int4_acts = (c->target->act_dtypes & TGT_DT_INT4) != 0,
              .int_supported = tile_int_supported, .ud = c->target},
        .cle = c->o->cle,
        .bias_correction = c->o->bias_correction > 0,
        .int4_rounding = c->o->int4_rounding,
        .int8_rounding = c->o->int8_rounding,
        .accuracy_budget_db = c->o->accuracy_budget_db,
        .precision_auto = c->o->precision_auto,
        .budget_cycles = c->o->budget_cycles,
        .budget_ratio = c->o->budget_ratio,
        .target_sqnr_db = c->o->target_sqnr_db,
        .cycles = npu_node_cycles,
        .cycles_ud = c->target,
        .report = c->o->report,
        .progress = isatty(fileno(stderr)) ? stderr : NULL, /* a bar only where someone watches */
    };
    q_ptq_result res = {0};
    /* a pre-quantized model brings its scales: no calibration */
    bool qdq = q_graph_is_qdq(c->g);
    if (qdq && c->o->abits != 8)
        return npu_fail(err, NPU_EUSER, "%s: --abits %d: a pre-quantized (QDQ) model brings its own int8 activations",
                        c->o->model, c->o->abits);
    /* the I/O types asked for, or the model's own: a uint8 input of a QDQ
     * model stays uint8 although its codes become int8 inside */
    int nio = c->g->n_inputs + c->g->n_outputs;
    q_io_type *iot = npu_arena_alloc(c->g->arena, sizeof *iot * (size_t)(nio ? nio : 1));
    if (!iot)
        return npu_fail(err, NPU_EINTERNAL, "out of memory");
    bool retype = false;
    for (int i = 0; i < nio; i++) {
        const ir_tensor *t = i < c->g->n_inputs ? c->g->inputs[i] : c->g->outputs[i - c->g->n_inputs];
        q_io_type asked = i < c->g->n_inputs ? c->o->input_type : c->o->output_type;
        iot[i] = asked ? asked : qdq && t->dtype == IR_U8 ? Q_IO_U8 : Q_IO_KEEP;
        retype |= iot[i] != Q_IO_KEEP;
    }
    npu_status st = qdq ? q_from_qdq(c->g, err) : q_ptq(c->g, &po, &res, err);
    if (st == NPU_OK && retype)
        st = q_set_io_types(c->g, c->o->model, iot, iot + c->g->n_inputs, err);
    bool fused; /* SiLU and other functions of one int8 tensor: one npu.Lut (docs/opt.md) */
    if (st == NPU_OK)
        st = opt_fuse_lut(c->g, &fused, err);
    if (st == NPU_OK && res.report)
        q_report_print(res.report, c->out);
    q_report_free(res.report);
    if (st == NPU_OK && c->o->dump_after && strcmp(c->o->dump_after, "quantize") == 0) {
        fprintf(c->out, "# after quantize\n");
        ir_dump(c->g, c->out);
    }
    return st;
}

_Static_assert(PART_COST == 0 && PART_FIRST_FIT == 1 && PART_HOST == 2, "--partition's names are part_mode's order");

/* The units answer for themselves: the tiler for the NPU, the emitter for
 * the host runtime, the memory planner for the arena of an order. */
static npu_status stage_partition(drv_ctx *c, npu_err *err)
{
    const tgt_target *t = c->target;
    part_host_model hm = drv_host_model(t);
    mp_options order_mo = {.align = 16};
    part_caps caps = {.npu_supports = tile_supports, .ud = c->target, .host_supports = emit_host_caps,
                      .npu_cost = tile_estimate, .host = &hm, .arena = mp_order_arena, .arena_ud = &order_mo,
                      .mode = (part_mode)c->o->partition, .model = c->o->model};
    npu_status st = part_plan(c->g, &caps, &c->part, &c->sched, err);
    if (st == NPU_OK && c->o->report)
        part_report_ex(c->g, &c->part, c->out);
    return st;
}

static npu_status stage_memplan(drv_ctx *c, npu_err *err)
{
    return tile_memplan(c->target, c->g, &c->sched, c->alloc, &c->plan, err);
}

static npu_status stage_tile(drv_ctx *c, npu_err *err)
{
    emit_blob_init(&c->consts, c->alloc);
    c->have_consts = true;
    npu_status st = tile_build(c->target, c->g, &c->sched, &c->plan, &c->consts, c->alloc, &c->prog, err);
    c->have_prog = st == NPU_OK;
    return st;
}

/* OUT from -o or the model's name: "dir/model.onnx" -> "dir/model" + ext. */
static void out_path(const drv_options *o, const char *ext, char *buf, size_t cap)
{
    const char *src = o->output ? o->output : o->model;
    size_t n = strlen(src);
    const char *dot = strrchr(src, '.'), *slash = strrchr(src, '/');
    bool strip_ext = dot && (!slash || dot > slash) &&
                     (!o->output || o->emit == DRV_EMIT_C || !strcmp(dot, ".onnx"));
    if (o->output && o->emit != DRV_EMIT_C) {
        snprintf(buf, cap, "%s", src);
        return;
    }
    snprintf(buf, cap, "%.*s%s", (int)(strip_ext ? (size_t)(dot - src) : n), src, ext);
}

static npu_status write_outputs(drv_ctx *c, const void *bin, size_t size, npu_err *err)
{
    char path[4096], hpath[4096];
    switch (c->o->emit) {
    case DRV_EMIT_C:
        out_path(c->o, ".c", path, sizeof path);
        out_path(c->o, ".h", hpath, sizeof hpath);
        return emit_c_files(bin, size, path, hpath, &(emit_c_options){c->o->c_section, c->o->c_align}, c->alloc,
                            err);
    case DRV_EMIT_LISTING: {
        out_path(c->o, ".lst", path, sizeof path);
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
            return npu_fail(err, NPU_EINTERNAL, "out of memory for the listing");
        npub_view v;
        npub_error ne;
        npu_status st = npub_open(bin, size, &v, &ne) == 0
                            ? emit_listing(&v, c->target->isa, f, err)
                            : npu_fail(err, NPU_EINTERNAL, "emitted binary does not validate: %s", ne.msg);
        fclose(f);
        if (st == NPU_OK)
            st = npu_write_file_atomic(path, text, len, err);
        free(text);
        return st;
    }
    case DRV_EMIT_QDQ:
        out_path(c->o, ".qdq.onnx", path, sizeof path);
        return emit_qdq(c->g, path, err);
    default:
        out_path(c->o, ".npub", path, sizeof path);
        return npu_write_file_atomic(path, bin, size, err);
    }
}

/* --sign-key: the key's bytes never outlive the call. */
static npu_status sign(drv_ctx *c, void **bin, size_t *size, npu_err *err)
{
    uint8_t key[NPU_KEY_MAX];
    size_t key_size = 0;
    npu_status st = npu_read_key(c->o->sign_key, key, &key_size, err);
    if (st == NPU_OK)
        st = fmt_npub_sign(bin, size, key, key_size, c->alloc, err);
    memset(key, 0, sizeof key);
    return st;
}

static npu_status stage_emit(drv_ctx *c, npu_err *err)
{
    emit_model em = {c->target, c->g, &c->sched, &c->plan, c->prog.n_words ? &c->prog : NULL, &c->consts,
                     c->o->strip};
    void *bin = NULL;
    size_t size = 0;
    npu_status st = emit_npub(&em, c->alloc, &bin, &size, &c->info, err);
    if (st == NPU_OK && c->o->sign_key)
        st = sign(c, &bin, &size, err);
    if (st == NPU_OK)
        st = write_outputs(c, bin, size, err);
    if (st == NPU_OK && c->o->verbose)
        fprintf(c->out, "%s: %u steps (%u on the NPU), %zu bytes\n", c->o->model, c->info.n_steps,
                c->info.n_npu_steps, size);
    if (bin)
        npu_free(c->alloc, bin, size);
    return st;
}

npu_status drv_compile(const drv_options *o, FILE *out, npu_err *err)
{
    return drv_compile_alloc(o, out, npu_alloc_default(), err);
}

npu_status drv_compile_alloc(const drv_options *o, FILE *out, npu_alloc alloc, npu_err *err)
{
    drv_ctx c = {.o = o, .out = out, .alloc = alloc};
    tgt_opts to = {.alloc = alloc, .sets = o->sets, .nsets = o->nsets};
    npu_status st = tgt_load(o->target, &to, &c.target, err);
    if (st == NPU_OK && o->validate) {
        tgt_print_summary(c.target, out);
        tgt_check_description(c.target, out);
        tgt_free(c.target);
        return NPU_OK;
    }
    if (st == NPU_OK)
        st = stage_import(&c, err);
    if (st == NPU_OK)
        st = stage_opt(&c, err);
    if (st == NPU_OK)
        st = in_model(o, stage_quantize(&c, err), err);
    if (st == NPU_OK && o->dump_after) /* inspection only: nothing is written */
        goto done;
    if (st == NPU_OK)
        st = stage_partition(&c, err);
    if (st == NPU_OK)
        st = in_model(o, stage_memplan(&c, err), err);
    if (st == NPU_OK)
        st = in_model(o, stage_tile(&c, err), err);
    if (st == NPU_OK)
        st = in_model(o, stage_emit(&c, err), err);
    if (st == NPU_OK && (o->stats_json || o->report))
        st = drv_report(c.o, c.target, c.g, &c.part, &c.sched, &c.plan, &c.prog, &c.info, out, err);
done:
    if (c.have_prog)
        tile_program_free(&c.prog, c.alloc);
    if (c.have_consts)
        emit_blob_free(&c.consts);
    ir_graph_free(c.g);
    tgt_free(c.target);
    return st;
}
