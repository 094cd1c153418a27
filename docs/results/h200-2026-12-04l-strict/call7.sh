#!/usr/bin/env bash
# The 3xTF32 conv op (kernels/cuda/conv_3xtf32.h) and its split kernel against a double reference.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
nvidia-smi -L | tee "$O/gpu.txt"
timeout 200 "$B/dlr_gpu_tests" --gtest_filter='Tf32x3Test.*' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure|\[3xtf32\]|OK \]' "$O/tests.log" | head -30
