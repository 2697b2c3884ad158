#!/bin/sh
# npusim -j: a batch of inferences on 1 and on 2 (and 3) threads gives
# bit-identical outputs and an identical --stats-json (cycles per layer, MACs,
# DRAM bytes, host steps), and the default (NPUCC_THREADS) agrees too; so do
# the traces (--trace, --trace-all, --trace-inference of a later context's
# inference).
# Usage: tests/e2e/threads.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/threads
mkdir -p $W
PY=/usr/bin/python3
$B/npucc --target edge-v1 --calib examples/fmnist/calib -o $W/cnn.npub examples/fmnist/fmnist_cnn.onnx >/dev/null ||
    { echo "FAIL threads: npucc"; exit 1; }
$PY -c "
import numpy as np
np.save('$W/x.npy', np.random.default_rng(7).random((5, 1, 28, 28), dtype=np.float32))" || exit 1
fail=0
for j in 1 2 3; do
    $B/npusim $W/cnn.npub --input $W/x.npy --output $W/y$j.npy --stats-json $W/s$j.json -j $j >/dev/null ||
        { echo "FAIL threads: npusim -j $j"; fail=1; }
done
NPUCC_THREADS=2 $B/npusim $W/cnn.npub --input $W/x.npy --output $W/yenv.npy --stats-json $W/senv.json >/dev/null ||
    { echo "FAIL threads: npusim with NPUCC_THREADS=2"; fail=1; }
for j in 2 3 env; do
    cmp -s $W/y1.npy $W/y$j.npy || { echo "FAIL threads: outputs of -j 1 and -j $j differ"; fail=1; }
    cmp -s $W/s1.json $W/s$j.json || { echo "FAIL threads: stats of -j 1 and -j $j differ"; fail=1; }
done
for j in 1 2 3; do
    for t in first:--trace-inference=0 all:--trace-all third:--trace-inference=3; do
        name=${t%%:*} opt=$(echo "${t#*:}" | tr = ' ')
        $B/npusim $W/cnn.npub --input $W/x.npy --output $W/t.npy --trace $W/tr_${name}_$j.json $opt -j $j >/dev/null ||
            { echo "FAIL threads: npusim --trace $opt -j $j"; fail=1; }
    done
done
for name in first all third; do
    for j in 2 3; do
        cmp -s $W/tr_${name}_1.json $W/tr_${name}_$j.json ||
            { echo "FAIL threads: the $name trace of -j 1 and -j $j differ"; fail=1; }
    done
done
# one inference on 2 and 3 threads: the NPU model splits its conv
# instructions of 2 M MACs or more over them (npu_model_set_threads), with
# the same results; a 64-channel 3x3 conv on 24x24 has such instructions
$PY -c "
import numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
rng = np.random.default_rng(3)
w = numpy_helper.from_array((rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32), 'w')
n = helper.make_node('Conv', ['x', 'w'], ['y'], name='conv', pads=[1, 1, 1, 1])
g = helper.make_graph([n], 'big', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 64, 24, 24])],
                      [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 64, 24, 24])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), '$W/big.onnx')
import os; os.makedirs('$W/big_calib', exist_ok=True)
np.save('$W/big_calib/a.npy', rng.standard_normal((1, 64, 24, 24)).astype(np.float32))
np.save('$W/big_x.npy', rng.standard_normal((1, 64, 24, 24)).astype(np.float32))" || exit 1
$B/npucc --target edge-v1 --calib $W/big_calib -o $W/big.npub $W/big.onnx >/dev/null || { echo "FAIL threads: npucc big"; exit 1; }
for j in 1 2 3; do
    $B/npusim $W/big.npub --input $W/big_x.npy --output $W/one$j.npy --stats-json $W/one$j.json --trace $W/one$j.trace \
        -j $j >/dev/null || { echo "FAIL threads: npusim -j $j on one input"; fail=1; }
done
for j in 2 3; do
    for f in one$j.npy one$j.json one$j.trace; do
        cmp -s $W/one1.${f#*.} $W/$f || { echo "FAIL threads: one input, -j 1 and -j $j: $f differs"; fail=1; }
    done
done
# the trace check bites: all inferences' trace is not the first one's
cmp -s $W/tr_first_1.json $W/tr_all_1.json && { echo "FAIL threads: --trace-all wrote one inference"; fail=1; }
# the check bites: a different batch gives other outputs
$PY -c "
import numpy as np, sys
y = np.load('$W/y1.npy')
sys.exit(0 if y.shape[0] == 5 and not np.array_equal(y[0], y[1]) else 1)" || { echo "FAIL threads: degenerate outputs"; fail=1; }
# one boot serves a context's inferences (FW_CTL_SERVE): an input run 4 times
# in one process (the boot, then 3 resumed requests) reports what a single
# run reports, and gives its output each time
$PY -c "
import numpy as np
x = np.load('$W/x.npy')
np.save('$W/x1.npy', x[1:2]); np.save('$W/x4.npy', np.concatenate([x[1:2]] * 4))" || exit 1
$B/npusim $W/cnn.npub --input $W/x1.npy --output $W/z1.npy --stats-json $W/z1.json -j 1 >/dev/null &&
    $B/npusim $W/cnn.npub --input $W/x4.npy --output $W/z4.npy --stats-json $W/z4.json -j 1 >/dev/null ||
    { echo "FAIL threads: npusim on the repeated input"; fail=1; }
cmp -s $W/z1.json $W/z4.json || { echo "FAIL threads: resumed inferences report other figures than a booted one"; fail=1; }
$PY -c "
import numpy as np, sys
a, b, y = np.load('$W/z1.npy'), np.load('$W/z4.npy'), np.load('$W/y1.npy')
sys.exit(0 if all(np.array_equal(b[i], a[0]) for i in range(4)) and np.array_equal(a[0], y[1]) else 1)" ||
    { echo "FAIL threads: resumed inferences give other outputs"; fail=1; }
[ $fail = 0 ] && echo "ok   threads: npusim -j 1/2/3 and NPUCC_THREADS: identical outputs, stats and traces on 5 inferences; resumed = booted"
exit $fail
