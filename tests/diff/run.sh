#!/bin/sh
# The differential run (docs/testing.md "Differential run"): COUNT random small
# models (tests/diff/gen.py, SEED) through npuref against onnxruntime and
# compiled for edge-v1 against npuref MODEL.npub on npusim; fails on any
# difference that is not one of the decided kinds run.py names.
# usage: tests/diff/run.sh BUILD [COUNT [SEED]]   (make test: 240 models, seed 24;
#        make difftest: DIFF_COUNT, DIFF_SEED, a new seed each run by default)
set -eu
[ $# -ge 1 ] || { sed -n '2,8p' "$0" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=$1
count=${2:-240}
seed=${3:-24}
py=${PYTHON:-/usr/bin/python3}
if ! (cd "$here/../../tools/ort" && node -e "require('onnxruntime-node')") >/dev/null 2>&1; then
    echo "diff: onnxruntime-node is missing (make deps installs it): skipped"
    [ "${NPUCC_ALLOW_SKIP:-0}" = 1 ]; exit
fi
dir=$build/diff/seed$seed
rm -rf "$dir"
"$py" "$here/gen.py" "$dir" "$seed" "$count"
exec "$py" "$here/run.py" "$build" "$dir"
