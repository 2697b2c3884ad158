# CMake toolchain file for bare-metal firmware on the SoC's rv32 host with
# riscv64-unknown-elf-gcc and picolibc (docs/runtime.md, "Installing"):
#   cmake -DCMAKE_TOOLCHAIN_FILE=PREFIX/lib/cmake/npurt/npurt-riscv32-toolchain.cmake \
#         -DNPURT_RISCV_ARCH=rv32imafc-ilp32f -DCMAKE_PREFIX_PATH=PREFIX ..
# NPURT_RISCV_ARCH (default rv32imac-ilp32) picks the libnpurt build behind
# npurt::npurt, whose usage requirements carry -march and -mabi; the C
# library is picolibc (the one libnpurt was built against), given here once.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR riscv32)
set(CMAKE_C_COMPILER riscv64-unknown-elf-gcc)
set(CMAKE_CXX_COMPILER riscv64-unknown-elf-g++)
# in the compile flags only: CMake links through the compiler with them too
set(CMAKE_C_FLAGS_INIT "--specs=picolibc.specs")
set(CMAKE_CXX_FLAGS_INIT "--specs=picolibc.specs")
# no OS to link a test program against: try-compiles make a static library
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(NPURT_RISCV_ARCH "rv32imac-ilp32" CACHE STRING "rv32 build of libnpurt (<march>-<mabi>)")
# try-compiles see the choice too
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES NPURT_RISCV_ARCH)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
