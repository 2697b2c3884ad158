#!/bin/sh
# tests/fuzz/seeds.sh BUILD: regenerates the committed seed corpora that no
# fixture in the tree provides: .npub binaries of the repo's own small models
# (tests/import/fuzz_seed.onnx, tests/qdq/qdq_ops.onnx) compiled by BUILD/npucc,
# their GRAPH sections, calibration images (PGM, PPM, PNG in every colour
# type) and tiny firmware ELFs. Needs `make all`, python3 (numpy, PIL) and the
# RISC-V gcc of `make deps`. The other harnesses take their seeds from the
# fixtures directly (tests/fuzz/seeds.txt).
set -eu
B=${1:-build}
C=tests/fuzz/corpus
W=$(mktemp -d)
trap 'rm -rf $W' EXIT
mkdir -p $C/npub $C/graph $C/image $C/elf

# ---- .npub and graph sections -------------------------------------------
/usr/bin/python3 - $W <<'PY'
import sys, numpy as np
w = sys.argv[1]
import os
os.makedirs(w + "/calib", exist_ok=True)
rng = np.random.default_rng(19)
for i in range(4):
    np.save(f"{w}/calib/s{i}.npy", rng.standard_normal((1, 1, 4, 4)).astype(np.float32))
PY
m=tests/import/fuzz_seed.onnx
$B/npucc --target edge-v1 --calib $W/calib -o $C/npub/seed.npub $m
$B/npucc --target edge-v1 --calib $W/calib --partition host -o $C/npub/seed_host.npub $m
$B/npucc --target edge-v1 --calib $W/calib --strip -o $C/npub/seed_strip.npub $m
$B/npucc --target edge-v1-wide --calib $W/calib --wbits 4 -o $C/npub/seed_w4.npub $m
$B/npucc --target edge-v1 -o $C/npub/qdq_ops.npub tests/qdq/qdq_ops.onnx
$B/npucc --target edge-v1 --partition host -o $C/npub/qdq_ops_host.npub tests/qdq/qdq_ops.onnx
/usr/bin/python3 - $C/npub $C/graph <<'PY'
import sys, struct, glob, os
src, dst = sys.argv[1], sys.argv[2]
for f in sorted(glob.glob(src + "/*.npub")):
    b = open(f, "rb").read()
    count, table = struct.unpack_from("<II", b, 48)
    for i in range(count):
        kind, off, size, crc = struct.unpack_from("<IIII", b, table + 16 * i)
        if kind == 10:  # NPUB_SEC_GRAPH
            open(os.path.join(dst, os.path.basename(f)[:-5] + ".graph"), "wb").write(b[off:off + size])
PY

# ---- calibration images ----------------------------------------------------
/usr/bin/python3 - $C/image <<'PY'
import sys, numpy as np
from PIL import Image
d = sys.argv[1]
rng = np.random.default_rng(7)
g = rng.integers(0, 256, (5, 7), dtype=np.uint8)
rgb = rng.integers(0, 256, (4, 3, 3), dtype=np.uint8)
open(d + "/gray8.pgm", "wb").write(b"P5\n# a comment\n7 5\n255\n" + g.tobytes())
open(d + "/gray16.pgm", "wb").write(b"P5 7 5 65535\n" + (g.astype(">u2") * 257).tobytes())
open(d + "/rgb8.ppm", "wb").write(b"P6\n3 4\n255\n" + rgb.tobytes())
open(d + "/rgb16.ppm", "wb").write(b"P6\n3 4\n1000\n" + (rgb.astype(">u2") * 3).tobytes())
Image.fromarray(g, "L").save(d + "/gray.png")
Image.fromarray(rgb, "RGB").save(d + "/rgb.png")
Image.fromarray(np.dstack([rgb, rgb[:, :, :1]]), "RGBA").save(d + "/rgba.png")
Image.fromarray(g, "L").convert("P").save(d + "/palette.png")
Image.fromarray(g.astype(np.uint16) * 200, "I;16").save(d + "/gray16.png")
Image.fromarray(g > 128).save(d + "/bilevel.png")
PY

# ---- firmware ELFs ------------------------------------------------------------
cat >$W/fw.S <<'S'
    .section .text
    .globl _start
_start:
    lui   t0, 0x40001          /* sim-control page */
    lw    t1, 0(t0)            /* FW_CTL_MAGIC */
    li    t1, 'k'
    sw    t1, 8(t0)            /* FW_CTL_PUTC */
    lw    t1, 0x10(t0)         /* FW_CTL_CYCLES_LO */
    lui   t2, 0x40000          /* NPU registers */
    lw    t3, 0(t2)
    la    t4, counter
    sw    t3, 0(t4)
    sw    zero, 12(t0)         /* FW_CTL_EXIT 0 */
1:  j     1b
    .section .data
counter: .word 0x12345678
    .section .bss
scratch: .space 64
S
CC=riscv64-unknown-elf-gcc
F="-march=rv32imac -mabi=ilp32 -nostdlib -nostartfiles -Wl,--build-id=none -s"
$CC $F -Wl,-Ttext=0 -Wl,-Tdata=0x80000000 -Wl,-Tbss=0x80001000 $W/fw.S -o $C/elf/tiny.elf
$CC $F -Wl,-Ttext=0x100 -Wl,-Tdata=0x80000000 -Wl,-Tbss=0x80001000 -Wl,-N -Wl,--no-warn-rwx-segments $W/fw.S -o $C/elf/tiny_n.elf
ls $C/npub $C/graph $C/image $C/elf | wc -l
