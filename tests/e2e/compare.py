#!/usr/bin/python3
"""compare.py SIM.npy REF.npy FLOAT.npy MIN_COSINE
Exit 0 when the simulator's outputs equal the integer reference's bit for
bit and are close to the float model's (cosine similarity per inference at
least MIN_COSINE); prints one line either way."""
import sys

import numpy as np

sim, ref, flt = (np.load(p) for p in sys.argv[1:4])
min_cos = float(sys.argv[4])
if sim.shape != ref.shape or sim.dtype != ref.dtype:
    sys.exit(f"shape/dtype differ: sim {sim.shape} {sim.dtype}, ref {ref.shape} {ref.dtype}")
diff = np.flatnonzero(sim.view(np.uint8) != ref.view(np.uint8))
if diff.size:
    sys.exit(f"npusim != npuref MODEL.npub at {diff.size} bytes (first at byte {diff[0]})")
if flt.shape != sim.shape:
    sys.exit(f"float output shape {flt.shape} != {sim.shape}")
a = sim.reshape(sim.shape[0], -1).astype(np.float64)
b = flt.reshape(flt.shape[0], -1).astype(np.float64)
cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-30)
if cos.min() < min_cos:
    sys.exit(f"bit-exact, but cosine to float {cos.min():.5f} < {min_cos}")
print(f"bit-exact ({sim.size} values), cosine to float min {cos.min():.5f}")
