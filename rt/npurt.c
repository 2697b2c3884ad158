/* libnpurt: open a .npub and run its steps (rt/npurt.h). */
#include "rt/npurt.h"

#include <string.h>

/* ---- messages without snprintf (the firmware has no use for it) ----------- */

typedef struct msgbuf {
    char *o, *end;
} msgbuf;

static void put_s(msgbuf *m, const char *s)
{
    while (*s && m->o < m->end)
        *m->o++ = *s++;
}

static void put_d(msgbuf *m, int64_t v)
{
    char num[20];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)-v : (uint64_t)v;
    if (v < 0)
        put_s(m, "-");
    do
        num[n++] = (char)('0' + u % 10);
    while ((u /= 10) && n < 20);
    while (n && m->o < m->end)
        *m->o++ = num[--n];
}

/* msg with up to two %d (or %u) filled from a and b */
static void put_fmt(msgbuf *m, const char *msg, int64_t a, int64_t b)
{
    int64_t vals[2] = {a, b};
    int vi = 0;
    for (const char *s = msg; *s && m->o < m->end; s++) {
        if (s[0] == '%' && (s[1] == 'd' || s[1] == 'u') && vi < 2) {
            put_d(m, vals[vi++]);
            s++;
        } else {
            *m->o++ = *s;
        }
    }
}

/* "step N (node 'name', KERNEL): [byte B: ]msg" */
static int step_fail(npub_error *err, const npub_view *v, uint32_t step, int64_t byte, uint32_t offset,
                     const char *msg, int64_t a, int64_t b)
{
    if (!err)
        return -1;
    msgbuf m = {err->msg, err->msg + sizeof err->msg - 1};
    const npub_step *s = &v->steps[step];
    put_s(&m, "step ");
    put_d(&m, step);
    put_s(&m, " (node '");
    put_s(&m, npub_string(v, s->name));
    put_s(&m, "', ");
    put_s(&m, s->kind == NPUB_STEP_NPU ? "NPU" : npurt_kernel_name(s->op));
    put_s(&m, "): ");
    if (byte >= 0) {
        put_s(&m, "byte ");
        put_d(&m, byte);
        put_s(&m, ": ");
    }
    put_fmt(&m, msg, a, b);
    *m.o = '\0';
    err->offset = offset;
    return -1;
}

static int env_fail(npub_error *err, const char *msg, int64_t a, int64_t b)
{
    if (!err)
        return -1;
    msgbuf m = {err->msg, err->msg + sizeof err->msg - 1};
    put_s(&m, "npurt: ");
    put_fmt(&m, msg, a, b);
    *m.o = '\0';
    err->offset = NPUB_NONE;
    return -1;
}

/* ---- open ------------------------------------------------------------------ */

const void *npurt_step_record(const npub_view *v, uint32_t i)
{
    if (i >= v->n_steps || v->steps[i].kind != NPUB_STEP_HOST || !v->params)
        return NULL;
    return v->params + v->steps[i].a;
}

static uint32_t params_file_offset(const npub_view *v, const npub_step *s)
{
    return v->sec[NPUB_SEC_PARAMS] ? v->sec[NPUB_SEC_PARAMS]->offset + s->a : 0;
}

/* Every check npurt_open makes on one host step; scratch gets its need. */
static int check_step(const npub_view *v, uint32_t i, const npurt_op *const *ops, npub_error *err)
{
    const npub_step *s = &v->steps[i];
    uint32_t base = params_file_offset(v, s);
    npurt_fault f;
    uint32_t scratch;
    if (!v->params || s->b == 0)
        return step_fail(err, v, i, -1, base, "a host step without a parameter record", 0, 0);
    const npurt_op *op = npurt_ops_find(ops, s->op);
    if (!op)
        return step_fail(err, v, i, -1, base, "kernel %d is not in the firmware's op table", s->op, 0);
    const void *rec = v->params + s->a;
    if (op->check(rec, s->b, &scratch, &f) || op->check_tensors(v, rec, &f))
        return step_fail(err, v, i, base + f.at, base + f.at, f.msg, f.a, f.b);
    const npurt_rec_header *h = rec;
    if (h->kernel != s->op)
        return step_fail(err, v, i, base + 4, base + 4, "the record is kernel %d, the step says %d",
                         h->kernel, s->op);
    if (scratch > v->memory->scratch_bytes)
        return step_fail(err, v, i, -1, base, "needs %d bytes of scratch, the binary provides %d", scratch,
                         v->memory->scratch_bytes);
    return 0;
}

int npurt_open_ops(const void *blob, size_t size, const npurt_op *const *ops, npub_view *v, npub_error *err)
{
    if (npub_open(blob, size, v, err))
        return -1;
    for (uint32_t i = 0; i < v->n_steps; i++)
        if (v->steps[i].kind == NPUB_STEP_HOST && check_step(v, i, ops, err))
            return -1;
    return 0;
}

/* Every kernel's checks without their runs: a firmware that only validates
 * (npurt_open) links no kernel. */
static const npurt_op check_any = {0, npurt_rec_check, npurt_rec_check_tensors, NULL};
static const npurt_op *const checks_all[] = {&check_any, NULL};

int npurt_open(const void *blob, size_t size, npub_view *v, npub_error *err)
{
    return npurt_open_ops(blob, size, checks_all, v, err);
}

/* ---- run ------------------------------------------------------------------- */

static int check_env(const npub_view *v, const npurt_env *env, uint8_t *base[NPUB_REGION_COUNT],
                     npub_error *err)
{
    static const char *const names[NPUB_REGION_COUNT] = {"const", "arena", "input", "output"};
    for (int r = 0; r < NPUB_REGION_COUNT; r++) {
        uint32_t need = v->memory->region_bytes[r];
        base[r] = env->region[r];
        if (r == NPUB_REGION_CONST && !base[r]) {
            base[r] = (uint8_t *)(uintptr_t)v->constants; /* read-only: no record writes a constant */
            continue;
        }
        if (need && (!base[r] || env->region_size[r] < need)) {
            if (err) {
                msgbuf m = {err->msg, err->msg + sizeof err->msg - 1};
                put_s(&m, "npurt: the ");
                put_s(&m, names[r]);
                put_fmt(&m, " region has %d bytes, the binary needs %d", base[r] ? env->region_size[r] : 0,
                        need);
                *m.o = '\0';
                err->offset = NPUB_NONE;
            }
            return -1;
        }
    }
    uint32_t scratch = v->memory->scratch_bytes;
    if (scratch && (!env->scratch || env->scratch_size < scratch))
        return env_fail(err, "scratch of %d bytes, the binary needs %d", env->scratch ? env->scratch_size : 0,
                        scratch);
    if ((uintptr_t)env->scratch % 4)
        return env_fail(err, "scratch is not 4-byte aligned", 0, 0);
    return 0;
}

static int run_host(const npub_view *v, uint32_t i, const npurt_op *const *ops,
                    uint8_t *const base[NPUB_REGION_COUNT], void *scratch, npub_error *err)
{
    const npub_step *s = &v->steps[i];
    const npurt_op *op = npurt_ops_find(ops, s->op);
    if (!op)
        return step_fail(err, v, i, -1, i, "kernel %d is not in the firmware's op table", s->op, 0);
    const void *rec = v->params + s->a;
    const npurt_rec_header *h = rec;
    const uint32_t *slot = npurt_rec_tensors(rec);
    void *data[2 * NPURT_REC_MAX_IO];
    uint8_t dtypes[2 * NPURT_REC_MAX_IO];
    npurt_fault f;
    uint32_t need;
    /* cheap next to the kernel, and keeps a view that only passed npub_open safe */
    if (op->check(rec, s->b, &need, &f) || op->check_tensors(v, rec, &f))
        return step_fail(err, v, i, -1, i, f.msg, f.a, f.b);
    for (uint32_t k = 0; k < h->n_inputs + h->n_outputs; k++) {
        data[k] = NULL;
        dtypes[k] = 0;
        if (slot[k] == NPUB_NONE)
            continue;
        const npub_tensor *t = &v->tensors[slot[k]];
        data[k] = base[t->region] + t->offset;
        dtypes[k] = t->dtype;
        if (npub_dtype_bits(t->dtype) >= 16 && (uintptr_t)data[k] % (npub_dtype_bits(t->dtype) >= 32 ? 4 : 2))
            return step_fail(err, v, i, -1, i, "tensor %d is not aligned for its dtype", (int64_t)slot[k], 0);
    }
    if (op->run(rec, data, dtypes, scratch, &f))
        return step_fail(err, v, i, -1, i, f.msg, f.a, f.b);
    return 0;
}

int npurt_run(const npub_view *v, const npurt_env *env, npub_error *err)
{
    return npurt_run_ops(v, env, npurt_ops_all, err);
}

int npurt_run_ops(const npub_view *v, const npurt_env *env, const npurt_op *const *ops, npub_error *err)
{
    uint8_t *base[NPUB_REGION_COUNT];
    if (!v->memory || check_env(v, env, base, err))
        return -1;
    for (uint32_t i = 0; i < v->n_steps; i++) {
        const npub_step *s = &v->steps[i];
        if (env->on_step)
            env->on_step(env->step_ud, i, 0);
        if (s->kind == NPUB_STEP_NPU) {
            if (!env->npu_launch)
                return step_fail(err, v, i, -1, i, "an NPU step, and the environment has no npu_launch", 0,
                                 0);
            int rc = env->npu_launch(env->npu_ud, v, s->a, s->b, base);
            if (rc)
                return step_fail(err, v, i, -1, i, "the NPU reported fault %d", rc, 0);
        } else if (run_host(v, i, ops, base, env->scratch, err)) {
            return -1;
        }
        if (env->on_step)
            env->on_step(env->step_ud, i, 1);
    }
    return 0;
}
