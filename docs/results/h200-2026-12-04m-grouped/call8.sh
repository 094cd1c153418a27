#!/usr/bin/env bash
# One helper for the 16-byte pair check of maxpool, upsample and copy_channels
# (nhwc_pair16): the tests of those kernels and the end-to-end runs through them; then
# yolov4 @608 fp32 NHWC's per-layer table (dlbench --report table) on the final binaries.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob,os
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"
timeout 200 "$B/dlr_gpu_tests" --gtest_filter='PoolCopyTest.*:Issue9OpsTest.*:Models/CudaEngineE2E.*:StreamMode.BitIdenticalToPreload' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[==========\]|^\[  (PASSED|FAILED|SKIPPED)|Failure' "$O/tests.log" | head -20
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
P="--size 608 --precision fp32 --cache --weights $W --layout nhwc"
DLR_CACHE_DIR=/tmp/cn timeout 90 "$B/dlbench" "$y" $P --iters 3 --warmup 1 >"$O/first.txt" 2>&1; echo "first rc=$?"
DLR_CACHE_DIR=/tmp/cn timeout 90 "$B/dlbench" "$y" $P --iters 200 --warmup 20 --report table --json "$O/report.json" >"$O/report.txt" 2>&1
echo "report rc=$?"; grep -A1 '^config' "$O/report.txt" | tail -1; grep -A30 -i 'top layers\|layer ' "$O/report.txt" | head -40
