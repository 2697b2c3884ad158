#!/bin/sh
# --emit qdq against the integer reference: every e2e model compiled twice
# (a .npub and a QDQ .onnx), the .onnx run by onnxruntime (tools/ort), the
# .npub by `npuref MODEL.npub`, on the shipped inputs plus 60 random ones
# drawn over the same range. Passes when at least 99.9 % of the output values
# are within 1 LSB of the output quantization (the scale of the
# DequantizeLinear that produces the output, or feeds the float op that does).
# Needs onnxruntime-node in tools/ort/node_modules (`make deps`); installs nothing.
# Usage: tests/e2e/qdq.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e
Q=$W/qdq
PY=/usr/bin/python3
T=targets/edge-v1.yaml
. tests/summary.sh
if ! (cd tools/ort && node -e "require('onnxruntime-node')") >/dev/null 2>&1; then
    echo "qdq: skipped: onnxruntime-node is not installed in tools/ort/node_modules (make deps)"
    exit $SKIPPED
fi
mkdir -p $Q
[ -f $W/models/bigconv.onnx ] || $PY tests/e2e/gen_models.py $W/models || exit 1
fail=0 pass=0 skip=0

check() { # name, npucc flags...
    name=$1; shift
    m=${MD:-$W/models}/$name
    tag="$name${*:+ $*}"
    o=$Q/$name$(echo "$*" | tr -d ' -')
    if ! msg=$($B/npucc --target $T --calib ${m}_calib --emit qdq -o $o.onnx "$@" $m.onnx 2>&1) ||
       ! msg=$($B/npucc --target $T --calib ${m}_calib -o $o.npub "$@" $m.onnx 2>&1) ||
       ! $B/npucc --target $T --calib ${m}_calib --dump-after quantize "$@" $m.onnx > $o.ir 2>&1; then
        echo "FAIL $tag: npucc: $msg" | head -c 2000; echo; fail=$((fail + 1)); return
    fi
    # the shipped inputs and 60 more, uniform over their range (fixed seed)
    $PY -c "
import sys, numpy as np
x = np.load(sys.argv[1])
r = np.random.default_rng(5).uniform(x.min(), x.max(), (60,) + x.shape[1:]).astype(x.dtype)
np.save(sys.argv[2], np.concatenate([x, r]))" ${m}_input.npy $o.in.npy
    if ! msg=$($B/npuref $o.npub --input $o.in.npy --output $o.ref.npy 2>&1); then
        echo "FAIL $tag: npuref: $msg"; fail=$((fail + 1)); return
    fi
    if ! msg=$(node tools/ort/run.js $o.onnx $o.in.npy $o.ort.npy 2>&1); then
        echo "FAIL $tag: onnxruntime: $msg" | head -c 2000; echo; fail=$((fail + 1)); return
    fi
    if msg=$($PY - $o.ir $o.ref.npy $o.ort.npy <<'EOF'
import re, sys
import numpy as np
ir, ref, ort = sys.argv[1], np.load(sys.argv[2]), np.load(sys.argv[3])
text = open(ir).read()
out = re.findall(r"^\s*output %(\S+)", text, re.M)[0]
dq = re.findall(r"^\s*%(\S+?):f32\[[^=]*= DequantizeLinear\(.*?, %[^:]*:f32\[\]=([0-9.e+-]+)", text, re.M)
scales = dict(dq)
scale = float(scales.get(out, dq[-1][1]))
if ref.shape != ort.shape:
    sys.exit(f"shape differs: npuref {ref.shape}, onnxruntime {ort.shape}")
lsb = np.abs(ref.astype(np.float64) - ort.astype(np.float64)) / scale
within = (lsb <= 1.0 + 1e-3).mean()
exact = (lsb <= 1e-3).mean()
msg = f"{100 * within:.3f} % within 1 LSB ({100 * exact:.2f} % equal), max {lsb.max():.2f} LSB, {ref.size} values"
if within < 0.999:
    sys.exit(msg)
print(msg)
EOF
    ); then
        echo "ok   $tag: $msg"; pass=$((pass + 1))
    else
        echo "FAIL $tag: $msg"; fail=$((fail + 1))
    fi
}

for m in conv dwconv residual concat pool fc hostop bigconv; do
    check $m
done
check conv --wbits 4
check residual --wbits 4
# the table ops (npu.Lut: Sigmoid, Tanh, HardSigmoid), a Relu6 clip and Mul
[ -f $Q/models/lut.onnx ] || $PY - $Q/models <<'EOF' || exit 1
import os, sys
sys.path.insert(0, "tests/e2e")
import numpy as np
from onnx import numpy_helper
import gen_models as gm
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
g = gm.G("lut", [1, 3, 12, 12])
s = g.op("Sigmoid", [g.conv("x", 3, 8, relu=False)])
t = g.op("Tanh", [g.conv(s, 8, 8, relu=False)])
g.inits += [numpy_helper.from_array(np.float32(0), "lo"), numpy_helper.from_array(np.float32(6), "hi")]
r = g.op("Clip", [g.conv(t, 8, 8, relu=False), "lo", "hi"])
h = g.op("HardSigmoid", [g.conv(r, 8, 8, relu=False)])
g.save(d, g.op("Mul", [h, t]), [1, 8, 12, 12], d)
EOF
MD=$Q/models check lut
# depth: 4 residual blocks (conv-relu-conv + add, every third depthwise),
# average pools, a broadcast add: 1-LSB disagreements of any op would compound
[ -f $Q/models/deep.onnx ] || $PY - $Q/models <<'EOF' || exit 1
import os, sys
sys.path.insert(0, "tests/e2e")
import gen_models as gm
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
g = gm.G("deep", [1, 3, 16, 16])
y = g.conv("x", 3, 12)
for i in range(4):
    t = g.conv(y, 12, 12, group=12 if i % 3 == 2 else 1)
    y = g.op("Add", [y, g.conv(t, 12, 12, k=1, relu=False)])
    if i == 2:
        y = g.op("AveragePool", [y], kernel_shape=[2, 2], strides=[2, 2])
y = g.op("Add", [g.conv(y, 12, 16, k=1), g.op("GlobalAveragePool", [g.conv(y, 12, 16, k=1, relu=False)])])
g.save(d, y, [1, 16, 8, 8], d)
EOF
MD=$Q/models check deep
# npu.LayerNorm, npu.Softmax (a Gelu LUT between) and ReduceMean as a pool (tests/e2e/norm_models.py)
[ -f $W/norm/models/rows3.onnx ] || $PY tests/e2e/norm_models.py $W/norm/models || exit 1
MD=$W/norm/models check rows3
MD=$W/norm/models check tokmean
summary qdq
