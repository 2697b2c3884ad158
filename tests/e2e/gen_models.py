#!/usr/bin/python3
"""Generates the end-to-end test models (small ONNX graphs with seeded
random weights), a calibration set per model and a batch of test inputs.
Run by `make fixtures`; the outputs are committed under tests/e2e/models so
a fresh clone needs neither this script nor ../shared.

    /usr/bin/python3 tests/e2e/gen_models.py tests/e2e/models
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(1234)


def W(name, *shape, scale=None):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
    return numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name)


def B(name, n):
    return numpy_helper.from_array((rng.standard_normal(n) * 0.1).astype(np.float32), name)


class G:
    def __init__(self, name, shape):
        self.name, self.shape = name, shape
        self.nodes, self.inits, self.k = [], [], 0

    def t(self, p="t"):
        self.k += 1
        return f"{p}{self.k}"

    def conv(self, x, cin, cout, k=3, stride=1, pad=None, group=1, relu=True, dil=1):
        pad = (k // 2) * dil if pad is None else pad
        w, b, y = self.t("w"), self.t("b"), self.t("conv")
        self.inits += [W(w, cout, cin // group, k, k), B(b, cout)]
        self.nodes.append(helper.make_node("Conv", [x, w, b], [y], name=y, kernel_shape=[k, k],
                                           strides=[stride, stride], pads=[pad] * 4, group=group,
                                           dilations=[dil, dil]))
        if relu:
            r = self.t("relu")
            self.nodes.append(helper.make_node("Relu", [y], [r], name=r))
            return r
        return y

    def op(self, kind, ins, **attrs):
        y = self.t(kind.lower())
        self.nodes.append(helper.make_node(kind, ins, [y], name=y, **attrs))
        return y

    def gemm(self, x, k, n):
        w, b = self.t("w"), self.t("b")
        self.inits += [W(w, n, k), B(b, n)]
        return self.op("Gemm", [x, w, b], transB=1)

    def save(self, out, y, out_shape, d):
        graph = helper.make_graph(self.nodes, self.name,
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, self.shape)],
                                  [helper.make_tensor_value_info(y, TensorProto.FLOAT, out_shape)], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        onnx.checker.check_model(m)
        os.makedirs(os.path.join(d, self.name + "_calib"), exist_ok=True)
        onnx.save(m, os.path.join(d, self.name + ".onnx"))
        for i in range(8):
            x = rng.uniform(-1, 1, self.shape).astype(np.float32)
            np.save(os.path.join(d, self.name + "_calib", f"{i:03d}.npy"), x)
        xs = rng.uniform(-1, 1, [4] + self.shape[1:]).astype(np.float32)
        np.save(os.path.join(d, self.name + "_input.npy"), xs)


def models(d):
    g = G("conv", [1, 3, 16, 16])
    y = g.conv("x", 3, 8)
    y = g.conv(y, 8, 16, stride=2)
    g.save(d, y, [1, 16, 8, 8], d)

    g = G("dwconv", [1, 3, 16, 16])
    y = g.conv("x", 3, 16, k=1)
    y = g.conv(y, 16, 16, group=16)
    y = g.conv(y, 16, 16, group=16, stride=2)
    y = g.conv(y, 16, 8, k=1, relu=False)
    g.save(d, y, [1, 8, 8, 8], d)

    g = G("residual", [1, 8, 12, 12])
    a = g.conv("x", 8, 8)
    b = g.conv(a, 8, 8, relu=False)
    s = g.op("Add", [a, b])
    y = g.op("Relu", [s])
    g.save(d, y, [1, 8, 12, 12], d)

    g = G("concat", [1, 4, 12, 12])
    a = g.conv("x", 4, 8)
    b = g.conv("x", 4, 4, k=1)
    c = g.op("Concat", [a, b], axis=1)
    y = g.conv(c, 12, 8, k=1)
    g.save(d, y, [1, 8, 12, 12], d)

    g = G("pool", [1, 4, 16, 16])
    a = g.conv("x", 4, 8)
    p = g.op("MaxPool", [a], kernel_shape=[2, 2], strides=[2, 2])
    q = g.op("AveragePool", [p], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    y = g.op("GlobalAveragePool", [q])
    g.save(d, y, [1, 8, 1, 1], d)

    g = G("fc", [1, 2, 6, 6])
    f = g.op("Flatten", ["x"], axis=1)
    h = g.gemm(f, 72, 32)
    r = g.op("Relu", [h])
    y = g.gemm(r, 32, 10)
    g.save(d, y, [1, 10], d)

    g = G("hostop", [1, 3, 8, 8])
    a = g.conv("x", 3, 8)
    p = g.op("GlobalAveragePool", [a])
    f = g.op("Flatten", [p], axis=1)
    h = g.gemm(f, 8, 10)
    y = g.op("Softmax", [h], axis=1)
    g.save(d, y, [1, 10], d)

    # Split and Slice: byte ranges of their input, read in place
    g = G("split", [1, 4, 12, 12])
    a = g.conv("x", 4, 8)
    s1, s2 = g.t("s"), g.t("s")
    g.inits.append(numpy_helper.from_array(np.array([3, 5], np.int64), "splits"))
    g.nodes.append(helper.make_node("Split", [a, "splits"], [s1, s2], name="split", axis=1))
    y = g.op("Concat", [g.conv(s1, 3, 4, k=1), g.conv(s2, 5, 4, k=1)], axis=1)
    g.save(d, y, [1, 8, 12, 12], d)

    g = G("slice", [1, 4, 12, 12])
    a = g.conv("x", 4, 8)
    for n, v in (("st", [2]), ("en", [6]), ("ax", [1])):
        g.inits.append(numpy_helper.from_array(np.array(v, np.int64), n))
    sl = g.t("slice")
    g.nodes.append(helper.make_node("Slice", [a, "st", "en", "ax"], [sl], name="slice"))
    y = g.conv(sl, 4, 8, k=1)
    g.save(d, y, [1, 8, 12, 12], d)

    # a Split and a Slice whose parts are graph outputs: they cannot stay in
    # place (another region), so the runtime copies their byte ranges
    g = G("partcopy", [1, 6, 4, 4])
    p1, p2 = g.t("p"), g.t("p")
    g.inits.append(numpy_helper.from_array(np.array([2, 4], np.int64), "splits"))
    g.nodes.append(helper.make_node("Split", ["x", "splits"], [p1, p2], name="split", axis=1))
    for n, v in (("st", [1]), ("en", [3]), ("ax", [1])):
        g.inits.append(numpy_helper.from_array(np.array(v, np.int64), n))
    g.nodes.append(helper.make_node("Slice", [p2, "st", "en", "ax"], ["y"], name="slice"))
    graph = helper.make_graph(g.nodes, "partcopy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, g.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4]),
                               helper.make_tensor_value_info(p1, TensorProto.FLOAT, [1, 2, 4, 4])], g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    os.makedirs(os.path.join(d, "partcopy_calib"), exist_ok=True)
    onnx.save(m, os.path.join(d, "partcopy.onnx"))
    np.save(os.path.join(d, "partcopy_calib", "000.npy"), rng.uniform(-1, 1, g.shape).astype(np.float32))
    np.save(os.path.join(d, "partcopy_input.npy"), rng.uniform(-1, 1, [4] + g.shape[1:]).astype(np.float32))

    # large enough that every target needs several tiles (lite has 128 KiB SRAM)
    g = G("bigconv", [1, 16, 64, 64])
    a = g.conv("x", 16, 32)
    y = g.conv(a, 32, 32, stride=2)
    g.save(d, y, [1, 32, 32, 32], d)

    # unary ops that become lookup tables (npu.Lut): fixed-scale Sigmoid and
    # Tanh, LeakyRelu split from its conv (last: the models above keep their seeds)
    g = G("lut", [1, 3, 8, 8])
    a = g.op("Sigmoid", [g.conv("x", 3, 8, relu=False)])
    b = g.op("LeakyRelu", [g.conv(a, 8, 8, relu=False)], alpha=0.1)
    y = g.op("Tanh", [g.conv(b, 8, 4, relu=False)])
    g.save(d, y, [1, 4, 8, 8], d)


def relu6(g, y):
    lo, hi = g.t("lo"), g.t("hi")
    g.inits += [numpy_helper.from_array(np.array(0, np.float32), lo),
                numpy_helper.from_array(np.array(6, np.float32), hi)]
    return g.op("Clip", [y, lo, hi])


def silu(g, y):
    return g.op("Mul", [y, g.op("Sigmoid", [y])])


def squeeze_excite(g, x, c, squeeze):
    """x scaled by sigmoid(fc2(silu(fc1(global average pool of x)))), EfficientNet's squeeze-excite."""
    s = silu(g, g.conv(g.op("GlobalAveragePool", [x]), c, squeeze, k=1, relu=False))
    return g.op("Mul", [x, g.op("Sigmoid", [g.conv(s, squeeze, c, k=1, relu=False)])])


def mbconv(g, x, cin, ce, cout, squeeze=8):
    """EfficientNet's MBConv without its residual: expand 1x1 + SiLU, depthwise 3x3 + SiLU,
    squeeze-excite, projection 1x1."""
    x = silu(g, g.conv(x, cin, ce, k=1, relu=False))
    x = silu(g, g.conv(x, ce, ce, k=3, group=ce, relu=False))
    return g.conv(squeeze_excite(g, x, ce, squeeze), ce, cout, k=1, relu=False)


def invres(d):
    """MobileNet-v2 inverted-residual blocks: expand 1x1 + relu6 -> depthwise 3x3 (stride 1, then 2)
    + relu6 -> project 1x1, the stride-1 one with its residual add (the tiler's SRAM cascade)."""
    g = G("invres", [1, 3, 24, 24])
    x = g.conv("x", 3, 16)
    e = relu6(g, g.conv(x, 16, 96, k=1, relu=False))
    e = relu6(g, g.conv(e, 96, 96, group=96, relu=False))
    p = g.conv(e, 96, 16, k=1, relu=False)
    x = g.op("Add", [p, x])
    e = relu6(g, g.conv(x, 16, 96, k=1, relu=False))
    e = relu6(g, g.conv(e, 96, 96, stride=2, group=96, relu=False))
    y = g.conv(e, 96, 24, k=1, relu=False)
    g.save(d, y, [1, 24, 12, 12], d)


def bn(g, x, c):
    """an inference BatchNormalization with random statistics"""
    names = [g.t(p) for p in ("gamma", "beta", "mean", "var")]
    vals = [rng.uniform(0.5, 1.5, c), rng.standard_normal(c) * 0.2, rng.standard_normal(c) * 0.2,
            rng.uniform(0.3, 2.0, c)]
    g.inits += [numpy_helper.from_array(v.astype(np.float32), n) for n, v in zip(names, vals)]
    return g.op("BatchNormalization", [x] + names, epsilon=1e-5)


def reshape(g, x, shape):
    s = g.t("shape")
    g.inits.append(numpy_helper.from_array(np.array(shape, np.int64), s))
    return g.op("Reshape", [x, s])


def matmul_w(g, x, k, n):
    w = g.t("w")
    g.inits.append(W(w, k, n))
    return g.op("MatMul", [x, w])


def npuops(d):
    """Standalone BatchNormalization (on the graph input, after a Concat as in
    DenseNet, a padded transition pool) and MatMul of two activations (batched, broadcast, Q.K^T with a
    Transpose): each must run on the NPU (after the others: their seeds stay)."""
    g = G("densebn", [1, 4, 12, 12])
    x = bn(g, "x", 4)
    c = g.op("Concat", [g.conv(x, 4, 8), g.conv(x, 4, 8, k=1)], axis=1)
    r = g.op("Relu", [bn(g, c, 16)])
    y = g.conv(r, 16, 8, k=1, relu=False)
    # a transition pool exported as Pad + AveragePool (padfold: one pool counting the pad)
    y = g.op("AveragePool", [g.op("Pad", [y, i64(g, [0, 0, 0, 0, 0, 0, 1, 1])])], kernel_shape=[2, 2], strides=[2, 2])
    g.save(d, y, [1, 8, 6, 6], d)

    # [2,4,8,16] x [2,4,16,8], both activations
    g = G("bmm", [1, 64, 16])
    a = reshape(g, "x", [2, 4, 8, 16])
    b = reshape(g, matmul_w(g, "x", 16, 16), [2, 4, 16, 8])
    g.save(d, g.op("MatMul", [a, b]), [2, 4, 8, 8], d)

    # [4,8,16] x [16,8]: B an activation broadcast over the batch
    g = G("bmm_bcast", [1, 32, 16])
    a = reshape(g, "x", [4, 8, 16])
    b = reshape(g, matmul_w(g, "x", 16, 4), [16, 8])
    g.save(d, g.op("MatMul", [a, b]), [4, 8, 8], d)

    # attention without softmax: (Q.K^T).V over 4 heads, K^T by a Transpose
    g = G("qkt", [1, 16, 32])
    heads = [reshape(g, matmul_w(g, "x", 32, 32), [1, 16, 4, 8]) for _ in range(3)]
    q = g.op("Transpose", [heads[0]], perm=[0, 2, 1, 3])
    kt = g.op("Transpose", [heads[1]], perm=[0, 2, 3, 1])
    v = g.op("Transpose", [heads[2]], perm=[0, 2, 1, 3])
    s = g.op("MatMul", [q, kt])
    o = g.op("Transpose", [g.op("MatMul", [s, v])], perm=[0, 2, 1, 3])
    y = matmul_w(g, reshape(g, o, [1, 16, 32]), 32, 16)
    g.save(d, y, [1, 16, 16], d)

    # a ViT block's attention as timm exports it: one qkv projection split by Gather,
    # K^T by a Transpose of the last two axes, the class token taken by a Gather
    g = G("vitattn", [1, 17, 32])
    qkv = g.op("Transpose", [reshape(g, matmul_w(g, "x", 32, 96), [1, 17, 3, 4, 8])], perm=[2, 0, 3, 1, 4])
    q, k, v = (g.op("Gather", [qkv, idx], axis=0) for idx in (i64(g, 0), i64(g, 1), i64(g, 2)))
    s = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
    o = reshape(g, g.op("Transpose", [g.op("MatMul", [s, v])], perm=[0, 2, 1, 3]), [1, 17, 32])
    cls = g.op("Gather", [o, i64(g, 0)], axis=1)
    g.save(d, matmul_w(g, cls, 32, 10), [1, 10], d)


def slice_(g, x, starts, ends, axes):
    ins = [x] + [i64(g, v) for v in (starts, ends, axes)]
    return g.op("Slice", ins)


def split(g, x, sizes, axis):
    outs = [g.t("part") for _ in sizes]
    g.nodes.append(helper.make_node("Split", [x, i64(g, sizes)], outs, name=g.t("split"), axis=axis))
    return outs


def pad(g, x, pads, **attrs):
    return g.op("Pad", [x, i64(g, pads)], **attrs)


def moves(d):
    """Data movement in int8 on the NPU (after the others: their seeds stay):
    a ShuffleNetV2 block (channel split by Slice, channel shuffle by
    Reshape-Transpose-Reshape) and a crop; Pad folded into AveragePool and
    Conv; a Split in three along channels and along H."""
    g = G("shuffle", [1, 8, 8, 8])
    a = g.conv("x", 8, 8, k=1)
    x1, x2 = slice_(g, a, [0], [4], [1]), slice_(g, a, [4], [8], [1])
    b = g.conv(g.conv(g.conv(x2, 4, 4, k=1), 4, 4, group=4, relu=False), 4, 4, k=1)
    c = g.op("Concat", [x1, b], axis=1)
    sh = reshape(g, g.op("Transpose", [reshape(g, c, [1, 2, 4, 8, 8])], perm=[0, 2, 1, 3, 4]), [1, 8, 8, 8])
    crop = slice_(g, sh, [1, 2], [7, 6], [2, 3])
    g.save(d, g.conv(crop, 8, 8, k=1, relu=False), [1, 8, 6, 4], d)

    # torch's AvgPool2d(3, 2, padding=1) and AvgPool2d(2): Pad + AveragePool
    g = G("padpool", [1, 4, 12, 12])
    p = g.op("AveragePool", [pad(g, g.conv("x", 4, 8), [0, 0, 1, 1, 0, 0, 1, 1], mode="constant")],
             kernel_shape=[3, 3], strides=[2, 2])
    y = g.op("AveragePool", [pad(g, p, [0] * 8, mode="constant")], kernel_shape=[2, 2], strides=[2, 2])
    g.save(d, g.conv(y, 8, 4, k=1, relu=False), [1, 4, 3, 3], d)

    g = G("padconv", [1, 4, 10, 10])
    a = pad(g, g.conv("x", 4, 8), [0, 0, 1, 2, 0, 0, 1, 0], mode="constant")
    g.save(d, g.conv(a, 8, 8, pad=0, relu=False), [1, 8, 10, 10], d)

    # pads the NPU cannot take: reflect, and a non-zero value (its code on the
    # input's scale is no exact code: stays float), on the host
    g = G("padhost", [1, 4, 8, 8])
    a = pad(g, g.conv("x", 4, 8), [0, 0, 1, 1, 0, 0, 1, 1], mode="reflect")
    v = g.t("value")
    g.inits.append(numpy_helper.from_array(np.array(0.3, np.float32), v))
    b = g.op("Pad", [g.conv(a, 8, 8, pad=0), i64(g, [0, 0, 1, 1, 0, 0, 1, 1]), v], mode="constant")
    g.save(d, g.conv(b, 8, 4, pad=0, relu=False), [1, 4, 8, 8], d)

    g = G("split3", [1, 4, 12, 12])
    parts = split(g, g.conv("x", 4, 8), [2, 3, 3], 1)
    c = g.op("Concat", [g.conv(p, n, 4, k=1) for p, n in zip(parts, [2, 3, 3])], axis=1)
    rows = split(g, c, [4, 4, 4], 2)
    y = g.op("Concat", [g.op("Relu", [r]) for r in rows[::-1]], axis=2)
    g.save(d, g.conv(y, 12, 4, k=1, relu=False), [1, 4, 12, 12], d)


def i64(g, v):
    t = g.t("idx")
    g.inits.append(numpy_helper.from_array(np.array(v, np.int64), t))
    return t


def fire(d):
    """SqueezeNet's fire module and the max pool after its concat (opt
    pool_concat: each expand conv then cascades into a pool of its own);
    generated last so that the models before keep their random draws."""
    g = G("fire", [1, 8, 29, 29])
    s = g.conv("x", 8, 8, k=1)
    c = g.op("Concat", [g.conv(s, 8, 16, k=1), g.conv(s, 8, 16)], axis=1)
    p = g.op("MaxPool", [c], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    y = g.conv(p, 32, 8, k=1)
    g.save(d, y, [1, 8, 14, 14], d)


def bigpool(d):
    """A global average pool over 96x96 = 9,216 elements, past edge-v1's
    4,096-element divider: split into an 8x8 block pool and a 12x12 global
    pool (split_pool), both on the NPU; generated last (fire's note)."""
    g = G("bigpool", [1, 3, 96, 96])
    y = g.conv("x", 3, 8)
    p = g.op("GlobalAveragePool", [y])
    f = g.op("Flatten", [p], axis=1)
    y = g.gemm(f, 8, 4)
    g.save(d, y, [1, 4], d)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/e2e/models"
    os.makedirs(out, exist_ok=True)
    models(out)
    invres(out)
    npuops(out)
    moves(out)
    fire(out)
    bigpool(out)
