#!/usr/bin/env bash
# After call 8: a conv kept as 3xTF32 makes no cuDNN conv at a later open (no query).
# The tests it touches; yolov4 @608 fp32 NHWC first and warm opens, NCHW, base.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb /tmp/pb && tar xJf device-carry/bin.tar.xz -C /tmp/nb && tar xJf device-carry/bin-prev.tar.xz -C /tmp/pb
B=/tmp/nb/bin; PB=/tmp/pb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob,os
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"
timeout 280 "$B/dlr_gpu_tests" --gtest_filter='AlgoChoiceGpu.*:Tf32x3Test.*:ConvAlgoCacheGpu.*:StreamMode.*:CudaEngine.*:Models/CudaEngineE2E.*:StorageMode.BitIdenticalToPreload' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure|strict fp32' "$O/tests.log" | head -20
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
b() { local bin=$1 n=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 90 "$bin/dlbench" "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; }
P="--size 608 --precision fp32 --cache --weights $W"
b $B first_nhwc /tmp/cn "$y" $P --layout nhwc --iters 20 --warmup 2
b $B first_nchw /tmp/cn "$y" $P --iters 3 --warmup 1
b $PB pwarm /tmp/cp "$y" $P --iters 3 --warmup 1
for r in 1 2; do
  b $B nhwc$r /tmp/cn "$y" $P --layout nhwc --iters 200 --warmup 20
  b $B nchw$r /tmp/cn "$y" $P --iters 200 --warmup 20
  b $PB base$r /tmp/cp "$y" $P --iters 200 --warmup 20
done
for f in first_nhwc nhwc1 nchw1 base1 nhwc2 nchw2 base2; do echo "$f: $(grep -A1 '^config' $O/$f.txt | tail -1)"; done
grep -h 'startup' "$O/first_nhwc.txt" "$O/nhwc1.txt" | cut -c1-420
