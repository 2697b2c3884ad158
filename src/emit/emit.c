/* .npub layout of a compiled model: tensor table, steps, IO, memory, debug
 * ranges and the quantized graph around the tiler's command streams. */
#include "emit/emit.h"

#include <string.h>

#include "emit/hostops.h"
#include "format/format.h"
#include "rt/npurt_ops.h"

_Static_assert((int)NPUB_DT_F32 == IR_F32 && (int)NPUB_DT_F16 == IR_F16 && (int)NPUB_DT_I64 == IR_I64 &&
                   (int)NPUB_DT_I32 == IR_I32 && (int)NPUB_DT_I16 == IR_I16 && (int)NPUB_DT_I8 == IR_I8 &&
                   (int)NPUB_DT_U8 == IR_U8 && (int)NPUB_DT_I4 == IR_I4 && (int)NPUB_DT_U4 == IR_U4 &&
                   (int)NPUB_DT_BOOL == IR_BOOL,
               "npub dtype codes are ir_dtype's");
_Static_assert((int)MP_REGION_CONST == NPUB_REGION_CONST && (int)MP_REGION_ARENA == NPUB_REGION_ARENA &&
                   (int)MP_REGION_INPUT == NPUB_REGION_INPUT && (int)MP_REGION_OUTPUT == NPUB_REGION_OUTPUT &&
                   (int)MP_REGION_COUNT == NPUB_REGION_COUNT,
               "the memory plan's regions are the .npub's");

/* Everything being built, freed in one place. */
typedef struct emitter {
    const emit_model *m;
    npu_alloc alloc;
    npu_err *err;
    npu_status st;   /* first failure inside a tensor_index callback */
    npu_err first;   /* its message (callers of the callback may write their own over e->err) */
    emit_blob tensors, steps, io, strings, params, debug;
    uint32_t *index; /* IR tensor id -> table index, NPUB_NONE when absent */
    uint32_t n_tensors;
} emitter;

static uint32_t add_string(emitter *e, const char *s)
{
    size_t off;
    if (!s || !*s)
        return 0;
    if (e->st == NPU_OK)
        e->st = emit_blob_add(&e->strings, s, strlen(s) + 1, 1, &off, e->err);
    return e->st == NPU_OK ? (uint32_t)off : 0;
}

/* The table index of t, registering it (and, for a constant, its data in
 * the CONSTANTS section) on first use. */
static uint32_t register_tensor(emitter *e, const ir_tensor *t);

static uint32_t tensor_index(void *ud, const ir_tensor *t)
{
    emitter *e = ud;
    bool was_ok = e->st == NPU_OK;
    uint32_t idx = register_tensor(e, t);
    if (was_ok && e->st != NPU_OK)
        e->first = *e->err;
    return idx;
}

static uint32_t register_tensor(emitter *e, const ir_tensor *t)
{
    if (e->st != NPU_OK || !t || t->id < 0 || t->id >= e->m->g->n_tensors)
        return NPUB_NONE;
    if (e->index[t->id] != NPUB_NONE)
        return e->index[t->id];
    npub_tensor nt;
    memset(&nt, 0, sizeof nt);
    nt.alias_of = NPUB_NONE;
    if (t->rank > NPUB_MAX_RANK) {
        e->st = npu_fail(e->err, NPU_EUSER, "tensor '%s': rank %d is above the binary's limit of %d", t->name,
                         t->rank, NPUB_MAX_RANK);
        return NPUB_NONE;
    }
    nt.dtype = (uint8_t)t->dtype;
    nt.rank = (uint8_t)t->rank;
    for (int d = 0; d < t->rank; d++)
        nt.dims[d] = (int32_t)t->dims[d];
    nt.size = (uint32_t)ir_tensor_bytes(t);
    if (t->quant && t->quant->count == 1) {
        nt.has_quant = 1;
        nt.scale = t->quant->scale[0];
        nt.zero_point = t->quant->zero_point[0];
    }
    if (t->data) {
        size_t off;
        if ((e->st = emit_blob_add(e->m->consts, t->data, nt.size, 16, &off, e->err)) != NPU_OK)
            return NPUB_NONE;
        nt.region = NPUB_REGION_CONST;
        nt.offset = (uint32_t)off;
    } else {
        const mp_tensor *p = &e->m->plan->t[t->id];
        if (p->offset < 0) {
            e->st = npu_fail(e->err, NPU_EINTERNAL, "tensor '%s' has no place in the memory plan", t->name);
            return NPUB_NONE;
        }
        if (p->level == MP_LEVEL_SRAM) { /* the host cannot reach the NPU's SRAM */
            e->st = npu_fail(e->err, NPU_EINTERNAL, "tensor '%s' is SRAM-resident, yet the binary refers to it",
                             t->name);
            return NPUB_NONE;
        }
        nt.region = (uint8_t)p->region;
        nt.offset = (uint32_t)p->offset;
        if (p->alias_of >= 0 && p->alias_of != t->id)
            nt.alias_of = tensor_index(e, e->m->g->tensors[p->alias_of]);
    }
    nt.name = add_string(e, t->name);
    size_t off;
    if (e->st == NPU_OK)
        e->st = emit_blob_add(&e->tensors, &nt, sizeof nt, 4, &off, e->err);
    if (e->st != NPU_OK)
        return NPUB_NONE;
    return e->index[t->id] = e->n_tensors++;
}

static npu_status add_step(emitter *e, uint16_t kind, uint16_t op, uint32_t a, uint32_t b, const char *name)
{
    npub_step s = {kind, op, a, b, add_string(e, name)};
    size_t off;
    return e->st != NPU_OK ? e->st : emit_blob_add(&e->steps, &s, sizeof s, 4, &off, e->err);
}

bool emit_is_part_copy(const ir_node *n)
{
    int64_t prefix[64];
    if ((n->op != IR_OP_SPLIT && n->op != IR_OP_SLICE) || n->n_outputs > 64 || !n->inputs[0] || n->inputs[0]->data ||
        !mp_split_layout(n, prefix))
        return false;
    const ir_quant *qx = n->inputs[0]->quant;
    for (int j = 0; j < n->n_outputs; j++) { /* the bytes keep their meaning */
        const ir_quant *qy = n->outputs[j]->quant;
        if (!qx != !qy || (qx && (qx->count != 1 || qy->count != 1 || qx->scale[0] != qy->scale[0] ||
                                  qx->zero_point[0] != qy->zero_point[0])))
            return false;
    }
    return true;
}

bool emit_host_caps(void *ud, const ir_graph *g, const ir_node *n, const char **reason)
{
    (void)ud;
    return emit_is_part_copy(n) || emit_host_supports(g, n, reason);
}

/* A view whose output the plan put on its input's bytes moves nothing. */
static bool is_noop_view(const emitter *e, const ir_node *n)
{
    if (!ir_op_is_view(n->op) || !n->inputs[0] || n->inputs[0]->data)
        return false;
    const mp_tensor *x = &e->m->plan->t[n->inputs[0]->id], *y = &e->m->plan->t[n->outputs[0]->id];
    return x->region == y->region && x->offset == y->offset;
}

/* A tensor table entry for the bytes [prefix, prefix + size) of x, shaped as
 * y: the source of a Split/Slice part's copy. */
static uint32_t sub_tensor(emitter *e, const ir_tensor *x, const ir_tensor *y, int64_t prefix)
{
    uint32_t xi = tensor_index(e, x), yi = tensor_index(e, y);
    if (e->st != NPU_OK || xi == NPUB_NONE || yi == NPUB_NONE)
        return NPUB_NONE;
    npub_tensor nt = ((const npub_tensor *)e->tensors.data)[yi];
    const npub_tensor *xt = &((const npub_tensor *)e->tensors.data)[xi];
    nt.region = xt->region;
    nt.offset = xt->offset + (uint32_t)prefix;
    nt.alias_of = xt->alias_of != NPUB_NONE ? xt->alias_of : xi;
    size_t off;
    if ((e->st = emit_blob_add(&e->tensors, &nt, sizeof nt, 4, &off, e->err)) != NPU_OK)
        return NPUB_NONE;
    return e->n_tensors++;
}

/* Split and contiguous Slice: each output is a byte range of the input
 * (mp_split_layout). Where the plan left it in place there is nothing to
 * do; elsewhere (a concat's slice, say) a byte copy from that range. */
static npu_status emit_parts(emitter *e, const ir_node *n, emit_info *info)
{
    int64_t prefix[64];
    const ir_tensor *x = n->inputs[0];
    if (n->n_outputs > 64 || !mp_split_layout(n, prefix))
        return npu_fail(e->err, NPU_EUSER, "node '%s' (%s): its parts are not byte ranges of its input", n->name,
                        ir_op_name(n->op));
    for (int j = 0; j < n->n_outputs && e->st == NPU_OK; j++) {
        const ir_tensor *y = n->outputs[j];
        const mp_tensor *px = &e->m->plan->t[x->id], *py = &e->m->plan->t[y->id];
        if (px->region == py->region && py->offset == px->offset + prefix[j])
            continue;
        uint32_t src = sub_tensor(e, x, y, prefix[j]), dst = tensor_index(e, y);
        struct {
            npurt_rec_header h;
            uint32_t slot[2];
            npurt_p_copy p;
        } rec = {{NPURT_REC_VERSION, NPURT_K_COPY, sizeof rec, 1, 1}, {src, dst}, {(uint32_t)ir_tensor_bytes(y)}};
        size_t off;
        if (e->st == NPU_OK)
            e->st = emit_blob_add(&e->params, &rec, sizeof rec, 4, &off, e->err);
        if (e->st == NPU_OK)
            e->st = add_step(e, NPUB_STEP_HOST, NPURT_K_COPY, (uint32_t)off, sizeof rec, n->name);
        info->n_host_steps++;
    }
    return e->st;
}

static npu_status emit_steps(emitter *e, emit_info *info)
{
    const emit_model *m = e->m;
    int seg = 0;
    for (int s = 0; s < m->sched->n_steps && e->st == NPU_OK; s++) {
        const part_step *ps = &m->sched->steps[s];
        const ir_node *first = m->g->nodes[ps->first];
        if (ps->unit == IR_UNIT_NPU) {
            while (m->prog && seg < m->prog->n_segments && m->prog->segments[seg].step < s)
                seg++;
            if (!m->prog || seg >= m->prog->n_segments || m->prog->segments[seg].step != s)
                return npu_fail(e->err, NPU_EINTERNAL, "NPU step %d (%s) has no command stream", s, first->name);
            const tile_segment *ts = &m->prog->segments[seg];
            e->st = add_step(e, NPUB_STEP_NPU, 0, ts->first_word, ts->n_words, first->name);
            info->n_npu_steps++;
            continue;
        }
        for (int k = 0; k < ps->count && e->st == NPU_OK; k++) {
            const ir_node *n = m->g->nodes[ps->first + k];
            if (n->dead || is_noop_view(e, n))
                continue;
            if (emit_is_part_copy(n)) {
                if (emit_parts(e, n, info) != NPU_OK)
                    return e->st;
                continue;
            }
            emit_tensor_map map = {tensor_index, e};
            uint16_t kernel;
            uint32_t off, size, scratch = 0;
            npu_status st = emit_host_step(m->g, n, &map, &e->params, &kernel, &off, &size, &scratch, e->err);
            if (e->st != NPU_OK) { /* the table's own failure (out of memory), not what the step made of it */
                *e->err = e->first;
                st = e->st;
            }
            if (st != NPU_OK)
                return e->st = npu_err_prefix(e->err, "node '%s' (%s) on the host", n->name, ir_op_name(n->op));
            if (scratch > info->scratch_bytes)
                info->scratch_bytes = scratch;
            e->st = add_step(e, NPUB_STEP_HOST, kernel, off, size, n->name);
            info->n_host_steps++;
        }
    }
    info->n_steps = info->n_host_steps + info->n_npu_steps;
    return e->st;
}

static npu_status emit_io(emitter *e)
{
    const ir_graph *g = e->m->g;
    npub_io io = {(uint32_t)g->n_inputs, (uint32_t)g->n_outputs};
    size_t off;
    e->st = emit_blob_add(&e->io, &io, sizeof io, 4, &off, e->err);
    for (int i = 0; i < g->n_inputs + g->n_outputs && e->st == NPU_OK; i++) {
        const ir_tensor *t = i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs];
        uint32_t idx = tensor_index(e, t);
        if (e->st == NPU_OK)
            e->st = emit_blob_add(&e->io, &idx, sizeof idx, 4, &off, e->err);
    }
    /* the IO-type extension: what the application feeds and receives */
    npub_io_ext x = {NPUB_IO_EXT_MAGIC, NPUB_IO_EXT_VERSION, sizeof(npub_io_type)};
    if (e->st == NPU_OK)
        e->st = emit_blob_add(&e->io, &x, sizeof x, 4, &off, e->err);
    for (int i = 0; i < g->n_inputs + g->n_outputs && e->st == NPU_OK; i++) {
        const ir_tensor *t = i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs];
        npub_io_type r = {.dtype = (uint8_t)t->dtype};
        if ((t->dtype == IR_I8 || t->dtype == IR_U8) && t->quant && t->quant->count == 1) {
            r.has_quant = 1;
            r.scale = t->quant->scale[0];
            r.zero_point = t->quant->zero_point[0];
        }
        e->st = emit_blob_add(&e->io, &r, sizeof r, 4, &off, e->err);
    }
    return e->st;
}

/* The step of the NPU segment holding word w. */
static uint32_t step_of_word(const emitter *e, uint32_t w)
{
    const tile_program *p = e->m->prog;
    for (int i = 0; i < p->n_segments; i++)
        if (w >= p->segments[i].first_word && w < p->segments[i].first_word + p->segments[i].n_words)
            return (uint32_t)p->segments[i].step;
    return 0;
}

static npu_status emit_debug(emitter *e)
{
    const tile_program *p = e->m->prog;
    for (int i = 0; p && i < p->n_layers && e->st == NPU_OK; i++) {
        const tile_layer *l = &p->layers[i];
        npub_debug d = {l->first_word, l->n_words, add_string(e, l->node->name), step_of_word(e, l->first_word)};
        size_t off;
        if (e->st == NPU_OK)
            e->st = emit_blob_add(&e->debug, &d, sizeof d, 4, &off, e->err);
    }
    return e->st;
}

npu_status emit_npub(const emit_model *m, npu_alloc alloc, void **out, size_t *size, emit_info *info, npu_err *err)
{
    emitter e = {.m = m, .alloc = alloc, .err = err};
    emit_blob *blobs[] = {&e.tensors, &e.steps, &e.io, &e.strings, &e.params, &e.debug};
    for (size_t i = 0; i < sizeof blobs / sizeof blobs[0]; i++)
        emit_blob_init(blobs[i], alloc);
    memset(info, 0, sizeof *info);
    size_t nt = (size_t)m->g->n_tensors;
    e.index = npu_malloc(alloc, sizeof *e.index * (nt ? nt : 1));
    void *graph = NULL;
    size_t graph_size = 0, off;
    if (!e.index)
        e.st = npu_fail(err, NPU_EINTERNAL, "out of memory");
    for (size_t i = 0; e.index && i < nt; i++)
        e.index[i] = NPUB_NONE;
    if (e.st == NPU_OK)
        e.st = emit_blob_add(&e.strings, "", 1, 1, &off, err); /* offset 0 is "" */
    if (e.st == NPU_OK)
        emit_steps(&e, info);
    if (e.st == NPU_OK)
        emit_io(&e);
    if (e.st == NPU_OK)
        emit_debug(&e);
    if (e.st == NPU_OK && !m->strip)
        e.st = ir_serialize(m->g, alloc, &graph, &graph_size, err);
    if (e.st == NPU_OK) {
        npub_memory mem;
        memset(&mem, 0, sizeof mem);
        for (int r = 0; r < NPUB_REGION_COUNT; r++)
            mem.region_bytes[r] = (uint32_t)m->plan->region_bytes[r];
        mem.region_bytes[NPUB_REGION_CONST] = (uint32_t)m->consts->size;
        mem.sram_peak_bytes = m->prog ? (uint32_t)m->prog->sram_peak : 0;
        mem.scratch_bytes = info->scratch_bytes;
        mem.arena_lower_bound = (uint32_t)m->plan->arena_lower_bound;
        info->weights_bytes = m->consts->size;
        const uint32_t *words = m->prog ? m->prog->words : NULL;
        size_t n_words = m->prog ? m->prog->n_words : 0;
        fmt_section secs[] = {
            {NPUB_SEC_COMMANDS, words, n_words * sizeof(uint32_t)},
            {NPUB_SEC_CONSTANTS, m->consts->data, m->consts->size},
            {NPUB_SEC_TENSORS, e.tensors.data, e.tensors.size},
            {NPUB_SEC_STEPS, e.steps.data, e.steps.size},
            {NPUB_SEC_IO, e.io.data, e.io.size},
            {NPUB_SEC_STRINGS, e.strings.data, e.strings.size},
            {NPUB_SEC_PARAMS, e.params.data, e.params.size},
            {NPUB_SEC_MEMORY, &mem, sizeof mem},
            {NPUB_SEC_DEBUG, e.debug.data, e.debug.size},
            {NPUB_SEC_GRAPH, graph, graph_size},
            {NPUB_SEC_TARGET, m->target->embed_json, m->target->embed_json ? strlen(m->target->embed_json) : 0},
        };
        int n_secs = m->strip ? 8 : m->target->embed_json ? 11 : 10;
        e.st = fmt_npub_assemble(m->target->name, m->target->hash, m->strip ? NPUB_F_STRIPPED : 0, secs, n_secs,
                                  alloc, out, size, err);
    }
    if (graph)
        npu_free(alloc, graph, graph_size);
    for (size_t i = 0; i < sizeof blobs / sizeof blobs[0]; i++)
        emit_blob_free(blobs[i]);
    npu_free(alloc, e.index, sizeof *e.index * (nt ? nt : 1));
    return e.st;
}
