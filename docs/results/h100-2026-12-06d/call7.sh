#!/usr/bin/env bash
# Call 7 (thirty-first session): the whole GPU suite of h4 (main with --startup-gpu).
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
v=h4; [ -x /tmp/$v/bin/dlr_gpu_tests ] || { rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }
nvidia-smi -L | tee "$O/gpu.txt"
export DLR_SHARED_DIR="$PWD/device-carry/shared"
F="${1:-*}"
cd /tmp/$v/bin && timeout 540 ./dlr_gpu_tests --gtest_filter="$F" > $O/gpu_tests.log 2>&1; echo "suite rc=$? at ${SECONDS}s"
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]' $O/gpu_tests.log | cut -c1-200 | tail -30
