#!/usr/bin/env bash
# Thirty-seventh session, build h22: a Runtime opens a model without a slot again with
# 1 MiB slots when the shared ring of its whole layers does not fit. The runtime's GPU
# tests of slices and whole layers, then four models at 15 % and 30 % with no --slot-size (the runtime's choice)
# beside 1 MiB slots given, and dlrun --model on the six images at 15 %. One tarball.
set -u
O=/tmp/oa; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/auto.tgz" -C /tmp oa; }; trap fin EXIT
v=${V:-h22}; [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"; M=$S/models; SW="$S/weights"
(cd $X && timeout 150 ./dlr_gpu_tests --gtest_filter='RuntimeGpu.LayersKeptWhole*:RuntimeGpu.ModelsMatch*:WholeStagingGpu.*' > $O/tests.log 2>&1;
 echo "tests rc=$? at ${SECONDS}s"); grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran|: slot ' $O/tests.log; fin
export DLR_CACHE_DIR=/tmp/c_models
MODELS="$M/yolov4.cfg@608,$M/yolov3.cfg@608,$M/yolov4-tiny.cfg@416,$SW/yolo-fastest-1.1.cfg:$SW/yolo-fastest-1.1.weights@416"
row() {  # NAME BUDGET FLAGS...
  local n=$1 b=$2; shift 2
  timeout 100 $X/dlbench --models "$MODELS" --runtime-budget $b --split max-slowdown "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -A5 '^model  ' "$O/$n.txt" | head -6; grep -E '^device memory|dlbench:|opening it again' "$O/$n.txt" | cut -c1-240; fin
}
DLR_LOG_LEVEL=info row auto15 15%
row kept15 15% --slot-size 1MiB --slice-by auto
row auto30 30%
I=$(ls $S/images/*.ppm | head -6); G=/tmp/gen; mkdir -p $G
for c in yolov4 yolov3 yolov4-tiny; do $X/dlgen $M/$c.cfg $G/$c.weights > /dev/null || echo "dlgen $c failed"; done
DLR_LOG_LEVEL=info timeout 120 $X/dlrun --model $M/yolov4.cfg:$G/yolov4.weights@608 --model $M/yolov3.cfg:$G/yolov3.weights@608 \
  --model $M/yolov4-tiny.cfg:$G/yolov4-tiny.weights@416 \
  --model $SW/yolo-fastest-1.1.cfg:$SW/yolo-fastest-1.1.weights@416 --runtime-budget 15% $I > $O/dlrun15.txt 2>&1
echo "dlrun rc=$? at ${SECONDS}s"; grep -E 'opening it again|yolo-fastest-1.1\] .*%|runtime|error' $O/dlrun15.txt | head -20
