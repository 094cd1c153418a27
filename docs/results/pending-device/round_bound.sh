#!/usr/bin/env bash
# Fortieth session, for a later one with a device (build V = main at or after the round
# bound, packed as this folder's README says): the Runtime's GPU tests, whose first one now
# checks Runtime::round_bound against the joint plan's predicted round; then issue 30's
# four models at 30 % of their separate preload memory in the measured order, with the
# max-slowdown split (as measured so far) and the sum split, one dlbench process each:
# dlbench prints the round against its lower bound (runtime/multi/round_bound.h) under
# the table and writes it to the JSON (runs[0].round_ms, runs[0].round_bound). About
# 4 minutes. One tarball.
set -u
O=/tmp/orb; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/round_bound.tgz" -C /tmp orb; }; trap fin EXIT
v=${V:?name the build, e.g. V=h24}; [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }
X=/tmp/$v/bin; nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"; M=$S/models; SW="$S/weights"
(cd $X && timeout 150 ./dlr_gpu_tests --gtest_filter='RuntimeGpu.*' > $O/tests.log 2>&1; echo "tests rc=$? at ${SECONDS}s" | tee -a $O/tests.log)
grep -E '^\[  (PASSED|FAILED|SKIPPED) |round lower bound' $O/tests.log | head; fin
export DLR_CACHE_DIR=/tmp/c_models
A="$M/yolov4.cfg@608"; B="$M/yolov3.cfg@608"; C="$M/yolov4-tiny.cfg@416"; D="$SW/yolo-fastest-1.1.cfg:$SW/yolo-fastest-1.1.weights@416"
for split in max-slowdown sum; do
  timeout 110 $X/dlbench --models "$A,$B,$C,$D" --runtime-budget 30% --split $split --json "$O/$split.json" >"$O/$split.txt" 2>&1
  echo "$split rc=$? at ${SECONDS}s"; grep -E '^model  |^yolo|^round robin' "$O/$split.txt" | cut -c1-240; fin
done
