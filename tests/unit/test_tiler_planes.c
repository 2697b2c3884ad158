/* Tests of plane strides in the tiler (src_cs, dst_cs, b_cs; docs/isa.md,
 * docs/tiler.md "SRAM-resident tensors"): a cascade over row bands reads and
 * writes tensors the plan keeps in SRAM in place, each band a set of rows of
 * every plane, where the ISA has the strides (npu-v1; without them, as on
 * npu-v1-narrow, such an operand must be whole planes). Checked: the bands,
 * no activation stored by DMA, the strides on the instructions that touch
 * the resident tensors and not on the depthwise conv between them, the
 * output bit for bit against the reference on the NPU model. */
#include "tests/support/tiler_graphs.h"

/* in -> stem 1x1 -> [expand 1x1 -> depthwise 3x3 -> project 1x1 -> add(stem out)] -> tail 1x1 -> out:
 * MobileNetV2's block 3 (24 -> 144 -> 24 channels at 56x56) between two convs, so that the block's input
 * and output are activations the plan can keep in SRAM. */
static ir_graph *framed_block3(ir_tensor **x_out, ir_tensor **z_out)
{
    ir_graph *g = ir_graph_new(npu_alloc_default());
    int64_t hw = 56, xd[4] = {1, 8, hw, hw}, sd[4] = {1, 24, hw, hw};
    ir_tensor *in = act(g, "in", 4, xd, 0.04f, -6);
    conv_spec stem = {1, 8, hw, hw, 24, 1, 1, 0, 1, IR_I8, true, 1};
    conv_spec e = {1, 24, hw, hw, 144, 1, 1, 0, 1, IR_I8, true, 1};
    conv_spec d = {1, 144, hw, hw, 144, 3, 1, 1, 144, IR_I8, true, 1};
    conv_spec p = {1, 144, hw, hw, 24, 1, 1, 0, 1, IR_I8, false, 1};
    conv_spec tail = {1, 24, hw, hw, 8, 1, 1, 0, 1, IR_I8, true, 1};
    ir_tensor *x = add_conv(g, in, &stem, "stem", 91);
    ir_tensor *y = add_conv(g, add_conv(g, add_conv(g, x, &e, "expand", 93), &d, "dw", 95), &p, "project", 97);
    ir_tensor *z = act(g, "sum", 4, sd, 0.06f, -2), *ins[2] = {y, x};
    ir_node_new(g, IR_OP_ADD, "add", 2, ins, 1, &z);
    tg_set_io(g, 1, &in, add_conv(g, z, &tail, "tail", 99));
    *x_out = x, *z_out = z;
    return g;
}

static bool has_plane_strides(const tgt_target *t)
{
    int conv = tgt_insn_for_sem(t->isa, TGT_SEM_CONV), dw = tgt_insn_for_sem(t->isa, TGT_SEM_DWCONV);
    return tgt_insn_field(t->isa, conv, TGT_F_SRC_CS) && tgt_insn_field(t->isa, conv, TGT_F_DST_CS) &&
           tgt_insn_field(t->isa, conv, TGT_F_B_CS) && tgt_insn_field(t->isa, dw, TGT_F_SRC_CS);
}

/* The block's input and output resident: on npu-v1 its cascade runs in bands (its 451 KB of expanded rows
 * do not fit beside them), every band's expand reading rows of the input's planes, its projection writing
 * rows of the output's and adding rows of the input's, none through DRAM. */
Test(tiler_planes, bands_of_resident_tensors_in_place)
{
    const char *names[] = {"edge-v1"};
    for (size_t ti = 0; ti < sizeof names / sizeof names[0]; ti++) {
        tgt_target *t = load_target(names[ti]);
        cr_assert(has_plane_strides(t), "%s: npu-v1 has plane strides", t->name);
        ir_tensor *x, *z;
        ir_graph *g = framed_block3(&x, &z);
        const ir_tensor *res[2] = {x, z};
        built b;
        int counts[TG_COUNTS];
        build_resident(t, g, res, 2, "block 3 in place", &b, counts);
        const tile_layer *L = &b.prog.layers[1]; /* the expand, heading the cascade */
        cr_assert(b.prog.layers[2].fused && b.prog.layers[3].fused && b.prog.layers[4].fused,
                  "%s: the block cascades", t->name);
        cr_assert_gt(L->tiles, 1, "%s: in bands", t->name);
        cr_assert_eq(store_bytes(t, L, &b.prog), 0, "%s: the output written in place", t->name);
        int64_t plane = 56 * 56;
        /* each band's expand (one per channel chunk, as many as depthwise convs) reads 24 planes of the
         * input, the projection writes 24 of the output and adds 24 of the input, all with the tensor's plane
         * stride */
        cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_CONV, TGT_F_SRC_CS), counts[TGT_SEM_DWCONV] * plane, "%s",
                     t->name);
        cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_CONV, TGT_F_DST_CS), L->tiles * plane, "%s", t->name);
        cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_CONV, TGT_F_B_CS), L->tiles * plane, "%s", t->name);
        cr_assert_eq(field_sum(t, L, &b.prog, TGT_SEM_DWCONV, TGT_F_SRC_CS) +
                         field_sum(t, L, &b.prog, TGT_SEM_DWCONV, TGT_F_DST_CS), 0,
                     "%s: the depthwise conv works on slots", t->name);
        finish_built(t, &b, "block 3 in place", 101 + (uint32_t)ti);
        tgt_free(t);
    }
}
