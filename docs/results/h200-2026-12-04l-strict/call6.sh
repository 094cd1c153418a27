#!/usr/bin/env bash
# The two GPU tests calls 3 and 4 left out, on the final binaries.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
timeout 420 "$B/dlr_gpu_tests" --gtest_filter='FusedConvTest.MatchesTheCpuReference:FusedConvTest.Tf32MatchesTheCpuReference' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure|OK \]' "$O/tests.log" | head -20
