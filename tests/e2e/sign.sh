#!/bin/sh
# The keyed check end to end (docs/npub.md): npucc --sign-key signs the
# example model; npuref and npusim --verify-key run it with the key and
# refuse it with another key, unsigned, or with a constant changed and the
# CRCs recomputed (which the CRC alone lets through). The signed binary's
# results equal the unsigned one's. Usage: sign.sh [BUILD]
set -u
B=${1:-build}
W=$B/e2e/sign
PY=/usr/bin/python3
mkdir -p $W
fail=0 pass=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL sign/$1"; fail=$((fail + 1)); }
M=examples/fmnist
printf 'the maker of this firmware' >$W/key
printf 'somebody else' >$W/other
$PY -c "import numpy as np; np.save('$W/x.npy', np.load('$M/calib/000.npy').astype(np.float32).reshape(1,1,28,28))" ||
    exit 1
$B/npucc --target edge-v1 --calib $M/calib -o $W/u.npub $M/fmnist_cnn.onnx >$W/log 2>&1 || { bad "npucc: $(tail -n 3 $W/log)"; exit 1; }
$B/npucc --target edge-v1 --calib $M/calib --sign-key $W/key -o $W/s.npub $M/fmnist_cnn.onnx >>$W/log 2>&1 ||
    { bad "npucc --sign-key: $(tail -n 3 $W/log)"; exit 1; }
# a changed weight byte with every CRC recomputed: what the CRC cannot tell
$PY - $W/s.npub $W/t.npub <<'PY' || exit 1
import struct, sys, zlib
b = bytearray(open(sys.argv[1], 'rb').read())
count, table = struct.unpack_from('<II', b, 48)
for i in range(count):
    at = table + 16 * i
    kind, off, size, crc = struct.unpack_from('<IIII', b, at)
    if kind == 2:  # CONSTANTS
        b[off + size // 2] ^= 1
        struct.pack_into('<I', b, at + 12, zlib.crc32(bytes(b[off:off + size])) & 0xffffffff)
open(sys.argv[2], 'wb').write(b)
PY
for tool in npuref npusim; do
    if $B/$tool $W/s.npub --input $W/x.npy --output $W/$tool.s.npy --verify-key $W/key >>$W/log 2>&1 &&
       $B/$tool $W/u.npub --input $W/x.npy --output $W/$tool.u.npy >>$W/log 2>&1 &&
       cmp -s $W/$tool.s.npy $W/$tool.u.npy; then ok; else bad "$tool: the signed binary with its key: $(tail -n 2 $W/log)"; fi
    for case in "s.npub other does not match" "u.npub key not signed" "t.npub key does not match"; do
        set -- $case
        $B/$tool $W/$1 --input $W/x.npy --verify-key $W/$2 >$W/out 2>&1
        rc=$?
        shift 2
        if [ $rc = 1 ] && grep -q "$*" $W/out && grep -q "byte" $W/out; then ok; else bad "$tool $case: exit $rc: $(cat $W/out)"; fi
    done
done
# without --verify-key the tampered file still runs: the CRCs are right
if $B/npusim $W/t.npub --input $W/x.npy >/dev/null 2>&1; then ok; else bad "the CRC-fixed file should open without a key"; fi
echo "sign: $pass passed, $fail failed"
[ $fail = 0 ]
