#!/usr/bin/env bash
# Call 3 (thirty-second session), as it ran: four commands on one warm H100 (GPU-7c5d7197)
# after eight starts found no machine, so the planned script was cut to these. h10 = main
# with run_on_threads (runtime/core/thread_fan.h) and the compile with kept kernel times
# beside the engine's set-up (the branch wip-early-compile, merged after this call).
# 3a: its GPU tests; 3b: dlbench's start-up breakdown, storage fp16 held; 3c and 3d:
# issue 31's six one-image rows (dlrun exec to exit with one detection of dog, yolov4
# @608, caches warm, round 0 fills them) with the floor, 4 rounds held, then 3 idle.
set -u
v=h10; mkdir -p /tmp/$v && tar xJf device-carry/$v.tar.xz -C /tmp/$v
X=/tmp/$v/bin; S=$PWD/device-carry/shared; export DLR_SHARED_DIR=$S
(cd $X && nvidia-smi -L && timeout 165 ./dlr_gpu_tests \
  --gtest_filter='StreamMode.KeptKernelTimes*:StartupTiming.*:FusionGpu.*:StreamMode.CopyProfile*:SlicedGpuAuto.*' 2>&1 |
  grep -E 'OK \]|FAILED|PASSED|SKIPPED|tests ran')
y=$S/models/yolov4.cfg; W=/tmp/y4.weights; I=$S/images/dog.ppm; $X/dlgen $y $W >/dev/null
export DLR_CACHE_DIR=/tmp/c_4
st="--mode stream --weights-from storage"; mn="--mode stream --weight-budget min"
timeout 90 $X/dlbench $y --weights $W --device cuda --precision fp16 --cache --startup 4 --startup-gpu held $st \
  --json $OUT/startup_h10.json > $OUT/startup_h10.txt 2>&1
R="$y $W $I --device cuda"
rows=("st16=$X/dlrun $R --precision fp16 $st" "st32=$X/dlrun $R --precision fp32 $st"
      "pre16=$X/dlrun $R --precision fp16" "pre32=$X/dlrun $R --precision fp32"
      "min16=$X/dlrun $R --precision fp16 $mn" "min32=$X/dlrun $R --precision fp32 $mn"
      "floor=$X/dlbench --startup-floor")
mkfifo /tmp/hold_in; $X/dlbench --hold-gpu < /tmp/hold_in > $OUT/holder.txt & HP=$!; exec 3>/tmp/hold_in
for i in $(seq 50); do grep -q held $OUT/holder.txt 2>/dev/null && break; sleep 0.1; done
timeout 70 python3 docs/results/h100-2026-12-06c/spawn.py $OUT 4 "${rows[@]}" 2>&1 | tee $OUT/rows.txt
exec 3>&-; wait $HP
timeout 60 python3 docs/results/h100-2026-12-06c/spawn.py $OUT 3 "${rows[@]}" 2>&1 | tee $OUT/rows_idle.txt
