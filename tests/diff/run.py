#!/usr/bin/python3
"""The differential run (docs/testing.md "Differential run"): each model of
gen.py through npuref and onnxruntime, then compiled for a target (its input
as the calibration set) and run on npusim against `npuref MODEL.npub`.
A case passes, or differs in one of the ways written down as decided
(each class below, with why); anything else fails the run.
usage: run.py BUILD CASEDIR [TARGET]"""
import glob
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper as NH

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TOL = 1e-4
# npuref's clear refusals of models onnxruntime runs (docs/kernels-nn.md)
LIMITS = ("is smaller than the kernel extent", "the input can reach", "pads leave an empty output")


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def close(a, b):
    if a.shape != b.shape:
        return False
    a, b = a.astype(np.float64), b.astype(np.float64)  # integer outputs too, without wrapping
    na, nb = np.isnan(a), np.isnan(b)
    if (na != nb).any():
        return False
    a, b = np.where(na, 0, a), np.where(nb, 0, b)
    # float sums in another order: 1e-4 of each value, plus 1e-5 of the tensor's largest (a deep net's
    # outputs near 0 among values near 1000 differ by 1e-3)
    scale = np.abs(b[np.isfinite(b)]).max() if np.isfinite(b).any() else 0
    return not (np.abs(a - b) > TOL * np.maximum(1, np.abs(b)) + 1e-5 * scale).any()


def resize_reference(model, x):
    """Resize in double precision as the ONNX reference (its scales read as
    float32 values widened exactly), or None where it has no such mode."""
    from onnx.backend.test.case.node import resize as R
    n = model.graph.node[0]
    at = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
    init = {i.name: NH.to_array(i) for i in model.graph.initializer}
    mode = at.get("mode", b"nearest").decode()
    ctm = at.get("coordinate_transformation_mode", b"half_pixel").decode()
    sc = init.get(n.input[2]) if len(n.input) > 2 else None
    sz = init.get(n.input[3]) if len(n.input) > 3 else None
    sc = [float(v) for v in sc] if sc is not None and sc.size else None
    sz = [int(v) for v in sz] if sz is not None and sz.size else None
    if mode == "nearest":
        nm = at.get("nearest_mode", b"round_prefer_floor").decode()
        coeffs = lambda r: R.nearest_coeffs(r, mode=nm)  # noqa: E731
    elif mode == "linear":
        coeffs = R.linear_coeffs
    else:
        a = at.get("cubic_coeff_a", -0.75)
        coeffs = lambda r: R.cubic_coeffs(r, A=a)  # noqa: E731
    if ctm == "tf_half_pixel_for_nn":  # (x + 0.5) / scale: asymmetric on a shifted grid
        if mode != "nearest" or sc is None:
            return None
        out = [int(np.floor(d * s)) for d, s in zip(x.shape, sc)]
        idx = np.ix_(*[[int(coeffs((o + 0.5) / s - np.floor((o + 0.5) / s)).argmax() + np.floor((o + 0.5) / s) - 1)
                        for o in range(n_)] for n_, s in zip(out, sc)])
        return x[tuple(np.clip(i, 0, d - 1) for i, d in zip(idx, x.shape))]
    try:
        return R.interpolate_nd(x, coeffs, output_size=sz, scale_factors=sc, coordinate_transformation_mode=ctm,
                                exclude_outside=at.get("exclude_outside", 0)).astype(np.float32)
    except Exception:
        return None


def pool_reference(model, x, shape):
    """A dilated 2-D max pool with SAME_* padding as the ONNX operator docs
    give it (the dilated window in the pad formula; onnxruntime leaves the
    dilation out there), in numpy, to the output shape given; or None."""
    n = model.graph.node[0]
    at = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
    ap = at.get("auto_pad", b"NOTSET").decode()
    if n.op_type != "MaxPool" or not ap.startswith("SAME") or x.ndim != 4 or len(shape) != 4:
        return None
    k, s, dl = at["kernel_shape"], at.get("strides", [1, 1]), at.get("dilations", [1, 1])
    pads = []
    for i in range(2):
        total = max((shape[2 + i] - 1) * s[i] + (k[i] - 1) * dl[i] + 1 - x.shape[2 + i], 0)
        pads.append((total // 2, total - total // 2) if ap == "SAME_UPPER" else (total - total // 2, total // 2))
    xp = np.pad(x, ((0, 0), (0, 0), pads[0], pads[1]), constant_values=-np.inf)
    y = np.full(shape, -np.inf, np.float32)
    for oy in range(shape[2]):
        for ox in range(shape[3]):
            for ky in range(k[0]):
                for kx in range(k[1]):
                    iy, ix = oy * s[0] + ky * dl[0], ox * s[1] + kx * dl[1]
                    if iy < xp.shape[2] and ix < xp.shape[3]:
                        y[:, :, oy, ox] = np.maximum(y[:, :, oy, ox], xp[:, :, iy, ix])
    return y


def float_case(build, d, info, ins, model):
    """(class, detail) of npuref MODEL.onnx against onnxruntime."""
    n = info["outputs"]
    ro, oo = [f"{d}/r{k}.npy" for k in range(n)], [f"{d}/o{k}.npy" for k in range(n)]
    ort = run(["node", f"{ROOT}/tools/ort/run.js", f"{d}/m.onnx"] + ins + oo)
    ref = run([f"{build}/npuref", f"{d}/m.onnx"] + sum([["--input", i] for i in ins], [])
              + sum([["--output", o] for o in ro], []))
    opt_fails = ort.returncode != 0
    if opt_fails:  # its graph optimizer may be what fails ("two nodes with same node name" on a QDQ Conv + Clip)
        ort = run(["node", f"{ROOT}/tools/ort/run.js", "--no-opt", f"{d}/m.onnx"] + ins + oo)
        if ort.returncode:
            return "ort-refuses", ort.stderr.strip()[-160:]
    if ref.returncode:
        msg = ref.stderr.strip()
        qop = "(QLinear" in msg and "cannot run this op" in msg  # npuref has no float QOperator kernels
        return ("limit" if ref.returncode == 1 and (qop or any(s in msg for s in LIMITS)) else "FAIL"), msg[-200:]
    for k in range(n):
        a, b = np.load(ro[k]), np.load(oo[k])
        if close(a, b):
            continue
        declared = [dm.dim_value for dm in model.graph.output[k].type.tensor_type.shape.dim]
        if a.shape != b.shape and list(a.shape) == declared:
            return "declared", f"{a.shape} as the model declares; onnxruntime {b.shape}"
        noopt = ort_noopt(d, ins, k)
        if noopt is not None and close(a, noopt):
            return "ort-opt", "onnxruntime's graph optimizations change the result; without them it agrees"
        if info["what"] == "qdq":
            cls, detail = tie_class(a, [b] + ([noopt] if noopt is not None else []), info["out_scale"])
            return ("qdq-tie", "values a step apart: a rounding tie") if cls == "ok" else (cls, detail)
        if info["ops"] == ["Resize"]:
            want = resize_reference(model, np.load(ins[0]))
            if want is not None and close(a, want):
                return "onnx-ref", "the ONNX reference's double-precision coordinates; onnxruntime computes in float"
        if info["ops"] == ["MaxPool"]:
            want = pool_reference(model, np.load(ins[0]), a.shape)
            if want is not None and close(a, want):
                return "onnx-ref", "SAME pads from the dilated window, as the operator docs; onnxruntime leaves it out"
        return "FAIL", f"output {k}: {a.shape} vs onnxruntime {b.shape}, max error " + (
            f"{np.nanmax(np.abs(a - b)):.3g}" if a.shape == b.shape else "-")
    if opt_fails:
        return "ort-opt", "onnxruntime's graph optimizer fails on the model; without it, it agrees"
    return "ok", ""


def tie_class(a, refs, scale):
    """(class, detail) of a pre-quantized model's output a against onnxruntime's refs, in steps of the
    output's scale: with its graph optimizations onnxruntime runs fused integer kernels, without them
    the Q/DQ ops in float; a rounding tie (a value on a half step) may go either way in any of these
    and in ours, and a layer after it moves its neighbours by a step or two. So each element is taken
    against the nearer of the two; more than a step off is allowed on at most 1% of them, up to 8."""
    if not refs or any(r.shape != a.shape for r in refs):
        return "FAIL", "no onnxruntime output of this shape"
    off = np.min([np.abs(a.astype(np.float64) - r) for r in refs], axis=0) / scale
    far = off > 1.001
    if not far.any():
        return "ok", ""
    if far.mean() <= 0.01 and off.max() <= 8:
        return "qdq-tie", f"{far.sum()} of {off.size} values {off.max():.0f} steps off: a rounding tie"
    return "FAIL", f"{far.sum()} of {off.size} values more than a step from onnxruntime's, up to {off.max():.1f}"


def ort_noopt(d, ins, k):
    """onnxruntime's output k without its graph optimizations (n{k}.npy), or None."""
    if not os.path.exists(f"{d}/n{k}.npy"):
        run(["node", f"{ROOT}/tools/ort/run.js", "--no-opt", f"{d}/m.onnx"] + ins + [f"{d}/n{k}.npy"])
    return np.load(f"{d}/n{k}.npy") if os.path.exists(f"{d}/n{k}.npy") else None


def qdq_steps(d, ins, info):
    """npusim's output of a pre-quantized model against onnxruntime's (tie_class); the run without
    graph optimizations only where the optimized one is not within a step everywhere."""
    s, refs = np.load(f"{d}/s.npy"), [np.load(f"{d}/o0.npy")] if os.path.exists(f"{d}/o0.npy") else []
    cls, detail = tie_class(s, refs, info["out_scale"]) if refs else ("none", "")
    if cls != "ok":
        noopt = ort_noopt(d, ins, 0)
        refs += [noopt] if noopt is not None else []
        if not refs:
            return "npu-ok", ""  # onnxruntime refuses the model (the float stage says so)
        cls, detail = tie_class(s, refs, info["out_scale"])
    return ("npu-ok" if cls == "ok" else cls), detail


def npu_case(build, d, ins, model, target, info):
    """(class, detail) of the compiled model, its inputs as the calibration set (a pre-quantized model
    takes none): npusim bit-exact with npuref MODEL.npub (every output), and a pre-quantized
    model's within a step of onnxruntime's (qdq_steps)."""
    os.makedirs(f"{d}/cal", exist_ok=True)
    names = [i.name for i in model.graph.input]
    if len(names) != len(ins):
        return "npu-skip", "inputs that are initializers too"
    for name, path in zip(names, ins):  # one sample, one file per input (docs/cli.md: several inputs)
        np.save(f"{d}/cal/s0.{name}.npy" if len(ins) > 1 else f"{d}/cal/a.npy", np.load(path))
    flags = os.environ.get("DIFF_NPUCC_FLAGS", "").split()  # e.g. "--wbits 4", "--abits 16"
    qdq = info["what"] == "qdq"
    cal = [] if qdq else ["--calib", f"{d}/cal"]
    cc = run([f"{build}/npucc", "--target", target, "-o", f"{d}/m.npub"] + cal + flags + [f"{d}/m.onnx"])
    if cc.returncode:
        return ("npu-refuses" if cc.returncode == 1 else "FAIL"), cc.stderr.strip()[-200:]
    feed = sum([["--input", i] for i in ins], [])
    so = [f"{d}/s.npy"] + [f"{d}/s{k}.npy" for k in range(1, info["outputs"])]
    qo = [f"{d}/q.npy"] + [f"{d}/q{k}.npy" for k in range(1, info["outputs"])]
    sim = run([f"{build}/npusim", f"{d}/m.npub"] + feed + sum([["--output", o] for o in so], []))
    ref = run([f"{build}/npuref", f"{d}/m.npub"] + feed + sum([["--output", o] for o in qo], []))
    if sim.returncode or ref.returncode:
        return "FAIL", (sim.stderr or ref.stderr).strip()[-200:]
    for k, (a, b) in enumerate(zip(so, qo)):
        if not np.array_equal(np.load(a), np.load(b), equal_nan=True):
            return "FAIL", f"npusim and npuref MODEL.npub differ on output {k}"
    return qdq_steps(d, ins, info) if qdq else ("npu-ok", "")


def main(build, cases, target="edge-v1"):
    counts, fails = {}, []
    for d in sorted(glob.glob(f"{cases}/c*")):
        info = json.load(open(f"{d}/case.json"))
        ins = sorted(glob.glob(f"{d}/in*.npy"))
        model = onnx.load(f"{d}/m.onnx")
        for what, (cls, detail) in (("float", float_case(build, d, info, ins, model)),
                                    ("npu", npu_case(build, d, ins, model, target, info))):
            counts[cls] = counts.get(cls, 0) + 1
            if cls == "FAIL":
                fails.append(f"{d} ({'+'.join(info['ops'])}, {what}): {detail}")
    print("diff: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for f in fails:
        print("FAIL " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
