#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every test.
# GPU tests skip themselves without a CUDA device; tests needing ../shared data
# (cfgs, real weights, images) skip with a message when it is absent
# (set DLR_SHARED_DIR to point at it). Then a short fuzz run of every libFuzzer
# harness (scripts/fuzz.sh, about 60 s each; DLR_SKIP_FUZZ=1 skips it), then the
# aarch64 cross build and its CPU tests under qemu (scripts/arm64_test.sh;
# DLR_SKIP_ARM64=1 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
ctest --test-dir build --output-on-failure -j"$(nproc)"
# The build above is CUDA-enabled wherever the toolkit is (its ctest install_consumer
# checks that package); the package of a CPU-only build is checked too: libraries only,
# then consumers through find_package and pkg-config (scripts/install_test.sh).
if [ -f build/kernels/libdlr_kernels_cuda.a ] && [ "${DLR_SKIP_CPU_INSTALL:-0}" != "1" ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S . -B build-cpu-install -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLR_CUDA=OFF -DDLR_BUILD_TESTS=OFF \
    "${launcher[@]}" >/dev/null
  cmake --build build-cpu-install -j"$(nproc)"
  bash scripts/install_test.sh build-cpu-install
fi
if [ "${DLR_SKIP_FUZZ:-0}" != "1" ]; then
  bash scripts/fuzz.sh 60
fi
if [ "${DLR_SKIP_ARM64:-0}" != "1" ]; then
  bash scripts/arm64_test.sh
fi
