#!/usr/bin/env bash
# Thirty-sixth session: four models on one Runtime (issue 30's row) with 1 MiB slots and
# the layers above them kept whole in the shared arena's idle bytes, against whole layers
# (no slot, the rows measured so far) and every layer sliced (--stage-whole off), at 30 %,
# 20 % and 15 % of their separate preload memory. One dlbench process per row, each with
# its own-process preload baselines; first the GPU tests the change touches. Everything
# in one tarball under $OUT.
set -u
O=/tmp/om; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/models.tgz" -C /tmp om; }; trap fin EXIT
v=${V:-h21}; [ -d /tmp/$v ] || { mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; }; X=/tmp/$v/bin
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"; M=$S/models; SW="$S/weights"
(cd $X && timeout 200 ./dlr_gpu_tests --gtest_filter='RuntimeGpu.LayersKeptWhole*:WholeStagingGpu.*' > $O/tests.log 2>&1;
 echo "tests rc=$? at ${SECONDS}s"); grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran' $O/tests.log; fin
export DLR_CACHE_DIR=/tmp/c_models
MODELS="$M/yolov4.cfg@608,$M/yolov3.cfg@608,$M/yolov4-tiny.cfg@416,$SW/yolo-fastest-1.1.cfg:$SW/yolo-fastest-1.1.weights@416"
row() {  # NAME BUDGET FLAGS...
  local n=$1 b=$2; shift 2
  timeout 100 $X/dlbench --models "$MODELS" --runtime-budget $b --split max-slowdown "$@" --json "$O/$n.json" >"$O/$n.txt" 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -A5 '^model  ' "$O/$n.txt" | head -6; grep -E '^device memory|^runtime budget|dlbench:' "$O/$n.txt" | cut -c1-240; fin
}
W=(--slot-size 1MiB --slice-by auto)
row kept15 15% "${W[@]}"
row whole30 30%
row kept30 30% "${W[@]}"
row sliced15 15% "${W[@]}" --stage-whole off
row sliced30 30% "${W[@]}" --stage-whole off
row kept20 20% "${W[@]}"
row whole20 20%
