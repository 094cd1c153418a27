#!/usr/bin/env bash
# The GEMM form on NCHW plans (strict fp32's default layout): the tests it touches, the
# per-conv forms bench (NHWC and NCHW), then yolov4 @608 fp32 strict against the base
# (bin-prev: the eighteenth session's binaries), each its own process: NCHW (default)
# preload and streamed at 8 MiB, NHWC preload, yolov4-tiny @416 NCHW.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb /tmp/pb && tar xJf device-carry/bin.tar.xz -C /tmp/nb && tar xJf device-carry/bin-prev.tar.xz -C /tmp/pb
B=/tmp/nb/bin; PB=/tmp/pb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob,os
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"
timeout 200 "$B/dlr_gpu_tests" --gtest_filter='Tf32x3Test.*:AlgoChoiceGpu.*:ConvAlgoCacheGpu.*:StreamMode.BitIdenticalToPreload:Axes/SlicedGpu.*:CudaEngine.*' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure|strict fp32|NCHW, [0-9]' "$O/tests.log" | head -40
DLR_GPU_BENCH=1 DLR_BENCH_JSON=$O/bench timeout 150 "$B/dlr_gpu_tests" --gtest_filter='ConvAlgoBench.ThreeTf32Forms' >"$O/forms.log" 2>&1
echo "forms rc=$?"; grep -E '\[forms\]|Failure' "$O/forms.log" | head -60
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
t="$S/models/yolov4-tiny.cfg"; TW=/tmp/t.weights; "$B/dlgen" "$t" $TW >/dev/null
b() { local bin=$1 n=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 90 "$bin/dlbench" "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; }
P="--size 608 --precision fp32 --cache --weights $W"
DLR_LOG_LEVEL=debug b $B first /tmp/cn "$y" $P --iters 20 --warmup 2
b $PB pfirst /tmp/cp "$y" $P --iters 3 --warmup 1
b $B nhwcfirst /tmp/cn "$y" $P --layout nhwc --iters 3 --warmup 1
b $B tfirst /tmp/cn "$t" --size 416 --precision fp32 --cache --weights $TW --iters 3 --warmup 1
b $PB ptfirst /tmp/cp "$t" --size 416 --precision fp32 --cache --weights $TW --iters 3 --warmup 1
for r in 1 2; do
  b $B new$r /tmp/cn "$y" $P --iters 200 --warmup 20
  b $PB base$r /tmp/cp "$y" $P --iters 200 --warmup 20
done
b $B nhwc /tmp/cn "$y" $P --layout nhwc --iters 200 --warmup 20
b $B tiny /tmp/cn "$t" --size 416 --precision fp32 --cache --weights $TW --iters 300 --warmup 30
b $PB ptiny /tmp/cp "$t" --size 416 --precision fp32 --cache --weights $TW --iters 300 --warmup 30
b $B s8 /tmp/cn "$y" $P --mode stream --weight-budget 8MiB --iters 150 --warmup 20
b $PB ps8 /tmp/cp "$y" $P --mode stream --weight-budget 8MiB --iters 150 --warmup 20
for f in first new1 base1 new2 base2 nhwc tiny ptiny s8 ps8; do echo "$f: $(grep -A1 '^config' $O/$f.txt | tail -1)"; done
grep -h 'conv configurations timed' "$O/first.txt" | tail -1
grep -h 'startup' "$O/new1.txt" | head -1
