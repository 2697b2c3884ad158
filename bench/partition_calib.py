#!/usr/bin/python3
"""Fits the host cycle model of src/partition/host_cost.c to npusim.

Compiles each model with --partition host (every node the host runtime can
run goes to the host, so every kernel class is measured), runs it on
npusim, joins the compile-time estimates ("partition"."host_steps": kernel
class, work) with the measured host cycles per step ("steps") by name, and
fits per class: host instructions = call + per_out * outputs + per_work *
work (least squares, the
relative error weighted so that small steps count; max error per class). Prints the fit, each
class's error and the per-model error of the current coefficients.

usage: bench/partition_calib.py BUILD [TARGET.yaml] MODEL.onnx:CALIB_DIR:INPUT.npy ...
"""
import json
import os
import subprocess
import sys


def run(build, target, model, calib, inp, work, mode):
    stem = os.path.join(work, os.path.basename(model)[:-5] + "." + mode)
    subprocess.run([f"{build}/npucc", "--target", target, "--calib", calib, "--partition", mode,
                    "-o", stem + ".npub", "--stats-json", stem + ".json", model],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([f"{build}/npusim", stem + ".npub", "--input", inp, "--stats-json", stem + ".sim.json"],
                   check=True, stdout=subprocess.DEVNULL)
    est = json.load(open(stem + ".json"))
    sim = json.load(open(stem + ".sim.json"))
    return est, sim


def join(est, sim):
    """(kernel, outputs, work, estimated, measured) per host step, in NPU cycles."""
    meas = {s["name"]: s["host_cycles"] for s in sim["steps"] if s["kind"] == "host"}
    return [(h["kernel"], h["outputs"], h["work"], h["aux"], h["estimated_cycles"], meas[h["name"]])
            for h in est["partition"]["host_steps"] if h["name"] in meas]  # a view the plan aliased is no step


def fit(samples):
    """least squares of y = call + per_out * out + per_work * work + per_aux * aux, relative
    error (weights 1/y); a column that comes out negative or is all zero is
    dropped and the rest refitted"""
    import numpy as np
    cols = [0, 1, 2, 3]
    while True:
        a = np.array([[(1.0, o, w, x)[c] for c in cols] for o, w, x, _ in samples])
        y = np.array([m for *_, m in samples])
        wt = 1.0 / np.maximum(y, 1.0)
        keep = [i for i, c in enumerate(cols) if np.any(a[:, i] != 0)]
        if len(samples) < len(keep):  # too few to tell the terms apart: the last ones only
            keep = keep[len(keep) - len(samples):]
        if len(keep) < len(cols):
            cols = [cols[i] for i in keep]
            continue
        coef, *_ = np.linalg.lstsq(a * wt[:, None], y * wt, rcond=None)
        neg = [i for i, v in enumerate(coef) if v < 0]
        if neg and len(cols) > 1:
            del cols[neg[0]]
            continue
        full = [0.0, 0.0, 0.0, 0.0]
        for c, v in zip(cols, coef):
            full[c] = float(v)
        return full


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    build = sys.argv[1]
    args = sys.argv[2:]
    target = args.pop(0) if args[0].endswith(".yaml") else "targets/edge-v1.yaml"
    t = open(target).read()
    npu_mhz = float(t.split("npu:")[1].split("clock_mhz:")[1].split()[0])
    host = t.split("host:")[1]
    host_mhz = float(host.split("clock_mhz:")[1].split()[0])
    cpi = float(host.split("cpi:")[1].split()[0])
    to_insns = host_mhz / npu_mhz / cpi  # NPU cycles -> host instructions
    work = os.path.join(build, "partition_calib")
    os.makedirs(work, exist_ok=True)
    by_kernel = {}
    per_model = []
    job = []
    for spec in args:
        model, calib, inp = spec.split(":")
        est, sim = run(build, target, model, calib, inp, work, "host")
        rows = join(est, sim)
        for k, o, w, x, e, m in rows:
            by_kernel.setdefault(k, []).append((o, w, x, m * to_insns, e * to_insns))
        te, tm = sum(r[4] for r in rows), sum(r[5] for r in rows)
        per_model.append((os.path.basename(model), len(rows), te, tm))
        # an NPU step's host cycles beyond the NPU's: the launch and the wait (one-segment models)
        est, sim = run(build, target, model, calib, inp, work, "cost")
        npu_steps = [s for s in sim["steps"] if s["kind"] == "npu"]
        if len(npu_steps) == 1:
            job.append((npu_steps[0]["host_cycles"] - sim["cycles"]["npu"]) * to_insns)
    print("host model fit (instructions = call + per * work), from npusim's measured host steps")
    print(f"{'kernel':12} {'steps':>5} {'call':>7} {'per out':>8} {'per work':>8} {'per aux':>8} {'fit err':>8}"
          f" {'now err':>8}")
    for k in sorted(by_kernel):
        s = by_kernel[k]
        c, po, pw, px = fit([(o, w, x, m) for o, w, x, m, _ in s])
        ferr = max(abs(c + po * o + pw * w + px * x - m) / m for o, w, x, m, _ in s if m > 0)
        nerr = max(abs(e - m) / m for o, w, x, m, e in s if m > 0)
        print(f"{k:12} {len(s):5d} {c:7.0f} {po:8.2f} {pw:8.3f} {px:8.3f} {100 * ferr:7.1f}% {100 * nerr:7.1f}%")
    if job:
        print(f"NPU job: {len(job)} models, {min(job):.0f}..{max(job):.0f} host instructions, mean {sum(job) / len(job):.0f}")
    print(f"\n{'model (--partition host)':28} {'steps':>5} {'estimated':>10} {'simulated':>10} {'error':>7}")
    for name, n, te, tm in per_model:
        print(f"{name:28} {n:5d} {te:10d} {tm:10d} {100 * (te - tm) / max(tm, 1):6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
