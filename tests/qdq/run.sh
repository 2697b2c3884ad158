#!/bin/sh
# Pre-quantized QDQ models compiled with no --calib (their own scales) for
# every target, run on npusim, compared bit for bit with `npuref MODEL.npub`
# and within one output step with the float evaluation of the QDQ model
# (`npuref MODEL.onnx`, which executes the Q/DQ ops; for qdq_ops, whose
# output is a float Softmax of the last DequantizeLinear, one step of its input;
# qlinear_u8 against its QDQ twin, as npuref has no float QLinearConv). Usage: tests/qdq/run.sh [BUILD]
set -u
B=${1:-build}
W=$B/qdq
PY=/usr/bin/python3
. tests/summary.sh
mkdir -p $W
fail=0 pass=0
for name in qdq_s8 qdq_u8 qdq_w128 qdq_ops qlinear_u8 qdq_se_once qdq_banked_top qdq_shared_const qdq_float_split qdq_int_split; do
    m=tests/qdq/$name.onnx in=tests/qdq/qdq_input.npy fm=$m
    [ $name = qdq_ops ] && in=tests/qdq/qdq_ops_input.npy
    [ $name = qdq_se_once ] && in=tests/qdq/qdq_se_once_input.npy # from tests/diff: a prologue's token race
    [ $name = qdq_banked_top ] && in=tests/qdq/qdq_banked_top_input.npy # from tests/diff: banks past the tiles' SRAM
    [ $name = qdq_shared_const ] && in=tests/qdq/qdq_shared_const_input.npy # from tests/diff: one constant, two scales
    [ $name = qdq_float_split ] && in=tests/qdq/qdq_float_split_input.npy # from tests/diff: float32 parts moved
    [ $name = qdq_int_split ] && in=tests/qdq/qdq_float_split_input.npy # the same, every part at the input's scale
    [ $name = qlinear_u8 ] && fm=tests/qdq/qlinear_twin.onnx # npuref has no QLinear float kernels
    $B/npuref $fm --input $in --output $W/$name.float.npy >/dev/null || { echo "FAIL $name: npuref float"; exit 1; }
    for tf in targets/*.yaml; do
        t=$(basename $tf .yaml) o=$W/$(basename $tf .yaml)
        mkdir -p $o
        if ! msg=$($B/npucc --target $tf -o $o/$name.npub $m 2>&1); then
            echo "FAIL $t/$name: npucc: $msg"; fail=$((fail + 1)); continue
        fi
        if ! msg=$($B/npusim $o/$name.npub --input $in --output $o/$name.sim.npy 2>&1) ||
           ! msg=$($B/npuref $o/$name.npub --input $in --output $o/$name.ref.npy 2>&1); then
            echo "FAIL $t/$name: $msg" | head -c 2000; fail=$((fail + 1)); continue
        fi
        if msg=$($PY - $o/$name.sim.npy $o/$name.ref.npy $W/$name.float.npy $m 2>&1 <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
sim, ref, flt = (np.load(p) for p in sys.argv[1:4])
step = float(next(numpy_helper.to_array(i) for i in onnx.load(sys.argv[4]).graph.initializer
                  if i.name in ("y_scale", "y_s")))
assert sim.tobytes() == ref.tobytes(), "npusim and npuref differ"
err = float(np.abs(ref - flt).max())
assert err <= step * 1.001, "%g from the QDQ model's float evaluation (step %g)" % (err, step)
print("bit-exact, %.2f steps from the QDQ model" % (err / step))
PYEOF
        ); then
            echo "ok   $t/$name: $msg"; pass=$((pass + 1))
        else
            echo "FAIL $t/$name: $msg" | tail -n 3; fail=$((fail + 1))
        fi
    done
done
summary qdq
