#!/usr/bin/python3
"""onnxruntime golden outputs of the end-to-end models (tests/data/ort/).

    ort_golden.py write MODELS NAME...   runs onnxruntime (tools/ort/run.js) on
        MODELS/NAME.onnx and MODELS/NAME_input.npy, writes tests/data/ort/NAME.npy
        and the SHA-256 of the model and input it came from to manifest.txt
    ort_golden.py check MODELS NAME FLOAT.npy   npuref's float output FLOAT.npy
        against the golden: the model must be the one the golden came from,
        and every value within 1e-6 + 1e-5 * max|golden| of it (measured: 7e-7)

The goldens make the float reference's check independent of node: regenerate
them (tests/e2e/ort_goldens.sh) when tests/e2e/gen_models.py changes a model."""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "ort")
MANIFEST = os.path.join(DATA, "manifest.txt")


def digest(models, name):
    h = hashlib.sha256()
    for f in (f"{name}.onnx", f"{name}_input.npy"):
        with open(os.path.join(models, f), "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()


def manifest():
    if not os.path.exists(MANIFEST):
        return {}
    rows = (l.split() for l in open(MANIFEST) if l.strip() and not l.startswith("#"))
    return {r[0]: r[1] for r in rows}


def write(models, names):
    os.makedirs(DATA, exist_ok=True)
    m = manifest()
    run = os.path.join(HERE, "..", "..", "tools", "ort", "run.js")
    tmp = tempfile.mkdtemp()
    for n in names:
        model = os.path.join(models, f"{n}.onnx")
        # the first output, the one `npuref MODEL.onnx --output F.npy` writes
        more = [os.path.join(tmp, f"{n}.{k}.npy") for k in range(1, len(onnx.load(model).graph.output))]
        subprocess.run(["node", run, model, os.path.join(models, f"{n}_input.npy"), os.path.join(DATA, f"{n}.npy")]
                       + more, check=True)
        m[n] = digest(models, n)
    with open(MANIFEST, "w") as fh:
        fh.write("# model, SHA-256 of MODEL.onnx + MODEL_input.npy (tests/e2e/ort_golden.py)\n")
        fh.writelines(f"{n} {d}\n" for n, d in sorted(m.items()))
    shutil.rmtree(tmp)


def check(models, name, got_path):
    want = manifest().get(name)
    if want is None:
        sys.exit(f"no golden for {name} in tests/data/ort (tests/e2e/ort_goldens.sh)")
    if digest(models, name) != want:
        sys.exit(f"tests/data/ort/{name}.npy is stale: {name}.onnx or its input changed "
                 f"(regenerate: tests/e2e/ort_goldens.sh)")
    gold, got = np.load(os.path.join(DATA, f"{name}.npy")), np.load(got_path)
    if gold.shape != got.shape:
        sys.exit(f"shape {got.shape}, onnxruntime's {gold.shape}")
    err = float(np.abs(got.astype(np.float64) - gold).max())
    tol = 1e-6 + 1e-5 * float(np.abs(gold).max())
    if not err <= tol:
        sys.exit(f"max |npuref - onnxruntime| {err:.3g} > {tol:.3g}")
    print(f"float within {err:.2g} of onnxruntime ({gold.size} values)")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 5 and sys.argv[1] == "check":
        check(*sys.argv[2:])
    else:
        sys.exit(__doc__)
