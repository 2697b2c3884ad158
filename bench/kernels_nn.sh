#!/bin/sh
# Builds and runs the nn kernel micro-benchmark: bench/kernels_nn.sh [BUILD] [REPS]
set -e
B=${1:-build}
mkdir -p "$B/bench"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -I. bench/kernels_nn.c kernels/nk_nn*.c -lm -o "$B/bench/kernels_nn"
"$B/bench/kernels_nn" ${2:-5}
