#!/bin/sh
# The timing, energy and area model on the example CNN, against target
# variants made from edge-v1 (docs/npu-model.md):
# - constants left in flash (placement.constants: flash) stream over the
#   slower flash bus: weight-bound layers take longer (together), and each at
#   least its flash bytes over the flash bandwidth;
# - sram.banks 1 against 8 changes the cycles of a model whose units collide
#   (a 64 KiB SRAM, so the tiles spread over the banks), outputs unchanged;
# - doubling the NPU clock leaves the DRAM bus's bytes per second unchanged;
# - npucc's static estimate and npusim agree on DRAM bytes (exactly) and on
#   host cycles (within 10%);
# - energy: MAC energy is the MACs times the YAML's figure, more SRAM means
#   more area and static energy, a 2x MAC array more area, fewer cycles, the
#   same dynamic MAC energy.
# Usage: tests/e2e/timing.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/timing
mkdir -p $W
PY=/usr/bin/python3
fail=0
variant() { # NAME SED-EXPRESSION: targets/edge-v1.yaml edited into $W/NAME.yaml
    sed "s/^target: edge-v1\$/target: $1/; $2" targets/edge-v1.yaml >$W/$1.yaml
    grep -q "^target: $1\$" $W/$1.yaml || { echo "FAIL timing: variant $1 not made"; fail=1; }
}
variant xip 's/placement: {constants: dram, flash_stream: on}/placement: {constants: flash}/'
variant small 's/sram: {bytes: 512Ki, banks: 8}/sram: {bytes: 64Ki, banks: 8}/'
variant small1 's/sram: {bytes: 512Ki, banks: 8}/sram: {bytes: 64Ki, banks: 1}/'
variant fast 's/clock_mhz: 500$/clock_mhz: 1000/'
variant bigsram 's/sram: {bytes: 512Ki, banks: 8}/sram: {bytes: 1Mi, banks: 8}/'
variant wide 's/mac: {rows: 16, cols: 16,/mac: {rows: 16, cols: 32,/'
$PY -c "
import numpy as np
np.save('$W/x.npy', np.random.default_rng(3).random((1, 1, 28, 28), dtype=np.float32))" || exit 1
for t in edge-v1 xip small fast bigsram wide; do
    tf=$W/$t.yaml
    [ $t = edge-v1 ] && tf=targets/edge-v1.yaml
    $B/npucc --target $tf --calib examples/fmnist/calib -o $W/$t.npub --stats-json $W/$t.cc.json \
        examples/fmnist/fmnist_cnn.onnx >/dev/null || { echo "FAIL timing: npucc --target $t"; fail=1; continue; }
    $B/npusim $W/$t.npub --target $tf --input $W/x.npy --output $W/$t.y.npy --stats-json $W/$t.json >/dev/null ||
        { echo "FAIL timing: npusim $t"; fail=1; }
done
$B/npusim $W/small.npub --target $W/small1.yaml --any-target --input $W/x.npy --output $W/small1.y.npy \
    --stats-json $W/small1.json >/dev/null || { echo "FAIL timing: npusim small1"; fail=1; }
$B/npucc --target targets/edge-v1.yaml --validate >$W/v1.txt && $B/npucc --target $W/fast.yaml --validate >$W/fast.txt ||
    { echo "FAIL timing: --validate"; fail=1; }
[ $fail = 0 ] || exit 1
$PY - "$W" <<'PY' || fail=1
import json, sys, numpy as np
W = sys.argv[1]
J = lambda n: json.load(open(f"{W}/{n}.json"))
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + "timing: " + what)
    ok &= bool(cond)

v1, xip = J("edge-v1"), J("xip")
# flash: the weight-bound layers (flash bound above the DRAM one) slow down, never below their flash bound
flash_bpc = 1000e6 / 500e6
slow = []
for a, b in zip(v1["layers"], xip["layers"]):
    if a["unit"] != "npu" or not b["flash_bytes"]:
        continue
    fb = b["flash_bytes"] / flash_bpc
    if fb > a["bound_cycles"]:
        slow.append((a["name"], a["cycles"], b["cycles"], fb))
# together, not each: a layer's span starts with its prefetch during the layer before, which with flash
# queues behind that layer's own streamed weights (the example's fc behind conv3 + the global pool's chunks)
check(slow and sum(c2 for _, _, c2, _ in slow) > sum(c1 for _, c1, _, _ in slow) and
      all(c2 >= fb for _, _, c2, fb in slow),
      "constants in flash: weight-bound layers %s take longer together and each at least flash bytes / 2 B per cycle" %
      ", ".join("%s %d -> %d (flash bound %d)" % (n, c1, c2, fb) for n, c1, c2, fb in slow))
check(xip["flash"]["read_bytes"] >= xip["memory"]["weights_bytes"] > 0 and v1["flash"]["read_bytes"] == 0 and
      xip["dram"]["read_bytes"] < v1["dram"]["read_bytes"],
      "the constants move from the DRAM bus to the flash bus (%d B over flash, weights %d B)" %
      (xip["flash"]["read_bytes"], xip["memory"]["weights_bytes"]))
check(np.array_equal(np.load(f"{W}/edge-v1.y.npy"), np.load(f"{W}/xip.y.npy")), "outputs do not depend on the bus")
# banks
s8, s1 = J("small"), J("small1")
check(s1["cycles"]["npu"] > s8["cycles"]["npu"] and np.array_equal(np.load(f"{W}/small.y.npy"), np.load(f"{W}/small1.y.npy")),
      "64 KiB SRAM: banks 1 %d NPU cycles > banks 8 %d, outputs identical" % (s1["cycles"]["npu"], s8["cycles"]["npu"]))
# the clock: DRAM bytes per second unchanged; a DRAM-bound layer's time unchanged within 10%
gbps = lambda f: [l for l in open(f"{W}/{f}.txt") if l.strip().startswith("dram")][0]
check("4.00 GB/s" in gbps("v1") and "4.00 GB/s" in gbps("fast") and "4 B/cycle" in gbps("fast"),
      "npu.clock_mhz 500 -> 1000: DRAM stays 4.00 GB/s (8 -> 4 B per NPU cycle)")
fast = J("fast")
q0 = [l for l in v1["layers"] if l["name"].startswith("quantize:")][0]
q1 = [l for l in fast["layers"] if l["name"] == q0["name"]][0]
t0, t1 = q0["cycles"] / 500, q1["cycles"] / 1000
check(abs(t1 - t0) / t0 < 0.1 and q1["cycles"] > 1.8 * q0["cycles"],
      "the DMA-bound %s takes %.2f us at 500 MHz and %.2f us at 1000 MHz" % (q0["name"], t0, t1))
# npucc and npusim agree
for t in ("edge-v1", "xip", "fast"):
    cc, sim = J(t + ".cc"), J(t)
    same = cc["dram"] == sim["dram"] and cc["flash"] == sim["flash"]
    h0, h1 = cc["cycles"]["host"], sim["cycles"]["host"]
    check(same and h0 > 0 and abs(h0 - h1) <= 0.1 * h1,
          "%s: npucc and npusim agree on DRAM bytes %s and host cycles (%d, %d)" % (t, sim["dram"], h0, h1))
# energy and area
e = v1["energy"]
check(abs(e["mac_nj"] - v1["macs"] * 150e-6) < 1e-3 and e["total_nj"] > 0 and
      abs(sum(v for k, v in e.items() if k != "total_nj") - e["total_nj"]) < 1e-2,
      "MAC energy = %d MACs x 150 fJ; the parts sum to the total %.1f nJ" % (v1["macs"], e["total_nj"]))
big, wide = J("bigsram"), J("wide")
check(big["area"]["sram_mm2"] > 1.99 * v1["area"]["sram_mm2"] and big["energy"]["leak_nj"] > v1["energy"]["leak_nj"]
      and big["energy"]["total_nj"] > v1["energy"]["total_nj"],
      "SRAM 512 KiB -> 1 MiB: area %.3f -> %.3f mm^2, energy %.1f -> %.1f nJ" %
      (v1["area"]["total_mm2"], big["area"]["total_mm2"], v1["energy"]["total_nj"], big["energy"]["total_nj"]))
check(wide["area"]["mac_mm2"] > 1.99 * v1["area"]["mac_mm2"] and wide["cycles"]["npu"] < v1["cycles"]["npu"] and
      abs(wide["energy"]["mac_nj"] - v1["energy"]["mac_nj"]) < 1e-6,
      "MAC array 16x16 -> 16x32: MAC area %.3f -> %.3f mm^2, NPU cycles %d -> %d, MAC energy unchanged" %
      (v1["area"]["mac_mm2"], wide["area"]["mac_mm2"], v1["cycles"]["npu"], wide["cycles"]["npu"]))
check(sum(l["energy_nj"] for l in v1["layers"]) <= e["total_nj"] and
      sum(l["energy_nj"] for l in v1["layers"]) > 0.9 * e["dram_nj"], "per-layer energies sum below the inference's")
sys.exit(0 if ok else 1)
PY
exit $fail
