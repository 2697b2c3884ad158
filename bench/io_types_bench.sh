#!/bin/sh
# Model I/O types on the zoo MobileNetV2-224 (edge-v1, calibrated on
# zoo/in224.npy as e2e_bench.sh does): host cycles against end-to-end cycles
# (npusim --stats-json cycles.host / cycles.total) with float32 input (the
# NPU's quantize instruction converts it) and with --input-type int8
# (targets: <= 15% and <= 5%), and the host quantizer alone in cycles per
# element (edge-v1-nofq: edge-v1 whose ISA lacks quantize, so the input's
# QuantizeLinear runs on the host). Uses ../shared/models when present.
# usage: bench/io_types_bench.sh BUILD
set -u
B=$1
W=$B/bench/io_types
S=${SHARED:-$(dirname "$0")/../../shared/models}
PY=/usr/bin/python3
[ -f $S/zoo/mobilenet_v2.onnx ] || { echo "io_types: no $S/zoo, skipped"; exit 0; }
mkdir -p $W/zcal
$PY -c "
import numpy as np
x = np.load('$S/zoo/in224.npy')
for i in range(x.shape[0]): np.save(f'$W/zcal/{i}.npy', x[i:i+1])
np.save('$W/in1.npy', x[:1])"
# an ISA without quantize: the host fallback of the same model
sed '/^  quantize:/,$d' isa/npu-v1.yaml >$W/npu-v1-nofq.yaml
sed -e "s|^isa: npu-v1|isa: $(cd $W && pwd)/npu-v1-nofq.yaml|" -e 's/^target: edge-v1/target: edge-v1-nofq/' \
    targets/edge-v1.yaml >$W/edge-v1-nofq.yaml
status=0
echo "== model I/O types: zoo mobilenet_v2 on npusim (host share targets: float32 <= 15%, int8 <= 5%)"
printf '%-14s %-8s %12s %12s %12s %7s %12s  %s\n' target input total npu host host% q_cyc/elem bit-exact
for cfg in "targets/edge-v1.yaml float32" "targets/edge-v1.yaml int8" "targets/edge-v1.yaml uint8" \
           "$W/edge-v1-nofq.yaml float32"; do
    set -- $cfg
    tf=$1 ty=$2 t=$(basename $1 .yaml) o=$W/$(basename $1 .yaml).$2
    $B/npucc --target $tf --calib $W/zcal --input-type $ty --stats-json $o.cc.json -o $o.npub \
        $S/zoo/mobilenet_v2.onnx >/dev/null 2>$o.err || { echo "$t $ty: compile failed: $(head -c 300 $o.err)"; status=1; continue; }
    in=$W/in1.npy
    if [ $ty != float32 ]; then
        in=$o.in.npy
        $PY -c "
import json, numpy as np
i = json.load(open('$o.cc.json'))['io'][0]
x = np.load('$W/in1.npy')
lo, hi, dt = (0, 255, np.uint8) if i['dtype'] == 'uint8' else (-128, 127, np.int8)
np.save('$in', np.clip(np.round(x / np.float32(i['scale'])) + i['zero_point'], lo, hi).astype(dt))"
    fi
    $B/npusim $o.npub --target $tf --input $in --output $o.sim.npy --stats-json $o.json >/dev/null 2>$o.err ||
        { echo "$t $ty: npusim failed: $(head -c 300 $o.err)"; status=1; continue; }
    $B/npuref $o.npub --input $in --output $o.ref.npy >/dev/null 2>&1
    $PY - $o $t $ty <<'PY' || status=1
import json, sys
o, t, ty = sys.argv[1:4]
s = json.load(open(o + ".json"))
c = s["cycles"]
share = c["host"] / c["total"]
q = [l for l in s["layers"] if l["op"] == "QuantizeLinear" and l["unit"] == "host"]
elems = 3 * 224 * 224
qc = "%.2f" % (q[0]["cycles"] / elems) if q else "-"
exact = open(o + ".sim.npy", "rb").read() == open(o + ".ref.npy", "rb").read()
goal = {"int8": 0.05, "uint8": 0.05, "float32": 0.15}[ty] if t == "edge-v1" else None
ok = exact and (goal is None or share <= goal)
print(f"{t:14s} {ty:8s} {c['total']:12d} {c['npu']:12d} {c['host']:12d} {100 * share:6.2f}% {qc:>12s}  {exact}"
      f"  {'PASS' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
done
exit $status
