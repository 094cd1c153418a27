#!/usr/bin/env bash
# Thirty-ninth session, call 2, on the card of call 1 right after it (build h23): the GPU
# suite except the suites call 1 ran. This is the command as run, one line there.
O=/tmp/o2; mkdir -p $O; X=/tmp/h23/bin; [ -d $X ] || { mkdir -p /tmp/h23; tar xJf device-carry/h23.tar.xz -C /tmp/h23; }
export DLR_SHARED_DIR="$PWD/device-carry/shared"; nvidia-smi -L > $O/gpu.txt
(cd $X && timeout 340 ./dlr_gpu_tests --gtest_filter='-RuntimeGpu.*:Int8Gpu.*:*CudaEngineE2E*:StreamMode.*' > $O/tests.log 2>&1; echo "suite rc=$? at ${SECONDS}s" | tee -a $O/tests.log)
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran' $O/tests.log | head -30; tar czf $OUT/call2.tgz -C /tmp o2
