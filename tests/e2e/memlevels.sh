#!/bin/sh
# The two-level memory plan (docs/memplan.md "Two levels"): the example
# model runs SRAM-resident on edge-v1 (DRAM bytes per inference at most 1.1x
# the compulsory weights, input and output, measured by npusim), bit-exact
# with npuref on every target; tests/e2e/plan_check.py, an outside checker,
# verifies each plan (no two live buffers of a level overlap, each level at
# its bound) and is shown to catch an overlap. Usage: memlevels.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/memlevels
mkdir -p $W
PY=/usr/bin/python3
M=examples/fmnist/fmnist_cnn.onnx
IN=examples/fmnist/calib/000.npy
fail=0
ok() { echo "ok $1"; }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
for tf in targets/*.yaml; do
    t=$(basename $tf .yaml)
    if ! $B/npucc --target $tf --calib examples/fmnist/calib -o $W/$t.npub --stats-json $W/$t.json $M >$W/$t.log 2>&1; then
        bad "memlevels $t: npucc: $(head -c 500 $W/$t.log)"; continue
    fi
    if ! $B/npusim $W/$t.npub --input $IN --output $W/$t.sim.npy --stats-json $W/$t.sim.json >$W/$t.log 2>&1 ||
       ! $B/npuref $W/$t.npub --input $IN --output $W/$t.ref.npy >>$W/$t.log 2>&1; then
        bad "memlevels $t: npusim/npuref: $(head -c 500 $W/$t.log)"; continue
    fi
    cmp -s $W/$t.sim.npy $W/$t.ref.npy && ok "memlevels $t: npusim bit-exact with npuref" ||
        bad "memlevels $t: npusim differs from npuref"
    if [ $t = edge-v1 ]; then
        out=$($PY tests/e2e/plan_check.py $W/$t.json $W/$t.sim.json 1.1) && ok "memlevels $t: $(echo "$out" | tr '\n' ';')" ||
            bad "memlevels $t: $out"
        rep=$($B/npucc --target $tf --calib examples/fmnist/calib --report -o $W/rep.npub $M 2>&1)
        echo "$rep" | grep -q "^homes: .*/conv2/conv2.0/Conv_output_0:q sram" && echo "$rep" | grep -q "^memory: SRAM level" &&
            ok "memlevels $t: --report gives each tensor's home" || bad "memlevels $t: --report lacks the homes"
        n=$($PY -c "import json,sys; print(sum(b['level']=='sram' for b in json.load(open(sys.argv[1]))['memory']['plan']))" $W/$t.json)
        [ "$n" -gt 0 ] && ok "memlevels $t: $n tensors SRAM-resident" || bad "memlevels $t: nothing SRAM-resident"
    else
        out=$($PY tests/e2e/plan_check.py $W/$t.json) && ok "memlevels $t: plan checks" || bad "memlevels $t: $out"
    fi
done
# the checker is not a rubber stamp: two live buffers moved onto each other fail it
$PY - $W/edge-v1.json $W/broken.json <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
plan = d["memory"]["plan"]
roots = [b for b in plan if "alias_of" not in b and b["level"] == "sram"]
a = roots[0]
b = next(x for x in roots[1:] if x["first_pos"] <= a["last_pos"] and a["first_pos"] <= x["last_pos"])
delta = a["offset"] - b["offset"]
for x in plan:  # b's buffer, aliases and all, onto a's bytes
    if x is b or x.get("alias_of") == b["tensor"]:
        x["offset"] += delta
json.dump(d, open(sys.argv[2], "w"))
PYEOF
out=$($PY tests/e2e/plan_check.py $W/broken.json 2>&1)
if [ $? -eq 0 ] || ! echo "$out" | grep -q overlaps; then bad "memlevels: the checker passed an overlap: $out"
else ok "memlevels: the checker rejects an overlap ($(echo "$out" | grep overlaps | head -c 100))"; fi
[ $fail -eq 0 ] || exit 1
