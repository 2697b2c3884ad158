#!/bin/sh
# npuref -j and npucc's threaded calibration: a float model with layers large
# enough to be split across threads (src/ref/ref.c) gives bit-identical
# outputs for -j 1, 2 and 3, one inference (layers split) and a batch
# (parallel contexts); and npucc with NPUCC_THREADS=1, 2 and 3 writes the
# same .npub byte for byte (calibration on contexts side by side,
# src/quantize/calib_par.c: statistics independent of the threads).
# Usage: tests/e2e/ref_threads.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/ref_threads
mkdir -p $W/calib
PY=/usr/bin/python3
$PY - $W <<'PY' || { echo "FAIL ref_threads: cannot make the model"; exit 1; }
import sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
w = sys.argv[1]
rng = np.random.default_rng(3)
def init(name, *shape):
    return nh.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)
# 9.4 M, 1.2 M and 2.1 M MACs: every Conv is split (the threshold is 1 M)
nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         h.make_node("Relu", ["c1"], ["r1"]),
         h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=32),
         h.make_node("Relu", ["c2"], ["r2"]),
         h.make_node("Conv", ["r2", "w3", "b3"], ["c3"], kernel_shape=[1, 1]),
         h.make_node("GlobalAveragePool", ["c3"], ["g"]),
         h.make_node("Flatten", ["g"], ["f"]),
         h.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
inits = [init("w1", 32, 8, 3, 3), init("b1", 32), init("w2", 32, 1, 3, 3), init("b2", 32),
         init("w3", 16, 32, 1, 1), init("b3", 16), init("wf", 10, 16), init("bf", 10)]
g = h.make_graph(nodes, "ref_threads", [h.make_tensor_value_info("x", T.FLOAT, [1, 8, 64, 64])],
                 [h.make_tensor_value_info("y", T.FLOAT, [1, 10])], inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, f"{w}/m.onnx")
x = rng.random((4, 8, 64, 64), dtype=np.float32)
np.save(f"{w}/x4.npy", x)
np.save(f"{w}/x1.npy", x[:1])
for i in range(5): # scaled apart: each sample widens some range, so a lost or repeated one shows
    np.save(f"{w}/calib/{i}.npy", x[i % 4:i % 4 + 1] * np.float32((1.0, 2.5, 0.5, 1.5, 3.0)[i]))
PY
fail=0
for j in 1 2 3; do
    $B/npuref -j $j $W/m.onnx --input $W/x1.npy --output $W/one$j.npy >/dev/null &&
        $B/npuref -j $j $W/m.onnx --input $W/x4.npy --output $W/four$j.npy >/dev/null ||
        { echo "FAIL ref_threads: npuref -j $j"; fail=1; }
done
for j in 2 3; do
    cmp -s $W/one1.npy $W/one$j.npy || { echo "FAIL ref_threads: one inference, -j 1 and -j $j differ"; fail=1; }
    cmp -s $W/four1.npy $W/four$j.npy || { echo "FAIL ref_threads: a batch of 4, -j 1 and -j $j differ"; fail=1; }
done
# calibration on 1, 2 and 3 contexts side by side (5 samples: a last round
# of 1 sample with 2 workers and of 2 with 3), and with the first four only
for t in 1 2 3; do
    NPUCC_THREADS=$t $B/npucc --target edge-v1 --calib $W/calib -o $W/m$t.npub $W/m.onnx >/dev/null ||
        { echo "FAIL ref_threads: npucc with NPUCC_THREADS=$t"; fail=1; }
done
for t in 2 3; do
    cmp -s $W/m1.npub $W/m$t.npub || { echo "FAIL ref_threads: .npub of NPUCC_THREADS=1 and $t differ"; fail=1; }
done
mkdir -p $W/calib4 && cp $W/calib/[0-3].npy $W/calib4/
NPUCC_THREADS=2 $B/npucc --target edge-v1 --calib $W/calib4 -o $W/m4.npub $W/m.onnx >/dev/null &&
    ! cmp -s $W/m1.npub $W/m4.npub || { echo "FAIL ref_threads: the fifth sample changes nothing"; fail=1; }
# the check bites: the batch's first inference is the single one, the others differ
$PY -c "
import numpy as np, sys
a, b = np.load('$W/one1.npy'), np.load('$W/four1.npy')
sys.exit(0 if b.shape == (4, 10) and np.array_equal(a[0], b[0]) and not np.array_equal(b[0], b[1]) else 1)" ||
    { echo "FAIL ref_threads: degenerate outputs"; fail=1; }
[ $fail = 0 ] && echo "ok   ref_threads: npuref -j 1/2/3 identical (1 and 4 inferences); npucc NPUCC_THREADS=1/2/3 identical .npub"
exit $fail
