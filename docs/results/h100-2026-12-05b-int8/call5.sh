#!/usr/bin/env bash
# Call 5 (twenty-fifth session): int8 expansion, three builds on one card:
#   ob  = the build of calls 1-3 (one weight a thread; kernel times at open with the
#         expansion in line on the compute stream);
#   nb1 = the batched expansion at eight weights a thread;
#   nb2 = nb1 + kernel times at open with the expansion on its own stream, as an inference
#         does (kernel-times format 4).
# 1. nb2's Int8Gpu tests;
# 2. issue 33's rows, every row its own dlbench process, each build with its own kernel
#    cache (filled first), two rounds: fp16 preload, int8 preload, int8 stream at the
#    minimum pool (8 MiB).
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in ob:bin nb1:bin-new nb2:bin-new2; do mkdir -p /tmp/${v%%:*} && tar xJf device-carry/${v#*:}.tar.xz -C /tmp/${v%%:*}; done
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
timeout 60 /tmp/nb2/bin/dlr_gpu_tests --gtest_filter='Int8Gpu.*' >"$O/tests.log" 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED)|Failure' "$O/tests.log" | head
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/nb2/bin/dlgen "$y" $W >/dev/null
b() { local v=$1 n=$2; shift 2; DLR_CACHE_DIR=/tmp/c_$v timeout 40 /tmp/$v/bin/dlbench "$y" --size 608 --weights $W "$@" --cache \
  --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$? at ${SECONDS}s"; }
for v in ob nb1 nb2; do
  b $v w_$v --precision fp16 --mode preload,stream --weight-budget min --weight-format int8 --iters 3 --warmup 1 --isolate
done
b nb2 w16 --precision fp16 --iters 3 --warmup 1
for r in 1 2; do
  b nb2 fp16_$r --precision fp16 --iters 300 --warmup 30
  for v in ob nb1 nb2; do
    b $v ${v}_i8pre_$r --precision fp16 --weight-format int8 --iters 300 --warmup 30
    b $v ${v}_i8min_$r --precision fp16 --mode stream --weight-budget min --weight-format int8 --iters 300 --warmup 30
  done
done
for f in $O/*_[12].txt; do echo "$(basename $f .txt): $(grep -A1 '^config' $f | tail -1 | cut -c30-220)"; done
