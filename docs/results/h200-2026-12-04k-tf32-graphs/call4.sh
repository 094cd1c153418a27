#!/usr/bin/env bash
# Call k4: the final binaries (tf32 graphs, cuda_status clearing the last error, the
# KernelTimes test's staged case): the targeted tests first (RuntimeGpu with debug logs,
# for the close-path copy error of call k3), then the whole suite. Packed into all.tgz.
set -u
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb
B=/tmp/nb/bin; S="$PWD/device-carry/shared"; O=/tmp/o; mkdir -p $O; export DLR_SHARED_DIR="$S"
fin() { gzip -f $O/*.log; tar czf "$OUT/all.tgz" -C $O .; }
trap fin EXIT
nvidia-smi -L | tee "$O/gpu.txt"
DLR_LOG_LEVEL=debug timeout 120 "$B/dlr_gpu_tests" --gtest_filter='CudaErrors.*:StreamMode.KernelTimes*:RuntimeGpu.*' >"$O/targeted.log" 2>&1
echo "targeted rc=$?"; grep -E '^\[  (PASSED|FAILED)|Failure|closing' "$O/targeted.log" | head -20
timeout 330 "$B/dlr_gpu_tests" --gtest_filter='-GpuBench.*:CudaErrors.*:StreamMode.KernelTimes*:RuntimeGpu.*:FusedConvTest.*:*CudaEngineE2E*' >"$O/gpu_tests.log" 2>&1
echo "suite rc=$?"; grep -E '^\[  (PASSED|FAILED)|Failure|closing|tests ran' "$O/gpu_tests.log" | head -20
