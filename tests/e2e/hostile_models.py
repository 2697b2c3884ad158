"""Hostile inputs for tests/e2e/hostile.sh (issue 19), written into DIR:
a long Relu chain, a Slice with steps INT64_MIN, zero-size and bad-opset
models, a two-input model, a 150k-deep YAML target, a PNG that declares
20000x20000, calibration sets with NaN. Usage: hostile_models.py DIR CHAIN_LEN"""
import os, struct, sys, zlib
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

d, chain = sys.argv[1], int(sys.argv[2])
F = TensorProto.FLOAT


def save(name, nodes, ins, outs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, ins, outs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(m, os.path.join(d, name + ".onnx"))
    return m


def vi(n, shape):
    return helper.make_tensor_value_info(n, F, shape)


def calib(name, arrays):
    p = os.path.join(d, name)
    os.makedirs(p, exist_ok=True)
    for f, a in arrays.items():
        np.save(os.path.join(p, f), a)


s = [1, 4, 4, 4]
save("chain", [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"r{i}") for i in range(chain)],
     [vi("t0", s)], [vi(f"t{chain}", s)])
rng = np.random.default_rng(1)
calib("calib", {"a.npy": rng.standard_normal(s).astype(np.float32)})
# the same input on 8 nodes: the calibration-file cases test the files, not
# the import of 100k nodes (about 0.5 s, over their 1 s bound on a loaded machine)
save("short", [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"r{i}") for i in range(8)],
     [vi("t0", s)], [vi("t8", s)])
np.save(os.path.join(d, "x.npy"), rng.standard_normal(s).astype(np.float32))
nan = rng.standard_normal(s).astype(np.float32)
nan.flat[5] = np.nan
np.save(os.path.join(d, "nan.npy"), nan)
calib("calib_nan", {"a.npy": nan})
nan5 = np.arange(80, dtype=np.float32).reshape(1, 4, 4, 5)
nan5.flat[5] = np.nan
np.save(os.path.join(d, "nan5.npy"), nan5)
os.makedirs(os.path.join(d, "calib_bin_inf"), exist_ok=True)
inf = rng.standard_normal(s).astype(np.float32)
inf.flat[7] = np.inf
inf.tofile(os.path.join(d, "calib_bin_inf", "a.bin"))

# Slice x[-1::INT64_MIN] on a [5] axis: one element
imin = np.iinfo(np.int64).min
save("slice_min", [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="sl")],
     [vi("x", [1, 4, 4, 5])], [vi("y", [1, 4, 4, 1])],
     [numpy_helper.from_array(np.array(v, np.int64), n)
      for n, v in [("st", [-1]), ("en", [imin]), ("ax", [3]), ("sp", [imin])]])
calib("calib_slice", {"a.npy": rng.standard_normal([1, 4, 4, 5]).astype(np.float32)})
np.save(os.path.join(d, "x_slice.npy"), np.arange(80, dtype=np.float32).reshape(1, 4, 4, 5))

save("zero", [helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [1, 0, 4, 4])], [vi("y", [1, 0, 4, 4])])
calib("calib_zero", {"a.npy": np.zeros([1, 0, 4, 4], np.float32)})
save("zero_add", [helper.make_node("Add", ["x", "c"], ["y"], name="add")], [vi("x", [1, 0, 4, 4])],
     [vi("y", [1, 0, 4, 4])], [numpy_helper.from_array(np.ones([1, 0, 4, 4], np.float32), "c")])
for v in (0, 1 << 40):
    m = save(f"opset_{v}", [helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", s)], [vi("y", s)])
    m.opset_import[0].version = v
    onnx.save(m, os.path.join(d, f"opset_{v}.onnx"))
save("two", [helper.make_node("Add", ["a", "b"], ["y"], name="add")], [vi("a", s), vi("b", s)], [vi("y", s)])
calib("calib_two", {"x.npy": np.ones(s, np.float32), "y.npy": np.ones(s, np.float32)})

# a target whose isa is 150k nested lists (300 KB)
with open(os.path.join(d, "deep.yaml"), "w") as f:
    f.write("name: deep\nisa: " + "[" * 150000 + "]" * 150000 + "\n")


def chunk(t, data):
    return struct.pack(">I", len(data)) + t + data + struct.pack(">I", zlib.crc32(t + data) & 0xffffffff)


# a gray PNG whose header declares 20000x20000 (its data is a few bytes)
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 20000, 20000, 8, 0, 0, 0, 0)) + \
      chunk(b"IDAT", zlib.compress(b"\0" * 100)) + chunk(b"IEND", b"")
os.makedirs(os.path.join(d, "calib_png"), exist_ok=True)
open(os.path.join(d, "calib_png", "big.png"), "wb").write(png)
save("gray", [helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [1, 1, 8, 8])], [vi("y", [1, 1, 8, 8])])
