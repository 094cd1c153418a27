#!/usr/bin/env bash
# Review: the 3xTF32 tests and the forms bench on a shared fixture (LibraryTest: owned
# cuDNN and cuBLAS handles) and owned device buffers.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
timeout 120 "$B/dlr_gpu_tests" --gtest_filter='Tf32x3Test.*:AlgoChoiceGpu.*' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure' "$O/tests.log" | head
DLR_GPU_BENCH=1 DLR_BENCH_JSON=$O/bench timeout 120 "$B/dlr_gpu_tests" --gtest_filter='ConvAlgoBench.ThreeTf32Forms' >"$O/forms.log" 2>&1
echo "forms rc=$?"; grep -E '\[forms\] sums|Failure|^\[  (PASSED|FAILED)' "$O/forms.log" | head
