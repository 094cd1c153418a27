#!/usr/bin/env bash
# Thirty-fourth session: what slicing costs the strict-fp32 (3xTF32) kernels, per sliced
# conv of yolov4 @608 (ConvAlgoBench.SlicedThreeTf32), and one profiled fp32 NHWC preload
# (the unsliced per-layer kernel times on the same card). V: the build (default h13).
set -u
O=/tmp/o3; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o3; }; trap fin EXIT
v=${V:-h13}; rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
(cd $X && DLR_GPU_BENCH=1 DLR_BENCH_JSON=$O/bench timeout 300 ./dlr_gpu_tests --gtest_filter='ConvAlgoBench.SlicedThreeTf32' > $O/sliced.log 2>&1; echo "bench rc=$? at ${SECONDS}s")
grep -E '^\[sliced\]|FAILED|PASSED' $O/sliced.log
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null
export DLR_CACHE_DIR=/tmp/cf
timeout 120 $X/dlbench "$y" --weights $W --size 608 --cache --iters 10 --warmup 5 --precision fp32 --layout nhwc --mode preload --report table --json $O/prof_pre_nhwc.json > $O/prof_pre_nhwc.txt 2>&1
echo "prof rc=$? at ${SECONDS}s"; grep -E '^cuda' $O/prof_pre_nhwc.txt
