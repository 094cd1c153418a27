#!/usr/bin/env bash
# Call k5: a replan drops the shared-ring binding (runtime binds again): the tests of the
# shared ring, replans and error paths. Packed into all.tgz.
set -u
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb
B=/tmp/nb/bin; S="$PWD/device-carry/shared"; O=/tmp/o; mkdir -p $O; export DLR_SHARED_DIR="$S"
fin() { gzip -f $O/*.log; tar czf "$OUT/all.tgz" -C $O .; }
trap fin EXIT
nvidia-smi -L | tee "$O/gpu.txt"
timeout 130 "$B/dlr_gpu_tests" --gtest_filter='RuntimeGpu.*:CudaErrors.*:StreamMode.*:Int8Gpu.*:*DeviceFaults*' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED)|Failure|closing|tests ran' "$O/tests.log" | head -20
