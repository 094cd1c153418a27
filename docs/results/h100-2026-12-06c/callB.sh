#!/usr/bin/env bash
# Call B (thirtieth session). Builds: h2 = main at 4665423 (as call A); hf = main at be277c9
# (cuBLAS loaded when a plan needs it, one image without a graph, 3xTF32 and concatenation
# convs warmed at open); hy = hf's dlrun with the marks of exp-marks.patch and
# DLR_EXPERIMENT_GRAPH=1 (a one-image run keeps its graph, as before 2bbf7b0). First the
# start-up GPU tests; then dlrun exec to exit with one detection of dog (yolov4 @608, caches
# warm, round 0 fills them), every row its own process, 6 rounds; then hf's GPU suite in
# the time left.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in h2 hf hy; do rm -rf /tmp/$v; mkdir -p /tmp/$v; done
tar xJf device-carry/h2.tar.xz -C /tmp/h2; tar xJf device-carry/hf.tar.xz -C /tmp/hf
tar xJf device-carry/hf.tar.xz -C /tmp/hy; tar xJf device-carry/hy.tar.xz -C /tmp/hy
nvidia-smi -L | tee "$O/gpu.txt"
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
timeout 150 /tmp/hf/bin/dlr_gpu_tests --gtest_filter='StartupTiming.*:CublasLoader.*' >"$O/startup_tests.log" 2>&1
echo "startup tests rc=$? at ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED) |warmed on|Failure' "$O/startup_tests.log" | cut -c1-250 | head -14
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/hf/bin/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_b
R="$y $W $I --device cuda"
st="--mode stream --weights-from storage"; mn="--mode stream --weight-budget min"
M="env DLR_EXPERIMENT_MARKS=1"; G="env DLR_EXPERIMENT_MARKS=1 DLR_EXPERIMENT_GRAPH=1"
python3 docs/results/h100-2026-12-06c/spawn.py $O 6 \
  "h2_st16=/tmp/h2/bin/dlrun $R --precision fp16 $st" \
  "hf_st16=/tmp/hf/bin/dlrun $R --precision fp16 $st" \
  "h2_st32=/tmp/h2/bin/dlrun $R --precision fp32 $st" \
  "hf_st32=/tmp/hf/bin/dlrun $R --precision fp32 $st" \
  "h2_pre16=/tmp/h2/bin/dlrun $R --precision fp16" \
  "hf_pre16=/tmp/hf/bin/dlrun $R --precision fp16" \
  "hf_min16=/tmp/hf/bin/dlrun $R --precision fp16 $mn" \
  "hf_pre32=/tmp/hf/bin/dlrun $R --precision fp32" \
  "hf_min32=/tmp/hf/bin/dlrun $R --precision fp32 $mn" \
  "hy_st16=$M /tmp/hy/bin/dlrun $R --precision fp16 $st" \
  "hy_st16_g=$G /tmp/hy/bin/dlrun $R --precision fp16 $st" \
  "hy_pre16=$M /tmp/hy/bin/dlrun $R --precision fp16" \
  "hy_pre16_g=$G /tmp/hy/bin/dlrun $R --precision fp16" \
  "hy_st32=$M /tmp/hy/bin/dlrun $R --precision fp32 $st" \
  "hy_st32_g=$G /tmp/hy/bin/dlrun $R --precision fp32 $st" \
  "floor=/tmp/hf/bin/dlbench --startup-floor" 2>&1 | tee "$O/rows.txt"
echo "rows done at ${SECONDS}s"
for p in fp16 fp32; do timeout 20 /tmp/hf/bin/dlrun $R --precision $p $st --log-level debug 2>&1 | grep -v "\] conv in\|stored plan" | cut -c1-400 > "$O/dbg_st_$p.txt"; done
grep -hE "device start|convolutions ready|warmed on|open [0-9.]+ ms|first detect" "$O"/dbg_st_*.txt | cut -c1-300
timeout 20 /tmp/hf/bin/dlbench --startup-floor 2>&1 | cut -c1-250
unset DLR_CACHE_DIR
left=$((585 - SECONDS))
timeout $left /tmp/hf/bin/dlr_gpu_tests --gtest_filter='-GpuBench.*:StartupTiming.*:CublasLoader.*' >"$O/gpu_tests.log" 2>&1
echo "gpu suite rc=$? at ${SECONDS}s: $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]+ test|^\[  SKIPPED \] [0-9]+' "$O/gpu_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]' "$O/gpu_tests.log" | head -20
echo "ok: $(grep -cE '^\[       OK \]' "$O/gpu_tests.log"); last: $(grep -E '^\[ RUN      \]' "$O/gpu_tests.log" | tail -1)"
