/* Slice and Split of int8 (or float) data on the NPU, as DMA box copies (a ShuffleNet
 * block's channel split, a crop). A part the memory planner left in place
 * in its input (an N=1 channel split, mp_split_layout) moves nothing; any
 * other is copied through SRAM: the innermost cut axis and the full axes
 * inside it make one row of contiguous bytes, the axis outside it the rows
 * (read at the input's stride, written dense), the axes further out a loop. */
#include "memplan/memplan.h"
#include "tiler/tile_internal.h"

enum { MOVE_MAX_COPIES = 4096 }; /* loop iterations a part may take (a fine cut of a deep tensor) */

/* A box of x: output dims yd at start st (step 1 on every axis). */
typedef struct move_box {
    int rank;
    int64_t xd[IR_MAX_RANK], yd[IR_MAX_RANK], st[IR_MAX_RANK];
} move_box;

/* Copies of the box: rows over axis b-1 of bytes over axes b..r-1, looped over axes 0..b-2. */
static int64_t box_copies(const move_box *m, int *b_out)
{
    int b = 0;
    for (int d = m->rank - 1; d >= 0; d--)
        if (m->yd[d] != m->xd[d]) {
            b = d;
            break;
        }
    int64_t loops = 1;
    for (int d = 0; d + 1 < b; d++)
        loops *= m->yd[d];
    *b_out = b;
    return loops;
}

static npu_status copy_box(tile_ctx *c, const move_box *m, int xr, int64_t xo, int yr, int64_t yo)
{
    int r = m->rank, b;
    int64_t loops = box_copies(m, &b), xs[IR_MAX_RANK], ys[IR_MAX_RANK], sx = 1, sy = 1;
    for (int d = r - 1; d >= 0; d--) {
        xs[d] = sx, ys[d] = sy;
        sx *= m->xd[d], sy *= m->yd[d];
    }
    if (sy == 0)
        return NPU_OK;
    if (loops > MOVE_MAX_COPIES)
        return tile_fail(c, "a slice of %lld separate boxes (more than %d)", (long long)loops, MOVE_MAX_COPIES);
    int64_t base = xo;
    for (int d = 0; d < r; d++)
        base += m->st[d] * xs[d];
    int64_t rows = b > 0 ? m->yd[b - 1] : 1, rb = m->yd[b] * ys[b];
    int64_t xrs = b > 0 ? xs[b - 1] : rb, yrs = b > 0 ? ys[b - 1] : rb;
    npu_status st = NPU_OK;
    for (int64_t l = 0; l < loops && st == NPU_OK; l++) {
        int64_t so = base, dof = yo, rem = l;
        for (int d = b - 2; d >= 0; d--) {
            so += (rem % m->yd[d]) * xs[d];
            dof += (rem % m->yd[d]) * ys[d];
            rem /= m->yd[d];
        }
        tile_layer_begin(c); /* each copy its own SRAM slots */
        st = tile_copy_rows(c, xr, so, xrs, yr, dof, yrs, rows, rb);
    }
    return st;
}

/* The Slice as a box (the importer normalized its attributes over every axis). */
static bool slice_box(const ir_node *n, move_box *m)
{
    const ir_tensor *x = n->inputs[0], *y = n->outputs[0];
    int r = x->rank;
    int64_t st[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
    if (r < 1 || r > IR_MAX_RANK || y->rank != r || ir_attr_ints(n, "starts", st, r) != r ||
        ir_attr_ints(n, "axes", ax, r) != r || ir_attr_ints(n, "steps", sp, r) != r)
        return false;
    m->rank = r;
    for (int d = 0; d < r; d++) {
        if (ax[d] != d || sp[d] != 1 || st[d] < 0 || st[d] + y->dims[d] > x->dims[d])
            return false;
        m->xd[d] = x->dims[d], m->yd[d] = y->dims[d], m->st[d] = st[d];
    }
    return true;
}

/* Part j of a Split: its offset along the axis is the sum of the parts before it. */
static bool split_box(const ir_node *n, int j, move_box *m)
{
    const ir_tensor *x = n->inputs[0];
    int r = x->rank;
    int64_t a = ir_attr_int(n, "axis", 0);
    if (a < 0)
        a += r;
    if (r < 1 || r > IR_MAX_RANK || a < 0 || a >= r)
        return false;
    int64_t at = 0;
    for (int k = 0; k < j; k++)
        at += n->outputs[k] ? n->outputs[k]->dims[a] : 0;
    const ir_tensor *y = n->outputs[j];
    m->rank = r;
    for (int d = 0; d < r; d++) {
        if (y->rank != r || (d != a && y->dims[d] != x->dims[d]))
            return false;
        m->xd[d] = x->dims[d], m->yd[d] = y->dims[d], m->st[d] = d == a ? at : 0;
    }
    return at + y->dims[a] <= x->dims[a];
}

bool tile_move_shape(const ir_node *n)
{
    move_box m;
    const ir_tensor *x = n->inputs[0];
    if (!x || x->data || (x->dtype != IR_I8 && x->dtype != IR_F32) || n->n_outputs > 64)
        return false;
    for (int j = 0; j < n->n_outputs; j++) {
        int b;
        if (n->outputs[j] && (n->op == IR_OP_SLICE ? !slice_box(n, &m) : !split_box(n, j, &m)))
            return false;
        if (n->outputs[j] && box_copies(&m, &b) > MOVE_MAX_COPIES)
            return false;
        if (n->outputs[j] && n->outputs[j]->dtype != x->dtype)
            return false;
    }
    return true;
}

npu_status tile_move(tile_ctx *c, const ir_node *n)
{
    const ir_tensor *x = n->inputs[0];
    int64_t prefix[64];
    /* an element of es bytes: the innermost axis counted in bytes (a float Split a QDQ model leaves
     * between its DequantizeLinear and the Qs of its parts) */
    int bits = ir_dtype_bits(x->dtype), es = bits / 8;
    if (bits % 8 || es < 1 || !tile_move_shape(n))
        return tile_fail(c, "a slice or split of other than whole elements in boxes of step 1");
    bool ranges = mp_split_layout(n, prefix);
    int xr;
    int64_t xo;
    npu_status st = tile_tensor_addr(c, x, &xr, &xo);
    for (int j = 0; j < n->n_outputs && st == NPU_OK; j++) {
        const ir_tensor *y = n->outputs[j];
        int yr;
        int64_t yo;
        move_box m;
        if (!y || (st = tile_tensor_addr(c, y, &yr, &yo)) != NPU_OK)
            continue;
        if (ranges && yr == xr && yo == xo + prefix[j])
            continue; /* left in place by the planner: nothing moves */
        if (n->op == IR_OP_SLICE)
            slice_box(n, &m);
        else
            split_box(n, j, &m);
        m.xd[m.rank - 1] *= es, m.yd[m.rank - 1] *= es, m.st[m.rank - 1] *= es;
        st = copy_box(c, &m, xr, xo, yr, yo);
    }
    return st;
}
