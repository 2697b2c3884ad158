#!/bin/sh
# Runs npuref on every data set of one generated node test (called by run.sh
# through xargs). Writes RESULTS/CASE/test_data_set_N/output_K.npy and, per data
# set, .rc (npuref's exit status; 124 = timed out) and .err (its stderr).
# usage: run_case.sh DATA RESULTS NPUREF CASE
set -u
data=$1 results=$2 npuref=$3 case=$4
dir=$data/node/$case
for ds in "$dir"/test_data_set_*; do
    [ -d "$ds" ] || continue
    n=$(basename "$ds")
    out=$results/$case/$n
    mkdir -p "$out"
    set --
    i=0
    while [ -f "$ds/input_$i.npy" ]; do set -- "$@" --input "$ds/input_$i.npy"; i=$((i + 1)); done
    i=0
    while [ -f "$ds/output_$i.pb" ]; do set -- "$@" --output "$out/output_$i.npy"; i=$((i + 1)); done
    timeout "${CONF_TIMEOUT:-60}" "$npuref" "$dir/model.onnx" "$@" >"$out.out" 2>"$out.err"
    echo $? >"$out.rc"
done
exit 0
