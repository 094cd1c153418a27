#!/usr/bin/env bash
# Thirty-ninth session, call 1 (build h23 = main at c69f61f): 1. scratch h2d3 (SMs pulling
# int8 weights from mapped pinned memory beside the copy engine, h2d3.cu); 2. the pending
# dlrun --model check (pending-device/dlrun_budget.sh with V=h23); 3. the GPU tests of the
# Runtime, the int8 format and every model end to end against the CPU. One tarball.
set -u
O=/tmp/o1; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/call1.tgz" -C /tmp o1 ob 2>/dev/null; }; trap fin EXIT
nvidia-smi -L | tee "$O/gpu.txt"
timeout 90 device-carry/scratch/h2d3 > $O/h2d3.txt 2>&1; echo "h2d3 rc=$? at ${SECONDS}s"; cat $O/h2d3.txt; fin
V=h23 timeout 200 bash docs/results/h100-2026-12-07c-pull/dlrun_budget.sh > $O/dlrun_budget.txt 2>&1; echo "dlrun_budget rc=$? at ${SECONDS}s"; tail -8 $O/dlrun_budget.txt; fin
X=/tmp/h23/bin; export DLR_SHARED_DIR="$PWD/device-carry/shared"
(cd $X && timeout $((260 - SECONDS)) ./dlr_gpu_tests --gtest_filter='RuntimeGpu.*:Int8Gpu.*:*CudaEngineE2E*:StreamMode.*' > $O/tests.log 2>&1; echo "tests rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran|^\[  FAILED' $O/tests.log | head -20
