#!/usr/bin/env bash
# Call k3: the rest of the GPU suite on the tf32-graph binaries (call k2 ran FusedConvTest,
# FusionGpu and CudaEngineE2E); then fp16 and int8 at the minimum pool (kernel times at
# open and the copy profile, for a bound without the expansion). Packed into $OUT/all.tgz.
set -u
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb
B=/tmp/nb/bin; S="$PWD/device-carry/shared"; O=/tmp/o; mkdir -p $O; export DLR_SHARED_DIR="$S"
fin() { cp -r /tmp/c "$O/cache" 2>/dev/null; tar czf "$OUT/all.tgz" -C $O .; }
trap fin EXIT
nvidia-smi -L | tee "$O/gpu.txt"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
b() { local n=$1; shift; DLR_CACHE_DIR=/tmp/c timeout 90 "$B/dlbench" "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? $(grep -E '^cuda/' "$O/$n.txt" | awk '{print $1, $2}')"; }
P="--size 608 --precision fp16 --cache --weights $W"
ITERS=5 b warm "$y" $P --iters 5 --warmup 2
b p16 "$y" $P --iters 300 --warmup 20
b s16min "$y" $P --mode stream --weight-budget min --iters 200 --warmup 20
b q8min "$y" $P --weight-format int8 --mode stream --weight-budget min --iters 200 --warmup 20
b q8pre "$y" $P --weight-format int8 --iters 300 --warmup 20
timeout 400 "$B/dlr_gpu_tests" --gtest_filter='-GpuBench.*:FusedConvTest.*:FusionGpu.*:*CudaEngineE2E*' >"$O/gpu_tests.log" 2>&1
echo "tests rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED)|Failure|tests ran' "$O/gpu_tests.log" | head -20
