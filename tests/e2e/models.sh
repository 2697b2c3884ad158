#!/bin/sh
# Every model runs (issue 13): the torch-exported model kinds of
# tests/models/gen_models.py (random weights, generated into BUILD/models/gen
# when the generator changed) and the trained Fashion-MNIST models committed
# under tests/models/fmnist_*/, each compiled for edge-v1, run on npusim and
# checked bit for bit against `npuref MODEL.npub`; the random models also
# against the float model (cosine), the trained ones by int8 top-1 on npusim
# against float top-1 (npuref MODEL.onnx) over the first N test images.
# One line per model, then `N passed, N failed`; exit 1 on any failure.
# Usage: tests/e2e/models.sh [BUILD] [NAME ...]   (N: env TOP1_IMAGES, 1000)
set -u
B=${1:-build}
[ $# -gt 0 ] && shift
W=$B/models
G=$W/gen
PY=/usr/bin/python3
N=${TOP1_IMAGES:-1000}
T=edge-v1
fail=0 pass=0
mkdir -p $W

# minimum cosine of the int8 logits to the float ones, per random model. The
# weights are untrained: nothing in a random deep net makes the logits robust
# to the per-layer rounding noise the way training does, so it compounds
# with depth, and 10 logits make the cosine itself a noisy estimate.
# Thresholds sit below what main measured with margin (tests/models/README.md);
# a wrong scale, zero point or layout gives a cosine near 0 or negative.
cos_of() {
    case $1 in
        dense_block|vit) echo 0.95 ;;
        efficientnet_b0) echo 0.90 ;;
        densenet121|shufflenet_v2|googlenet|mnasnet) echo 0.80 ;;
        *) echo 0.90 ;;
    esac
}
RANDOM_MODELS="dense_block densenet121 vit efficientnet_b0 shufflenet_v2 googlenet mnasnet"
TRAINED_MODELS="fmnist_dense fmnist_vit fmnist_mbv2 fmnist_se"
NAMES=${*:-$RANDOM_MODELS $TRAINED_MODELS}

res() { # PASS|FAIL, name, message (one line, the tool's own "npucc: " prefix dropped)
    printf '%s %s: %s\n' "$1" "$2" "$(echo "$3" | sed 's/^\(npucc\|npusim\|npuref\): //' | tr '\n' ' ' | sed 's/ *$//' | cut -c 1-1500)"
    if [ "$1" = PASS ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}

# the generator's inputs decide whether to regenerate
stamp=$(cat tests/models/gen_models.py tests/models/nets.py | cksum)
gen_err=
if [ "$(cat $G/stamp 2>/dev/null)" != "$stamp" ]; then
    rm -rf $G
    if gen_err=$($PY tests/models/gen_models.py $G 2>&1); then echo "$stamp" > $G/stamp
    else gen_err="gen_models.py failed (needs python3-torch, python3-torchvision): $(echo "$gen_err" | tail -1)"; fi
fi

compile_run() { # name, model.onnx, calib dir, input.npy -> $o/{npub,sim,ref}; 0 when all ran
    o=$W/$T/$1; mkdir -p $o
    if ! msg=$($B/npucc --target $T --calib $3 -o $o/model.npub $2 2>&1); then res FAIL $1 "npucc: $msg"; return 1; fi
    if ! msg=$($B/npusim $o/model.npub --input $4 --output $o/sim.npy --stats-json $o/sim.json 2>&1); then
        res FAIL $1 "npusim: $msg"; return 1; fi
    if ! msg=$($B/npuref $o/model.npub --input $4 --output $o/ref.npy 2>&1); then res FAIL $1 "npuref npub: $msg"; return 1; fi
    if ! msg=$($B/npuref $2 --input $4 --output $o/float.npy 2>&1); then res FAIL $1 "npuref onnx: $msg"; return 1; fi
}

cycles() { # the simulated cycles per inference and the host's share, for the result line
    $PY -c "import json,sys; c=json.load(open(sys.argv[1]))['cycles']
print(f\"; {c['total']} cycles, host {100 * c['host'] / max(1, c['total']):.1f}%\")" $o/sim.json 2>/dev/null
}

random_model() {
    m=$G/$1
    if [ -n "$gen_err" ] || [ ! -f $m/model.onnx ]; then res FAIL $1 "no model: ${gen_err:-$m/model.onnx missing}"; return; fi
    compile_run $1 $m/model.onnx $m/calib $m/input.npy || return
    if msg=$($PY tests/e2e/compare.py $o/sim.npy $o/ref.npy $o/float.npy $(cos_of $1) 2>&1); then res PASS $1 "$msg$(cycles)"
    else res FAIL $1 "$msg"; fi
}

trained_model() {
    d=tests/models/$1
    x=$W/fmnist_x$N.npy y=$W/fmnist_y$N.npy
    if [ ! -f $x ]; then
        $PY tools/fmnist_npy.py /usr/share/datasets/fashion-mnist $W/fmnist_x.npy $W/fmnist_y.npy &&
        $PY -c "import numpy as np,sys; n=int(sys.argv[1]); [np.save(f'$W/fmnist_{k}{n}.npy', np.load(f'$W/fmnist_{k}.npy')[:n]) for k in 'xy']" $N ||
        { res FAIL $1 "no test set (dataset-fashion-mnist)"; return; }
    fi
    compile_run $1 $d/model.onnx $d/calib $x || return
    if msg=$($PY tests/e2e/compare.py $o/sim.npy $o/ref.npy $o/float.npy --top1 $y 1.0 2>&1); then res PASS $1 "$msg$(cycles)"
    else res FAIL $1 "$msg"; fi
}

for n in $NAMES; do
    case " $TRAINED_MODELS " in *" $n "*) trained_model $n ;; *) random_model $n ;; esac
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
