#!/bin/sh
# --set PATH=VALUE: an override compiles and simulates exactly like an edited
# copy of the YAML (byte-identical .npub, identical stats apart from where the
# target came from); bad overrides name the key; the stats JSON records the
# effective target; a binary embeds its target, and a stripped one for a
# variant outside targets/ is found through NPUCC_TARGET_PATH, its error
# listing the known targets and the search path; --validate flags a stale
# description.
# Usage: tests/e2e/sweep_set.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/sweep_set
rm -rf $W && mkdir -p $W/v
PY=/usr/bin/python3
fail=0
ok() { echo "ok   sweep_set: $1"; }
bad() { echo "FAIL sweep_set: $1"; fail=1; }
M=examples/fmnist/fmnist_cnn.onnx
C=examples/fmnist/calib
cp $C/000.npy $W/x.npy
# the edited copy: another name, a 16x32 array, twice the DRAM bandwidth
sed 's/cols: 16/cols: 32/; s/dram: {mb_per_s: 4000,/dram: {mb_per_s: 8000,/; s/^target: edge-v1$/target: edge-v1-q1/' \
    targets/edge-v1.yaml > $W/v/edge-v1-q1.yaml
grep -q "cols: 32" $W/v/edge-v1-q1.yaml && grep -q "mb_per_s: 8000" $W/v/edge-v1-q1.yaml || bad "sed did not edit the copy"
SETS="--set target=edge-v1-q1 --set npu.mac.cols=32 --set npu.dram.mb_per_s=8000"
$B/npucc --target edge-v1 $SETS --calib $C $M -o $W/set.npub --stats-json $W/cset.json >/dev/null || bad "npucc --set"
$B/npucc --target $W/v/edge-v1-q1.yaml --calib $C $M -o $W/copy.npub --stats-json $W/ccopy.json >/dev/null ||
    bad "npucc on the copy"
$B/npucc --target edge-v1 --calib $C $M -o $W/base.npub >/dev/null || bad "npucc edge-v1"
cmp -s $W/set.npub $W/copy.npub && ok "--set and the edited YAML give byte-identical .npub" || bad ".npub differ"
cmp -s $W/set.npub $W/base.npub && bad "the override changed nothing"
$B/npusim $W/set.npub --input $W/x.npy --output $W/yset.npy --stats-json $W/sset.json >/dev/null || bad "npusim set"
$B/npusim $W/copy.npub --input $W/x.npy --output $W/ycopy.npy --stats-json $W/scopy.json >/dev/null || bad "npusim copy"
$B/npusim $W/base.npub --input $W/x.npy --stats-json $W/sbase.json >/dev/null || bad "npusim base"
# npusim's own --set on the stripped base-target binary, against the copy given as --target
$B/npucc --target edge-v1 --calib $C $M -o $W/strip.npub --strip >/dev/null || bad "npucc --strip"
$B/npusim $W/strip.npub --input $W/x.npy --set npu.dram.mb_per_s=2000 --stats-json $W/ssimset.json >/dev/null ||
    bad "npusim --set"
sed 's/dram: {mb_per_s: 4000,/dram: {mb_per_s: 2000,/' targets/edge-v1.yaml > $W/v/edge-v1.yaml
$B/npusim $W/strip.npub --input $W/x.npy --target $W/v/edge-v1.yaml --any-target --stats-json $W/ssimcopy.json \
    >/dev/null || bad "npusim --target copy"
$PY - $W <<'EOF' || fail=1
import json, sys
w = sys.argv[1]
def load(n): return json.load(open(f"{w}/{n}.json"))
def same_but_source(a, b, what):
    """Equal apart from the model path and the target's file and overrides."""
    ka = {k: v for k, v in a.items() if k not in ("model", "target_config")}
    kb = {k: v for k, v in b.items() if k not in ("model", "target_config")}
    ta, tb = a["target_config"], b["target_config"]
    if ka != kb or ta["params"] != tb["params"] or ta["hash"] != tb["hash"]:
        print(f"FAIL sweep_set: {what}: stats differ"); return False
    return True
okay = same_but_source(load("cset"), load("ccopy"), "npucc")
okay &= same_but_source(load("sset"), load("scopy"), "npusim")
okay &= same_but_source(load("ssimset"), load("ssimcopy"), "npusim --set")
s, base = load("sset"), load("sbase")
p = s["target_config"]["params"]
if p.get("npu.mac.cols") != 32 or p.get("npu.dram.mb_per_s") != 8000 or p.get("target") != "edge-v1-q1":
    print("FAIL sweep_set: target_config.params lacks the overrides:", p); okay = False
if load("cset")["target_config"]["sets"] != ["target=edge-v1-q1", "npu.mac.cols=32", "npu.dram.mb_per_s=8000"]:
    print("FAIL sweep_set: npucc's target_config lacks the --set list"); okay = False
if not s["target_config"]["file"].endswith("set.npub:target"):
    print("FAIL sweep_set: npusim did not use the embedded target:", s["target_config"]["file"]); okay = False
if len(s["target_config"]["hash"]) != 16 or s["target_config"]["hash"] == base["target_config"]["hash"]:
    print("FAIL sweep_set: the hash does not follow the parameters"); okay = False
if not s["cycles"]["npu"] < base["cycles"]["npu"]:
    print("FAIL sweep_set: twice the MAC columns and bandwidth did not cut NPU cycles", s["cycles"], base["cycles"])
    okay = False
if load("ssimset")["cycles"]["npu"] <= base["cycles"]["npu"]:
    print("FAIL sweep_set: npusim --set of half the bandwidth did not slow the NPU"); okay = False
if okay: print("ok   sweep_set: stats equal for --set and the copy (npucc, npusim, npusim --set); target_config records them")
sys.exit(0 if okay else 1)
EOF
cmp -s $W/yset.npy $W/ycopy.npy || bad "outputs differ"
# errors name the key
for spec in "npu.mac.cols=abc:npu.mac.cols=abc: expected an integer" "npu.mac.colz=2:unknown key 'colz' in npu.mac" \
            "npu.mac=2:'npu.mac' is a mapping" "npu.sram.banks=7:--set npu.sram.banks=7: sram.bytes (524288)" \
            "npu.mac.rows=0:expected npu.mac.rows in 1.." "nokey:expected PATH=VALUE"; do
    s=${spec%%:*}; want=${spec#*:}
    msg=$($B/npucc --target edge-v1 --set "$s" --validate 2>&1) && bad "--set $s accepted"
    echo "$msg" | grep -qF -- "$want" || bad "--set $s: message lacks '$want': $msg"
done
[ $fail = 0 ] && ok "bad overrides are refused, naming the key"
# a stripped binary for a variant outside targets/: the error lists the known targets and the search path
$B/npucc --target $W/v/edge-v1-q1.yaml --calib $C $M -o $W/q1s.npub --strip >/dev/null || bad "npucc q1 --strip"
msg=$(env -u NPUCC_TARGET_PATH $B/npusim $W/q1s.npub --input $W/x.npy 2>&1) && bad "stripped q1 ran without its target"
for want in "target 'edge-v1-q1' not found" "NPUCC_TARGET_PATH" "edge-v1-lite" "targets/edge-v1-q1.yaml"; do
    echo "$msg" | grep -qF -- "$want" || bad "not-found message lacks '$want': $msg"
done
NPUCC_TARGET_PATH=$W/v $B/npusim $W/q1s.npub --input $W/x.npy --output $W/yq1s.npy >/dev/null &&
    cmp -s $W/yq1s.npy $W/ycopy.npy && ok "a stripped variant binary runs through NPUCC_TARGET_PATH; errors list targets and path" ||
    bad "NPUCC_TARGET_PATH"
# a corrupted embedded target fails on its hash, not silently
$PY -c "
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
i = b.find(b'\"latency_ns\": 200')
assert i > 0
b[i + 15] = ord('9')
import struct, zlib
n = struct.unpack_from('<I', b, 48)[0]; off = struct.unpack_from('<I', b, 52)[0]
for k in range(n):
    kind, o, sz, _ = struct.unpack_from('<IIII', b, off + 16 * k)
    if kind == 12: struct.pack_into('<I', b, off + 16 * k + 12, zlib.crc32(bytes(b[o:o + sz])))
open(sys.argv[2], 'wb').write(b)" $W/set.npub $W/tamper.npub 2>/dev/null
if [ -f $W/tamper.npub ]; then
    msg=$($B/npusim $W/tamper.npub --input $W/x.npy 2>&1) && bad "a changed embedded target ran"
    echo "$msg" | grep -q hash && ok "an edited embedded target is refused by its hash" || bad "tamper: $msg"
else
    bad "could not make the tampered binary"
fi
# --validate checks the description against the numbers
$B/npucc --target edge-v1 --validate | grep -q warning && bad "edge-v1's own description flagged"
$B/npucc --target edge-v1 --set npu.mac.cols=32 --validate | grep -q "description says '16x16' but mac is 16x32" &&
    $B/npucc --target edge-v1 --set npu.sram.bytes=256Ki --validate | grep -q "512 KiB SRAM" &&
    ok "--validate warns when the description contradicts mac and sram" || bad "--validate description check"
exit $fail
