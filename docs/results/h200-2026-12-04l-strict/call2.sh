#!/usr/bin/env bash
# Issue 32, strict fp32 with algorithms measured at the first open (runtime/cuda/algo_choice.cpp):
# the tests it touches, then yolov4 @608 fp32 preload new vs base (bin-prev: this session's
# HEAD before the change), interleaved, each its own process; the first open's timing cost;
# fp32 streamed at 8 MiB (issue 30's row).
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb /tmp/pb && tar xJf device-carry/bin.tar.xz -C /tmp/nb && tar xJf device-carry/bin-prev.tar.xz -C /tmp/pb
B=/tmp/nb/bin; PB=/tmp/pb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
timeout 300 "$B/dlr_gpu_tests" --gtest_filter='AlgoChoiceGpu.*:ConvAlgoCacheGpu.*:ConvAlgos.*:ConvWorkspace.*:CudaEngineE2E.*:StreamMode.BitIdenticalToPreload:CudaEngine.*' >"$O/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure|strict fp32' "$O/tests.log" | head -20
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
b() { local bin=$1 n=$2 c=$3; shift 3; DLR_CACHE_DIR=$c timeout 120 "$bin/dlbench" "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; }
P="--size 608 --precision fp32 --cache --weights $W"
DLR_LOG_LEVEL=debug b $B first /tmp/cn "$y" $P --iters 20 --warmup 2
b $PB pwarm /tmp/cp "$y" $P --iters 3 --warmup 1
for r in 1 2; do
  b $B new$r /tmp/cn "$y" $P --iters 200 --warmup 20
  b $PB base$r /tmp/cp "$y" $P --iters 200 --warmup 20
done
b $B s8 /tmp/cn "$y" $P --mode stream --weight-budget 8MiB --iters 200 --warmup 20
b $PB s8base /tmp/cp "$y" $P --mode stream --weight-budget 8MiB --iters 200 --warmup 20
for f in first new1 base1 new2 base2 s8 s8base; do echo "$f: $(grep -A1 '^config' $O/$f.txt | tail -1)"; done
grep -h 'conv configurations timed' "$O/first.txt" | tail -2
