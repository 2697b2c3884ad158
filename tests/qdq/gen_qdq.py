#!/usr/bin/python3
"""Small pre-quantized (QDQ) ONNX models for tests/unit/test_qdq_import.c and
tests/qdq/run.sh: a float Conv -> Relu -> Conv -> Add -> GlobalAveragePool
-> Flatten -> Gemm model written in QDQ form with hand-made quantization:
weights int8 symmetric per output channel (axis 0), biases int32 at
in_scale * w_scale, activations per tensor with scales from the float
activations' ranges on the shipped input (computed here in numpy).

Usage: gen_qdq.py [OUTDIR (tests/qdq)] -> OUTDIR/qdq_s8.onnx (int8 activations),
OUTDIR/qdq_u8.onnx (uint8 activations, onnxruntime's default) and
OUTDIR/qdq_input.npy, OUTDIR/qdq_w128.onnx (weights as PyTorch quantizes them, codes -128); OUTDIR/qdq_ops.onnx and qdq_ops_input.npy, qlinear_u8.onnx and its QDQ twin
qlinear_twin.onnx (below). Fixed seed: reruns write identical files."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(1234)
C0, C1, H, W, NCLS = 3, 8, 8, 8, 10
x = rng.uniform(-1, 1, (1, C0, H, W)).astype(np.float32)
w1 = rng.normal(0, 0.4, (C1, C0, 3, 3)).astype(np.float32)
b1 = rng.normal(0, 0.1, C1).astype(np.float32)
w2 = rng.normal(0, 0.2, (C1, C1, 3, 3)).astype(np.float32)
b2 = rng.normal(0, 0.1, C1).astype(np.float32)
wf = rng.normal(0, 0.3, (NCLS, C1)).astype(np.float32)
bf = rng.normal(0, 0.1, NCLS).astype(np.float32)


def conv3x3(a, w, b):
    n, c, h, wd = a.shape
    p = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd), np.float64)
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", p[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return (out + b[None, :, None, None]).astype(np.float32)


def act_params(t, unsigned):
    lo, hi = min(float(t.min()), 0.0), max(float(t.max()), 0.0)
    s = np.float32((hi - lo) / 255.0)
    zp = int(round(-128 - lo / s))
    zp = max(-128, min(127, zp))
    return s, (zp + 128 if unsigned else zp)


# float activations (the ranges the hand-made scales come from)
r1 = np.maximum(conv3x3(x, w1, b1), 0)
c2 = conv3x3(r1, w2, b2)
a = r1 + c2
gp = a.mean(axis=(2, 3), keepdims=True)
fl = gp.reshape(1, C1)
y = fl @ wf.T + bf


def build(unsigned, torch=False):
    """torch: weights as PyTorch's symmetric qint8 quantizes them (scale amax / 127.5 over [-128, 127]: the most
    negative weight of a channel takes the code -128)."""
    adt = TensorProto.UINT8 if unsigned else TensorProto.INT8
    npdt = np.uint8 if unsigned else np.int8
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def qdq(src, t, name):
        s, zp = act_params(t, unsigned)
        sn = const(name + "_scale", np.array(s, np.float32))
        zn = const(name + "_zp", np.array(zp, npdt))
        # uint8 Relu output: zero point 0 is ONNX's default, omitted (the type is then uint8)
        args = [sn] if unsigned and zp == 0 and name == "r1" else [sn, zn]
        nodes.append(helper.make_node("QuantizeLinear", [src] + args, [name + "_q"], name=name + "_Q"))
        nodes.append(helper.make_node("DequantizeLinear", [name + "_q"] + args, [name + "_dq"], name=name + "_DQ"))
        return name + "_dq", s

    def weight(name, w, in_scale, b):
        amax = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
        ws = (amax / (127.5 if torch else 127)).astype(np.float32)
        wq = np.clip(np.round(w / ws.reshape(-1, *([1] * (w.ndim - 1)))), -128 if torch else -127, 127)
        wq = wq.astype(np.int8)
        const(name + "_wq", wq)
        const(name + "_ws", ws)
        const(name + "_wzp", np.zeros(w.shape[0], np.int8))
        nodes.append(helper.make_node("DequantizeLinear", [name + "_wq", name + "_ws", name + "_wzp"],
                                      [name + "_w"], name=name + "_wDQ", axis=0))
        bs = (np.float64(in_scale) * ws.astype(np.float64)).astype(np.float32)
        bq = np.round(b / bs).astype(np.int32)
        const(name + "_bq", bq)
        const(name + "_bs", bs)
        const(name + "_bzp", np.zeros(w.shape[0], np.int32))
        nodes.append(helper.make_node("DequantizeLinear", [name + "_bq", name + "_bs", name + "_bzp"],
                                      [name + "_b"], name=name + "_bDQ", axis=0))
        return name + "_w", name + "_b"

    xin, sx = qdq("x", x, "xin")
    cw, cb = weight("conv1", w1, sx, b1)
    nodes.append(helper.make_node("Conv", [xin, cw, cb], ["c1"], name="conv1", pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Relu", ["c1"], ["r1"], name="relu1"))  # ONNX QDQ: Relu inside the Q
    r1in, sr1 = qdq("r1", r1, "r1")
    cw, cb = weight("conv2", w2, sr1, b2)
    nodes.append(helper.make_node("Conv", [r1in, cw, cb], ["c2"], name="conv2", pads=[1, 1, 1, 1]))
    c2in, _ = qdq("c2", c2, "c2")
    nodes.append(helper.make_node("Add", [r1in, c2in], ["a"], name="add"))
    ain, _ = qdq("a", a, "a")
    nodes.append(helper.make_node("GlobalAveragePool", [ain], ["gp"], name="gap"))
    gpin, sgp = qdq("gp", gp, "gp")
    nodes.append(helper.make_node("Flatten", [gpin], ["fl"], name="flatten"))
    # Flatten keeps the scale: its Q/DQ uses gp's parameters
    nodes.append(helper.make_node("QuantizeLinear", ["fl", "gp_scale", "gp_zp"], ["fl_q"], name="fl_Q"))
    nodes.append(helper.make_node("DequantizeLinear", ["fl_q", "gp_scale", "gp_zp"], ["fl_dq"], name="fl_DQ"))
    gw, gb = weight("fc", wf, sgp, bf)
    nodes.append(helper.make_node("Gemm", ["fl_dq", gw, gb], ["logits"], name="fc", transB=1))
    s, zp = act_params(y, unsigned)
    const("y_scale", np.array(s, np.float32))
    const("y_zp", np.array(zp, npdt))
    nodes.append(helper.make_node("QuantizeLinear", ["logits", "y_scale", "y_zp"], ["y_q"], name="y_Q"))
    nodes.append(helper.make_node("DequantizeLinear", ["y_q", "y_scale", "y_zp"], ["y"], name="y_DQ"))
    graph = helper.make_graph(nodes, "qdq_" + ("u8" if unsigned else "s8") + ("_w128" if torch else ""),
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C0, H, W])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, NCLS])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen_qdq.py")
    onnx.checker.check_model(m)
    return m


# second model: MaxPool, a per-tensor 1x1 Conv, Sigmoid (a table), Concat,
# Reshape, MatMul by [K, N] weights quantized along axis 1, and a float
# Softmax after the last DequantizeLinear (a float island at the output)
x2 = rng.uniform(-1, 1, (1, 4, 8, 8)).astype(np.float32)
wc = rng.normal(0, 0.5, (4, 4, 1, 1)).astype(np.float32)
wm = rng.normal(0, 0.1, (128, 6)).astype(np.float32)


def build_ops():
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def qdq(src, name, s, zp):
        const(name + "_scale", np.array(s, np.float32))
        const(name + "_zp", np.array(zp, np.int8))
        nodes.append(helper.make_node("QuantizeLinear", [src, name + "_scale", name + "_zp"], [name + "_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_scale", name + "_zp"],
                                      [name + "_dq"]))
        return name + "_dq"

    mp = x2.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5))
    cv = np.einsum("nchw,oc->nohw", mp, wc[:, :, 0, 0])
    sg = 1 / (1 + np.exp(-cv))
    cat = np.concatenate([mp, sg], axis=1)
    mm = cat.reshape(1, 128) @ wm
    sx, zx = act_params(x2, False)
    # MaxPool, Sigmoid and Concat share one scale: the concat is a copy
    s_cat, z_cat = act_params(np.concatenate([mp.ravel(), [0.0, 1.0]]), False)
    xin = qdq("x", "xin", sx, zx)
    nodes.append(helper.make_node("MaxPool", [xin], ["mp"], name="pool", kernel_shape=[2, 2], strides=[2, 2]))
    mpin = qdq("mp", "mp", sx, zx)  # MaxPool keeps its input's parameters
    wsc = np.float32(np.abs(wc).max() / 127)
    const("wc_q", np.clip(np.round(wc / wsc), -127, 127).astype(np.int8))
    const("wc_s", np.array(wsc, np.float32))
    nodes.append(helper.make_node("DequantizeLinear", ["wc_q", "wc_s"], ["wc"], name="wc_DQ"))
    nodes.append(helper.make_node("Conv", [mpin, "wc"], ["cv"], name="conv"))
    s, zp = act_params(cv, False)
    cvin = qdq("cv", "cv", s, zp)
    nodes.append(helper.make_node("Sigmoid", [cvin], ["sg"], name="sigmoid"))
    sgin = qdq("sg", "sg", s_cat, z_cat)
    mpin2 = qdq("mp_dq", "mp2", s_cat, z_cat)
    nodes.append(helper.make_node("Concat", [mpin2, sgin], ["cat"], name="cat", axis=1))
    catin = qdq("cat", "cat", s_cat, z_cat)
    const("shape", np.array([1, 128], np.int64))
    nodes.append(helper.make_node("Reshape", [catin, "shape"], ["flat"], name="reshape"))
    flin = qdq("flat", "flat", s_cat, z_cat)
    ws = (np.abs(wm).max(axis=0) / 127).astype(np.float32)
    const("wm_q", np.clip(np.round(wm / ws), -127, 127).astype(np.int8))
    const("wm_s", ws)
    const("wm_zp", np.zeros(6, np.int8))
    nodes.append(helper.make_node("DequantizeLinear", ["wm_q", "wm_s", "wm_zp"], ["wm"], name="wm_DQ", axis=1))
    nodes.append(helper.make_node("MatMul", [flin, "wm"], ["mm"], name="matmul"))
    s, zp = act_params(mm, False)
    mmin = qdq("mm", "y", s, zp)
    nodes.append(helper.make_node("Softmax", [mmin], ["prob"], name="softmax", axis=1))
    graph = helper.make_graph(nodes, "qdq_ops",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 6])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen_qdq.py")
    onnx.checker.check_model(m)
    return m


# third pair: the QOperator form (QuantizeLinear -> QLinearConv -> MaxPool
# -> QLinearConv -> Reshape -> QLinearMatMul -> DequantizeLinear, uint8
# activations, int8 weights) and its QDQ twin with the same parameters
wm2 = rng.normal(0, 0.1, (C1 * 16, 6)).astype(np.float32)


def build_qlinear(qdq_form):
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def params(name, t):
        s, zp = act_params(t, True)
        return const(name + "_s", np.array(s, np.float32)), const(name + "_z", np.array(zp, np.uint8)), s

    def wconst(name, w, axis):
        red = tuple(i for i in range(w.ndim) if i != axis)
        ws = (np.abs(w).max(axis=red) / 127).astype(np.float32)
        shape = [1] * w.ndim
        shape[axis] = -1
        const(name + "_q", np.clip(np.round(w / ws.reshape(shape)), -127, 127).astype(np.int8))
        const(name + "_s", ws)
        const(name + "_z", np.zeros(w.shape[axis], np.int8))
        return ws

    def qdq_pair(src, p, out):
        nodes.append(helper.make_node("QuantizeLinear", [src, p[0], p[1]], [out + "_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [out + "_q", p[0], p[1]], [out]))

    def wdq(name, axis):
        nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_s", name + "_z"], [name],
                                      axis=axis))

    r1 = np.maximum(conv3x3(x, w1, b1), 0)
    mp = r1.reshape(1, C1, 4, 2, 4, 2).max(axis=(3, 5))
    c2 = conv3x3(mp, w2, b2)
    mm = c2.reshape(1, -1) @ wm2
    px, pr, pc, py = params("x", x), params("r1", r1), params("c2", c2), params("y", mm)
    ws1, ws2 = wconst("w1", w1, 0), wconst("w2", w2, 0)
    wconst("wm", wm2, 1)
    const("b1q", np.round(b1 / (np.float64(px[2]) * ws1)).astype(np.int32))
    const("b2q", np.round(b2 / (np.float64(pr[2]) * ws2)).astype(np.int32))
    const("shape", np.array([1, C1 * 16], np.int64))
    if qdq_form:
        for name, sc, ws in (("b1q", px[2], ws1), ("b2q", pr[2], ws2)):
            const(name + "_s", (np.float64(sc) * ws).astype(np.float32))
            nodes.append(helper.make_node("DequantizeLinear", [name, name + "_s"], [name + "_f"], axis=0))
        wdq("w1", 0), wdq("w2", 0), wdq("wm", 1)
        qdq_pair("x", px, "xd")
        nodes.append(helper.make_node("Conv", ["xd", "w1", "b1q_f"], ["c1"], name="conv1", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", ["c1"], ["r1"], name="relu1"))
        qdq_pair("r1", pr, "r1d")
        nodes.append(helper.make_node("MaxPool", ["r1d"], ["mp"], name="pool", kernel_shape=[2, 2], strides=[2, 2]))
        qdq_pair("mp", pr, "mpd")
        nodes.append(helper.make_node("Conv", ["mpd", "w2", "b2q_f"], ["c2"], name="conv2", pads=[1, 1, 1, 1]))
        qdq_pair("c2", pc, "c2d")
        nodes.append(helper.make_node("Reshape", ["c2d", "shape"], ["fl"], name="reshape"))
        qdq_pair("fl", pc, "fld")
        nodes.append(helper.make_node("MatMul", ["fld", "wm"], ["mm"], name="matmul"))
        qdq_pair("mm", py, "y")
    else:
        nodes.append(helper.make_node("QuantizeLinear", ["x", px[0], px[1]], ["xq"]))
        nodes.append(helper.make_node("QLinearConv", ["xq", px[0], px[1], "w1_q", "w1_s", "w1_z", pr[0], pr[1],
                                                      "b1q"], ["r1q"], name="conv1", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("MaxPool", ["r1q"], ["mpq"], name="pool", kernel_shape=[2, 2], strides=[2, 2]))
        nodes.append(helper.make_node("QLinearConv", ["mpq", pr[0], pr[1], "w2_q", "w2_s", "w2_z", pc[0], pc[1],
                                                      "b2q"], ["c2q"], name="conv2", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Reshape", ["c2q", "shape"], ["flq"], name="reshape"))
        nodes.append(helper.make_node("QLinearMatMul", ["flq", pc[0], pc[1], "wm_q", "wm_s", "wm_z", py[0], py[1]],
                                      ["mmq"], name="matmul"))
        nodes.append(helper.make_node("DequantizeLinear", ["mmq", py[0], py[1]], ["y"]))
    graph = helper.make_graph(nodes, "qlinear_twin" if qdq_form else "qlinear_u8",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C0, H, W])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen_qdq.py")
    onnx.checker.check_model(m)
    return m


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/qdq"
    os.makedirs(out, exist_ok=True)
    onnx.save(build(False), os.path.join(out, "qdq_s8.onnx"))
    onnx.save(build(True), os.path.join(out, "qdq_u8.onnx"))
    onnx.save(build(False, torch=True), os.path.join(out, "qdq_w128.onnx"))
    np.save(os.path.join(out, "qdq_input.npy"), x)
    onnx.save(build_ops(), os.path.join(out, "qdq_ops.onnx"))
    np.save(os.path.join(out, "qdq_ops_input.npy"), x2)
    onnx.save(build_qlinear(False), os.path.join(out, "qlinear_u8.onnx"))
    onnx.save(build_qlinear(True), os.path.join(out, "qlinear_twin.onnx"))


if __name__ == "__main__":
    main()
