#!/usr/bin/env bash
# 3xTF32 with the reduction cut into chunks (512 and 256 products), NHWC and NCHW, per
# conv of yolov4 @608: time and error against IMPLICIT_GEMM (ConvAlgoBench).
set -u
O=/tmp/o; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
mkdir -p /tmp/nb && tar xJf device-carry/bin.tar.xz -C /tmp/nb; B=/tmp/nb/bin
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
nvidia-smi -L | tee "$O/gpu.txt"
DLR_GPU_BENCH=1 DLR_BENCH_JSON=$O/algos.json timeout 400 "$B/dlr_gpu_tests" --gtest_filter='ConvAlgoBench.*' >"$O/algos.log" 2>&1
echo "bench rc=$?"; grep '\[algo\] sums' "$O/algos.log"
