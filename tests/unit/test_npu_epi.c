/* The eltwise epilogue of conv and dwconv (epi_elt, docs/isa.md): a conv
 * with it must write exactly what the conv followed by the eltwise
 * instruction writes (both run on the NPU model) and what nk_qconv2d then
 * nk_qbinary compute, for every op, with and without broadcast, the
 * operands swapped, in place over its operand, with epi_lut after it, with
 * its input, output and operand as planes apart (src_cs, dst_cs, b_cs); take
 * the conv's cycles; and fault clearly on a bad block, placement or stride. */
#include "tests/support/npu_rig.h"

enum { OPER = 0x50000, ETAB = 0x60000, TABLE = 0x60400 };
/* with plane strides: the input, the output and the operand as planes with gaps (XS, YS, BS) */
enum { XS = 0x44000, YS = 0x48000, BS = 0x58000, GAP_X = 40, GAP_Y = 8, GAP_B = 24 };

typedef struct epi {
    int op, bc;    /* eltwise op, broadcast dims of the operand at b */
    bool dw, swap; /* dwconv; the operand is the eltwise's a */
    bool in_place; /* the operand lies on dst */
    bool lut;      /* epi_lut after the eltwise */
    bool planes;   /* input, output and operand planes apart (src_cs, dst_cs, b_cs) */
} epi;

static const convt CV = {.ic = 5, .oc = 6, .ih = 7, .iw = 6, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1,
                         .pb = 1, .pr = 1, .in_zp = -3, .out_zp = 4, .lo = -100, .hi = 110};
static const convt DW = {.ic = 6, .oc = 6, .ih = 7, .iw = 6, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1,
                         .pb = 1, .pr = 1, .in_zp = 2, .out_zp = -5, .lo = -128, .hi = 127};

static void put32(uint8_t *p, int32_t v)
{
    for (int b = 0; b < 4; b++)
        p[b] = (uint8_t)((uint32_t)v >> (8 * b));
}

/* The eltwise's parameters: the conv's result (its zero point out_zp) is a, or b when swapped. */
static nk_qbinary_params params(const epi *e, const convt *c, nk_shape out, nk_shape opnd)
{
    nk_qbinary_params p = {.op = (nk_qbin_op)e->op, .out_shape = out, .a_shape = e->swap ? opnd : out,
                           .b_shape = e->swap ? out : opnd, .a_zp = e->swap ? -7 : c->out_zp,
                           .b_zp = e->swap ? c->out_zp : -7, .out_zp = 3, .act_min = -120, .act_max = 125};
    static const nk_qbin_op ops[] = {NK_QADD, NK_QSUB, NK_QMUL, NK_QMIN, NK_QMAX};
    p.op = ops[e->op];
    cr_assert_eq(nk_qbinary_prepare(&p, 0.05f, 0.03f, e->op == TGT_ELT_MUL ? 0.4f : 0.07f), NK_OK);
    return p;
}

static void put_block(rig *r, const nk_qbinary_params *p, int op, bool swap)
{
    int32_t w[TGT_ETAB_WORDS] = {[TGT_ETAB_OP] = op, [TGT_ETAB_FLAGS] = swap ? TGT_ETAB_SWAP : 0,
                                 [TGT_ETAB_A_MULT] = p->a_mult, [TGT_ETAB_A_SHIFT] = p->a_shift,
                                 [TGT_ETAB_B_MULT] = p->b_mult, [TGT_ETAB_B_SHIFT] = p->b_shift,
                                 [TGT_ETAB_OUT_MULT] = p->out_mult, [TGT_ETAB_OUT_SHIFT] = p->out_shift,
                                 [TGT_ETAB_A_ZP] = p->a_zp, [TGT_ETAB_B_ZP] = p->b_zp, [TGT_ETAB_OUT_ZP] = p->out_zp,
                                 [TGT_ETAB_CLAMP_LO] = p->act_min, [TGT_ETAB_CLAMP_HI] = p->act_max};
    for (int k = 0; k < TGT_ETAB_WORDS; k++)
        put32(r->sram + ETAB + 4 * k, w[k]);
}

/* conv or dwconv c from src into dst, with the epilogue fields kv[0..n) appended. */
static uint32_t emit_at(rig *r, const convt *c, bool dw, int64_t src, int64_t dst, const tgt_kv *more, size_t n)
{
    tgt_kv kv[40] = {{"src", src}, {"dst", dst}, {"wgt", WGT}, {"qtab", QT}, {"ih", c->ih}, {"iw", c->iw},
                     {"oh", conv_oh(c)}, {"ow", conv_ow(c)}, {"kh", c->kh}, {"kw", c->kw}, {"sh", c->sh},
                     {"sw", c->sw}, {"pt", c->pt}, {"pl", c->pl}, {"pb", c->pb}, {"pr", c->pr},
                     {"in_zp", c->in_zp}, {"out_zp", c->out_zp}, {"clamp_lo", c->lo}, {"clamp_hi", c->hi}};
    size_t k = 20;
    if (dw)
        kv[k++] = (tgt_kv){"c", c->oc};
    else
        kv[k++] = (tgt_kv){"ic", c->ic}, kv[k++] = (tgt_kv){"oc", c->oc};
    for (size_t i = 0; i < n; i++)
        kv[k++] = more[i];
    return emit(r, dw ? "dwconv" : "conv", kv, k);
}

/* conv or dwconv c into DST, with the epilogue fields kv[0..n) appended. */
static uint32_t emit_win(rig *r, const convt *c, bool dw, const tgt_kv *more, size_t n)
{
    return emit_at(r, c, dw, SRC, DST, more, n);
}

/* Copies c dense planes of `plane` bytes at from to planes plane + gap apart at to. */
static void spread(uint8_t *sram, int64_t from, int64_t to, int64_t c, int64_t plane, int64_t gap)
{
    for (int64_t i = 0; i < c; i++)
        memmove(sram + to + i * (plane + gap), sram + from + i * plane, (size_t)plane);
}

static nk_shape shape_bc(nk_shape s, int bc)
{
    return (nk_shape){3, {bc & TGT_BC_C ? 1 : s.dims[0], bc & TGT_BC_H ? 1 : s.dims[1], bc & TGT_BC_W ? 1 : s.dims[2]}};
}

/* Both rigs get the same conv data, operand and block; returns the operand's address. */
static int64_t setup(rig *r, const epi *e, const convt *c, const nk_qbinary_params *p, size_t nb)
{
    qt q;
    conv_data(r, c, e->dw ? c->ic : 1, &q, 77);
    int64_t at = e->in_place ? DST : OPER;
    fill(r->sram + at, nb, 78);
    fill(r->sram + TABLE, 256, 79);
    put_block(r, p, e->op, e->swap);
    return at;
}

static void check_epi(const epi *e)
{
    const convt *c = e->dw ? &DW : &CV;
    nk_shape out = {3, {c->oc, conv_oh(c), conv_ow(c)}}, opnd = shape_bc(out, e->bc);
    size_t n = (size_t)nk_shape_numel(&out), nb = (size_t)nk_shape_numel(&opnd);
    nk_qbinary_params p = params(e, c, out, opnd);
    rig *r = rig_open("edge-v1"), *two = rig_open("edge-v1");
    int64_t at = setup(r, e, c, &p, nb);
    setup(two, e, c, &p, nb);
    uint8_t *s0 = snapshot(r);
    int64_t pin = c->ih * c->iw, pout = (int64_t)out.dims[1] * out.dims[2], pb = (int64_t)opnd.dims[1] * opnd.dims[2];
    bool bcs = e->planes && !e->in_place && !(e->bc & TGT_BC_C);
    if (e->planes) { /* the same bytes, planes apart, the gaps holding other data */
        fill(r->sram + XS, (size_t)(c->ic * (pin + GAP_X)), 90);
        fill(r->sram + YS, (size_t)(c->oc * (pout + GAP_Y)), 91);
        fill(r->sram + BS, (size_t)(opnd.dims[0] * (pb + GAP_B)), 92);
        spread(r->sram, SRC, XS, c->ic, pin, GAP_X);
        if (bcs)
            spread(r->sram, at, BS, opnd.dims[0], pb, GAP_B);
        if (e->in_place)
            spread(r->sram, DST, YS, c->oc, pout, GAP_Y);
    }
    uint8_t *s1 = snapshot(r);
    int64_t b_at = e->planes ? (e->in_place ? YS : bcs ? BS : at) : at;
    uint32_t cv = emit_at(r, c, e->dw, e->planes ? XS : SRC, e->planes ? YS : DST,
                          KV({"epi_elt", 1}, {"b", b_at}, {"b_bc", e->bc}, {"etab", ETAB}, {"epi_lut", e->lut},
                             {"table", e->lut ? TABLE : 0}, {"src_cs", e->planes ? pin + GAP_X : 0},
                             {"dst_cs", e->planes ? pout + GAP_Y : 0},
                             {"b_cs", bcs || (e->planes && e->in_place) ? pb + (e->in_place ? GAP_Y : GAP_B) : 0}));
    END(r, 0);
    run_ok(r);
    if (e->planes) /* the output's planes back together, the gaps as they were */
        for (int64_t i = 0; i < c->oc; i++) {
            int64_t y = YS + i * (pout + GAP_Y);
            cr_assert(memcmp(r->sram + y + pout, s1 + y + pout, GAP_Y) == 0, "gap after output plane %lld written",
                      (long long)i);
            memmove(r->sram + DST + i * pout, r->sram + y, (size_t)pout);
        }
    free(s1);
    /* the reference: nk_qconv2d, nk_qbinary with the operand as it was, the table */
    int8_t *want = malloc(n), *conv_out = malloc(n);
    qt q;
    conv_data(two, c, e->dw ? c->ic : 1, &q, 77); /* the same table again, for the reference */
    conv_ref(r, s0, c, e->dw ? c->ic : 1, &q, conv_out);
    const int8_t *b = (const int8_t *)s0 + at;
    cr_assert_eq(nk_qbinary(&p, e->swap ? b : conv_out, e->swap ? conv_out : b, want), NK_OK);
    if (e->lut)
        nk_lut_apply_i8((const int8_t *)s0 + TABLE, want, want, n);
    cr_assert(memcmp(want, r->sram + DST, n) == 0, "op %d bc %d dw %d swap %d in place %d lut %d: differs from "
              "nk_qconv2d + nk_qbinary", e->op, e->bc, e->dw, e->swap, e->in_place, e->lut);
    /* no extra cycles on a conv; on a dwconv the output stage's mac.cols results a cycle */
    int64_t cols = r->t->p[TGT_P_MAC_COLS], fill_c = r->t->p[TGT_P_MAC_FILL];
    int64_t mac = (int64_t)((c->oc + cols - 1) / cols) * (e->dw ? (out.dims[1] * out.dims[2] + 15) / 16 * 9
                                                                   : (c->ic * 9 + 15) / 16 * out.dims[1] * out.dims[2]);
    int64_t stage = e->dw ? ((int64_t)n + cols - 1) / cols : 0;
    cr_assert_eq(dur(r, cv), (mac > stage ? mac : stage) + fill_c);
    /* the bytes it writes are its output's, not the span of planes apart (bank conflicts, energy) */
    cr_assert_eq(ev_of(r, cv)->sram_write, (uint64_t)n, "planes %d: %llu bytes written", e->planes,
                 (unsigned long long)ev_of(r, cv)->sram_write);
    if (!e->in_place && !e->lut && !e->planes) { /* conv, then the eltwise instruction: the same bytes */
        emit_win(two, c, e->dw, KV({"signal", 1}));
        emit(two, "eltwise", KV({"a", e->swap ? OPER : DST}, {"b", e->swap ? DST : OPER}, {"dst", DST},
                                {"c", out.dims[0]}, {"h", out.dims[1]}, {"w", out.dims[2]}, {"op", e->op},
                                {e->swap ? "a_bc" : "b_bc", e->bc}, {"a_zp", p.a_zp}, {"b_zp", p.b_zp},
                                {"out_zp", p.out_zp}, {"clamp_lo", p.act_min}, {"clamp_hi", p.act_max},
                                {"a_mult", p.a_mult}, {"a_shift", p.a_shift}, {"b_mult", p.b_mult},
                                {"b_shift", p.b_shift}, {"out_mult", p.out_mult}, {"out_shift", p.out_shift},
                                {"wait", 1}));
        END(two, 0);
        run_ok(two);
        cr_assert(memcmp(two->sram + DST, r->sram + DST, n) == 0, "op %d bc %d: epilogue != conv then eltwise",
                  e->op, e->bc);
    }
    free(want);
    free(conv_out);
    free(s0);
    rig_close(r);
    rig_close(two);
}

Test(npu_epi, every_op_equals_conv_then_eltwise)
{
    for (int op = 0; op < TGT_ELT_COUNT; op++) {
        check_epi(&(epi){.op = op});
        check_epi(&(epi){.op = op, .swap = true});
        check_epi(&(epi){.op = op, .dw = true});
    }
}

Test(npu_epi, broadcast_operands)
{
    int bcs[] = {TGT_BC_H | TGT_BC_W, TGT_BC_C, TGT_BC_W, TGT_BC_C | TGT_BC_H | TGT_BC_W};
    for (size_t i = 0; i < sizeof bcs / sizeof bcs[0]; i++) {
        check_epi(&(epi){.op = TGT_ELT_ADD, .bc = bcs[i]});
        check_epi(&(epi){.op = TGT_ELT_MUL, .bc = bcs[i], .dw = true, .swap = true});
    }
}

Test(npu_epi, in_place_over_the_operand_and_with_the_table)
{
    check_epi(&(epi){.op = TGT_ELT_ADD, .in_place = true});
    check_epi(&(epi){.op = TGT_ELT_SUB, .in_place = true, .swap = true, .dw = true});
    check_epi(&(epi){.op = TGT_ELT_ADD, .lut = true});
    check_epi(&(epi){.op = TGT_ELT_MAX, .lut = true, .dw = true, .in_place = true});
}

/* src_cs, dst_cs, b_cs: a conv on planes with gaps between them (a row band of a tensor kept whole)
 * writes what it writes on dense planes, into its planes only; the same cycles. */
Test(npu_epi, planes_apart)
{
    check_epi(&(epi){.op = TGT_ELT_ADD, .planes = true});
    check_epi(&(epi){.op = TGT_ELT_MUL, .planes = true, .dw = true, .swap = true});
    check_epi(&(epi){.op = TGT_ELT_ADD, .planes = true, .lut = true, .bc = TGT_BC_W});
    check_epi(&(epi){.op = TGT_ELT_SUB, .planes = true, .in_place = true, .dw = true});
    check_epi(&(epi){.op = TGT_ELT_MAX, .planes = true, .bc = TGT_BC_C});
}

/* A plane stride under a plane would overlap planes; on int16 activations, partial sums or a b broadcast
 * over channels it means nothing: refused. */
Test(npu_epi, bad_plane_strides_fault)
{
    const struct {
        const char *what;
        tgt_kv kv[3];
    } bad[] = {
        {"src_cs under a plane", {{"src_cs", 41}, {"dst_cs", 0}, {"acc_out", 0}}},
        {"dst_cs under a plane", {{"src_cs", 0}, {"dst_cs", 1}, {"acc_out", 0}}},
        {"dst_cs with acc_out", {{"src_cs", 0}, {"dst_cs", 4096}, {"acc_out", 1}}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rig *r = rig_open("edge-v1");
        qt q;
        conv_data(r, &CV, 1, &q, 5);
        uint8_t *s0 = snapshot(r);
        emit_win(r, &CV, false, KV(bad[i].kv[0], bad[i].kv[1], bad[i].kv[2], {"psum", PSUM}));
        END(r, 0);
        expect_fault(r, "a plane stride is 0 or at least a plane", 0);
        cr_assert(memcmp(s0 + DST, r->sram + DST, 4096) == 0, "%s: dst written", bad[i].what);
        free(s0);
        rig_close(r);
    }
}

/* With acc_out the conv writes partial sums: the epilogue reads nothing and writes nothing. */
Test(npu_epi, partial_sums_skip_the_epilogue)
{
    rig *r = rig_open("edge-v1");
    qt q;
    conv_data(r, &CV, 1, &q, 5);
    memset(r->sram + ETAB, 0xff, TGT_ETAB_BYTES); /* a bad block: would fault if read */
    emit_win(r, &CV, false, KV({"epi_elt", 1}, {"b", OPER}, {"etab", ETAB}, {"acc_out", 1}, {"psum", PSUM}));
    END(r, 0);
    run_ok(r);
    rig_close(r);
}

/* A conv with the epilogue whose block word k is value (k < 0: a good block), operand at b, block at etab. */
static void expect_epi_fault(const char *what, int k, int32_t value, int64_t b, int64_t etab, int a16)
{
    rig *r = rig_open("edge-v1");
    qt q;
    conv_data(r, &CV, 1, &q, 5);
    nk_shape out = {3, {CV.oc, conv_oh(&CV), conv_ow(&CV)}};
    nk_qbinary_params p = params(&(epi){.op = TGT_ELT_ADD}, &CV, out, out);
    put_block(r, &p, TGT_ELT_ADD, false);
    if (k >= 0)
        put32(r->sram + ETAB + 4 * k, value);
    uint8_t *s0 = snapshot(r);
    emit_win(r, &CV, false, KV({"epi_elt", 1}, {"b", b}, {"etab", etab}, {"a16", a16}));
    END(r, 0);
    expect_fault(r, what, 0);
    cr_assert(memcmp(s0 + DST, r->sram + DST, (size_t)nk_shape_numel(&out)) == 0, "%s: dst written", what);
    free(s0);
    rig_close(r);
}

Test(npu_epi, bad_blocks_and_placements_fault)
{
    expect_epi_fault("the block at etab has op 7", TGT_ETAB_OP, 7, OPER, ETAB, 0);
    expect_epi_fault("flags 0x2", TGT_ETAB_FLAGS, 2, OPER, ETAB, 0);
    expect_epi_fault("reserved word 14", 14, 1, OPER, ETAB, 0);
    expect_epi_fault("nk_qbinary refuses", TGT_ETAB_A_SHIFT, 40, OPER, ETAB, 0);
    expect_epi_fault("overlaps dst", -1, 0, DST + 3, ETAB, 0);
    expect_epi_fault("not 4-byte aligned", -1, 0, OPER, ETAB + 2, 0);
    expect_epi_fault("no int16 form", -1, 0, OPER, ETAB, 1);
    expect_epi_fault("SRAM", -1, 0, 0x80000 - 16, ETAB, 0);
}
