#!/bin/sh
# Flash footprint of libnpurt on the SoC's host (rv32imac/ilp32, -Os,
# picolibc, --gc-sections): a minimal firmware linked against the installed
# layout's lib/riscv32/rv32imac-ilp32/libnpurt.a through its pkg-config
# file, `riscv64-unknown-elf-size` text (code + read-only data) without the
# model array, split by where it comes from (the link map), and the biggest
# functions (nm --size-sort); rv32imafc-ilp32f (the simulated SoC's) for
# comparison. Apps: "npub_open" checks the container only (the floor of an
# app whose host steps are all known to be absent), "npurt_open" the
# container and every host record, "open+run" also runs it (npurt_run:
# every host kernel is reachable from its dispatch): what the library costs
# without an op table. The example firmware with its op table (target
# <= 24 KB, issue 16) is bench/firmware_size_bench.sh.
# usage: bench/rt_size_bench.sh BUILD
set -u
B=$1
W=$B/bench/rt_size
mkdir -p $W
W=$(cd $W && pwd) # absolute, whether BUILD is or not: the install takes it
P=$W/prefix
PY=/usr/bin/python3
CROSS=riscv64-unknown-elf-
V=rv32imac-ilp32
make -s BUILD=$B PREFIX=$P DESTDIR= install >$W/install.log 2>&1 || { echo "rt_size: make install failed: $(tail -n 3 $W/install.log)"; exit 1; }
export PKG_CONFIG_PATH=$P/lib/pkgconfig

# the model blob is not counted: a separate object whose size is subtracted
cat >$W/blob.c <<'EOF'
const unsigned char model_npub[64] __attribute__((aligned(16), section(".rodata.model_npub"))) = {0};
const unsigned model_npub_size = sizeof model_npub;
EOF
# validation only: npub_open (the container) or npurt_open (and every host record)
for f in npub_open npurt_open; do
    cat >$W/${f%_open}.c <<EOF
#include <npurt/npurt.h>
extern const unsigned char model_npub[];
extern const unsigned model_npub_size;
int main(void)
{
    npub_view v;
    npub_error e;
    return $f(model_npub, model_npub_size, &v, &e) ? 1 : 0;
}
EOF
done
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
echo "== libnpurt flash footprint, $V -Os picolibc --gc-sections (text = code + rodata, model excluded)"
printf '%-20s %8s %8s %8s %8s %8s %8s\n' app text runtime kernels libc libgcc other
measure() { # name elf map
    $PY - "$1" "$2" "$3" "${CROSS}" <<'PY' || status=1
import re, subprocess, sys
name, elf, mp, cross = sys.argv[1:5]
text = int(subprocess.run([cross + "size", elf], capture_output=True, text=True, check=True).stdout.split("\n")[1].split()[0])
# the input sections placed in flash, by archive member (the link map after its header)
flash = {".init", ".text", ".rodata", ".srodata", ".init_array", ".fini_array", ".preinit_array", ".eh_frame", ".except"}
groups = dict.fromkeys(["runtime", "kernels", "libc", "libgcc", "other", "model"], 0)
body = open(mp).read().split("Linker script and memory map", 1)[1]
body = re.sub(r"\n {16,}(0x)", r" \1", body)  # a long input-section name puts its numbers on the next line
out = None
for l in body.split("\n"):
    m = re.match(r"^(\.\S+)", l)
    if m:
        out = m.group(1)
        continue
    m = re.match(r"^ (\.\S+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S+)", l)
    if not m or out not in flash:
        continue
    sec, size, src = m.group(1), int(m.group(2), 16), m.group(3)
    if src.endswith("blob.o") or "npu_model" in sec:
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
print(f"{name:<20} {text:8d} {groups['runtime']:8d} {groups['kernels']:8d} {groups['libc']:8d} {groups['libgcc']:8d} "
      f"{groups['other']:8d}")
PY
}
for v in $V rv32imafc-ilp32f; do
    for app in npub npurt run; do
        elf=$W/$app-$v.elf
        if ! ${CROSS}gcc -Os $(pkg-config --variable=specs npurt-$v) $(pkg-config --cflags npurt-$v) $W/$app.c \
               $W/blob.c $(pkg-config --libs npurt-$v) -Wl,--defsym=__flash_size=0x100000 -Wl,-Map=$W/$app-$v.map \
               -o $elf 2>$W/$app-$v.log; then
            echo "rt_size: $app $v: link failed: $(head -n 5 $W/$app-$v.log)"; status=1; continue
        fi
        measure "$(case $app in npub) echo npub_open;; npurt) echo npurt_open;; *) echo open+run;; esac) ${v%%-*}" $elf $W/$app-$v.map
    done
done
for elf in $W/npurt-$V.elf $W/run-$V.elf ; do
    [ -f $elf ] || continue
    echo "biggest functions of $(basename $(dirname $elf))/$(basename $elf) (nm --size-sort):"
    ${CROSS}nm --size-sort -S -r $elf 2>/dev/null | while read -r addr size type sym; do
        case $sym in *_npub) continue ;; esac # the model array
        case $type in t|T) printf '  %6d %s\n' $((0x$size)) "$sym" ;; esac
    done | head -n 10
done
exit $status
