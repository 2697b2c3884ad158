#!/bin/sh
# Regenerates the onnxruntime goldens tests/data/ort/ of the e2e models (run by
# hand after a change to tests/e2e/gen_models.py; needs `make deps`).
# Usage: tests/e2e/ort_goldens.sh [BUILD]
set -eu
B=${1:-build}
M=$B/e2e/models
/usr/bin/python3 tests/e2e/gen_models.py $M
# every model with a shipped input but bigconv (a 512 KB output; the others
# cover its ops)
names=$(cd $M && ls *_input.npy | sed 's/_input\.npy$//' | grep -vx bigconv)
rm -f tests/data/ort/*.npy tests/data/ort/manifest.txt
# shellcheck disable=SC2086  # model names have no spaces
exec /usr/bin/python3 tests/e2e/ort_golden.py write $M $names
