#!/usr/bin/python3
"""Generates the A16W8 fixture of tests/e2e/a16.sh: a small residual
conv / depthwise / LUT network whose activations have a wide dynamic range
(inputs with rare large values, as real images' bright pixels or a
transformer's outlier channels), where 8-bit activations lose most and
16-bit ones keep the weights' precision. Seeded; writes a16net.onnx, its
calibration set a16net_calib/ and a16net_input.npy into DIR, and the same
three of a16dense (a DenseNet block of nested concats, below).

    /usr/bin/python3 tests/e2e/gen_a16.py DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(1618)


def const(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def conv(nodes, inits, x, cin, cout, k, group, name):
    w = rng.standard_normal((cout, cin // group, k, k)) / np.sqrt(cin // group * k * k)
    inits += [const(name + "_w", w), const(name + "_b", rng.standard_normal(cout) * 0.05)]
    nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name], name=name, kernel_shape=[k, k],
                                  pads=[k // 2] * 4, group=group))
    return name


def sample(shape):
    x = rng.standard_normal(shape) * 0.05
    hot = rng.random(shape) < 0.01  # rare values 200x the typical ones
    x[hot] = rng.choice([-10.0, 10.0], hot.sum())
    return x.astype(np.float32)


def main(d):
    shape = [1, 4, 16, 16]
    nodes, inits = [], []
    y = conv(nodes, inits, "x", 4, 16, 3, 1, "conv1")
    nodes.append(helper.make_node("LeakyRelu", [y], ["act1"], name="act1", alpha=0.1))
    y = conv(nodes, inits, "act1", 16, 16, 3, 16, "dw2")
    y = conv(nodes, inits, y, 16, 16, 1, 1, "pw3")
    nodes.append(helper.make_node("Add", [y, "act1"], ["add4"], name="add4"))
    nodes.append(helper.make_node("Tanh", ["add4"], ["tanh5"], name="tanh5"))
    y = conv(nodes, inits, "tanh5", 16, 8, 1, 1, "conv6")
    save(d, "a16net", nodes, inits, shape, y, [1, 8, 16, 16], 4)
    dense(d)


def save(d, name, nodes, inits, shape, y, out_shape, n_inputs):
    """Checks and writes NAME.onnx, NAME_calib/ (8 samples) and NAME_input.npy."""
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, out_shape)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, name + ".onnx"))
    os.makedirs(os.path.join(d, name + "_calib"), exist_ok=True)
    for i in range(8):
        np.save(os.path.join(d, name + "_calib", f"{i:03d}.npy"), sample(shape))
    np.save(os.path.join(d, name + "_input.npy"), np.concatenate([sample(shape) for _ in range(n_inputs)]))


def dense(d):
    """a16dense: a DenseNet block (each layer's input the concat of all the
    earlier outputs, as tests/models/fmnist_dense), whose concats the memory
    plan writes in place, nested; at A16W8 they run on the host (QCONCAT with
    int16 elements, issue 18)."""
    shape = [1, 2, 8, 8]
    nodes, inits = [], []
    c = conv(nodes, inits, "x", 2, 4, 3, 1, "stem")
    for i in range(3):
        r = f"relu{i}"
        nodes.append(helper.make_node("Relu", [c], [r], name=r))
        f = conv(nodes, inits, r, 4 + 2 * i, 2, 3, 1, f"grow{i}")
        nodes.append(helper.make_node("Concat", [c, f], [f"cat{i}"], name=f"cat{i}", axis=1))
        c = f"cat{i}"
    y = conv(nodes, inits, c, 10, 4, 1, 1, "head")
    save(d, "a16dense", nodes, inits, shape, y, [1, 4, 8, 8], 2)


if __name__ == "__main__":
    main(sys.argv[1])
