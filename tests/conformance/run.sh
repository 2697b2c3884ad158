#!/bin/sh
# ONNX backend node test conformance of the float reference (docs/testing.md).
# usage: tests/conformance/run.sh BUILD [--all] [PATTERN...]
#   default: the cases in tests/conformance/supported.txt; exits 1 if one fails
#   --all:   every node test whose ops are all in src/ir/ops.def; prints PASS or
#            FAIL for each and writes draft lists next to BUILD/conformance
#   PATTERN: only cases whose name matches (shell glob), e.g. 'test_conv*'
# NPUREF=path overrides BUILD/npuref (e.g. tools/ort/as_npuref.sh to check the
# harness against onnxruntime); CONF_JOBS (2) and CONF_TIMEOUT (60 s) tune it.
set -eu
[ $# -ge 1 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$1
shift
py=${PYTHON:-/usr/bin/python3}
npuref=${NPUREF:-$build/npuref}
if [ ! -x "$npuref" ]; then
    if [ -z "${NPUREF:-}" ] && [ ! -f "$root/src/driver/npuref_main.c" ]; then
        echo "conformance: 0 passed, 0 failed, 1 skipped (npuref is not part of the build yet)"
        [ "${NPUCC_ALLOW_SKIP:-0}" = 1 ]; exit
    fi
    echo "conformance: $npuref is not built" >&2
    exit 1
fi
case $npuref in /*) ;; *) npuref=$(pwd)/$npuref ;; esac
data=$build/conformance
results=$build/conformance-out
"$py" "$here/compare.py" selftest
"$here/gen.sh" "$data"
rm -rf "$results"
mkdir -p "$results"
"$py" "$here/compare.py" select "$data" "$@" >"$results/cases"
echo "conformance: running $(wc -l <"$results/cases") node tests with $npuref"
xargs -P "${CONF_JOBS:-2}" -n 1 "$here/run_case.sh" "$data" "$results" "$npuref" <"$results/cases"
exec "$py" "$here/compare.py" report "$data" "$results" "$@"
