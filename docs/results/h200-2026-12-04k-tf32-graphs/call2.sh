#!/usr/bin/env bash
# Call k2: cuDNN graphs for tf32 (conv + bias + activation [+ residual] on f32 views).
# Base = 37d4d6e (bin-prev) against new, every row its own process; then the tests the
# change touches; everything packed into $OUT/all.tgz (few files come back).
set -u
mkdir -p /tmp/nb /tmp/base && tar xJf device-carry/bin.tar.xz -C /tmp/nb && tar xJf device-carry/bin-prev.tar.xz -C /tmp/base
B=/tmp/nb/bin; BB=/tmp/base/bin; S="$PWD/device-carry/shared"; O=/tmp/o; mkdir -p $O; export DLR_SHARED_DIR="$S"
fin() { tar czf "$OUT/all.tgz" -C $O .; }
trap fin EXIT
nvidia-smi -L | tee "$O/gpu.txt"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; t="$S/models/yolov4-tiny.cfg"; WT=/tmp/y4t.weights
"$B/dlgen" "$y" $W >/dev/null; "$B/dlgen" "$t" $WT >/dev/null
b() { local n=$1 bin=$2 c=$3; shift 3; DLR_CACHE_DIR=$c DLR_LOG_LEVEL=${LL:-info} timeout 60 "$bin/dlbench" "$@" --iters ${ITERS:-300} --warmup 20 --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? $(grep -E '^cuda/' "$O/$n.txt" | awk '{print $1, $2}')"; }
T="--size 608 --precision tf32 --cache --weights $W"
ITERS=5 b warm_base $BB /tmp/cb "$y" $T; LL=debug ITERS=5 b warm_new $B /tmp/cn "$y" $T
grep -E "startup:" "$O/warm_new.txt" | cut -c1-400
for r in 1 2; do b tf32_base_$r $BB /tmp/cb "$y" $T; b tf32_new_$r $B /tmp/cn "$y" $T; done
ITERS=50 b rept_base $BB /tmp/cb "$y" $T --report table; ITERS=50 b rept_new $B /tmp/cn "$y" $T --report table
ITERS=5 b warm16 $B /tmp/cn "$y" --size 608 --precision fp16 --cache --weights $W
b fp16_new $B /tmp/cn "$y" --size 608 --precision fp16 --cache --weights $W
b q8pre $B /tmp/cn "$y" --size 608 --precision fp16 --cache --weights $W --weight-format int8
ITERS=5 b warmt $B /tmp/cn "$t" --size 416 --precision tf32 --cache --weights $WT
b tiny_tf32_base $BB /tmp/cb "$t" --size 416 --precision tf32 --cache --weights $WT; b tiny_tf32_new $B /tmp/cn "$t" --size 416 --precision tf32 --cache --weights $WT
b b8_tf32_base $BB /tmp/cb "$y" $T --batch 8; b b8_tf32_new $B /tmp/cn "$y" $T --batch 8
timeout 150 "$B/dlr_gpu_tests" --gtest_filter='FusedConvTest.*:FusionGpu.*' >"$O/fused_tests.log" 2>&1
echo "fused tests rc=$?"; grep -E '^\[  (PASSED|FAILED)|Failure|refused|built,|error vs fp32' "$O/fused_tests.log" | head -20
grep -E '^\[fused\] f32' "$O/fused_tests.log" | awk '{print $NF}' | sort -g | tail -2
timeout 200 "$B/dlr_gpu_tests" --gtest_filter='*CudaEngineE2E*' >"$O/e2e_tests.log" 2>&1
echo "e2e rc=$?"; grep -E '^\[  (PASSED|FAILED)|Failure' "$O/e2e_tests.log" | head -10
