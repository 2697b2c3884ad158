#!/bin/sh
# make bench: every benchmark in bench/, each printing its own table.
# usage: bench/run.sh BUILD
set -u
[ $# -eq 1 ] || { echo "usage: $0 BUILD" >&2; exit 2; }
here=$(dirname "$0")
status=0
"${PYTHON:-/usr/bin/python3}" "$here/float_accuracy.py" "$1" || status=1
# further benchmarks (speed vs onnxruntime, ...) add themselves here
for b in "$here"/*_bench.sh; do
    [ -x "$b" ] || continue
    echo
    "$b" "$1" || status=1
done
exit $status
