# Cross-compiles for aarch64 (64-bit Arm, the Jetson's CPU) on a Debian x86-64 host with
# Debian's cross compiler (g++-aarch64-linux-gnu) and multiarch :arm64 -dev packages
# (scripts/setup.sh --arm64), no sysroot: headers and libraries of the target are in
# /usr/include, /usr/include/aarch64-linux-gnu and /usr/lib/aarch64-linux-gnu, found
# through CMAKE_LIBRARY_ARCHITECTURE. The arch-independent header-only packages (Eigen,
# nlohmann-json, CLI11) are the host's own.
# Tests run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR): the dynamic loader and the
# :arm64 libraries are where multiarch puts them (/lib/ld-linux-aarch64.so.1,
# /usr/lib/aarch64-linux-gnu), so qemu-aarch64 needs no -L.
#   cmake -S . -B build-arm64 -G Ninja --toolchain cmake/aarch64-linux-gnu.cmake -DDLR_CUDA=OFF ...
# scripts/arm64_test.sh is the build and test run CI does (docs/jetson.md).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
find_program(DLR_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${DLR_QEMU_AARCH64})
