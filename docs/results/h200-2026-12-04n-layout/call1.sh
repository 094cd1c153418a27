#!/usr/bin/env bash
# Strict fp32's auto layout resolved per GPU (NHWC + 3xTF32 on TF32 GPUs, preload with the
# kernel cache): the affected GPU tests, then issue 32's rows on one card, every row its own
# dlbench process (--cache, caches filled first), base = the session's start (85a5469).
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb /tmp/pb && tar xJf device-carry/bin.tar.xz -C /tmp/nb && tar xJf device-carry/bin-base.tar.xz -C /tmp/pb
B=/tmp/nb/bin; PB=/tmp/pb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
timeout 220 "$B/dlr_gpu_tests" --gtest_filter='AlgoChoiceGpu.*:ConvAlgoCacheGpu.*:Models/CudaEngineE2E.Fp32*/yolov4_tiny' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure|strict fp32|^\[       OK' "$O/tests.log" | head -30
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
t="$S/models/yolov4-tiny.cfg"; TW=/tmp/t.weights; "$B/dlgen" "$t" $TW >/dev/null
b() { local bin=$1 n=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 90 "$bin/dlbench" "$@" --cache --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; }
Y="$y --size 608 --weights $W"; T="$t --size 416 --weights $TW"
# caches: fp32 both builds, fp16 and tf32 (graph compilation) new build
b $B w32 /tmp/cn $Y --precision fp32 --iters 3 --warmup 1
b $PB pw32 /tmp/cp $Y --precision fp32 --iters 3 --warmup 1
b $B w16 /tmp/cn $Y --precision fp16 --iters 3 --warmup 1
b $B wtf /tmp/cn $Y --precision tf32 --iters 3 --warmup 1
b $B wt16 /tmp/cn $T --precision fp16 --iters 3 --warmup 1
b $B wb8 /tmp/cn $Y --precision fp16 --batch 8 --iters 3 --warmup 1
for r in 1 2; do
  b $B fp32_$r /tmp/cn $Y --precision fp32 --iters 200 --warmup 20
  b $PB base_fp32_$r /tmp/cp $Y --precision fp32 --iters 200 --warmup 20
  b $B fp16_$r /tmp/cn $Y --precision fp16 --iters 300 --warmup 30
  b $B tf32_$r /tmp/cn $Y --precision tf32 --iters 300 --warmup 30
  b $B tiny16_$r /tmp/cn $T --precision fp16 --iters 500 --warmup 50
  b $B b8_$r /tmp/cn $Y --precision fp16 --batch 8 --iters 100 --warmup 10
  b $B s50_$r /tmp/cn $Y --precision fp16 --mode stream --weight-budget 50% --iters 200 --warmup 20
  b $B smin_$r /tmp/cn $Y --precision fp16 --mode stream --weight-budget min --iters 200 --warmup 20
done
b $B fp32_nchw /tmp/cn $Y --precision fp32 --layout nchw --iters 200 --warmup 20
for f in $O/*_[12].txt $O/fp32_nchw.txt; do echo "$(basename $f .txt): $(grep -A1 '^config' $f | tail -1)"; done
grep -h -i 'memory\|workspace' $O/fp32_1.txt $O/base_fp32_1.txt | head -8
