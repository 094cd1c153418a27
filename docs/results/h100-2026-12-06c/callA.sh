#!/usr/bin/env bash
# Call A (thirtieth session). Builds: h2 = main at 4665423 (kernels warmed at open, cuBLAS
# linked); hn = main at e0cf946 (cuBLAS loaded when a plan needs it); hx = hn's dlrun with
# the marks of exp-marks.patch (DLR_EXPERIMENT_MARKS=1: CLOCK_MONOTONIC at main, before and
# after the backend load and the context, after the open, at the first result, at _Exit).
# dlrun exec to exit with one detection of dog (yolov4 @608, caches warm, round 0 fills
# them), every row its own process, 5 rounds (spawn.py); then hn's whole GPU suite.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O; fin() { tar czf "$OUT/all.tgz" -C /tmp o; }; trap fin EXIT
for v in h2 hn hx; do rm -rf /tmp/$v; mkdir -p /tmp/$v; done
tar xJf device-carry/h2.tar.xz -C /tmp/h2; tar xJf device-carry/hn.tar.xz -C /tmp/hn
tar xJf device-carry/hn.tar.xz -C /tmp/hx; tar xJf device-carry/hx.tar.xz -C /tmp/hx
nvidia-smi -L | tee "$O/gpu.txt"; nproc
S="$PWD/device-carry/shared"; export DLR_SHARED_DIR="$S"
y="$S/models/yolov4.cfg"; W=/tmp/y4.weights; /tmp/hn/bin/dlgen "$y" $W >/dev/null; I="$S/images/dog.ppm"
export DLR_CACHE_DIR=/tmp/c_a
R="$y $W $I --device cuda"
st="--mode stream --weights-from storage"; mn="--mode stream --weight-budget min"
python3 docs/results/h100-2026-12-06c/spawn.py $O 5 \
  "h2_st16=/tmp/h2/bin/dlrun $R --precision fp16 $st" \
  "hn_st16=/tmp/hn/bin/dlrun $R --precision fp16 $st" \
  "hn_st16_ng=/tmp/hn/bin/dlrun $R --precision fp16 $st --no-graph" \
  "h2_st32=/tmp/h2/bin/dlrun $R --precision fp32 $st" \
  "hn_st32=/tmp/hn/bin/dlrun $R --precision fp32 $st" \
  "hn_st32_ng=/tmp/hn/bin/dlrun $R --precision fp32 $st --no-graph" \
  "h2_pre16=/tmp/h2/bin/dlrun $R --precision fp16" \
  "hn_pre16=/tmp/hn/bin/dlrun $R --precision fp16" \
  "hn_pre16_ng=/tmp/hn/bin/dlrun $R --precision fp16 --no-graph" \
  "hn_min16=/tmp/hn/bin/dlrun $R --precision fp16 $mn" \
  "hx_st16=env DLR_EXPERIMENT_MARKS=1 /tmp/hx/bin/dlrun $R --precision fp16 $st" \
  "hx_st16_ng=env DLR_EXPERIMENT_MARKS=1 /tmp/hx/bin/dlrun $R --precision fp16 $st --no-graph" \
  "hx_pre16=env DLR_EXPERIMENT_MARKS=1 /tmp/hx/bin/dlrun $R --precision fp16" \
  "hx_min16=env DLR_EXPERIMENT_MARKS=1 /tmp/hx/bin/dlrun $R --precision fp16 $mn" \
  "hx_st32=env DLR_EXPERIMENT_MARKS=1 /tmp/hx/bin/dlrun $R --precision fp32 $st" \
  "floor=/tmp/hn/bin/dlbench --startup-floor" 2>&1 | tee "$O/rows.txt"
echo "rows done at ${SECONDS}s"
for v in hn; do timeout 20 /tmp/$v/bin/dlrun $R --precision fp16 $st --log-level debug 2>&1 | grep -v "\] conv in\|stored plan" | cut -c1-400 > "$O/dbg_st16_$v.txt"; done
grep -E "device start|convolutions ready|open [0-9.]+ ms|first detect|graph captured" "$O/dbg_st16_hn.txt" | cut -c1-330
unset DLR_CACHE_DIR
left=$((585 - SECONDS))
timeout $left /tmp/hn/bin/dlr_gpu_tests --gtest_filter='-GpuBench.*' >"$O/gpu_tests.log" 2>&1
echo "gpu suite rc=$? at ${SECONDS}s: $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]+ test|^\[  SKIPPED \] [0-9]+' "$O/gpu_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]' "$O/gpu_tests.log" | head -20
echo "ok: $(grep -cE '^\[       OK \]' "$O/gpu_tests.log"); last: $(grep -E '^\[ RUN      \]' "$O/gpu_tests.log" | tail -1)"
