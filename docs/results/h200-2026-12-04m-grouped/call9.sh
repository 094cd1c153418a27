#!/usr/bin/env bash
# The GEMM form's patches split as they are unrolled (split_tf32_patches; the im2col pass
# and its buffer gone): its tests and the forms bench, then yolov4 @608 and yolov4-tiny
# @416 fp32 NHWC against bin-prev (0b31f24: im2col, then the split), each its own process.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb /tmp/pb && tar xJf device-carry/bin.tar.xz -C /tmp/nb && tar xJf device-carry/bin-prev.tar.xz -C /tmp/pb
B=/tmp/nb/bin; PB=/tmp/pb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
python3 -c "import cv2,glob,os
for f in glob.glob('$S/images/*.jpg'): cv2.imwrite(f[:-4]+'.ppm', cv2.imread(f))"
timeout 150 "$B/dlr_gpu_tests" --gtest_filter='Tf32x3Test.*:AlgoChoiceGpu.*' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure|strict fp32' "$O/tests.log" | head -20
DLR_GPU_BENCH=1 DLR_BENCH_JSON=$O/bench timeout 120 "$B/dlr_gpu_tests" --gtest_filter='ConvAlgoBench.ThreeTf32Forms' >"$O/forms.log" 2>&1
echo "forms rc=$?"; grep -E '\[forms\] sums|Failure|^\[  (PASSED|FAILED)' "$O/forms.log" | head
grep -E '\[forms\]' "$O/forms.log" | grep -E '19x19|38x38' | head -30
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
t="$S/models/yolov4-tiny.cfg"; TW=/tmp/t.weights; "$B/dlgen" "$t" $TW >/dev/null
b() { local bin=$1 n=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 90 "$bin/dlbench" "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; }
P="--size 608 --precision fp32 --cache --weights $W --layout nhwc"
TP="--size 416 --precision fp32 --cache --weights $TW --layout nhwc"
b $B first /tmp/cn "$y" $P --iters 3 --warmup 1
b $PB pfirst /tmp/cp "$y" $P --iters 3 --warmup 1
b $B tfirst /tmp/cn "$t" $TP --iters 3 --warmup 1
b $PB ptfirst /tmp/cp "$t" $TP --iters 3 --warmup 1
for r in 1 2; do
  b $B new$r /tmp/cn "$y" $P --iters 200 --warmup 20
  b $PB base$r /tmp/cp "$y" $P --iters 200 --warmup 20
  b $B tiny$r /tmp/cn "$t" $TP --iters 300 --warmup 30
  b $PB ptiny$r /tmp/cp "$t" $TP --iters 300 --warmup 30
done
for f in new1 base1 new2 base2 tiny1 ptiny1 tiny2 ptiny2; do echo "$f: $(grep -A1 '^config' $O/$f.txt | tail -1)"; done
