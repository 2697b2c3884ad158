#!/bin/sh
# The cost-model partition (docs/partition.md) per model: the host cycles
# it estimates against those npusim measures (per host step, joined by
# name: bench/partition_join.py; target: within 15%), and the estimated
# cycles it saves against first fit (never negative). Models: the e2e
# models, the example, and ../shared/models (zoo, fmnist) when present.
# Then the host model's calibration (bench/partition_calib.py).
# usage: bench/partition_bench.sh BUILD [--steps]
set -u
B=$1
STEPS=${2:-}
W=$B/bench/partition
S=${SHARED:-$(dirname "$0")/../../shared/models}
[ -d "$S" ] || S=/work/shared/models
PY=/usr/bin/python3
here=$(dirname "$0")
mkdir -p "$W"
status=0
[ -f $B/e2e/models/invres.onnx ] || $PY tests/e2e/gen_models.py $B/e2e/models >/dev/null || exit 1

one() { # name model calibdir input
    o=$W/$1
    if ! $B/npucc --target targets/edge-v1.yaml --calib "$3" -o $o.npub --stats-json $o.json "$2" >/dev/null 2>$o.err; then
        echo "$1: compile failed: $(head -c 300 $o.err)"; status=1; return
    fi
    if ! $B/npusim $o.npub --input "$4" --stats-json $o.sim.json >/dev/null 2>$o.err; then
        echo "$1: npusim failed: $(head -c 300 $o.err)"; status=1; return
    fi
    $PY $here/partition_join.py "$1" $o.json $o.sim.json $STEPS || { echo "$1: worse than first fit"; status=1; }
}

echo "== partition (edge-v1): estimated vs simulated host cycles (NPU clock), cycles saved against first fit"
printf '%-22s %5s %12s %12s %8s %12s %12s %9s %9s\n' model hsteps host_est host_sim error est_cycles first_fit saved switches
M=$B/e2e/models
for m in conv dwconv residual concat pool fc hostop split slice partcopy bigconv lut invres; do
    one e2e_$m $M/$m.onnx $M/${m}_calib $M/${m}_input.npy
done
one example_cnn examples/fmnist/fmnist_cnn.onnx examples/fmnist/calib examples/fmnist/calib/000.npy
if [ -d "$S/fmnist" ]; then
    for m in cnn mbv2; do one fmnist_$m $S/fmnist/$m.onnx $S/fmnist/calib $S/fmnist/calib/sample_000.npy; done
fi
if [ -d "$S/zoo" ]; then
    for size in 96 224; do
        mkdir -p $W/zcal$size
        $PY -c "
import numpy as np
x = np.load('$S/zoo/in$size.npy')
for i in range(x.shape[0]): np.save(f'$W/zcal$size/{i}.npy', x[i:i+1])"
    done
    one mobilenet_v2_96 $S/zoo/mobilenet_v2_96.onnx $W/zcal96 $W/zcal96/0.npy
    for m in mobilenet_v2 resnet18 squeezenet1_1; do one $m $S/zoo/$m.onnx $W/zcal224 $W/zcal224/0.npy; done
fi
echo
echo "== host cycle model: every node the host can run on the host (--partition host), fit per kernel class"
args=""
for m in conv dwconv residual concat pool fc hostop split slice partcopy lut invres bigconv; do
    args="$args $M/$m.onnx:$M/${m}_calib:$M/${m}_input.npy"
done
$PY $here/partition_calib.py $B $args examples/fmnist/fmnist_cnn.onnx:examples/fmnist/calib:examples/fmnist/calib/000.npy ||
    status=1
exit $status
