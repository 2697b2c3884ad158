#!/bin/sh
# npuref's command line on top of onnxruntime, to check a harness written for
# npuref (tests/conformance/run.sh, bench/float_accuracy.py) against ORT:
#   as_npuref.sh MODEL.onnx --input X.npy ... --output Y.npy ...
set -eu
model=$1
shift
ins="" outs=""
while [ $# -gt 0 ]; do
    case $1 in
    --input) ins="$ins $2" ;;
    --output) outs="$outs $2" ;;
    *) echo "as_npuref.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift 2
done
# shellcheck disable=SC2086  # file names from our own harness: no spaces
exec node "$(dirname "$0")/run.js" "$model" $ins $outs
