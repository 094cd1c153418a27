#!/usr/bin/env bash
# The 3xTF32 conv as a candidate of strict fp32's choice at open on NHWC plans: the tests
# it touches, then yolov4 @608 fp32 NHWC (first open, then warm runs) against NCHW and the
# base (bin-prev: this session's head before any change), each its own process.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb /tmp/pb && tar xJf device-carry/bin.tar.xz -C /tmp/nb && tar xJf device-carry/bin-prev.tar.xz -C /tmp/pb
B=/tmp/nb/bin; PB=/tmp/pb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob,os
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"
timeout 280 "$B/dlr_gpu_tests" --gtest_filter='AlgoChoiceGpu.*:Tf32x3Test.*:ConvAlgoCacheGpu.*:StreamMode.BitIdenticalToPreload:CudaEngine.*:Models/CudaEngineE2E.*' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure|strict fp32' "$O/tests.log" | head -20
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
b() { local bin=$1 n=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 90 "$bin/dlbench" "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; }
P="--size 608 --precision fp32 --cache --weights $W"
DLR_LOG_LEVEL=debug b $B first_nhwc /tmp/cn "$y" $P --layout nhwc --iters 20 --warmup 2
b $B first_nchw /tmp/cn "$y" $P --iters 3 --warmup 1
b $PB pwarm /tmp/cp "$y" $P --iters 3 --warmup 1
for r in 1 2; do
  b $B nhwc$r /tmp/cn "$y" $P --layout nhwc --iters 200 --warmup 20
  b $B nchw$r /tmp/cn "$y" $P --iters 200 --warmup 20
  b $PB base$r /tmp/cp "$y" $P --iters 200 --warmup 20
done
b $B s8nhwc /tmp/cn "$y" $P --layout nhwc --mode stream --weight-budget 8MiB --iters 150 --warmup 20
for f in first_nhwc nhwc1 nchw1 base1 nhwc2 nchw2 base2 s8nhwc; do echo "$f: $(grep -A1 '^config' $O/$f.txt | tail -1)"; done
grep -h 'conv configurations timed' "$O/first_nhwc.txt" | tail -1; grep -c '3xTF32' "$O/first_nhwc.txt"
grep -h 'startup' "$O/nhwc1.txt" | head -1
