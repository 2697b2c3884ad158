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
/usr/bin/python3 - "$DATA" "$OUT" <<'PY'
import gzip, struct, sys
import numpy as np
d, out = sys.argv[1], sys.argv[2]
with gzip.open(f"{d}/t10k-images-idx3-ubyte.gz") as f:
    _, n, h, w = struct.unpack(">IIII", f.read(16))
    x = np.frombuffer(f.read(), np.uint8).reshape(n, 1, h, w).astype(np.float32) / 255.0
with gzip.open(f"{d}/t10k-labels-idx1-ubyte.gz") as f:
    f.read(8)
    y = np.frombuffer(f.read(), np.uint8)
np.save(f"{out}/test_x.npy", x)
np.save(f"{out}/test_y.npy", y.astype(np.int64))
PY
echo "== float reference (npuref) on the test set"
"$B/npuref" "$EX/fmnist_cnn.onnx" --input "$OUT/test_x.npy" --output "$OUT/logits.npy"
/usr/bin/python3 -c "
import numpy as np
p = np.load('$OUT/logits.npy').argmax(1); y = np.load('$OUT/test_y.npy')
print(f'float top-1: {(p == y).mean() * 100:.2f}% on {len(y)} images (torch measured $(cat $EX/float_top1.txt))')"
echo "== calibrate and quantize for edge-v1 (the quantized graph)"
"$B/npucc" --target edge-v1 --calib "$EX/calib" "$EX/fmnist_cnn.onnx" --dump-after=quantize | grep -c ' = ' |
    xargs -I{} echo "{} nodes in the quantized graph"
echo "demo: simulation on npusim needs the code generator (tiler, memory plan, emit), not built yet"
