#!/bin/sh
# Generates the ONNX backend node tests (Debian's python3-onnx) as .npy into
# OUTDIR; does nothing when OUTDIR's stamp matches the installed onnx.
# usage: tests/conformance/gen.sh OUTDIR
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/gen.py" "$1"
