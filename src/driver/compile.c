/* npucc's pipeline, stage by stage, in the order of docs/architecture.md. */
#include "driver/compile.h"

#include <string.h>

#include "import/import.h"
#include "opt/opt.h"
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
    ir_graph_free(c.g);
    tgt_free(c.target);
    return st;
}
