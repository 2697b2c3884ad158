#!/usr/bin/python3
"""QDQ models whose graph inputs and outputs are already quantized, for
tests/e2e/io_types.sh: tests/qdq/qdq_s8.onnx (qdq_u8.onnx) with its input
QuantizeLinear and its output DequantizeLinear cut off, so the model takes
the int8 (uint8) codes xin_q and returns the codes y_q, as a converter that
keeps a quantized model's I/O quantized writes it. Also the input codes of
tests/qdq/qdq_input.npy at the model's input scale.
Usage: gen_io_qdq.py OUTDIR -> OUTDIR/io_{s8,u8}.onnx, OUTDIR/io_{s8,u8}_input.npy"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
x = np.load(os.path.join(here, "..", "qdq", "qdq_input.npy"))
for tag, elem, npdt in (("s8", TensorProto.INT8, np.int8), ("u8", TensorProto.UINT8, np.uint8)):
    m = onnx.load(os.path.join(here, "..", "qdq", "qdq_%s.onnx" % tag))
    g = m.graph
    init = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    keep = [n for n in g.node if n.name not in ("xin_Q", "y_DQ")]
    del g.node[:]
    g.node.extend(keep)
    del g.input[:]
    g.input.extend([helper.make_tensor_value_info("xin_q", elem, list(x.shape))])
    del g.output[:]
    g.output.extend([helper.make_tensor_value_info("y_q", elem, [1, 10])])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "io_%s.onnx" % tag))
    s, zp = np.float32(init["xin_scale"]), int(init["xin_zp"])
    lo, hi = (0, 255) if tag == "u8" else (-128, 127)
    q = np.clip(np.round(x / s) + zp, lo, hi).astype(npdt)
    np.save(os.path.join(out, "io_%s_input.npy" % tag), q)

# a float model behind a quantized input: int8 codes -> DequantizeLinear ->
# Conv -> Relu, no QuantizeLinear (not a QDQ model): npucc calibrates it, on
# int8 .npy files (the codes are the data)
rng = np.random.default_rng(7)
w = rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32)
nodes = [helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["x"], name="in_DQ"),
         helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"], name="relu")]
inits = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"), numpy_helper.from_array(np.array(3, np.int8), "xz"),
         numpy_helper.from_array(w, "w")]
g = helper.make_graph(nodes, "int8_input", [helper.make_tensor_value_info("xq", TensorProto.INT8, [1, 3, 8, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen_io_qdq.py")
onnx.checker.check_model(m)
onnx.save(m, os.path.join(out, "int8_input.onnx"))
os.makedirs(os.path.join(out, "int8_input_calib"), exist_ok=True)
for k in range(4):
    np.save(os.path.join(out, "int8_input_calib", "%d.npy" % k), rng.integers(-128, 128, (1, 3, 8, 8)).astype(np.int8))
np.save(os.path.join(out, "int8_input_input.npy"), rng.integers(-128, 128, (1, 3, 8, 8)).astype(np.int8))
