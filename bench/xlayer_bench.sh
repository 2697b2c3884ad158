#!/bin/sh
# Across layers (issue 14): NPU cycles on npusim against the bound
# max(MACs / peak, compulsory bytes / bandwidth, each over its own bus),
# compulsory bytes being the weights, the model input and output; the ratio
# beside the issue's target; DRAM bytes per inference against the
# compulsory ones; how many tensors the two-level plan keeps in SRAM. The
# bus parameters are read from the target as they are (bytes_per_cycle or
# mb_per_s; placement.constants, where present, says which bus the
# constants use; without it they are charged to DRAM, as the simulator
# does). Usage: bench/xlayer_bench.sh [BUILD] [TARGET]
set -u
B=${1:-build}
T=${2:-edge-v1}
W=$B/bench/xlayer
S=${NPUCC_SHARED:-/work/shared/models}
PY=/usr/bin/python3
mkdir -p $W
status=0

row() { # name onnx calibdir input target-ratio
    n=$1
    if ! $B/npucc --target targets/$T.yaml --calib $3 -o $W/$n.npub --stats-json $W/$n.cc.json $2 >/dev/null 2>$W/$n.err; then
        echo "$n: compile failed: $(head -c 300 $W/$n.err)"; status=1; return
    fi
    if ! $B/npusim $W/$n.npub --input $4 --output $W/$n.sim.npy --stats-json $W/$n.json >/dev/null 2>$W/$n.err ||
       ! $B/npuref $W/$n.npub --input $4 --output $W/$n.ref.npy >/dev/null 2>>$W/$n.err; then
        echo "$n: npusim/npuref failed: $(head -c 300 $W/$n.err)"; status=1; return
    fi
    exact=yes
    cmp -s $W/$n.sim.npy $W/$n.ref.npy || { exact=NO; status=1; }
    $PY - targets/$T.yaml $W/$n.cc.json $W/$n.json $n $5 $exact <<'PY' || status=1
import json, sys
import yaml
tf, ccj, simj, name, target, exact = sys.argv[1:7]
t = yaml.safe_load(open(tf))["npu"]
cc, sim = json.load(open(ccj)), json.load(open(simj))
def bpc(bus):  # bytes per NPU cycle, from either unit
    if "bytes_per_cycle" in bus:
        return float(bus["bytes_per_cycle"])
    return bus["mb_per_s"] / t["clock_mhz"]
peak = t["mac"]["rows"] * t["mac"]["cols"]
width = {"float32": 4, "int8": 1, "uint8": 1, "int16": 2, "int32": 4, "float16": 2}
io = 0
for x in cc["io"]:
    k = 1
    for d in x["shape"]:
        k *= d
    io += k * width[x["dtype"]]
wts = cc["memory"]["weights_bytes"]
const_bus = t.get("placement", {}).get("constants", "dram")
dram_b = io + (wts if const_bus == "dram" else 0)
flash_b = wts if const_bus == "flash" else 0
# the model's MACs (the compile's count): what the NPU ran includes recomputed halo rows
macs = cc["macs"] or sim["macs"]
bound = max(macs / peak, dram_b / bpc(t["dram"]), flash_b / bpc(t["flash"]) if flash_b else 0)
cyc = sim["cycles"]["npu"]
moved = sim["dram"]["read_bytes"] + sim["dram"]["write_bytes"]
comp = io + wts
res = sum(b.get("level") == "sram" for b in cc["memory"]["plan"])
ratio = cyc / bound
goal = float(target)
print("%-16s %10d %10d %6.2fx %6s %4s %10d %10d %6.2fx %4d %5s" % (
    name, cyc, bound, ratio, ("%.2fx" % goal) if goal else "-", "ok" if not goal or ratio <= goal else "over",
    moved, comp, moved / comp, res, exact))
PY
}

echo "== across layers on $T: npusim NPU cycles against max(MACs/peak, compulsory bytes/bandwidth)"
printf '%-16s %10s %10s %7s %6s %4s %10s %10s %7s %4s %5s\n' model npu_cycles bound ratio target met \
    dram_bytes compulsory ratio sram exact
row example_cnn examples/fmnist/fmnist_cnn.onnx examples/fmnist/calib examples/fmnist/calib/000.npy 1.3
if [ -d $S/fmnist ]; then
    $PY -c "import numpy as np; np.save('$W/fm_in.npy', np.load('$S/fmnist/test_x.npy')[:1])"
    row fmnist_cnn_1.8M $S/fmnist/cnn.onnx $S/fmnist/calib $W/fm_in.npy 0
    row fmnist_mbv2 $S/fmnist/mbv2.onnx $S/fmnist/calib $W/fm_in.npy 0
else
    echo "fmnist: skipped: $S/fmnist not present"
fi
if [ -d $S/zoo ]; then
    mkdir -p $W/zcal
    $PY -c "
import numpy as np
x = np.load('$S/zoo/in224.npy')
np.save('$W/in1.npy', x[:1])
for i in range(x.shape[0]): np.save(f'$W/zcal/{i}.npy', x[i:i+1])"
    for mt in mobilenet_v2:1.15 resnet18:1.05 squeezenet1_1:1.2 efficientnet_b0:1.5; do
        m=${mt%%:*}
        f=$S/zoo/$m.onnx
        # the shared zoo has no EfficientNet-B0: made here as the zoo's are (torchvision, seeded weights)
        if [ ! -f $f ] && [ $m = efficientnet_b0 ]; then
            f=$W/$m.onnx
            [ -f $f ] || $PY bench/gen_efficientnet.py $f >/dev/null 2>$W/$m.gen.err || rm -f $f
        fi
        if [ -f $f ]; then row $m $f $W/zcal $W/in1.npy ${mt#*:}
        else echo "$m: skipped: neither $S/zoo/$m.onnx nor torchvision to make it"; fi
    done
else
    echo "zoo: skipped: $S/zoo not present"
fi
exit $status
