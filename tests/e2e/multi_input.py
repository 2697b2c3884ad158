#!/usr/bin/python3
"""A model with two float inputs (tests/e2e/multi_input.sh): a conv on an
image, a depthwise conv on a one-channel mask named 'mask:0' (not a safe
file-name tag: its files are STEM.mask_0.npy), Add, Relu, a 1x1 conv; a
calibration set under the file-name convention and one test input pair.
  multi_input.py OUTDIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out = sys.argv[1]
os.makedirs(f"{out}/calib", exist_ok=True)
rng = np.random.default_rng(7)
w = [nh.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)
     for n, s in (("w1", (8, 3, 3, 3)), ("w2", (8, 1, 3, 3)), ("w3", (4, 8, 1, 1)))]
nodes = [h.make_node("Conv", ["image", "w1"], ["a"], pads=[1, 1, 1, 1], name="conv_image"),
         h.make_node("Conv", ["mask:0", "w2"], ["b"], pads=[1, 1, 1, 1], name="conv_mask"),
         h.make_node("Add", ["a", "b"], ["s"], name="add"),
         h.make_node("Relu", ["s"], ["r"], name="relu"),
         h.make_node("Conv", ["r", "w3"], ["y"], name="head")]
g = h.make_graph(nodes, "two_inputs",
                 [h.make_tensor_value_info("image", T.FLOAT, [1, 3, 16, 16]),
                  h.make_tensor_value_info("mask:0", T.FLOAT, [1, 1, 16, 16])],
                 [h.make_tensor_value_info("y", T.FLOAT, [1, 4, 16, 16])], w)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), f"{out}/two_inputs.onnx")


def image():
    return rng.standard_normal((1, 3, 16, 16)).astype(np.float32)


def mask():  # another range than the image's: its own scale
    return (rng.random((1, 1, 16, 16)) * 4).astype(np.float32)


for s in range(16):
    np.save(f"{out}/calib/{s:02d}.image.npy", image())
    np.save(f"{out}/calib/{s:02d}.mask_0.npy", mask())
np.save(f"{out}/image.npy", image())
np.save(f"{out}/mask.npy", mask())
