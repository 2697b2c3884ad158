/* The model API (rt/npurt_model.h) over npurt_open_ops / npurt_run_ops. */
#include "rt/npurt_model.h"

#include <string.h>

#include "rt/npurt_hal.h"

const char *npurt_strerror(npurt_status s)
{
    static const char *const msg[] = {
        "ok",
        "bad argument or index",
        "misaligned blob or work area",
        "the binary does not validate",
        "a host kernel is not in the op table",
        "no work area, or one too small",
        "no input or output of that name",
        "size differs from the tensor's",
        "a host step failed",
        "the NPU failed",
    };
    return (unsigned)s < sizeof msg / sizeof msg[0] ? msg[s] : "unknown npurt status";
}

static npurt_status fail(npurt_model *m, npurt_status st, const char *msg)
{
    size_t n = 0;
    while (msg[n] && n + 1 < sizeof m->error.msg) {
        m->error.msg[n] = msg[n];
        n++;
    }
    m->error.msg[n] = '\0';
    m->error.offset = NPUB_NONE;
    return st;
}

static uint32_t align16(uint32_t n)
{
    return (n + 15u) & ~15u;
}

npurt_status npurt_model_open(npurt_model *m, const void *blob, size_t size, const npurt_op *const *ops)
{
    if (!m)
        return NPURT_EARG;
    memset(m, 0, sizeof *m);
    if (!blob || !ops)
        return fail(m, NPURT_EARG, "npurt: no blob or no op table");
    if ((uintptr_t)blob % 8)
        return fail(m, NPURT_EALIGN, "npurt: the blob is not 8-byte aligned");
    if (npurt_open_ops(blob, size, ops, &m->view, &m->error)) {
        /* the table's own refusal, told apart from a broken binary */
        static const char tag[] = "not in the firmware's op table";
        size_t n = strlen(m->error.msg), t = sizeof tag - 1;
        return n >= t && memcmp(m->error.msg + n - t, tag, t) == 0 ? NPURT_EOPS : NPURT_EBLOB;
    }
    if (!m->view.memory || !m->view.io)
        return fail(m, NPURT_EBLOB, "npurt: the binary has no memory or I/O section");
    uint64_t total = 0;
    for (int r = NPUB_REGION_ARENA; r < NPUB_REGION_COUNT; r++)
        total += align16(m->view.memory->region_bytes[r]);
    total += align16(m->view.memory->scratch_bytes);
    if (total > 0xfffffff0u)
        return fail(m, NPURT_EBLOB, "npurt: the binary needs more than 4 GiB of memory");
    m->work_bytes = (uint32_t)total;
    m->ops = ops;
    m->env.npu_launch = npurt_npu_launch;
    m->opened = 1;
    return NPURT_OK;
}

uint32_t npurt_model_work_bytes(const npurt_model *m)
{
    return m && m->opened ? m->work_bytes : 0;
}

npurt_status npurt_model_set_work(npurt_model *m, void *work, size_t size)
{
    if (!m || !m->opened || (!work && m->work_bytes))
        return NPURT_EARG;
    if ((uintptr_t)work % 16)
        return fail(m, NPURT_EALIGN, "npurt: the work area is not 16-byte aligned");
    if (size < m->work_bytes)
        return fail(m, NPURT_ENOWORK, "npurt: the work area is smaller than npurt_model_work_bytes");
    uint8_t *p = work;
    const npub_memory *mem = m->view.memory;
    m->env.region[NPUB_REGION_CONST] = NULL; /* the blob's CONSTANTS section */
    m->env.region_size[NPUB_REGION_CONST] = 0;
    for (int r = NPUB_REGION_ARENA; r < NPUB_REGION_COUNT; r++) {
        m->env.region[r] = p;
        m->env.region_size[r] = mem->region_bytes[r];
        p += align16(mem->region_bytes[r]);
    }
    m->env.scratch = p;
    m->env.scratch_size = mem->scratch_bytes;
    m->has_work = 1;
    return NPURT_OK;
}

void npurt_model_set_npu(npurt_model *m,
                         int (*launch)(void *ud, const npub_view *v, uint32_t first, uint32_t count,
                                       uint8_t *const region[4]),
                         void *ud)
{
    if (m) {
        m->env.npu_launch = launch;
        m->env.npu_ud = ud;
    }
}

uint32_t npurt_model_input_count(const npurt_model *m)
{
    return m && m->opened ? m->view.io->n_inputs : 0;
}

uint32_t npurt_model_output_count(const npurt_model *m)
{
    return m && m->opened ? m->view.io->n_outputs : 0;
}

/* Binding b: inputs 0..n_in-1, then outputs (the IO section's order). */
static const npub_tensor *binding(const npurt_model *m, int output, uint32_t index, uint32_t *b)
{
    if (!m || !m->opened || index >= (output ? m->view.io->n_outputs : m->view.io->n_inputs))
        return NULL;
    *b = output ? m->view.io->n_inputs + index : index;
    return &m->view.tensors[m->view.inputs[*b]];
}

static npurt_status info_of(const npurt_model *m, int output, uint32_t index, npurt_tensor_info *info)
{
    uint32_t b;
    const npub_tensor *t = binding(m, output, index, &b);
    if (!t || !info)
        return NPURT_EARG;
    memset(info, 0, sizeof *info);
    info->name = npub_string(&m->view, t->name);
    info->index = index;
    info->dtype = t->dtype;
    info->rank = t->rank;
    for (uint32_t d = 0; d < t->rank && d < NPUB_MAX_RANK; d++)
        info->dims[d] = t->dims[d];
    info->bytes = t->size;
    /* the IO types when the file has them, as the generated header's macros */
    const npub_io_type *r = m->view.io_types ? &m->view.io_types[b] : NULL;
    info->quantized = r ? r->has_quant : t->has_quant;
    info->scale = info->quantized ? (r ? r->scale : t->scale) : 1.0f;
    info->zero_point = info->quantized ? (r ? r->zero_point : t->zero_point) : 0;
    return NPURT_OK;
}

npurt_status npurt_model_input(const npurt_model *m, uint32_t index, npurt_tensor_info *info)
{
    return info_of(m, 0, index, info);
}

npurt_status npurt_model_output(const npurt_model *m, uint32_t index, npurt_tensor_info *info)
{
    return info_of(m, 1, index, info);
}

static npurt_status find(const npurt_model *m, int output, const char *name, uint32_t *index)
{
    if (!m || !m->opened || !name || !index)
        return NPURT_EARG;
    uint32_t n = output ? m->view.io->n_outputs : m->view.io->n_inputs, b;
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(npub_string(&m->view, binding(m, output, i, &b)->name), name) == 0) {
            *index = i;
            return NPURT_OK;
        }
    return NPURT_ENOTFOUND;
}

npurt_status npurt_model_find_input(const npurt_model *m, const char *name, uint32_t *index)
{
    return find(m, 0, name, index);
}

npurt_status npurt_model_find_output(const npurt_model *m, const char *name, uint32_t *index)
{
    return find(m, 1, name, index);
}

static uint8_t *data_of(const npurt_model *m, int output, uint32_t index, uint32_t *bytes)
{
    uint32_t b;
    const npub_tensor *t = binding(m, output, index, &b);
    if (!t || !m->has_work)
        return NULL;
    *bytes = t->size;
    return m->env.region[t->region] + t->offset; /* npub_open: I/O tensors lie inside their regions */
}

void *npurt_model_input_data(npurt_model *m, uint32_t index)
{
    uint32_t n;
    return data_of(m, 0, index, &n);
}

const void *npurt_model_output_data(const npurt_model *m, uint32_t index)
{
    uint32_t n;
    return data_of(m, 1, index, &n);
}

npurt_status npurt_model_set_input(npurt_model *m, uint32_t index, const void *data, size_t bytes)
{
    uint32_t n = 0;
    uint8_t *p = data_of(m, 0, index, &n);
    if (!m || !m->opened || index >= m->view.io->n_inputs || (!data && bytes))
        return NPURT_EARG;
    if (!p)
        return fail(m, NPURT_ENOWORK, "npurt: no work area");
    if (bytes != n)
        return fail(m, NPURT_ESIZE, "npurt: the input has another size");
    if (n)
        memcpy(p, data, n);
    return NPURT_OK;
}

npurt_status npurt_model_get_output(const npurt_model *m, uint32_t index, void *data, size_t bytes)
{
    uint32_t n = 0;
    const uint8_t *p = data_of(m, 1, index, &n);
    if (!m || !m->opened || index >= m->view.io->n_outputs || (!data && bytes))
        return NPURT_EARG;
    if (!p)
        return NPURT_ENOWORK;
    if (bytes != n)
        return NPURT_ESIZE;
    if (n)
        memcpy(data, p, n);
    return NPURT_OK;
}

npurt_status npurt_model_run(npurt_model *m)
{
    if (!m || !m->opened)
        return NPURT_EARG;
    if (!m->has_work)
        return fail(m, NPURT_ENOWORK, "npurt: no work area");
    if (npurt_run_ops(&m->view, &m->env, m->ops, &m->error) == 0)
        return NPURT_OK;
    uint32_t step = m->error.offset;
    if (step >= m->view.n_steps)
        return NPURT_ENOWORK; /* the environment before any step: cannot happen with set_work's layout */
    return m->view.steps[step].kind == NPUB_STEP_NPU ? NPURT_ENPU : NPURT_ESTEP;
}

const char *npurt_model_message(const npurt_model *m)
{
    return m ? m->error.msg : "";
}
