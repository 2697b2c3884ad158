"""The node-test sweep on the simulated SoC (driven by tests/conformance/run_sim.sh).

    sim.py BUILD [PATTERN...]

For every case of supported.txt that is not in sim_excluded.txt (or only those
matching a PATTERN): calibrate on the case's own inputs, compile with
`npucc --target edge-v1`, run every data set on `npusim` and on
`npuref MODEL.npub`, and require
  1. npusim's outputs byte for byte equal to npuref MODEL.npub's;
  2. each float output within the quantization tolerance of the expected
     output (docs/testing.md): per element
        |got - expected| <= |f(fq(x)) - f(x)| + 2 * s_out + 1e-6 * |expected|
     where fq(x) is every float input quantized and dequantized with its
     compiled scale (the error the inputs' rounding makes, propagated through
     the float op by running it: npuref MODEL.onnx on fq(x)) and s_out the
     scale of the output's int8 code (half an LSB of rounding at the output,
     the rest for integer kernels' requantization); non-float outputs exactly,
     and a float output without an int8 code of its own (a float op's result
     on the host) with s_out taken as its range over 255 (the scale a code of
     that range would have) and one such allowance of 2 * s_out per int8
     tensor of the compiled model (each quantization point on the way
     rounds by half an LSB of its own scale); no int8 tensor at all (the
     whole case runs in float): 1e-5 relative.
Prints a line per failure, then `N passed, N failed`; exits 1 on a failure.
SIM_JOBS (2) and SIM_TIMEOUT (60 s) tune it.
"""
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

TIMEOUT = float(os.environ.get("SIM_TIMEOUT", "60"))


def tag(name):
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def run(cmd, log):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT, text=True)
    log.append(f"$ {' '.join(cmd)}\n{r.stdout}")
    if r.returncode:
        raise RuntimeError(f"{os.path.basename(cmd[0])} exited {r.returncode}: " +
                           (r.stdout.strip().splitlines() or ["?"])[-1])
    return r.stdout


def data_sets(case_dir):
    return sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set_"))


def n_files(ds, prefix):
    i = 0
    while os.path.exists(os.path.join(ds, f"{prefix}_{i}.npy")):
        i += 1
    return i


def quant_of(listing):
    """{tensor name: (scale, zero point)} from npudis' tensor table."""
    out = {}
    for m in re.finditer(r"^\s+t\d+\s+\S+\s+\[[^\]]*\].*? s=(\S+) z=(-?\d+).*?\s(\S+)$", listing, re.M):
        out[m.group(3)] = (float(m.group(1)), int(m.group(2)))
    return out


def fake_quant(x, s, z):
    q = np.clip(np.round(x.astype(np.float64) / s) + z, -128, 127)
    return ((q - z) * s).astype(np.float32)


def check_output(got, exp, fq_out, s_out, n_q):
    if got.dtype != exp.dtype or got.shape != exp.shape:
        return f"got {got.dtype}{list(got.shape)}, expected {exp.dtype}{list(exp.shape)}"
    if exp.dtype.kind != "f":
        return None if np.array_equal(got, exp) else f"{int(np.sum(got != exp))} elements differ (exact)"
    g, e = got.astype(np.float64), exp.astype(np.float64)
    nan = np.isnan(e)
    if np.any(np.isnan(g) != nan):
        return "NaN where the expected output has none, or the other way round"
    g, e = np.where(nan, 0, g), np.where(nan, 0, e)
    fin = np.where(np.isfinite(e), e, 0)
    prop = np.abs(np.where(nan, 0, fq_out.astype(np.float64)) - e) if fq_out is not None else 0
    prop = np.where(np.isfinite(prop), prop, 0)
    if s_out is not None:
        tol = prop + 2 * s_out + 1e-6 * np.abs(e)
    elif n_q:  # a float result of int8 intermediates
        s_out = (max(fin.max(initial=0), 0) - min(fin.min(initial=0), 0)) / 255
        tol = prop + 2 * n_q * s_out + 1e-6 * np.abs(e)
    else:  # float end to end
        tol = 1e-5 * np.abs(e) + 1e-6
    inf = np.isinf(e)
    bad = np.where(inf, g != e, np.abs(g - e) > tol)
    if np.any(bad):
        i = int(np.argmax(np.where(bad, np.abs(g - e) - tol, -np.inf)))
        return (f"{int(bad.sum())} of {bad.size} elements outside the tolerance, worst at {i}: "
                f"{g.flat[i]:.6g} vs {e.flat[i]:.6g} (tolerance {np.broadcast_to(tol, e.shape).flat[i]:.3g},"
                f" s_out {s_out})")
    return None


def run_case(build, data, work, name):
    case_dir = os.path.join(data, "node", name)
    with open(os.path.join(case_dir, "case.json")) as fh:
        case = json.load(fh)
    w = os.path.join(work, name)
    shutil.rmtree(w, ignore_errors=True)
    cal = os.path.join(w, "calib")
    os.makedirs(cal)
    log = []
    inputs = case["inputs"]
    sets = data_sets(case_dir)
    for k, ds in enumerate(sets):
        for i, inp in enumerate(inputs):
            src = os.path.join(case_dir, ds, f"input_{i}.npy")
            dst = f"{k:02d}.{tag(inp['name'])}.npy" if len(inputs) > 1 else f"{k:02d}.npy"
            shutil.copy(src, os.path.join(cal, dst))
    npub = os.path.join(w, "model.npub")
    model = os.path.join(case_dir, "model.onnx")
    try:
        run([f"{build}/npucc", "--target", "edge-v1", "--calib", cal, "-o", npub, model], log)
        q = quant_of(run([f"{build}/npudis", npub], log))
        for k, ds in enumerate(sets):
            dsd = os.path.join(case_dir, ds)
            ins = [os.path.join(dsd, f"input_{i}.npy") for i in range(n_files(dsd, "input"))]
            n_out = n_files(dsd, "output")
            args = [a for p in ins for a in ("--input", p)]
            outs = {}
            for tool in ("npusim", "npuref"):
                o = [os.path.join(w, f"{ds}.{tool}.{j}.npy") for j in range(n_out)]
                run([f"{build}/{tool}", npub] + args + [a for p in o for a in ("--output", p)], log)
                outs[tool] = o
            for j in range(n_out):
                with open(outs["npusim"][j], "rb") as a, open(outs["npuref"][j], "rb") as b:
                    if a.read() != b.read():
                        raise RuntimeError(f"{ds} output {j}: npusim differs from npuref MODEL.npub")
            # the inputs' rounding, propagated through the float model
            fq_ins = []
            for i, p in enumerate(ins):
                x = np.load(p)
                qp = q.get(inputs[i]["name"] + ":q")
                if qp and x.dtype == np.float32:
                    p = os.path.join(w, f"{ds}.fq.{i}.npy")
                    np.save(p, fake_quant(x, *qp))
                fq_ins.append(p)
            fq = [os.path.join(w, f"{ds}.fq.out.{j}.npy") for j in range(n_out)]
            run([f"{build}/npuref", model] + [a for p in fq_ins for a in ("--input", p)] +
                [a for p in fq for a in ("--output", p)], log)
            for j in range(n_out):
                oname = case["outputs"][j]["name"]
                qp = q.get(oname + ":q")
                why = check_output(np.load(outs["npusim"][j]), np.load(os.path.join(dsd, f"output_{j}.npy")),
                                   np.load(fq[j]), qp[0] if qp else None, len(q))
                if why:
                    raise RuntimeError(f"{ds} output {j} ('{oname}'): {why}")
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        with open(os.path.join(w, "log"), "w") as fh:
            fh.write("\n".join(log))
        msg = f"timed out after {TIMEOUT:.0f} s" if isinstance(e, subprocess.TimeoutExpired) else str(e)
        return name, msg
    shutil.rmtree(w, ignore_errors=True)
    return name, None


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    build, patterns = argv[1], argv[2:]
    data = os.path.join(build, "conformance")
    work = os.path.join(build, "conformance-sim")
    os.makedirs(work, exist_ok=True)
    sup = compare.read_list(os.path.join(HERE, "supported.txt"))
    exc = compare.read_list(os.path.join(HERE, "sim_excluded.txt"))
    bad = [n for n in exc if n not in sup] + [n for n, why in exc.items() if not why]
    if bad:
        raise SystemExit(f"sim_excluded.txt: not in supported.txt or without a reason: {', '.join(bad)}")
    names = [n for n in sup if n not in exc and compare.match(n, patterns)]
    t0 = time.time()
    print(f"conformance-sim: {len(names)} node tests on npusim ({len(exc)} excluded: sim_excluded.txt)")
    failed = []
    with cf.ThreadPoolExecutor(int(os.environ.get("SIM_JOBS", "2"))) as ex:
        for name, why in ex.map(lambda n: run_case(build, data, work, n), names):
            if why:
                failed.append(name)
                print(f"FAIL {name}: {why}", flush=True)
    print(f"conformance-sim: {time.time() - t0:.0f} s; logs of failures in {work}/CASE/log")
    print(f"{len(names) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
