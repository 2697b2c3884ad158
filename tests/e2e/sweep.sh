#!/bin/sh
# npusweep, local engine: 3 variants x 3 models with -j 2 and -j 1 give
# identical CSVs; a row per point and layer carrying its parameters; the
# physics shows (2x MAC columns never slower, half the bandwidth never
# faster); an interrupted sweep resumes, running only the missing points;
# the plots are drawn; a bad sweep file names its key.
# Usage: tests/e2e/sweep.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/sweep
rm -rf $W && mkdir -p $W
PY=/usr/bin/python3
S=tools/npusweep/npusweep
fail=0
ok() { echo "ok   sweep: $1"; }
bad() { echo "FAIL sweep: $1"; fail=1; }
. tests/e2e/sweep_gen.sh
$S --build $B -j 2 $W/small.yaml -o $W/j2 >$W/j2.log 2>&1 || { bad "-j 2: $(tail -3 $W/j2.log)"; exit 1; }
$S --build $B -j 1 --no-plots $W/small.yaml -o $W/j1 >$W/j1.log 2>&1 || bad "-j 1: $(tail -3 $W/j1.log)"
cmp -s $W/j1/sweep.csv $W/j2/sweep.csv && ok "-j 1 and -j 2 give identical CSVs" || bad "-j 1 and -j 2 CSVs differ"
$PY - $W/j2/sweep.csv $W/j2/sweep.json <<'PYEOF' || fail=1
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
pts = json.load(open(sys.argv[2]))["points"]
bad = []
if len(pts) != 9: bad.append(f"{len(pts)} points, expected 9")
if {r["point"] for r in rows} != {str(i) for i in range(9)}: bad.append("not every point has rows")
for r in rows:
    if r["variant"] == "mac2x" and r["npu.mac.cols"] != "32": bad.append("mac2x row without npu.mac.cols=32")
    if r["variant"] == "bw0.5x" and r["npu.dram.mb_per_s"] != "2000": bad.append("bw0.5x row without 2000 MB/s")
    if r["variant"] == "base" and (r["npu.mac.cols"], r["npu.dram.mb_per_s"]) != ("16", "4000"):
        bad.append("base row without edge-v1's values")
    if not r["layer"]: bad.append("a row without its layer")
# per model: the totals move the way the hardware does
tot = {(p["variant"], p["model"]): p["totals"]["cycles.npu"] for p in pts}
for m in ("cnn", "conv", "residual"):
    if tot[("mac2x", m)] > tot[("base", m)]: bad.append(f"{m}: 2x MAC columns slower")
    if tot[("bw0.5x", m)] < tot[("base", m)]: bad.append(f"{m}: half the bandwidth faster")
if not tot[("bw0.5x", "cnn")] > tot[("base", "cnn")] > tot[("mac2x", "cnn")]: bad.append("cnn: no strict ordering")
layers = {r["layer"] for r in rows if r["model"] == "cnn" and r["layer.unit"] == "npu"}
if len(layers) < 5: bad.append(f"cnn has only {len(layers)} NPU layers in the CSV")
hashes = {p["target_hash"] for p in pts}
if len(hashes) != 3: bad.append(f"{len(hashes)} distinct target hashes for 3 variants")
for b in bad: print("FAIL sweep:", b)
if not bad: print("ok   sweep: 9 points, rows per layer with their parameters; cycles move with MACs and bandwidth")
sys.exit(1 if bad else 0)
PYEOF
for p in cycles energy roofline pareto pareto_energy; do
    [ -s $W/j2/plots/$p.png ] || bad "no $p.png ($(tail -1 $W/j2.log))"
done
[ $fail = 0 ] && ok "plots drawn: cycles, energy, roofline, pareto (area), pareto_energy"
# the Pareto x axis is each point's area from its stats: mac2x is larger, bw0.5x the base's
$PY - $W/j2/plots/pareto.dat $W/j2/sweep.json <<'PYEOF' || fail=1
import json, shlex, sys
pts = json.load(open(sys.argv[2]))["points"]
area = {(p["model"], p["variant"]): p["totals"]["area.total_mm2"] for p in pts}
xs = {}
model = None
for line in open(sys.argv[1]):
    if line.startswith("# "):
        model = line[2:].split(":")[0]
    elif line.strip() and model:
        x, _, lab = shlex.split(line)
        xs[(model, lab)] = float(x)
bad = [k for k, a in area.items() if abs(xs.get(k, -1) - a) > 1e-9]
if not area[("cnn", "mac2x")] > area[("cnn", "base")] == area[("cnn", "bw0.5x")]:
    bad.append("areas do not follow the MAC array")
print(("FAIL sweep: pareto x is not the stats' area: %s" % bad[:3]) if bad else
      "ok   sweep: pareto.png's x axis is each point's area.total_mm2 (mac2x %.3f > base %.3f mm^2)" %
      (area[("cnn", "mac2x")], area[("cnn", "base")]))
sys.exit(1 if bad else 0)
PYEOF
# resume: two points lost (as if the sweep was killed), a third half written
cp -r $W/j2 $W/res
rm $W/res/sweep.csv
rm $W/res/points/0001-*/result.json $W/res/points/0005-*/result.json
for f in $W/res/points/0007-*/result.json; do echo '{"key": "trunc' > $f; done
$S --build $B -j 2 --no-plots $W/small.yaml -o $W/res >$W/res.log 2>&1 || bad "resume: $(tail -3 $W/res.log)"
grep -q "6 done before, 3 to run" $W/res.log && ok "an interrupted sweep resumes: 6 points kept, 3 run" ||
    bad "resume did not skip the finished points: $(head -1 $W/res.log)"
cmp -s $W/res/sweep.csv $W/j2/sweep.csv && ok "the resumed sweep's CSV is the full one" || bad "resumed CSV differs"
# a changed sweep reruns what changed only (the point's key holds its whole spec)
sed "s/npu.dram.mb_per_s: 2000/npu.dram.mb_per_s: 1000/" $W/small.yaml > $W/changed.yaml
$S --build $B -j 2 --no-plots $W/changed.yaml -o $W/res >$W/ch.log 2>&1 || bad "changed: $(tail -3 $W/ch.log)"
grep -q "6 done before, 3 to run" $W/ch.log && ok "a changed variant reruns only its points" || bad "changed: $(head -1 $W/ch.log)"
# errors name the key
printf 'models: [{name: a, onnx: nope.onnx, input: x.npy}]\n' > $W/bad1.yaml
printf 'variants: [{name: a}]\nmodels: []\n' > $W/bad2.yaml
printf 'axis: {}\nmodels: []\n' > $W/bad3.yaml
for spec in "bad1:models[0].onnx" "bad2:variants[0]: missing key 'set'" "bad3:unknown key 'axis'"; do
    f=${spec%%:*}; want=${spec#*:}
    msg=$($S --build $B $W/$f.yaml 2>&1) && bad "$f accepted"
    echo "$msg" | grep -qF -- "$want" || bad "$f: message lacks '$want': $msg"
done
[ $fail = 0 ] && ok "bad sweep files are refused naming the key"
# every option the parser takes is in its docs/cli.md section (which --help prints)
$PY - <<'PYEOF' || fail=1
import re, sys
code = open("tools/npusweep/npusweep").read()
opts = {o for pair in re.findall(r'add_argument\("(-[a-z0-9-]+)"(?:, "(--[a-z0-9-]+)")?', code) for o in pair if o}
doc = re.search(r"^## npusweep\n(.*?)(?=^## )", open("docs/cli.md").read(), re.M | re.S).group(1)
missing = sorted(o for o in opts if f"`{o}" not in doc)
if len(opts) < 8 or missing: print(f"FAIL sweep: options not in docs/cli.md: {missing} (found {sorted(opts)})"); sys.exit(1)
print(f"ok   sweep: {len(opts)} options of npusweep in docs/cli.md")
PYEOF
exit $fail
