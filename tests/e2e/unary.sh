#!/bin/sh
# Elementwise unary ops on the NPU: for each op in OPS, a tiny model
# (conv -> OP -> conv, random weights) compiled for every target: the op must
# become an npu.Lut that runs on the NPU, npusim bit-exact with
# `npuref MODEL.npub`, close to the float model (cosine). Adding a unary op
# adds its ONNX name here (docs/adding-an-op.md). Usage: tests/e2e/unary.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/unary
PY=/usr/bin/python3
OPS="Sigmoid Tanh Erf Softplus"
fail=0 pass=0
mkdir -p $W
for op in $OPS; do
    m=$W/$op
    [ -f $m.onnx ] || $PY - $W $op <<'PYEOF' || exit 1
import sys
sys.path.insert(0, "tests/e2e")
import gen_models as gm
d, op = sys.argv[1], sys.argv[2]
g = gm.G(op, [1, 4, 8, 8])
y = g.op(op, [g.conv("x", 4, 8, relu=False)])
g.save(d, g.conv(y, 8, 4, relu=False), [1, 4, 8, 8], d)
PYEOF
    $B/npuref $m.onnx --input ${m}_input.npy --output $m.float.npy >/dev/null || exit 1
    for tf in targets/*.yaml; do
        t=$(basename $tf .yaml) o=$W/$t
        mkdir -p $o
        if ! rep=$($B/npucc --target $tf --calib ${m}_calib --report -o $o/$op.npub $m.onnx 2>&1); then
            echo "FAIL $t/$op: npucc: $rep" | head -c 2000; echo; fail=$((fail + 1)); continue
        fi
        if ! echo "$rep" | grep -Eq " npu.Lut +npu"; then
            echo "FAIL $t/$op: no npu.Lut on the NPU"; fail=$((fail + 1)); continue
        fi
        if ! msg=$($B/npusim $o/$op.npub --input ${m}_input.npy --output $o/$op.sim.npy 2>&1) ||
           ! msg=$($B/npuref $o/$op.npub --input ${m}_input.npy --output $o/$op.ref.npy 2>&1); then
            echo "FAIL $t/$op: $msg" | head -c 2000; echo; fail=$((fail + 1)); continue
        fi
        if msg=$($PY tests/e2e/compare.py $o/$op.sim.npy $o/$op.ref.npy $m.float.npy 0.995 2>&1); then
            echo "ok   $t/$op: $msg"; pass=$((pass + 1))
        else
            echo "FAIL $t/$op: $msg"; fail=$((fail + 1))
        fi
    done
done
echo "e2e unary: $pass passed, $fail failed"
[ $fail -eq 0 ]
