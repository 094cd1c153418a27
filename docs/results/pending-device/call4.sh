#!/usr/bin/env bash
# Pending call 4 (thirtieth session): issue 31's one-image rows on main (h3: 07024f5 or
# later, cuBLAS loaded on demand, one image without a graph) against h2 (4665423), dlrun
# exec to exit with one detection of dog (yolov4 @608, caches warm, round 0 fills them),
# every row its own process, 6 rounds, with the floor; then h3's start-up tests.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in h2 h3; do rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xJf device-carry/$v.tar.xz -C /tmp/$v; done
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/h3/bin/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_4
R="$y $W $I --device cuda"
st="--mode stream --weights-from storage"; mn="--mode stream --weight-budget min"
rows=()
for v in h2 h3; do
  rows+=("${v}_st16=/tmp/$v/bin/dlrun $R --precision fp16 $st" "${v}_st32=/tmp/$v/bin/dlrun $R --precision fp32 $st"
         "${v}_pre16=/tmp/$v/bin/dlrun $R --precision fp16" "${v}_pre32=/tmp/$v/bin/dlrun $R --precision fp32"
         "${v}_min16=/tmp/$v/bin/dlrun $R --precision fp16 $mn" "${v}_min32=/tmp/$v/bin/dlrun $R --precision fp32 $mn")
done
python3 docs/results/h100-2026-12-06c/spawn.py $O 6 "${rows[@]}" "floor=/tmp/h3/bin/dlbench --startup-floor" 2>&1 | tee "$O/rows.txt"
unset DLR_CACHE_DIR
timeout 150 /tmp/h3/bin/dlr_gpu_tests --gtest_filter='StartupTiming.*:CublasLoader.*' >"$O/startup_tests.log" 2>&1
echo "startup tests rc=$? at ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED) |warmed on' "$O/startup_tests.log" | cut -c1-200
