#!/usr/bin/env bash
# The whole GPU suite on the final binaries of this session (the 3xTF32 GEMM form), benchmarks behind DLR_GPU_BENCH aside.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob,os
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"
timeout 470 "$B/dlr_gpu_tests" --gtest_filter='-GpuBench.*:ConvAlgoBench.*' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[==========\]|^\[  (PASSED|FAILED|SKIPPED)|Failure' "$O/tests.log" | head -20
