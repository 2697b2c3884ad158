#!/bin/sh
# The node tests npuref passes, compiled for edge-v1 (calibrated on their own
# inputs) and run on npusim: bit-exact with `npuref MODEL.npub` and within a
# quantization tolerance of the expected output (docs/testing.md).
# usage: tests/conformance/run_sim.sh BUILD [PATTERN...]
# SIM_JOBS (2) and SIM_TIMEOUT (60 s) tune it.
set -eu
[ $# -ge 1 ] || { sed -n '2,6p' "$0" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
"$here/gen.sh" "$1/conformance"
exec "${PYTHON:-/usr/bin/python3}" "$here/sim.py" "$@"
