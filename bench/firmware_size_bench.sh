#!/bin/sh
# The example firmware (examples/firmware: the model API, the reference NPU
# driver, the fmnist model with int8 I/O) built against a fresh install of
# libnpurt for rv32imac and rv32imafc, and the same app with every layer on
# a host kernel (--partition host: the op table then links QCONV, QFC and the
# pools): `riscv64-unknown-elf-size` text, the model array, and the rest
# split by who defines each symbol (libnpurt, the app, libc/libgcc; what no
# symbol covers is alignment and unnamed read-only data).
# Target: <= 24 KB without the model for rv32imac (issue 16).
# usage: bench/firmware_size_bench.sh BUILD
set -u
B=$1
W=$B/bench/firmware_size
mkdir -p $W
W=$(cd $W && pwd) # absolute, whether BUILD is or not: make -C and the install take it
P=$W/prefix
CROSS=riscv64-unknown-elf-
TARGET=24576
make -s BUILD=$B PREFIX=$P DESTDIR= install >$W/install.log 2>&1 || { echo "firmware_size: make install failed: $(tail -n 3 $W/install.log)"; exit 1; }
status=0
echo "== examples/firmware flash text (bytes; model = the C array; target <= $TARGET without it, rv32imac)"
printf '%-28s %8s %8s %8s %8s %8s %8s\n' build text model no-model libnpurt app libc+gcc
hex2dec='function h(x,  i, n) { n = 0; x = tolower(x); for (i = 1; i <= length(x); i++) n = n * 16 + index("0123456789abcdef", substr(x, i, 1)) - 1; return n }'
row() { # VARIANT LABEL [NPUCC_FLAGS]
    v=$1 label=$2 out=$W/$2
    if ! make -s -C examples/firmware PREFIX=$P VARIANT=$v OUT=$out NPUCC_FLAGS="${3:-}" >$out.log 2>&1; then
        echo "firmware_size: $label: $(tail -n 3 $out.log)"; status=1; return
    fi
    ${CROSS}nm --defined-only $P/lib/riscv32/$v/libnpurt.a 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u >$out.lib
    set -- $(${CROSS}nm -S --defined-only $out/app.elf | awk -v lib=$out.lib "$hex2dec"'
        BEGIN { while ((getline s < lib) > 0) inlib[s] = 1 }
        NF == 4 && $3 ~ /^[tTrR]$/ { n = h($2)
            if ($4 == "model_npub") model += n; else if ($4 in inlib) rt += n;
            else if ($4 ~ /^(main|app|fail|put_[si]|ctl_write|_exit|image|model_ops)$/) app += n; else libc += n }
        END { printf "%d %d %d %d\n", model, rt, app, libc }')
    text=$(${CROSS}size $out/app.elf | awk 'NR == 2 {print $1}')
    verdict=""
    [ "$label" = rv32imac ] && { [ $((text - $1)) -le $TARGET ] && verdict="  ok" || { verdict="  OVER"; status=1; }; }
    printf '%-28s %8d %8d %8d %8d %8d %8d%s\n' "$label" $text $1 $((text - $1)) $2 $3 $4 "$verdict"
}
row rv32imac-ilp32 rv32imac
row rv32imafc-ilp32f rv32imafc
row rv32imac-ilp32 rv32imac-all-host "--partition host"
exit $status
