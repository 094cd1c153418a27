#!/usr/bin/env bash
# Thirty-fourth session, call 6 (GPU-b89d0194): h15 = the 3xTF32 in-place read moved into the engine
# (CudaEngine::x3_input; run_conv unchanged) against h13, one round, then the GPU tests
# of the change on h15.
set -u
O=/tmp/o6; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o6; }; trap fin EXIT
for v in h13 h15; do rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; done
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/h13/bin/dlgen "$y" $W >/dev/null
b() { local v=$1 n=$2 it=$3; shift 3
  DLR_CACHE_DIR=/tmp/cf_$v timeout 100 /tmp/$v/bin/dlbench "$y" --weights $W --size 608 --cache --iters $it --warmup 5 \
    --precision fp32 --layout nhwc "$@" --json "$O/${v}_$n.json" >"$O/${v}_$n.txt" 2>&1
  echo "${v}_$n rc=$? at ${SECONDS}s $(grep -E '^cuda' "$O/${v}_$n.txt" | head -1 | awk '{print $2}')"; }
rows=("pres4 --mode preload --slot-size 4MiB" "st8 --mode stream --weight-budget 8MiB" "pre --mode preload")
for v in h13 h15; do for r in "${rows[@]}"; do set -- $r; n=$1; shift; b $v fill_$n 3 "$@"; done; done
for round in 1; do for v in h13 h15; do for r in "${rows[@]}"; do set -- $r; n=$1; shift; b $v ${n}_$round 40 "$@"; done; done; done
grep -h '^cuda/stream' $O/h1?_st8_1.txt
(cd /tmp/h15/bin && timeout 120 ./dlr_gpu_tests --gtest_filter='Tf32x3Test.*:Axes/SlicedGpu.*:SlicedGpuAuto.*' > $O/tests.log 2>&1; echo "tests rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED) |^\[  FAILED|tests ran' $O/tests.log
