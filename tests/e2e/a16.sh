#!/bin/sh
# A16W8 (--abits 16, docs/numerics.md "A16W8"): small models of
# tests/e2e/gen_models.py compiled with int16 activations run on npusim bit
# for bit as `npuref MODEL.npub`, their ops on the NPU (edge-v1), and their
# output SQNR against the float model beats the same model at int8: by
# 15 dB on tests/e2e/gen_a16.py's wide-range fixture (a16net), by 2 dB on
# the random-weight models, where the int8 weights bound it; per-layer --layer-bits NAME=a16 mixes widths through
# npu.Requantize; npu-v1-narrow (no a16 fields) runs the int16 ops on the host;
# host concats whose inputs the memory plan wrote in place (a16dense of
# gen_a16.py, concat) run and are bit-exact.
# Usage: tests/e2e/a16.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/a16
PY=/usr/bin/python3
mkdir -p $W
. tests/summary.sh
fail=0 pass=0 skip=0
M=$W/models
if [ ! -f $M/.stamp ] || [ tests/e2e/gen_models.py -nt $M/.stamp ] || [ tests/e2e/gen_a16.py -nt $M/.stamp ]; then
    $PY tests/e2e/gen_models.py $M >/dev/null && $PY tests/e2e/gen_a16.py $M && touch $M/.stamp || exit 1
fi

# name target tag flags...: compile, simulate, reference; prints the SQNR (dB) against float
run() {
    name=$1 t=$2 tag=$3; shift 3
    o=$W/$name.$t.$tag
    $B/npucc --target $t --calib $M/${name}_calib -o $o.npub --report "$@" $M/$name.onnx >$o.rep 2>&1 ||
        { echo "npucc: $(tail -2 $o.rep)"; return 1; }
    $B/npusim $o.npub --input $M/${name}_input.npy --output $o.sim.npy >$o.log 2>&1 ||
        { echo "npusim: $(tail -2 $o.log)"; return 1; }
    $B/npuref $o.npub --input $M/${name}_input.npy --output $o.ref.npy >>$o.log 2>&1 ||
        { echo "npuref: $(tail -2 $o.log)"; return 1; }
    [ -f $M/$name.float.npy ] || $B/npuref $M/$name.onnx --input $M/${name}_input.npy --output $M/$name.float.npy >/dev/null
    $PY - $o.sim.npy $o.ref.npy $M/$name.float.npy <<'PY'
import sys
import numpy as np
s, r, f = (np.load(p) for p in sys.argv[1:4])
if s.shape != r.shape or (s.view(np.uint8) != r.view(np.uint8)).any():
    sys.exit("npusim != npuref MODEL.npub")
e = ((s.astype(np.float64) - f) ** 2).sum()
print(f"{10 * np.log10((f.astype(np.float64) ** 2).sum() / max(e, 1e-30)):.1f}")
PY
}

ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

for nm in a16net:15 invres:2 dwconv:2 lut:2 conv:2 fc:2; do
    name=${nm%:*} MARGIN=${nm#*:}
    if ! q16=$(run $name edge-v1 a16 --abits 16) || ! q8=$(run $name edge-v1 a8 --abits 8); then
        bad "a16/$name: ${q16:-} ${q8:-}"; continue
    fi
    # every Conv/Add/Lut on the NPU: only the float boundary on the host
    hostops=$(grep -E '^[^ ]+ +(Conv|Gemm|Add|npu.Lut|npu.Requantize|MaxPool|GlobalAveragePool) +host' $W/$name.edge-v1.a16.rep | wc -l)
    if [ "$hostops" -ne 0 ]; then
        bad "a16/$name: $hostops int16 ops on the host on edge-v1"; continue
    fi
    if $PY -c "import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) + $MARGIN else 1)" $q16 $q8; then
        ok "a16/$name: bit-exact, SQNR to float ${q16} dB at A16W8, ${q8} dB at int8"
    else
        bad "a16/$name: SQNR ${q16} dB at A16W8 is not ${MARGIN} dB above int8's ${q8} dB"
    fi
done

# per layer: only conv3 at 16 bits; the rest int8, npu.Requantize between
if q=$(run invres edge-v1 mixed --layer-bits conv3=a16); then
    n=$(grep -c 'npu.Requantize' $W/invres.edge-v1.mixed.rep)
    [ "$n" -ge 1 ] && ok "a16/invres --layer-bits conv3=a16: bit-exact, $n width conversions, SQNR $q dB" ||
        bad "a16/invres --layer-bits conv3=a16: no width conversion in the report"
else
    bad "a16/invres --layer-bits conv3=a16: $q"
fi

# concats written in place (docs/memplan.md "Concat elision") run on the
# host at A16W8: QCONCAT must take each input already in its slice of the
# output, at byte offsets of 2-byte elements (issue 18: the runtime refused
# the DenseNet kind's binary, "output slot 2 overlaps input slot 0"); at
# int8 the same on the host with --partition host
for c in a16dense:a16:--abits_16 concat:a16:--abits_16 a16dense:host8:--partition_host; do
    name=${c%%:*} rest=${c#*:}
    tag=${rest%%:*} flags=$(echo ${rest#*:} | tr _ ' ')
    # shellcheck disable=SC2086
    if ! q=$(run $name edge-v1 $tag $flags); then
        bad "a16/$name $flags, concats in place: $q"; continue
    fi
    el=$(grep -o 'concats: [0-9]* of [0-9]* written in place' $W/$name.edge-v1.$tag.rep)
    n=$(echo "$el" | awk '{print $2}')
    hosts=$(grep -cE '^[^ ]+ +Concat +host' $W/$name.edge-v1.$tag.rep)
    if [ "${n:-0}" -ge 1 ] && [ "$hosts" -ge 1 ]; then
        ok "a16/$name $flags: bit-exact, ${el#concats: }, $hosts on the host, SQNR $q dB"
    else
        bad "a16/$name $flags: no host concat written in place (${el:-no report line}, $hosts on the host)"
    fi
done

# an ISA without a16 fields: the int16 ops on the host, still bit-exact
if q=$(run conv edge-v1-narrow a16 --abits 16); then
    ok "a16/conv on edge-v1-narrow (host int16 kernels): bit-exact, SQNR $q dB"
else
    bad "a16/conv on edge-v1-narrow: $q"
fi

summary a16
