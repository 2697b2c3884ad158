#!/usr/bin/python3
"""compare.py SIM.npy REF.npy FLOAT.npy MIN_COSINE
   compare.py SIM.npy REF.npy FLOAT.npy --top1 LABELS.npy MAX_DROP
Exit 0 when the simulator's outputs equal the integer reference's bit for
bit and are close to the float model's: cosine similarity per inference at
least MIN_COSINE, or (--top1, classifier logits) top-1 accuracy on LABELS at
most MAX_DROP points below the float model's. Prints one line either way."""
import sys

import numpy as np

sim, ref, flt = (np.load(p) for p in sys.argv[1:4])
if sim.shape != ref.shape or sim.dtype != ref.dtype:
    sys.exit(f"shape/dtype differ: sim {sim.shape} {sim.dtype}, ref {ref.shape} {ref.dtype}")
diff = np.flatnonzero(sim.view(np.uint8) != ref.view(np.uint8))
if diff.size:
    sys.exit(f"npusim != npuref MODEL.npub at {diff.size} bytes (first at byte {diff[0]})")
if flt.shape != sim.shape:
    sys.exit(f"float output shape {flt.shape} != {sim.shape}")
if sys.argv[4] == "--top1":
    lab, max_drop = np.load(sys.argv[5]), float(sys.argv[6])
    if sim.shape[0] != lab.shape[0]:
        sys.exit(f"{sim.shape[0]} outputs for {lab.shape[0]} labels")
    q = (sim.reshape(len(lab), -1).argmax(1) == lab).mean() * 100
    f = (flt.reshape(len(lab), -1).argmax(1) == lab).mean() * 100
    msg = f"bit-exact, {len(lab)} images: int8 top-1 {q:.2f}% (npusim), float {f:.2f}% ({q - f:+.2f} points)"
    if q < f - max_drop:
        sys.exit(f"{msg}: more than {max_drop} points below float")
    print(msg)
    sys.exit(0)
min_cos = float(sys.argv[4])
a = sim.reshape(sim.shape[0], -1).astype(np.float64)
b = flt.reshape(flt.shape[0], -1).astype(np.float64)
cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-30)
if cos.min() < min_cos:
    sys.exit(f"bit-exact, but cosine to float {cos.min():.5f} < {min_cos}")
print(f"bit-exact ({sim.size} values), cosine to float min {cos.min():.5f}")
