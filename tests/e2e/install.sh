#!/bin/sh
# make install / uninstall (docs/runtime.md, "Installing"). Installs into a
# fresh prefix and checks the layout; runs the installed npucc on a small
# model with no NPUCC_ROOT/NPUCC_TARGET_PATH from outside the source tree,
# and the installed npusim on the result, bit-exact with npuref; compiles
# tests/install/all_headers.cpp (every public header, C++) with g++ through
# pkg-config against the host library and runs it; compiles each header
# alone as C99 -pedantic (native and rv32); links a small rv32 program
# against each rv32 build through its pkg-config file and checks the ELF's
# ISA and float ABI; builds a tiny CMake
# project with find_package(npurt) for the host and for each rv32 build;
# stages an install with DESTDIR; `make uninstall` leaves no file.
# Usage: tests/e2e/install.sh [BUILD]
set -u
B=${1:-build}
SRC=$(pwd)
case $B in /*) AB=$B ;; *) AB=$SRC/$B ;; esac
PY=/usr/bin/python3
. tests/summary.sh
fail=0 pass=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL install/$1"; fail=$((fail + 1)); }
W=$(mktemp -d)
P=$W/prefix
trap 'rm -rf "$W"' EXIT
RV32="rv32imac-ilp32 rv32imafc-ilp32f"
M=$AB/e2e/models
[ -f $M/conv.onnx ] || $PY tests/e2e/gen_models.py $M || exit 1

# ---- install and layout ----------------------------------------------------------
if ! make -s -C "$SRC" BUILD=$B PREFIX=$P DESTDIR= install >$W/install.log 2>&1; then
    bad "make install: $(tail -n 5 $W/install.log)"
    summary install; exit 1
fi
ok
missing=""
for f in bin/npucc bin/npusim bin/npuref bin/npudis share/npucc/fw/npurt.elf \
         include/npurt/npub.h include/npurt/npurt.h include/npurt/npurt_ops.h lib/libnpurt.a \
         lib/pkgconfig/npurt.pc lib/cmake/npurt/npurtConfig.cmake lib/cmake/npurt/npurtConfigVersion.cmake \
         lib/cmake/npurt/npurt-riscv32-toolchain.cmake \
         share/man/man1/npucc.1 share/man/man1/npusim.1 share/man/man1/npuref.1 share/man/man1/npudis.1; do
    [ -s $P/$f ] || missing="$missing $f"
done
for v in $RV32; do
    [ -s $P/lib/riscv32/$v/libnpurt.a ] && [ -s $P/lib/pkgconfig/npurt-$v.pc ] || missing="$missing $v"
done
for t in targets/*.yaml isa/*.yaml; do cmp -s $t $P/share/npucc/$t || missing="$missing share/npucc/$t"; done
[ -z "$missing" ] && ok || bad "layout: missing or different:$missing"
for t in npucc npusim npuref npudis; do
    [ -x $P/bin/$t ] && head -n 5 $P/share/man/man1/$t.1 | grep -q '^\.TH' || { bad "man/bin: $t"; continue; }
    ok
done
# every lib member of the host build is x86-64, of an rv32 build RISC-V with its float ABI
for v in $RV32; do
    abi=${v#*-}
    want=$([ $abi = ilp32f ] && echo "single-float ABI" || echo "soft-float ABI")
    riscv64-unknown-elf-readelf -h $P/lib/riscv32/$v/libnpurt.a >$W/$v.hdr 2>&1
    n=$(grep -c 'Machine:.*RISC-V' $W/$v.hdr) f=$(grep -c "Flags:.*$want" $W/$v.hdr)
    c=$(grep -c 'Class:.*ELF32' $W/$v.hdr)
    [ "$n" -gt 10 ] && [ "$f" = "$n" ] && [ "$c" = "$n" ] && ok || bad "lib/riscv32/$v: $n RISC-V members, $f with $want, $c ELF32"
done
readelf -h $P/lib/libnpurt.a | grep -q 'Machine:.*X86-64' && ok || bad "lib/libnpurt.a is not the host build"

# ---- the installed tools, outside the source tree, without NPUCC_ROOT -----------
mkdir -p $W/run
if (cd $W/run && env -u NPUCC_ROOT -u NPUCC_TARGET_PATH -u NPUCC_BUILD $P/bin/npucc --target edge-v1 \
        --calib $M/conv_calib -o conv.npub $M/conv.onnx >npucc.log 2>&1 &&
    env -u NPUCC_ROOT -u NPUCC_TARGET_PATH $P/bin/npusim conv.npub --input $M/conv_input.npy \
        --output sim.npy >npusim.log 2>&1 &&
    env -u NPUCC_ROOT -u NPUCC_TARGET_PATH $P/bin/npuref conv.npub --input $M/conv_input.npy \
        --output ref.npy >npuref.log 2>&1 &&
    cmp -s sim.npy ref.npy); then ok; else bad "installed tools: $(tail -n 3 $W/run/*.log)"; fi
(cd $W/run && env -u NPUCC_ROOT -u NPUCC_TARGET_PATH $P/bin/npudis conv.npub >dis.log 2>&1) && ok ||
    bad "installed npudis: $(tail -n 3 $W/run/dis.log)"
# the descriptions came from the prefix: a missing one names share/npucc/targets there
msg=$(cd $W/run && env -u NPUCC_TARGET_PATH $P/bin/npucc --target no-such-target --validate 2>&1)
case $msg in *"$P/bin/../share/npucc/targets/no-such-target.yaml"*edge-v1*) ok ;; *) bad "target search: $msg" ;; esac
# the self-check of the installed firmware
(cd $W/run && env -u NPUCC_ROOT $P/bin/npusim >self.log 2>&1) && ok || bad "npusim self-check: $(tail -n 3 $W/run/self.log)"

# ---- headers: C++ through pkg-config, each one alone as C ------------------------
export PKG_CONFIG_PATH=$P/lib/pkgconfig
for h in $P/include/npurt/*.h; do
    grep -q "#include <npurt/$(basename $h)>" tests/install/all_headers.cpp ||
        bad "tests/install/all_headers.cpp does not include npurt/$(basename $h)"
    printf '#include <npurt/%s>\n#include <npurt/%s>\nint main(void) { return 0; }\n' $(basename $h) $(basename $h) >$W/one.c
    # C99 -pedantic (the runtime's promise), natively and for rv32
    gcc -std=c99 -pedantic -Wall -Wextra -Werror -I$P/include -c $W/one.c -o $W/one.o 2>$W/one.log &&
    riscv64-unknown-elf-gcc --specs=picolibc.specs -march=rv32imac -mabi=ilp32 -std=c99 -pedantic -Wall -Wextra \
        -Werror -I$P/include -c $W/one.c -o $W/one.o 2>>$W/one.log && ok ||
        bad "$(basename $h) alone (C99 -pedantic): $(head -n 3 $W/one.log)"
done
if g++ -std=c++11 -pedantic -Wall -Wextra -Werror $(pkg-config --cflags npurt) tests/install/all_headers.cpp \
       $(pkg-config --libs npurt) -o $W/all_headers 2>$W/cxx.log && $W/all_headers >$W/cxx.out 2>&1 &&
   grep -q 'npurt_open: -*[1-9]' $W/cxx.out; then ok; else bad "C++: $(head -n 5 $W/cxx.log $W/cxx.out)"; fi

# ---- rv32: a program per variant through pkg-config ------------------------------
cat >$W/app.c <<'EOF'
#include <npurt/npurt.h>
static unsigned char blob[64] __attribute__((aligned(16)));
int main(void)
{
    npub_view v;
    npub_error e;
    return npurt_open(blob, sizeof blob, &v, &e) ? 1 : 0;
}
EOF
for v in $RV32; do
    abi=${v#*-}
    want=$([ $abi = ilp32f ] && echo "single-float ABI" || echo "soft-float ABI")
    if riscv64-unknown-elf-gcc -Os -Wall -Werror $(pkg-config --variable=specs npurt-$v) \
           $(pkg-config --cflags npurt-$v) $W/app.c \
           $(pkg-config --libs npurt-$v) -o $W/app-$v.elf 2>$W/app-$v.log &&
       riscv64-unknown-elf-readelf -h $W/app-$v.elf | grep -q "Flags:.*$want" &&
       riscv64-unknown-elf-nm $W/app-$v.elf | grep -q ' T npurt_open$'; then ok
    else bad "rv32 $v via pkg-config: $(head -n 5 $W/app-$v.log)"; fi
done
[ "$(pkg-config --variable=riscv32_variants npurt)" = "$RV32" ] && ok ||
    bad "npurt.pc riscv32_variants: $(pkg-config --variable=riscv32_variants npurt)"

# ---- CMake: find_package(npurt) for the host and each rv32 build ------------------
mkdir -p $W/cm
cp tests/install/all_headers.cpp $W/app.c $W/cm/
cat >$W/cm/CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(npurt_install_test C CXX)
find_package(npurt 0.1 REQUIRED)
if(NPURT_RISCV_ARCH)
  add_executable(app app.c)
else()
  add_executable(app all_headers.cpp)
endif()
target_link_libraries(app PRIVATE npurt::npurt)
EOF
if cmake -S $W/cm -B $W/cm/host -DCMAKE_PREFIX_PATH=$P >$W/cm/host.log 2>&1 &&
   cmake --build $W/cm/host >>$W/cm/host.log 2>&1 && $W/cm/host/app >>$W/cm/host.log 2>&1; then ok
else bad "cmake host: $(tail -n 5 $W/cm/host.log)"; fi
sed -i 's/project(npurt_install_test C CXX)/project(npurt_install_test C)/' $W/cm/CMakeLists.txt
for v in $RV32; do
    abi=${v#*-}
    want=$([ $abi = ilp32f ] && echo "single-float ABI" || echo "soft-float ABI")
    if cmake -S $W/cm -B $W/cm/$v -DCMAKE_PREFIX_PATH=$P -DNPURT_RISCV_ARCH=$v \
           -DCMAKE_TOOLCHAIN_FILE=$P/lib/cmake/npurt/npurt-riscv32-toolchain.cmake >$W/cm/$v.log 2>&1 &&
       cmake --build $W/cm/$v >>$W/cm/$v.log 2>&1 &&
       riscv64-unknown-elf-readelf -h $W/cm/$v/app | grep -q "Flags:.*$want"; then ok
    else bad "cmake $v: $(tail -n 5 $W/cm/$v.log)"; fi
done
# an rv32 build that is not installed is refused by name
if cmake -S $W/cm -B $W/cm/bad -DCMAKE_PREFIX_PATH=$P -DNPURT_RISCV_ARCH=rv32gc-lp64 \
       -DCMAKE_TOOLCHAIN_FILE=$P/lib/cmake/npurt/npurt-riscv32-toolchain.cmake >$W/cm/bad.log 2>&1; then
    bad "cmake accepted NPURT_RISCV_ARCH=rv32gc-lp64"
else grep -q "rv32gc-lp64' is not an installed build" $W/cm/bad.log && ok || bad "cmake bad arch: $(tail -n 5 $W/cm/bad.log)"; fi

# ---- DESTDIR staging, uninstall --------------------------------------------------
if make -s -C "$SRC" BUILD=$B PREFIX=/opt/npucc DESTDIR=$W/stage install >$W/stage.log 2>&1 &&
   [ -x $W/stage/opt/npucc/bin/npucc ] &&
   [ "$(cd $W/stage/opt/npucc && find . -type f | sort)" = "$(cd $P && find . -type f | sort)" ]; then ok
else bad "DESTDIR: $(tail -n 3 $W/stage.log)"; fi
make -s -C "$SRC" BUILD=$B PREFIX=/opt/npucc DESTDIR=$W/stage uninstall >>$W/stage.log 2>&1
left=$(find $W/stage -type f)
[ -z "$left" ] && ok || bad "DESTDIR uninstall left: $left"
make -s -C "$SRC" BUILD=$B PREFIX=$P DESTDIR= uninstall >$W/uninstall.log 2>&1 || bad "make uninstall: $(tail -n 3 $W/uninstall.log)"
left=$(find $P -type f; find $P -mindepth 1 -type d -name '*npu*')
[ -z "$left" ] && ok || bad "uninstall left: $left"
summary install
