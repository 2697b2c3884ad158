#!/bin/sh
# Transformer-block ops on the NPU: torch-exported GELU (erf, tanh),
# LayerNorm (decomposed, opset 13), Softmax and ReduceMean (as a pool) models, compiled for every
# target: the fused node must run on the NPU, npusim bit-exact with
# `npuref MODEL.npub`, close to the float model (cosine; the max abs error
# printed). Usage: tests/e2e/norm.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/norm
PY=/usr/bin/python3
fail=0 pass=0
[ -f $W/models/tokmean.onnx ] || $PY tests/e2e/norm_models.py $W/models || exit 1

# name, the op that must run on the NPU, min cosine
for spec in "layernorm npu.LayerNorm 0.999" "gelu_erf npu.Lut 0.998" "gelu_tanh npu.Lut 0.998" \
            "softmax npu.Softmax 0.998" "block npu.LayerNorm 0.995" "tokmean ReduceMean 0.995"; do
    set -- $spec
    name=$1 op=$2 cos=$3 m=$W/models/$1
    [ -f $m.float.npy ] || $B/npuref $m.onnx --input ${m}_input.npy --output $m.float.npy >/dev/null
    for tf in targets/*.yaml; do
        t=$(basename $tf .yaml) o=$W/$(basename $tf .yaml)
        mkdir -p $o
        if ! rep=$($B/npucc --target $tf --calib ${m}_calib --report -o $o/$name.npub $m.onnx 2>&1); then
            echo "FAIL $t/$name: npucc: $rep"; fail=$((fail + 1)); continue
        fi
        if ! echo "$rep" | grep -Eq " $op +npu"; then
            echo "FAIL $t/$name: $op does not run on the NPU"; fail=$((fail + 1)); continue
        fi
        if echo "$rep" | grep -E "^[^ ]+ +[A-Za-z.]+ +host" | grep -Evq "QuantizeLinear|DequantizeLinear"; then
            echo "FAIL $t/$name: a node runs on the host"; fail=$((fail + 1)); continue
        fi
        if ! msg=$($B/npusim $o/$name.npub --input ${m}_input.npy --output $o/$name.sim.npy 2>&1) ||
           ! msg=$($B/npuref $o/$name.npub --input ${m}_input.npy --output $o/$name.ref.npy 2>&1); then
            echo "FAIL $t/$name: $msg" | head -c 2000; fail=$((fail + 1)); continue
        fi
        if msg=$($PY tests/e2e/compare.py $o/$name.sim.npy $o/$name.ref.npy $m.float.npy $cos 2>&1); then
            err=$($PY -c "import numpy as n,sys;a,b=(n.load(p) for p in sys.argv[1:]);print(f'max abs error {abs(a-b).max():.4f} (outputs within [{b.min():.2f}, {b.max():.2f}])')" $o/$name.sim.npy $m.float.npy)
            echo "ok   $t/$name: $msg, $err"; pass=$((pass + 1))
        else
            echo "FAIL $t/$name: $msg"; fail=$((fail + 1))
        fi
    done
done
# a row longer than npu-v1-narrow's softmax w field: the Softmax stays float,
# on the host there, on the NPU elsewhere; bit-exact either way
m=$W/models/softmax_long
$B/npuref $m.onnx --input ${m}_input.npy --output $m.float.npy >/dev/null
for tf in targets/edge-v1.yaml targets/edge-v1-narrow.yaml; do
    t=$(basename $tf .yaml) o=$W/$(basename $tf .yaml)
    want="npu.Softmax +npu"
    [ $t = edge-v1-narrow ] && want=" Softmax +host +float op"
    if rep=$($B/npucc --target $tf --calib ${m}_calib --report -o $o/long.npub $m.onnx 2>&1) &&
       echo "$rep" | grep -Eq "$want" &&
       $B/npusim $o/long.npub --input ${m}_input.npy --output $o/long.sim.npy >/dev/null 2>&1 &&
       $B/npuref $o/long.npub --input ${m}_input.npy --output $o/long.ref.npy >/dev/null 2>&1 &&
       msg=$($PY tests/e2e/compare.py $o/long.sim.npy $o/long.ref.npy $m.float.npy 0.99 2>&1); then
        echo "ok   $t/softmax_long: $msg"; pass=$((pass + 1))
    else
        echo "FAIL $t/softmax_long: want '$want': $rep $msg" | head -c 3000; fail=$((fail + 1))
    fi
done
echo "e2e norm: $pass passed, $fail failed"
[ $fail -eq 0 ]
