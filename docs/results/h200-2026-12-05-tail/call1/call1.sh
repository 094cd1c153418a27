#!/usr/bin/env bash
# Tail copies (--tail-prefetch, docs/streaming.md section 3): the GPU tests of the streamed
# engine (bit identity over consecutive inferences with tail copies first), then yolov4
# @608 fp16 / int8 / fp32 streamed at min, 50 % and 8 MiB slots with the tail off and on,
# each its own dlbench process (--cache, caches filled first), two rounds interleaved.
# Needs device-carry/bin.tar.xz built from the commit that brings this script.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb
B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
timeout 300 "$B/dlr_gpu_tests" --gtest_filter='StreamMode.*:CudaEngine.RepeatedRuns*:RuntimeGpu.*:Int8Gpu.*' \
  >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure|\[tail\]' "$O/tests.log" | head -40
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
b() { local n=$1; shift; DLR_CACHE_DIR=/tmp/c timeout 120 "$B/dlbench" "$@" --cache --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; }
Y="$y --size 608 --weights $W --mode stream"
b warm16 $Y --precision fp16 --weight-budget min --iters 3 --warmup 1
b warm32 $Y --precision fp32 --weight-budget min --iters 3 --warmup 1
for r in 1 2; do
  for t in off on; do
    b s50_${t}_$r $Y --precision fp16 --weight-budget 50% --tail-prefetch $t --iters 300 --warmup 30
    b smin_${t}_$r $Y --precision fp16 --weight-budget min --tail-prefetch $t --iters 300 --warmup 30
    b s2m_${t}_$r $Y --precision fp16 --slot-size 1MiB --weight-budget min --tail-prefetch $t --iters 200 --warmup 20
    b i8min_${t}_$r $Y --precision fp16 --weight-format int8 --weight-budget min --tail-prefetch $t --iters 300 --warmup 30
    b f32s8_${t}_$r $Y --precision fp32 --slot-size 4MiB --weight-budget 8MiB --tail-prefetch $t --iters 100 --warmup 10
  done
done
b pre16 $y --size 608 --weights $W --precision fp16 --iters 300 --warmup 30
# the open's cost of planning with the tail (compile_ms), caches warm
b st_tail $Y --precision fp16 --weight-budget 50% --tail-prefetch off,on --startup 3
for f in $O/*_[12].txt $O/pre16.txt; do echo "$(basename $f .txt): $(grep -A1 '^config' $f | tail -1)"; done
grep -h -o "\"tail_note\":\"[^\"]*\"" $O/*_on_1.json | head -10
