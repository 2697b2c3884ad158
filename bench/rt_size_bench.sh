#!/bin/sh
# Flash footprint of libnpurt on the SoC's host (rv32imac/ilp32, -Os,
# picolibc, --gc-sections): a minimal firmware linked against the installed
# layout's lib/riscv32/rv32imac-ilp32/libnpurt.a through its pkg-config
# file, `riscv64-unknown-elf-size` text (code + read-only data) without the
# model array, split by where it comes from (the link map), and the biggest
# functions (nm --size-sort). Apps: "open" validates a blob (npurt_open),
# "open+run" also runs it (npurt_run: every host kernel is reachable from its
# dispatch). Target: <= 24 KB for the example model with int8 I/O
# (issue 16). With examples/firmware built (EXAMPLE_ELF=...), that too.
# usage: bench/rt_size_bench.sh BUILD
set -u
B=$1
W=$B/bench/rt_size
P=$W/prefix
PY=/usr/bin/python3
CROSS=riscv64-unknown-elf-
V=rv32imac-ilp32
TARGET=24576
mkdir -p $W
make -s BUILD=$B PREFIX=$PWD/$P install >$W/install.log 2>&1 || { echo "rt_size: make install failed: $(tail -n 3 $W/install.log)"; exit 1; }
export PKG_CONFIG_PATH=$PWD/$P/lib/pkgconfig

# the model blob is not counted: a separate object whose size is subtracted
cat >$W/blob.c <<'EOF'
const unsigned char model_npub[64] __attribute__((aligned(16), section(".rodata.model_npub"))) = {0};
const unsigned model_npub_size = sizeof model_npub;
EOF
cat >$W/open.c <<'EOF'
#include <npurt/npurt.h>
extern const unsigned char model_npub[];
extern const unsigned model_npub_size;
int main(void)
{
    npub_view v;
    npub_error e;
    return npurt_open(model_npub, model_npub_size, &v, &e) ? 1 : 0;
}
EOF
cat >$W/run.c <<'EOF'
#include <npurt/npurt.h>
extern const unsigned char model_npub[];
extern const unsigned model_npub_size;
static uint8_t arena[4096] __attribute__((aligned(16)));
static uint8_t scratch[1024] __attribute__((aligned(16)));
static int launch(void *ud, const npub_view *v, uint32_t first, uint32_t count, uint8_t *const region[4])
{
    (void)ud, (void)v, (void)first, (void)count, (void)region;
    return 0;
}
int main(void)
{
    npub_view v;
    npub_error e;
    if (npurt_open(model_npub, model_npub_size, &v, &e))
        return 1;
    npurt_env env = {.region = {NULL, arena, arena, arena}, .region_size = {0, sizeof arena, sizeof arena, sizeof arena},
                     .scratch = scratch, .scratch_size = sizeof scratch, .npu_launch = launch};
    return npurt_run(&v, &env, &e);
}
EOF

status=0
echo "== libnpurt flash footprint, $V -Os picolibc --gc-sections (text = code + rodata, model excluded; target <= $TARGET B for the example model)"
printf '%-10s %8s %8s %8s %8s %8s %8s  %s\n' app text runtime kernels libc libgcc other top-3
measure() { # name elf map
    $PY - "$1" "$2" "$3" "$TARGET" "${CROSS}" <<'PY' || status=1
import re, subprocess, sys
name, elf, mp, target, cross = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
berk = subprocess.run([cross + "size", elf], capture_output=True, text=True, check=True).stdout.split("\n")[1].split()
text = int(berk[0])
# input sections of the output's text/rodata, by archive member, from the link map
groups = {"runtime": 0, "kernels": 0, "libc": 0, "libgcc": 0, "other": 0, "model": 0}
lines = open(mp).read().split("\n")
out, i = None, 0
pat = re.compile(r"^ (\.[\w.$]+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S+)$")
for j, l in enumerate(lines):
    m = re.match(r"^(\.\S+)", l)
    if m:
        out = m.group(1)
    if out not in (".text", ".rodata", ".srodata", ".init", ".fini", ".preinit_array", ".init_array", ".fini_array", ".eh_frame"):
        continue
    if l.startswith(" *") or l.startswith(" **"):
        continue
    cand = l
    if re.match(r"^ \.[\w.$]+$", l) and j + 1 < len(lines):
        cand = l + lines[j + 1]
    m = pat.match(re.sub(r"\s+", " ", cand).replace(" 0x", "  0x") if False else cand.replace("\n", ""))
    m = re.match(r"^ ?(\.[\w.$]+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S+)\s*$", cand)
    if not m or (m.group(1) is None and not l.startswith("                ")):
        continue
    size, src = int(m.group(3), 16), m.group(4)
    if "model_npub" in (m.group(1) or "") or src.endswith("blob.o"):
        g = "model"
    elif "libnpurt.a" in src:
        g = "kernels" if "(nk_" in src else "runtime"
    elif re.search(r"libc\.a|libm\.a|crt0", src):
        g = "libc"
    elif "libgcc" in src:
        g = "libgcc"
    else:
        g = "other"
    groups[g] += size
text -= groups["model"]
nm = subprocess.run([cross + "nm", "--size-sort", "-S", "-r", elf], capture_output=True, text=True, check=True).stdout
top = [f"{l.split()[3]} {int(l.split()[1], 16)}" for l in nm.split("\n") if len(l.split()) == 4 and l.split()[2] in "tTrR"][:3]
print(f"{name:<10} {text:8d} {groups['runtime']:8d} {groups['kernels']:8d} {groups['libc']:8d} {groups['libgcc']:8d} "
      f"{groups['other']:8d}  {', '.join(top)}")
PY
}
for app in open run; do
    elf=$W/$app.elf
    if ! ${CROSS}gcc -Os $(pkg-config --variable=specs npurt-$V) $(pkg-config --cflags npurt-$V) $W/$app.c $W/blob.c $(pkg-config --libs npurt-$V) \
           -Wl,-Map=$W/$app.map -o $elf 2>$W/$app.log; then
        echo "rt_size: $app: link failed: $(head -n 5 $W/$app.log)"; status=1; continue
    fi
    measure $([ $app = run ] && echo open+run || echo open) $elf $W/$app.map
done
if [ -n "${EXAMPLE_ELF:-}" ] && [ -f "$EXAMPLE_ELF" ]; then
    echo "example firmware $EXAMPLE_ELF: $(${CROSS}size $EXAMPLE_ELF | tail -n 1)"
fi
echo "biggest functions of open+run (nm --size-sort):"
${CROSS}nm --size-sort -S -r $W/run.elf 2>/dev/null | awk '$3 ~ /[tT]/ {printf "  %6d %s\n", strtonum("0x" $2), $4}' | head -n 12
exit $status
