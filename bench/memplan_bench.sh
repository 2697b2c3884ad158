#!/bin/sh
# Builds and runs the memory-plan benchmark: bench/memplan_bench.sh [BUILD]
# Models: the project's examples and, when present, ../shared/models (next to
# the repository; $NPUCC_MODELS overrides).
set -e
B=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
make -s -C "$root" BUILD="$B" "$B/libnpucc.a" "$B/libnpurt.a" >/dev/null
mkdir -p "$B/bench"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -I"$root" -I"$root/src" -I"$B/gen" \
    "$root/bench/memplan_bench.c" "$B/libnpucc.a" "$B/libnpurt.a" -lprotobuf-c -lyaml -lm -o "$B/bench/memplan_bench"
models=${NPUCC_MODELS:-}
if [ -z "$models" ]; then
    for d in "$root/../shared/models" "$root/../../shared/models"; do
        [ -d "$d" ] && { models=$d; break; }
    done
fi
set -- $(ls "$root"/examples/*/*.onnx 2>/dev/null)
[ -n "$models" ] && set -- "$@" $(find "$models" -name '*.onnx' | sort)
"$B/bench/memplan_bench" "$@"
