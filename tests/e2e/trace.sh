#!/bin/sh
# npusim --trace (Chrome/Perfetto JSON) on a model with host steps: valid
# JSON; every event has ph, ts, pid and tid; X events have a duration and
# never overlap on their track; B/E balanced; a process and thread name for
# every track used; time 0 at the traced inference; the host track holds the
# runtime's steps; the DRAM bus tracks' bytes add up to the stats' DRAM
# traffic; bandwidth and MAC-utilization counters; --trace-all has every
# inference one after the other, --trace-inference N only inference N.
# Usage: tests/e2e/trace.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/trace
rm -rf $W && mkdir -p $W
PY=/usr/bin/python3
M=$B/e2e/models
[ -f $M/hostop.onnx ] || $PY tests/e2e/gen_models.py $M >/dev/null || exit 1
fail=0
$B/npucc --target edge-v1 --calib $M/hostop_calib $M/hostop.onnx -o $W/m.npub >/dev/null || { echo "FAIL trace: npucc"; exit 1; }
in=$M/hostop_input.npy # 4 inferences
$B/npusim $W/m.npub --input $in --trace $W/first.json --stats-json $W/s.json >/dev/null || { echo "FAIL trace: npusim --trace"; fail=1; }
$B/npusim $W/m.npub --input $in --trace $W/all.json --trace-all >/dev/null || { echo "FAIL trace: --trace-all"; fail=1; }
$B/npusim $W/m.npub --input $in --trace $W/two.json --trace-inference 2 >/dev/null || { echo "FAIL trace: --trace-inference"; fail=1; }
if $B/npusim $W/m.npub --input $in --trace $W/bad.json --trace-inference 9 >/dev/null 2>&1 || [ -e $W/bad.json ]; then
    echo "FAIL trace: --trace-inference past the batch accepted"; fail=1
fi
$PY - $W <<'PYEOF' || fail=1
import json, sys
from collections import defaultdict
w = sys.argv[1]
bad = []
def check(name, want_inferences):
    try:
        ev = json.load(open(f"{w}/{name}.json"))["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        bad.append(f"{name}: not a trace document: {e}"); return None
    names, tracks, be = {}, defaultdict(list), defaultdict(int)
    for e in ev:
        if any(k not in e for k in ("ph", "ts", "pid", "tid")):
            bad.append(f"{name}: event without ph/ts/pid/tid: {e}"); return None
        if e["ph"] == "M":
            names[(e["name"], e["pid"], e["tid"] if e["name"] == "thread_name" else 0)] = e["args"]["name"]
        elif e["ph"] == "X":
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0: bad.append(f"{name}: X without dur: {e}")
            tracks[(e["pid"], e["tid"])].append(e)
        elif e["ph"] in "BE":
            be[(e["pid"], e["tid"])] += 1 if e["ph"] == "B" else -1
    if any(be.values()): bad.append(f"{name}: unbalanced B/E")
    for (pid, tid), es in tracks.items():
        if ("process_name", pid, 0) not in names: bad.append(f"{name}: pid {pid} has no process_name")
        if ("thread_name", pid, tid) not in names: bad.append(f"{name}: track {pid}/{tid} has no thread_name")
        es.sort(key=lambda e: e["ts"])
        if pid != 1:  # the host pid nests inferences and steps on different tids; every track is flat
            for a, b in zip(es, es[1:]):
                if b["ts"] < a["ts"] + a["dur"] - 1e-3:
                    bad.append(f"{name}: overlapping events on {names.get(('thread_name', pid, tid))}"); break
    ts = [e["ts"] for e in ev if e["ph"] != "M"]
    if min(ts) != 0: bad.append(f"{name}: time starts at {min(ts)}, not 0")
    host = [e for es in tracks.values() for e in es if e.get("cat") == "host_step"]
    if not host: bad.append(f"{name}: no host steps on the host track")
    inf = sorted((e for es in tracks.values() for e in es if e.get("cat") == "inference"), key=lambda e: e["ts"])
    if [e["name"] for e in inf] != [f"inference {i}" for i in want_inferences]:
        bad.append(f"{name}: inferences {[e['name'] for e in inf]}, expected {want_inferences}")
    for a, b in zip(inf, inf[1:]):
        if b["ts"] < a["ts"] + a["dur"] - 1e-3: bad.append(f"{name}: inferences overlap")
    counters = {e["name"] for e in ev if e["ph"] == "C"}
    for c in ("DRAM bandwidth", "MAC utilization"):
        if c not in counters: bad.append(f"{name}: no '{c}' counter")
    util = [e["args"]["%"] for e in ev if e["ph"] == "C" and e["name"] == "MAC utilization"]
    if not max(util) > 0 or max(util) > 100.0001: bad.append(f"{name}: MAC utilization out of (0, 100]: {max(util)}")
    return ev
ev = check("first", [0])
check("all", [0, 1, 2, 3])
two = check("two", [2])
if ev:
    s = json.load(open(f"{w}/s.json"))
    bus = sum(e["args"]["bytes"] for e in ev if e["ph"] == "X" and e["pid"] == 3 and e.get("cat") == "dram")
    want = s["dram"]["read_bytes"] + s["dram"]["write_bytes"]
    if bus != want or not bus: bad.append(f"DRAM bus bytes {bus}, stats say {want}")
    npu = [e for e in ev if e["ph"] == "X" and e["pid"] == 2]
    if not npu: bad.append("no NPU unit events")
for b in bad: print("FAIL trace:", b)
if not bad: print("ok   trace: structure, names, time 0, host steps, bus bytes = stats, counters; --trace-all, --trace-inference")
sys.exit(1 if bad else 0)
PYEOF
exit $fail
