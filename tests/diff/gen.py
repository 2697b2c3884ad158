#!/usr/bin/python3
"""Random small ONNX models for the differential run (tests/diff/run.py):
single ops with random shapes and attributes, and short chains that the
graph rewrites take apart (Pad into Conv/pools, BN and activations into
Conv, HardSwish, residual adds, views, Gemm biases). Each case is a
directory: m.onnx (shapes inferred by onnx, as exporters declare them),
in0.npy... and case.json. Deterministic for a seed.
usage: gen.py OUTDIR SEED COUNT [nets|qdq]   (nets: the small CNNs alone; qdq: the pre-quantized ones)"""
import json
import os
import sys

import numpy as np
import onnx
import qdq_net
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

rng = None


def ri(a, b):
    return int(rng.integers(a, b + 1))


def ch(*xs):
    return xs[ri(0, len(xs) - 1)]


def arr(shape, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def F(a, n):
    return NH.from_array(np.asarray(a, np.float32), n)


def I64(v, n):
    return NH.from_array(np.array(v, np.int64), n)


def single(op, ins, inits, attrs, names=None, nout=1, opset=13):
    names = names or [n for n, _ in ins] + [i.name for i in inits]
    outs = ["y%d" % k for k in range(nout)]
    return [H.make_node(op, names, outs, name="n0", **attrs)], ins, inits, opset, outs


# ---- single ops ----

def conv():
    g = ch(1, 1, 2, 3)
    C, M = g * ri(1, 3), g * ri(1, 3)
    kh, kw = ri(1, 4), ri(1, 4)
    at = dict(kernel_shape=[kh, kw], strides=[ri(1, 3), ri(1, 3)], dilations=[ri(1, 2), ri(1, 2)], group=g)
    ap = ch("NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
    if ap == "NOTSET":
        at["pads"] = [ri(0, 2) for _ in range(4)]
    else:
        at["auto_pad"] = ap
    inits = [F(arr([M, C // g, kh, kw]), "w")] + ([F(arr([M]), "b")] if ri(0, 1) else [])
    return single("Conv", [("x", [ri(1, 2), C, ri(1, 10), ri(1, 10)])], inits, at)


def conv_transpose():
    g = ch(1, 1, 2)
    C, M = g * ri(1, 2), g * ri(1, 2)
    kh, kw, sh, sw = ri(1, 4), ri(1, 4), ri(1, 3), ri(1, 3)
    at = dict(kernel_shape=[kh, kw], strides=[sh, sw], dilations=[ri(1, 2), ri(1, 2)], group=g)
    if ri(0, 1):
        at["pads"] = [ri(0, 1) for _ in range(4)]
        at["output_padding"] = [ri(0, sh - 1), ri(0, sw - 1)]
    inits = [F(arr([C, M // g, kh, kw]), "w")] + ([F(arr([M]), "b")] if ri(0, 1) else [])
    return single("ConvTranspose", [("x", [1, C, ri(1, 6), ri(1, 6)])], inits, at)


def depthwise():
    C, k = ri(1, 6), ri(1, 5)
    at = dict(kernel_shape=[k, k], strides=[ri(1, 2), ri(1, 2)], group=C, pads=[ri(0, 2) for _ in range(4)],
              dilations=[ri(1, 2), ri(1, 2)])
    return single("Conv", [("x", [1, C, ri(1, 12), ri(1, 12)])], [F(arr([C * ch(1, 1, 2), 1, k, k]), "w")], at)


def batchnorm():
    C, r = ri(1, 4), ri(2, 4)
    shp = [ri(1, 2), C] + [ri(1, 4) for _ in range(r - 2)]
    return single("BatchNormalization", [("x", shp)], [F(arr([C]), "s"), F(arr([C]), "b"), F(arr([C]), "m"),
                                                        F(arr([C], 0.1, 2), "v")], dict(epsilon=float(ch(1e-5, 1e-2))))


def global_pool():
    return single(ch("GlobalAveragePool", "GlobalMaxPool"), [("x", [ri(1, 2), ri(1, 4), ri(1, 9), ri(1, 9)])], [], {})


def compare_where():
    shp = [ri(1, 3), ri(1, 4)]
    nodes = [H.make_node(ch("Equal", "Less", "Greater"), ["x", "z"], ["c"], name="cmp"),
             H.make_node("Where", ["c", "x", "z"], ["y"], name="w")]
    return nodes, [("x", shp), ("z", shp[ri(0, 1):])], [], 13, ["y"]


def cast_round():
    to = ch(TP.INT32, TP.INT64, TP.INT8, TP.UINT8)
    nodes = [H.make_node("Mul", ["x", "k"], ["m"], name="m"), H.make_node("Cast", ["m"], ["i"], name="c1", to=to),
             H.make_node("Cast", ["i"], ["y"], name="c2", to=TP.FLOAT)]
    return nodes, [("x", [ri(1, 3), ri(1, 4)])], [F(ch(10.0, 3.7, 40.0), "k")], 13, ["y"]


def squeeze_flatten():
    shp = [1, ri(1, 3), 1, ri(1, 4)]
    if ri(0, 1):
        return single("Squeeze", [("x", shp)], [I64(ch([0], [2], [0, 2], [-2]), "ax")], {})
    return single("Flatten", [("x", shp)], [], dict(axis=ri(-4, 4)))


def pool():
    op = ch("MaxPool", "AveragePool")
    kh, kw = ri(1, 4), ri(1, 4)
    at = dict(kernel_shape=[kh, kw], strides=[ri(1, 3), ri(1, 3)], ceil_mode=ri(0, 1))
    ap = ch("NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
    if ap == "NOTSET":
        at["pads"] = [ri(0, min(2, kh - 1)), ri(0, min(2, kw - 1)), ri(0, min(2, kh - 1)), ri(0, min(2, kw - 1))]
    else:
        at["auto_pad"] = ap
    if op == "AveragePool":
        at["count_include_pad"] = ri(0, 1)
    elif ri(0, 1):
        at["dilations"] = [ri(1, 2), ri(1, 2)]
    return single(op, [("x", [ri(1, 2), ri(1, 3), ri(1, 10), ri(1, 10)])], [], at)


def gemm():
    M, K, N, ta, tb = ri(1, 5), ri(1, 6), ri(1, 5), ri(0, 1), ri(0, 1)
    at = dict(transA=ta, transB=tb, alpha=float(ch(1.0, 0.5, -2.0)), beta=float(ch(1.0, 0.0, 0.25)))
    inits = [F(arr([N, K] if tb else [K, N]), "w")]
    if ri(0, 1):
        inits.append(F(arr(ch([N], [1], [M, N], [M, 1], [1, N])), "c"))
    return single("Gemm", [("x", [K, M] if ta else [M, K])], inits, at)


def matmul():
    K, M = ri(1, 5), ri(1, 4)
    sa = ch([K], [ri(1, 4), K], [ri(1, 3), ri(1, 4), K])
    sb = ch([K], [K, M], [sa[0] if len(sa) == 3 else ri(1, 2), K, M])
    return single("MatMul", [("x", sa), ("z", sb)], [], {})


def softmax():
    r = ri(1, 4)
    return single(ch("Softmax", "LogSoftmax"), [("x", [ri(1, 4) for _ in range(r)])], [], dict(axis=ri(-r, r - 1)))


def reduce():
    op, r = ch("ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum"), ri(1, 4)
    ax = sorted({ri(0, r - 1) for _ in range(ri(1, r))})
    ax = [a - r if ri(0, 1) else a for a in ax]
    at, inits = dict(keepdims=ri(0, 1)), []
    if op == "ReduceSum":
        inits = [I64(ax, "ax")] if ri(0, 1) else []
    elif ri(0, 3):
        at["axes"] = ax
    return single(op, [("x", [ri(1, 4) for _ in range(r)])], inits, at)


def transpose():
    r = ri(1, 5)
    return single("Transpose", [("x", [ri(1, 3) for _ in range(r)])], [],
                  dict(perm=[int(p) for p in rng.permutation(r)]))


def slice_():
    r = ri(1, 3)
    shp = [ri(1, 6) for _ in range(r)]
    axes, st, en, sp = [], [], [], []
    for a in range(r):
        if ri(0, 1):
            continue
        d = shp[a]
        axes.append(ch(a, a - r))
        st.append(ri(-d - 2, d + 2))
        en.append(ri(-d - 2, d + 2) if ri(0, 4) else ch(2**62, -2**62))
        sp.append(ch(1, 1, 2, -1, -2, 3))
    if not axes:
        axes, st, en, sp = [0], [0], [shp[0]], [1]
    return single("Slice", [("x", shp)], [I64(st, "s"), I64(en, "e"), I64(axes, "a"), I64(sp, "p")], {})


def pad():
    r = ri(1, 4)
    shp = [ri(1, 4) for _ in range(r)]
    mode = ch("constant", "reflect", "edge")
    pads = [ri(0, 2) if mode != "reflect" else ri(0, shp[i % r] - 1) for i in range(2 * r)]
    inits = [I64(pads, "p")] + ([F(1.5, "v")] if mode == "constant" and ri(0, 1) else [])
    return single("Pad", [("x", shp)], inits, dict(mode=mode))


def resize():
    mode = ch("nearest", "linear", "cubic")
    coords = ["half_pixel", "asymmetric", "pytorch_half_pixel", "align_corners"]
    at = dict(mode=mode, coordinate_transformation_mode=ch(*(coords + (["tf_half_pixel_for_nn"] if mode == "nearest"
                                                                          else []))))
    if mode == "nearest":
        at["nearest_mode"] = ch("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
    if mode == "cubic":
        at["cubic_coeff_a"], at["exclude_outside"] = float(ch(-0.75, -0.5)), ri(0, 1)
    E = F(np.zeros([0]), "roi")
    x = [("x", [1, ri(1, 2), ri(1, 6), ri(1, 6)])]
    if ri(0, 1):
        sc = [1.0, 1.0, float(ch(0.5, 1.5, 2.0, 3.0, 0.75)), float(ch(0.5, 1.5, 2.0, 3.0, 0.6))]
        return single("Resize", x, [E, F(sc, "sc")], at)
    return single("Resize", x, [E, F(np.zeros([0]), "sc"), I64([1, x[0][1][1], ri(1, 9), ri(1, 9)], "sz")], at)


def gather():
    r = ri(1, 3)
    shp = [ri(1, 5) for _ in range(r)]
    ax = ri(-r, r - 1)
    idx = rng.integers(-shp[ax], shp[ax], size=ch([], [ri(1, 3)], [ri(1, 2), ri(1, 3)])).astype(np.int64)
    return single("Gather", [("x", shp)], [NH.from_array(np.array(idx), "i")], dict(axis=ax))


def binary():
    op, r = ch("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu"), ri(1, 4)
    shp = [ri(1, 4) for _ in range(r)]
    sb = [d if ri(0, 2) else 1 for d in shp][ri(0, r - 1):]
    if op == "PRelu":
        return single(op, [("x", shp)], [F(arr(sb, 0, 1), "s")], {})
    if ri(0, 1):
        shp, sb = sb, shp
    return single(op, [("x", shp), ("z", sb)], [], {})


def unary():
    op = ch("Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Neg",
            "Abs", "Softplus", "Clip")
    at, names, inits = {}, ["x"], []
    if op == "LeakyRelu":
        at["alpha"] = float(ch(0.01, 0.2, -1.0))
    if op == "HardSigmoid":
        at["alpha"], at["beta"] = float(ch(0.2, 0.5)), float(ch(0.5, 0.1))
    if op == "Clip":
        lo, hi = float(ch(-1, 0, 1, -np.inf)), float(ch(1, 2, 0.5, -2, np.inf))
        names += ["lo" if ri(0, 1) else "", "hi"]
        inits = ([F(lo, "lo")] if names[1] else []) + [F(hi, "hi")]
    return single(op, [("x", [ri(1, 4) for _ in range(ri(1, 3))])], inits, at, names=names)


def concat_split():
    r = ri(1, 3)
    shp = [ri(1, 4) for _ in range(r)]
    ax = ri(-r, r - 1)
    if ri(0, 1):
        s2 = list(shp)
        s2[ax] = ri(1, 3)
        return single("Concat", [("x", shp), ("z", s2)], [], dict(axis=ax))
    k = ri(1, min(3, shp[ax]))
    parts = [1] * k
    for _ in range(shp[ax] - k):
        parts[ri(0, k - 1)] += 1
    return single("Split", [("x", shp)], [I64(parts, "sp")] if ri(0, 1) else [], dict(axis=ax), nout=k)


def expand_tile():
    r = ri(1, 3)
    shp = [ch(1, ri(1, 3)) for _ in range(r)]
    if ri(0, 1):
        tgt = [ri(1, 2) for _ in range(ri(0, 1))] + [d if d > 1 else ri(1, 3) for d in shp]
        return single("Expand", [("x", shp)], [I64(tgt, "s")], {})
    return single("Tile", [("x", shp)], [I64([ri(1, 3) for _ in range(r)], "r")], {})


# ---- chains: what the graph rewrites take apart ----

def chain(nodes, ins, inits, opset=13):
    return nodes, ins, inits, opset, ["y"]


def conv_node(x, y, C, M, k, pads=None):
    at = dict(kernel_shape=[k, k])
    if pads:
        at["pads"] = pads
    return H.make_node("Conv", [x, y + "w", y + "b"], [y], name=y, **at), [F(arr([M, C, k, k], -2, 2), y + "w"),
                                                                           F(arr([M], -2, 2), y + "b")]


def pad_then():
    C, mode = ri(1, 3), ch("constant", "constant", "reflect", "edge")
    nodes = [H.make_node("Pad", ["x", "pp"] + (["pv"] if mode == "constant" else []), ["p"], name="pad", mode=mode)]
    inits = [I64([0, 0, ri(0, 2), ri(0, 2), 0, 0, ri(0, 2), ri(0, 2)], "pp")]
    inits += [F(ch(0.0, 0.0, 1.5), "pv")] if mode == "constant" else []
    tail = ch("conv", "max", "avg")
    if tail == "conv":
        n, i = conv_node("p", "y", C, ri(1, 3), ri(1, 3))
        nodes.append(n)
        inits += i
    else:
        at = dict(kernel_shape=[ri(1, 3), ri(1, 3)], strides=[ri(1, 2), ri(1, 2)])
        if tail == "avg":
            at["count_include_pad"] = ri(0, 1)
        nodes.append(H.make_node("MaxPool" if tail == "max" else "AveragePool", ["p"], ["y"], name="pl", **at))
    return chain(nodes, [("x", [1, C, ri(3, 8), ri(3, 8)])], inits)


def conv_bn_act():
    C, M = ri(1, 4), ri(1, 4)
    n, inits = conv_node("x", "c", C, M, ri(1, 3), pads=[1, 1, 1, 1])
    nodes = [n, H.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["t"], name="bn",
                            epsilon=float(ch(1e-5, 1e-3)))]
    inits += [F(arr([M]), "s"), F(arr([M]), "b"), F(arr([M]), "m"), F(arr([M], 0.1, 2), "v")]
    act = ch("Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "none")
    if act == "none":
        nodes[-1].output[0] = "y"
    elif act == "Clip":
        nodes.append(H.make_node("Clip", ["t", "lo", "hi"], ["y"], name="cl"))
        inits += [F(ch(0.0, -1.0), "lo"), F(ch(6.0, 1.0), "hi")]
    else:
        nodes.append(H.make_node(act, ["t"], ["y"], name="act"))
    return chain(nodes, [("x", [ri(1, 2), C, ri(2, 7), ri(2, 7)])], inits)


def hswish():
    shp = [1, ri(1, 4), ri(1, 5), ri(1, 5)]
    if ri(0, 1):
        return chain([H.make_node("HardSigmoid", ["x"], ["h"], name="hs", alpha=float(ch(1 / 6, 0.2)), beta=0.5),
                      H.make_node("Mul", ["x", "h"], ["y"], name="m")], [("x", shp)], [])
    nodes = [H.make_node("Add", ["x", "three"], ["a"], name="a"), H.make_node("Clip", ["a", "z", "six"], ["c"], name="c"),
             H.make_node("Mul", ["x", "c"], ["m"], name="m"), H.make_node("Div", ["m", "six"], ["y"], name="d")]
    return chain(nodes, [("x", shp)], [F(3.0, "three"), F(0.0, "z"), F(6.0, "six")])


def residual():
    C = ri(1, 4)
    n, inits = conv_node("x", "c", C, C, 3, pads=[1, 1, 1, 1])
    return chain([n, H.make_node("Add", ch(["c", "x"], ["x", "c"]), ["a"], name="add"),
                  H.make_node(ch("Relu", "Sigmoid"), ["a"], ["y"], name="r")], [("x", [1, C, ri(2, 6), ri(2, 6)])], inits)


def views():
    shp = [ri(1, 3), ri(1, 4), ri(1, 4)]
    tgt = ch([-1, shp[-1]], [0, -1], [shp[0], 0, -1])
    perm = [int(p) for p in rng.permutation(len(tgt))]
    nodes = [H.make_node("Reshape", ["x", "s"], ["r"], name="rs"), H.make_node("Transpose", ["r"], ["t"], name="tp",
                                                                                perm=perm),
             H.make_node("Flatten", ["t"], ["f"], name="fl", axis=ri(0, len(tgt))),
             H.make_node("Unsqueeze", ["f", "ax"], ["y"], name="us")]
    return chain(nodes, [("x", shp)], [I64(tgt, "s"), I64([ch(0, -1, 1)], "ax")])


def matmul_add():
    K, N = ri(1, 6), ri(1, 5)
    nodes = [H.make_node("MatMul", ["x", "w"], ["m"], name="mm"), H.make_node("Add", ["m", "b"], ["a"], name="ad"),
             H.make_node(ch("Relu", "Tanh", "Softmax"), ["a"], ["y"], name="r")]
    return chain(nodes, [("x", ch([ri(1, 4), K], [ri(1, 2), ri(1, 3), K]))], [F(arr([K, N]), "w"),
                                                                                F(arr(ch([N], [1, N])), "b")])


def layernorm():
    r = ri(2, 3)
    shp = [ri(1, 3) for _ in range(r)]
    ax = ch(-1, ri(1, r - 1))
    ns = shp[ax:]
    return chain([H.make_node("LayerNormalization", ["x", "sc", "bi"], ["y"], name="ln", axis=ax,
                              epsilon=float(ch(1e-5, 1e-3)))], [("x", shp)], [F(arr(ns), "sc"), F(arr(ns), "bi")], 17)


def qdq():
    """A pre-quantized CNN (tests/diff/qdq_net.py)."""
    return qdq_net.make(rng)


def net():
    """A small CNN of 2 to 7 layers at sizes the tiler splits into tiles, bands
    and cascades (8 to 48 channels, 8 to 40 pixels a side)."""
    C, Hh, W = ri(1, 8), ri(8, 40), ri(8, 40)
    ins, nodes, inits, cur, k = [("x", [1, C, Hh, W])], [], [], "x", 0

    def add(op, inputs, shape_c, **at):
        nonlocal cur, k
        k += 1
        name = "l%d" % k
        nodes.append(H.make_node(op, inputs, [name], name=name, **at))
        cur = name
        return name
    for _ in range(ri(2, 7)):
        kind = ch("conv", "conv", "dw", "pw", "pool", "res", "concat", "se")
        if kind in ("conv", "pw"):
            M, kk = ri(8, 48), 1 if kind == "pw" else ch(1, 3, 3, 5)
            s = ch(1, 1, 2)
            inits += [F(arr([M, C, kk, kk], -0.5, 0.5), "w%d" % k), F(arr([M], -0.5, 0.5), "b%d" % k)]
            add("Conv", [cur, "w%d" % k, "b%d" % k], M, kernel_shape=[kk, kk], strides=[s, s], pads=[kk // 2] * 4)
            C = M
            if ri(0, 1):
                add(ch("Relu", "Relu", "Sigmoid"), [cur], C)
        elif kind == "dw":
            kk, s = ch(3, 3, 5), ch(1, 2)
            inits.append(F(arr([C, 1, kk, kk], -0.5, 0.5), "w%d" % k))
            add("Conv", [cur, "w%d" % k], C, kernel_shape=[kk, kk], strides=[s, s], pads=[kk // 2] * 4, group=C)
            nodes.append(H.make_node("Clip", [cur, "lo", "hi"], [cur + "c"], name=cur + "c"))
            cur += "c"
            if not any(i.name == "lo" for i in inits):
                inits += [F(0.0, "lo"), F(6.0, "hi")]
        elif kind == "pool":
            add(ch("MaxPool", "AveragePool"), [cur], C, kernel_shape=[2, 2], strides=[2, 2])
        elif kind == "res":
            inits += [F(arr([C, C, 3, 3], -0.3, 0.3), "w%d" % k), F(arr([C], -0.3, 0.3), "b%d" % k)]
            src = cur
            add("Conv", [cur, "w%d" % k, "b%d" % k], C, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
            add("Add", [cur, src], C)
        elif kind == "se":  # squeeze-excite, as EfficientNet's: x * sigmoid(fc(relu(fc(gap(x))))), then a 1x1 conv
            R, M, j = max(C // 4, 1), ri(8, 48), k
            inits += [F(arr([R, C, 1, 1], -0.5, 0.5), "w%da" % j), F(arr([R], -0.5, 0.5), "b%da" % j),
                      F(arr([C, R, 1, 1], -0.5, 0.5), "w%db" % j), F(arr([C], -0.5, 0.5), "b%db" % j),
                      F(arr([M, C, 1, 1], -0.5, 0.5), "w%dc" % j)]
            src = cur
            add("GlobalAveragePool", [cur], C)
            add("Conv", [cur, "w%da" % j, "b%da" % j], R, kernel_shape=[1, 1])
            add("Relu", [cur], R)
            add("Conv", [cur, "w%db" % j, "b%db" % j], C, kernel_shape=[1, 1])
            add("Sigmoid", [cur], C)
            add("Mul", [src, cur], C)
            add("Conv", [cur, "w%dc" % j], M, kernel_shape=[1, 1])
            C = M
        else:
            M = ri(4, 24)
            inits += [F(arr([M, C, 1, 1], -0.5, 0.5), "w%d" % k)]
            src = cur
            a = add("Conv", [cur, "w%d" % k], M, kernel_shape=[1, 1])
            add("Concat", [src, a], C + M, axis=1)
            C += M
    if ri(0, 1):
        N = ri(2, 20)
        add("GlobalAveragePool", [cur], C)
        add("Flatten", [cur], C)
        inits.append(F(arr([N, C], -0.5, 0.5), "fc"))
        add("Gemm", [cur, "fc"], N, transB=1)
    nodes[-1].output[0] = "y"
    inner = [n.output[0] for n in nodes[:-1]]
    if inner and ri(0, 3) == 0:  # a tensor the net reads on is a graph output too
        return nodes, ins, inits, 13, ["y", ch(*inner)]
    return nodes, ins, inits, 13, ["y"]


SINGLES = [conv, conv, pool, pool, gemm, gemm, matmul, softmax, reduce, transpose, slice_, pad, resize, gather, binary,
           unary, concat_split, expand_tile, conv_transpose, depthwise, depthwise, batchnorm, global_pool,
           squeeze_flatten]
CHAINS = [pad_then, conv_bn_act, hswish, residual, views, matmul_add, layernorm, compare_where, cast_round, net, net,
          net, net, qdq, qdq, qdq]


def main(out, seed, count, only=None):
    global rng
    rng = np.random.default_rng(seed)
    os.makedirs(out, exist_ok=True)
    made = 0
    for i in range(count):
        g = {"nets": net, "qdq": qdq}.get(only) or ch(*(SINGLES + CHAINS))
        nodes, ins, inits, opset, outs, *extra = g()
        extra = extra[0] if extra else {}
        it, ot = extra.pop("in_types", [TP.FLOAT] * len(ins)), extra.pop("out_types", [TP.FLOAT] * len(outs))
        vin = [H.make_tensor_value_info(n, t, s) for (n, s), t in zip(ins, it)]
        vout = [H.make_tensor_value_info(o, t, None) for o, t in zip(outs, ot)]
        m = H.make_model(H.make_graph(nodes, "g", vin, vout, inits), opset_imports=[H.make_opsetid("", opset)])
        m.ir_version = 8
        try:
            m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
            onnx.checker.check_model(m)
        except Exception:
            continue  # not a valid model: onnx says so
        d = os.path.join(out, "c%04d" % i)
        os.makedirs(d, exist_ok=True)
        onnx.save(m, os.path.join(d, "m.onnx"))
        positive = nodes[0].op_type in ("Log", "Sqrt", "Pow")
        for k, (_, s) in enumerate(ins):
            x = extra["inputs"][k] if "inputs" in extra else arr(s, 0.1, 3.0) if positive and k == 0 else arr(s)
            np.save(os.path.join(d, "in%d.npy" % k), x)
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump({"what": g.__name__, "ops": [n.op_type for n in nodes], "outputs": len(outs),
                       **{k: v for k, v in extra.items() if k != "inputs"}}, f)
        made += 1
    print(f"diff: {made} models in {out} (seed {seed})")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
