#!/usr/bin/env bash
# Configures and builds dlrun into build/ (CUDA and OpenCV auto-detected).
# Extra arguments go to cmake, e.g. scripts/build.sh -DDLR_CUDA=OFF
# CUDA architectures: $DLR_CUDA_ARCHITECTURES if set; else "native" when this machine
# has a GPU; else 90 (the H100 the project tests on): one architecture keeps the CI
# build short (docs/jetson.md has the measurements). CMake's own default, "users",
# builds for every GPU users run (Jetson and desktop/server).
# DLR_BUILD_TARGETS: the targets to build, space-separated (default: all of them, as
# scripts/test.sh needs). Configured with CUDA and the tests on (-DDLR_CUDA=AUTO
# -DDLR_BUILD_TESTS=ON) unless the arguments say otherwise, so that a build directory
# configured by scripts/demo.sh without CUDA gets it back here.
# DLR_SETUP_ARGS: arguments for scripts/setup.sh (scripts/demo.sh: --tools).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh ${DLR_SETUP_ARGS:-}
archs="${DLR_CUDA_ARCHITECTURES:-}"
if [ -z "$archs" ]; then
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then archs=native; else archs=90; fi
fi
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLR_CUDA_ARCHITECTURES="$archs" -DDLR_CUDA=AUTO \
  -DDLR_BUILD_TESTS=ON "${launcher[@]}" "$@" >/dev/null
targets=()
for t in ${DLR_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build build -j"$(nproc)" "${targets[@]}"
