#!/usr/bin/env bash
# Issue 32, strict fp32: what each cuDNN algorithm gives per conv of yolov4 @608
# (ConvAlgoBench: FMA algorithms NCHW/NHWC and the 3xTF32 split, with their errors), and
# the network's fp32 preload with heuristics and with --find, each its own process.
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
DLR_GPU_BENCH=1 DLR_BENCH_JSON=$O/algos.json timeout 200 "$B/dlr_gpu_tests" --gtest_filter='ConvAlgoBench.*' >"$O/algos.log" 2>&1
echo "bench rc=$?"; grep '\[algo\] sums' "$O/algos.log"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; "$B/dlgen" "$y" $W >/dev/null
b() { local n=$1; shift; DLR_CACHE_DIR=/tmp/c timeout 120 "$B/dlbench" "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1; echo "$n rc=$?"; }
P="--size 608 --precision fp32 --cache --weights $W"
b warm "$y" $P --iters 3 --warmup 1
b fp32 "$y" $P --iters 200 --warmup 20
b fp32find "$y" $P --find --iters 200 --warmup 20
b fp32b "$y" $P --iters 200 --warmup 20
grep -h "median" "$O"/*.txt | head
