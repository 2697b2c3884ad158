#!/bin/sh
# make demo: what the toolchain does today on the example model.
# usage: examples/demo.sh BUILD
set -eu
B=${1:-build}
HERE=$(dirname "$0")
EX=$HERE/fmnist
DATA=/usr/share/datasets/fashion-mnist
OUT=$B/demo
mkdir -p "$OUT"
echo "== target"
"$B/npucc" --target edge-v1 --validate | head -12
if [ ! -f "$DATA/t10k-images-idx3-ubyte.gz" ]; then
    echo "demo: $DATA missing (Debian package dataset-fashion-mnist)" >&2
    exit 1
fi
echo "== Fashion-MNIST test set (10,000 images) as .npy"
/usr/bin/python3 "$HERE/../tools/fmnist_npy.py" "$DATA" "$OUT/test_x.npy" "$OUT/test_y.npy"
echo "== float reference (npuref) on the test set"
"$B/npuref" "$EX/fmnist_cnn.onnx" --input "$OUT/test_x.npy" --output "$OUT/logits.npy"
/usr/bin/python3 -c "
import numpy as np
p = np.load('$OUT/logits.npy').argmax(1); y = np.load('$OUT/test_y.npy')
print(f'float top-1: {(p == y).mean() * 100:.2f}% on {len(y)} images (torch measured $(cat $EX/float_top1.txt))')"
echo "== compile for edge-v1: calibrate, quantize, partition, tile, plan memory, emit"
"$B/npucc" --target edge-v1 --calib "$EX/calib" -o "$OUT/fmnist_cnn.npub" --stats-json "$OUT/compile.json" \
    "$EX/fmnist_cnn.onnx"
ls -l "$OUT/fmnist_cnn.npub" | awk '{print "binary: " $5 " bytes"}'
echo "== simulate on npusim (RISC-V host on Unicorn + NPU model), 10,000 images"
start=$(date +%s)
"$B/npusim" "$OUT/fmnist_cnn.npub" --input "$OUT/test_x.npy" --output "$OUT/sim_logits.npy" \
    --stats-json "$OUT/sim.json" --trace "$OUT/trace.json" --stats | sed -n 1,5p
echo "simulated in $(( $(date +%s) - start )) s; Chrome trace of one inference: $OUT/trace.json"
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
import numpy as np
out = sys.argv[1]
y = np.load(f"{out}/test_y.npy")
f = (np.load(f"{out}/logits.npy").argmax(1) == y).mean() * 100
q = (np.load(f"{out}/sim_logits.npy").argmax(1) == y).mean() * 100
s = json.load(open(f"{out}/sim.json"))
m = s["memory"]
print(f"float top-1 {f:.2f}%  |  int8 top-1 on npusim {q:.2f}%  ({q - f:+.2f} points)")
print(f"{s['cycles']['total']} cycles = {s['time_ms']:.4f} ms per inference at the NPU clock "
      f"(NPU {s['cycles']['npu']}, host {s['cycles']['host']}), MAC utilization {s['mac_utilization'] * 100:.1f}%")
print(f"arena {m['arena_bytes']} B (lower bound {m['arena_lower_bound_bytes']} B), weights {m['weights_bytes']} B, "
      f"SRAM peak {m['sram_peak_bytes']} B")
PY
