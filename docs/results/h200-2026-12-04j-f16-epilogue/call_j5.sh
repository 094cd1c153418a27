#!/usr/bin/env bash
# Call j5 (final code, the binaries of call j4): the rest of the GPU suite (j4 ran PoolCopyTest,
# BiasActivationTest, CudaEngineE2E, FusionGpu and the shortcut tests on the same binaries).
set -u
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
export DLR_SHARED_DIR="$PWD/device-carry/shared"; O="$OUT"
nvidia-smi -L | tee "$O/gpu.txt"
timeout 200 "$B/dlr_gpu_tests" --gtest_filter='-GpuBench.*:FusedConvTest.MatchesTheCpuReference:PoolCopyTest.*:BiasActivationTest.*:*CudaEngineE2E*:FusionGpu.*:*Shortcut*' >"$O/gpu_tests.log" 2>&1
echo "gpu suite rc=$? $(grep -E '^\[  (PASSED|FAILED)|SKIPPED \] [0-9]' "$O/gpu_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|Failure' "$O/gpu_tests.log" | head -20; grep -c '^\[       OK' "$O/gpu_tests.log"; tail -3 "$O/gpu_tests.log"
gzip "$O/gpu_tests.log"; ls -la "$O"
