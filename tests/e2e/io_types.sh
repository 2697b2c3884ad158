#!/bin/sh
# Model I/O types (--input-type, --output-type; docs/cli.md). For small
# models on two targets: the int8 and the uint8 binaries run on npusim
# bit-exact with `npuref MODEL.npub`, and their outputs, dequantized with the
# scale and zero point of --stats-json, equal the float-I/O binary's outputs
# exactly when their inputs are the float input quantized the same way, with
# no host step left at their edges. The
# --emit c header of an int8 binary compiles and its macros hold the
# --stats-json values. QDQ models with int8/uint8 graph I/O (gen_io_qdq.py)
# compile without --calib, bit-exact, within one output step of the QDQ
# model's float evaluation. A float model behind an int8 input calibrates on
# int8 files. Wrong dtypes are refused, naming the file. Usage: io_types.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/io_types
PY=/usr/bin/python3
mkdir -p $W
fail=0 pass=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL io_types/$1"; fail=$((fail + 1)); }
M=$B/e2e/models
[ -f $M/conv.onnx ] && [ -f $M/residual.onnx ] || $PY tests/e2e/gen_models.py $M || exit 1
$PY tests/e2e/gen_io_qdq.py $W/qdq || exit 1

for t in edge-v1 edge-v1-narrow; do
    for m in conv residual hostop; do
        o=$W/$t.$m
        in=$M/${m}_input.npy
        if ! $B/npucc --target targets/$t.yaml --calib $M/${m}_calib -o $o.f.npub $M/$m.onnx >$o.log 2>&1 ||
           ! $B/npusim $o.f.npub --input $in --output $o.f.npy >>$o.log 2>&1; then
            bad "$t/$m float: $(tail -n 3 $o.log)"; continue
        fi
        for ty in int8 uint8; do
            oty=$ty
            if ! $B/npucc --target targets/$t.yaml --calib $M/${m}_calib --input-type $ty --output-type $oty \
                   --stats-json $o.$ty.json -o $o.$ty.npub $M/$m.onnx >>$o.log 2>&1; then
                bad "$t/$m $ty: npucc: $(tail -n 3 $o.log)"; continue
            fi
            # the input codes, as the binary's own quantizer makes them
            $PY - $in $o.$ty.json $o.$ty.in.npy <<'PY' || { bad "$t/$m $ty: input"; continue; }
import json, sys
import numpy as np
x, io = np.load(sys.argv[1]), json.load(open(sys.argv[2]))["io"]
i = [e for e in io if e["kind"] == "input"][0]
lo, hi, dt = (0, 255, np.uint8) if i["dtype"] == "uint8" else (-128, 127, np.int8)
q = np.clip(np.round(x / np.float32(i["scale"])) + i["zero_point"], lo, hi).astype(dt)
np.save(sys.argv[3], q)
PY
            if $B/npusim $o.$ty.npub --input $o.$ty.in.npy --output $o.$ty.sim.npy >>$o.log 2>&1 &&
               $B/npuref $o.$ty.npub --input $o.$ty.in.npy --output $o.$ty.ref.npy >>$o.log 2>&1 &&
               cmp -s $o.$ty.sim.npy $o.$ty.ref.npy &&
               $PY - $o.$ty.sim.npy $o.$ty.json $o.f.npy $oty >>$o.log 2>&1 <<'PY'; then ok; else bad "$t/$m $ty: $(tail -n 3 $o.log)"; fi
import json, sys
import numpy as np
q, io, f, ty = np.load(sys.argv[1]), json.load(open(sys.argv[2]))["io"], np.load(sys.argv[3]), sys.argv[4]
out = [e for e in io if e["kind"] == "output"][0]
assert q.dtype == np.dtype(ty) and out["dtype"] == ty, (q.dtype, out)
if ty == "float32":
    assert np.array_equal(q, f), "max diff %g" % np.abs(q - f).max()
    sys.exit(0)
host = [l["name"] for l in json.load(open(sys.argv[2]))["layers"] if l["unit"] == "host"]
assert not host, "int8/uint8 I/O still converts on the host: %s" % host
zp = out["zero_point"] - (128 if ty == "uint8" else 0)  # uint8 codes are the int8 ones + 128
codes = q.astype(np.int32) - (128 if ty == "uint8" else 0)
deq = (codes - zp).astype(np.float32) * np.float32(out["scale"])
assert deq.shape == f.shape, (deq.shape, f.shape)
assert np.array_equal(deq, f), "max diff %g" % np.abs(deq - f).max()
print("equal to the float-I/O binary")
PY
        done
    done
done

# the generated header: compiles, and its macros are the binary's
h=$W/hdr
$B/npucc --target edge-v1 --calib $M/conv_calib --input-type int8 --output-type uint8 --emit c \
    --stats-json $h.json -o $h.c $M/conv.onnx >$h.log 2>&1 || bad "header: npucc: $(tail -n 3 $h.log)"
cat >$h.main.c <<'EOF'
#include <stdio.h>
#include "hdr.h"
int main(void)
{
    static const int in_shape[] = hdr_INPUT0_SHAPE, out_shape[] = hdr_OUTPUT0_SHAPE;
    _Static_assert(hdr_INPUT_COUNT == 1 && hdr_OUTPUT_COUNT == 1, "one input, one output");
    _Static_assert(hdr_INPUT0_DTYPE == 5 && hdr_OUTPUT0_DTYPE == 6, "int8 in, uint8 out");
    _Static_assert(sizeof in_shape / sizeof in_shape[0] == hdr_INPUT0_RANK, "rank");
    _Static_assert(hdr_INPUT0_QUANTIZED && hdr_OUTPUT0_QUANTIZED, "quantized");
    printf("%s %.9g %d %d %u\n", hdr_INPUT0_NAME, (double)hdr_INPUT0_SCALE, hdr_INPUT0_ZERO_POINT, in_shape[1],
           hdr_INPUT0_BYTES);
    printf("%s %.9g %d %d %u\n", hdr_OUTPUT0_NAME, (double)hdr_OUTPUT0_SCALE, hdr_OUTPUT0_ZERO_POINT, out_shape[1],
           hdr_OUTPUT0_BYTES);
    return 0;
}
EOF
if cc -std=c11 -Wall -Wextra -Werror -I$W -o $h.main $h.main.c $h.c >>$h.log 2>&1 && $h.main >$h.out &&
   $PY - $h.json $h.out <<'PY' >>$h.log 2>&1; then ok; else bad "header: $(tail -n 5 $h.log)"; fi
import json, sys
import numpy as np
io = json.load(open(sys.argv[1]))["io"]
lines = open(sys.argv[2]).read().split("\n")
for e, line in zip(io, lines):
    name, scale, zp, c, nbytes = line.split()
    assert name == e["name"] and np.float32(scale) == np.float32(e["scale"]) and int(zp) == e["zero_point"], (line, e)
    assert int(c) == e["shape"][1] and int(nbytes) == int(np.prod(e["shape"])), (line, e)
print("macros match --stats-json")
PY

# QDQ models with quantized graph I/O: no calibration, their own scales
q=$W/qdq
for tag in s8 u8; do
    m=$q/io_$tag
    if $B/npucc --target edge-v1 --stats-json $m.json -o $m.npub $m.onnx >$m.log 2>&1 &&
       $B/npusim $m.npub --input ${m}_input.npy --output $m.sim.npy >>$m.log 2>&1 &&
       $B/npuref $m.npub --input ${m}_input.npy --output $m.ref.npy >>$m.log 2>&1 &&
       $B/npuref $m.onnx --input ${m}_input.npy --output $m.float.npy >>$m.log 2>&1 && cmp -s $m.sim.npy $m.ref.npy &&
       $PY - $m.sim.npy $m.float.npy $m.json $tag <<'PY' >>$m.log 2>&1; then ok; else bad "qdq io_$tag: $(tail -n 3 $m.log)"; fi
import json, sys
import numpy as np
a, b, io, tag = np.load(sys.argv[1]), np.load(sys.argv[2]), json.load(open(sys.argv[3]))["io"], sys.argv[4]
want = "uint8" if tag == "u8" else "int8"
assert a.dtype == np.dtype(want) and all(e["dtype"] == want and "scale" in e for e in io), (a.dtype, io)
d = np.abs(a.astype(np.int32) - b.astype(np.int32)).max()
assert d <= 1, "%d steps from the QDQ model" % d
PY
done
# the int8 QDQ model fed float32 (its input scale quantizes on the NPU)
m=$q/io_s8
$PY -c "
import numpy as np, onnx
from onnx import numpy_helper
i = {t.name: numpy_helper.to_array(t) for t in onnx.load('$m.onnx').graph.initializer}
q = np.load('${m}_input.npy').astype(np.float32)
np.save('$m.f_input.npy', ((q - float(i['xin_zp'])) * np.float32(i['xin_scale'])).astype(np.float32))"
if $B/npucc --target edge-v1 --input-type float32 -o $m.f.npub $m.onnx >$m.f.log 2>&1 &&
   $B/npusim $m.f.npub --input $m.f_input.npy --output $m.f.sim.npy >>$m.f.log 2>&1 &&
   cmp -s $m.f.sim.npy $m.sim.npy; then ok; else bad "qdq io_s8 --input-type float32: $(tail -n 3 $m.f.log)"; fi

# a float model behind an int8 input: calibrated on int8 codes; float files refused
m=$q/int8_input
if $B/npucc --target edge-v1 --calib ${m}_calib -o $m.npub $m.onnx >$m.log 2>&1 &&
   $B/npusim $m.npub --input ${m}_input.npy --output $m.sim.npy >>$m.log 2>&1 &&
   $B/npuref $m.npub --input ${m}_input.npy --output $m.ref.npy >>$m.log 2>&1 && cmp -s $m.sim.npy $m.ref.npy &&
   $B/npuref $m.onnx --input ${m}_input.npy --output $m.float.npy >>$m.log 2>&1 &&
   $PY tests/e2e/compare.py $m.sim.npy $m.ref.npy $m.float.npy 0.99 >>$m.log 2>&1; then ok; else bad "int8_input: $(tail -n 3 $m.log)"; fi
mkdir -p $W/fcal && $PY -c "import numpy as np; np.save('$W/fcal/0.npy', np.zeros((1, 3, 8, 8), np.float32))"
msg=$($B/npucc --target edge-v1 --calib $W/fcal -o $W/x.npub $m.onnx 2>&1); rc=$?
if [ $rc -eq 1 ] && echo "$msg" | grep -q "fcal/0.npy" && echo "$msg" | grep -q "int8"; then ok
else bad "int8_input, float calibration file: rc $rc: $msg"; fi

# a float file for an int8 binary: refused by npusim and npuref, naming the file
o=$W/edge-v1.conv
for tool in npusim npuref; do
    msg=$($B/$tool $o.int8.npub --input $M/conv_input.npy --output $W/x.npy 2>&1); rc=$?
    if [ $rc -ne 0 ] && echo "$msg" | grep -q "conv_input.npy"; then ok; else bad "$tool, float file for int8: $msg"; fi
done
# an int8 QDQ model asked for int8 I/O: already so, nothing changes
msg=$($B/npucc --target edge-v1 --input-type int8 --output-type int8 -o $W/x.npub $q/io_s8.onnx 2>&1); rc=$?
[ $rc -eq 0 ] && ok || bad "int8 QDQ model with --input-type int8: $msg"
echo "io_types: $pass passed, $fail failed"
[ $fail -eq 0 ]
