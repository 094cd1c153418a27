#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every test.
# GPU tests skip themselves without a CUDA device; tests needing ../shared data
# (cfgs, real weights, images) skip with a message when it is absent
# (set DLR_SHARED_DIR to point at it). Then a short fuzz run of every libFuzzer
# harness (scripts/fuzz.sh, about 60 s each; DLR_SKIP_FUZZ=1 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
ctest --test-dir build --output-on-failure -j"$(nproc)"
if [ "${DLR_SKIP_FUZZ:-0}" != "1" ]; then
  bash scripts/fuzz.sh 60
fi
