#!/bin/sh
# A model with two inputs (tests/e2e/multi_input.py), calibrated from files
# named STEM.INPUT.npy, compiled for every target, run on npusim with two
# --input: bit-exact with `npuref MODEL.npub`, and within a quantization
# tolerance of the float model. Also: a calibration set that lacks one
# input's file for a sample is refused, naming it. Usage: multi_input.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/multi_input
PY=/usr/bin/python3
. tests/summary.sh
fail=0 pass=0
$PY tests/e2e/multi_input.py $W || exit 1
m=$W/two_inputs
$B/npuref $m.onnx --input $W/image.npy --input $W/mask.npy --output $W/float.npy >/dev/null || exit 1
for tf in targets/*.yaml; do
    t=$(basename $tf .yaml)
    if $B/npucc --target $tf --calib $W/calib -o $W/$t.npub $m.onnx >$W/$t.log 2>&1 &&
       $B/npusim $W/$t.npub --input $W/image.npy --input $W/mask.npy --output $W/$t.sim.npy >>$W/$t.log 2>&1 &&
       $B/npuref $W/$t.npub --input $W/image.npy --input $W/mask.npy --output $W/$t.ref.npy >>$W/$t.log 2>&1 &&
       cmp -s $W/$t.sim.npy $W/$t.ref.npy &&
       $PY -c "
import numpy as np, sys
f, q = np.load('$W/float.npy').ravel(), np.load('$W/$t.sim.npy').ravel()
cos = float(f @ q / np.linalg.norm(f) / np.linalg.norm(q))
sys.exit(0 if cos >= 0.99 else f'cosine {cos:.4f} with float')" >>$W/$t.log 2>&1; then
        pass=$((pass + 1))
    else
        echo "FAIL multi_input/$t:"; tail -n 5 $W/$t.log; fail=$((fail + 1))
    fi
done
# a sample without its mask file
rm -rf $W/bad; cp -r $W/calib $W/bad; rm $W/bad/03.mask_0.npy
msg=$($B/npucc --target edge-v1 --calib $W/bad -o $W/bad.npub $m.onnx 2>&1); rc=$?
if [ $rc -eq 1 ] && echo "$msg" | grep -q "03" && echo "$msg" | grep -q "mask:0" && [ ! -e $W/bad.npub ]; then
    pass=$((pass + 1))
else
    echo "FAIL multi_input/missing file: rc $rc: $msg"; fail=$((fail + 1))
fi
summary multi_input
