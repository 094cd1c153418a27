#!/usr/bin/env bash
# Forty-fourth session, call 1 (build V = h30: main with the expansion stage, packed as
# docs/results/pending-device/README.md says): the int8 GPU tests first (the expansion
# measured apart, the engine's batch per copy, bit-identity to the preload), then
# yolov4 @608, dlbench, every row its own process after a filling run, two rounds: the
# fp16 and int8 preloads; int8 weights at the minimum pool with --expansion-stage on and
# off, and on with --tail-prefetch on. The other GPU tests of the paths the change reaches
# last, in the time left (LIMIT s in all). One tarball.
set -u
O=/tmp/o1; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/call1.tgz" -C /tmp o1; }; trap fin EXIT
v=${V:?name the build}; [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }
X=/tmp/$v/bin; nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null
(cd $X && timeout 200 ./dlr_gpu_tests --gtest_filter='Int8Gpu.*' > $O/tests_int8.log 2>&1
 echo "int8 tests rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) |expansions|staged blobs|Failure' $O/tests_int8.log | cut -c1-220; fin
export DLR_CACHE_DIR=/tmp/c1
b() { local n=$1 it=$2; shift 2
  timeout 120 $X/dlbench "$y" --weights $W --size 608 --cache --iters $it --warmup 5 "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s $(grep -E '^cuda' "$O/$n.txt" | head -1 | cut -c1-300)"; }
rows=(
  "pre16 --precision fp16 --mode preload"
  "pre_i8 --precision fp16 --mode preload --weight-format int8"
  "i8 --precision fp16 --mode stream --weight-budget min --weight-format int8"
  "i8_inline --precision fp16 --mode stream --weight-budget min --weight-format int8 --expansion-stage off"
  "i8_tail --precision fp16 --mode stream --weight-budget min --weight-format int8 --tail-prefetch on"
)
for r in "${rows[@]}"; do set -- $r; n=$1; shift; b fill_$n 3 "$@"; done; fin
for round in 1 2; do
  for r in "${rows[@]}"; do set -- $r; n=$1; shift; b ${n}_$round 60 "$@"; done; fin
done
left=$((${LIMIT:-560} - SECONDS)); [ $left -gt 20 ] || { echo "no time left for the tests"; exit 0; }
(cd $X && timeout $left ./dlr_gpu_tests \
  --gtest_filter='StreamMode.*:StorageMode.*:StreamPrefetch.*:SlicedGpuAuto.*:CudaEngine.*:RuntimeGpu.*:MultiSession.*:WholeStagingGpu.*' > $O/tests.log 2>&1
 echo "tests rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure' $O/tests.log | cut -c1-220 | head -30
echo "end at ${SECONDS}s"
