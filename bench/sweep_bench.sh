#!/bin/sh
# The architect's sweep at full size: 6 variants of edge-v1 (MAC array x2 and
# x0.5, SRAM x0.5, DRAM bandwidth x2 and x0.5, and the base) x 3 models
# (Fashion-MNIST CNN and MobileNetV2, MobileNetV2 at 96x96), run with
# npusweep -j 2 and then as a Slurm job array on a single-node cluster
# started here (as root); the two CSVs must be identical. Prints the cycles
# per variant and where the plots are. Uses ../shared/models when present.
# usage: bench/sweep_bench.sh BUILD
set -u
B=$1
W=$B/bench/sweep
S=${SHARED:-/work/shared/models}
[ -d "$S" ] || S=$(dirname "$0")/../../shared/models
if [ ! -f "$S/zoo/mobilenet_v2_96.onnx" ] || [ ! -d "$S/fmnist/calib" ]; then
    echo "sweep_bench: skipped: no shared models at $S"; exit 0
fi
S=$(cd "$S" && pwd)
rm -rf $W && mkdir -p $W/calib96
W=$(cd $W && pwd)
ln -s $S/zoo/in96.npy $W/calib96/in96.npy
cat > $W/arch.yaml <<YAML
name: arch
base: edge-v1
variants:
  - {name: base, set: {}}
  - {name: mac2x, set: {npu.mac.cols: 32}}
  - {name: mac0.5x, set: {npu.mac.cols: 8}}
  - {name: sram0.5x, set: {npu.sram.bytes: 256Ki}}
  - {name: bw2x, set: {npu.dram.bytes_per_cycle: 16}}
  - {name: bw0.5x, set: {npu.dram.bytes_per_cycle: 4}}
models:
  - {name: fmnist_cnn, onnx: $S/fmnist/cnn.onnx, calib: $S/fmnist/calib, input: $S/fmnist/calib/sample_000.npy}
  - {name: fmnist_mbv2, onnx: $S/fmnist/mbv2.onnx, calib: $S/fmnist/calib, input: $S/fmnist/calib/sample_000.npy}
  - {name: mobilenet_v2_96, onnx: $S/zoo/mobilenet_v2_96.onnx, calib: $W/calib96, input: $S/zoo/in96.npy}
YAML
SW=tools/npusweep/npusweep
now() { date +%s.%N; }
t0=$(now)
$SW --build $B -j 2 $W/arch.yaml -o $W/local || { echo "sweep_bench: local sweep failed"; exit 1; }
t1=$(now)
echo "local engine, -j 2: $(echo "$t1 - $t0" | bc) s"
status=0
if [ "$(id -u)" = 0 ] && { command -v slurmctld >/dev/null 2>&1 || [ -x /usr/sbin/slurmctld ]; }; then
    C=$(cd $W && pwd)/cluster
    trap 'tools/npusweep/slurm_local.sh stop $C' EXIT INT TERM
    if tools/npusweep/slurm_local.sh start $C >$W/cluster.log 2>&1; then
        export SLURM_CONF=$C/slurm.conf
        t2=$(now)
        $SW --build $B --engine slurm --no-plots $W/arch.yaml -o $W/slurm || status=1
        t3=$(now)
        echo "slurm engine (single-node job array): $(echo "$t3 - $t2" | bc) s"
        if cmp -s $W/local/sweep.csv $W/slurm/sweep.csv; then
            echo "CSV identical for the local and slurm engines: $(wc -l < $W/local/sweep.csv) lines, $(ls $W/slurm/slurm/*.out | wc -l) array tasks"
        else
            echo "sweep_bench: the CSVs differ"; status=1
        fi
    else
        echo "sweep_bench: slurm part skipped: the cluster did not start ($(tail -1 $W/cluster.log))"
    fi
else
    echo "sweep_bench: slurm part skipped: needs root and slurmctld"
fi
/usr/bin/python3 - $W/local/sweep.json <<'PY'
import json, sys
pts = json.load(open(sys.argv[1]))["points"]
models = list(dict.fromkeys(p["model"] for p in pts))
variants = list(dict.fromkeys(p["variant"] for p in pts))
tot = {(p["variant"], p["model"]): p["totals"] for p in pts}
print(f"{'variant':10s}" + "".join(f"{m + ' total':>24s}{'npu':>10s}" for m in models))
for v in variants:
    row = f"{v:10s}"
    for m in models:
        t, b = tot[(v, m)], tot[("base", m)]
        row += f"{t['cycles.total']:>14d} ({t['cycles.total'] / b['cycles.total']:5.2f}x){t['cycles.npu'] / b['cycles.npu']:9.2f}x"
    print(row)
PY
echo "plots: $W/local/plots/{cycles,energy,roofline,pareto,pareto_energy}.png"
exit $status
