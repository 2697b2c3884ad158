#!/bin/sh
# The customer firmware path (issue 16): from a fresh `make install` prefix,
# examples/firmware builds with Make through pkg-config and with CMake
# through find_package(npurt), for rv32imac and rv32imafc; each ELF runs on
# `npusim --firmware ELF --target edge-v1` (the NPU model attached, the
# console and EXIT registers), prints the class of the committed test image
# and output codes equal, byte for byte, to npusim's own run of the same
# binary; its text without the model is at most 24 KB for rv32imac (size
# printed). The generated header's I/O macros (shape, dtype, scale, zero
# point) read back from a compiled C file equal --stats-json. The C blocks
# of docs/runtime.md marked for it compile. A firmware of one's own in the
# model mode is named, not reported as a runtime failure; the plain mode
# writes --stats-json and --trace. Usage: tests/e2e/firmware.sh [BUILD]
set -u
B=${1:-build}
SRC=$(pwd)
case $B in /*) AB=$B ;; *) AB=$SRC/$B ;; esac
PY=/usr/bin/python3
. tests/summary.sh
fail=0 pass=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL firmware/$1"; fail=$((fail + 1)); }
W=$(mktemp -d)
P=$W/prefix
trap 'rm -rf "$W"' EXIT
EX=$SRC/examples/firmware
SIZE=riscv64-unknown-elf-size
LIMIT=24576

if ! make -s -C "$SRC" BUILD=$B PREFIX=$P DESTDIR= install >$W/install.log 2>&1; then
    bad "make install: $(tail -n 5 $W/install.log)"; summary firmware; exit 1
fi

# ---- npusim's own run of the same binary, on the same int8 codes --------------
NPUCC_FLAGS="--target edge-v1 --calib $SRC/examples/fmnist/calib --input-type int8 --output-type int8 --strip"
$P/bin/npucc $NPUCC_FLAGS --stats-json $W/m.json -o $W/m.npub $SRC/examples/fmnist/fmnist_cnn.onnx >$W/npucc.log 2>&1 ||
    bad "npucc: $(tail -n 3 $W/npucc.log)"
$PY - $EX/image.h $W/image.npy <<'PY' || bad "image.h -> npy"
import re, sys
import numpy as np
body = open(sys.argv[1]).read().split("{", 1)[1].split("}", 1)[0]
q = np.array([int(v) for v in re.findall(r"-?\d+", body)], dtype=np.int8)
assert q.size == 784, q.size
np.save(sys.argv[2], q.reshape(1, 1, 28, 28))
PY
$P/bin/npusim $W/m.npub --input $W/image.npy --output $W/sim.npy >$W/sim.log 2>&1 || bad "npusim model: $(tail -n 3 $W/sim.log)"
want=$($PY -c "
import numpy as np
y = np.load('$W/sim.npy').reshape(-1)
print('class %d' % int(np.argmax(y)))
print('output ' + ' '.join(str(int(v)) for v in y))" 2>&1)

# the firmware's console must be npusim's own output, line for line
check_run() { # NAME ELF
    if $P/bin/npusim --firmware $2 --target edge-v1 >$W/$1.out 2>$W/$1.err; then
        if [ "$(cat $W/$1.out)" = "$want" ]; then ok; else bad "$1: printed '$(cat $W/$1.out)', npusim's own run '$want'"; fi
    else bad "$1: npusim: $(tail -n 3 $W/$1.err $W/$1.out)"; fi
}

# ---- Make through pkg-config, each rv32 build ------------------------------------
for v in rv32imac-ilp32 rv32imafc-ilp32f; do
    if make -s -C $EX PREFIX=$P VARIANT=$v OUT=$W/make-$v >$W/make-$v.log 2>&1; then ok
    else bad "make $v: $(tail -n 5 $W/make-$v.log)"; continue; fi
    check_run make-$v $W/make-$v/app.elf
done
# the runtime, kernels and libc: the ELF's text without the model array
model=$(riscv64-unknown-elf-nm -S $W/make-rv32imac-ilp32/app.elf | awk '$4 == "model_npub" {print $2}')
[ -n "$model" ] && model=$((0x$model))
text=$($SIZE $W/make-rv32imac-ilp32/app.elf | awk 'NR == 2 {print $1}')
if [ -n "$model" ] && [ -n "$text" ]; then
    echo "firmware: rv32imac text $text B, model array $model B, without the model $((text - model)) B (limit $LIMIT)"
    $SIZE $W/make-rv32imac-ilp32/app.elf
    [ $((text - model)) -le $LIMIT ] && [ $((text - model)) -gt 1000 ] && ok || bad "size: $((text - model)) B over $LIMIT"
else bad "size: no model_npub in the ELF"; fi
# the array lands in its section, aligned
riscv64-unknown-elf-gcc --specs=picolibc.specs -c $(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --cflags npurt-rv32imac-ilp32) \
    $W/make-rv32imac-ilp32/model.c -o $W/model.o 2>$W/model.log &&
    riscv64-unknown-elf-objdump -t $W/model.o | grep -q '\.rodata\.npu_model.*model_npub' && ok ||
    bad "section: model_npub not in .rodata.npu_model: $(head -n 3 $W/model.log)"
addr=$(riscv64-unknown-elf-nm $W/make-rv32imac-ilp32/app.elf | awk '$3 == "model_npub" {print $1}')
[ -n "$addr" ] && [ $((0x$addr % 64)) -eq 0 ] && ok || bad "--align 64: model_npub at 0x$addr"
grep -q 'section(".rodata.npu_model")' $W/make-rv32imac-ilp32/model.c && grep -q 'aligned(64)' $W/make-rv32imac-ilp32/model.c &&
    ok || bad "model.c: no section/aligned attribute"

# the op table: the NPU model links no host kernel; an all-host build only its own
nm_of() { riscv64-unknown-elf-nm $1 | awk '{print $NF}'; }
nm_of $W/make-rv32imac-ilp32/app.elf >$W/npu.syms
if grep -qx npurt_model_run $W/npu.syms && ! grep -qx nk_qconv2d $W/npu.syms && ! grep -qx npurt_node_run $W/npu.syms &&
   ! grep -qx npurt_rec_run $W/npu.syms; then ok; else bad "op table: the NPU-only firmware links kernels"; fi
$P/bin/npucc $NPUCC_FLAGS --partition host -o $W/host.npub $SRC/examples/fmnist/fmnist_cnn.onnx >$W/host.log 2>&1 &&
    $P/bin/npusim $W/host.npub --input $W/image.npy --output $W/host.npy >>$W/host.log 2>&1 || bad "host npub: $(tail -n 3 $W/host.log)"
want_host=$($PY -c "
import numpy as np
y = np.load('$W/host.npy').reshape(-1)
print('class %d' % int(np.argmax(y)))
print('output ' + ' '.join(str(int(v)) for v in y))" 2>&1)
if make -s -C $EX PREFIX=$P OUT=$W/host NPUCC_FLAGS="--partition host" >$W/make-host.log 2>&1; then
    nm_of $W/host/app.elf >$W/host.syms
    if grep -qx nk_qconv2d $W/host.syms && grep -qx nk_qfc $W/host.syms && ! grep -qx npurt_node_run $W/host.syms &&
       ! grep -qx nk_softmax_f32 $W/host.syms; then ok; else bad "op table: the all-host firmware's kernels"; fi
    sv=$want; want=$want_host; check_run host $W/host/app.elf; want=$sv
    [ "$want_host" = "$want" ] && ok || bad "all-host '$want_host', with the NPU '$want'"
else bad "make all-host: $(tail -n 5 $W/make-host.log)"; fi

# ---- CMake through find_package(npurt) ---------------------------------------------
for v in rv32imac-ilp32 rv32imafc-ilp32f; do
    d=$W/cmake-$v
    if cmake -S $EX -B $d -DCMAKE_PREFIX_PATH=$P -DNPURT_RISCV_ARCH=$v -DMODEL_DIR=$W/make-$v \
           -DCMAKE_TOOLCHAIN_FILE=$P/lib/cmake/npurt/npurt-riscv32-toolchain.cmake >$d.log 2>&1 &&
       cmake --build $d >>$d.log 2>&1; then ok
    else bad "cmake $v: $(tail -n 5 $d.log)"; continue; fi
    abi=${v#*-}
    flt=$([ $abi = ilp32f ] && echo "single-float ABI" || echo "soft-float ABI")
    riscv64-unknown-elf-readelf -h $d/app.elf | grep -q "Flags:.*$flt" && ok || bad "cmake $v: not $flt"
    check_run cmake-$v $d/app.elf
done

# ---- the generated header, read back from a compiled C file ----------------------
$P/bin/npucc $NPUCC_FLAGS --emit c -o $W/hdr/fm $SRC/examples/fmnist/fmnist_cnn.onnx >$W/hdr.log 2>&1 ||
    { mkdir -p $W/hdr && $P/bin/npucc $NPUCC_FLAGS --emit c -o $W/hdr/fm $SRC/examples/fmnist/fmnist_cnn.onnx >$W/hdr.log 2>&1; }
cat >$W/hdr/read.c <<'EOF2'
#include <stdio.h>
#include "fm.h"
#define IO(P) do { static const int shape[] = P##_SHAPE; \
    printf("%s %d %d %a %d", P##_NAME, P##_DTYPE, P##_QUANTIZED, (double)P##_SCALE, P##_ZERO_POINT); \
    for (unsigned i = 0; i < sizeof shape / sizeof shape[0]; i++) printf(" %d", shape[i]); \
    printf(" %u\n", P##_BYTES); } while (0)
int main(void)
{
    _Static_assert(fm_INPUT_COUNT == 1 && fm_OUTPUT_COUNT == 1, "one input, one output");
    _Static_assert(fm_WORK_BYTES >= fm_ARENA_BYTES + fm_INPUT_BYTES + fm_OUTPUT_BYTES, "the work area holds all");
    IO(fm_INPUT0);
    IO(fm_OUTPUT0);
    return fm_npub[0] == 'N' ? 0 : 1;
}
EOF2
if cc -std=c11 -pedantic -Wall -Wextra -Werror -I$W/hdr $W/hdr/read.c -c -o $W/hdr/read.o >>$W/hdr.log 2>&1 &&
   cc -std=c11 -Wall -Wextra -Werror -c $W/hdr/fm.c -o $W/hdr/fm.o >>$W/hdr.log 2>&1 &&
   cc $W/hdr/read.o $W/hdr/fm.o -o $W/hdr/read >>$W/hdr.log 2>&1 && $W/hdr/read >$W/hdr/out.txt &&
   $PY - $W/m.json $W/hdr/out.txt <<'PY' >>$W/hdr.log 2>&1; then ok; else bad "header readback: $(tail -n 5 $W/hdr.log)"; fi
import json, sys
import numpy as np
codes = {"float32": 0, "int8": 5, "uint8": 6}
io = json.load(open(sys.argv[1]))["io"]
lines = open(sys.argv[2]).read().strip().split("\n")
assert len(lines) == len(io) == 2, (lines, io)
for e, line in zip(io, lines):
    f = line.split()
    name, dtype, quant, scale, zp, dims, nbytes = f[0], int(f[1]), int(f[2]), float.fromhex(f[3]), int(f[4]), f[5:-1], int(f[-1])
    assert name == e["name"] and dtype == codes[e["dtype"]] and quant == 1, (line, e)
    assert np.float32(scale) == np.float32(e["scale"]) and zp == e["zero_point"], (line, e)
    assert [int(d) for d in dims] == e["shape"], (line, e)
    n = 1
    for d in e["shape"]:
        n *= d
    assert nbytes == n, (line, e)
print("the header's I/O macros are --stats-json's")
PY

# ---- docs/runtime.md: every C block marked `<!-- compiled: ... -->` ---------------
mkdir -p $W/doc
$PY - $SRC/docs/runtime.md $W/doc <<'PY' || bad "docs/runtime.md: no marked C blocks"
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"<!-- compiled: (\S+) -->\s*```c\n(.*?)```", text, re.S)
assert blocks, "no marked blocks"
for i, (name, code) in enumerate(blocks):
    open("%s/%s" % (sys.argv[2], name), "w").write(code)
print("\n".join(n for n, _ in blocks))
PY
for f in $W/doc/*.c; do
    [ -f "$f" ] || continue
    PKG_CONFIG_PATH=$P/lib/pkgconfig
    if riscv64-unknown-elf-gcc -Os -std=c11 -pedantic -Wall -Wextra -Werror --specs=picolibc.specs \
           $(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --cflags npurt-rv32imac-ilp32) -I$W/make-rv32imac-ilp32 \
           -c $f -o $f.o >$f.log 2>&1; then ok
    else bad "docs/runtime.md block $(basename $f): $(head -n 5 $f.log)"; fi
done

# ---- npusim: plain firmware runs and the model mode ----------------------------------
E=$W/make-rv32imac-ilp32/app.elf
if $P/bin/npusim --firmware $E --target edge-v1 --stats-json $W/plain.json --trace $W/plain.trace.json >$W/plain.log 2>&1 &&
   $PY - $W/plain.json $W/plain.trace.json <<'PY' >>$W/plain.log 2>&1; then ok; else bad "plain run stats/trace: $(tail -n 3 $W/plain.log)"; fi
import json, sys
s, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert s["cycles"]["npu"] > 0 and s["cycles"]["total"] > s["cycles"]["npu"] and s["macs"] > 0, s["cycles"]
ev = t["traceEvents"]
assert ev and all(e["ph"] == "X" and e["dur"] >= 0 for e in ev), ev[:3]
assert {e["tid"][:3] for e in ev} >= {"dma", "mac"}, {e["tid"] for e in ev}
PY
# a firmware that fails says so, with its code
printf 'int main(void) { *(volatile unsigned *)0x4000100Cu = 3; for (;;) ; }\n' >$W/exit3.c
riscv64-unknown-elf-gcc --specs=picolibc.specs -march=rv32imac -mabi=ilp32 -Os $W/exit3.c \
    -Wl,--defsym=__flash=0x0,--defsym=__flash_size=0x40000,--defsym=__ram=0x80000000,--defsym=__ram_size=0x100000 \
    -o $W/exit3.elf >$W/exit3.log 2>&1
msg=$($P/bin/npusim --firmware $W/exit3.elf 2>&1); rc=$?
case "$rc:$msg" in 1:*"exited with code 3"*) ok ;; *) bad "exit code 3: rc $rc: $msg" ;; esac
# the model mode with a firmware that does not answer FW_CMD_RUN_NPUB is named as such
msg=$($P/bin/npusim $W/m.npub --input $W/image.npy --firmware $E 2>&1); rc=$?
case "$rc:$msg" in 1:*FW_CMD_RUN_NPUB*) ok ;; *) bad "model mode, own firmware: rc $rc: $msg" ;; esac
summary firmware
