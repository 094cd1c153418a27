#!/usr/bin/env bash
# Forty-fifth session, call 1. Build h32 = main with the join of neighbouring staged units
# and the ring's largest unit among the unit sizes tried; h30 = the forty-fourth session's
# build (the baseline planner). yolov4 @608 fp16, dlbench, every row its own process after
# a filling run: the fp16 and int8 preloads, int8 at the minimum pool with both builds,
# two rounds; then the same int8 rows once more under a CUPTI trace (libcupti_trace.so:
# every kernel and copy of the process with the GPU's timestamps); then the int8 GPU tests
# and those of the streamed paths in the time left (LIMIT s in all). One tarball.
set -u
O=/tmp/o1; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/call1.tgz" -C /tmp o1; }; trap fin EXIT
for v in h32 h30; do [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }; done
X=/tmp/h32/bin; nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null
export DLR_CACHE_DIR=/tmp/c1
b() { local v=$1 n=$2 it=$3; shift 3
  timeout 120 /tmp/$v/bin/dlbench "$y" --weights $W --size 608 --cache --iters $it --warmup 5 "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s $(grep -E '^cuda' "$O/$n.txt" | head -1 | cut -c1-330)"; }
rows=(
  "h32 pre16 --precision fp16 --mode preload"
  "h32 pre_i8 --precision fp16 --mode preload --weight-format int8"
  "h32 i8 --precision fp16 --mode stream --weight-budget min --weight-format int8"
  "h30 i8_h30 --precision fp16 --mode stream --weight-budget min --weight-format int8"
  "h32 i8_inline --precision fp16 --mode stream --weight-budget min --weight-format int8 --expansion-stage off"
)
for r in "${rows[@]}"; do set -- $r; v=$1; n=$2; shift 2; b $v fill_$n 3 "$@"; done; fin
for round in 1 2; do
  for r in "${rows[@]}"; do set -- $r; v=$1; n=$2; shift 2; b $v ${n}_$round 60 "$@"; done; fin
done
for r in "${rows[@]:1}"; do set -- $r; v=$1; n=$2; shift 2
  mkdir -p $O/tr_$n; CUDA_INJECTION64_PATH=/tmp/$v/bin/libcupti_trace.so CUPTI_OUT=$O/tr_$n b $v tr_$n 60 "$@"
  ls $O/tr_$n | head -3; done; fin
left=$((${LIMIT:-540} - SECONDS)); [ $left -gt 20 ] || { echo "no time left for the tests"; exit 0; }
(cd $X && timeout $left ./dlr_gpu_tests \
  --gtest_filter='Int8Gpu.*:StreamMode.*:CudaEngine.*:WholeStagingGpu.*:StreamPrefetch.*:StorageMode.*:SlicedGpuAuto.*' > $O/tests.log 2>&1
 echo "tests rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure|staged blobs' $O/tests.log | cut -c1-220 | head -30
echo "end at ${SECONDS}s"
