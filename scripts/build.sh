#!/usr/bin/env bash
# Configures and builds dlrun into build/ (CUDA and OpenCV auto-detected).
# Extra arguments go to cmake, e.g. scripts/build.sh -DDLR_CUDA=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
