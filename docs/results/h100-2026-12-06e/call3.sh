#!/usr/bin/env bash
# Call 3 (thirty-second session): h10 = main with the warm-up's and the plans' threads
# started by one helper (runtime/core/thread_fan.h), and the compile with kept kernel
# times run beside the engine's set-up. Its GPU tests of start-up, fusion, the engine and
# stream mode; then issue 31's six one-image rows (dlrun exec to exit with one detection of
# dog, yolov4 @608, caches warm, round 0 fills them) with the floor, 3 rounds held and 3
# idle.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in h10; do rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; done
X=/tmp/h10/bin; nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
(cd $X && timeout 200 ./dlr_gpu_tests --gtest_filter='StartupTiming.*:FusionGpu.*:StorageMode.BitIdenticalToPreload:StreamMode.KeptKernelTimes*:StreamMode.CopyProfile*:SlicedGpuAuto.*' > $O/tests.log 2>&1; echo "tests rc=$? at ${SECONDS}s")
grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $O/tests.log
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; $X/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_3
R="$y $W $I --device cuda"; st="--mode stream --weights-from storage"; mn="--mode stream --weight-budget min"
rows=("st16=$X/dlrun $R --precision fp16 $st" "st32=$X/dlrun $R --precision fp32 $st"
      "pre16=$X/dlrun $R --precision fp16" "pre32=$X/dlrun $R --precision fp32"
      "min16=$X/dlrun $R --precision fp16 $mn" "min32=$X/dlrun $R --precision fp32 $mn"
      "floor=$X/dlbench --startup-floor")
mkdir -p $O/idle $O/held
mkfifo /tmp/hold_in; $X/dlbench --hold-gpu < /tmp/hold_in > $O/held/holder.txt & HP=$!; exec 3>/tmp/hold_in
for i in $(seq 50); do grep -q held $O/held/holder.txt 2>/dev/null && break; sleep 0.1; done; cat $O/held/holder.txt
echo "== held"; python3 docs/results/h100-2026-12-06c/spawn.py $O/held 3 "${rows[@]}" 2>&1 | tee "$O/held/rows.txt"
exec 3>&-; wait $HP; echo "holder rc=$? at ${SECONDS}s"
echo "== idle"; python3 docs/results/h100-2026-12-06c/spawn.py $O/idle 3 "${rows[@]}" 2>&1 | tee "$O/idle/rows.txt"
echo "rows done at ${SECONDS}s"
