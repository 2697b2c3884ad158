#!/bin/sh
# PTQ accuracy (issue 5): float, int8, W4A8 and W8A4/W4A4 top-1 through the quantized
# reference, per calibration method and repair, and calibration time against
# the float reference. Part of `make bench` (bench/run.sh runs *_bench.sh).
#   bench/ptq_bench.sh BUILD [N_TEST]
# N_TEST limits the test images (default all); PTQ_CONFIGS replaces the list
# of configurations (see bench/ptq_accuracy.c), PTQ_ZOO=0 skips the zoo.
# "ok"/"OFF": top-1 within 0.3 points of float at int8, 1.0 at W4A8 ("a4": no bound), and
# for the int8 and W4A8 defaults (w8+minmax, w4+gptq4) calibration within 2x the float pass. About
# fifteen minutes on the shipped and shared models.
set -u
B=${1:-build}
N=${2:-0}
here=$(dirname "$0")
root=$(cd "$here/.." && pwd)
out=$B/bench
mkdir -p "$out"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -I"$root" -I"$root/src" -I"$B/gen" "$here/ptq_accuracy.c" \
    "$B/libnpucc.a" "$B/libnpurt.a" -lprotobuf-c -lyaml -lpng -lm -o "$out/ptq_accuracy" || exit 1
nflag=""
[ "$N" -gt 0 ] && nflag="-n $N"
CONFIGS=${PTQ_CONFIGS:-"w8+minmax w4+gptq4 w8+percentile w8+kl w8+mse w8+mse+bc w4+mse w4+mse+bc w4+mse+round w4+mse+bc+round w4+mse+cle w4+mse+cle+bc+round w4+mse+bc+round+budget=30 w8+a4+mse w8+a4+percentile w4a4+minmax+round w4a4+mse+round w4a4+percentile+round w4a4+mse+bc+round w4+gptq w4+mse+gptq w4+bc+gptq w4+mse+bc+gptq w4+mse+cle+bc+gptq w4+gptq+budget=30 w8+gptq w8+mse+gptq"}
status=0
echo "== PTQ accuracy: top-1 on the test images, quantized reference vs float reference"
# the example model: test images from the Debian dataset package
DATA=/usr/share/datasets/fashion-mnist
if [ -f "$DATA/t10k-images-idx3-ubyte.gz" ]; then
    if [ ! -f "$out/fmnist_test_x.npy" ]; then
        "${PYTHON:-/usr/bin/python3}" "$root/tools/fmnist_npy.py" "$DATA" "$out/fmnist_test_x.npy" "$out/fmnist_test_y.npy"
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
# zoo: int8 output cosine with float (target >= 0.995), calibrated on the
# in*.npy images that fit (the report compares on the same images)
if [ -n "$shared" ] && [ -d "$shared/models/zoo" ] && [ "${PTQ_ZOO:-1}" = 1 ]; then
    echo
    echo "== PTQ zoo: int8 output cosine similarity with float (calibration set = the test images)"
    z=$shared/models/zoo
    for model in "$z"/*.onnx; do
        name=$(basename "$model" .onnx)
        line=""
        for inp in "$z"/in*.npy; do
            cal=$out/zoo_calib_$name
            rm -rf "$cal"; mkdir -p "$cal"; ln -s "$inp" "$cal/x.npy"
            line=$("$B/npucc" --target edge-v1 --calib "$cal" --report -o "$out/$name.npub" "$model" 2>/dev/null |
                   grep '^output: cosine') && break
        done
        if [ -n "$line" ]; then
            cos=$(echo "$line" | awk '{print $3}')
            ok=$(awk -v c="$cos" 'BEGIN { print (c >= 0.995) ? "ok" : "BELOW 0.995" }')
            printf '%-22s %s  %s\n' "$name" "$line" "$ok"
        else
            printf '%-22s FAILED (npucc --report)\n' "$name"
            status=1
        fi
    done
fi
exit $status
