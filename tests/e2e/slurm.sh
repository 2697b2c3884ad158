#!/bin/sh
# npusweep --engine slurm against a real single-node Slurm cluster that this
# test starts on loopback (tools/npusweep/slurm_local.sh: munged, slurmctld,
# slurmd in a private folder) and stops: the small sweep (3 variants x 3
# models) as a job array, one task per point, gives the same CSV as the local
# engine with -j 2. Skips (clearly) only when not root.
# Usage: tests/e2e/slurm.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/slurm
. tests/summary.sh
if [ "$(id -u)" != 0 ]; then
    echo "skip slurm: needs root to run slurmctld/slurmd as SlurmUser=root (run make test as root)"
    pass=0 fail=0 skip=1
    summary slurm
    exit $?
fi
rm -rf $W && mkdir -p $W
S=tools/npusweep/npusweep
fail=0
. tests/e2e/sweep_gen.sh
C=$(cd $W && pwd)/cluster
trap 'tools/npusweep/slurm_local.sh stop $C' EXIT INT TERM
tools/npusweep/slurm_local.sh start $C > $W/start.log 2>&1 ||
    { echo "FAIL slurm: the cluster did not start: $(tail -3 $W/start.log)"; exit 1; }
export SLURM_CONF=$C/slurm.conf
$S --build $B -j 2 --no-plots $W/small.yaml -o $W/local >$W/local.log 2>&1 ||
    { echo "FAIL slurm: local engine: $(tail -3 $W/local.log)"; fail=1; }
$S --build $B --engine slurm --no-plots $W/small.yaml -o $W/slurm >$W/slurm.log 2>&1 ||
    { echo "FAIL slurm: slurm engine: $(tail -3 $W/slurm.log)"; fail=1; }
n=$(ls $W/slurm/slurm/*.out 2>/dev/null | wc -l)
[ "$n" = 9 ] || { echo "FAIL slurm: $n task logs, expected 9 (one array task per point)"; fail=1; }
grep -q "submitted job array" $W/slurm.log || { echo "FAIL slurm: no job array submitted"; fail=1; }
if cmp -s $W/local/sweep.csv $W/slurm/sweep.csv && [ -s $W/slurm/sweep.csv ]; then
    echo "ok   slurm: a 9-task job array on the single-node cluster gives the local engine's CSV ($(wc -l < $W/slurm/sweep.csv) lines)"
else
    echo "FAIL slurm: the CSVs of the slurm and local engines differ"; fail=1
fi
exit $fail
