"""Float reference accuracy on the shared models (issue 2, "what shows it is done").

    /usr/bin/python3 bench/float_accuracy.py BUILD [--ort]

- zoo: every models/zoo/*.onnx runs on the in*.npy whose shape fits its input
  (batched: N images, N inferences); cosine similarity with *.ort_out.npy,
  per image, in float64. Target: min cosine >= 0.99999.
- fmnist: cnn/mbv2 on test_x.npy; top-1 against test_y.npy on the first n
  images for each *.ort_top1_<n>.json; target |npuref - onnxruntime| <= 0.05
  points (percent). The *.json torch_float_top1 is printed for reference (its
  test set differs). --ort also runs onnxruntime (tools/ort) on the same
  images and counts label disagreements.

This is a benchmark, not a test: it reads ../shared (beside the repo, or
$NPUCC_SHARED, or /work/shared) and skips with a message when that is absent.
Exits 1 if a target is missed or npuref fails. NPUREF overrides BUILD/npuref.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COS_TARGET = 0.99999
TOP1_POINTS = 0.05


def shared_dir():
    for d in (os.environ.get("NPUCC_SHARED"), os.path.join(ROOT, "..", "shared"), "/work/shared"):
        if d and os.path.isdir(os.path.join(d, "models")):
            return os.path.abspath(d)
    return None


def model_input_shape(path):
    """Shape of the first graph input that is not an initializer (None if onnx
    is not importable: then any input with a matching rank is tried)."""
    try:
        import onnx
    except ImportError:
        return None
    g = onnx.load(path, load_external_data=False).graph
    inits = {t.name for t in g.initializer}
    for i in g.input:
        if i.name not in inits:
            return [d.dim_value if d.HasField("dim_value") else None for d in i.type.tensor_type.shape.dim]
    return None


def run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        tail = p.stdout.strip().splitlines()[-3:]
        raise RuntimeError(f"{what}: exit {p.returncode}: {' | '.join(tail)}")


def npuref(exe, model, inp, out):
    run([exe, model, "--input", inp, "--output", out], f"npuref {os.path.basename(model)}")
    return np.load(out)


def cosine_rows(a, b):
    a = a.reshape(a.shape[0], -1).astype(np.float64)
    b = b.reshape(b.shape[0], -1).astype(np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def zoo(exe, shared, tmp):
    zdir = os.path.join(shared, "models", "zoo")
    inputs = {f: np.load(f, mmap_mode="r").shape for f in sorted(glob.glob(os.path.join(zdir, "in*.npy")))}
    rows, ok = [], True
    for model in sorted(glob.glob(os.path.join(zdir, "*.onnx"))):
        name = os.path.basename(model)[:-5]
        ref = os.path.join(zdir, name + ".ort_out.npy")
        shape = model_input_shape(model)
        fits = [f for f, s in inputs.items()
                if (shape is None and len(s) == 4) or (shape and list(s[1:]) == shape[1:])]
        if not os.path.exists(ref) or not fits:
            rows.append((name, "-", "-", "-", "-", "SKIP (no reference or no input that fits)"))
            continue
        try:
            got = npuref(exe, model, fits[0], os.path.join(tmp, name + ".npy"))
            exp = np.load(ref)
            if got.shape != exp.shape:
                raise RuntimeError(f"output shape {got.shape}, onnxruntime's {exp.shape}")
            cos = cosine_rows(got, exp)
            err = float(np.abs(got.astype(np.float64) - exp).max())
            good = bool(cos.min() >= COS_TARGET)
            same_top1 = int((got.reshape(got.shape[0], -1).argmax(1) == exp.reshape(exp.shape[0], -1).argmax(1)).sum())
            rows.append((name, os.path.basename(fits[0]), f"{cos.min():.10f}", f"{1 - cos.min():.1e}", f"{err:.3g}",
                         f"{'ok' if good else 'MISS'}  top-1 same {same_top1}/{exp.shape[0]}"))
        except (RuntimeError, OSError, ValueError) as e:
            good = False
            rows.append((name, os.path.basename(fits[0]), "-", "-", "-", f"FAIL {e}"))
        ok = ok and good
    print(f"zoo: cosine similarity with onnxruntime (target >= {COS_TARGET})")
    table(["model", "input", "min cosine", "1 - cosine", "max |diff|", "result"], rows)
    return ok


def fmnist(exe, shared, tmp, with_ort):
    fdir = os.path.join(shared, "models", "fmnist")
    x_path, y = os.path.join(fdir, "test_x.npy"), np.load(os.path.join(fdir, "test_y.npy"))
    rows, ok = [], True
    for model in sorted(glob.glob(os.path.join(fdir, "*.onnx"))):
        name = os.path.basename(model)[:-5]
        try:
            logits = npuref(exe, model, x_path, os.path.join(tmp, name + ".npy"))
            if logits.shape[0] != y.shape[0]:
                raise RuntimeError(f"npuref gave {logits.shape[0]} results for {y.shape[0]} images")
        except (RuntimeError, OSError, ValueError) as e:
            rows.append((name, "-", "-", "-", "-", f"FAIL {e}"))
            ok = False
            continue
        pred = logits.reshape(logits.shape[0], -1).argmax(1)
        torch = json.load(open(os.path.join(fdir, name + ".json"))).get("torch_float_top1")
        disagree = "-"
        if with_ort:
            ort_out = os.path.join(tmp, name + ".ort.npy")
            run(["node", os.path.join(ROOT, "tools", "ort", "run.js"), model, x_path, ort_out], "onnxruntime")
            disagree = str(int((np.load(ort_out).reshape(len(y), -1).argmax(1) != pred).sum()))
        refs = sorted(glob.glob(os.path.join(fdir, name + ".ort_top1_*.json")),
                      key=lambda p: json.load(open(p))["n"])
        for p in refs:
            ref = json.load(open(p))
            n = ref["n"]
            top1 = float((pred[:n] == y[:n]).mean())
            delta = 100.0 * (top1 - ref["top1"])
            good = abs(delta) <= TOP1_POINTS + 1e-9
            ok = ok and good
            rows.append((name, str(n), f"{100 * top1:.2f}", f"{100 * ref['top1']:.2f}", f"{delta:+.2f}",
                         f"{'ok' if good else 'MISS'}"))
        rows.append((name, str(len(y)), f"{100 * float((pred == y).mean()):.2f}",
                     f"torch {100 * torch:.1f}" if torch is not None else "-", "-",
                     f"disagreements with onnxruntime: {disagree}"))
    print(f"\nfmnist: top-1 (%) of npuref vs onnxruntime on the first n test images "
          f"(target within {TOP1_POINTS} points)")
    table(["model", "n", "npuref", "reference", "delta", "result"], rows)
    return ok


def table(head, rows):
    w = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)).rstrip())


def main(argv):
    if not argv or argv[0].startswith("-"):
        raise SystemExit(__doc__)
    exe = os.environ.get("NPUREF") or os.path.join(argv[0], "npuref")
    shared = shared_dir()
    if shared is None:
        print("float_accuracy: skipped, no shared/models directory (../shared beside the repo, "
              "$NPUCC_SHARED or /work/shared)")
        return 0
    if not os.access(exe, os.X_OK):
        print(f"float_accuracy: skipped, {exe} is not built")
        return 0
    with tempfile.TemporaryDirectory(prefix="npucc-float-acc-") as tmp:
        ok = zoo(exe, shared, tmp)
        ok = fmnist(exe, shared, tmp, "--ort" in argv) and ok
    print(f"\nfloat_accuracy: {'all targets met' if ok else 'TARGET MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
