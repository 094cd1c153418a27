#!/usr/bin/env bash
# Forty-first session, call 1 (build V = h26: main at 69f76b8, packed as
# docs/results/pending-device/README.md says): issue 30's four models at 30 % of their
# separate preload memory, max-slowdown and sum splits, one dlbench process each, with the
# round printed against its lower bound (runtime/multi/round_bound.h), back to back and
# paced; the GPU suite (its RuntimeGpu tests first), whose first test now checks Runtime::round_bound
# against the joint plan's predicted round (written in the fortieth session, which had no
# device time), and each model against its bound alone (Runtime::alone_bounds). One tarball.
set -u
O=/tmp/o1; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/call1.tgz" -C /tmp o1; }; trap fin EXIT
v=${V:?name the build}; [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }
X=/tmp/$v/bin; nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"; M=$S/models; SW="$S/weights"
(cd $X && timeout 120 ./dlr_gpu_tests --gtest_filter='RuntimeGpu.*' > $O/tests.log 2>&1; echo "RuntimeGpu rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) |round lower bound| alone: ' $O/tests.log | cut -c1-200 | head -20; fin
export DLR_CACHE_DIR=/tmp/c_models
A="$M/yolov4.cfg@608"; B="$M/yolov3.cfg@608"; C="$M/yolov4-tiny.cfg@416"; D="$SW/yolo-fastest-1.1.cfg:$SW/yolo-fastest-1.1.weights@416"
for split in max-slowdown sum; do
  timeout 110 $X/dlbench --models "$A,$B,$C,$D" --runtime-budget 30% --split $split --json "$O/$split.json" >"$O/$split.txt" 2>&1
  echo "$split rc=$? at ${SECONDS}s"; grep -E '^model  |^yolo|^round robin|^each model alone' "$O/$split.txt" | cut -c1-240; fin
done
# Paced (dlbench --models --period-ms, new in h26): one inference begun every 5 ms, the
# models in turn (a gap of at least 2.7 ms before each), the gap declared to the joint plan
# as a 2.5 ms prefetch lead; both splits.
for split in max-slowdown sum; do
  timeout 110 $X/dlbench --models "$A,$B,$C,$D" --runtime-budget 30% --split $split --period-ms 5 --prefetch-lead 2.5 \
    --no-isolate-baselines --json "$O/paced_$split.json" >"$O/paced_$split.txt" 2>&1
  echo "paced $split rc=$? at ${SECONDS}s"; grep -E '^model  |^yolo|^round robin|^each model alone' "$O/paced_$split.txt" | cut -c1-240; fin
done
# The rest of the GPU suite last, in the time left (LIMIT s in all, default 450).
(cd $X && timeout $((${LIMIT:-450} - SECONDS)) ./dlr_gpu_tests --gtest_filter='-RuntimeGpu.*' > $O/suite.log 2>&1; echo "suite rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran' $O/suite.log | head -30; fin
