#!/usr/bin/env bash
# The GPU suite's tests call 2's limit cut off, and where strict fp32's NHWC open spends
# its convolution set-up (dlbench --startup --json: 3xTF32 convs and the cuBLAS handle).
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb
B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob,os
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
for p in fp32 fp16; do
  DLR_CACHE_DIR=/tmp/cn timeout 90 "$B/dlbench" "$y" --size 608 --weights $W --precision $p --cache --iters 3 --warmup 1 >/dev/null 2>&1
  DLR_CACHE_DIR=/tmp/cn timeout 60 "$B/dlbench" "$y" --size 608 --weights $W --precision $p --cache --iters 3 --warmup 1 --json $O/su_$p.json >$O/su_$p.txt 2>&1
  grep -h 'startup:' $O/su_$p.txt
done
timeout 300 "$B/dlr_gpu_tests" --gtest_filter='Issue9Models/CudaEngineE2E.*yolov4_sam*:Issue9Models/CudaEngineE2E.*Gaussian*:Issue9Models/CudaEngineE2E.*prn:Modes/DeviceFaults.*:Axes/SlicedGpu.*' >"$O/suite2.log" 2>&1
echo "suite2 rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure' "$O/suite2.log" | head -30
