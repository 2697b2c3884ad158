#!/bin/sh
# How close to float can any int8 model of the zoo be? Every int8 model
# quantizes its float input to int8 first, so the float model run on that
# quantized input (everything after it in float) bounds the output cosine
# that any calibration, rounding or repair can reach. Printed next to the
# measured int8 cosine, so a shortfall is split into "the input alone" and
# "the rest of the network". Also the float model under small input noise,
# which shows how much a model amplifies a perturbation; and (zoo_sources.py)
# the float model with only the weights, or only the activations, at int8.
# Uses ../shared/models/zoo when present (it is not part of a clone).
# usage: bench/zoo_ceiling_bench.sh BUILD
set -u
B=$1
W=$B/bench/ceiling
S=${SHARED:-$(dirname "$0")/../../shared/models}
PY=/usr/bin/python3
[ -d "$S/zoo" ] || { echo "zoo ceiling: $S/zoo not found: skipped"; exit 0; }
mkdir -p "$W"
status=0
echo "== zoo: output cosine with float when only the input is int8 (the ceiling of any int8 model), vs the int8 model"
printf '%-18s %-7s %12s %12s %12s %12s %12s\n' model input in-int8 in-int8-mse noise-40dB noise-50dB int8-model
for m in "$S"/zoo/*.onnx; do
    name=$(basename "$m" .onnx)
    done_one=0
    for inp in "$S"/zoo/in*.npy; do
        # the model's input size decides which image set it takes
        "$B/npuref" "$m" --input "$inp" --output "$W/$name.float.npy" >/dev/null 2>&1 || continue
        done_one=1
        $PY - "$inp" "$W/$name" "$(dirname "$0")" <<'PY' || { status=1; break; }
import sys
import numpy as np
inp, base = sys.argv[1:3]
x = np.load(inp)
# npucc's default: minmax over the calibration set (here: these images), asymmetric int8,
# ties to even (numpy's round), saturated
lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
s = (hi - lo) / 255.0
zp = np.clip(np.round(-128 - lo / s), -128, 127)
q = np.clip(np.round(x / s) + zp, -128, 127)
np.save(base + ".q8.npy", ((q - zp) * s).astype(np.float32))
# the same with npucc's MSE clip (--calib-method mse)
sys.path.insert(0, sys.argv[3])
from zoo_sources import mse_range
lo, hi = mse_range(x, lo, hi)
s = (hi - lo) / 255.0
zp = np.clip(np.round(-128 - lo / s), -128, 127)
q = np.clip(np.round(x / s) + zp, -128, 127)
np.save(base + ".q8m.npy", ((q - zp) * s).astype(np.float32))
rng = np.random.default_rng(1)
for db in (40, 50):
    n = rng.standard_normal(x.shape) * x.std() * 10 ** (-db / 20)
    np.save(f"{base}.n{db}.npy", (x + n).astype(np.float32))
PY
        for v in q8 q8m n40 n50; do
            "$B/npuref" "$m" --input "$W/$name.$v.npy" --output "$W/$name.$v.out.npy" >/dev/null 2>&1 || status=1
        done
        cal=$W/cal_$name
        rm -rf "$cal"; mkdir -p "$cal"
        $PY -c "
import numpy as np, sys
x = np.load('$inp')
for i in range(x.shape[0]): np.save(f'$cal/{i}.npy', x[i:i + 1])"
        if "$B/npucc" --target edge-v1 --calib "$cal" -o "$W/$name.npub" "$m" >/dev/null 2>&1 &&
           "$B/npuref" "$W/$name.npub" --input "$inp" --output "$W/$name.int8.out.npy" >/dev/null 2>&1; then :
        else rm -f "$W/$name.int8.out.npy"; fi
        $PY - "$W/$name" "$name" "$(basename "$inp" .npy)" <<'PY' || status=1
import os, sys
import numpy as np
base, name, inp = sys.argv[1:4]
ref = np.load(base + ".float.npy")
n = ref.shape[0]
ref = ref.reshape(n, -1).astype(np.float64)
def cos(f):
    if not os.path.exists(f):
        return float("nan")
    a = np.load(f).reshape(n, -1).astype(np.float64)
    return ((a * ref).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(ref, axis=1)).min()
print(f"{name:18s} {inp:7s} {cos(base + '.q8.out.npy'):12.5f} {cos(base + '.q8m.out.npy'):12.5f} {cos(base + '.n40.out.npy'):12.5f} "
      f"{cos(base + '.n50.out.npy'):12.5f} {cos(base + '.int8.out.npy'):12.5f}")
PY
        break
    done
    [ $done_one = 1 ] || { echo "$name: no input in $S/zoo fits"; status=1; }
done
echo "(cosine: the minimum over the images; the int8 model through npuref, against the float reference)"
echo
echo "== zoo: output cosine with float when only one other source is int8 (bench/zoo_sources.py)"
printf '%-18s %12s %12s %12s\n' model weights acts-minmax acts-mse
for m in "$S"/zoo/*.onnx; do
    name=$(basename "$m" .onnx)
    for inp in "$S"/zoo/in*.npy; do
        "$B/npuref" "$m" --input "$inp" --output "$W/$name.probe.npy" >/dev/null 2>&1 || continue
        $PY "$(dirname "$0")/zoo_sources.py" "$B/npuref" "$m" "$inp" "$W/sources_$name" || status=1
        break
    done
done
echo "(weights: every weight int8 per channel, all else float; acts: every activation but the input int8)"
exit $status
