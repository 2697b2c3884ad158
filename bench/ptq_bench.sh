#!/bin/sh
# PTQ accuracy (issue 5): float, int8 and W4A8 top-1 through the quantized
# reference, per calibration method and repair, and calibration time against
# the float reference. Part of `make bench` (bench/run.sh runs *_bench.sh).
#   bench/ptq_bench.sh BUILD [N_TEST]
set -u
B=${1:-build}
N=${2:-0}
here=$(dirname "$0")
root=$(cd "$here/.." && pwd)
out=$B/bench
mkdir -p "$out"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -I"$root" -I"$root/src" -I"$B/gen" "$here/ptq_accuracy.c" \
    "$B/libnpucc.a" "$B/libnpurt.a" -lprotobuf-c -lyaml -lm -o "$out/ptq_accuracy" || exit 1
nflag=""
[ "$N" -gt 0 ] && nflag="-n $N"
CONFIGS=${PTQ_CONFIGS:-"w8+minmax w8+percentile w8+kl w8+mse w4+minmax w4+percentile w4+kl w4+mse"}
status=0
echo "== PTQ accuracy: top-1 on the test images, quantized reference vs float reference"
# the example model: test images from the Debian dataset package
DATA=/usr/share/datasets/fashion-mnist
if [ -f "$DATA/t10k-images-idx3-ubyte.gz" ]; then
    if [ ! -f "$out/fmnist_test_x.npy" ]; then
        "${PYTHON:-/usr/bin/python3}" - "$DATA" "$out" <<'PY'
import gzip, struct, sys
import numpy as np
d, out = sys.argv[1], sys.argv[2]
with gzip.open(f"{d}/t10k-images-idx3-ubyte.gz") as f:
    _, n, h, w = struct.unpack(">IIII", f.read(16))
    x = np.frombuffer(f.read(), np.uint8).reshape(n, 1, h, w).astype(np.float32) / 255.0
with gzip.open(f"{d}/t10k-labels-idx1-ubyte.gz") as f:
    f.read(8)
    y = np.frombuffer(f.read(), np.uint8)
np.save(f"{out}/fmnist_test_x.npy", x)
np.save(f"{out}/fmnist_test_y.npy", y.astype(np.int64))
PY
    fi
    # shellcheck disable=SC2086
    "$out/ptq_accuracy" "$root/examples/fmnist/fmnist_cnn.onnx" "$root/examples/fmnist/calib" \
        "$out/fmnist_test_x.npy" "$out/fmnist_test_y.npy" $nflag $CONFIGS || status=1
else
    echo "ptq: $DATA missing (Debian package dataset-fashion-mnist): example model skipped"
fi
shared=""
for d in "${NPUCC_SHARED:-}" "$root/../shared" /work/shared; do
    [ -n "$d" ] && [ -d "$d/models/fmnist" ] && { shared=$d; break; }
done
if [ -n "$shared" ]; then
    f=$shared/models/fmnist
    for m in cnn mbv2; do
        [ -f "$f/$m.onnx" ] || continue
        # shellcheck disable=SC2086
        "$out/ptq_accuracy" "$f/$m.onnx" "$f/calib" "$f/test_x.npy" "$f/test_y.npy" $nflag $CONFIGS || status=1
    done
else
    echo "ptq: ../shared/models/fmnist not found: shared models skipped"
fi
exit $status
