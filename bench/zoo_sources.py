#!/usr/bin/python3
"""Where does an int8 model lose its cosine? The float model with one
source of int8 error at a time, run by npuref:
  weights     every Conv/Gemm weight int8 per output channel (max-abs, nearest)
  activations every quantized activation fake-quantized (QuantizeLinear +
              DequantizeLinear; minmax or MSE range over these images),
              the input left in float
The input alone is bench/zoo_ceiling_bench.sh's column. Each source alone
bounds what any int8 scheme can reach; together they compound.
  zoo_sources.py NPUREF MODEL.onnx INPUT.npy WORKDIR
Prints one line: model, then the minimum cosine over the images per source."""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def npuref(npuref_bin, model, inp, outs):
    cmd = [npuref_bin, model, "--input", inp]
    for o in outs:
        cmd += ["--output", o]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def quantized_activations(g):
    """The tensors npucc gives an int8 home: node outputs, except a Conv
    output that an activation consumes (fused) and reshapes (views)."""
    users = {}
    for n in g.node:
        for i in n.input:
            users.setdefault(i, []).append(n.op_type)
    acts = []
    for n in g.node:
        if n.op_type in ("Constant", "Flatten", "Reshape", "Squeeze", "Unsqueeze"):
            continue
        o = n.output[0]
        if n.op_type in ("Conv", "Gemm", "MatMul", "Add") and any(
                u in ("Clip", "Relu") for u in users.get(o, [])):
            continue
        acts.append(o)
    return acts


def mse_range(x, lo, hi):
    """npucc's MSE search (calib/range.c) on a 2048-bin histogram."""
    h, edges = np.histogram(x, bins=2048, range=(lo, hi))
    c = (edges[:-1] + edges[1:]) / 2

    def err(a, b):
        st = (b - a) / 255
        return (np.where(c < a, (a - c) ** 2, np.where(c > b, (c - b) ** 2, st * st / 12)) * h).sum()

    a, b = lo, hi
    for _ in range(2):
        best, bb = err(a, b), b
        for k in range(99, 4, -1):
            e = err(a, hi * k / 100)
            if e < best:
                best, bb = e, hi * k / 100
        b, ba = bb, a
        for k in range(99, 4, -1):
            e = err(lo * k / 100, b)
            if e < best:
                best, ba = e, lo * k / 100
        a = ba
    return a, b


def fake_quant(model, acts, data, method):
    g = model.graph
    nodes = []
    for t in acts:
        lo, hi = min(float(data[t].min()), 0.0), max(float(data[t].max()), 0.0)
        if method == "mse" and hi > lo:
            lo, hi = mse_range(data[t], lo, hi)
        s = (hi - lo) / 255 if hi > lo else 1.0
        zp = int(np.clip(np.round(-128 - lo / s), -128, 127))
        g.initializer.append(numpy_helper.from_array(np.array(s, np.float32), t + "_s"))
        g.initializer.append(numpy_helper.from_array(np.array(zp, np.int8), t + "_z"))
        for n in g.node:
            for i, x in enumerate(n.input):
                if x == t:
                    n.input[i] = t + "_dq"
        for o in g.output:
            if o.name == t:
                o.name = t + "_dq"
        nodes += [helper.make_node("QuantizeLinear", [t, t + "_s", t + "_z"], [t + "_q"]),
                  helper.make_node("DequantizeLinear", [t + "_q", t + "_s", t + "_z"], [t + "_dq"])]
    g.node.extend(nodes)
    return model


def int8_weights(model):
    inits = {i.name: i for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type in ("Conv", "Gemm") and n.input[1] in inits:
            i = inits[n.input[1]]
            w = numpy_helper.to_array(i).astype(np.float64)
            m = np.abs(w).max(axis=tuple(range(1, w.ndim)), keepdims=True)
            s = np.where(m > 0, m / 127, 1.0)
            i.CopyFrom(numpy_helper.from_array((np.clip(np.round(w / s), -127, 127) * s).astype(np.float32), i.name))
    return model


def main():
    npuref_bin, model_path, inp, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    name = os.path.basename(model_path)[:-5]
    base = onnx.load(model_path)
    acts = quantized_activations(base.graph)
    # every activation as an output, to range it
    probe = onnx.load(model_path)
    have = {o.name for o in probe.graph.output}
    for a in acts:
        if a not in have:
            probe.graph.output.append(helper.make_tensor_value_info(a, onnx.TensorProto.FLOAT, None))
    onnx.save(probe, f"{work}/probe.onnx")
    names = [o.name for o in probe.graph.output]
    files = [f"{work}/t{k}.npy" for k in range(len(names))]
    npuref(npuref_bin, f"{work}/probe.onnx", inp, files)
    data = {n: np.load(f) for n, f in zip(names, files)}
    out = base.graph.output[0].name
    ref = data[out].reshape(data[out].shape[0], -1).astype(np.float64)

    def cosine(model):
        onnx.save(model, f"{work}/v.onnx")
        npuref(npuref_bin, f"{work}/v.onnx", inp, [f"{work}/v.npy"])
        a = np.load(f"{work}/v.npy").reshape(ref.shape).astype(np.float64)
        return ((a * ref).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(ref, axis=1)).min()

    w = cosine(int8_weights(onnx.load(model_path)))
    amm = cosine(fake_quant(onnx.load(model_path), acts, data, "minmax"))
    amse = cosine(fake_quant(onnx.load(model_path), acts, data, "mse"))
    print(f"{name:18s} {w:12.5f} {amm:12.5f} {amse:12.5f}")


if __name__ == "__main__":
    main()
