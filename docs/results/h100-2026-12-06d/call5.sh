#!/usr/bin/env bash
# Call 5 (thirty-first session): issue 31's one-image rows, main at 53cfae9 (h3) against
# 4665423 (h2), dlrun exec to exit with one detection of dog (yolov4 @608, caches warm,
# round 0 fills them), every row its own process, 6 rounds, with the floor; then
# `dlbench --startup 5` of h3 (storage and preload fp16: the children's own start and end)
# and h3's start-up tests.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in h2 h3; do rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; done
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/h3/bin/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_5
R="$y $W $I --device cuda"
st="--mode stream --weights-from storage"; mn="--mode stream --weight-budget min"
rows=()
for v in h2 h3; do
  rows+=("${v}_st16=/tmp/$v/bin/dlrun $R --precision fp16 $st" "${v}_st32=/tmp/$v/bin/dlrun $R --precision fp32 $st"
         "${v}_pre16=/tmp/$v/bin/dlrun $R --precision fp16" "${v}_pre32=/tmp/$v/bin/dlrun $R --precision fp32"
         "${v}_min16=/tmp/$v/bin/dlrun $R --precision fp16 $mn" "${v}_min32=/tmp/$v/bin/dlrun $R --precision fp32 $mn")
done
python3 docs/results/h100-2026-12-06c/spawn.py $O 6 "${rows[@]}" "floor=/tmp/h3/bin/dlbench --startup-floor" 2>&1 | tee "$O/rows.txt"
echo "rows done at ${SECONDS}s"
B="/tmp/h3/bin/dlbench $y --weights $W --device cuda --precision fp16 --cache --startup 5"
timeout 120 $B --mode stream --weights-from storage --json $O/startup_st16.json > $O/startup_st16.txt 2>&1; echo "st16 rc=$? at ${SECONDS}s"
timeout 100 $B --json $O/startup_pre16.json > $O/startup_pre16.txt 2>&1; echo "pre16 rc=$? at ${SECONDS}s"
tail -n 12 $O/startup_st16.txt $O/startup_pre16.txt | cut -c1-220
unset DLR_CACHE_DIR
timeout 150 /tmp/h3/bin/dlr_gpu_tests --gtest_filter='StartupTiming.*:CublasLoader.*:BackendLoading.*' >"$O/startup_tests.log" 2>&1
echo "startup tests rc=$? at ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED) |warmed on' "$O/startup_tests.log" | cut -c1-200
