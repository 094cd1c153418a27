#!/usr/bin/env bash
# Call 3 (twenty-fifth session): issue 32's rows on the card its targets name (H100), every
# row its own dlbench process with the kernel cache (--cache, caches filled first), the
# output selection on the GPU (--decode gpu; fp16 and tiny also cpu); issue 33's int8 rows; two
# rounds. Then the fusion, algorithm and
# preprocessing GPU tests with the time left.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
t="$S/models/yolov4-tiny.cfg"; TW=/tmp/t.weights; "$B/dlgen" "$t" $TW >/dev/null
b() { local n=$1; shift; DLR_CACHE_DIR=/tmp/cn timeout 90 "$B/dlbench" "$@" --cache ${DEC:---decode gpu} --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$? at ${SECONDS}s"; }
Y="$y --size 608 --weights $W"; T="$t --size 416 --weights $TW"
b w32 $Y --precision fp32 --iters 3 --warmup 1
b w16 $Y --precision fp16 --iters 3 --warmup 1
b wtf $Y --precision tf32 --iters 3 --warmup 1
b wt16 $T --precision fp16 --iters 3 --warmup 1
b wb8 $Y --precision fp16 --batch 8 --iters 3 --warmup 1
for r in 1 2; do
  b fp16_$r $Y --precision fp16 --iters 300 --warmup 30
  DEC="--decode cpu" b fp16cpu_$r $Y --precision fp16 --iters 300 --warmup 30
  b tf32_$r $Y --precision tf32 --iters 300 --warmup 30
  b fp32_$r $Y --precision fp32 --iters 200 --warmup 20
  b tiny16_$r $T --precision fp16 --iters 500 --warmup 50
  DEC="--decode cpu" b tiny16cpu_$r $T --precision fp16 --iters 500 --warmup 50
  b b8_$r $Y --precision fp16 --batch 8 --iters 100 --warmup 10
  b s50_$r $Y --precision fp16 --mode stream --weight-budget 50% --iters 200 --warmup 20
  b smin_$r $Y --precision fp16 --mode stream --weight-budget min --iters 200 --warmup 20
  b i8pre_$r $Y --precision fp16 --weight-format int8 --iters 300 --warmup 30
  b i8min_$r $Y --precision fp16 --mode stream --weight-budget min --weight-format int8 --iters 300 --warmup 30
done
for f in $O/*_[12].txt; do echo "$(basename $f .txt): $(grep -A1 '^config' $f | tail -1 | cut -c1-150)"; done
left=$((560 - SECONDS)); [ $left -gt 40 ] || exit 0
F='FusionGpu.*:ConvFusion.*:FusedConvTest.*:EpilogueAdd.*:ConcatConvGpu.*:AlgoChoiceGpu.*:ConvAlgoCacheGpu.*:Tf32x3*:PreprocessTest.*:BiasActivationTest.*:ShortcutTest.*:ConvAccuracy.*'
timeout $left "$B/dlr_gpu_tests" --gtest_filter="$F" >"$O/tests.log" 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure' "$O/tests.log" | head -20
